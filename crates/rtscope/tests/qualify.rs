//! `rtscope qualify`: the verdict's structure, its exit codes (forced with
//! absurd deadlines, never latency bounds), JUnit, JSON, the report, a stop
//! mid-run keeping what was measured, and bad input.

mod common;

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{alongside, rtscope_path, run, s};

/// A short qualification of CPU 0, no hwlat, no load: fast on a small VM.
fn short(dir: &std::path::Path, max: &str) -> (common::Out, serde_json::Value) {
    let json = dir.join("q.json");
    let o = run(&[
        "qualify",
        "--max",
        max,
        "-D",
        "2s",
        "--cpus",
        "0",
        "--no-hwlat",
        "--load",
        "none",
        "-q",
        "--json",
        s(&json),
        "--junit",
        s(&dir.join("q.xml")),
    ]);
    let doc = serde_json::from_slice(&std::fs::read(&json).expect("the JSON is written"))
        .expect("the JSON parses");
    (o, doc)
}

/// A ten-minute qualification of CPU 0 (to be stopped), with `extra`
/// options, its JSON at `json`, in a process group of its own, stdout and
/// stderr to `out` (a fresh one each).
fn long_qualify(extra: &[&str], json: &std::path::Path, out: fn() -> Stdio) -> Command {
    let mut c = Command::new(rtscope_path());
    c.args(["qualify", "--max", "1h", "-D", "10m", "--cpus", "0", "-q"])
        .args(extra)
        .arg("--json")
        .arg(json)
        .stdout(out())
        .stderr(out())
        .process_group(0);
    c
}

#[test]
fn an_absurd_deadline_passes_with_exit_0() {
    let _g = alongside();
    let d = tempfile::tempdir().unwrap();
    let (o, doc) = short(d.path(), "1h");
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    assert!(o.stdout.starts_with("qualify: PASS"), "{}", o.stdout);
    let v = &doc["verdict"];
    assert_eq!(v["overall"], "PASS");
    let cpus = v["cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), 1, "{v}");
    assert_eq!(cpus[0]["cpu"], 0);
    assert_eq!(cpus[0]["passed"], true);
    assert_eq!(doc["schema"], "rtscope-qualify/1");
    assert_eq!(doc["plan"]["max_ns"], 3_600_000_000_000u64);
    assert!(doc["command_line"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a == "qualify"));
    assert!(
        doc["machine"]["kernel_release"].is_string(),
        "{}",
        doc["machine"]
    );
    assert_eq!(doc["check"]["schema"], "rtscope-check/1");
    assert!(doc["hwlat"].is_null());
    let steps: Vec<&str> = doc["plan"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["check", "cyclic"]);
    let x = std::fs::read_to_string(d.path().join("q.xml")).unwrap();
    assert!(x.contains("failures=\"0\""), "{x}");
    assert!(x.contains("name=\"thread 0\""), "{x}");
}

#[test]
fn trace_irqs_off_reaches_the_measurement() {
    let _g = alongside();
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("q.json");
    let o = run(&[
        "qualify",
        "--max",
        "1h",
        "-D",
        "1s",
        "--cpus",
        "0",
        "--no-hwlat",
        "--load",
        "none",
        "--trace-irqs-off",
        "-q",
        "--json",
        s(&json),
    ]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["plan"]["trace_irqs_off"], true, "{}", doc["plan"]);
    let m = &doc["measurement"];
    assert!(
        m["command_line"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "--trace-irqs-off"),
        "{}",
        m["command_line"]
    );
    // Traced where this machine can (the plan says so only then); a
    // kernel without the events is said to be, in the document.
    if !m["plan"]["trace"].is_null() {
        assert_eq!(m["plan"]["trace"]["irqs_off"], true, "{}", m["plan"]);
        let has = m["trace"]["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "preemptirq/irq_disable");
        let said = m["warnings"].as_array().unwrap().iter().any(|w| {
            w.as_str()
                .unwrap()
                .starts_with("--trace-irqs-off: this kernel has no preemptirq events")
        });
        assert_eq!(said, !has, "{}", m["warnings"]);
    }
}

#[test]
fn an_absurd_deadline_fails_with_exit_3_per_cpu() {
    let _g = alongside();
    let d = tempfile::tempdir().unwrap();
    let (o, doc) = short(d.path(), "1ns");
    assert_eq!(o.code, 3, "{}\n{}", o.stdout, o.stderr);
    let first: Vec<&str> = o.stdout.lines().take(2).collect();
    assert_eq!(first[0], "qualify: FAIL", "{}", o.stdout);
    assert!(first[1].starts_with("worst wake-up "), "{}", o.stdout);
    assert_eq!(doc["verdict"]["overall"], "FAIL");
    assert_eq!(doc["verdict"]["cpus"][0]["passed"], false);
    assert!(doc["verdict"]["worst"]
        .as_str()
        .unwrap()
        .contains("on CPU 0"));
    let x = std::fs::read_to_string(d.path().join("q.xml")).unwrap();
    assert!(
        x.contains("failures=\"1\"") && x.contains("<failure"),
        "{x}"
    );
}

#[test]
fn hwlat_the_report_and_redaction_come_with_the_verdict_on_top() {
    let _g = alongside();
    let d = tempfile::tempdir().unwrap();
    let (json, html) = (d.path().join("q.json"), d.path().join("q.html"));
    let o = run(&[
        "qualify",
        "--max",
        "1h",
        "-D",
        "2s",
        "--cpus",
        "0",
        "--hwlat-duration",
        "1s",
        "--load",
        "cpu:10",
        "-q",
        "--json",
        s(&json),
        "--report",
        s(&html),
        "--redact",
    ]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["hwlat"]["experiment"], "hwlat");
    assert!(
        doc["verdict"]["hwlat_max_ns"].is_u64(),
        "{}",
        doc["verdict"]
    );
    assert_eq!(doc["measurement"]["loads"][0]["spec"], "cpu:10");
    // --redact: the machine's name and command line are left out.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let host = host.trim();
    assert_ne!(doc["machine"]["hostname"], host, "{}", doc["machine"]);
    assert_ne!(doc["hwlat"]["system"]["hostname"], host);
    assert_ne!(
        doc["measurement"]["system"]["cmdline"],
        doc["check"]["kernel"]["cmdline"].clone()
    );
    let h = std::fs::read_to_string(&html).unwrap();
    let top = h
        .find("<h1>qualify: PASS</h1>")
        .expect("the verdict in the report");
    let body = h.find("<body>").unwrap();
    assert!(
        top > body && h[body..top].len() < 40,
        "the verdict opens the body"
    );
}

#[test]
fn a_stop_mid_run_keeps_what_was_measured() {
    let _g = alongside();
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("q.json");
    let child = long_qualify(&["--no-hwlat", "--load", "none"], &json, Stdio::piped)
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(6));
    let pid = child.id() as i32;
    // As `timeout` stops: the process, then its group: one stop.
    rtscope_core::sys::kill(pid, libc::SIGTERM).unwrap();
    std::thread::sleep(Duration::from_millis(30));
    rtscope_core::sys::killpg(pid, libc::SIGTERM).unwrap();
    let t = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "the stop ended the run"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("stopped during cyclic, after"), "{out}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(doc["verdict"]["stopped"]
        .as_str()
        .unwrap()
        .contains("of 10m00s"));
    assert!(
        doc["verdict"]["cpus"][0]["count"].as_u64().unwrap() > 0,
        "{}",
        doc["verdict"]
    );
}

#[test]
fn a_stop_before_the_measurement_is_an_error_with_what_ran() {
    let _g = alongside();
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("q.json");
    let child = long_qualify(
        &["--hwlat-duration", "1h", "--load", "none"],
        &json,
        Stdio::piped,
    )
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_secs(5));
    rtscope_core::sys::kill(child.id() as i32, libc::SIGINT).unwrap();
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.starts_with("qualify: ERROR\n  (stopped during "),
        "{out}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["verdict"]["overall"], "ERROR");
    assert_eq!(
        doc["check"]["schema"], "rtscope-check/1",
        "check ran and is kept"
    );
    assert!(doc["measurement"].is_null());
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for args in [
        &["qualify", "-D", "2s"][..],
        &["qualify", "--max", "2h"],
        &["qualify", "--max", "100us", "-D", "400d"],
        &["qualify", "--max", "100us", "--load", "nosuchload"],
        &["qualify", "--max", "100us", "--checkpoint", "1m"],
        &["qualify", "--fail-if", "max>1ms", "--trace-irqs-off"],
    ] {
        let o = run(args);
        assert_eq!(o.code, 2, "{args:?}: {}", o.stderr);
        assert_eq!(o.stderr.trim().lines().count(), 1, "{args:?}: {}", o.stderr);
    }
}

/// The processes below `pid` (children, theirs, ...), from /proc.
fn descendants(pid: i32) -> Vec<i32> {
    let mut parents = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": the comm may hold spaces.
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let ppid: i32 = after.split(' ').nth(1).unwrap().parse().unwrap();
        parents.push((p, ppid));
    }
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    out.remove(0);
    out
}

fn alive(pid: i32) -> bool {
    // A zombie has been stopped: only its parent's wait is missing.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s[s.rfind(')').unwrap() + 2..].starts_with('Z'))
        .unwrap_or(false)
}

#[test]
fn the_steps_and_their_loads_die_with_a_killed_qualify() {
    let _g = alongside();
    let d = tempfile::tempdir().unwrap();
    let mut child = long_qualify(
        &["--no-hwlat", "--load", "cpu:20"],
        &d.path().join("q.json"),
        Stdio::null,
    )
    .spawn()
    .unwrap();
    let pid = child.id() as i32;
    // Until the cyclic step runs with its load (a step, and a worker below it).
    let t = Instant::now();
    let below = loop {
        let below = descendants(pid);
        if below.len() >= 2 || t.elapsed() > Duration::from_secs(60) {
            break below;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(below.len() >= 2, "no step with its load: {below:?}");
    rtscope_core::sys::kill(pid, libc::SIGKILL).unwrap();
    let _ = child.wait();
    let t = Instant::now();
    while below.iter().any(|&p| alive(p)) && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let left: Vec<_> = below.iter().filter(|&&p| alive(p)).collect();
    for &&p in &left {
        let _ = rtscope_core::sys::kill(p, libc::SIGKILL);
    }
    assert!(
        left.is_empty(),
        "left running after qualify was killed: {left:?}"
    );
    // Its steps' directory is left; the next qualify removes it.
    let steps = std::env::temp_dir().join(format!("rtscope-qualify-{pid}"));
    assert!(steps.is_dir(), "{}", steps.display());
    let d2 = tempfile::tempdir().unwrap();
    let (o, _) = short(d2.path(), "1h");
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(!steps.exists(), "{} is left", steps.display());
}
