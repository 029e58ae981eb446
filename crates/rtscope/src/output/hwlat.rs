//! `rtscope hwlat`'s summary, from the result document alone.

use rtscope_core::result::{ResultDocument, Series};
use rtscope_core::units::format_ns;

use crate::output::printable;

fn u(v: Option<&serde_json::Value>) -> Option<u64> {
    v.and_then(|x| x.as_u64())
}

/// A duration or `-` where unknown.
fn ns_or_dash(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), format_ns)
}

/// The largest sample and its p99, `-` without samples.
fn max_p99(s: &Series) -> (String, String) {
    if s.stats.count == 0 {
        ("-".into(), "-".into())
    } else {
        (
            format_ns(s.stats.max_ns.max(0) as u64),
            format_ns(s.stats.p99_ns),
        )
    }
}

/// Per CPU: samples, the largest, inner/outer, NMIs and SMIs (the tracer);
/// gaps and the unexplained ones (user space); how tracefs was given back,
/// why SMIs were not counted, the warnings.
pub fn summary(doc: &ResultDocument) -> String {
    let p = &doc.plan;
    let method = p.get("method_used").and_then(|m| m.as_str()).unwrap_or("?");
    let mut s = String::new();
    if method == "tracer" {
        let t = p.get("tracer").cloned().unwrap_or_default();
        s.push_str(&format!(
            "method: the kernel's hwlat tracer (window {}, width {}, threshold {}, {})\n",
            format_ns(u(t.get("window_us")).unwrap_or(0) * 1000),
            format_ns(u(t.get("width_us")).unwrap_or(0) * 1000),
            format_ns(u(t.get("threshold_us")).unwrap_or(0) * 1000),
            t.get("mode")
                .and_then(|m| m.as_str())
                .unwrap_or("mode as set"),
        ));
        s.push_str(
            "CPU   samples   max        p99        inner max  outer max  NMIs   NMI time   SMIs\n",
        );
        for x in &doc.series {
            let a = &x.attributes;
            let (max, p99) = max_p99(x);
            s.push_str(&format!(
                "{:<5} {:>7}   {:<10} {:<10} {:<10} {:<10} {:>5}  {:<10} {}\n",
                u(a.get("cpu")).unwrap_or(0),
                x.stats.count,
                max,
                p99,
                format_ns(u(a.get("inner_max_ns")).unwrap_or(0)),
                format_ns(u(a.get("outer_max_ns")).unwrap_or(0)),
                u(a.get("nmi_count")).unwrap_or(0),
                ns_or_dash(u(a.get("nmi_total_ns"))),
                u(a.get("smi_count")).map_or("-".into(), |c| c.to_string()),
            ));
        }
        let r = p
            .get("session")
            .and_then(|x| x.get("tracer"))
            .and_then(|x| x.get("restored"))
            .cloned()
            .unwrap_or_default();
        let diffs: Vec<&str> = r
            .get("differences")
            .and_then(|d| d.as_array())
            .map(|d| d.iter().filter_map(|x| x.as_str()).collect())
            .unwrap_or_default();
        let error = r.get("error").and_then(|e| e.as_str());
        let expanded = r.get("kernel_expanded_buffer").and_then(|e| e.as_bool()) == Some(true);
        let checked = r
            .get("before")
            .and_then(|b| b.as_object())
            .map_or(0, |b| b.len());
        s.push_str(&match (error, diffs.as_slice()) {
            (Some(e), _) => format!("tracefs: NOT given back: {}\n", printable(e)),
            (None, []) => format!("tracefs: given back as it was ({checked} files read before and after)\n"),
            (None, [one]) if expanded => format!(
                "tracefs: given back as it was, but for the kernel's one-way expansion of a ring buffer never used since boot ({})\n",
                printable(one)
            ),
            (None, d) => format!("tracefs: NOT as it was: {}\n", printable(&d.join("; "))),
        });
    } else {
        s.push_str(&format!(
            "method: user space ({}): interrupts were on, each figure is an upper bound on what the machine did\n",
            printable(
                p.get("session")
                    .and_then(|x| x.get("why"))
                    .and_then(|w| w.as_str())
                    .unwrap_or("?")
            )
        ));
        s.push_str("CPU   gaps      unexplained  max        p99        all gaps max  SMIs\n");
        for x in &doc.series {
            let a = &x.attributes;
            let (max, p99) = max_p99(x);
            s.push_str(&format!(
                "{:<5} {:>8}  {:>11}  {:<10} {:<10} {:<13} {}\n",
                u(a.get("cpu")).unwrap_or(0),
                u(a.get("gaps")).unwrap_or(0),
                x.stats.count,
                max,
                p99,
                ns_or_dash(
                    a.get("noise")
                        .and_then(|n| n.get("max_gap_ns"))
                        .and_then(|m| m.as_u64())
                ),
                u(a.get("smi_count")).map_or("-".into(), |c| c.to_string()),
            ));
        }
    }
    if let Some(t) = p.get("threshold_ns").and_then(|t| t.as_u64()) {
        if doc.series.iter().any(|x| x.stats.count == 0)
            && crate::gate::measured_nothing(doc).is_none()
        {
            s.push_str(&format!(
                "no sample (-): no gap at or above the threshold ({}) in the whole run, which is what a machine that is fine shows\n",
                format_ns(t)
            ));
        }
    }
    if let Some(r) = p
        .get("session")
        .and_then(|x| x.get("smi"))
        .and_then(|m| m.get("reason"))
        .and_then(|r| r.as_str())
    {
        s.push_str(&format!("SMIs not counted: {}\n", printable(r)));
    }
    if !doc.warnings.is_empty() {
        s.push('\n');
        for w in &doc.warnings {
            s.push_str(&format!("warning: {}\n", printable(w)));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(
        method: &str,
        plan: serde_json::Value,
        attrs: serde_json::Value,
        count: u64,
    ) -> ResultDocument {
        let mut s = Series {
            label: "cpu 1".into(),
            ..Default::default()
        };
        s.stats.count = count;
        s.stats.max_ns = 109_772_000;
        s.stats.p99_ns = 109_772_000;
        for (k, v) in attrs.as_object().unwrap() {
            s.attributes.insert(k.clone(), v.clone());
        }
        let mut plan = plan;
        plan["method_used"] = json!(method);
        ResultDocument::new(
            "hwlat",
            plan,
            rtscope_core::system::SystemSnapshot::default(),
            vec![s],
        )
    }

    fn tracer_plan(restored: serde_json::Value) -> serde_json::Value {
        json!({"tracer": {"window_us": 1_000_000, "width_us": 950_000, "threshold_us": 10,
                          "mode": "round-robin"},
               "session": {"tracer": {"restored": restored},
                           "smi": {"reason": "AuthenticAMD CPU: MSR_SMI_COUNT (0x34) is Intel's"}}})
    }

    #[test]
    fn the_tracers_table() {
        let d = doc(
            "tracer",
            tracer_plan(json!({"before": {"a": "1", "b": "2"}, "differences": [], "error": null})),
            json!({"cpu": 1, "inner_max_ns": 109_772_000, "outer_max_ns": 32_116_000,
                   "nmi_count": 5, "nmi_total_ns": 10_658_000, "smi_count": null}),
            9,
        );
        let t = summary(&d);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "method: the kernel's hwlat tracer (window 1s, width 950ms, threshold 10us, round-robin)"
        );
        assert!(lines[1].starts_with("CPU   samples   max"));
        let row: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(
            row,
            [
                "1",
                "9",
                "109.772ms",
                "109.772ms",
                "109.772ms",
                "32.116ms",
                "5",
                "10.658ms",
                "-"
            ]
        );
        assert_eq!(
            lines[3],
            "tracefs: given back as it was (2 files read before and after)"
        );
        assert_eq!(
            lines[4],
            "SMIs not counted: AuthenticAMD CPU: MSR_SMI_COUNT (0x34) is Intel's"
        );
    }

    #[test]
    fn how_tracefs_was_given_back() {
        let line = |r: serde_json::Value| {
            let d = doc(
                "tracer",
                tracer_plan(r),
                json!({"cpu": 1, "smi_count": 3, "nmi_total_ns": null}),
                0,
            );
            let t = summary(&d);
            let row: Vec<&str> = t.lines().nth(2).unwrap().split_whitespace().collect();
            assert_eq!(row[2..4], ["-", "-"], "no sample: no max, no p99");
            assert_eq!(row[7..], ["-", "3"], "NMI time unknown, 3 SMIs");
            t.lines().nth(3).unwrap().to_string()
        };
        assert_eq!(
            line(json!({"differences": ["buffer_size_kb: 7 (expanded: 1408) -> 1410"], "kernel_expanded_buffer": true})),
            "tracefs: given back as it was, but for the kernel's one-way expansion of a ring buffer never used since boot (buffer_size_kb: 7 (expanded: 1408) -> 1410)"
        );
        assert_eq!(
            line(
                json!({"differences": ["tracing_on: 1 -> 0", "b"], "kernel_expanded_buffer": true})
            ),
            "tracefs: NOT as it was: tracing_on: 1 -> 0; b"
        );
        assert_eq!(
            line(json!({"differences": ["tracing_on: 1 -> 0"], "kernel_expanded_buffer": false})),
            "tracefs: NOT as it was: tracing_on: 1 -> 0"
        );
        assert_eq!(
            line(json!({"differences": [], "error": "tracing_on <- 1: EBUSY"})),
            "tracefs: NOT given back: tracing_on <- 1: EBUSY"
        );
    }

    #[test]
    fn the_user_space_table() {
        let mut d = doc(
            "user-space",
            json!({"session": {"why": "this kernel has no hwlat tracer", "smi": {"reason": null}}}),
            json!({"cpu": 1, "gaps": 5316, "smi_count": 0, "noise": {"max_gap_ns": 64_339_000}}),
            20,
        );
        d.warnings.push("measured from user space".into());
        let t = summary(&d);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "method: user space (this kernel has no hwlat tracer): interrupts were on, each figure is an upper bound on what the machine did"
        );
        let row: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(
            row,
            ["1", "5316", "20", "109.772ms", "109.772ms", "64.339ms", "0"]
        );
        assert_eq!(lines[3], "");
        assert_eq!(lines[4], "warning: measured from user space");
        assert!(!t.contains("SMIs not counted"));
    }
}
