//! `rtscope noise`'s summary, from the result document alone.

use rtscope_core::result::ResultDocument;
use rtscope_core::units::format_ns;

use crate::output::printable;

fn num(v: &serde_json::Value, k: &str) -> f64 {
    v.get(k).and_then(|x| x.as_f64()).unwrap_or(0.0)
}

/// Per CPU: loop cost, noise, availability, max gap, gaps/s; then the top
/// sources and the worst gaps' causes when the run was traced.
pub fn summary(doc: &ResultDocument) -> String {
    let mut s = String::new();
    s.push_str(
        "CPU   loop min/mean   gaps     gaps/s    noise total  available  max gap   p99 gap\n",
    );
    for ser in &doc.series {
        let a = serde_json::to_value(&ser.attributes).unwrap_or_default();
        s.push_str(&format!(
            "{:<5} {:>6}/{:<7} {:>8} {:>9.1} {:>12} {:>9.4}% {:>8} {:>9}\n",
            num(&a, "cpu") as u64,
            format_ns(num(&a, "loop_min_ns") as u64),
            // null: every iteration was a gap, there is no quiet loop time.
            a.get("loop_mean_ns")
                .and_then(|v| v.as_f64())
                .map_or("-".to_string(), |m| format!("{m:.1}ns")),
            ser.stats.count,
            num(&a, "gaps_per_s"),
            format_ns(num(&a, "noise_ns") as u64),
            num(&a, "available_pct"),
            format_ns(ser.stats.max_ns.max(0) as u64),
            format_ns(ser.stats.p99_ns),
        ));
    }
    for ser in &doc.series {
        let Some(src) = ser.attributes.get("sources").and_then(|v| v.as_array()) else {
            continue;
        };
        s.push_str(&format!(
            "\n{}: top noise sources (time inside gaps)\n",
            ser.label
        ));
        let total: f64 = src.iter().map(|x| num(x, "total_ns")).sum::<f64>().max(1.0);
        for x in src.iter().take(8) {
            s.push_str(&format!(
                "  {:>10} {:>5.1}%  in {:>6} gaps (main cause of {:>6}), max {:>9}  {}\n",
                format_ns(num(x, "total_ns") as u64),
                100.0 * num(x, "total_ns") / total,
                num(x, "gaps") as u64,
                num(x, "gaps_main") as u64,
                format_ns(num(x, "max_ns") as u64),
                printable(x.get("name").and_then(|n| n.as_str()).unwrap_or("?"))
            ));
        }
        if let Some(w) = ser.attributes.get("worst_gaps").and_then(|v| v.as_array()) {
            s.push_str("  longest gaps:\n");
            for g in w.iter().take(5) {
                let causes: Vec<String> = g
                    .get("causes")
                    .and_then(|c| c.as_array())
                    .map(|c| {
                        c.iter()
                            .take(4)
                            .map(|x| {
                                format!(
                                    "{} {}",
                                    printable(
                                        x.get("name").and_then(|n| n.as_str()).unwrap_or("?")
                                    ),
                                    format_ns(num(x, "ns") as u64)
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                s.push_str(&format!(
                    "    {:>9}: {}\n",
                    format_ns(num(g, "gap_ns") as u64),
                    causes.join(", ")
                ));
            }
        }
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
    use rtscope_core::result::Series;

    fn doc(mean: serde_json::Value) -> ResultDocument {
        let mut s = Series {
            label: "cpu 1".into(),
            ..Default::default()
        };
        for (k, v) in [
            ("cpu", serde_json::json!(1)),
            ("loop_min_ns", serde_json::json!(1169)),
            ("loop_mean_ns", mean),
        ] {
            s.attributes.insert(k.into(), v);
        }
        ResultDocument::new(
            "noise",
            serde_json::json!({}),
            rtscope_core::system::SystemSnapshot::default(),
            vec![s],
        )
    }

    /// A loop whose every iteration was a gap has no mean loop time: "-",
    /// not "0.0ns" below a minimum of 1.169us (the kernel lab's x86 guests,
    /// whose clock is the HPET).
    #[test]
    fn no_quiet_iteration_has_no_mean() {
        let row = |m| summary(&doc(m)).lines().nth(1).unwrap().to_string();
        assert!(
            row(serde_json::Value::Null).contains("1.169us/-"),
            "{}",
            row(serde_json::Value::Null)
        );
        assert!(row(serde_json::json!(58.25)).contains("1.169us/58.2ns"));
    }
}
