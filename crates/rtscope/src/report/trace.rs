//! The `--trace` section of a report: where the time went, as stacked bars
//! (the mean of every stage over all joined samples, and each of the worst
//! samples on its own, each bar scaled to its total), the accuracy check,
//! and the worst samples' timelines (`--trace-outliers`).

use std::fmt::Write;

use rtscope_core::result::{ResultDocument, TraceReport, WakeStages};
use rtscope_core::trace::cause::CauseTable;

use super::esc;
use crate::output::trace::{breakdown, context_highlights, context_line, not_split};

/// Segments of a bar: name, colour.
const SEGMENTS: [(&str, &str); 6] = [
    ("timer IRQ", "#d62728"),
    ("wake-up", "#ff7f0e"),
    ("scheduling", "#1f77b4"),
    ("return", "#17becf"),
    ("switch+return", "#9467bd"),
    ("rtscope stamp", "#7f7f7f"),
];

/// Bars shown for the worst samples.
const WORST_BARS: usize = 10;

/// A sample's segments (ns) in [`SEGMENTS`] order.
fn segments(w: &WakeStages) -> [i64; 6] {
    let (sched, ret, sr) = match (w.sched_ns, w.return_ns) {
        (Some(a), Some(b)) => (a, b, 0),
        _ => (0, 0, w.switch_return_ns.unwrap_or(0)),
    };
    [
        w.timer_ns,
        w.wakeup_ns.unwrap_or(0),
        sched,
        ret,
        sr,
        w.rtscope_kernel_ns,
    ]
}

/// The mean of each stage (ns) from the stage series, in [`SEGMENTS`] order:
/// switch+return only for the samples whose switch was not recorded.
fn mean_segments(d: &ResultDocument) -> Option<[f64; 6]> {
    let m = |name: &str| {
        d.series
            .iter()
            .find(|s| s.label == format!("stage {name}"))
            .map(|s| (s.stats.mean_ns, s.stats.count as f64))
    };
    let (timer, n) = m("timer")?;
    if n == 0.0 {
        return None;
    }
    let share = |name: &str| m(name).map_or(0.0, |(mean, c)| mean * c / n);
    let sched = share("sched");
    let ret = share("return");
    Some([
        timer,
        share("wakeup"),
        sched,
        ret,
        share("switch+return") - sched - ret,
        share("rtscope-kernel"),
    ])
}

fn bar(svg: &mut String, y: f64, label: &str, total_text: &str, segs: &[f64; 6]) {
    let (x0, w) = (190.0, 560.0);
    let total: f64 = segs.iter().map(|v| v.max(0.0)).sum();
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
        x0 - 8.0,
        y + 13.0,
        esc(label)
    );
    let mut x = x0;
    for (i, v) in segs.iter().enumerate() {
        if *v <= 0.0 || total <= 0.0 {
            continue;
        }
        let sw = v / total * w;
        let _ = writeln!(
            svg,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{sw:.1}\" height=\"18\" fill=\"{}\"><title>{}: {:.1} us ({:.0}%)</title></rect>",
            SEGMENTS[i].1,
            SEGMENTS[i].0,
            v / 1000.0,
            v / total * 100.0
        );
        x += sw;
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
        x0 + w + 8.0,
        y + 13.0,
        esc(total_text)
    );
}

/// The stacked bars: overall means, then the worst samples.
fn stacked(d: &ResultDocument, t: &TraceReport) -> String {
    let worst: Vec<&WakeStages> = t.worst.iter().take(WORST_BARS).collect();
    let rows = 1 + worst.len();
    let h = 40 + rows * 26 + 30;
    let mut svg = format!(
        "<svg class=\"chart\" data-chart=\"stages\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 900 {h}\" width=\"900\" height=\"{h}\">\n\
         <text class=\"ctitle\" x=\"10\" y=\"18\">Where the time went (each bar is one total, 100% wide)</text>\n"
    );
    let mut y = 34.0;
    if let Some(m) = mean_segments(d) {
        let total: f64 = m.iter().sum();
        bar(
            &mut svg,
            y,
            "all samples (mean)",
            &format!("{:.1} us", total / 1000.0),
            &m,
        );
    }
    for w in worst {
        y += 26.0;
        let s = segments(w).map(|v| v as f64);
        bar(
            &mut svg,
            y,
            &format!("{} #{}", w.series, w.seq),
            &format!("{:.1} us", w.latency_ns as f64 / 1000.0),
            &s,
        );
    }
    y += 34.0;
    let mut x = 10.0;
    for (name, col) in SEGMENTS {
        let _ = writeln!(
            svg,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"{col}\"/><text x=\"{:.1}\" y=\"{y:.1}\">{}</text>",
            y - 10.0,
            x + 16.0,
            esc(name)
        );
        x += 30.0 + name.len() as f64 * 7.0;
    }
    svg.push_str("</svg>\n");
    svg
}

/// The section (empty for an untraced run).
/// The cause table as HTML: its sentence, then a row per cause (count,
/// share, worst, CPUs, the worst's evidence, the remedy).
pub fn cause_table(c: &CauseTable) -> String {
    let th = c.threshold_ns as f64 / 1000.0;
    let Some(sentence) = c.sentence() else {
        return format!("<p>Causes: no outlier above {th:.1} µs.</p>\n");
    };
    let mut s = format!(
        "<p><b>Causes of {} outliers above {th:.1} µs</b>: {}.</p>\n<table class=\"causes\">\n\
         <tr><th class=\"l\">cause</th><th>count</th><th>share</th><th>worst µs</th><th class=\"l\">CPUs</th>\
         <th class=\"l\">evidence (worst)</th><th class=\"l\">what removes it</th></tr>\n",
        c.outliers,
        esc(&sentence)
    );
    for r in &c.rows {
        let cpus: Vec<String> = r.per_cpu.keys().map(|k| k.to_string()).collect();
        let _ = writeln!(
            s,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{:.1} %</td><td>{:.1}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(&r.label),
            r.count,
            r.share * 100.0,
            r.worst_ns as f64 / 1000.0,
            cpus.join(","),
            esc(&r.worst_evidence),
            esc(&r.remedy)
        );
    }
    s.push_str("</table>\n");
    s
}

fn cause_of(w: &WakeStages) -> String {
    w.cause.as_ref().map_or("-".into(), |d| d.cause.label())
}

pub fn section(d: &ResultDocument) -> String {
    let Some(t) = &d.trace else {
        return String::new();
    };
    let mut s = String::from("<h3>Kernel trace: stages of each wake-up</h3>\n");
    let sched = t.observed.get("sched").copied().unwrap_or(0);
    let _ = writeln!(
        s,
        "<p class=\"sub\">{} of {} samples joined with their kernel wake-up{} (trace clock {}, instance {}); \
         the switch into the thread was recorded for {sched} (on an idle CPU the kernel rarely records it: \
         then scheduling and return are one stage, switch+return). Events read: {}; lost: {} overrun, {} pages with losses.</p>",
        t.joined,
        t.samples,
        esc(&not_split(t)),
        esc(&t.clock),
        esc(&t.instance),
        t.events_read,
        t.overruns,
        t.lost_pages
    );
    let a = &t.accuracy;
    let _ = writeln!(
        s,
        "<p><span class=\"verdict {}\">Accuracy check {}</span>: rtscope's latency − the kernel's bound \
         (sys_exit − expires) over {} samples: min {:.1} µs, median {:.1} µs, p99 {:.1} µs, max {:.1} µs; \
         {} below the bound.</p>",
        if a.passed { "better" } else { "worse" },
        if a.passed { "passed" } else { "FAILED" },
        a.checked,
        a.min_ns as f64 / 1000.0,
        a.p50_ns as f64 / 1000.0,
        a.p99_ns as f64 / 1000.0,
        a.max_ns as f64 / 1000.0,
        a.below_kernel
    );
    if let Some(c) = &t.causes {
        s.push_str(&cause_table(c));
    }
    s.push_str(&stacked(d, t));
    if !t.worst.is_empty() {
        s.push_str("<table class=\"stages\">\n<tr><th class=\"l\">sample</th><th class=\"l\">stages (µs)</th><th class=\"l\">switched in from</th><th class=\"l\">cause</th></tr>\n");
        for w in t.worst.iter().take(WORST_BARS) {
            let _ = writeln!(
                s,
                "<tr><td class=\"l\">{} #{}</td><td class=\"l mono\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
                esc(&w.series),
                w.seq,
                esc(&breakdown(w)),
                esc(w.switched_from.as_deref().unwrap_or("-")),
                esc(&cause_of(w))
            );
        }
        s.push_str("</table>\n");
    }
    for w in t.worst.iter().filter(|w| !w.context.is_empty()) {
        let _ = writeln!(
            s,
            "<details><summary>{} #{}: {:.1} µs — cause: {} — what ran on the CPUs from the arming of the timer to the wake-up</summary>\n<ul class=\"mono\">",
            esc(&w.series),
            w.seq,
            w.latency_ns as f64 / 1000.0,
            esc(&cause_of(w))
        );
        if let Some(c) = &w.cause {
            let _ = writeln!(s, "<li><b>{}</b></li>", esc(&c.evidence));
        }
        for c in context_highlights(&w.context, 12) {
            let _ = writeln!(s, "<li>{}</li>", esc(&context_line(c)));
        }
        s.push_str("</ul></details>\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::result::{ContextEntry, TraceAccuracy};

    #[test]
    fn section_shows_stages_accuracy_and_context() {
        let mut d =
            ResultDocument::new("cyclic", serde_json::json!({}), Default::default(), vec![]);
        assert_eq!(section(&d), "");
        d.trace = Some(TraceReport {
            clock: "mono".into(),
            samples: 10,
            joined: 10,
            accuracy: TraceAccuracy {
                checked: 10,
                passed: true,
                min_ns: 700,
                ..Default::default()
            },
            worst: vec![WakeStages {
                series: "thread 0".into(),
                seq: 7,
                latency_ns: 20_000,
                timer_ns: 5_000,
                wakeup_ns: Some(2_000),
                switch_return_ns: Some(11_000),
                rtscope_kernel_ns: 2_000,
                context: vec![ContextEntry {
                    start_ns: 2_000,
                    duration_ns: 38_000,
                    cpu: 1,
                    kind: "irq".into(),
                    what: "IRQ 11 <virtio0>".into(),
                }],
                ..Default::default()
            }],
            ..Default::default()
        });
        let s = section(&d);
        assert!(s.contains("cause: - — what ran"), "{s}");
        {
            use rtscope_core::trace::cause::{Cause, Diagnosis};
            let t = d.trace.as_mut().unwrap();
            let diag = Diagnosis {
                cause: Cause::IrqHandler {
                    irq: Some(11),
                    name: "<virtio0>".into(),
                },
                evidence: "irq 11 ran".into(),
                share: 0.5,
                cause_ns: 10_000,
                stage: "timer".into(),
            };
            let mut c = CauseTable::new(10_000);
            c.add(&diag, 1, 20_000);
            t.causes = Some(c);
            t.worst[0].cause = Some(diag);
        }
        let s = section(&d);
        assert!(s.contains("<b>Causes of 1 outliers above 10.0 µs</b>: 100 % of outliers above 10.0 µs on CPU 1: irq 11 &lt;virtio0&gt;, worst 20.0 µs."), "{s}");
        assert!(
            s.contains("cause: irq 11 &lt;virtio0&gt; — what ran"),
            "{s}"
        );
        assert!(s.contains("<li><b>irq 11 ran</b></li>"), "{s}");
        assert!(s.contains("IRQ affinity"), "{s}");
        assert!(s.contains("data-chart=\"stages\""), "{s}");
        assert!(s.contains("Accuracy check passed"));
        assert!(s.contains("20.0 = timer 5.0 + wakeup 2.0 + switch+return 11.0 + rtscope 2.0"));
        // Escaped, and read as a timeline.
        assert!(s.contains("IRQ 11 &lt;virtio0&gt; ran 38.0 us"), "{s}");
        assert_eq!(
            segments(&d.trace.as_ref().unwrap().worst[0])
                .iter()
                .sum::<i64>(),
            20_000
        );
    }
}
