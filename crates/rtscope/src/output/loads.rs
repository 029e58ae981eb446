//! The loads table: what each background load achieved, from a result
//! document's `loads` section (so it works on files read back, too).

use rtscope_core::result::LoadReport;

use super::summary::render;

/// `12345` -> `12.3k`, for counters and rates.
pub use rtscope_core::units::format_si as si;

/// One row per load: spec, instances, CPUs, level, achieved CPU % (mean and
/// per instance), counters with their rate per second. Empty if no load ran.
pub fn table(loads: &[LoadReport]) -> String {
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
        let life = l.lifetime_s.max(1e-9);
        let counters = l
            .counters
            .iter()
            .map(|(k, &v)| {
                let n = v as f64;
                format!("{k} {} ({}/s)", si(n), si(n / life))
            })
            .collect::<Vec<_>>()
            .join(", ");
        let per: Vec<String> = l
            .achieved_cpu_percent
            .iter()
            .map(|x| format!("{x:.1}"))
            .collect();
        rows.push(vec![
            super::printable(&l.spec).into_owned(),
            l.instances.to_string(),
            rtscope_core::units::format_cpu_list(&l.cpus),
            l.level.map_or("-".into(), |x| x.to_string()),
            format!("{:.1}", l.achieved_cpu_percent_mean),
            per.join(" "),
            counters,
        ]);
    }
    let mut out = format!(
        "\nloads (CPU share over {:.1} s, counters over {:.1} s):\n",
        loads[0].window_s, loads[0].lifetime_s
    );
    out.push_str(&render(&rows));
    for l in loads {
        if let Some(sc) = &l.schedule {
            out.push_str(&format!(
                "{}: on {} times (for {} every {}), {:.1} s of {:.1} s; its CPU share is over the on-time\n",
                super::printable(&l.spec),
                sc.on_count,
                rtscope_core::units::format_ns(sc.for_ns),
                rtscope_core::units::format_ns(sc.every_ns),
                sc.on_s,
                l.window_s
            ));
        }
    }
    for l in loads {
        for w in shortfall(l) {
            out.push_str(&format!("WARNING: {w}\n"));
        }
    }
    out
}

/// Says when a load did not deliver what was asked: an instance failed, or
/// it fell short of its level or rate by more than the tolerance
/// ([`crate::load::shortfall::of`]).
pub fn shortfall(l: &LoadReport) -> Vec<String> {
    let mut w = Vec::new();
    if !l.errors.is_empty() {
        w.push(format!("load {} failed: {}", l.spec, l.errors.join("; ")));
    }
    w.extend(crate::load::shortfall::of(l));
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_load() {
        let l: LoadReport = serde_json::from_value(serde_json::json!({
            "spec": "cpu:50", "instances": 2, "cpus": [0, 1], "level": 50,
            "window_s": 5.0, "lifetime_s": 5.2,
            "achieved_cpu_percent": [49.8, 50.2], "achieved_cpu_percent_mean": 50.0,
            "counters": {"ops": 52000}
        }))
        .unwrap();
        let t = table(&[l]);
        assert!(t.contains("cpu:50"), "{t}");
        assert!(t.contains("49.8 50.2"), "{t}");
        assert!(t.contains("ops 52.0k (10.0k/s)"), "{t}");
        assert_eq!(table(&[]), "");
        assert_eq!(si(1_500_000.0), "1.5M");
        assert_eq!(si(12.0), "12");
        assert!(!t.contains("WARNING"), "{t}");
        assert!(!t.contains("on-time"), "{t}");
    }

    #[test]
    fn says_when_a_scheduled_load_was_on() {
        let l: LoadReport = serde_json::from_value(serde_json::json!({
            "spec": "cpu:100,every=1s,for=300ms", "instances": 1, "cpus": [0], "level": 100,
            "window_s": 3.0, "lifetime_s": 3.2,
            "achieved_cpu_percent": [97.0], "achieved_cpu_percent_mean": 97.0,
            "counters": {"ops": 1000},
            "schedule": {"every_ns": 1_000_000_000u64, "for_ns": 300_000_000u64, "start_ns": 0,
                         "on_intervals_ns": [[0, 300_000_000u64]], "on_count": 3, "on_s": 0.9}
        }))
        .unwrap();
        let t = table(&[l]);
        assert!(
            t.contains("cpu:100,every=1s,for=300ms: on 3 times (for 300ms every 1s), 0.9 s of 3.0 s; its CPU share is over the on-time"),
            "{t}"
        );
    }

    #[test]
    fn warns_when_a_load_falls_short() {
        let mut l = LoadReport {
            spec: "cpu:50".into(),
            level: Some(50),
            instances: 2,
            window_s: 2.0,
            achieved_cpu_percent: vec![42.0, 42.0],
            achieved_cpu_percent_mean: 42.0,
            ..Default::default()
        };
        // 8 points short over 2 s (more than 5 + 1): said under the table.
        let t = table(std::slice::from_ref(&l));
        assert!(
            t.contains("\nWARNING: load cpu:50 reached 42.0 % CPU of the 50 % asked (instance 0: 42.0 %), more than 5 points short"),
            "{t}"
        );
        l.achieved_cpu_percent = vec![44.0, 44.0];
        assert!(shortfall(&l).is_empty());
        assert!(!table(std::slice::from_ref(&l)).contains("WARNING"));
        // A failed instance is said, and a shortfall besides.
        l.errors.push("instance 1: exited 1".into());
        l.achieved_cpu_percent = vec![44.0, 0.0];
        let w = shortfall(&l);
        assert_eq!(w.len(), 2, "{w:?}");
        assert_eq!(w[0], "load cpu:50 failed: instance 1: exited 1");
        assert!(w[1].contains("(instance 1: 0.0 %)"), "{}", w[1]);
    }
}
