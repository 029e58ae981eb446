//! The `rtscope noise` part of a report: the throttling that the summary's
//! figures leave out, per CPU, with its cause and its fix.

use std::fmt::Write;

use rtscope_core::result::ResultDocument;

use super::esc;
use crate::output::noise::{throttling, throttling_advice, throttling_lines};

/// An `RT throttling` section when the run found any; empty otherwise.
pub fn section(d: &ResultDocument) -> String {
    let lines: Vec<String> = d
        .series
        .iter()
        .filter_map(|s| Some((s, throttling(s)?)))
        .flat_map(|(s, r)| {
            throttling_lines(&r)
                .into_iter()
                .map(move |l| format!("{}: {l}", s.label))
        })
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "<h3>RT throttling (not in the summary above)</h3>\n<ul class=\"throttling\">\n",
    );
    for l in &lines {
        let _ = writeln!(s, "<li>{}</li>", esc(l));
    }
    s.push_str("</ul>\n");
    for l in throttling_advice(d) {
        let _ = writeln!(s, "<p class=\"sub\">{}</p>", esc(l.trim()));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::noise::throttle::{Budget, Episode, Evidence, Found, Report};
    use rtscope_core::result::Series;

    fn doc(report: Option<Report>) -> ResultDocument {
        let mut s = Series {
            label: "cpu 1".into(),
            ..Default::default()
        };
        if let Some(r) = report {
            s.attributes
                .insert("throttling".into(), serde_json::to_value(r).unwrap());
        }
        ResultDocument::new(
            "noise",
            serde_json::json!({}),
            rtscope_core::system::SystemSnapshot::default(),
            vec![s],
        )
    }

    #[test]
    fn found_throttling_has_its_section_and_none_has_none() {
        let rt = Budget::rt(1_000_000, 950_000).unwrap();
        let e = Episode {
            start_ns: 0,
            end_ns: 48_700_000,
            noise_ns: 48_700_000,
            gaps: 1,
        };
        let found = [Found {
            budget: rt,
            evidence: Evidence::Period,
            episodes: vec![e, e],
        }];
        let html = section(&doc(Some(Report::new(&[rt], &found, 3_000_000_000))));
        assert!(html.contains("<h3>RT throttling"), "{html}");
        assert!(
            html.contains(
                "<li>cpu 1: RT throttling: 2 gaps of ~48.7ms, 3.25% of the time (every 1s)</li>"
            ),
            "{html}"
        );
        assert!(
            html.contains("sysctl -w kernel.sched_rt_runtime_us=-1"),
            "{html}"
        );
        // Looked for, not found; not looked for (older documents, --policy other).
        assert_eq!(
            section(&doc(Some(Report::new(&[rt], &[], 3_000_000_000)))),
            ""
        );
        assert_eq!(section(&doc(None)), "");
    }
}
