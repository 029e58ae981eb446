//! The per-CPU figures of an hwlat series pooled from repetitions
//! (`--repeat`): counts summed, maxima the largest, minima the smallest,
//! shares recomputed from the sums, so that no figure of one repetition
//! stands beside the pooled statistics.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::result::Series;

type Attrs = BTreeMap<String, Value>;

/// Counts summed over the repetitions (`null` where one lacks it).
const SUMMED: [&str; 7] = [
    "gaps",
    "gaps_unexplained",
    "smi_count",
    "nmi_count",
    "nmi_total_ns",
    "above_threshold",
    "samples",
];
/// The largest over the repetitions.
const LARGEST: [&str; 2] = ["inner_max_ns", "outer_max_ns"];

fn sum(values: &[Option<&Value>]) -> Value {
    values
        .iter()
        .map(|v| v.and_then(Value::as_u64))
        .sum::<Option<u64>>()
        .map_or(Value::Null, |s| json!(s))
}

fn pick(values: &[Option<&Value>], largest: bool) -> Value {
    let v: Option<Vec<u64>> = values.iter().map(|v| v.and_then(Value::as_u64)).collect();
    let v = v.unwrap_or_default();
    let m = if largest {
        v.into_iter().max()
    } else {
        v.into_iter().min()
    };
    m.map_or(Value::Null, |m| json!(m))
}

/// Pools `series.attributes` from `series.repetitions` (nothing to do for a
/// series without them). The user-space method's `noise` figures are pooled
/// alike; its `sources` (the kernel work each cause took) are summed by cause.
pub fn pool_attributes(series: &mut Series) {
    if series.repetitions.is_empty() {
        return;
    }
    let reps: Vec<&Attrs> = series.repetitions.iter().map(|r| &r.attributes).collect();
    let a = &mut series.attributes;
    for key in SUMMED {
        if a.contains_key(key) {
            let v: Vec<Option<&Value>> = reps.iter().map(|r| r.get(key)).collect();
            a.insert(key.into(), sum(&v));
        }
    }
    for key in LARGEST {
        if a.contains_key(key) {
            let v: Vec<Option<&Value>> = reps.iter().map(|r| r.get(key)).collect();
            a.insert(key.into(), pick(&v, true));
        }
    }
    let noises: Vec<Option<&Map<String, Value>>> = reps
        .iter()
        .map(|r| r.get("noise").and_then(Value::as_object))
        .collect();
    if let (Some(Value::Object(n)), Some(noises)) = (
        a.get_mut("noise"),
        noises.into_iter().collect::<Option<Vec<_>>>(),
    ) {
        pool_noise(n, &noises);
    }
}

fn pool_noise(n: &mut Map<String, Value>, reps: &[&Map<String, Value>]) {
    let get = |k: &str| reps.iter().map(|r| r.get(k)).collect::<Vec<_>>();
    for k in ["iterations", "gaps", "noise_ns", "duration_ns"] {
        if n.contains_key(k) {
            n.insert(k.into(), sum(&get(k)));
        }
    }
    if n.contains_key("max_gap_ns") {
        n.insert("max_gap_ns".into(), pick(&get("max_gap_ns"), true));
    }
    if n.contains_key("loop_min_ns") {
        n.insert("loop_min_ns".into(), pick(&get("loop_min_ns"), false));
    }
    if n.contains_key("available_pct") {
        let pct = match (
            n.get("noise_ns").and_then(Value::as_u64),
            n.get("duration_ns").and_then(Value::as_u64),
        ) {
            (Some(noise), Some(d)) if d > 0 => json!(100.0 * (1.0 - noise as f64 / d as f64)),
            _ => Value::Null,
        };
        n.insert("available_pct".into(), pct);
    }
    // Each repetition had its own thread.
    n.remove("tid");
    if n.contains_key("sources") {
        let mut by: Vec<(String, String, u64, u64, u64, u64)> = Vec::new();
        for r in reps {
            for s in r
                .get("sources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let name = s["name"].as_str().unwrap_or("").to_string();
                let kind = s["kind"].as_str().unwrap_or("").to_string();
                let f = |k: &str| s[k].as_u64().unwrap_or(0);
                match by.iter_mut().find(|e| e.0 == name && e.1 == kind) {
                    Some(e) => {
                        e.2 += f("total_ns");
                        e.3 += f("gaps");
                        e.4 += f("gaps_main");
                        e.5 = e.5.max(f("max_ns"));
                    }
                    None => by.push((
                        name,
                        kind,
                        f("total_ns"),
                        f("gaps"),
                        f("gaps_main"),
                        f("max_ns"),
                    )),
                }
            }
        }
        by.sort_by_key(|e| std::cmp::Reverse(e.2));
        n.insert(
            "sources".into(),
            Value::Array(
                by.into_iter()
                    .map(|(name, kind, total, gaps, main, max)| {
                        json!({"name": name, "kind": kind, "total_ns": total, "gaps": gaps,
                               "gaps_main": main, "max_ns": max})
                    })
                    .collect(),
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(attrs: Value) -> Series {
        Series {
            attributes: serde_json::from_value(attrs).unwrap(),
            ..Series::default()
        }
    }

    #[test]
    fn the_user_space_figures_are_those_of_every_repetition() {
        let rep = |gaps: u64, unexplained: u64, max: u64, noise: u64| {
            series(json!({"cpu": 1, "method": "user-space", "gaps": gaps,
                "gaps_unexplained": unexplained, "smi_count": null,
                "noise": {"iterations": 10, "gaps": gaps, "noise_ns": noise, "duration_ns": 1000,
                          "max_gap_ns": max, "loop_min_ns": max / 10, "available_pct": 0.0, "tid": 7,
                          "sources": [{"name": "irq 1", "kind": "irq", "total_ns": noise,
                                       "gaps": gaps, "gaps_main": 1, "max_ns": max}]}}))
        };
        let mut pooled = rep(5, 2, 40, 100);
        pooled.repetitions = vec![rep(5, 2, 40, 100), rep(7, 3, 90, 200), rep(1, 0, 10, 0)];
        pool_attributes(&mut pooled);
        let a = &pooled.attributes;
        assert_eq!(a["gaps"], 13);
        assert_eq!(a["gaps_unexplained"], 5);
        assert_eq!(
            a["smi_count"],
            Value::Null,
            "not counted in a repetition: unknown"
        );
        let n = &a["noise"];
        assert_eq!(
            (n["iterations"].as_u64(), n["gaps"].as_u64()),
            (Some(30), Some(13))
        );
        assert_eq!(
            (n["max_gap_ns"].as_u64(), n["loop_min_ns"].as_u64()),
            (Some(90), Some(1))
        );
        assert_eq!(n["available_pct"].as_f64(), Some(90.0));
        assert!(n.get("tid").is_none());
        assert_eq!(n["sources"][0]["total_ns"], 300);
        assert_eq!(n["sources"][0]["max_ns"], 90);
    }

    #[test]
    fn the_tracer_figures_are_those_of_every_repetition() {
        let rep = |samples: u64, inner: u64| {
            series(
                json!({"cpu": 0, "method": "tracer", "samples": samples, "inner_max_ns": inner,
                          "outer_max_ns": 5, "nmi_count": 1, "nmi_total_ns": 10,
                          "above_threshold": samples, "smi_count": 2}),
            )
        };
        let mut pooled = rep(3, 50);
        pooled.repetitions = vec![rep(3, 50), rep(4, 80)];
        pool_attributes(&mut pooled);
        let a = &pooled.attributes;
        assert_eq!(
            (a["samples"].as_u64(), a["above_threshold"].as_u64()),
            (Some(7), Some(7))
        );
        assert_eq!(
            (a["inner_max_ns"].as_u64(), a["smi_count"].as_u64()),
            (Some(80), Some(4))
        );
        assert_eq!(
            (a["nmi_count"].as_u64(), a["nmi_total_ns"].as_u64()),
            (Some(2), Some(20))
        );
    }

    #[test]
    fn a_single_run_is_left_alone() {
        let mut s = series(json!({"gaps": 3}));
        pool_attributes(&mut s);
        assert_eq!(s.attributes["gaps"], 3);
    }
}
