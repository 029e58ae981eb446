//! The run harness shared by every experiment: output paths, a closed
//! stdout, SIGHUP, messages. Runs the real binary briefly; no latency bounds.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{read_result, read_valid, Run, LIMIT};

/// A short clock run that writes its document to `path`.
fn clock_to(path: &std::path::Path) -> Run {
    Run::new([
        "clock",
        "--no-rt",
        "-s",
        "monotonic",
        "-n",
        "100",
        "-q",
        "--json",
    ])
    .arg(path)
}

#[test]
fn json_to_dev_null_leaves_the_device_alone() {
    // A private node of the null device (1, 3), never the machine's
    // /dev/null: a mutant of the output code would replace that one.
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let null = dir.path().join("null");
    let c = std::ffi::CString::new(null.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string; mknod creates a node or fails.
    if unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) } != 0 {
        let e = std::io::Error::last_os_error();
        assert!(std::env::var_os("CI").is_none(), "mknod: {e}");
        eprintln!("skipped: mknod needs root ({e})");
        return;
    }
    clock_to(&null).exits(0);
    let m = std::fs::metadata(&null).unwrap();
    assert!(
        m.file_type().is_char_device(),
        "the device node was replaced"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn json_through_a_symlink_writes_its_target_and_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target.json");
    let link = dir.path().join("link.json");
    std::fs::write(&target, b"old").unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    clock_to(&link).exits(0);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let v = read_result(&target);
    assert_eq!(v["experiment"], "clock");
}

#[test]
fn two_outputs_on_one_path_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x");
    for extra in [vec!["--report"], vec!["--histogram"], vec!["--raw"]] {
        let e = Run::new(["cyclic", "--no-rt", "-l", "5", "-q", "--json"])
            .arg(&p)
            .args(&extra)
            .arg(dir.path().join(".").join("x"))
            .exits(2)
            .one_line();
        assert!(e.contains("name the same file"), "{e}");
        assert!(!p.exists());
    }
}

#[test]
fn a_closed_stdout_does_not_panic_and_files_are_written() {
    for (args, json) in [
        (&["cyclic", "--no-rt", "-l", "20", "-q"][..], true),
        (&["load", "cpu:10", "-D", "1s", "-q"], false),
        (&["ipc", "--list"], false),
    ] {
        let mut run = Run::new(args).stdout_closed();
        if json {
            run = run.json();
        }
        // The reader is gone: writes get EPIPE.
        let out = run.ran();
        let err = out.stderr();
        assert_ne!(out.status.code(), Some(101), "{args:?} panicked: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        if json {
            out.document();
        }
    }
}

#[test]
fn sighup_stops_a_run_and_writes_its_result() {
    let child = Run::new(["cyclic", "--no-rt", "-t", "1", "-i", "1ms", "-q"])
        .json()
        .spawn();
    std::thread::sleep(Duration::from_millis(800));
    child.signal(libc::SIGHUP);
    // Exit 0: stopped, not killed by the hangup.
    let v = child
        .wait_within(Duration::from_secs(20))
        .exits(0)
        .document();
    assert_eq!(v["end_reason"], "interrupted");
    assert!(v["environment"]["policy"] == "other");
}

#[test]
fn a_negative_priority_names_the_valid_range() {
    let e = Run::new(["cyclic", "-p", "-1", "-l", "1"])
        .exits(2)
        .one_line();
    assert!(e.contains("out of range (1-99"), "{e}");
}

#[test]
fn a_refused_matrix_leaves_no_directory() {
    let run = Run::new([
        "matrix",
        "--no-rt",
        "--periods",
        "1ms",
        "--loads",
        "none",
        "-l",
        "5",
        "--cpus",
        "999",
        "-o",
    ]);
    let out_dir = run.path("m");
    run.arg(&out_dir).exits(2);
    assert!(!out_dir.exists(), "a refused matrix left its directory");
}

#[test]
fn resume_with_other_settings_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("m");
    // One short matrix cell; `extra` changes its plan.
    let matrix = |extra: &[&str]| {
        Run::new([
            "matrix", "--no-rt", "--loads", "none", "-l", "5", "-q", "-t", "1",
        ])
        .args(extra)
        .arg("-o")
        .arg(&out_dir)
    };
    matrix(&["--periods", "1ms"]).exits(0);
    let e = matrix(&["--periods", "2ms", "--resume"])
        .exits(2)
        .one_line();
    assert!(e.contains("--periods"), "{e}");
    matrix(&["--periods", "1ms", "--wake", "timerfd", "--resume"]).exits(2);
    // The same settings resume (nothing left to do).
    matrix(&["--periods", "1ms", "--resume"]).exits(0);
}

#[test]
fn clock_refuses_without_rt_privilege_before_calibrating() {
    // As nobody (no CAP_SYS_NICE, RLIMIT_RTPRIO 0): refused at once, not after
    // the 30 s calibration asked for.
    if Command::new("setpriv").arg("--help").output().is_err() {
        return;
    }
    let t0 = Instant::now();
    let out = Run::new(["clock", "--calibrate", "30s", "-q"])
        .by_nobody()
        .exits(1);
    assert!(out.stderr().contains("--no-rt"));
    assert!(t0.elapsed() < Duration::from_secs(20));
}

/// `--repeat 2` on every experiment: two runs pooled, each kept as a
/// repetition of every series, and the summary says so.
#[test]
fn every_experiment_repeats_and_pools() {
    let cases: [&[&str]; 5] = [
        &["clock", "--no-rt", "--source", "monotonic", "-n", "200"],
        &["period", "--no-rt", "-l", "20"],
        &[
            "ipc",
            "--no-rt",
            "--mech",
            "futex",
            "--pattern",
            "handoff",
            "-l",
            "20",
            "--repetitions",
            "1",
        ],
        &[
            "timer",
            "--no-rt",
            "--api",
            "clock_nanosleep",
            "--delays",
            "500us",
            "-l",
            "20",
        ],
        &["noise", "--no-rt", "-D", "200ms", "--cpus", "0"],
    ];
    for args in cases {
        let out = Run::new(args).args(["--repeat", "2", "-q"]).json().exits(0);
        let stdout = out.stdout();
        assert!(
            stdout.contains("pooled from 2 runs (--repeat 2)"),
            "{}: {stdout}",
            args[0]
        );
        let doc = out.document();
        assert_eq!(doc["plan"]["repeat"], 2, "{}", args[0]);
        for s in doc["series"].as_array().unwrap() {
            let reps = s["repetitions"].as_array().expect("repetitions");
            assert_eq!(reps.len(), 2, "{} {}", args[0], s["label"]);
            let sum: u64 = reps
                .iter()
                .map(|r| r["stats"]["count"].as_u64().unwrap())
                .sum();
            assert_eq!(sum, s["stats"]["count"].as_u64().unwrap(), "{}", args[0]);
        }
    }
}

/// `matrix --repeat 2` runs every cell in two rounds and pools each cell's
/// runs; a complete matrix resumes with nothing to do, and resuming it with
/// another N is refused.
#[test]
fn matrix_repeats_cells_in_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("m");
    let matrix = |extra: &[&str]| {
        Run::new([
            "matrix",
            "--no-rt",
            "--loads",
            "none",
            "--periods",
            "1ms,2ms",
            "-l",
            "10",
            "-t",
            "1",
        ])
        .args(extra)
        .arg("-o")
        .arg(&out_dir)
    };
    let err = matrix(&["--repeat", "2"]).exits(0).stderr();
    // Rounds, not cell after cell: the first cell's second run comes after
    // the second cell's first.
    let second_cell_first = err.find("p2ms-none (round 1/2)").expect(&err);
    let first_cell_second = err.find("p1ms-none (round 2/2)").expect(&err);
    assert!(second_cell_first < first_cell_second, "{err}");
    for cell in ["p1ms-none", "p2ms-none"] {
        let doc = read_result(&out_dir.join(format!("{cell}.json")));
        assert_eq!(doc["plan"]["repeat"], 2);
        let s = &doc["series"][0];
        assert_eq!(s["stats"]["count"], 20, "{cell}");
        assert_eq!(s["repetitions"].as_array().unwrap().len(), 2);
    }
    let index = read_valid(&out_dir.join("matrix.json"), "matrix-schema.json");
    assert!(index["cells"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["status"] == "done"));
    matrix(&["--repeat", "2", "--resume", "-q"]).exits(0);
    matrix(&["--repeat", "3", "--resume", "-q"]).exits(2);
}

/// `rtscope pool`: single runs made apart (e.g. alternately with another
/// setting's runs) pooled as `--repeat` pools them; `compare` then uses the
/// spread between them. Mismatched inputs are refused with one line.
#[test]
fn pool_joins_single_runs_and_refuses_mismatches() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let cyclic = |period: &str, out: &std::path::Path| {
        Run::new([
            "cyclic", "--no-rt", "-t", "1", "-l", "30", "-q", "-i", period, "--json",
        ])
        .arg(out)
        .exits(0);
    };
    for n in ["a1.json", "a2.json", "a3.json"] {
        cyclic("1ms", &p(n));
    }
    cyclic("2ms", &p("b.json"));
    Run::new(["pool"])
        .args([p("a1.json"), p("a2.json"), p("a3.json")])
        .arg("-o")
        .arg(p("a.json"))
        .exits(0);
    let doc = read_result(&p("a.json"));
    assert_eq!(doc["plan"]["repeat"], 3);
    assert_eq!(doc["series"][0]["stats"]["count"], 90);
    assert_eq!(doc["series"][0]["repetitions"].as_array().unwrap().len(), 3);
    let text = Run::new(["compare"])
        .args([p("a.json"), p("a.json")])
        .exits(0)
        .stdout();
    assert!(text.contains("between runs: 3 vs 3 repetitions"), "{text}");
    // Another period, an already pooled input, the output onto an input.
    for (inputs, out, says) in [
        (vec!["a1.json", "b.json"], "x.json", "period_ns"),
        (vec!["a.json", "a1.json"], "x.json", "already pooled"),
        (vec!["a1.json", "a2.json"], "a1.json", "input file"),
        (vec!["a1.json", "a2.json", "a1.json"], "x.json", "same run"),
    ] {
        let e = Run::new(["pool"])
            .args(inputs.iter().map(|n| p(n)))
            .arg("-o")
            .arg(p(out))
            .exits(2)
            .one_line();
        assert!(e.contains(says), "{e}");
    }
}

/// A missing required argument is named on the one error line.
#[test]
fn a_missing_argument_is_named_on_one_line() {
    let e = Run::new(["matrix"]).exits(2).one_line();
    assert!(e.contains("not provided: --out <DIR>"), "{e}");
}

// The tests' own helper (tests/common/run.rs): it never hangs and never
// leaves a child behind.

/// Whether process `pid` is gone (reaped).
fn gone(pid: u32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// The message of a panic `f` raises.
fn panic_of(f: impl FnOnce()) -> String {
    let e = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("a panic");
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn a_run_past_its_limit_is_killed_and_fails_with_its_stderr() {
    let mut child = Run::new(["cyclic", "--no-rt", "-t", "1", "-D", "60s"]).spawn();
    let pid = child.id();
    // Its first words on stderr (the --no-rt warning), so that they are shown.
    let said = child.wait_for_line(true, Duration::from_secs(30), |l| {
        l.starts_with("warning: ").then(|| l.to_string())
    });
    let t0 = Instant::now();
    let msg = panic_of(|| {
        child.wait_within(Duration::from_millis(500));
    });
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert!(msg.contains("still running after 500ms"), "{msg}");
    assert!(msg.contains("rtscope cyclic --no-rt -t 1 -D 60s"), "{msg}");
    assert!(msg.contains(&said), "{msg}");
    assert!(gone(pid), "process {pid} left running");
}

#[test]
fn a_wait_for_what_never_comes_ends_with_the_child() {
    let mut child = Run::new(["--version"]).spawn();
    let msg = panic_of(|| child.wait_for("nothing", LIMIT, || false));
    assert!(msg.contains("before nothing"), "{msg}");
    assert!(gone(child.id()));
    let mut child = Run::new(["cyclic", "--no-rt", "-t", "1", "-D", "60s"]).spawn();
    let msg = panic_of(|| child.wait_for("nothing", Duration::from_millis(300), || false));
    assert!(msg.contains("no nothing within 300ms"), "{msg}");
    assert!(gone(child.id()));
    // end_within: killed at its limit, and how it ended comes back.
    let child = Run::new(["cyclic", "--no-rt", "-t", "1", "-D", "60s"]).spawn();
    let pid = child.id();
    let out = child.end_within(Duration::from_millis(300));
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{:?}", out.status);
    assert!(gone(pid), "process {pid} left running");
}

#[test]
fn a_wait_for_a_file_or_a_handler_returns_once_it_is_there() {
    let mut child = Run::new(["cyclic", "--no-rt", "-t", "1", "-D", "60s", "-q"])
        .args(["--checkpoint", "1s"])
        .json()
        .spawn();
    let json = child.json_path();
    child.wait_for_file(&json, Duration::from_secs(30));
    assert!(json.exists());
    child.catches_sigint();
    assert!(common::catches_sigint(child.id()));
    child.interrupt(LIMIT).exits(0);
}

#[test]
fn a_dropped_child_is_killed_and_a_wrong_exit_shows_stderr() {
    let child = Run::new(["cyclic", "--no-rt", "-t", "1", "-D", "60s"]).spawn();
    let pid = child.id();
    drop(child);
    assert!(gone(pid), "process {pid} left running");
    let msg = panic_of(|| {
        Run::new(["cyclic", "-i", "0"]).exits(0);
    });
    assert!(msg.contains("rtscope cyclic -i 0: exit status: 2"), "{msg}");
    assert!(msg.contains("error"), "{msg}");
}
