//! `rtscope noise`'s summary, from the result document alone.

use rtscope_core::noise::throttle::{Budget, Evidence, Mechanism, Report};
use rtscope_core::result::{ResultDocument, Series};
use rtscope_core::units::format_ns;

use crate::output::printable;

fn num(v: &serde_json::Value, k: &str) -> f64 {
    v.get(k).and_then(|x| x.as_f64()).unwrap_or(0.0)
}

/// A series' throttling (its `throttling` attribute), if the loop had a
/// bandwidth limit to look for.
pub fn throttling(ser: &Series) -> Option<Report> {
    serde_json::from_value(ser.attributes.get("throttling")?.clone()).ok()
}

/// `1 gap`, `3 gaps`.
fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A typical length as shown (`~48.4ms`): to 0.1 ms from 1 ms on.
fn typical(ns: u64) -> u64 {
    if ns >= 1_000_000 {
        (ns + 50_000) / 100_000 * 100_000
    } else {
        ns
    }
}

/// `RT throttling: 3 gaps of ~48.7ms, 4.87% of the time (every 1s)`, one
/// line per limit whose throttling was found (each holds at least one
/// episode); none when nothing was.
pub fn throttling_lines(r: &Report) -> Vec<String> {
    r.found
        .iter()
        .map(|f| {
            let what = match f.budget.mechanism {
                Mechanism::RtRuntime => "RT throttling",
                Mechanism::FairServer => "RT throttling (fair server)",
            };
            let mean = format_ns(typical(f.mean_episode_ns));
            let count = if f.gaps == f.episodes {
                format!("{} of ~{mean}", plural(f.gaps, "gap", "gaps"))
            } else {
                format!(
                    "{} of ~{mean} in {} gaps",
                    plural(f.episodes, "stretch", "stretches"),
                    f.gaps
                )
            };
            let seen = match f.evidence {
                Evidence::Period => format!("every {}", format_ns(f.budget.period_ns)),
                Evidence::Length => format!(
                    "once: the run is too short to see it repeat every {}",
                    format_ns(f.budget.period_ns)
                ),
            };
            format!("{what}: {count}, {:.2}% of the time ({seen})", f.pct)
        })
        .collect()
}

/// What a limit is, in words: `sched_rt_runtime_us=950000 of 1000000` or
/// `the fair server, 50ms of every 1s`.
fn budget_text(b: &Budget) -> String {
    match b.mechanism {
        Mechanism::RtRuntime => format!(
            "sched_rt_runtime_us={} of {}",
            (b.period_ns - b.lost_ns) / 1000,
            b.period_ns / 1000
        ),
        Mechanism::FairServer => format!(
            "the fair server, {} of every {}{}",
            format_ns(b.lost_ns),
            format_ns(b.period_ns),
            if b.assumed {
                " by its defaults (its settings in /sys/kernel/debug/sched/fair_server are not readable)"
            } else {
                ""
            }
        ),
    }
}

/// The cause and the fix of the throttling found in a document, once for
/// every CPU: the limits found, and those that would look the same.
pub fn throttling_advice(doc: &ResultDocument) -> Vec<String> {
    let reports: Vec<Report> = doc.series.iter().filter_map(throttling).collect();
    let mut found: Vec<Budget> = Vec::new();
    for f in reports.iter().flat_map(|r| &r.found) {
        if !found.contains(&f.budget) {
            found.push(f.budget);
        }
    }
    if found.is_empty() {
        return Vec::new();
    }
    let mut lines = Vec::new();
    for b in &found {
        lines.push(format!(
            "cause: {} takes the CPU from a runnable real-time loop for {} of every {}",
            budget_text(b),
            format_ns(b.lost_ns),
            format_ns(b.period_ns)
        ));
        let mut alike: Vec<String> = reports
            .iter()
            .flat_map(|r| &r.budgets)
            .filter(|o| {
                o.mechanism != b.mechanism && (o.period_ns, o.lost_ns) == (b.period_ns, b.lost_ns)
            })
            .map(budget_text)
            .collect();
        alike.dedup();
        for a in alike {
            lines.push(format!("       ({a}, would look the same)"));
        }
    }
    lines.push(
        "that is the kernel's RT bandwidth limit, not OS noise: the figures above leave it out"
            .to_string(),
    );
    let mut fixes = Vec::new();
    if found.iter().any(|b| b.mechanism == Mechanism::RtRuntime) {
        fixes.push("sysctl -w kernel.sched_rt_runtime_us=-1");
    }
    if found.iter().any(|b| b.mechanism == Mechanism::FairServer) {
        fixes.push(
            "echo 0 > /sys/kernel/debug/sched/fair_server/cpuN/runtime (or no normal task on the CPU)",
        );
    }
    fixes.push("measure with --policy other as oslat does by default");
    lines.push(format!("fix: {}", fixes.join(", or ")));
    lines
}

/// Per CPU: loop cost, noise, availability, max gap, gaps/s; throttling on
/// its own lines; then the top sources and the worst gaps' causes when the
/// run was traced; then the warnings not in `already_shown` (printed when
/// the run started).
pub fn summary(doc: &ResultDocument, already_shown: &[String]) -> String {
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
    let throttled: Vec<String> = doc
        .series
        .iter()
        .filter_map(|ser| Some((ser, throttling(ser)?)))
        .flat_map(|(ser, r)| {
            throttling_lines(&r)
                .into_iter()
                .map(move |l| format!("{}: {l}\n", ser.label))
        })
        .collect();
    if !throttled.is_empty() {
        s.push('\n');
        throttled.iter().for_each(|l| s.push_str(l));
        for l in throttling_advice(doc) {
            s.push_str(&format!("  {l}\n"));
        }
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
    let warnings: Vec<&String> = doc
        .warnings
        .iter()
        .filter(|w| !already_shown.contains(w))
        .collect();
    if !warnings.is_empty() {
        s.push('\n');
        for w in warnings {
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
        let row = |m| summary(&doc(m), &[]).lines().nth(1).unwrap().to_string();
        assert!(
            row(serde_json::Value::Null).contains("1.169us/-"),
            "{}",
            row(serde_json::Value::Null)
        );
        assert!(row(serde_json::json!(58.25)).contains("1.169us/58.2ns"));
    }

    use rtscope_core::noise::throttle::{Episode, Found};

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    fn rt() -> Budget {
        Budget::rt(1_000_000, 950_000).unwrap()
    }

    fn fair(assumed: bool) -> Budget {
        Budget::fair_server(S, 50 * MS, assumed).unwrap()
    }

    /// `n` episodes of `gaps` gaps and `noise_ns` each, for `budget`.
    fn found(budget: Budget, evidence: Evidence, n: usize, gaps: u64, noise_ns: u64) -> Found {
        let e = Episode {
            start_ns: 0,
            end_ns: noise_ns,
            noise_ns,
            gaps,
        };
        Found {
            budget,
            evidence,
            episodes: vec![e; n],
        }
    }

    fn with_throttling(report: Report) -> ResultDocument {
        let mut d = doc(serde_json::json!(9.0));
        d.series[0]
            .attributes
            .insert("throttling".into(), serde_json::to_value(report).unwrap());
        d
    }

    #[test]
    fn throttling_lines_name_count_length_share_and_evidence() {
        let r = Report::new(
            &[rt(), fair(true)],
            &[found(rt(), Evidence::Period, 3, 1, 48_660_000)],
            3 * S,
        );
        assert_eq!(
            throttling_lines(&r),
            vec!["RT throttling: 3 gaps of ~48.7ms, 4.87% of the time (every 1s)"]
        );
        // One gap, seen once in a short run.
        let r = Report::new(
            &[rt()],
            &[found(rt(), Evidence::Length, 1, 1, 46_800_000)],
            2 * S,
        );
        assert_eq!(
            throttling_lines(&r),
            vec![
                "RT throttling: 1 gap of ~46.8ms, 2.34% of the time (once: the run is too short to see it repeat every 1s)"
            ]
        );
        // The fair server's slices: stretches of many gaps; the share is
        // each limit's own.
        let big = Budget::fair_server(2 * S, 200 * MS, false).unwrap();
        let r = Report::new(
            &[rt(), big],
            &[
                found(rt(), Evidence::Period, 2, 1, 50 * MS),
                found(big, Evidence::Period, 2, 20, 200 * MS),
            ],
            10 * S,
        );
        assert_eq!(
            throttling_lines(&r),
            vec![
                "RT throttling: 2 gaps of ~50ms, 1.00% of the time (every 1s)",
                "RT throttling (fair server): 2 stretches of ~200ms in 40 gaps, 4.00% of the time (every 2s)",
            ]
        );
        // One stretch; nothing found: no line.
        let r = Report::new(
            &[big],
            &[found(big, Evidence::Period, 1, 20, 200 * MS)],
            10 * S,
        );
        assert!(throttling_lines(&r)[0].contains(": 1 stretch of ~200ms in 20 gaps, 2.00%"));
        assert!(throttling_lines(&Report::new(&[rt()], &[], S)).is_empty());
    }

    #[test]
    fn typical_lengths_to_a_tenth_of_a_millisecond() {
        assert_eq!(typical(48_649_999), 48_600_000);
        assert_eq!(typical(48_650_000), 48_700_000);
        assert_eq!(typical(1_000_000), 1_000_000);
        assert_eq!(typical(999_999), 999_999);
        assert_eq!(typical(0), 0);
    }

    #[test]
    fn the_advice_names_the_limit_the_look_alikes_and_the_fix() {
        // This VM: RT throttling found, the fair server assumed and alike.
        let r = Report::new(
            &[rt(), fair(true)],
            &[found(rt(), Evidence::Period, 3, 1, 48 * MS)],
            3 * S,
        );
        assert_eq!(
            throttling_advice(&with_throttling(r)),
            vec![
                "cause: sched_rt_runtime_us=950000 of 1000000 takes the CPU from a runnable real-time loop for 50ms of every 1s",
                "       (the fair server, 50ms of every 1s by its defaults (its settings in /sys/kernel/debug/sched/fair_server are not readable), would look the same)",
                "that is the kernel's RT bandwidth limit, not OS noise: the figures above leave it out",
                "fix: sysctl -w kernel.sched_rt_runtime_us=-1, or measure with --policy other as oslat does by default",
            ]
        );
        // The fair server found (as read), RT throttling of another length: not alike.
        let rt2 = Budget::rt(1_000_000, 900_000).unwrap();
        let r = Report::new(
            &[rt2, fair(false)],
            &[found(fair(false), Evidence::Period, 3, 20, 50 * MS)],
            3 * S,
        );
        assert_eq!(
            throttling_advice(&with_throttling(r)),
            vec![
                "cause: the fair server, 50ms of every 1s takes the CPU from a runnable real-time loop for 50ms of every 1s",
                "that is the kernel's RT bandwidth limit, not OS noise: the figures above leave it out",
                "fix: echo 0 > /sys/kernel/debug/sched/fair_server/cpuN/runtime (or no normal task on the CPU), or measure with --policy other as oslat does by default",
            ]
        );
        // Nothing found, or nothing looked for: no advice.
        let none = Report::new(&[rt(), fair(true)], &[], 3 * S);
        assert!(throttling_advice(&with_throttling(none)).is_empty());
        assert!(throttling_advice(&doc(serde_json::json!(9.0))).is_empty());
    }

    #[test]
    fn the_advice_is_given_once_for_every_cpu() {
        let r = Report::new(
            &[rt(), fair(true)],
            &[found(rt(), Evidence::Period, 3, 1, 48 * MS)],
            3 * S,
        );
        let mut d = with_throttling(r);
        let mut second = d.series[0].clone();
        second.label = "cpu 0".into();
        d.series.push(second);
        let advice = throttling_advice(&d);
        assert_eq!(advice.len(), 4, "{advice:?}");
        let text = summary(&d, &[]);
        assert_eq!(text.matches("cause: ").count(), 1, "{text}");
        assert_eq!(text.matches(": RT throttling: 3 gaps").count(), 2, "{text}");
    }

    #[test]
    fn the_summary_shows_throttling_apart_and_warnings_once() {
        let r = Report::new(
            &[rt(), fair(true)],
            &[found(rt(), Evidence::Period, 3, 1, 48_660_000)],
            3 * S,
        );
        let mut d = with_throttling(r);
        d.warnings = vec!["shown at the start".into(), "found at the end".into()];
        let text = summary(&d, &["shown at the start".to_string()]);
        let lines: Vec<&str> = text.lines().collect();
        // The table first, then throttling on its own lines.
        assert!(lines[0].starts_with("CPU   loop min/mean"));
        assert_eq!(lines[2], "");
        assert_eq!(
            lines[3],
            "cpu 1: RT throttling: 3 gaps of ~48.7ms, 4.87% of the time (every 1s)"
        );
        assert!(lines[4].starts_with("  cause: sched_rt_runtime_us=950000"));
        assert!(lines[7].starts_with("  fix: sysctl"));
        // A warning printed when the run started is not printed again.
        assert!(!text.contains("shown at the start"), "{text}");
        assert!(text.contains("warning: found at the end"), "{text}");
        // With -q nothing was shown: every warning.
        let quiet = summary(&d, &[]);
        assert!(quiet.contains("warning: shown at the start"));
        // Nothing found: no throttling lines.
        let none = with_throttling(Report::new(&[rt()], &[], 3 * S));
        assert!(!summary(&none, &[]).contains("throttling"));
    }
}
