//! The text of an `ipc` result: mechanisms sorted by median latency, then the
//! driving task's own activation latency.

use rtscope_core::result::{ResultDocument, Series};

use super::{summary, us1, us1_if};

/// The end-of-run tables: mechanisms sorted by median, then the driving task's activation.
pub fn summary_text(doc: &ResultDocument, repetitions: u64) -> String {
    let mut out = String::new();
    let mut hdr = vec!["series (us)", "count", "min", "p50", "p99", "p99.9", "max"];
    if repetitions > 1 {
        hdr.push("rep p50 range");
    }
    for (measures, title) in [
        ("latency", ""),
        (
            "activation",
            "periodic activation (the driving task's own wake-up latency):\n",
        ),
    ] {
        let mut ss: Vec<&Series> = doc
            .series
            .iter()
            .filter(|s| s.attributes.get("measures").and_then(|v| v.as_str()) == Some(measures))
            .collect();
        if ss.is_empty() {
            continue;
        }
        ss.sort_by_key(|s| (s.stats.p50_ns, s.stats.max_ns));
        // The driving task's activation can miss periods: count them, as
        // cyclic does (a handoff or round trip has no period of its own).
        let with_overruns = measures == "activation";
        let mut head: Vec<String> = hdr.iter().map(|s| s.to_string()).collect();
        if with_overruns {
            head.insert(7, "overruns".into());
        }
        let mut rows: Vec<Vec<String>> = vec![head];
        for s in ss {
            let st = &s.stats;
            let (some, pc) = (st.has_samples(), st.has_percentiles());
            let mut row = vec![
                s.label.clone(),
                st.count.to_string(),
                us1_if(some, st.min_ns as f64),
                us1_if(pc, st.p50_ns as f64),
                us1_if(pc, st.p99_ns as f64),
                us1_if(pc, st.p99_9_ns as f64),
                us1_if(some, st.max_ns as f64),
            ];
            if with_overruns {
                row.push(s.counters.overruns.to_string());
            }
            if repetitions > 1 {
                let reps: Vec<i64> = s
                    .attributes
                    .get("repetition_summaries")
                    .and_then(|v| v.as_array())
                    .map(|a| a.iter().filter_map(|r| r["p50_ns"].as_i64()).collect())
                    .unwrap_or_default();
                row.push(match (reps.iter().min(), reps.iter().max()) {
                    (Some(lo), Some(hi)) => format!("{}..{}", us1(*lo as f64), us1(*hi as f64)),
                    _ => "-".into(),
                });
            }
            rows.push(row);
        }
        out.push_str(title);
        out.push_str(&summary::render(&rows));
    }
    out
}
