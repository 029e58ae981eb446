//! The loads table: what each background load achieved, from a result
//! document's `loads` section (so it works on files read back, too).

use serde_json::Value;

use super::summary::render;

fn num(v: &Value, k: &str) -> f64 {
    v.get(k).and_then(Value::as_f64).unwrap_or(0.0)
}

/// `12345` -> `12.3k`, for counters and rates.
pub fn si(x: f64) -> String {
    let a = x.abs();
    if a >= 1e9 {
        format!("{:.1}G", x / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", x / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// One row per load: spec, instances, CPUs, level, achieved CPU % (mean and
/// per instance), counters with their rate per second. Empty if no load ran.
pub fn table(loads: &[Value]) -> String {
    if loads.is_empty() {
        return String::new();
    }
    let mut rows: Vec<Vec<String>> = vec![[
        "load",
        "inst",
        "cpus",
        "level %",
        "achieved %",
        "per instance %",
        "counters (total, per s)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()];
    for l in loads {
        let life = num(l, "lifetime_s").max(1e-9);
        let counters = l
            .get("counters")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        let n = v.as_f64().unwrap_or(0.0);
                        format!("{k} {} ({}/s)", si(n), si(n / life))
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        let per: Vec<String> = l
            .get("achieved_cpu_percent")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|x| format!("{:.1}", x.as_f64().unwrap_or(0.0)))
                    .collect()
            })
            .unwrap_or_default();
        let cpus: Vec<usize> = l
            .get("cpus")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|c| c.as_u64().map(|c| c as usize))
                    .collect()
            })
            .unwrap_or_default();
        rows.push(vec![
            l.get("spec")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string(),
            l.get("instances")
                .and_then(Value::as_u64)
                .unwrap_or(0)
                .to_string(),
            rtscope_core::units::format_cpu_list(&cpus),
            l.get("level")
                .and_then(Value::as_u64)
                .map_or("-".into(), |x| x.to_string()),
            format!("{:.1}", num(l, "achieved_cpu_percent_mean")),
            per.join(" "),
            counters,
        ]);
    }
    let mut out = format!(
        "\nloads (CPU share over {:.1} s, counters over {:.1} s):\n",
        num(&loads[0], "window_s"),
        num(&loads[0], "lifetime_s")
    );
    out.push_str(&render(&rows));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_load() {
        let l = serde_json::json!({
            "spec": "cpu:50", "instances": 2, "cpus": [0, 1], "level": 50,
            "window_s": 5.0, "lifetime_s": 5.2,
            "achieved_cpu_percent": [49.8, 50.2], "achieved_cpu_percent_mean": 50.0,
            "counters": {"ops": 52000}
        });
        let t = table(&[l]);
        assert!(t.contains("cpu:50"), "{t}");
        assert!(t.contains("49.8 50.2"), "{t}");
        assert!(t.contains("ops 52.0k (10.0k/s)"), "{t}");
        assert_eq!(table(&[]), "");
        assert_eq!(si(1_500_000.0), "1.5M");
        assert_eq!(si(12.0), "12");
    }
}
