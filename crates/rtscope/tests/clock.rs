//! Integration tests of `rtscope clock` and `rtscope period`: the real binary,
//! short runs, structure and sanity only (never a latency bound).

mod common;

use std::path::Path;

use common::{Ran, Run};
use rtscope_core::result::ResultDocument;
use std::time::Duration;

/// A run's result document: validated against docs/result-schema.json, then
/// deserialised by rtscope's own reader (which checks the schema version).
fn read_doc(run: &Ran) -> ResultDocument {
    run.document();
    ResultDocument::read(&run.json_path()).unwrap()
}

fn labels(doc: &ResultDocument) -> Vec<String> {
    doc.series.iter().map(|s| s.label.clone()).collect()
}

#[test]
fn consecutive_lists_posix_clocks_syscall_and_tsc() {
    let out = Run::new([
        "clock",
        "-n",
        "10000",
        "--calibrate",
        "50ms",
        "--warp",
        "10ms",
    ])
    .args(["--no-rt", "--default-system"])
    .json()
    .exits(0);
    let stdout = out.stdout();
    assert!(stdout.contains("cost/read"), "{stdout}");
    assert!(stdout.contains("x cheapest"), "{stdout}");

    let doc = read_doc(&out);
    assert_eq!(doc.experiment, "clock");
    let l = labels(&doc);
    let mut want = vec![
        "monotonic",
        "monotonic-raw",
        "realtime",
        "boottime",
        "tai",
        "monotonic-coarse",
        "realtime-coarse",
        "gettimeofday",
        "monotonic-syscall",
    ];
    if cfg!(target_arch = "x86_64") {
        want.extend(["tsc", "rdtscp", "lfence-tsc"]);
    }
    for w in want {
        let label = format!("{w} consecutive");
        let s = doc
            .series
            .iter()
            .find(|s| s.label == label)
            .unwrap_or_else(|| panic!("no series {label} in {l:?}"));
        assert_eq!(s.stats.count, 9999, "{label}");
        assert_eq!(s.attributes["source"], w);
        assert_eq!(s.attributes["mode"], "consecutive");
        assert!(s.attributes.contains_key("resolution_ns"), "{label}");
        assert!(s.attributes["cost_per_read_ns"].as_f64().unwrap() > 0.0);
        let buckets: u64 = s.histogram.buckets.iter().map(|b| b[1]).sum();
        assert_eq!(buckets, 9999);
    }
    // Every known source is listed in the plan, available or not.
    let sources = doc.plan["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 15);
    for s in sources {
        if s["available"] == false {
            assert!(s["unavailable_reason"].as_str().unwrap().len() > 3);
        }
    }
    if cfg!(target_arch = "x86_64") {
        let tsc = sources.iter().find(|s| s["name"] == "tsc").unwrap();
        let hz = tsc["calibration"]["hz"].as_f64().unwrap();
        assert!(hz > 1e6, "{hz}");
        assert!(tsc["calibration"]["uncertainty_hz"].as_f64().unwrap() > 0.0);
        assert!(tsc["calibration"]["invariant"].is_object());
        let tsc_series = doc
            .series
            .iter()
            .find(|s| s.label == "tsc consecutive")
            .unwrap();
        assert_eq!(tsc_series.attributes["frequency_hz"].as_f64().unwrap(), hz);
        assert!(tsc["warp"].is_object());
    }
}

#[test]
fn sparse_and_alternating_modes() {
    let doc = read_doc(
        &Run::new([
            "clock", "--mode", "sparse", "--every", "5ms", "--pairs", "6",
        ])
        .args([
            "-s",
            "monotonic,monotonic-syscall",
            "--warp",
            "0",
            "--no-rt",
        ])
        .json()
        .exits(0),
    );
    assert_eq!(
        labels(&doc),
        vec!["monotonic sparse", "monotonic-syscall sparse"]
    );
    for s in &doc.series {
        assert_eq!(s.stats.count, 6);
        assert_eq!(s.attributes["pairs"], 6);
    }
    assert_eq!(doc.plan["every_ns"], serde_json::json!([5_000_000]));

    let doc = read_doc(
        &Run::new([
            "clock",
            "--mode",
            "alternating",
            "--every",
            "2ms,7ms",
            "--pairs",
            "4",
        ])
        .args(["-s", "realtime", "--warp", "0", "--no-rt", "-q"])
        .json()
        .exits(0),
    );
    assert_eq!(labels(&doc), vec!["realtime alternating"]);
    assert_eq!(doc.series[0].stats.count, 4);
    assert_eq!(
        doc.plan["every_ns"],
        serde_json::json!([2_000_000, 7_000_000])
    );
    // Four wake-ups after gaps of 2, 7, 2, 7 ms: the run took at least 18 ms.
    assert!(doc.duration_ns >= 18_000_000, "{}", doc.duration_ns);
}

#[test]
fn unavailable_sources_are_reported_not_fatal() {
    let foreign = if cfg!(target_arch = "x86_64") {
        "cntvct"
    } else {
        "tsc"
    };
    let out = Run::new(["clock", "-n", "100", "--warp", "0", "--no-rt", "-s"])
        .arg(format!("monotonic,{foreign}"))
        .json()
        .exits(0);
    assert!(out.stdout().contains("unavailable here"));
    let doc = read_doc(&out);
    assert_eq!(labels(&doc), vec!["monotonic consecutive"]);
    let sources = doc.plan["sources"].as_array().unwrap();
    let f = sources.iter().find(|s| s["name"] == foreign).unwrap();
    assert_eq!(f["available"], false);

    // Only unavailable sources: nothing can be measured (exit 1, one line).
    let err = Run::new(["clock", "-n", "100", "--no-rt", "-q", "-s", foreign])
        .exits(1)
        .one_line();
    assert!(err.contains("none of the requested sources"), "{err}");
}

#[test]
fn bad_input_exits_2_with_one_line() {
    for args in [
        &["clock", "--every", "0s"][..],
        &["clock", "--source", "nosuch"],
        &["clock", "--pairs", "0"],
        &["clock", "-n", "1"],
        &["clock", "--every", "1s"],
        &["clock", "--mode", "alternating", "--every", "1s"],
        &["clock", "--mode", "sparse", "--every", "1s,2s"],
        &["clock", "--cpu", "4096"],
        &["clock", "--calibrate", "0"],
        &["period", "--period", "0"],
        &["period", "-l", "1"],
        &["period", "--source", "tsc,nosuch"],
    ] {
        let out = Run::new(args).exits(2);
        out.one_line();
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn list_shows_every_source() {
    let text = Run::new(["clock", "--list"]).exits(0).stdout();
    for id in rtscope_core::clock::SourceId::ALL {
        assert!(text.contains(id.name()), "{}", id.name());
    }
    // --list is a mode of its own: an option it would ignore is refused.
    for args in [
        &["clock", "--list", "-n", "5"][..],
        &["ipc", "--list", "-l", "5"],
        &["load", "--list", "cpu:50"],
    ] {
        let err = Run::new(args).exits(2).stderr();
        assert!(
            err.contains("'--list' cannot be used with"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn period_reports_each_source_and_period() {
    let out = Run::new([
        "period",
        "-i",
        "500us,1ms",
        "-l",
        "40",
        "-s",
        "monotonic,realtime",
    ])
    .args(["--calibrate", "20ms", "--no-rt"])
    .json()
    .exits(0);
    assert!(out.stdout().contains("|jitter| p99"));
    let doc = read_doc(&out);
    assert_eq!(doc.experiment, "period");
    assert_eq!(
        labels(&doc),
        vec![
            "monotonic 500us",
            "realtime 500us",
            "monotonic 1ms",
            "realtime 1ms"
        ]
    );
    for s in &doc.series {
        assert_eq!(s.stats.count, 39);
        let p = &s.attributes["period"];
        assert_eq!(p["periods"], 39);
        let mean = p["mean_period_ns"].as_f64().unwrap();
        let req = p["requested_ns"].as_f64().unwrap();
        assert!((p["error_ns"].as_f64().unwrap() - (mean - req)).abs() < 1e-6);
        assert!(p["jitter_min_ns"].as_f64().unwrap() <= p["jitter_max_ns"].as_f64().unwrap());
    }
}

#[test]
fn period_and_clock_run_under_load_and_report_it() {
    for (exp, args) in [
        ("period", vec!["-i", "1ms", "-l", "200", "-s", "monotonic"]),
        (
            "clock",
            vec![
                "-n",
                "20000",
                "-s",
                "monotonic",
                "--calibrate",
                "20ms",
                "--warp",
                "5ms",
            ],
        ),
    ] {
        let out = Run::new([exp])
            .args(&args)
            .args(["--no-rt", "-q", "--load", "cpu:30", "--load-cpus", "0"])
            .json()
            .exits(0);
        assert!(out.stdout().contains("achieved %"), "{exp}");
        let doc = out.document();
        let loads = doc["loads"].as_array().unwrap();
        assert_eq!(loads.len(), 1, "{exp}");
        assert_eq!(loads[0]["name"], "cpu");
        assert!(loads[0]["counters"]["ops"].as_u64().unwrap() > 0, "{exp}");
        // The worker is gone.
        let pid = loads[0]["instance_reports"][0]["pid"].as_i64().unwrap();
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "{exp}: load {pid} left"
        );
    }
}

#[test]
fn load_command_output_is_a_valid_result_document() {
    let doc = Run::new(["load", "cpu:20", "-D", "1", "--load-cpus", "0"])
        .json()
        .exits(0)
        .document();
    assert_eq!(doc["experiment"], "load");
}

/// A stop interrupts `rtscope period`'s sleep: with a 30 s period the process
/// ends within seconds of SIGINT, with its result (without the fix it ends
/// at the next wake-up, 30 s later).
#[test]
fn period_sigint_ends_a_long_period_at_once() {
    let (out, took) = Run::new(["period", "-i", "30s", "-l", "3", "-s", "monotonic", "-q"])
        .json()
        .interrupt_after(Duration::from_millis(1500), Duration::from_secs(10));
    let doc = read_doc(&out.exits(0));
    assert_eq!(doc.end_reason, rtscope_core::result::EndReason::Interrupted);
    eprintln!("period -i 30s: ended {took:?} after SIGINT");
}

/// Absurd counts and waits are refused at once (exit 2, one line naming the
/// flag) instead of allocating terabytes or sleeping for days.
#[test]
fn absurd_counts_and_waits_are_refused_fast() {
    let cases: &[(&[&str], &str)] = &[
        (&["clock", "-n", "10000000000000"], "--reads"),
        (
            &["clock", "--mode", "sparse", "--pairs", "100000000000000"],
            "--pairs",
        ),
        (&["clock", "--mode", "sparse", "--every", "2h"], "--every"),
        (&["period", "-l", "10000000000000"], "--cycles"),
        (&["period", "-l", "18446744073709551615"], "--cycles"),
        (&["period", "-i", "1ms,5000000h"], "--period"),
    ];
    for (args, flag) in cases {
        let line = Run::new(*args)
            .wait_within(Duration::from_secs(5))
            .exits(2)
            .one_line();
        assert!(line.contains(flag), "{args:?}: {line}");
    }
}
