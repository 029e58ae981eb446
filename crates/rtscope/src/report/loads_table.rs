//! The report's loads table: one row per background load with its name,
//! parameters, instances, CPUs, what was asked and what was achieved, and
//! the shortfall; the per-instance figures collapsed below it.

use std::fmt::Write;

use rtscope_core::result::LoadReport;
use rtscope_core::units::{format_cpu_list, format_ns};

use super::esc;
use crate::output::loads::si;

/// The spec's parameters: what follows the load's name (`cpu:50` → `50`,
/// `mem-churn,size=64M` → `size=64M`); `–` when there are none.
pub fn parameters(l: &LoadReport) -> String {
    let rest = l
        .spec
        .strip_prefix(l.name.as_str())
        .map(|r| r.trim_start_matches([':', ',']))
        .unwrap_or(&l.spec);
    if rest.is_empty() {
        super::cells::UNKNOWN.to_string()
    } else {
        rest.to_string()
    }
}

/// The packet rate a paced `net` load was asked for, per instance and second.
fn asked_rate(l: &LoadReport) -> Option<u64> {
    if l.name != "net" {
        return None;
    }
    crate::load::parse_spec(&l.spec)
        .ok()?
        .count("rate")
        .filter(|r| *r > 0)
}

/// (asked, achieved, shortfall) as the table shows them.
pub fn asked_achieved(l: &LoadReport) -> (String, String, String) {
    let per = |v: &[f64], unit: &str| {
        if v.len() > 1 {
            format!(
                " (per instance: {})",
                v.iter()
                    .map(|x| format!("{x:.1}{unit}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            String::new()
        }
    };
    let cpu = format!(
        "{:.1} % CPU{}",
        l.achieved_cpu_percent_mean,
        per(&l.achieved_cpu_percent, " %")
    );
    if let Some(level) = l.level {
        let low = l
            .achieved_cpu_percent
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let short = f64::from(level) - if low.is_finite() { low } else { 0.0 };
        let shortfall = if short > 0.0 {
            format!("{short:.1} points")
        } else {
            "none".to_string()
        };
        return (format!("{level} % CPU per instance"), cpu, shortfall);
    }
    if let Some(rate) = asked_rate(l) {
        let on_s = l.lifetime_s - l.schedule.as_ref().map_or(0.0, |s| l.window_s - s.on_s);
        let rates: Vec<f64> = l
            .instance_reports
            .iter()
            .map(|r| r.counters.get("packets_sent").copied().unwrap_or(0) as f64 / on_s.max(1e-9))
            .collect();
        // No instance reports: 0 (an empty f64 sum is -0.0, shown "-0").
        let mean = if rates.is_empty() {
            0.0
        } else {
            rates.iter().sum::<f64>() / rates.len() as f64
        };
        let low = rates.iter().copied().fold(f64::INFINITY, f64::min);
        let short = if low.is_finite() {
            100.0 - 100.0 * low / rate as f64
        } else {
            100.0
        };
        return (
            format!("{} packets/s per instance", si(rate as f64)),
            format!("{} packets/s, {cpu}", si(mean)),
            if short > 0.0 {
                format!("{short:.1} %")
            } else {
                "none".to_string()
            },
        );
    }
    (
        "as much as it can".to_string(),
        cpu,
        super::cells::UNKNOWN.to_string(),
    )
}

/// When a scheduled load was on, in a few words.
fn schedule(l: &LoadReport) -> String {
    match &l.schedule {
        Some(sc) => format!(
            "for {} every {} from {}: on {} times, {:.1} s of {:.1} s (CPU share over the on-time)",
            format_ns(sc.for_ns),
            format_ns(sc.every_ns),
            format_ns(sc.start_ns),
            sc.on_count,
            sc.on_s,
            l.window_s
        ),
        None => "all the time".to_string(),
    }
}

/// The loads that ran beside the measurement (nothing when none did).
pub fn table(loads: &[LoadReport]) -> String {
    if loads.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "<h3>Loads</h3>\n<p class=\"sub\">CPU shares over {:.1} s (the on-time of a scheduled load), work over {:.1} s.</p>\n\
         <div class=\"tw\"><table class=\"loads\">\n<tr><th class=\"l\">load</th><th class=\"l\">parameters</th><th>instances</th>\
         <th class=\"l\">CPUs</th><th class=\"l\">asked</th><th class=\"l\">achieved</th><th>shortfall</th>\
         <th class=\"l\">on</th><th class=\"l\">work</th></tr>\n",
        loads[0].window_s, loads[0].lifetime_s
    );
    for l in loads {
        let (asked, achieved, short) = asked_achieved(l);
        let life = l.lifetime_s.max(1e-9);
        let work = l
            .counters
            .iter()
            .map(|(k, &v)| format!("{k} {} ({}/s)", si(v as f64), si(v as f64 / life)))
            .collect::<Vec<_>>()
            .join(", ");
        let warnings = crate::output::loads::shortfall(l);
        let _ = writeln!(
            s,
            "<tr{}><td class=\"l\">{}</td><td class=\"l mono\">{}</td><td>{}</td><td class=\"l\">{}</td>\
             <td class=\"l\">{}</td><td class=\"l\">{}</td><td{}>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            if l.fell_short || !l.errors.is_empty() {
                " class=\"short\""
            } else {
                ""
            },
            esc(&l.name),
            esc(&parameters(l)),
            l.instances,
            esc(&format_cpu_list(&l.cpus)),
            esc(&asked),
            esc(&achieved),
            if warnings.is_empty() {
                String::new()
            } else {
                format!(" title=\"{}\"", esc(&warnings.join("; ")))
            },
            esc(&if l.fell_short {
                format!("{short}: fell short")
            } else if short.ends_with("points") || short.ends_with('%') {
                format!("{short}, within tolerance")
            } else {
                short
            }),
            esc(&schedule(l)),
            esc(&work),
        );
    }
    s.push_str("</table></div>\n");
    if loads.iter().any(|l| l.fell_short) {
        s.push_str("<p class=\"sub\">Highlighted: a load that fell short of what it was asked for (see the warnings): the run was not under the load it names.</p>\n");
    }
    for l in loads.iter().filter(|l| !l.errors.is_empty()) {
        let _ = writeln!(
            s,
            "<p class=\"sub\">{} failed: {}</p>",
            esc(&l.spec),
            esc(&l.errors.join("; "))
        );
    }
    let instances: usize = loads.iter().map(|l| l.instance_reports.len()).sum();
    if instances > 0 {
        let _ = writeln!(
            s,
            "<details><summary>Per instance ({instances})</summary>\n<div class=\"tw\"><table class=\"instances\">\n\
             <tr><th class=\"l\">load</th><th>instance</th><th class=\"l\">CPUs</th><th>CPU</th><th class=\"l\">work</th><th class=\"l\">exit</th></tr>"
        );
        for l in loads {
            for r in &l.instance_reports {
                let work = r
                    .counters
                    .iter()
                    .map(|(k, &v)| format!("{k} {}", si(v as f64)))
                    .collect::<Vec<_>>()
                    .join(", ");
                let _ = writeln!(
                    s,
                    "<tr><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td><td>{:.1} %</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
                    esc(&l.spec),
                    r.index,
                    esc(&format_cpu_list(&r.cpus)),
                    r.cpu_percent,
                    esc(&work),
                    esc(&r.exit)
                );
            }
        }
        s.push_str("</table></div>\n</details>\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(spec: &str, name: &str, level: Option<u8>, achieved: &[f64]) -> LoadReport {
        LoadReport {
            spec: spec.into(),
            name: name.into(),
            level,
            instances: achieved.len(),
            cpus: (0..achieved.len()).collect(),
            window_s: 3.0,
            lifetime_s: 3.2,
            achieved_cpu_percent: achieved.to_vec(),
            achieved_cpu_percent_mean: achieved.iter().sum::<f64>() / achieved.len() as f64,
            ..Default::default()
        }
    }

    #[test]
    fn parameters_follow_the_name() {
        assert_eq!(parameters(&load("cpu:50", "cpu", Some(50), &[50.0])), "50");
        assert_eq!(
            parameters(&load("mem-churn,size=64M", "mem-churn", None, &[99.0])),
            "size=64M"
        );
        assert_eq!(parameters(&load("irq", "irq", None, &[1.0])), "–");
    }

    #[test]
    fn asked_against_achieved() {
        let (a, b, c) = asked_achieved(&load("cpu:30", "cpu", Some(30), &[26.9, 25.6]));
        assert_eq!(a, "30 % CPU per instance");
        assert_eq!(b, "26.2 % CPU (per instance: 26.9 %, 25.6 %)");
        assert_eq!(c, "4.4 points", "the instance furthest below");
        let (_, b, c) = asked_achieved(&load("cpu:30", "cpu", Some(30), &[31.0]));
        assert_eq!((b.as_str(), c.as_str()), ("31.0 % CPU", "none"));
        let (a, _, c) = asked_achieved(&load("mem-churn", "mem-churn", None, &[99.0]));
        assert_eq!((a.as_str(), c.as_str()), ("as much as it can", "–"));
    }

    /// A paced net load: asked and achieved in packets/s, the shortfall in
    /// percent of the rate for the instance furthest below.
    #[test]
    fn a_net_load_in_packets() {
        let mut l = load("net,rate=1000", "net", None, &[5.0, 5.0]);
        l.lifetime_s = 2.0;
        l.instance_reports = [1800u64, 1000]
            .iter()
            .map(|n| rtscope_core::result::InstanceReport {
                counters: [("packets_sent".to_string(), *n)].into_iter().collect(),
                ..Default::default()
            })
            .collect();
        let (a, b, c) = asked_achieved(&l);
        assert_eq!(a, "1000 packets/s per instance");
        assert_eq!(b, "700 packets/s, 5.0 % CPU (per instance: 5.0 %, 5.0 %)");
        assert_eq!(c, "50.0 %");
        // On for 2 s of the 3 s window: the rate is over the 1 s of its 2 s life it was on.
        l.schedule = Some(rtscope_core::result::LoadSchedule {
            on_s: 2.0,
            on_count: 1,
            ..Default::default()
        });
        let (_, b, c) = asked_achieved(&l);
        assert_eq!(
            (b.as_str(), c.as_str()),
            (
                "1400 packets/s, 5.0 % CPU (per instance: 5.0 %, 5.0 %)",
                "none"
            )
        );
        assert!(
            schedule(&l).starts_with("for 0ns every 0ns from 0ns: on 1 times, 2.0 s of 3.0 s"),
            "{}",
            schedule(&l)
        );
        // Unlimited, or not net: not paced.
        let (a, _, _) = asked_achieved(&load("net,rate=unlimited", "net", None, &[5.0]));
        assert_eq!(a, "as much as it can");
        let (a, _, _) = asked_achieved(&load("cpu", "cpu", None, &[5.0]));
        assert_eq!(a, "as much as it can");
    }

    /// The table: one row per load (no JSON), a load that fell short
    /// highlighted and said to, per-instance figures collapsed.
    #[test]
    fn the_table_has_a_row_per_load() {
        let fine = load("cpu:30", "cpu", Some(30), &[30.0]);
        let mut short = load("cpu:50", "cpu", Some(50), &[12.0]);
        short.fell_short = true;
        short.instance_reports = vec![rtscope_core::result::InstanceReport {
            index: 0,
            cpus: vec![1],
            cpu_percent: 12.0,
            exit: "exited 0".into(),
            ..Default::default()
        }];
        let t = table(&[fine.clone(), short]);
        assert_eq!(t.matches("<tr class=\"short\">").count(), 1, "{t}");
        let row = t
            .lines()
            .find(|l| l.starts_with("<tr class=\"short\">"))
            .unwrap();
        assert!(row.contains(">38.0 points: fell short<"), "{row}");
        assert!(row.contains(" title=\"load cpu:50 reached"), "{row}");
        assert!(t.contains("Highlighted: a load that fell short"), "{t}");
        assert!(t.contains("<summary>Per instance (1)</summary>"), "{t}");
        assert!(!t.contains('{'), "no JSON: {t}");
        let t = table(&[fine]);
        assert!(!t.contains("short\""), "{t}");
        assert!(!t.contains("Highlighted"), "{t}");
        assert!(!t.contains("Per instance"), "{t}");
        assert!(t.contains("<td class=\"l\">all the time</td>"), "{t}");
        assert!(t.contains("<td>none</td>"), "{t}");
        let t = table(&[load("cpu:30", "cpu", Some(30), &[28.0])]);
        assert!(t.contains("<td>2.0 points, within tolerance</td>"), "{t}");
        assert_eq!(table(&[]), "");
    }

    // Tests written against the mutants cargo-mutants left (docs/testing.md).

    /// Nothing measured of a load: all of what it asked is short.
    #[test]
    fn a_load_without_figures_falls_short_by_all_it_asked() {
        let (_, _, c) = asked_achieved(&load("cpu:30", "cpu", Some(30), &[]));
        assert_eq!(c, "30.0 points");
        let mut l = load("net,rate=500", "net", None, &[]);
        l.achieved_cpu_percent_mean = 0.0;
        let (a, b, c) = asked_achieved(&l);
        assert_eq!(a, "500 packets/s per instance");
        // Not "-0 packets/s" (the sum of no rates is -0.0).
        assert_eq!(b, "0 packets/s, 0.0 % CPU");
        assert_eq!(c, "100.0 %");
    }

    #[test]
    fn rows_show_work_rates_errors_and_instances() {
        let mut l = load("cpu:30", "cpu", Some(30), &[29.5]);
        l.lifetime_s = 4.0;
        l.counters = [("ops".to_string(), 20_000u64)].into_iter().collect();
        l.errors = vec!["worker 0 exited 1".into(), "no CPU 7".into()];
        l.instance_reports = vec![rtscope_core::result::InstanceReport {
            index: 3,
            cpus: vec![2, 3],
            cpu_percent: 29.54,
            exit: "exited 1".into(),
            counters: [("ops".to_string(), 20_000u64)].into_iter().collect(),
            ..Default::default()
        }];
        let t = table(&[l]);
        assert!(
            t.starts_with("<h3>Loads</h3>\n<p class=\"sub\">CPU shares over 3.0 s (the on-time of a scheduled load), work over 4.0 s.</p>"),
            "{t}"
        );
        // A load with errors is highlighted like one that fell short, and
        // its errors are said below the table.
        let row = t
            .lines()
            .find(|l| l.starts_with("<tr class=\"short\">"))
            .unwrap_or_else(|| panic!("{t}"));
        assert!(
            row.contains("<td class=\"l\">ops 20.0k (5000/s)</td>"),
            "{row}"
        );
        assert!(
            row.contains(
                "<td title=\"load cpu:30 failed: worker 0 exited 1; no CPU 7\">0.5 points, within tolerance</td>"
            ),
            "{row}"
        );
        assert!(
            t.contains("<p class=\"sub\">cpu:30 failed: worker 0 exited 1; no CPU 7</p>"),
            "{t}"
        );
        assert!(!t.contains("Highlighted"), "{t}");
        assert!(
            t.contains("<tr><td class=\"l\">cpu:30</td><td>3</td><td class=\"l\">2-3</td><td>29.5 %</td><td class=\"l\">ops 20.0k</td><td class=\"l\">exited 1</td></tr>"),
            "{t}"
        );
    }

    #[test]
    fn a_net_shortfall_within_tolerance_says_so() {
        let mut l = load("net,rate=1000", "net", None, &[5.0]);
        l.lifetime_s = 2.0;
        l.instance_reports = vec![rtscope_core::result::InstanceReport {
            counters: [("packets_sent".to_string(), 1900u64)]
                .into_iter()
                .collect(),
            ..Default::default()
        }];
        let t = table(&[l]);
        assert!(t.contains("<td>5.0 %, within tolerance</td>"), "{t}");
    }
}
