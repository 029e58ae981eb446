//! Whether a load delivered what it was asked for.
//!
//! Two kinds of load are asked for a figure they report back: a regulated
//! load (`cpu`, `mem-churn`, `mem-fault`, `mem-access`) its CPU share,
//! `level` % per instance, read from `/proc` over the measurement window;
//! a paced `net` load (`rate=N`) its packet rate, `N` per second per
//! instance, counted by the worker over its life. The other loads are asked
//! for no figure (`messaging`, `io`, `cmd`, `net` unlimited).
//!
//! A load falls short when the CPU is busy with other work: a regulated
//! load counts its work in its own CPU time and keeps working within each
//! slice until it has had its share, but when other runnable tasks share
//! its CPU it gets only the scheduler's fair share of the slice (one other
//! busy task: about half; two: a third). Measured on the 2-CPU test VM,
//! `cpu:50` pinned to a CPU alone reached 50.0 %; beside one, two and
//! three busy loops on that CPU 45.7, 31.8 and 24.2 %, its worker waiting
//! on the run queue 51, 68 and 76 % of the time (`/proc/PID/schedstat`;
//! alone, 19 %: other sessions shared the VM).
//! The regulation is not at fault, but the measurement then ran under less
//! load than its result, its matrix cell or a comparison names: [`of`] says so, the run
//! records it (`fell_short` in the load's report, a warning), and the loads
//! table, the matrix and the report mark it.

use rtscope_core::result::LoadReport;

/// How far below what it was asked for a load may land before it is said
/// to have fallen short: 5 percentage points of CPU share for a regulated
/// load (`cpu:50` at 45 % passes, at 44.9 % it fell short), 5 % of the
/// asked rate for a paced `net` load, on top of what the reading itself
/// cannot resolve ([`cpu_resolution_points`], [`rate_resolution_points`]).
/// A regulated load with a CPU to itself lands within about a point of its
/// level (`cpu:50`: 49.4 to 50.4 % over 0.2 to 5 s on the 2-CPU test VM),
/// while the shortfalls seen on a shared CPU were 8 to 27 points: five
/// points tell the two apart without crying wolf.
pub const SHORTFALL_TOLERANCE_POINTS: f64 = 5.0;

/// Clock ticks per second of the CPU times in `/proc/PID/stat` (USER_HZ,
/// 100 on every Linux architecture).
pub const USER_HZ: f64 = 100.0;

/// How much of `lifetime_s` a worker may spend before it starts sending
/// (its exec and set-up; measured up to 12 ms on the test VM): the rate
/// counted over the lifetime reads that much low.
pub const RATE_START_SLACK_S: f64 = 0.02;

/// How far, in points, a CPU share read over `window_s` seconds can be off
/// by the resolution of `/proc` alone: utime and stime are each whole
/// ticks, rounded down at both readings, so the CPU time between the two is
/// off by less than two ticks (1 point over 2 s, 10 points over 0.2 s).
/// Infinite for an empty window: such a share tells nothing.
pub fn cpu_resolution_points(window_s: f64) -> f64 {
    100.0 * 2.0 / USER_HZ / window_s
}

/// How far, in percent of the asked rate, a rate counted over
/// `lifetime_s` can read low because the worker starts a moment after its
/// lifetime does ([`RATE_START_SLACK_S`]).
pub fn rate_resolution_points(lifetime_s: f64) -> f64 {
    100.0 * RATE_START_SLACK_S / lifetime_s
}

/// Whether `achieved` is below `asked` by more than the tolerance and
/// `resolution` (all in the same points).
pub fn beyond_tolerance(asked: f64, achieved: f64, resolution: f64) -> bool {
    asked - achieved > SHORTFALL_TOLERANCE_POINTS + resolution
}

/// The lowest of `values` and its index (the first, on a tie).
fn lowest(values: &[f64]) -> Option<(usize, f64)> {
    values
        .iter()
        .copied()
        .enumerate()
        .fold(None, |low, (i, v)| match low {
            Some((_, l)) if l <= v => low,
            _ => Some((i, v)),
        })
}

/// `" (instance 1: 28.0 %)"` when a load has several instances, else
/// nothing: the instance furthest below.
fn worst_instance(values: &[f64], low: (usize, f64), unit: &str) -> String {
    if values.len() > 1 {
        format!(" (instance {}: {:.1}{unit})", low.0, low.1)
    } else {
        String::new()
    }
}

/// The warning for a load that fell short of what it was asked for, or
/// `None` when it did not (or was asked for no figure). Every instance is
/// judged; one that fell short is enough.
pub fn of(l: &LoadReport) -> Option<String> {
    let on_s = match &l.schedule {
        // Never on (start= beyond the run): nothing was asked of it yet.
        Some(s) if s.on_count == 0 => return None,
        Some(s) => Some(s.on_s),
        None => None,
    };
    let consequence = "the run was not under the load it names";
    if let Some(level) = l.level {
        let asked = f64::from(level);
        let resolution = cpu_resolution_points(on_s.unwrap_or(l.window_s));
        let low = lowest(&l.achieved_cpu_percent)?;
        return beyond_tolerance(asked, low.1, resolution).then(|| {
            format!(
                "load {} reached {:.1} % CPU of the {level} % asked{}, more than {} points short \
                 (other work took its CPUs): {consequence}",
                l.spec,
                l.achieved_cpu_percent_mean,
                worst_instance(&l.achieved_cpu_percent, low, " %"),
                SHORTFALL_TOLERANCE_POINTS
            )
        });
    }
    if l.name != "net" {
        return None;
    }
    let rate = super::parse_spec(&l.spec).ok()?.count("rate")?;
    if rate == 0 {
        // unlimited
        return None;
    }
    // The counters cover the worker's life; a scheduled load was off for
    // the part of the window it was not on.
    let on_life = l.lifetime_s - on_s.map_or(0.0, |on| l.window_s - on);
    let rates: Vec<f64> = l
        .instance_reports
        .iter()
        .map(|r| r.counters.get("packets_sent").copied().unwrap_or(0) as f64 / on_life)
        .collect();
    let low = lowest(&rates)?;
    let percent = |r: f64| 100.0 * r / rate as f64;
    beyond_tolerance(100.0, percent(low.1), rate_resolution_points(on_life)).then(|| {
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        format!(
            "load {} sent {} packets/s per instance of the {rate} asked ({:.1} %){}, more than {} % short \
             (the sender could not keep up): {consequence}",
            l.spec,
            rtscope_core::units::format_si(mean),
            percent(mean),
            worst_instance(&rates, low, "/s"),
            SHORTFALL_TOLERANCE_POINTS
        )
    })
}

/// What a comparison says of run `run` when loads of its document fell
/// short (`fell_short`, as recorded): one warning per load spec, with in
/// how many of its runs when the document pools several (one load report
/// per run).
pub fn in_comparison(run: &str, loads: &[LoadReport]) -> Vec<String> {
    let mut specs: Vec<&str> = Vec::new();
    for l in loads {
        if !specs.contains(&l.spec.as_str()) {
            specs.push(&l.spec);
        }
    }
    specs
        .into_iter()
        .filter_map(|spec| {
            let of_spec = loads.iter().filter(|l| l.spec == spec);
            let all = of_spec.clone().count();
            let short = of_spec.filter(|l| l.fell_short).count();
            (short > 0).then(|| {
                format!(
                    "{run}: load {spec} fell short of what it was asked for{}: \
                     a verdict on this run compares against a load that did not happen",
                    if all > 1 {
                        format!(" in {short} of {all} runs")
                    } else {
                        String::new()
                    }
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::result::{InstanceReport, LoadSchedule};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn resolutions() {
        // Two ticks of 10 ms over the window, in points.
        assert!(close(cpu_resolution_points(2.0), 1.0));
        assert!(close(cpu_resolution_points(0.2), 10.0));
        assert!(close(cpu_resolution_points(40.0), 0.05));
        assert!(cpu_resolution_points(0.0).is_infinite());
        // 20 ms of the lifetime, in percent.
        assert!(close(rate_resolution_points(2.0), 1.0));
        assert!(close(rate_resolution_points(0.4), 5.0));
    }

    #[test]
    fn tolerance_boundary() {
        // Exactly 5 points short passes, a hair more does not.
        assert!(!beyond_tolerance(50.0, 45.0, 0.0));
        assert!(beyond_tolerance(50.0, 44.99, 0.0));
        // The resolution widens it.
        assert!(!beyond_tolerance(50.0, 44.0, 1.0));
        assert!(beyond_tolerance(50.0, 43.99, 1.0));
        // Above the level is never short.
        assert!(!beyond_tolerance(50.0, 58.0, 0.0));
        // An empty window tells nothing.
        assert!(!beyond_tolerance(50.0, 0.0, f64::INFINITY));
    }

    #[test]
    fn lowest_instance() {
        assert_eq!(lowest(&[]), None);
        assert_eq!(lowest(&[3.0]), Some((0, 3.0)));
        assert_eq!(lowest(&[5.0, 2.0, 4.0]), Some((1, 2.0)));
        assert_eq!(lowest(&[2.0, 2.0, 1.0]), Some((2, 1.0)));
        assert_eq!(lowest(&[1.0, 1.0]), Some((0, 1.0)));
    }

    fn cpu(spec: &str, level: u8, shares: &[f64], window_s: f64) -> LoadReport {
        LoadReport {
            spec: spec.into(),
            name: spec.split(':').next().unwrap().into(),
            level: Some(level),
            instances: shares.len(),
            window_s,
            achieved_cpu_percent: shares.to_vec(),
            achieved_cpu_percent_mean: shares.iter().sum::<f64>() / shares.len().max(1) as f64,
            ..Default::default()
        }
    }

    #[test]
    fn a_regulated_load_short_by_more_than_the_tolerance() {
        // What the issue saw: cpu:50 at 31 % over a 2 s matrix cell.
        let l = cpu("cpu:50", 50, &[31.0, 31.4], 2.0);
        let w = of(&l).unwrap();
        assert_eq!(
            w,
            "load cpu:50 reached 31.2 % CPU of the 50 % asked (instance 0: 31.0 %), \
             more than 5 points short (other work took its CPUs): \
             the run was not under the load it names"
        );
        // Over 2 s the resolution is 1 point: 44.0 passes, 43.9 does not.
        assert_eq!(of(&cpu("cpu:50", 50, &[44.0], 2.0)), None);
        let w = of(&cpu("mem-churn:50", 50, &[43.9], 2.0)).unwrap();
        assert!(
            w.starts_with("load mem-churn:50 reached 43.9 % CPU of the 50 % asked, more than"),
            "{w}"
        );
        // One instance short is enough, and it is the one named.
        let w = of(&cpu("cpu:50", 50, &[50.1, 42.0, 49.0], 5.0)).unwrap();
        assert!(
            w.contains("reached 47.0 % CPU") && w.contains("(instance 1: 42.0 %)"),
            "{w}"
        );
        // At or above the level, or within the tolerance: nothing.
        assert_eq!(of(&cpu("cpu:100", 100, &[103.0], 0.2)), None);
        assert_eq!(of(&cpu("cpu:100", 100, &[95.0], 10.0)), None);
        assert!(of(&cpu("cpu:100", 100, &[94.0], 10.0)).is_some());
        // A 0.2 s window cannot tell 40 % from 50 % (10 points of resolution).
        assert_eq!(of(&cpu("cpu:50", 50, &[35.0], 0.2)), None);
        assert!(of(&cpu("cpu:50", 50, &[34.9], 0.2)).is_some());
        // No instance, no judgment.
        assert_eq!(of(&cpu("cpu:50", 50, &[], 2.0)), None);
    }

    #[test]
    fn a_scheduled_load_is_judged_over_its_on_time() {
        let mut l = cpu("cpu:100,every=1s,for=200ms", 100, &[90.0], 10.0);
        let sched = |on_count, on_s| LoadSchedule {
            every_ns: 1_000_000_000,
            for_ns: 200_000_000,
            on_count,
            on_s,
            ..Default::default()
        };
        // Over 10 s 90 % would be short; over its 0.4 s on, 10 % is within
        // the 5-point resolution of 0.4 s (10 < 5 + 5 is false: 10 = 10).
        l.schedule = Some(sched(2, 0.4));
        assert_eq!(of(&l), None);
        l.achieved_cpu_percent = vec![89.9];
        assert!(of(&l).is_some());
        // Never on: nothing was asked of it.
        l.schedule = Some(sched(0, 0.0));
        l.achieved_cpu_percent = vec![0.0];
        assert_eq!(of(&l), None);
    }

    fn net(spec: &str, sent: &[u64], lifetime_s: f64) -> LoadReport {
        LoadReport {
            spec: spec.into(),
            name: "net".into(),
            instances: sent.len(),
            window_s: lifetime_s - 0.2,
            lifetime_s,
            instance_reports: sent
                .iter()
                .enumerate()
                .map(|(i, &n)| InstanceReport {
                    index: i,
                    counters: [("packets_sent".to_string(), n)].into(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_paced_net_load_short_of_its_rate() {
        // 1 M/s asked, 235 k/s sent (about what the 2-CPU VM managed).
        let l = net("net,rate=1000000", &[470_000], 2.0);
        assert_eq!(
            of(&l).unwrap(),
            "load net,rate=1000000 sent 235.0k packets/s per instance of the 1000000 asked (23.5 %), \
             more than 5 % short (the sender could not keep up): \
             the run was not under the load it names"
        );
        // Over 2 s the start-up slack is 1 %: 94 % of the rate passes.
        assert_eq!(of(&net("net,rate=1000", &[1880], 2.0)), None);
        assert!(of(&net("net,rate=1000", &[1879], 2.0)).is_some());
        // The lowest instance decides and is named.
        let w = of(&net("net,rate=1000", &[2000, 1000], 2.0)).unwrap();
        assert!(
            w.contains("sent 750 packets/s") && w.contains("(75.0 %)"),
            "{w}"
        );
        assert!(w.contains("(instance 1: 500.0/s)"), "{w}");
        // Unlimited, or no rate given: nothing was asked.
        assert_eq!(of(&net("net,rate=unlimited", &[10], 2.0)), None);
        assert_eq!(of(&net("net", &[10], 2.0)), None);
        // Other loads without a level are asked for nothing.
        let mut m = net("messaging", &[0], 2.0);
        m.name = "messaging".into();
        assert_eq!(of(&m), None);
        // A spec that does not parse (a document from elsewhere): nothing.
        assert_eq!(of(&net("net,rate=lots", &[0], 2.0)), None);
        assert_eq!(of(&net("net,rate=1000", &[], 2.0)), None);
    }

    #[test]
    fn a_scheduled_net_load_counts_its_on_life() {
        // Lifetime 10.2 s, window 10 s of which 2 s on: 2.2 s of sending.
        let mut l = net("net,rate=1000,every=1s,for=200ms", &[2090], 10.2);
        l.schedule = Some(LoadSchedule {
            on_count: 10,
            on_s: 2.0,
            ..Default::default()
        });
        // 950/s of 1000 is 5 % short, within 5 + 0.91.
        assert_eq!(of(&l), None);
        l.instance_reports[0]
            .counters
            .insert("packets_sent".into(), 2050);
        // 931.8/s: 6.8 % short, beyond 5.91.
        let w = of(&l).unwrap();
        assert!(w.contains("sent 931.8 packets/s"), "{w}");
        // Never on (start= beyond the run): what it sent in the ramp-up
        // (100 packets in 0.2 s) is not judged.
        l.schedule = Some(LoadSchedule::default());
        l.instance_reports[0]
            .counters
            .insert("packets_sent".into(), 100);
        assert_eq!(of(&l), None);
    }

    #[test]
    fn a_comparison_names_the_runs_whose_load_fell_short() {
        let l = |spec: &str, short: bool| LoadReport {
            spec: spec.into(),
            fell_short: short,
            ..Default::default()
        };
        assert!(in_comparison("a", &[]).is_empty());
        assert!(in_comparison("a", &[l("cpu:50", false)]).is_empty());
        assert_eq!(
            in_comparison("b", &[l("cpu:50", true)]),
            ["b: load cpu:50 fell short of what it was asked for: \
              a verdict on this run compares against a load that did not happen"]
        );
        // A pooled document: one report per run and load.
        let w = in_comparison(
            "c",
            &[
                l("cpu:50", false),
                l("net,rate=1000", true),
                l("cpu:50", true),
                l("net,rate=1000", true),
                l("cpu:50", false),
                l("net,rate=1000", true),
            ],
        );
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].starts_with("c: load cpu:50 fell short of what it was asked for in 1 of 3 runs: ")
        );
        assert!(w[1].starts_with(
            "c: load net,rate=1000 fell short of what it was asked for in 3 of 3 runs: "
        ));
    }
}
