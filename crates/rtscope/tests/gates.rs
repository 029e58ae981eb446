//! CI gates end to end: `--fail-if`, `--junit`, `--fail-above` as a gate,
//! gates on another experiment's result and on a stored result (`report`).

mod common;

use std::path::Path;
use std::process::Command as StdCommand;

use common::{alongside, Run};
use rtscope_core::result::ResultDocument;

/// Checks that `path` is well-formed XML with the JUnit shape: the element
/// nesting balanced (a small parser of its own), and, where python3 is
/// installed, parsed by `xml.etree` with the counts of `tests` and
/// `failures` checked against the test cases and failure elements.
fn assert_junit(path: &Path, tests: usize, failures: usize) -> String {
    let x = std::fs::read_to_string(path).unwrap();
    assert!(x.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"));
    // Balanced elements.
    let mut stack: Vec<String> = Vec::new();
    let mut rest = x.split_once("?>").unwrap().1;
    while let Some(i) = rest.find('<') {
        let j = rest[i..].find('>').expect("a tag ends") + i;
        let tag = &rest[i + 1..j];
        assert!(!tag.contains('<'), "'<' inside a tag: {tag}");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "{x}");
        } else if !tag.ends_with('/') {
            stack.push(tag.split_whitespace().next().unwrap().to_string());
        }
        rest = &rest[j + 1..];
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
    assert_eq!(x.matches("<testcase ").count(), tests, "{x}");
    assert_eq!(x.matches("<failure ").count(), failures, "{x}");
    let py = r#"
import sys, xml.etree.ElementTree as E
r = E.parse(sys.argv[1]).getroot()
assert r.tag == "testsuites", r.tag
cases = r.findall("./testsuite/testcase")
fails = r.findall("./testsuite/testcase/failure")
assert int(r.get("tests")) == len(cases) == int(sys.argv[2]), (r.get("tests"), len(cases))
assert int(r.get("failures")) == len(fails) == int(sys.argv[3]), (r.get("failures"), len(fails))
for f in fails:
    assert f.get("message") and "limit: fail if" in f.text, f.text
print("ok")
"#;
    if let Ok(out) = StdCommand::new("python3")
        .args(["-c", py])
        .arg(path)
        .arg(tests.to_string())
        .arg(failures.to_string())
        .output()
    {
        assert!(
            out.status.success(),
            "python3 xml.etree: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    x
}

#[test]
fn a_failed_gate_exits_3_with_its_lines_junit_and_record() {
    let _turn = alongside();
    // Every wake-up is later than 1 ns; no thread ran a million times.
    let out = Run::new(["cyclic", "-t", "1", "-l", "30", "-q", "--fail-if"])
        .arg("max>1ns,thread 0:count>=1000000,all:p50>1s")
        .args(["--fail-if", "count<1"])
        .json()
        .out("--junit", "j.xml")
        .exits(3);
    let (json, junit) = (out.json_path(), out.path("j.xml"));
    let err = out.stderr();
    let fails: Vec<&str> = err.lines().filter(|l| l.starts_with("fail: ")).collect();
    assert_eq!(fails.len(), 2, "{err}");
    assert!(fails[0].starts_with("fail: thread 0: max "), "{err}");
    assert!(fails[0].ends_with(" > 1ns (gate max>1ns)"), "{err}");
    assert!(fails[1].starts_with("fail: all: max "), "{err}");
    let stdout = out.stdout();
    assert!(stdout.contains(&format!("junit: {}", junit.display())));
    let doc = out.document();
    let g = &doc["gates"];
    assert_eq!(g["passed"], false);
    let checks = g["checks"].as_array().unwrap();
    // max and count<1 on two series each, one named series, the aggregate.
    assert_eq!(checks.len(), 6);
    let max0 = &checks[0];
    assert_eq!(max0["series"], "thread 0");
    assert_eq!(max0["statistic"], "max");
    assert_eq!(max0["unit"], "ns");
    assert_eq!(max0["failed"], true);
    assert_eq!(
        max0["value"].as_f64(),
        doc["series"][0]["stats"]["max_ns"].as_f64()
    );
    assert_eq!(checks[2]["gate"], "thread 0:count>=1000000");
    assert_eq!(checks[2]["value"], 30.0);
    assert_eq!(checks[2]["failed"], false);
    assert_eq!(checks[3]["series"], "all");
    assert_eq!(checks[3]["failed"], false);
    let x = assert_junit(&junit, 6, 2);
    assert!(x.contains("name=\"thread 0: max&gt;1ns\""), "{x}");
    assert!(x.contains("limit: fail if max &gt; 1ns"), "{x}");

    // The stored result, gated again by `report`: the same verdicts.
    let out = Run::new(["report"])
        .arg(&json)
        .args(["--fail-if", "count<1,thread 0:p50>1s"])
        .out("--junit", "j2.xml")
        .exits(0);
    assert_junit(&out.path("j2.xml"), 3, 0);
    let out = Run::new(["report"])
        .arg(&json)
        .arg(&json)
        .args(["--fail-if", "all:min>=1ns"])
        .out("--junit", "j2.xml")
        .exits(3);
    assert_eq!(
        out.stderr()
            .lines()
            .filter(|l| l.starts_with("fail: all: min "))
            .count(),
        2
    );
    // One suite per stored result.
    let x = assert_junit(&out.path("j2.xml"), 2, 2);
    assert_eq!(x.matches("<testsuite ").count(), 2);
}

#[test]
fn gates_that_pass_exit_0() {
    let _turn = alongside();
    let out = Run::new(["cyclic", "-t", "2", "-l", "20", "-q"])
        .args(["--fail-if", "count<20,max>1h,thread 1:dropped>5"])
        .out("--junit", "j.xml")
        .exits(0);
    assert!(!out.stderr().contains("fail:"));
    assert_junit(&out.path("j.xml"), 3 + 3 + 1, 0);
}

#[test]
fn fail_above_is_the_max_gate_and_keeps_its_line() {
    let _turn = alongside();
    let out = Run::new(["cyclic", "-t", "1", "-l", "10", "-q", "--fail-above", "1ns"])
        .args(["--fail-if", "count<1"])
        .json()
        .exits(3);
    let err = out.stderr();
    let fails: Vec<&str> = err.lines().filter(|l| l.starts_with("fail: ")).collect();
    assert_eq!(fails.len(), 1, "{err}");
    assert!(fails[0].starts_with("fail: 10 samples above 1ns"), "{err}");
    let doc = out.document();
    assert_eq!(doc["threshold"]["samples_above"], 10);
    let c = &doc["gates"]["checks"];
    assert_eq!(c[0]["gate"], "--fail-above 1ns");
    assert_eq!(c[0]["series"], "all");
    assert_eq!(c[0]["failed"], true);
    assert_eq!(c[1]["gate"], "count<1");
    assert_eq!(doc["gates"]["passed"], false);
}

#[test]
fn bad_gates_are_one_line_and_exit_2() {
    let e = Run::new(["cyclic", "-l", "1", "--fail-if", "p99>50us,p98>5us"])
        .exits(2)
        .one_line();
    assert!(e.contains("unknown statistic 'p98'"), "{e}");
    assert!(
        e.contains("known: min, max, avg, mean, stddev, p50, p90, p99, p99.9"),
        "{e}"
    );
    for bad in ["p99", "p99>5 parsecs", "overruns>0.5", "p99=>3us"] {
        let e = Run::new(["report", "x.json", "--fail-if", bad])
            .exits(2)
            .one_line();
        assert!(e.contains("--fail-if"), "{bad}");
    }
    // --junit alone gates nothing.
    Run::new(["cyclic", "-l", "1", "--junit", "j.xml"])
        .exits(2)
        .one_line();
    // Too many gates.
    let many = vec!["max>1s"; 65].join(",");
    let e = Run::new(["cyclic", "-l", "1", "--fail-if", &many])
        .exits(2)
        .one_line();
    assert!(e.contains("at most 64 gates"));
}

#[test]
fn any_experiment_with_series_is_gated() {
    let _turn = alongside();
    let out = Run::new(["clock", "-n", "2000", "-s", "monotonic", "-q"])
        .args(["--fail-if", "count<1,min<0ns"])
        .json()
        .out("--junit", "c.xml")
        .exits(0);
    let doc = out.document();
    let n = doc["series"].as_array().unwrap().len();
    assert!(n >= 1);
    assert_eq!(doc["gates"]["checks"].as_array().unwrap().len(), 2 * n);
    let x = assert_junit(&out.path("c.xml"), 2 * n, 0);
    assert!(x.contains("<testsuite name=\"rtscope clock\""), "{x}");
    // The same run, a gate that cannot pass: exit 3.
    let err = Run::new(["clock", "-n", "2000", "-s", "monotonic", "-q"])
        .args(["--fail-if", "max>=0ns"])
        .exits(3)
        .stderr();
    assert!(err.contains("(gate max>=0ns)"));
}

#[test]
fn report_checks_each_gate_once_prints_labels_safely_and_keeps_outputs_apart() {
    let _turn = alongside();
    let out = Run::new(["cyclic", "-t", "1", "-l", "30", "-q"])
        .json()
        .exits(0);
    // A label with control characters (a hand-edited or foreign document).
    let mut doc = ResultDocument::read(&out.json_path()).unwrap();
    doc.series[0].label = "thread\x1b]0;owned\x07 0".into();
    let path = out.path("edited.json");
    doc.write(&path).unwrap();
    // The same gate twice (and spelt another way): one fail line a series.
    let r = Run::new(["report"])
        .arg(&path)
        .args(["--fail-if", "max>1ns,max > 1ns", "--fail-if", "max>1ns"])
        .out("--junit", "j.xml")
        .exits(3);
    let err = r.stderr();
    let fails: Vec<&str> = err.lines().filter(|l| l.starts_with("fail: ")).collect();
    assert_eq!(fails.len(), 2, "{err}");
    assert!(!err.contains('\x1b') && !err.contains('\x07'), "{err:?}");
    assert!(
        fails[0].starts_with("fail: thread?]0;owned? 0: max "),
        "{err}"
    );
    assert_junit(&r.path("j.xml"), 2, 2);
    // `-o X --junit X`: one clear line, exit 2, nothing written.
    let same = out.path("same.html");
    let e = Run::new(["report"])
        .arg(&path)
        .args(["--fail-if", "max>1ns", "-o"])
        .arg(&same)
        .arg("--junit")
        .arg(&same)
        .exits(2)
        .one_line();
    assert!(e.contains("name the same file"), "{e}");
    assert!(!same.exists());
}

#[test]
fn hwlat_gates_pass_on_a_clean_run_and_fail_on_one_that_measured_nothing() {
    let _turn = alongside();
    let cpu = rtscope_core::units::online_cpus().last().copied().unwrap();
    let cpu = cpu.to_string();
    // Issue 36: a clean machine (no gap of 500 ms in a second) failed
    // `max>1s` as "not recorded". (A machine that did stall 500 ms makes a
    // sample; then the gate is checked on its value, and the test says no
    // more.)
    let out = Run::new(["hwlat", "--method", "user-space", "-a", &cpu, "-D", "1s"])
        .args(["-T", "500ms", "-q", "--fail-if", "max>1s"])
        .json()
        .ran();
    let doc = out.document();
    if doc["series"][0]["stats"]["count"] == 0 {
        assert_eq!(out.status.code(), Some(0), "{}", out.stderr());
        let check = &out.document()["gates"]["checks"][0];
        assert_eq!(check["value"], serde_json::Value::Null);
        assert_eq!(check["below"], 5e8);
        assert_eq!(check["failed"], false);
        assert!(out
            .stdout()
            .contains("no sample (-): no gap at or above the threshold (500ms) in the whole run"));
    }
    // A run shorter than its threshold measured nothing: said, and gated.
    let out = Run::new(["hwlat", "--method", "user-space", "-a", &cpu, "-D", "1ns"])
        .args(["-q", "--fail-if", "max>1s"])
        .json()
        .exits(3);
    let err = out.stderr();
    assert!(
        err.contains("warning: the run measured nothing: it ran 1ns, shorter than the threshold"),
        "{err}"
    );
    assert!(err.contains("fail: cpu "), "{err}");
    let w = out.document()["warnings"].to_string();
    assert!(w.contains("the run measured nothing"), "{w}");
}
