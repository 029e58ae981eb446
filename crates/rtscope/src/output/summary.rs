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

/// The whole summary of a cyclic run.
pub fn cyclic_summary(doc: &ResultDocument) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "\n{} run, {} ({}), latency in us:\n",
        doc.experiment,
        format_ns(doc.duration_ns),
        serde_json::to_value(doc.end_reason)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    ));
    out.push_str(&series_table(doc));
    if let Some(t) = &doc.trace {
        out.push_str(&super::trace::summary(t));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
