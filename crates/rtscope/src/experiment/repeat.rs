//! `--repeat N`: N independent runs of an experiment in one invocation, one
//! after the other, pooled into one document. Every series of the pooled
//! document holds the union of the runs' samples and, under `repetitions`,
//! each run's own series (own statistics, histogram, timeline, spikes and
//! blocks), so that `rtscope compare` can use the spread between runs.
//!
//! An experiment adopts it in one line: its `execute` goes through
//! [`finished`] (which uses [`runs`] and [`pool`]), and [`note`] adds the
//! "pooled from N runs" line to its summary.

use anyhow::Result;

use super::run::Finished;
use rtscope_core::record::{blocks, LatencyHistogram};
use rtscope_core::result::{
    Corrected, EndReason, ResultDocument, Series, Stats, Threshold, Timeline,
};

/// Runs `once(k)` for k = 1..=n, stopping early when a run was interrupted
/// (a signal) or ended in an error; returns the documents of the runs made.
pub fn runs(
    n: usize,
    quiet: bool,
    mut once: impl FnMut(usize) -> Result<ResultDocument>,
) -> Result<Vec<ResultDocument>> {
    let mut docs = Vec::with_capacity(n);
    for k in 1..=n {
        if !quiet && n > 1 {
            eprintln!("repetition {k} of {n}");
        }
        let d = once(k)?;
        let stop = matches!(d.end_reason, EndReason::Interrupted | EndReason::Error);
        docs.push(d);
        if stop {
            break;
        }
    }
    Ok(docs)
}

/// Plan keys that may differ between runs that are pooled: where the files
/// went, and the repetition count itself.
const FREE_PLAN_KEYS: &[&str] = &[
    "json",
    "report",
    "raw",
    "histogram",
    "repeat",
    "calibration",
];

/// `rtscope pool -o OUT IN...`: single runs of one experiment, made with the
/// same settings (e.g. alternately with another setting's runs, for an
/// A/B/A/B comparison), pooled as `--repeat` would have pooled them.
/// What `rtscope pool` pools and where the pooled document goes.
#[derive(Debug, Clone, Default)]
pub struct PoolOptions {
    /// Result documents of single runs.
    pub files: Vec<std::path::PathBuf>,
    /// The pooled document.
    pub out: std::path::PathBuf,
    /// Nothing but errors.
    pub quiet: bool,
}

pub fn run_pool(a: &PoolOptions) -> Result<i32> {
    use crate::error::usage;
    let inputs: Vec<&std::path::Path> = a.files.iter().map(|p| p.as_path()).collect();
    crate::output::files::refuse_output_onto_input("--out", &a.out, &inputs)?;
    crate::output::files::check_output("--out", &a.out)?;
    let mut docs = Vec::new();
    for p in &a.files {
        let d = crate::report::load(p)?;
        if d.series.iter().any(|s| !s.repetitions.is_empty()) {
            return Err(usage(format!(
                "{}: already pooled (--repeat or pool): give single runs",
                p.display()
            )));
        }
        docs.push((p, d));
    }
    let paths: Vec<&std::path::Path> = docs.iter().map(|(p, _)| p.as_path()).collect();
    let only: Vec<&ResultDocument> = docs.iter().map(|(_, d)| d).collect();
    if let Some((i, j, why)) = same_run(&paths, &only) {
        return Err(usage(format!(
            "{} and {} are the same run ({why}): give each run once",
            paths[i].display(),
            paths[j].display()
        )));
    }
    let (first_path, first) = &docs[0];
    for (p, d) in &docs[1..] {
        if d.experiment != first.experiment {
            return Err(usage(format!(
                "{} is a {} run, {} a {} run: pool runs of one experiment",
                first_path.display(),
                first.experiment,
                p.display(),
                d.experiment
            )));
        }
        if let Some(k) = plan_difference(&first.plan, &d.plan) {
            return Err(usage(format!(
                "{} and {} were made with other settings ({k}): pool runs of the same command",
                first_path.display(),
                p.display()
            )));
        }
        if let Some(why) = series_difference(first, d) {
            return Err(usage(format!(
                "{} and {} have other series ({why}): pool runs of the same command",
                first_path.display(),
                p.display()
            )));
        }
    }
    if first.series.is_empty() {
        return Err(usage(format!(
            "{}: no series to pool",
            first_path.display()
        )));
    }
    let mut docs: Vec<ResultDocument> = docs.into_iter().map(|(_, d)| d).collect();
    // In the order they were made, for the timeline.
    docs.sort_by(|x, y| x.started_at.cmp(&y.started_at));
    let n = docs.len();
    let experiment = docs[0].experiment.clone();
    let doc = pool(docs);
    doc.write(&a.out)
        .map_err(|e| anyhow::anyhow!("{}: {e}", a.out.display()))?;
    if !a.quiet {
        crate::output::say(&format!(
            "pooled {n} {experiment} runs ({} series) -> {}\n",
            doc.series.len(),
            a.out.display()
        ));
    }
    Ok(crate::error::EXIT_OK)
}

/// The first two inputs that are one run: the same file (however the path
/// is spelled, links followed) or the same document (a copy: the same start
/// and the same series), with why; pooled, one run would count as two
/// repetitions with no spread between them.
fn same_run(
    paths: &[&std::path::Path],
    docs: &[&ResultDocument],
) -> Option<(usize, usize, &'static str)> {
    let real: Vec<Option<std::path::PathBuf>> = paths
        .iter()
        .map(|p| std::fs::canonicalize(p).ok())
        .collect();
    let series: Vec<Option<serde_json::Value>> = docs
        .iter()
        .map(|d| serde_json::to_value(&d.series).ok())
        .collect();
    for j in 1..docs.len() {
        for i in 0..j {
            if real[i].is_some() && real[i] == real[j] {
                return Some((i, j, "the same file"));
            }
            if docs[i].started_at == docs[j].started_at && series[i] == series[j] {
                return Some((i, j, "the same document: same start, same series"));
            }
        }
    }
    None
}

/// How the series of `b` differ from those of `a` (labels, as sets): the
/// first label one has and the other lacks. Pooled, a series missing from
/// a run would lose that run's samples while its duration still counted.
fn series_difference(a: &ResultDocument, b: &ResultDocument) -> Option<String> {
    let has = |d: &ResultDocument, l: &str| d.series.iter().any(|s| s.label == l);
    let name = |l: &str| crate::output::printable(l).into_owned();
    if let Some(s) = a.series.iter().find(|s| !has(b, &s.label)) {
        return Some(format!("'{}' only in the first", name(&s.label)));
    }
    b.series
        .iter()
        .find(|s| !has(a, &s.label))
        .map(|s| format!("'{}' not in the first", name(&s.label)))
}

/// Plan keys, at any depth, that hold what a run measured or was given by
/// the system rather than a setting: the counter's calibration
/// (`calibration`, `counter_hz`), the trace session's counts, thread and
/// process ids; and hwlat's `session` (what the method found: SMI counts,
/// the tracer as it was, the user-space engine's own plan, whose settings
/// the top-level plan repeats).
const MEASURED_PLAN_KEYS: &[&str] = &[
    "calibration",
    "counter_hz",
    "trace_session",
    "session",
    "tid",
    "pid",
];

/// The first plan key (top level) whose value differs, other than
/// [`FREE_PLAN_KEYS`] and what [`MEASURED_PLAN_KEYS`] name.
fn plan_difference(a: &serde_json::Value, b: &serde_json::Value) -> Option<String> {
    let empty = serde_json::Map::new();
    let (ma, mb) = (
        a.as_object().unwrap_or(&empty),
        b.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = ma.keys().chain(mb.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| {
            !FREE_PLAN_KEYS.contains(&k.as_str()) && !MEASURED_PLAN_KEYS.contains(&k.as_str())
        })
        .find(|k| ma.get(*k).map(without_ids) != mb.get(*k).map(without_ids))
        .cloned()
}

/// A plan value without what runs measured ([`MEASURED_PLAN_KEYS`]: ids,
/// calibrations), which differs from run to run.
fn without_ids(v: &serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => m
            .iter()
            .filter(|(k, _)| !MEASURED_PLAN_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), without_ids(v)))
            .collect(),
        serde_json::Value::Array(a) => a.iter().map(without_ids).collect(),
        other => other.clone(),
    }
}

/// `execute` run `--repeat` times (`outputs.repeat`; 0 or 1: once) and
/// pooled; the warnings shown at the start of every run, each once.
pub fn finished(
    outputs: &super::run::Outputs,
    mut execute: impl FnMut() -> Result<Finished>,
) -> Result<Finished> {
    let (n, quiet) = (outputs.repeat, outputs.quiet);
    if n <= 1 {
        return execute();
    }
    let mut shown: Vec<String> = Vec::new();
    let docs = runs(n, quiet, |_| {
        let f = execute()?;
        for w in f.shown {
            if !shown.contains(&w) {
                shown.push(w);
            }
        }
        Ok(f.doc)
    })?;
    Ok(Finished {
        doc: pool(docs),
        shown,
    })
}

/// The summary line of a pooled document ("pooled from 3 runs (--repeat
/// 5)"), empty for a single run. `asked`: the N of `--repeat`.
pub fn note(doc: &ResultDocument, asked: usize) -> String {
    match doc.plan.get("repeat").and_then(|v| v.as_u64()) {
        Some(made) if asked > 1 => format!(
            "pooled from {made} run{} (--repeat {asked})\n",
            if made == 1 { "" } else { "s" }
        ),
        _ => String::new(),
    }
}

/// One series pooled from the same series of several runs (`starts`: each
/// run's `start_clock_ns`, for the timeline).
pub fn pool_series(parts: &[&Series], starts: &[u64]) -> Series {
    let first = parts[0];
    let mut hist = LatencyHistogram::new();
    for p in parts {
        hist.add(&LatencyHistogram::from_export(&p.histogram));
    }
    // Saturating: the parts may be documents read from files (`pool`).
    let n: u64 = parts
        .iter()
        .fold(0u64, |a, p| a.saturating_add(p.stats.count));
    let nf = n.max(1) as f64;
    let with = parts.iter().filter(|p| p.stats.count > 0);
    let min = with.clone().map(|p| p.stats.min_ns).min().unwrap_or(0);
    let max = with.clone().map(|p| p.stats.max_ns).max().unwrap_or(0);
    let mean = parts
        .iter()
        .map(|p| p.stats.count as f64 * p.stats.mean_ns)
        .sum::<f64>()
        / nf;
    let var = parts
        .iter()
        .map(|p| {
            p.stats.count as f64 * (p.stats.stddev_ns.powi(2) + (p.stats.mean_ns - mean).powi(2))
        })
        .sum::<f64>()
        / nf;
    let q = |x: f64| {
        if n == 0 {
            0
        } else {
            hist.quantile(x).clamp(min.max(0) as u64, max.max(0) as u64)
        }
    };
    let stats = Stats {
        count: n,
        min_ns: min,
        max_ns: max,
        mean_ns: mean,
        stddev_ns: var.sqrt(),
        p50_ns: q(0.5),
        p90_ns: q(0.9),
        p99_ns: q(0.99),
        p99_9_ns: q(0.999),
        p99_99_ns: q(0.9999),
        p99_999_ns: q(0.99999),
        unknown: Default::default(),
    };
    let mut counters = first.counters.clone();
    for p in &parts[1..] {
        let c = &p.counters;
        counters.overruns = counters.overruns.saturating_add(c.overruns);
        counters.overrun_samples = counters.overrun_samples.saturating_add(c.overrun_samples);
        counters.dropped = counters.dropped.saturating_add(c.dropped);
        counters.negative = counters.negative.saturating_add(c.negative);
        counters.above_threshold = match (counters.above_threshold, c.above_threshold) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
    }
    // Timelines one after the other, on the first run's time axis.
    let mut timeline = Timeline {
        interval_ns: parts
            .iter()
            .map(|p| p.timeline.interval_ns)
            .max()
            .unwrap_or(0),
        points: vec![],
    };
    for (p, start) in parts.iter().zip(starts) {
        let off = start.saturating_sub(starts[0]);
        timeline.points.extend(p.timeline.points.iter().map(|t| {
            let mut t = t.clone();
            t.t_ns += off;
            t
        }));
    }
    let keep = parts.iter().map(|p| p.spikes.len()).max().unwrap_or(0);
    let mut spikes: Vec<_> = parts.iter().flat_map(|p| p.spikes.clone()).collect();
    spikes.sort_by_key(|s| std::cmp::Reverse(s.latency_ns));
    spikes.truncate(keep);
    let bl: Option<Vec<_>> = parts.iter().map(|p| p.blocks.as_ref()).collect();
    // Over the intended periods: the parts' own such figures pooled alike
    // (only when every part has them).
    let corrected = parts
        .iter()
        .map(|p| p.over_intended_periods())
        .collect::<Option<Vec<Series>>>()
        .map(|views| {
            let v = pool_series(&views.iter().collect::<Vec<_>>(), starts);
            Corrected {
                stats: v.stats,
                histogram: v.histogram,
                blocks: v.blocks,
                above_threshold: v.counters.above_threshold,
            }
        });
    Series {
        label: first.label.clone(),
        attributes: first.attributes.clone(),
        stats,
        counters,
        histogram: hist.export(),
        timeline,
        spikes,
        blocks: bl.and_then(|b| blocks::concat(&b)),
        repetitions: parts
            .iter()
            .map(|p| Series {
                repetitions: vec![],
                ..(*p).clone()
            })
            .collect(),
        corrected,
    }
}

/// The documents of repeated runs pooled into one: series matched by label
/// (those of the first run; a label missing from a run is pooled from the
/// runs that have it), durations summed, warnings and loads of every run,
/// `plan.repeat` set to the number of runs made.
pub fn pool(docs: Vec<ResultDocument>) -> ResultDocument {
    if docs.len() == 1 {
        let mut d = docs.into_iter().next().expect("one document");
        if let Some(p) = d.plan.as_object_mut() {
            p.insert("repeat".into(), 1.into());
        }
        return d;
    }
    let mut out = docs[0].clone();
    out.series = docs[0]
        .series
        .iter()
        .map(|s| {
            let (parts, starts): (Vec<&Series>, Vec<u64>) = docs
                .iter()
                .filter_map(|d| {
                    d.series
                        .iter()
                        .find(|x| x.label == s.label)
                        .map(|x| (x, d.start_clock_ns))
                })
                .unzip();
            pool_series(&parts, &starts)
        })
        .collect();
    let last = docs.last().expect("documents");
    out.ended_at = last.ended_at.clone();
    out.end_reason = last.end_reason;
    out.duration_ns = docs
        .iter()
        .fold(0u64, |a, d| a.saturating_add(d.duration_ns));
    out.loads = docs.iter().flat_map(|d| d.loads.clone()).collect();
    out.break_event = docs.iter().find_map(|d| d.break_event.clone());
    out.threshold = docs[0].threshold.as_ref().map(|t| Threshold {
        fail_above_ns: t.fail_above_ns,
        exceeded: docs
            .iter()
            .any(|d| d.threshold.as_ref().is_some_and(|t| t.exceeded)),
        samples_above: docs
            .iter()
            .filter_map(|d| d.threshold.as_ref().map(|t| t.samples_above))
            .fold(0u64, u64::saturating_add),
    });
    let mut warnings: Vec<String> = Vec::new();
    for w in docs.iter().flat_map(|d| &d.warnings) {
        if !warnings.contains(w) {
            warnings.push(w.clone());
        }
    }
    out.warnings = warnings;
    if let Some(p) = out.plan.as_object_mut() {
        p.insert("repeat".into(), docs.len().into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::record::SeriesRecorder;
    use rtscope_core::sample::Sample;
    use rtscope_core::system::SystemSnapshot;

    fn doc(start: u64, base: i64) -> ResultDocument {
        let mut r = SeriesRecorder::new(start, 4, Some(base as u64 + 5));
        for i in 0..1000u64 {
            r.record(&Sample {
                seq: i,
                t_ns: start + i * 1_000_000,
                latency_ns: base + (i % 10) as i64,
                overruns: 0,
                cpu: 0,
            });
        }
        let mut d = ResultDocument::new(
            "cyclic",
            serde_json::json!({"period_ns": 1_000_000}),
            SystemSnapshot::default(),
            vec![r.to_series("all", 0)],
        );
        d.start_clock_ns = start;
        d.duration_ns = 1_000_000_000;
        d.warnings = vec!["w".into()];
        d
    }

    /// Series over their intended periods pool into the pooled series'
    /// own such figures (counts, threshold counts and blocks summed); one
    /// run without them leaves the pooled series without them.
    #[test]
    fn figures_over_intended_periods_are_pooled_too() {
        let run = |start: u64, missed: u32| {
            let mut r = SeriesRecorder::new(start, 4, Some(1_000)).over_intended_periods(1_000_000);
            for i in 0..100u64 {
                let late = i == 50;
                r.record(&Sample {
                    seq: i,
                    t_ns: start + i * 1_000_000,
                    latency_ns: if late {
                        i64::from(missed) * 1_000_000 + 500
                    } else {
                        800
                    },
                    overruns: if late { missed } else { 0 },
                    cpu: 0,
                });
            }
            r.to_series("all", 0)
        };
        let (a, b) = (run(0, 30), run(9_000_000_000, 10));
        let p = pool_series(&[&a, &b], &[0, 9_000_000_000]);
        let c = p.corrected.clone().unwrap();
        assert_eq!(c.stats.count, 240);
        assert_eq!(p.stats.count, 200);
        // Each stall: the wake-up and all but its last skipped period (500 ns).
        assert_eq!(c.above_threshold, Some(30 + 10));
        assert_eq!(c.stats.max_ns, 30_000_500);
        let blocks = blocks::decode(c.blocks.as_ref().unwrap()).unwrap();
        assert_eq!(blocks.iter().flatten().map(|e| e.1).sum::<u64>(), 240);
        // The repetitions keep theirs: the view pools them alike.
        assert_eq!(
            p.over_intended_periods().unwrap().repetitions[1]
                .stats
                .count,
            110
        );
        let mut old = b.clone();
        old.corrected = None;
        assert!(pool_series(&[&a, &old], &[0, 9_000_000_000])
            .corrected
            .is_none());
    }

    /// Documents read from files (`pool`) may hold counts near u64::MAX:
    /// the sums saturate instead of panicking (the hard pass's `pool` of a
    /// document whose counts were u64::MAX panicked on overflow).
    #[test]
    fn pooling_huge_counts_saturates() {
        let mut a = doc(0, 10_000);
        let mut b = doc(5_000_000_000, 20_000);
        for d in [&mut a, &mut b] {
            let s = &mut d.series[0];
            s.stats.count = u64::MAX;
            s.counters.overruns = u64::MAX;
            s.counters.overrun_samples = u64::MAX;
            s.counters.dropped = u64::MAX;
            s.counters.negative = u64::MAX;
            s.counters.above_threshold = Some(u64::MAX);
            d.duration_ns = u64::MAX;
            d.threshold = Some(Threshold {
                fail_above_ns: 1,
                exceeded: true,
                samples_above: u64::MAX,
            });
        }
        let p = pool(vec![a, b]);
        let s = &p.series[0];
        assert_eq!(s.stats.count, u64::MAX);
        let c = &s.counters;
        assert_eq!(
            [c.overruns, c.overrun_samples, c.dropped, c.negative],
            [u64::MAX; 4]
        );
        assert_eq!(c.above_threshold, Some(u64::MAX));
        assert_eq!(p.duration_ns, u64::MAX);
        assert_eq!(p.threshold.unwrap().samples_above, u64::MAX);
    }

    #[test]
    fn pooled_series_hold_every_sample_and_each_run() {
        let d = pool(vec![doc(0, 10_000), doc(5_000_000_000, 20_000)]);
        assert_eq!(d.plan["repeat"], 2);
        assert_eq!(d.duration_ns, 2_000_000_000);
        assert_eq!(d.warnings, vec!["w".to_string()]);
        let s = &d.series[0];
        assert_eq!(s.stats.count, 2000);
        assert_eq!(s.stats.min_ns, 10_000);
        assert_eq!(s.stats.max_ns, 20_009);
        assert!((s.stats.mean_ns - 15_004.5).abs() < 1e-6);
        // Half the samples near 10 us, half near 20 us: sd about 5 us.
        assert!(
            (s.stats.stddev_ns - 5000.0).abs() < 10.0,
            "{}",
            s.stats.stddev_ns
        );
        assert!(s.stats.p99_ns >= 20_000);
        assert_eq!(s.repetitions.len(), 2);
        assert_eq!(s.repetitions[1].stats.min_ns, 20_000);
        assert!(s.repetitions.iter().all(|r| r.repetitions.is_empty()));
        assert_eq!(s.counters.above_threshold, Some(800));
        // Timelines follow one another; blocks of both runs are kept.
        assert_eq!(s.timeline.points.last().unwrap().t_ns, 5_000_000_000);
        let b = blocks::decode(s.blocks.as_ref().unwrap()).unwrap();
        assert_eq!(b.iter().flatten().map(|e| e.1).sum::<u64>(), 2000);
        assert_eq!(b.len(), 20);
    }

    #[test]
    fn plans_differ_only_in_what_matters() {
        use serde_json::json;
        let a = json!({"period_ns": 500, "json": "a.json", "threads": [{"cpus": [1], "tid": 7}]});
        let b = json!({"period_ns": 500, "json": "b.json", "threads": [{"cpus": [1], "tid": 9}]});
        assert_eq!(plan_difference(&a, &b), None);
        let c = json!({"period_ns": 500, "threads": [{"cpus": [0], "tid": 9}]});
        assert_eq!(plan_difference(&a, &c).as_deref(), Some("threads"));
        let d = json!({"period_ns": 1000, "threads": [{"cpus": [1]}]});
        assert_eq!(plan_difference(&a, &d).as_deref(), Some("period_ns"));
    }

    #[test]
    fn measured_values_in_a_plan_are_not_settings() {
        // Issue 36: two hwlat runs of one command differed in `session`,
        // two noise runs in `counter_hz` (the counter's calibration).
        use serde_json::json;
        let noise = |hz: f64, tid: u64| {
            json!({"duration_ns": 300, "counter_hz": hz,
                   "calibration": {"hz": hz, "ticks": tid * 3},
                   "threads": [{"cpus": [1], "tid": tid}]})
        };
        assert_eq!(plan_difference(&noise(2.5e9, 7), &noise(2.6e9, 9)), None);
        let hwlat = |hz: f64, events: u64| {
            json!({"threshold_ns": 10_000, "method_used": "user-space",
                   "session": {"smi": {"counts": [events]},
                               "user_space": {"counter_hz": hz, "trace_session": {"events": events}}}})
        };
        assert_eq!(plan_difference(&hwlat(2.5e9, 3), &hwlat(2.6e9, 4)), None);
        // A setting still differs.
        let mut other = hwlat(2.5e9, 3);
        other["threshold_ns"] = json!(20_000);
        assert_eq!(
            plan_difference(&hwlat(2.5e9, 3), &other).as_deref(),
            Some("threshold_ns")
        );
    }

    #[test]
    fn runs_with_other_series_are_named() {
        // Issue 36: `series: []` or a renamed label were dropped silently
        // while the durations were added.
        let a = doc(0, 1000);
        let mut empty = doc(5, 1000);
        empty.series.clear();
        assert_eq!(series_difference(&a, &a), None);
        assert_eq!(
            series_difference(&a, &empty).as_deref(),
            Some("'all' only in the first")
        );
        assert_eq!(
            series_difference(&empty, &a).as_deref(),
            Some("'all' not in the first")
        );
        let mut renamed = doc(5, 1000);
        renamed.series[0].label = "thread\x1b0".into();
        assert_eq!(
            series_difference(&renamed, &a).as_deref(),
            Some("'thread?0' only in the first")
        );
    }

    #[test]
    fn runs_stop_after_an_interrupted_one() {
        let mut made = 0;
        let docs = runs(5, true, |k| {
            made += 1;
            let mut d = doc(0, 1000);
            if k == 2 {
                d.end_reason = EndReason::Interrupted;
            }
            Ok(d)
        })
        .unwrap();
        assert_eq!((docs.len(), made), (2, 2));
    }

    #[test]
    fn the_same_run_twice_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        let b = dir.path().join("b.json");
        let c = dir.path().join("c.json");
        let (mut d1, d2) = (doc(0, 10_000), doc(0, 20_000));
        d1.started_at = "2026-01-01T00:00:00Z".into();
        let mut d3 = d2.clone();
        d3.started_at = "2026-01-01T00:00:01Z".into();
        for p in [&a, &b, &c] {
            std::fs::write(p, "{}").unwrap();
        }
        let dot = dir.path().join(".").join("a.json");
        // Other runs, other files: none.
        assert_eq!(same_run(&[&a, &b, &c], &[&d1, &d2, &d3]), None);
        // The same file, spelled twice.
        assert_eq!(
            same_run(&[&a, &b, &dot], &[&d1, &d2, &d3]),
            Some((0, 2, "the same file"))
        );
        // A copy: same start and series.
        let copy = d2.clone();
        assert_eq!(
            same_run(&[&a, &b, &c], &[&d1, &d2, &copy]),
            Some((1, 2, "the same document: same start, same series"))
        );
        // Same start, other series; same series, other start: other runs.
        let mut other = d1.clone();
        other.started_at = d2.started_at.clone();
        assert_eq!(same_run(&[&a, &b], &[&d2, &other]), None);
        assert_eq!(same_run(&[&b, &c], &[&d2, &d3]), None);
        // Paths that do not resolve are not the same file.
        let gone = dir.path().join("gone.json");
        assert_eq!(same_run(&[&gone, &gone], &[&d1, &d2]), None);
    }
}
