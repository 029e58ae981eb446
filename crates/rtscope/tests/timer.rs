//! Integration tests of `rtscope timer`: the real binary, short runs. They
//! check structure, exit codes and the text, never a latency bound.

mod common;

use std::time::Duration;

use common::Run;

fn usage_error(args: &[&str]) -> String {
    let out = Run::new(["timer"]).args(args).exits(2);
    assert!(out.stdout.is_empty(), "{args:?} printed on stdout");
    out.one_line()
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    assert!(usage_error(&["--api", "sleepy"]).contains("unknown wait API 'sleepy'"));
    assert!(usage_error(&["--delays", "2s"]).contains("at most 1s"));
    assert!(usage_error(&["--delays", "0"]).contains("must be greater than 0"));
    assert!(usage_error(&["--compensate", "magic"]).contains("magic"));
    assert!(
        usage_error(&["--compensate", "static", "--no-calibrate"]).contains("needs a calibration")
    );
    assert!(usage_error(&["--beacon", "--orders", "2..15"]).contains("--orders 2..15"));
    assert!(usage_error(&["--beacon", "--orders", "x"]).contains("not an order range"));
    assert!(usage_error(&["--service", "wheel"]).contains("unknown design 'wheel'"));
    // Options the mode would ignore (the beacon used to run 79 s without them).
    assert_eq!(
        usage_error(&["--beacon", "--service", "polling"]).trim_end(),
        "error: --beacon and --service are two modes: run them one at a time"
    );
    for (flag, v) in [("--delays", "1ms"), ("--api", "timerfd")] {
        let e = usage_error(&["--beacon", flag, v]);
        assert!(
            e.starts_with(&format!("error: {flag}: not used by --beacon")),
            "{e}"
        );
    }
    assert!(usage_error(&["--adaptive-k", "2"]).contains("is for --compensate adaptive"));
    assert!(usage_error(&["--orders", "1..2"]).contains("is for --beacon"));
    assert!(usage_error(&["--service", "polling", "--tick", "1us"]).contains("--tick"));
    assert!(
        usage_error(&["--service", "hopping", "--compensate", "adaptive"]).contains("none,static")
    );
    assert!(usage_error(&["--hybrid-quantile", "1.5"]).contains("--hybrid-quantile"));
    assert!(usage_error(&["-l", "0"]).contains("at least 1"));
    assert!(
        usage_error(&["--beacon", "--orders", "0..0", "--cycles", "4294967296"])
            .contains("at most 1000000")
    );
    assert!(usage_error(&["--repeat", "18446744073709551615"]).contains("at most 1000"));
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.json");
    assert!(usage_error(&[
        "--compensate",
        "static",
        "--calibration",
        missing.to_str().unwrap()
    ])
    .contains("none.json"));
    let short = dir.path().join("short.json");
    std::fs::write(
        &short,
        r#"{"entries": [{"api": "clock_nanosleep", "policy": "fifo", "delays_ns": [1000, 2000],
            "medians_ns": [5000], "offset_ns": 5000, "wakes_per_delay": 10}]}"#,
    )
    .unwrap();
    assert!(usage_error(&[
        "--compensate",
        "static",
        "--calibration",
        short.to_str().unwrap()
    ])
    .contains(
        "inconsistent timer calibration: clock_nanosleep fifo: 1 medians_ns for 2 delays_ns"
    ));
    let same = dir.path().join("x.json");
    let s = same.to_str().unwrap();
    usage_error(&[
        "--json",
        s,
        "--compensate",
        "static",
        "--save-calibration",
        s,
    ]);
}

#[test]
fn sweep_writes_a_document_with_one_series_per_cell() {
    let out = Run::new([
        "timer",
        "-q",
        "--api",
        "clock_nanosleep,timerfd,futex",
        "--delays",
        "320us,1ms",
        "--compensate",
        "none,static,adaptive,hybrid",
        "-l",
        "5",
        "--calibration-wakes",
        "3",
    ])
    .json()
    .out("--save-calibration", "cal.json")
    .out("--report", "t.html")
    .exits(0);
    let (cal, html) = (out.path("cal.json"), out.path("t.html"));
    let stdout = out.stdout();
    assert!(
        stdout.contains("static compensation: mean |error|"),
        "{stdout}"
    );
    assert!(stdout.contains("none p50/p99/max"), "{stdout}");
    let doc = out.document();
    assert_eq!(doc["experiment"], "timer");
    assert_eq!(doc["plan"]["mode"], "sweep");
    let series = doc["series"].as_array().unwrap();
    assert_eq!(series.len(), 3 * 4 * 2);
    for s in series {
        assert_eq!(s["stats"]["count"], 5);
        let t = &s["attributes"]["timer"];
        assert_eq!(t["wakes"], 5);
        assert!(t["error_p50_ns"].as_i64() <= t["error_p99_ns"].as_i64());
        assert!(t["error_min_ns"].as_i64() <= t["error_max_ns"].as_i64());
        if t["compensation"] == "none" || t["compensation"] == "static" {
            assert_eq!(t["spin_total_ns"], 0, "{t}");
        }
    }
    let labels: Vec<&str> = series
        .iter()
        .map(|s| s["label"].as_str().unwrap())
        .collect();
    assert!(labels.contains(&"timerfd static fifo 320us"), "{labels:?}");
    let entries = doc["plan"]["calibration"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 3);
    // The saved calibration loads back: static then runs without calibrating.
    Run::new([
        "timer",
        "-q",
        "--api",
        "futex",
        "--delays",
        "500us",
        "--compensate",
        "static",
        "-l",
        "3",
        "--calibration",
    ])
    .arg(&cal)
    .exits(0);
    // A calibration without the API asked for is refused.
    let msg = usage_error(&[
        "--api",
        "select",
        "--compensate",
        "static",
        "--calibration",
        cal.to_str().unwrap(),
    ]);
    assert!(msg.contains("no entry for select"), "{msg}");
    assert!(std::fs::metadata(&html).unwrap().len() > 1000);
}

#[test]
fn every_api_and_policy_runs() {
    let stdout = Run::new([
        "timer",
        "-q",
        "--delays",
        "300us",
        "-l",
        "3",
        "--policy",
        "fifo,other",
    ])
    .exits(0)
    .stdout();
    for api in [
        "clock_nanosleep",
        "nanosleep",
        "timerfd",
        "posix-timer",
        "epoll",
        "futex",
        "condvar",
        "select",
    ] {
        for pol in ["fifo", "other"] {
            assert!(
                stdout.contains(&format!("{api} {pol}: uncompensated")),
                "{api} {pol}\n{stdout}"
            );
        }
    }
}

#[test]
fn beacon_and_service_documents() {
    let out = Run::new([
        "timer",
        "-q",
        "--beacon",
        "--orders",
        "0..1",
        "--cycles",
        "3",
        "--calibration-wakes",
        "3",
    ])
    .json()
    .exits(0);
    let stdout = out.stdout();
    assert!(stdout.contains("relative: drift"), "{stdout}");
    assert!(stdout.contains("relative-select: drift"), "{stdout}");
    let doc = out.document();
    let series = doc["series"].as_array().unwrap();
    assert_eq!(series.len(), 2 * 5);
    // The select chain runs as a normal task (its timeout slack is the point).
    let sel = series
        .iter()
        .find(|s| s["label"] == "beacon BO1 relative-select")
        .expect("relative-select series");
    assert_eq!(sel["attributes"]["beacon"]["mode"], "relative-select");
    for s in series {
        let b = &s["attributes"]["beacon"];
        assert_eq!(b["cycles"], 3);
        assert_eq!(s["stats"]["count"], 3);
        assert_eq!(
            b["interval_ns"].as_u64().unwrap(),
            15_360_000 << b["order"].as_u64().unwrap()
        );
    }

    let doc = Run::new([
        "timer",
        "-q",
        "--service",
        "hopping,polling",
        "--timers",
        "4",
        "-l",
        "8",
        "--delays",
        "300us,600us",
        "--compensate",
        "none,static",
    ])
    .json()
    .exits(0)
    .document();
    let series = doc["series"].as_array().unwrap();
    assert_eq!(series.len(), 4);
    for s in series {
        let c = &s["attributes"]["service"];
        assert_eq!(c["expiries"], 8, "{c}");
        assert!(c["hardware_expiries"].as_u64().unwrap() >= 1);
    }
}

#[test]
fn ctrl_c_during_a_beacon_still_writes_the_result() {
    let (out, took) = Run::new([
        "timer",
        "-q",
        "--beacon",
        "--orders",
        "6..6",
        "--cycles",
        "5",
        "--no-calibrate",
        "--compensate",
        "none,adaptive",
    ])
    .json()
    .interrupt_after(Duration::from_millis(2500), Duration::from_secs(10));
    let out = out.exits(0);
    assert!(took < Duration::from_secs(5), "{took:?}");
    let doc = out.document();
    assert_eq!(doc["end_reason"], "interrupted");
}

/// A calibration whose lateness is the requested delay or more (another
/// machine's, say): static compensation waits not at all there. Said before
/// the run and in the document's warnings.
#[test]
fn a_calibration_later_than_the_delay_is_said_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let cal = dir.path().join("late.json");
    std::fs::write(
        &cal,
        r#"{"entries": [{"api": "clock_nanosleep", "policy": "fifo", "delays_ns": [1000000, 5000000],
            "medians_ns": [2000000, 2000000], "offset_ns": 2000000, "wakes_per_delay": 10}]}"#,
    )
    .unwrap();
    let out = Run::new([
        "timer",
        "--api",
        "clock_nanosleep",
        "--delays",
        "1ms,5ms",
        "--compensate",
        "static",
        "-l",
        "3",
        "--calibration",
    ])
    .arg(&cal)
    .json()
    .exits(0);
    let err = out.stderr();
    let line = err
        .lines()
        .find(|l| l.starts_with("warning: --calibration: clock_nanosleep under fifo"))
        .unwrap_or_else(|| panic!("{err}"));
    // 1 ms is overshot (2 ms late), 5 ms is not.
    assert!(line.contains("(2ms at 1ms)"), "{line}");
    let doc = out.document();
    assert!(
        doc["warnings"].as_array().unwrap().iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("static compensation does not wait there")),
        "{}",
        doc["warnings"]
    );
}
