//! The `--trace` part of a summary: how many samples were split, the
//! accuracy check, and the worst samples stage by stage (with what ran
//! around them under `--trace-outliers`).

use rtscope_core::result::{ContextEntry, TraceReport, WakeStages};
use rtscope_core::trace::cause::CauseTable;

use super::us1;

/// Context lines shown per outlier.
const CONTEXT_LINES: usize = 8;
/// Worst samples shown.
const WORST_SHOWN: usize = 5;

fn opt(v: Option<i64>) -> String {
    v.map_or("-".into(), |x| us1(x as f64))
}

/// One sample as `total = timer + wakeup + sched + return + rtscope` (µs).
pub fn breakdown(w: &WakeStages) -> String {
    let mut s = format!(
        "{} = timer {} + wakeup {}",
        us1(w.latency_ns as f64),
        us1(w.timer_ns as f64),
        opt(w.wakeup_ns)
    );
    match (w.sched_ns, w.return_ns) {
        (Some(a), Some(b)) => s.push_str(&format!(
            " + sched {} + return {}",
            us1(a as f64),
            us1(b as f64)
        )),
        _ => s.push_str(&format!(" + switch+return {}", opt(w.switch_return_ns))),
    }
    s.push_str(&format!(" + rtscope {}", us1(w.rtscope_kernel_ns as f64)));
    s
}

/// A context entry in words: `IRQ 11 virtio0 ran 38.0 us on CPU 1 at +2.0 us`.
pub fn context_line(c: &ContextEntry) -> String {
    let at = format!("{:+.1} us", c.start_ns as f64 / 1000.0);
    if c.duration_ns == 0 {
        format!("{at}  CPU {}  {}", c.cpu, c.what)
    } else {
        format!(
            "{at}  CPU {}  {} ran {} us",
            c.cpu,
            c.what.trim_end(),
            us1(c.duration_ns as f64)
        )
    }
}

/// The context worth reading: markers, and entries that ran at least 1 µs
/// and ended after the intended wake time, longest first (then in time order).
pub fn context_highlights(ctx: &[ContextEntry], n: usize) -> Vec<&ContextEntry> {
    let mut busy: Vec<&ContextEntry> = ctx
        .iter()
        .filter(|c| c.duration_ns >= 1000 && c.start_ns + c.duration_ns as i64 > 0)
        .collect();
    busy.sort_by_key(|c| std::cmp::Reverse(c.duration_ns));
    busy.truncate(n);
    let mut out: Vec<&ContextEntry> = ctx
        .iter()
        .filter(|c| c.duration_ns == 0 && c.kind != "armed")
        .chain(busy)
        .collect();
    out.sort_by_key(|c| (c.start_ns, c.duration_ns));
    out
}

/// The cause table: its sentence, a row per cause (count, share, worst,
/// CPUs), and what removes the main cause.
pub fn cause_table(c: &CauseTable) -> String {
    let th = us1(c.threshold_ns as f64);
    let Some(sentence) = c.sentence() else {
        return format!("causes: no outlier above {th} us\n");
    };
    let mut out = format!(
        "causes of {} outliers above {th} us: {sentence}\n",
        c.outliers
    );
    out.push_str("    count   share  worst_us  cpus   cause\n");
    for r in &c.rows {
        let cpus: Vec<String> = r.per_cpu.keys().map(|k| k.to_string()).collect();
        out.push_str(&format!(
            "  {:>7} {:>6.1}% {:>9} {:<6} {}\n",
            r.count,
            r.share * 100.0,
            us1(r.worst_ns as f64),
            cpus.join(","),
            r.label
        ));
    }
    if let Some(r) = c.rows.first() {
        out.push_str(&format!("  remedy ({}): {}\n", r.label, r.remedy));
    }
    out
}

/// The trace section of the summary.
/// Why samples were not split, for the summary line: empty when all were.
pub fn not_split(t: &TraceReport) -> String {
    if t.joined >= t.samples {
        return String::new();
    }
    format!(
        " ({} without their kernel wake-up, {} with an incomplete kernel record)",
        t.unmatched_samples, t.incomplete
    )
}

pub fn summary(t: &TraceReport) -> String {
    let mut out = String::new();
    let obs = |k: &str| t.observed.get(k).copied().unwrap_or(0);
    let lost = if t.lost_pages == 0 && t.overruns == 0 {
        "none lost".to_string()
    } else {
        format!(
            "LOST: {} overrun, {} pages with losses",
            t.overruns, t.lost_pages
        )
    };
    out.push_str(&format!(
        "trace: {} of {} samples split into stages{} (sched_switch recorded for {}); {} events read, {lost}\n",
        t.joined,
        t.samples,
        not_split(t),
        obs("sched"),
        t.events_read
    ));
    let a = &t.accuracy;
    if a.checked == 0 {
        out.push_str("accuracy check: no sample could be checked\n");
    } else {
        out.push_str(&format!(
            "accuracy check: {} — rtscope − kernel (sys_exit − expires) over {} samples: min {} p50 {} p99 {} max {} us{}\n",
            if a.passed { "passed" } else { "FAILED" },
            a.checked,
            us1(a.min_ns as f64),
            us1(a.p50_ns as f64),
            us1(a.p99_ns as f64),
            us1(a.max_ns as f64),
            if a.below_kernel > 0 {
                format!(", {} samples below the kernel's bound", a.below_kernel)
            } else {
                String::new()
            }
        ));
    }
    if let Some(c) = &t.causes {
        out.push_str(&cause_table(c));
    }
    if !t.worst.is_empty() {
        out.push_str("worst samples (us):\n");
    }
    for w in t.worst.iter().take(WORST_SHOWN) {
        out.push_str(&format!(
            "  {} #{}: {}{}\n",
            w.series,
            w.seq,
            breakdown(w),
            w.switched_from
                .as_ref()
                .map_or(String::new(), |p| format!("  (switched in from {p})"))
        ));
        if let Some(d) = &w.cause {
            out.push_str(&format!("    cause: {}: {}\n", d.cause.label(), d.evidence));
        }
        for c in context_highlights(&w.context, CONTEXT_LINES) {
            out.push_str(&format!("      {}\n", context_line(c)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breakdown_reads() {
        let w = WakeStages {
            series: "thread 0".into(),
            latency_ns: 20_000,
            timer_ns: 5_000,
            wakeup_ns: Some(2_000),
            sched_ns: Some(9_000),
            return_ns: Some(2_000),
            switch_return_ns: Some(11_000),
            rtscope_kernel_ns: 2_000,
            ..Default::default()
        };
        assert_eq!(
            breakdown(&w),
            "20.0 = timer 5.0 + wakeup 2.0 + sched 9.0 + return 2.0 + rtscope 2.0"
        );
        let c = ContextEntry {
            start_ns: 2_000,
            duration_ns: 38_000,
            cpu: 1,
            kind: "irq".into(),
            what: "IRQ 11 virtio0".into(),
        };
        assert_eq!(
            context_line(&c),
            "+2.0 us  CPU 1  IRQ 11 virtio0 ran 38.0 us"
        );
    }

    #[test]
    fn the_cause_table_reads() {
        use rtscope_core::trace::cause::{Cause, Diagnosis};
        let mut c = CauseTable::new(100_000);
        assert_eq!(cause_table(&c), "causes: no outlier above 100.0 us\n");
        let d = Diagnosis {
            cause: Cause::RtThrottling,
            evidence: "seen".into(),
            share: 0.9,
            cause_ns: 1,
            stage: "switch+return".into(),
        };
        c.add(&d, 1, 50_000_000);
        let t = TraceReport {
            causes: Some(c),
            ..Default::default()
        };
        let s = summary(&t);
        assert!(
            s.contains("causes of 1 outliers above 100.0 us: 100 % of outliers above 100 µs on CPU 1: RT throttling, worst 50000 µs\n"),
            "{s}"
        );
        assert!(
            s.contains("        1  100.0%   50000.0 1      RT throttling\n"),
            "{s}"
        );
        assert!(
            s.contains("  remedy (RT throttling): RT throttling: `sched_rt_runtime_us`"),
            "{s}"
        );
    }

    #[test]
    fn the_summary_says_why_samples_were_not_split() {
        let mut t = TraceReport {
            samples: 500,
            joined: 500,
            ..Default::default()
        };
        assert_eq!(not_split(&t), "");
        assert!(summary(&t).starts_with("trace: 500 of 500 samples split into stages (sched"));
        t.joined = 493;
        t.incomplete = 5;
        t.unmatched_samples = 2;
        assert_eq!(
            not_split(&t),
            " (2 without their kernel wake-up, 5 with an incomplete kernel record)"
        );
        assert!(summary(&t).starts_with(
            "trace: 493 of 500 samples split into stages (2 without their kernel wake-up, 5 with"
        ));
    }
}
