//! `compare`: the cause tables of traced runs (`--trace-outliers`) side by
//! side, one row per cause, one column per run (outliers with that cause and
//! their share of the run's outliers).

use std::fmt::Write;

use super::{esc, Run};
use crate::output::printable;
use crate::output::summary::render;

/// The rows: a header, one row per cause (in order of first appearance,
/// the baseline's most frequent first), and the totals; `None` when no run
/// has a cause table.
fn rows(runs: &[Run]) -> Option<Vec<Vec<String>>> {
    let tables: Vec<_> = runs
        .iter()
        .map(|r| r.doc.trace.as_ref().and_then(|t| t.causes.as_ref()))
        .collect();
    if tables.iter().all(|t| t.is_none()) {
        return None;
    }
    let mut labels: Vec<String> = Vec::new();
    for t in tables.iter().flatten() {
        for r in &t.rows {
            if !labels.contains(&r.label) {
                labels.push(r.label.clone());
            }
        }
    }
    let mut out = vec![std::iter::once("cause".to_string())
        .chain(runs.iter().map(|r| r.name.clone()))
        .collect::<Vec<_>>()];
    for l in &labels {
        let mut row = vec![l.clone()];
        for t in &tables {
            row.push(match t {
                None => "-".into(),
                Some(t) => match t.rows.iter().find(|r| &r.label == l) {
                    Some(r) => format!("{} ({:.0} %)", r.count, r.share * 100.0),
                    None => "0".into(),
                },
            });
        }
        out.push(row);
    }
    let mut total = vec!["outliers (above)".to_string()];
    for t in &tables {
        total.push(match t {
            None => "untraced".into(),
            Some(t) => format!(
                "{} (> {:.1} us)",
                t.outliers,
                t.threshold_ns as f64 / 1000.0
            ),
        });
    }
    out.push(total);
    Some(out)
}

/// The terminal text (empty when no run has a cause table).
pub fn text(runs: &[Run]) -> String {
    let Some(rows) = rows(runs) else {
        return String::new();
    };
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| printable(c).into_owned()).collect())
        .collect();
    format!("\ncauses of outliers:\n{}", render(&rows))
}

/// The HTML section (empty when no run has a cause table).
pub fn html(runs: &[Run]) -> String {
    let Some(rows) = rows(runs) else {
        return String::new();
    };
    let mut s = String::from("<h3>Causes of outliers</h3>\n<table class=\"causes\">\n");
    for (i, r) in rows.iter().enumerate() {
        let cell = if i == 0 { "th" } else { "td" };
        s.push_str("<tr>");
        for (j, c) in r.iter().enumerate() {
            let class = if j == 0 { " class=\"l\"" } else { "" };
            let _ = write!(s, "<{cell}{class}>{}</{cell}>", esc(c));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::result::{ResultDocument, TraceReport};
    use rtscope_core::trace::cause::{Cause, CauseTable, Diagnosis};

    fn run(name: &str, causes: Option<&[(Cause, u32)]>) -> Run {
        let mut doc =
            ResultDocument::new("cyclic", serde_json::json!({}), Default::default(), vec![]);
        if let Some(cs) = causes {
            let mut t = CauseTable::new(100_000);
            for (c, n) in cs {
                let d = Diagnosis {
                    cause: c.clone(),
                    evidence: String::new(),
                    share: 1.0,
                    cause_ns: 1,
                    stage: "timer".into(),
                };
                for _ in 0..*n {
                    t.add(&d, 1, 200_000);
                }
            }
            doc.trace = Some(TraceReport {
                causes: Some(t),
                ..Default::default()
            });
        }
        Run {
            name: name.into(),
            path: name.into(),
            doc,
        }
    }

    #[test]
    fn cause_tables_side_by_side() {
        assert_eq!(text(&[run("a", None), run("b", None)]), "");
        assert_eq!(html(&[run("a", None)]), "");
        let runs = [
            run(
                "before",
                Some(&[(Cause::RtThrottling, 3), (Cause::HardwareOrHypervisor, 1)]),
            ),
            run("after", Some(&[(Cause::HardwareOrHypervisor, 2)])),
            run("plain", None),
        ];
        let r = rows(&runs).unwrap();
        assert_eq!(r[0], ["cause", "before", "after", "plain"]);
        assert_eq!(r[1], ["RT throttling", "3 (75 %)", "0", "-"]);
        assert_eq!(r[2][1..], ["1 (25 %)", "2 (100 %)", "-"]);
        assert_eq!(
            r[3],
            [
                "outliers (above)",
                "4 (> 100.0 us)",
                "2 (> 100.0 us)",
                "untraced"
            ]
        );
        assert!(text(&runs).starts_with("\ncauses of outliers:\n"));
        assert!(html(&runs).contains("<td class=\"l\">RT throttling</td><td>3 (75 %)</td>"));
    }
}
