//! `rtscope qualify`: is this machine good enough for a deadline, and if
//! not, why. The steps of the qualification guides, in their order, each
//! the existing command run as a child of this process (so that each keeps
//! its own stop handling, loads, tracing and results):
//!
//! 1. `check` (recorded; its warnings carried into the verdict);
//! 2. `hwlat` (unless `--no-hwlat`);
//! 3. `cyclic` on every CPU (or `--cpus`) under the load profile, with
//!    `--trace-outliers` at the deadline and the deadline as a gate.
//!
//! A stop (SIGINT, SIGTERM, SIGHUP) at any step is passed to the running
//! child, which keeps what it measured; the later steps are skipped and the
//! verdict is written for what ran, saying so.

use std::path::{Path, PathBuf};
use std::process::{Child, Command as Proc, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use rtscope_core::file::write_atomic;
use rtscope_core::trace::cause::{CauseTable, Diagnosis};
use rtscope_core::units::format_ns;

use crate::cli::QualifyArgs;
use crate::error::{EXIT_OK, EXIT_RUN, EXIT_THRESHOLD};
use crate::output::say;
use crate::signals::StopSignals;

#[path = "qualify_verdict.rs"]
mod verdict;
use verdict::Verdict;

/// The standard load profile, modelled on rteval's: its kernel compile
/// (CPU, memory and I/O) as `cpu`, `mem-churn` and `io`, its hackbench as
/// `messaging`.
pub const STANDARD_LOADS: [&str; 4] = [
    "cpu:50",
    "mem-churn:25,size=16M",
    "io,instances=1",
    "messaging,instances=1",
];

/// `--load net`: a paced loopback UDP flood.
pub const NET_LOAD: &str = "net,rate=20000,instances=1";

/// The load SPECs a `--load` list stands for.
pub fn load_specs(profile: &[String]) -> Vec<String> {
    if profile.is_empty() {
        return STANDARD_LOADS.iter().map(|s| s.to_string()).collect();
    }
    let mut out = Vec::new();
    for p in profile {
        match p.as_str() {
            "standard" => out.extend(STANDARD_LOADS.iter().map(|s| s.to_string())),
            "none" => {}
            "net" => out.push(NET_LOAD.into()),
            spec => out.push(spec.into()),
        }
    }
    out
}

/// One step's outcome.
#[derive(Debug, Clone, Default)]
pub struct Step {
    pub name: &'static str,
    /// The child's exit code (`None`: not run).
    pub code: Option<i32>,
    /// Its result document.
    pub doc: Option<Value>,
    /// Wall time, seconds.
    pub secs: f64,
    /// Its stdout (the step's own summary).
    pub out: String,
}

/// The command line a step runs (after `rtscope`).
fn step_args(a: &QualifyArgs, step: &str, dir: &Path) -> Vec<String> {
    let cpus = a.cpus.as_ref().map(|c| {
        c.iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(",")
    });
    let mut v: Vec<String> = vec![step.into()];
    let json = dir.join(format!("{step}.json"));
    match step {
        "check" => {
            v.extend(["-q".into(), "--json".into()]);
            v.push(json.display().to_string());
            if let Some(c) = &cpus {
                v.extend(["--cpus".into(), c.clone()]);
            }
        }
        "hwlat" => {
            v.extend(["-q".into(), "-D".into()]);
            v.push(format!("{}ns", a.hwlat_duration));
            v.push("--json".into());
            v.push(json.display().to_string());
            if let Some(c) = &cpus {
                v.extend(["--cpus".into(), c.clone()]);
            }
        }
        _ => {
            v.extend(["-D".into(), format!("{}ns", a.duration)]);
            if let Some(c) = &cpus {
                v.extend(["--cpus".into(), c.clone()]);
            }
            for l in load_specs(&a.load) {
                v.extend(["--load".into(), l]);
            }
            let mut gates: Vec<String> = Vec::new();
            if let Some(m) = a.max {
                v.extend(["--trace=auto".into(), "--trace-outliers".into()]);
                v.push(format!("{m}ns"));
                if a.trace_irqs_off {
                    v.push("--trace-irqs-off".into());
                }
                gates.push(format!("max>{}", limit(m)));
            }
            if let Some(g) = &a.fail_if {
                gates.push(g.clone());
            }
            v.extend(["--fail-if".into(), gates.join(",")]);
            v.extend(["--json".into(), json.display().to_string()]);
            if a.json.is_some() {
                let every = a.checkpoint.unwrap_or(600_000_000_000);
                v.extend(["--checkpoint".into(), format!("{every}ns")]);
            }
            v.extend([
                "--stream".into(),
                dir.join("stream.jsonl").display().to_string(),
            ]);
            v.extend(["--stream-every".into(), progress_every(a.duration)]);
            if a.live {
                v.push("--live".into());
            } else {
                v.push("-q".into());
            }
            if let Some(l) = &a.listen {
                v.extend(["--listen".into(), l.clone()]);
            }
        }
    }
    v
}

/// A deadline as a gate reads it: `100us` where that is exact, else in ns.
fn limit(ns: u64) -> String {
    let f = format_ns(ns);
    match rtscope_core::units::parse_duration_ns(&f, rtscope_core::units::Unit::Us) {
        Ok(v) if v == ns => f,
        _ => format!("{ns}ns"),
    }
}

/// How often the progress line is refreshed: about 1/20 of the run, 1 s to 1 min.
fn progress_every(duration_ns: u64) -> String {
    format!("{}s", (duration_ns / 20 / 1_000_000_000).clamp(1, 60))
}

/// Runs one step as a child, passing a stop on to it, calling `tick` about
/// every second while it runs.
fn run_step(
    a: &QualifyArgs,
    name: &'static str,
    dir: &Path,
    stop: &StopSignals,
    tick: &mut dyn FnMut(&Path),
) -> Result<Step> {
    let exe = std::env::current_exe().context("finding the rtscope executable")?;
    let out_path = dir.join(format!("{name}.out"));
    let out = std::fs::File::create(&out_path)?;
    let mut cmd = Proc::new(exe);
    cmd.args(step_args(a, name, dir))
        .stdin(Stdio::null())
        // A step stops when qualify dies, even of SIGKILL (main.rs).
        .env(crate::DIE_WITH_ENV, std::process::id().to_string());
    if a.live && name == "cyclic" {
        cmd.stdin(Stdio::inherit());
    } else {
        cmd.stdout(out);
    }
    let started = Instant::now();
    let mut child: Child = cmd
        .spawn()
        .with_context(|| format!("starting the {name} step"))?;
    let mut forwarded = false;
    let mut last_tick = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if stop.flag.load(Ordering::SeqCst) && !forwarded {
            // The same stop may also reach the child from the process
            // group: two within a second are one stop to it.
            let _ = rtscope_core::sys::kill(child.id() as i32, libc::SIGINT);
            forwarded = true;
        }
        if last_tick.elapsed() >= Duration::from_secs(1) {
            tick(dir);
            last_tick = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let doc = std::fs::read(dir.join(format!("{name}.json")))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    Ok(Step {
        name,
        code: status.code(),
        doc,
        secs: started.elapsed().as_secs_f64(),
        out: std::fs::read_to_string(&out_path)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.starts_with("result: "))
            .collect::<Vec<_>>()
            .join("\n"),
    })
}

/// The progress line from the latest streamed snapshot: elapsed, what is
/// left, the max per CPU and the snapshot intervals with an outlier.
pub fn progress_line(stream: &str, duration_ns: u64, max_ns: Option<u64>) -> Option<String> {
    let mut last: Option<Value> = None;
    let mut intervals_over = 0u64;
    for l in stream.lines() {
        let Ok(v) = serde_json::from_str::<Value>(l) else {
            continue;
        };
        if v["type"] != "snapshot" {
            continue;
        }
        if let (Some(m), Some(all)) = (max_ns, all_series(&v)) {
            if all["interval"]["max_ns"].as_u64().unwrap_or(0) > m {
                intervals_over += 1;
            }
        }
        last = Some(v);
    }
    let v = last?;
    let elapsed = v["elapsed_s"].as_f64()?;
    let left = (duration_ns as f64 / 1e9 - elapsed).max(0.0);
    let maxes: Vec<String> = v["series"]
        .as_array()?
        .iter()
        .filter(|s| s["label"] != "all")
        .map(|s| {
            format!(
                "{} {}",
                s["label"].as_str().unwrap_or("?"),
                format_ns(s["max_ns"].as_u64().unwrap_or(0))
            )
        })
        .collect();
    let outliers = match max_ns {
        Some(_) => format!(", outliers in {intervals_over} interval(s)"),
        None => String::new(),
    };
    Some(format!(
        "qualify: {} of {}, {} left; max: {}{outliers}",
        hms(elapsed),
        hms(duration_ns as f64 / 1e9),
        hms(left),
        maxes.join(", ")
    ))
}

fn all_series(v: &Value) -> Option<&Value> {
    v["series"].as_array()?.iter().find(|s| s["label"] == "all")
}

/// `1h02m03s`-style time.
pub fn hms(s: f64) -> String {
    // Under 10 s, to the tenth: a step stopped after 340 ms read "0s".
    if s < 9.95 {
        return format!("{:.1}s", s.max(0.0));
    }
    let t = s.round() as u64;
    let (h, m, s) = (t / 3600, t / 60 % 60, t % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, _) => format!("{m}m{s:02}s"),
        _ => format!("{h}h{m:02}m{s:02}s"),
    }
}

/// The worst wake-up's cause and the run's cause table, from the
/// measurement's trace (`None` where it was not traced or nothing was above
/// the threshold). The one place that reads causes.
pub fn causes(measure: &Value) -> (Option<Diagnosis>, Option<CauseTable>) {
    let trace = &measure["trace"];
    let table = serde_json::from_value::<CauseTable>(trace["causes"].clone()).ok();
    let worst = trace["worst"]
        .as_array()
        .and_then(|w| w.first())
        .and_then(|w| serde_json::from_value::<Diagnosis>(w["cause"].clone()).ok());
    (worst, table.filter(|t| t.outliers > 0))
}

/// Runs the qualification.
pub fn run(a: QualifyArgs) -> Result<i32> {
    for spec in load_specs(&a.load) {
        crate::load::parse_spec(&spec)
            .map_err(|e| crate::error::usage(format!("--load {spec}: {e}")))?;
    }
    let stop = StopSignals::install()?;
    let dir = step_dir()?;
    let started = SystemTime::now();
    let mut steps: Vec<Step> = Vec::new();
    let mut names: Vec<&'static str> = vec!["check"];
    if !a.no_hwlat {
        names.push("hwlat");
    }
    names.push("cyclic");
    let mut stopped_in: Option<&'static str> = None;
    let json_every = a.checkpoint.unwrap_or(600_000_000_000);
    let mut last_checkpoint = Instant::now();
    let mut seen = 0usize;
    for name in &names {
        if stop.flag.load(Ordering::SeqCst) {
            stopped_in.get_or_insert(name);
            steps.push(Step {
                name,
                ..Default::default()
            });
            continue;
        }
        if !a.quiet && !a.live {
            eprintln!("qualify: step {name}");
        }
        let mut tick = |d: &Path| {
            if *name != "cyclic" {
                return;
            }
            if !a.quiet && !a.live {
                print_progress(&a, d, &mut seen);
            }
            if a.json.is_some() && last_checkpoint.elapsed().as_nanos() as u64 >= json_every {
                let _ = checkpoint(&a, &steps, d, started);
                last_checkpoint = Instant::now();
            }
        };
        let s = run_step(&a, name, &dir, &stop, &mut tick)?;
        // What the quiet measurement said of an option asked for here.
        if !a.quiet && a.trace_irqs_off {
            let warnings = s.doc.as_ref().and_then(|d| d["warnings"].as_array());
            for w in warnings.into_iter().flatten().filter_map(|w| w.as_str()) {
                if w.starts_with("--trace-irqs-off") {
                    eprintln!("qualify: note: {w}");
                }
            }
        }
        if stop.flag.load(Ordering::SeqCst) {
            stopped_in.get_or_insert(name);
        }
        steps.push(s);
    }
    let v = Verdict::of(&a, &steps, stopped_in, started);
    let code = finish(&a, &v, &steps, &dir)?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(code)
}

/// Prints the progress line when a new snapshot came.
fn print_progress(a: &QualifyArgs, dir: &Path, seen: &mut usize) {
    if let Ok(s) = std::fs::read_to_string(dir.join("stream.jsonl")) {
        let n = s.lines().count();
        if n == *seen {
            return;
        }
        *seen = n;
        if let Some(l) = progress_line(&s, a.duration, a.max) {
            eprintln!("{l}");
        }
    }
}

/// Rewrites the `--json` file from the measurement's latest checkpoint.
fn checkpoint(a: &QualifyArgs, done: &[Step], dir: &Path, started: SystemTime) -> Result<()> {
    let mut steps = done.to_vec();
    let doc = std::fs::read(dir.join("cyclic.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    steps.push(Step {
        name: "cyclic",
        code: None,
        doc,
        ..Default::default()
    });
    let v = Verdict::of(a, &steps, Some("cyclic"), started);
    let mut j = v.json(a, &steps);
    j["state"] = json!("running");
    write_json(a, &j)
}

fn write_json(a: &QualifyArgs, j: &Value) -> Result<()> {
    let Some(p) = &a.json else { return Ok(()) };
    let text = serde_json::to_string_pretty(j)? + "\n";
    let text = verdict::redact_text(a, j, &text);
    write_atomic(p, text.as_bytes()).with_context(|| format!("writing {}", p.display()))
}

/// Writes the verdict everywhere asked; the exit code.
fn finish(a: &QualifyArgs, v: &Verdict, steps: &[Step], dir: &Path) -> Result<i32> {
    let j = v.json(a, steps);
    let text = verdict::redact_text(a, &j, &v.text(steps));
    say(&format!("{text}\n"));
    write_json(a, &j)?;
    if let Some(p) = &a.junit {
        write_atomic(p, v.junit().as_bytes())
            .with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(p) = &a.report {
        report(a, v, &j, dir, p)?;
    }
    if let Some(p) = &a.json {
        say(&format!("result: {}\n", p.display()));
    }
    Ok(match v.overall.as_str() {
        "PASS" => EXIT_OK,
        "FAIL" => EXIT_THRESHOLD,
        _ => EXIT_RUN,
    })
}

/// The HTML report of the steps' documents (`rtscope report`), the verdict
/// at its top.
fn report(a: &QualifyArgs, v: &Verdict, j: &Value, dir: &Path, out: &Path) -> Result<()> {
    let exe = std::env::current_exe()?;
    let docs: Vec<PathBuf> = ["hwlat", "cyclic"]
        .iter()
        .map(|n| dir.join(format!("{n}.json")))
        .filter(|p| p.exists())
        .collect();
    let tmp = dir.join("report.html");
    let mut html = String::from("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>rtscope qualify</title></head>\n<body>\n</body></html>\n");
    if !docs.is_empty() {
        let mut cmd = Proc::new(exe);
        cmd.arg("report").args(&docs).arg("-o").arg(&tmp);
        if a.redact {
            cmd.arg("--redact");
        }
        let st = cmd.stdout(Stdio::null()).status()?;
        if st.success() {
            html = std::fs::read_to_string(&tmp)?;
        }
    }
    let section = verdict::redact_text(a, j, &v.html());
    let html = match html.find("<body>") {
        Some(i) => format!("{}{section}{}", &html[..i + 6], &html[i + 6..]),
        None => section + &html,
    };
    write_atomic(out, html.as_bytes()).with_context(|| format!("writing {}", out.display()))
}

fn step_dir() -> Result<PathBuf> {
    // What a killed qualify left (its steps' documents and streams) goes
    // first: the directories of processes that are gone.
    if let Ok(rd) = std::fs::read_dir(std::env::temp_dir()) {
        for e in rd.flatten() {
            let pid = e
                .file_name()
                .to_str()
                .and_then(|n| n.strip_prefix("rtscope-qualify-"))
                .and_then(|p| p.parse::<i32>().ok());
            if pid.is_some_and(|p| !rtscope_core::sys::pid_alive(p)) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let d = std::env::temp_dir().join(format!("rtscope-qualify-{}", std::process::id()));
    std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_expand() {
        assert_eq!(load_specs(&[]).len(), STANDARD_LOADS.len());
        assert!(load_specs(&["none".into()]).is_empty());
        let v = load_specs(&["standard".into(), "net".into()]);
        assert_eq!(v.last().unwrap(), NET_LOAD);
        assert_eq!(load_specs(&["cpu:10".into()]), vec!["cpu:10".to_string()]);
    }

    #[test]
    fn progress_counts_intervals_over() {
        let s = r#"{"type":"run"}
{"type":"snapshot","elapsed_s":10.0,"series":[{"label":"thread 0","max_ns":5000,"interval":{"max_ns":5000}},{"label":"all","max_ns":5000,"interval":{"max_ns":5000}}]}
{"type":"snapshot","elapsed_s":20.0,"series":[{"label":"thread 0","max_ns":9000,"interval":{"max_ns":9000}},{"label":"all","max_ns":9000,"interval":{"max_ns":9000}}]}
"#;
        let l = progress_line(s, 60_000_000_000, Some(6000)).unwrap();
        assert!(l.contains("20s of 1m00s, 40s left"), "{l}");
        assert!(l.contains("thread 0 9"), "{l}");
        assert!(l.contains("outliers in 1 interval"), "{l}");
    }

    #[test]
    fn limits_read_exactly() {
        assert_eq!(limit(100_000), "100us");
        assert_eq!(limit(1_234_567), "1234567ns");
        assert_eq!(limit(1), "1ns");
    }

    #[test]
    fn hms_reads() {
        assert_eq!(hms(5.0), "5.0s");
        assert_eq!(hms(0.34), "0.3s");
        assert_eq!(hms(10.0), "10s");
        assert_eq!(hms(125.0), "2m05s");
        assert_eq!(hms(3725.0), "1h02m05s");
    }
}
