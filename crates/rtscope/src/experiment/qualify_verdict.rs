//! The verdict of `rtscope qualify` from its steps' documents, and how it
//! is written: text, JSON, JUnit and the report's top section.

use std::fmt::Write as _;
use std::time::SystemTime;

use serde_json::{json, Value};

use rtscope_core::result::ResultDocument;
use rtscope_core::trace::cause::{CauseTable, Diagnosis};
use rtscope_core::units::format_ns;

use super::{causes, hms, load_specs, Step};
use crate::cli::QualifyArgs;

/// One measured CPU's outcome.
#[derive(Debug, Clone)]
pub struct CpuVerdict {
    pub series: String,
    pub cpu: Option<u64>,
    pub max_ns: u64,
    pub count: u64,
    pub passed: bool,
    /// The gates that failed, as `max 3.9ms > 100us`.
    pub failed: Vec<String>,
}

/// The verdict.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// PASS, FAIL, or ERROR (the measurement did not run).
    pub overall: String,
    pub cpus: Vec<CpuVerdict>,
    /// `stopped during hwlat, after 12s of 10m`.
    pub stopped: Option<String>,
    /// The worst wake-up in one sentence.
    pub worst: Option<String>,
    pub diagnosis: Option<Diagnosis>,
    pub table: Option<CauseTable>,
    /// hwlat's worst gap, ns, and its method.
    pub hwlat: Option<(u64, String)>,
    /// `check` rows that warn or fail: `id: found`.
    pub check_warnings: Vec<String>,
    /// Loads that delivered less than asked.
    pub shortfalls: Vec<String>,
    /// Why the verdict is ERROR.
    pub error: Option<String>,
    pub started: SystemTime,
}

fn step<'a>(steps: &'a [Step], name: &str) -> Option<&'a Step> {
    steps.iter().find(|s| s.name == name)
}

impl Verdict {
    /// The verdict of `steps`; `stopped_in`: the step a stop came in.
    pub fn of(
        a: &QualifyArgs,
        steps: &[Step],
        stopped_in: Option<&str>,
        started: SystemTime,
    ) -> Verdict {
        let mut v = Verdict {
            overall: "ERROR".into(),
            cpus: Vec::new(),
            stopped: None,
            worst: None,
            diagnosis: None,
            table: None,
            hwlat: None,
            check_warnings: Vec::new(),
            shortfalls: Vec::new(),
            error: None,
            started,
        };
        if let Some(c) = step(steps, "check").and_then(|s| s.doc.as_ref()) {
            for r in c["checks"].as_array().into_iter().flatten() {
                if r["status"] == "warn" || r["status"] == "fail" {
                    v.check_warnings.push(format!(
                        "{} ({}): {}",
                        r["id"].as_str().unwrap_or("?"),
                        r["status"].as_str().unwrap_or("?"),
                        r["found"].as_str().unwrap_or("")
                    ));
                }
            }
        }
        if let Some(h) = step(steps, "hwlat").and_then(|s| s.doc.as_ref()) {
            let series = h["series"].as_array().cloned().unwrap_or_default();
            let max = series
                .iter()
                .filter_map(|s| s["stats"]["max_ns"].as_u64())
                .max();
            let method = series
                .first()
                .and_then(|s| s["attributes"]["method"].as_str())
                .unwrap_or("?")
                .to_string();
            v.hwlat = max.map(|m| (m, method));
        }
        let measured = step(steps, "cyclic").and_then(|s| s.doc.as_ref().map(|d| (s, d)));
        let Some((s, d)) = measured else {
            v.error = Some(match step(steps, "cyclic") {
                Some(Step { code: Some(c), .. }) => {
                    format!("the measurement could not run (exit code {c})")
                }
                _ => "the measurement did not run".into(),
            });
            v.stopped = stopped_in.map(|n| format!("stopped during {n}, before the measurement"));
            return v;
        };
        let gates = d["gates"]["checks"].as_array().cloned().unwrap_or_default();
        for sr in d["series"].as_array().into_iter().flatten() {
            let label = sr["label"].as_str().unwrap_or("?").to_string();
            // The measuring threads only (not `all`, nor the trace's stages).
            if sr["attributes"]["cpus"].is_null() || label == "all" {
                continue;
            }
            let failed: Vec<String> = gates
                .iter()
                .filter(|g| g["series"] == label.as_str() && g["failed"] == true)
                .map(|g| {
                    format!(
                        "{} {} (gate {})",
                        g["statistic"].as_str().unwrap_or("?"),
                        gate_value(g),
                        g["gate"].as_str().unwrap_or("?")
                    )
                })
                .collect();
            v.cpus.push(CpuVerdict {
                cpu: sr["attributes"]["cpus"][0].as_u64(),
                max_ns: sr["stats"]["max_ns"].as_u64().unwrap_or(0),
                count: sr["stats"]["count"].as_u64().unwrap_or(0),
                passed: failed.is_empty(),
                failed,
                series: label,
            });
        }
        let all_failed = gates
            .iter()
            .any(|g| g["series"] == "all" && g["failed"] == true);
        let hwlat_over = matches!((v.hwlat.as_ref(), a.max), (Some((h, _)), Some(m)) if *h > m);
        v.overall = if v.cpus.iter().all(|c| c.passed) && !all_failed && !hwlat_over {
            "PASS".into()
        } else {
            "FAIL".into()
        };
        if v.cpus.is_empty() {
            v.overall = "ERROR".into();
            v.error = Some("the measurement recorded no series".into());
        }
        // Stopped before its first wake-up: nothing was measured, which is
        // no FAIL (its gates fail on "max 0ns") but no verdict at all.
        if stopped_in.is_some() && !v.cpus.is_empty() && v.cpus.iter().all(|c| c.count == 0) {
            v.overall = "ERROR".into();
            v.error = Some("the measurement was stopped before its first wake-up".into());
            v.cpus.clear();
            v.stopped = stopped_in.map(|n| format!("stopped during {n}, before the measurement"));
            return v;
        }
        if let Some(n) = stopped_in {
            let ran = d["duration_ns"].as_u64().unwrap_or(0);
            v.stopped = Some(format!(
                "stopped during {n}, after {} of {} measured",
                hms(ran as f64 / 1e9),
                hms(a.duration as f64 / 1e9)
            ));
        }
        let _ = s;
        for l in d["loads"].as_array().into_iter().flatten() {
            if l["fell_short"] == true {
                v.shortfalls.push(format!(
                    "{}: {:.0} % of one CPU on average (asked {} %)",
                    l["spec"].as_str().unwrap_or("?"),
                    l["achieved_cpu_percent_mean"].as_f64().unwrap_or(0.0),
                    l["level"]
                        .as_u64()
                        .map(|x| x.to_string())
                        .unwrap_or("-".into())
                ));
            }
        }
        let (diag, table) = causes(d);
        if let Some(w) = v.cpus.iter().max_by_key(|c| c.max_ns) {
            let on = w.cpu.map(|c| format!(" on CPU {c}")).unwrap_or_default();
            let why = match &diag {
                Some(dg) => format!(": {} ({})", dg.cause.label(), dg.evidence),
                None => match d["trace"]["worst"].as_array().and_then(|x| x.first()) {
                    Some(t) => format!(": {}", stages_sentence(t)),
                    None if a.max.is_none() => ": not traced (no --max)".into(),
                    None => no_trace_why(d, w.max_ns, a.max),
                },
            };
            v.worst = Some(format!(
                "worst wake-up {}{on} ({}){why}",
                format_ns(w.max_ns),
                w.series
            ));
        }
        v.diagnosis = diag;
        v.table = table;
        v
    }

    /// The JSON document.
    pub fn json(&self, a: &QualifyArgs, steps: &[Step]) -> Value {
        let doc = |n: &str| {
            let d = step(steps, n)
                .and_then(|s| s.doc.clone())
                .unwrap_or(Value::Null);
            if !a.redact || n == "check" {
                return d;
            }
            // The kernel command line and the like, as `report --redact` does.
            let mut d = match serde_json::from_value::<ResultDocument>(d.clone()) {
                Ok(r) => serde_json::to_value(crate::report::redact::document(&r)).unwrap_or(d),
                Err(_) => d,
            };
            // The machine's fields, whatever the typed pass could read.
            let sys = &mut d["system"];
            if sys.is_object() {
                sys["hostname"] = json!("(host)");
                sys["cmdline"] = json!(crate::report::redact::REDACTED);
            }
            d
        };
        let measure = doc("cyclic");
        json!({
            "schema": "rtscope-qualify/1",
            "tool": {"name": "rtscope", "version": env!("CARGO_PKG_VERSION")},
            "command_line": std::env::args().collect::<Vec<_>>(),
            "started_at": humantime(self.started),
            "state": "done",
            "plan": {
                "max_ns": a.max,
                "fail_if": a.fail_if,
                "duration_ns": a.duration,
                "cpus": a.cpus,
                "loads": load_specs(&a.load),
                "hwlat_duration_ns": if a.no_hwlat { None } else { Some(a.hwlat_duration) },
                "trace_irqs_off": a.trace_irqs_off,
                "steps": steps.iter().map(|s| json!({
                    "name": s.name,
                    "exit_code": s.code,
                    "seconds": s.secs,
                    "ran": s.doc.is_some(),
                })).collect::<Vec<_>>(),
            },
            "machine": measure.get("system").cloned().unwrap_or(Value::Null),
            "verdict": {
                "overall": self.overall,
                "stopped": self.stopped,
                "error": self.error,
                "worst": self.worst,
                "diagnosis": self.diagnosis,
                "causes": self.table,
                "cpus": self.cpus.iter().map(|c| json!({
                    "series": c.series, "cpu": c.cpu, "max_ns": c.max_ns, "count": c.count,
                    "passed": c.passed, "failed": c.failed,
                })).collect::<Vec<_>>(),
                "hwlat_max_ns": self.hwlat.as_ref().map(|h| h.0),
                "hwlat_method": self.hwlat.as_ref().map(|h| h.1.clone()),
                "check_warnings": self.check_warnings,
                "load_shortfalls": self.shortfalls,
            },
            "check": doc("check"),
            "hwlat": doc("hwlat"),
            "measurement": measure,
        })
    }

    /// The text output: the verdict, the worst wake-up, the cause table,
    /// then everything else.
    pub fn text(&self, steps: &[Step]) -> String {
        let mut t = String::new();
        let _ = writeln!(t, "qualify: {}", self.overall);
        if let Some(s) = &self.stopped {
            let _ = writeln!(t, "  ({s})");
        }
        if let Some(e) = &self.error {
            let _ = writeln!(t, "  {e}");
        }
        if let Some(w) = &self.worst {
            let _ = writeln!(t, "{w}");
        }
        match &self.table {
            Some(tb) => {
                if let Some(s) = tb.sentence() {
                    let _ = writeln!(t, "{s}");
                }
                let _ = writeln!(
                    t,
                    "causes of the wake-ups above {}:",
                    format_ns(tb.threshold_ns)
                );
                let _ = writeln!(
                    t,
                    "  {:>5} {:>5}  {:>9}  cause; remedy",
                    "count", "share", "worst"
                );
                for r in &tb.rows {
                    let _ = writeln!(
                        t,
                        "  {:>5} {:>4.0}%  {:>9}  {}; {}",
                        r.count,
                        r.share * 100.0,
                        format_ns(r.worst_ns.max(0) as u64),
                        r.label,
                        r.remedy
                    );
                }
            }
            None if self.cpus.is_empty() => {}
            None => {
                let _ = writeln!(t, "causes: none diagnosed");
            }
        }
        if !self.cpus.is_empty() {
            let _ = writeln!(t, "per CPU:");
        }
        for c in &self.cpus {
            let _ = writeln!(
                t,
                "  {:<10} {}  max {:>9}  {} wake-ups{}",
                c.series,
                if c.passed { "PASS" } else { "FAIL" },
                format_ns(c.max_ns),
                c.count,
                if c.failed.is_empty() {
                    String::new()
                } else {
                    format!("  ({})", c.failed.join("; "))
                }
            );
        }
        if let Some((m, method)) = &self.hwlat {
            let _ = writeln!(t, "hwlat ({method}): max {}", format_ns(*m));
        }
        if !self.shortfalls.is_empty() {
            let _ = writeln!(t, "load shortfalls:");
            for s in &self.shortfalls {
                let _ = writeln!(t, "  {s}");
            }
        }
        if !self.check_warnings.is_empty() {
            let _ = writeln!(t, "check warnings ({}):", self.check_warnings.len());
            for w in &self.check_warnings {
                let _ = writeln!(t, "  {w}");
            }
        }
        if let Some(s) = step(steps, "cyclic").filter(|s| !s.out.trim().is_empty()) {
            let _ = writeln!(t, "\nmeasurement:\n{}", s.out.trim_end());
        }
        t.trim_end().to_string()
    }

    /// JUnit: one test case per step and measured CPU.
    pub fn junit(&self) -> String {
        let mut cases = Vec::new();
        cases.push(case("check", None, &self.check_warnings.join("\n")));
        if let Some((m, method)) = &self.hwlat {
            cases.push(case(
                &format!("hwlat ({method})"),
                None,
                &format!("max {}", format_ns(*m)),
            ));
        }
        for c in &self.cpus {
            let fail = (!c.passed).then(|| c.failed.join("; "));
            cases.push(case(
                &c.series,
                fail.as_deref(),
                &format!("max {}", format_ns(c.max_ns)),
            ));
        }
        if let Some(e) = &self.error {
            cases.push(case("measurement", Some(e), ""));
        }
        let failures = cases.iter().filter(|c| c.contains("<failure")).count();
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite name=\"rtscope qualify\" tests=\"{}\" failures=\"{failures}\">\n{}</testsuite>\n</testsuites>\n",
            cases.len(),
            cases.concat()
        )
    }

    /// The report's top section.
    pub fn html(&self) -> String {
        let mut h = format!(
            "<section id=\"qualify\"><h1>qualify: {}</h1>\n",
            esc(&self.overall)
        );
        for p in [&self.stopped, &self.error, &self.worst]
            .into_iter()
            .flatten()
        {
            let _ = writeln!(h, "<p>{}</p>", esc(p));
        }
        if let Some(tb) = &self.table {
            if let Some(s) = tb.sentence() {
                let _ = writeln!(h, "<p>{}</p>", esc(&s));
            }
            h.push_str("<table><tr><th>count</th><th>share</th><th>worst</th><th>cause</th><th>remedy</th></tr>\n");
            for r in &tb.rows {
                let _ = writeln!(
                    h,
                    "<tr><td>{}</td><td>{:.0} %</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    r.count,
                    r.share * 100.0,
                    format_ns(r.worst_ns.max(0) as u64),
                    esc(&r.label),
                    esc(&r.remedy)
                );
            }
            h.push_str("</table>\n");
        }
        h.push_str(
            "<table><tr><th>series</th><th>verdict</th><th>max</th><th>failed gates</th></tr>\n",
        );
        for c in &self.cpus {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&c.series),
                if c.passed { "PASS" } else { "FAIL" },
                format_ns(c.max_ns),
                esc(&c.failed.join("; "))
            );
        }
        h.push_str("</table>\n");
        if !self.check_warnings.is_empty() {
            h.push_str("<p>check warnings:</p><ul>\n");
            for w in &self.check_warnings {
                let _ = writeln!(h, "<li>{}</li>", esc(w));
            }
            h.push_str("</ul>\n");
        }
        h.push_str("</section>\n");
        h
    }
}

/// The largest kernel stage of an untraced-cause outlier, in one sentence.
fn stages_sentence(t: &Value) -> String {
    let stages = [
        ("the timer interrupt came late", t["timer_ns"].as_i64()),
        ("the wake-up after the interrupt", t["wakeup_ns"].as_i64()),
        ("waiting to be switched in", t["sched_ns"].as_i64()),
        ("the return to user space", t["return_ns"].as_i64()),
    ];
    let (what, ns) = stages
        .iter()
        .filter_map(|(w, n)| n.map(|n| (*w, n)))
        .max_by_key(|(_, n)| *n)
        .unwrap_or(("no stage recorded", 0));
    let from = t["switched_from"]
        .as_str()
        .map(|s| format!(", switched in from {s}"))
        .unwrap_or_default();
    format!(
        "most of it {what} ({}){from}; no cause named",
        format_ns(ns.max(0) as u64)
    )
}

fn gate_value(g: &Value) -> String {
    let v = g["value"].as_f64().unwrap_or(0.0);
    match g["unit"].as_str() {
        Some("ns") => format!(
            "{} {} {}",
            format_ns(v as u64),
            g["op"].as_str().unwrap_or("?"),
            format_ns(g["limit"].as_f64().unwrap_or(0.0) as u64)
        ),
        _ => format!("{v} {} {}", g["op"].as_str().unwrap_or("?"), g["limit"]),
    }
}

fn case(name: &str, failure: Option<&str>, out: &str) -> String {
    let f = failure
        .map(|m| format!("<failure message=\"{}\"/>", esc(m)))
        .unwrap_or_default();
    format!(
        "<testcase classname=\"qualify\" name=\"{}\">{f}<system-out>{}</system-out></testcase>\n",
        esc(name),
        esc(out)
    )
}

use crate::report::esc;

fn humantime(t: SystemTime) -> String {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    format!("{}", d.as_secs())
}

/// `text` with the machine's names left out under `--redact`.
pub fn redact_text(a: &QualifyArgs, j: &Value, text: &str) -> String {
    if !a.redact {
        return text.to_string();
    }
    let mut r = crate::report::redact::Redactor::default();
    for k in ["measurement", "hwlat"] {
        if let Ok(d) = serde_json::from_value::<ResultDocument>(j[k].clone()) {
            r.learn(&d);
        }
    }
    r.text(text)
}
/// Why the worst wake-up has no trace, from the measurement's trace
/// report: tracing not possible, the trace lost its events, the wake-up
/// not above the deadline, or not among the samples split.
fn no_trace_why(d: &Value, worst_ns: u64, max: Option<u64>) -> String {
    let t = &d["trace"];
    if t.is_null() {
        return ": no trace of it (tracing was not possible here)".into();
    }
    let n = |k: &str| t[k].as_u64().unwrap_or(0);
    if max.is_some_and(|m| worst_ns < m) {
        return ": no trace of it (not above the deadline)".into();
    }
    if n("lost_events") > 0 || n("overruns") > 0 {
        return format!(
            ": no trace of it: the trace lost events ({} lost, {} overrun; {} of {} samples could not be split)",
            n("lost_events"),
            n("overruns"),
            n("samples").saturating_sub(n("joined")),
            n("samples")
        );
    }
    format!(
        ": no trace of it ({} of {} samples could not be split)",
        n("samples").saturating_sub(n("joined")),
        n("samples")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A stop in the cyclic step before its first wake-up: ERROR (nothing
    /// was measured), not FAIL on "max 0ns > 1s".
    #[test]
    fn a_stop_before_the_first_wake_up_is_an_error() {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from(["rtscope", "qualify", "--max", "1s"]).unwrap();
        let crate::cli::Command::Qualify(a) = cli.command else {
            panic!("not qualify");
        };
        let doc = json!({
            "duration_ns": 289_000_000u64,
            "series": [
                {"label": "thread 0", "attributes": {"cpus": [1]}, "stats": {"count": 0, "max_ns": 0}},
                {"label": "all", "attributes": {}, "stats": {"count": 0, "max_ns": 0}}
            ],
            "gates": {"checks": [{"series": "thread 0", "failed": true, "statistic": "max", "gate": "max>1s"}]}
        });
        let steps = [crate::experiment::qualify::Step {
            name: "cyclic",
            code: Some(3),
            doc: Some(doc),
            secs: 0.3,
            out: String::new(),
        }];
        let v = Verdict::of(&a, &steps, Some("cyclic"), std::time::SystemTime::now());
        assert_eq!(v.overall, "ERROR");
        assert_eq!(
            v.stopped.as_deref(),
            Some("stopped during cyclic, before the measurement")
        );
        assert!(v.cpus.is_empty());
    }

    #[test]
    fn the_worst_wake_ups_missing_trace_is_explained() {
        let lost =
            json!({"trace": {"lost_events": 6312683, "overruns": 0, "samples": 4000, "joined": 0}});
        let why = no_trace_why(&lost, 335_456, Some(10_000));
        assert_eq!(
            why,
            ": no trace of it: the trace lost events (6312683 lost, 0 overrun; 4000 of 4000 samples could not be split)"
        );
        assert_eq!(
            no_trace_why(&lost, 5_000, Some(10_000)),
            ": no trace of it (not above the deadline)"
        );
        assert!(no_trace_why(&json!({}), 1, Some(0)).contains("tracing was not possible"));
        let some = json!({"trace": {"samples": 10, "joined": 7}});
        assert!(no_trace_why(&some, 20, Some(10)).contains("3 of 10 samples could not be split"));
    }
}
