//! `--measure`: short probes on the RT CPUs whose numbers are attached to the
//! checks they bear on, so that "isolated CPU 3 still sees 4,000 IRQs/s" is
//! measured, not assumed.

use anyhow::Result;

use super::checks::Check;
use super::{Facts, Root};

/// Per-CPU interrupt counts from `/proc/interrupts`: (source, counts per CPU column).
pub fn interrupt_counts(text: &str) -> Vec<(String, Vec<u64>)> {
    let mut lines = text.lines();
    let ncpu = lines
        .next()
        .map(|h| {
            h.split_whitespace()
                .filter(|w| w.starts_with("CPU"))
                .count()
        })
        .unwrap_or(0);
    let mut v = Vec::new();
    for l in lines {
        let Some((k, rest)) = l.split_once(':') else {
            continue;
        };
        let words: Vec<&str> = rest.split_whitespace().collect();
        let counts: Vec<u64> = words
            .iter()
            .take(ncpu)
            .map_while(|w| w.parse().ok())
            .collect();
        if counts.is_empty() {
            continue;
        }
        let k = k.trim();
        let name = if k.chars().all(|c| c.is_ascii_digit()) {
            format!("{k} {}", words.last().unwrap_or(&""))
        } else {
            k.to_string()
        };
        v.push((name, counts));
    }
    v
}

/// A CPU's interrupt rate: (cpu, total per second, top sources per second).
pub type IrqRate = (usize, f64, Vec<(String, f64)>);

/// Interrupts per second on each of `cpus` over `window_ns` (shorter when
/// `stop` is raised: the rates are over the time counted), with the top
/// sources: (cpu, total/s, [(source, /s)]), and the seconds counted.
pub fn irq_rates(
    root: &Root,
    cpus: &[usize],
    window_ns: u64,
    stop: &std::sync::atomic::AtomicBool,
) -> (Vec<IrqRate>, f64) {
    use std::time::{Duration, Instant};
    let a = interrupt_counts(&root.read_raw("/proc/interrupts").unwrap_or_default());
    let t0 = Instant::now();
    let window = Duration::from_nanos(window_ns);
    // In slices of 100 ms at most: a stop is honoured within one.
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        let Some(left) = window.checked_sub(t0.elapsed()).filter(|d| !d.is_zero()) else {
            break;
        };
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
    let b = interrupt_counts(&root.read_raw("/proc/interrupts").unwrap_or_default());
    let secs = t0.elapsed().as_secs_f64().max(1e-3);
    let rates = cpus
        .iter()
        .map(|&c| {
            let mut per: Vec<(String, f64)> = b
                .iter()
                .filter_map(|(name, cb)| {
                    let before = a
                        .iter()
                        .find(|(n, _)| n == name)
                        .and_then(|(_, ca)| ca.get(c))
                        .copied()
                        .unwrap_or(0);
                    let d = cb.get(c)?.saturating_sub(before);
                    (d > 0).then(|| (name.clone(), d as f64 / secs))
                })
                .collect();
            per.sort_by(|x, y| y.1.total_cmp(&x.1));
            // (A sum of no f64 is -0.0.)
            let total = per.iter().map(|p| p.1).sum::<f64>() + 0.0;
            per.truncate(4);
            (c, total, per)
        })
        .collect();
    (rates, secs)
}

/// Runs the probes and attaches their numbers to the checks.
pub fn attach(
    root: &Root,
    facts: &Facts,
    checks: &mut [Check],
    window_ns: u64,
    quiet: bool,
    stop: &crate::signals::StopSignals,
) -> Result<()> {
    let cpus = probe_cpus(facts);
    // `stop` is held by `check` from the audit to the last probe, so that a
    // stop between two probes (or during the IRQ count, which is no run)
    // skips the rest and keeps the audit; each probe's own run begins
    // stopped after it.
    let stopped = || stop.flag.load(std::sync::atomic::Ordering::SeqCst);
    if !quiet {
        eprintln!(
            "rtscope check --measure: {} of IRQ counting on CPUs {}",
            rtscope_core::units::format_ns(window_ns),
            rtscope_core::units::format_cpu_list(&cpus)
        );
    }
    let (rates, secs) = irq_rates(root, &cpus, window_ns, &stop.flag);
    if stopped() && secs < 0.01 {
        set(
            checks,
            "irq-affinity",
            "--measure was stopped: the IRQ count did not run".into(),
        );
        return not_run(checks, "the OS noise, hwlat and wake-up latency probes");
    }
    let text: Vec<String> = rates
        .iter()
        .map(|(c, total, top)| {
            format!(
                "CPU {c}: {total:.0} IRQs/s ({})",
                top.iter()
                    .map(|(n, r)| format!("{} {r:.0}/s", n.trim()))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect();
    let cut = if (secs * 1e9) < window_ns as f64 * 0.99 {
        format!(" (counted over {:.2}s: stopped)", secs)
    } else {
        String::new()
    };
    set(checks, "irq-affinity", text.join("; ") + &cut);
    if stopped() {
        return not_run(checks, "the OS noise, hwlat and wake-up latency probes");
    }
    // OS noise on the same CPUs: the evidence for isolation and throttling.
    let quiet_run = crate::experiment::run::RunRequest::quiet();
    let options = crate::experiment::noise::NoiseOptions {
        cpus: Some(cpus.clone()),
        duration_ns: window_ns,
        calibration_window_ns: 100_000_000,
        spikes: 4,
        run: quiet_run.clone(),
        ..Default::default()
    };
    if !quiet {
        eprintln!(
            "rtscope check --measure: {} of OS noise (SCHED_FIFO 95 busy loop) on CPUs {}",
            rtscope_core::units::format_ns(window_ns),
            rtscope_core::units::format_cpu_list(&cpus)
        );
    }
    match crate::experiment::noise::plan(&options)
        .and_then(|p| crate::experiment::noise::execute(&p))
    {
        Ok(f) if stopped_early(&f.doc) => {
            return not_run(
                checks,
                "the OS noise probe (stopped at once) and the others",
            );
        }
        Ok(f) => {
            let (text, throttling) = noise_text(&f.doc);
            let text = text + &stopped_after(&f.doc, window_ns);
            for id in ["isolcpus", "cpus", "vm"] {
                set(checks, id, text.clone());
            }
            if let Some(t) = throttling {
                set(checks, "rt-throttling", t);
            }
        }
        Err(e) => set(checks, "isolcpus", format!("noise probe failed: {e}")),
    }
    if stopped() {
        return not_run(checks, "the hwlat and wake-up latency probes");
    }
    // Hardware latency on the same CPUs, where the kernel has the hwlat
    // tracer (the hwlat check found it): the machine's own stalls.
    if hwlat_tracer_found(checks) {
        let options = hwlat_probe_options(&cpus, window_ns);
        if !quiet {
            eprintln!(
                "rtscope check --measure: {} of hardware latency (the kernel's hwlat tracer) on CPUs {}",
                rtscope_core::units::format_ns(window_ns),
                rtscope_core::units::format_cpu_list(&cpus)
            );
        }
        let text = match crate::experiment::hwlat::plan(&options)
            .and_then(|p| crate::experiment::hwlat::execute(&p))
        {
            Ok(f) if stopped_early(&f.doc) => {
                return not_run(
                    checks,
                    "the hwlat probe (stopped at once) and the wake-up latency probe",
                );
            }
            Ok(f) => format!(
                "rtscope hwlat: {}{}",
                hwlat_text(&f.doc.series),
                stopped_after(&f.doc, window_ns)
            ),
            Err(e) => format!("hwlat probe failed: {e}"),
        };
        set(checks, "hwlat", text);
    }
    if stopped() {
        return not_run(checks, "the wake-up latency probe");
    }
    // Wake-up latency on the same CPUs: what a periodic RT task sees there
    // (the evidence for the preemption model, idle states and the VM).
    let options = crate::experiment::cyclic::CyclicOptions {
        threads: Some(cpus.len()),
        cpus: Some(cpus.clone()),
        period_ns: 1_000_000,
        duration_ns: Some(window_ns),
        run: quiet_run,
        ..Default::default()
    };
    if !quiet {
        eprintln!(
            "rtscope check --measure: {} of wake-up latency (cyclic, 1 ms period, SCHED_FIFO 95) on CPUs {}",
            rtscope_core::units::format_ns(window_ns),
            rtscope_core::units::format_cpu_list(&cpus)
        );
    }
    match crate::experiment::cyclic::plan(&options)
        .and_then(|p| crate::experiment::cyclic::execute(&p))
    {
        Ok(o) if stopped_early(&o.doc) || o.doc.series.iter().all(|s| s.stats.count == 0) => {
            not_run(checks, "the wake-up latency probe (stopped at once)")?
        }
        Ok(o) => {
            let text = format!(
                "rtscope cyclic 1 ms: {}{}",
                cyclic_text(&o.doc.series),
                stopped_after(&o.doc, window_ns)
            );
            for id in ["preempt-rt", "cpuidle", "vm"] {
                set(checks, id, text.clone());
            }
        }
        Err(e) => set(checks, "preempt-rt", format!("cyclic probe failed: {e}")),
    }
    Ok(())
}

/// The noise probe's figures: the text for the checks it bears on (per
/// CPU: the noise without throttling, then the throttling), and the text
/// for the RT throttling check: the throttling found, else a gap of 10 ms
/// or more that does not have its pattern.
fn noise_text(doc: &rtscope_core::result::ResultDocument) -> (String, Option<String>) {
    let mut parts = Vec::new();
    let mut throttled = Vec::new();
    let mut max_gap = 0u64;
    for s in &doc.series {
        let a = serde_json::to_value(&s.attributes).unwrap_or_default();
        let g = |k: &str| a.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
        max_gap = max_gap.max(s.stats.max_ns.max(0) as u64);
        let mut part = format!(
            "{}: noise {:.3}% of the time, {:.0} gaps/s, max gap {}",
            s.label,
            100.0 - g("available_pct"),
            g("gaps_per_s"),
            rtscope_core::units::format_ns(s.stats.max_ns.max(0) as u64)
        );
        let lines = crate::output::noise::throttling(s)
            .map(|r| crate::output::noise::throttling_lines(&r))
            .unwrap_or_default();
        for l in lines {
            part.push_str(&format!(", and {l}"));
            throttled.push(format!("{}: {l}", s.label));
        }
        parts.push(part);
    }
    let throttling = if !throttled.is_empty() {
        Some(format!(
            "the SCHED_FIFO busy loop was throttled: {}",
            throttled.join("; ")
        ))
    } else {
        (max_gap >= 10_000_000).then(|| {
            format!(
                "a SCHED_FIFO busy loop lost {} at once (throttling or the fair server)",
                rtscope_core::units::format_ns(max_gap)
            )
        })
    };
    (format!("rtscope noise {}", parts.join("; ")), throttling)
}

/// The cyclic probe's figures per CPU: "CPU 1: p99 80.2 µs, max 1.1 ms (2000
/// wake-ups, 0 overruns)".
fn cyclic_text(series: &[rtscope_core::result::Series]) -> String {
    use rtscope_core::units::format_ns;
    series
        .iter()
        .filter(|s| s.label != "all")
        .map(|s| {
            let cpu = s
                .attributes
                .get("cpus")
                .and_then(|c| c.as_array())
                .and_then(|c| c.first())
                .and_then(|c| c.as_u64())
                .map_or_else(|| s.label.clone(), |c| format!("CPU {c}"));
            format!(
                "{cpu}: p99 {}, max {} ({} wake-ups, {} overruns)",
                format_ns(s.stats.p99_ns),
                format_ns(s.stats.max_ns.max(0) as u64),
                s.stats.count,
                s.counters.overruns
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The hwlat probe: the kernel's tracer on the probe CPUs for the probe's
/// time, its defaults otherwise (1 s windows sampled for 500 ms), quiet.
fn hwlat_probe_options(cpus: &[usize], window_ns: u64) -> crate::experiment::hwlat::HwlatOptions {
    crate::experiment::hwlat::HwlatOptions {
        cpus: Some(cpus.to_vec()),
        duration_ns: window_ns,
        method: crate::experiment::hwlat::Method::Tracer,
        run: crate::experiment::run::RunRequest::quiet(),
        ..Default::default()
    }
}

/// Whether the hwlat check found the kernel's tracer (the probe runs then).
fn hwlat_tracer_found(checks: &[Check]) -> bool {
    checks
        .iter()
        .any(|c| c.id == "hwlat" && c.status == super::Status::Ok)
}

/// The hwlat probe's figures per CPU: "CPU 1: 3 samples, max 12.0us (inner
/// 10.0us, outer 12.0us), 0 NMIs, SMIs -".
fn hwlat_text(series: &[rtscope_core::result::Series]) -> String {
    use rtscope_core::units::format_ns;
    let num =
        |s: &rtscope_core::result::Series, k: &str| s.attributes.get(k).and_then(|v| v.as_u64());
    series
        .iter()
        .map(|s| {
            format!(
                "CPU {}: {} samples, max {} (inner {}, outer {}), {} NMIs, SMIs {}",
                num(s, "cpu").unwrap_or(0),
                s.stats.count,
                if s.stats.count > 0 {
                    format_ns(s.stats.max_ns.max(0) as u64)
                } else {
                    "-".into()
                },
                format_ns(num(s, "inner_max_ns").unwrap_or(0)),
                format_ns(num(s, "outer_max_ns").unwrap_or(0)),
                num(s, "nmi_count").unwrap_or(0),
                num(s, "smi_count").map_or("-".into(), |n| n.to_string()),
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The CPUs probes run on: the targets, else the last online CPU.
pub fn probe_cpus(f: &Facts) -> Vec<usize> {
    if !f.targets.is_empty() {
        f.targets.clone()
    } else {
        f.online.last().copied().into_iter().collect()
    }
}

/// Whether a probe was stopped before it measured anything worth citing
/// (under 10 ms).
fn stopped_early(doc: &rtscope_core::result::ResultDocument) -> bool {
    doc.end_reason == rtscope_core::result::EndReason::Interrupted && doc.duration_ns < 10_000_000
}

/// ", stopped after 1.2s of 5.0s" for a probe a stop cut short, else "".
fn stopped_after(doc: &rtscope_core::result::ResultDocument, window_ns: u64) -> String {
    if doc.end_reason == rtscope_core::result::EndReason::Interrupted && doc.duration_ns < window_ns
    {
        format!(
            " (stopped after {} of {})",
            rtscope_core::units::format_ns(doc.duration_ns),
            rtscope_core::units::format_ns(window_ns)
        )
    } else {
        String::new()
    }
}

/// Says on the checks they bear on that `what` did not run (a stop).
fn not_run(checks: &mut [Check], what: &str) -> Result<()> {
    for id in ["isolcpus", "preempt-rt", "vm"] {
        set(
            checks,
            id,
            format!("--measure was stopped: {what} did not run"),
        );
    }
    Ok(())
}

pub(super) fn set(checks: &mut [Check], id: &str, m: String) {
    if let Some(c) = checks.iter_mut().find(|c| c.id == id) {
        c.measured = Some(match c.measured.take() {
            Some(old) => format!("{old}; {m}"),
            None => m,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::noise::throttle::{Budget, Episode, Evidence, Found, Report};
    use rtscope_core::result::{ResultDocument, Series};

    /// A noise probe's series: `max_ns` the longest gap of the noise, and
    /// `throttled` gaps of 46.8 ms found by RT throttling in a 2 s run.
    fn series(label: &str, max_ns: i64, throttled: usize) -> Series {
        let mut s = Series {
            label: label.into(),
            ..Default::default()
        };
        s.stats.max_ns = max_ns;
        let rt = Budget::rt(1_000_000, 950_000).unwrap();
        let e = Episode {
            start_ns: 0,
            end_ns: 46_800_000,
            noise_ns: 46_800_000,
            gaps: 1,
        };
        let found: Vec<Found> = (throttled > 0)
            .then(|| Found {
                budget: rt,
                evidence: Evidence::Length,
                episodes: vec![e; throttled],
            })
            .into_iter()
            .collect();
        for (k, v) in [
            ("available_pct", serde_json::json!(99.144)),
            ("gaps_per_s", serde_json::json!(506.2)),
            (
                "throttling",
                serde_json::to_value(Report::new(&[rt], &found, 2_000_000_000)).unwrap(),
            ),
        ] {
            s.attributes.insert(k.into(), v);
        }
        s
    }

    fn doc(series: Vec<Series>) -> ResultDocument {
        ResultDocument::new(
            "noise",
            serde_json::json!({}),
            rtscope_core::system::SystemSnapshot::default(),
            series,
        )
    }

    #[test]
    fn the_noise_probe_names_its_throttling_apart() {
        let (text, rt) = noise_text(&doc(vec![
            series("cpu 1", 1_067_000, 1),
            series("cpu 2", 80_000, 0),
        ]));
        assert_eq!(
            text,
            "rtscope noise cpu 1: noise 0.856% of the time, 506 gaps/s, max gap 1.067ms, \
             and RT throttling: 1 gap of ~46.8ms, 2.34% of the time (once: the run is too \
             short to see it repeat every 1s); cpu 2: noise 0.856% of the time, 506 gaps/s, \
             max gap 80us"
        );
        assert_eq!(
            rt.unwrap(),
            "the SCHED_FIFO busy loop was throttled: cpu 1: RT throttling: 1 gap of ~46.8ms, \
             2.34% of the time (once: the run is too short to see it repeat every 1s)"
        );
    }

    #[test]
    fn a_long_gap_without_the_pattern_is_still_reported() {
        // No throttling found, a 10 ms gap: said as before; 10 ms less 1 ns: nothing.
        let (_, rt) = noise_text(&doc(vec![series("cpu 1", 10_000_000, 0)]));
        assert_eq!(
            rt.unwrap(),
            "a SCHED_FIFO busy loop lost 10ms at once (throttling or the fair server)"
        );
        let (_, rt) = noise_text(&doc(vec![series("cpu 1", 9_999_999, 0)]));
        assert_eq!(rt, None);
        // The longest of the CPUs.
        let (_, rt) = noise_text(&doc(vec![
            series("cpu 0", 12_000_000, 0),
            series("cpu 1", 80_000, 0),
        ]));
        assert!(rt.unwrap().contains("lost 12ms"));
    }

    #[test]
    fn the_hwlat_probe_is_the_tracer_quiet_for_the_probe_time() {
        let o = hwlat_probe_options(&[2, 3], 1_500_000_000);
        assert_eq!(o.cpus, Some(vec![2, 3]));
        assert_eq!(o.duration_ns, 1_500_000_000);
        assert_eq!(o.method, crate::experiment::hwlat::Method::Tracer);
        assert!(o.run.outputs.quiet);
        assert_eq!(o.run.outputs.json, None);
        let d = crate::experiment::hwlat::HwlatOptions::default();
        assert_eq!(
            (o.window_ns, o.width_ns, o.threshold_ns),
            (d.window_ns, d.width_ns, d.threshold_ns)
        );
    }

    #[test]
    fn the_hwlat_probe_runs_where_the_tracer_is() {
        let dir = tempfile::tempdir().unwrap();
        let tracers = dir.path().join("sys/kernel/tracing/available_tracers");
        std::fs::create_dir_all(tracers.parent().unwrap()).unwrap();
        let root = Root::new(dir.path());
        let checks = |text: &str| {
            std::fs::write(&tracers, text).unwrap();
            super::super::audit(&root, None).1
        };
        assert!(hwlat_tracer_found(&checks("timerlat osnoise hwlat nop\n")));
        assert!(!hwlat_tracer_found(&checks("blk function nop\n")));
        // Another check being ok is not the tracer.
        let mut other = checks("blk function nop\n");
        for c in other.iter_mut().filter(|c| c.id != "hwlat") {
            c.status = super::super::Status::Ok;
        }
        assert!(!hwlat_tracer_found(&other));
    }

    #[test]
    fn the_hwlat_probes_figures() {
        let mut a = rtscope_core::result::Series::default();
        a.stats.count = 3;
        a.stats.max_ns = 12_000;
        for (k, v) in [
            ("cpu", serde_json::json!(1)),
            ("inner_max_ns", serde_json::json!(10_000)),
            ("outer_max_ns", serde_json::json!(12_000)),
            ("nmi_count", serde_json::json!(2)),
            ("smi_count", serde_json::json!(4)),
        ] {
            a.attributes.insert(k.into(), v);
        }
        let mut b = rtscope_core::result::Series::default();
        b.attributes.insert("cpu".into(), serde_json::json!(3));
        assert_eq!(
            hwlat_text(&[a, b]),
            "CPU 1: 3 samples, max 12us (inner 10us, outer 12us), 2 NMIs, SMIs 4; \
             CPU 3: 0 samples, max - (inner 0ns, outer 0ns), 0 NMIs, SMIs -"
        );
    }
}
