//! The end-of-run summary table printed to stdout.

use rtscope_core::result::ResultDocument;
use rtscope_core::units::format_ns;

use super::us1_if;

/// One row per series: count, min, avg, p50, p99, p99.9, max, stddev (µs, one
/// decimal), overruns, dropped.
pub fn series_table(doc: &ResultDocument) -> String {
    let header = [
        "series", "count", "min", "avg", "p50", "p99", "p99.9", "max", "stddev", "overruns",
        "dropped",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for s in &doc.series {
        let st = &s.stats;
        let (some, pc) = (st.has_samples(), st.has_percentiles());
        rows.push(vec![
            s.label.clone(),
            st.count.to_string(),
            us1_if(some, st.min_ns as f64),
            us1_if(st.has_mean(), st.mean_ns),
            us1_if(pc, st.p50_ns as f64),
            us1_if(pc, st.p99_ns as f64),
            us1_if(pc, st.p99_9_ns as f64),
            us1_if(some, st.max_ns as f64),
            us1_if(st.has_stddev(), st.stddev_ns),
            s.counters.overruns.to_string(),
            s.counters.dropped.to_string(),
        ]);
    }
    render(&rows)
}

/// Whether a cell reads as a number: its first word is one (`12.3`, `-`,
/// `+24%`, `1.5x`, `40.1k`, `[14.8, 15.2]`).
fn numeric(cell: &str) -> bool {
    let t = cell
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_matches(['[', ']', '(', ')', ',']);
    if t.is_empty() || t == "-" || t == super::UNKNOWN {
        return true;
    }
    let t = t.trim_start_matches(['+', '-']);
    let t = t.trim_end_matches(['%', 'x', 'k', 'M', 'G']);
    !t.is_empty() && t.parse::<f64>().is_ok()
}

/// Renders rows (the first is the header) as an aligned table: the first
/// column and every column holding text are left-aligned, numeric columns
/// right-aligned.
pub fn render(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let right: Vec<bool> = (0..cols)
        .map(|c| {
            c > 0
                && rows
                    .iter()
                    .skip(1)
                    .filter_map(|r| r.get(c))
                    .all(|s| numeric(s))
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            if right[c] {
                line.push_str(&format!("{cell:>w$}", w = widths[c]));
            } else {
                line.push_str(&format!("{cell:<w$}", w = widths[c]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The figures over the intended periods of the series that have them:
/// periods (taken and missed), missed, avg, p50, p99, p99.9, max (µs);
/// `None` when no series missed a period (they are those of the wake-ups).
pub fn intended_table(doc: &ResultDocument) -> Option<String> {
    let with: Vec<_> = doc
        .series
        .iter()
        .filter_map(|s| s.corrected.as_ref().map(|c| (s, &c.stats)))
        .collect();
    if !with.iter().any(|(s, _)| s.counters.overruns > 0) {
        return None;
    }
    let header = [
        "series", "periods", "missed", "avg", "p50", "p99", "p99.9", "max",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for (s, st) in with {
        let (some, pc) = (st.has_samples(), st.has_percentiles());
        rows.push(vec![
            s.label.clone(),
            st.count.to_string(),
            s.counters.overruns.to_string(),
            us1_if(st.has_mean(), st.mean_ns),
            us1_if(pc, st.p50_ns as f64),
            us1_if(pc, st.p99_ns as f64),
            us1_if(pc, st.p99_9_ns as f64),
            us1_if(some, st.max_ns as f64),
        ]);
    }
    Some(render(&rows))
}

/// The whole summary of a cyclic run: the table over the wake-ups, and
/// when periods were missed, the one over the intended periods.
pub fn cyclic_summary(doc: &ResultDocument) -> String {
    let mut out = String::new();
    let periodic = doc.series.iter().any(|s| s.corrected.is_some());
    out.push_str(&format!(
        "\n{} run, {} ({}), latency in us{}:\n",
        doc.experiment,
        format_ns(doc.duration_ns),
        serde_json::to_value(doc.end_reason)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        if periodic { ", over the wake-ups" } else { "" }
    ));
    out.push_str(&series_table(doc));
    if let Some(t) = intended_table(doc) {
        out.push_str(
            "\nover the intended periods (each missed period counted at its lateness), latency in us:\n",
        );
        out.push_str(&t);
    }
    if let Some(t) = &doc.trace {
        out.push_str(&super::trace::summary(t));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::record::SeriesRecorder;
    use rtscope_core::sample::Sample;

    fn doc_of(series: Vec<rtscope_core::result::Series>) -> ResultDocument {
        let mut d =
            ResultDocument::new("cyclic", serde_json::json!({}), Default::default(), series);
        d.duration_ns = 15_020_000_000;
        d.end_reason = rtscope_core::result::EndReason::Duration;
        d
    }

    fn thread(period: Option<u64>, overruns: u32) -> rtscope_core::result::Series {
        let mut r = SeriesRecorder::new(0, 4, None);
        if let Some(p) = period {
            r = r.over_intended_periods(p);
        }
        for seq in 0..99 {
            r.record(&Sample {
                seq,
                t_ns: seq * 1_000_000,
                latency_ns: 15_000,
                ..Default::default()
            });
        }
        r.record(&Sample {
            seq: 99,
            t_ns: 200_000_000,
            latency_ns: 100_000_000,
            overruns,
            cpu: 0,
        });
        r.to_series("thread 1", 0)
    }

    /// A periodic run's table says it is over the wake-ups; one that
    /// missed periods adds the table over the intended periods, where the
    /// missed ones weigh: 100 periods of 1 ms skipped by a 100 ms stall.
    #[test]
    fn the_tables_say_what_they_are_over() {
        let t = cyclic_summary(&doc_of(vec![thread(Some(1_000_000), 100)]));
        assert!(
            t.starts_with("\ncyclic run, 15.02s (duration), latency in us, over the wake-ups:\n"),
            "{t}"
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[3].split_whitespace().collect::<Vec<_>>()[..3],
            ["thread", "1", "100"]
        );
        let i = lines
            .iter()
            .position(|l| l.starts_with("over the intended periods (each missed period counted at its lateness), latency in us:"))
            .unwrap_or_else(|| panic!("{t}"));
        assert_eq!(
            lines[i + 1].split_whitespace().collect::<Vec<_>>(),
            ["series", "periods", "missed", "avg", "p50", "p99", "p99.9", "max"]
        );
        let row: Vec<&str> = lines[i + 2].split_whitespace().collect();
        // 200 periods; half of them 1..100 ms late: p50 about 0.9 ms, p99 99 ms.
        assert_eq!(row[..4], ["thread", "1", "200", "100"], "{t}");
        assert_eq!(row[5], "15.0", "{t}");
        assert!(row[6].starts_with("98") || row[6].starts_with("99"), "{t}");
        // Nothing missed: one table, still saying what it is over.
        let t = cyclic_summary(&doc_of(vec![thread(Some(1_000_000), 0)]));
        assert!(t.contains("latency in us, over the wake-ups:\n"), "{t}");
        assert!(!t.contains("intended"), "{t}");
        // A series that is not periodic (an import, irq): as before.
        let t = cyclic_summary(&doc_of(vec![thread(None, 100)]));
        assert!(t.contains("(duration), latency in us:\n"), "{t}");
        assert!(!t.contains("intended"), "{t}");
    }

    #[test]
    fn aligns() {
        let t = render(&[
            vec!["a".into(), "1".into()],
            vec!["long".into(), "1234".into()],
        ]);
        assert_eq!(t, "a        1\nlong  1234\n");
        let t = render(&[
            vec!["load".into(), "n".into(), "counters".into()],
            vec!["cpu".into(), "1".into(), "ops 5 (1/s)".into()],
        ]);
        assert_eq!(t, "load  n  counters\ncpu   1  ops 5 (1/s)\n");
    }
}
