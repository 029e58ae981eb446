//! Stops: one stop delivered twice (as GNU `timeout` does: to the process,
//! then to its process group) is one stop, and the run's results are
//! written; a stop during a calibration ends the run soon, with its results;
//! the other fatal signals give back the run's trace instance. Each child
//! runs in its own process group, so that the group signal never reaches
//! the test runner. The time limits here are liveness bounds (a run that
//! ignored the stop would take a minute), never latency bounds.

mod common;

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::time::{Duration, Instant};

use common::{alongside, instances_of, own_tracefs_mounts_of, Run, Spawned, LIMIT};

/// How long a run may take to end after its stop: generous (a loaded
/// 2-CPU machine, a debug build); a run that ignored the stop runs on for
/// its whole minute.
const AFTER_STOP: Duration = Duration::from_secs(5);

/// `args` in a process group of its own.
fn own_group<const N: usize>(args: [&str; N]) -> Run {
    Run::new(args).setup(|c| {
        c.process_group(0);
    })
}

/// The stop as `timeout` sends it: to the process, then to its process
/// group. 30 ms apart, so that the two deliveries never merge into one
/// pending signal (`timeout`'s come microseconds to milliseconds apart).
fn stop_like_timeout(child: &Spawned, sig: i32) {
    child.signal(sig);
    std::thread::sleep(Duration::from_millis(30));
    rtscope_core::sys::killpg(child.pid(), sig).unwrap();
}

/// `cyclic -D duration` whose document goes to a FIFO in `dir` that nobody
/// reads yet (the run waits for a reader at its end), its handlers wired.
fn cyclic_to_a_fifo(dir: &std::path::Path, duration: &str) -> (Spawned, std::path::PathBuf) {
    let fifo = dir.join("doc.json");
    common::mkfifo(&fifo);
    let mut child = own_group(["cyclic", "-t", "1", "-i", "1ms", "-D", duration, "-q"])
        .arg("--json")
        .arg(&fifo)
        .spawn();
    child.catches_sigint();
    (child, fifo)
}

/// `check --measure --measure-time 10s`, stopped by `stop` `after_ms` into
/// the probe whose progress line holds `probe`; it must end soon after.
fn check_measure_stopped_in(probe: &str, after_ms: u64, stop: impl Fn(&Spawned)) -> common::Ran {
    let mut child = own_group(["check", "--measure", "--measure-time", "10s"]).spawn();
    child.wait_for_line(true, LIMIT, |l| l.contains(probe).then_some(()));
    child.catches_sigint();
    std::thread::sleep(Duration::from_millis(after_ms));
    let sent = Instant::now();
    stop(&child);
    let out = child.wait_within(LIMIT);
    assert!(
        sent.elapsed() < AFTER_STOP,
        "ended {:?} after the stop",
        sent.elapsed()
    );
    out
}

/// `cyclic` on the last CPU for a minute, outliers above `threshold` traced,
/// with `extra` options, in a process group of its own.
fn traced_cyclic(threshold: &str, extra: &[&str]) -> Run {
    own_group([
        "cyclic",
        "-a",
        &last_cpu(),
        "-D",
        "60",
        "-q",
        "--trace-outliers",
        threshold,
    ])
    .args(extra)
}

/// The last online CPU (the measuring CPU of the hwlat runs).
fn last_cpu() -> String {
    rtscope_core::units::online_cpus()
        .last()
        .unwrap()
        .to_string()
}

/// A user-space hwlat run on the last CPU, its lock file its own (another
/// test's run beside it is not refused).
fn hwlat_user_space(lock: &std::path::Path, duration: &str, calibrate: &str) -> Run {
    let cpu = last_cpu();
    own_group([
        "hwlat",
        "--method",
        "user-space",
        "-a",
        &cpu,
        "-D",
        duration,
        "--calibrate",
        calibrate,
        "-q",
    ])
    .env("RTSCOPE_HWLAT_LOCK", lock)
    .json()
}

#[test]
fn a_stop_sent_twice_as_timeout_does_loses_no_run() {
    let _turn = alongside();
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let mut child = own_group(["cyclic", "-t", "1", "-i", "1ms", "-D", "60", "-q"])
            .json()
            .spawn();
        child.catches_sigint();
        std::thread::sleep(Duration::from_millis(300));
        stop_like_timeout(&child, sig);
        let out = child.wait_within(LIMIT);
        let doc = out.exits(0).document();
        assert_eq!(doc["end_reason"], "interrupted", "signal {sig}");
    }
}

#[test]
fn the_cyclictest_front_end_prints_its_max_latencies_after_a_timeout() {
    let _turn = alongside();
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let mut child = own_group([
            "cyclictest",
            "-i100",
            "-q",
            "-m",
            "-h",
            "100",
            "-t1",
            "-a0",
            "-D",
            "60",
            "--no-rtscope-json",
        ])
        .spawn();
        child.catches_sigint();
        std::thread::sleep(Duration::from_millis(300));
        stop_like_timeout(&child, sig);
        let out = child.wait_within(LIMIT).exits(0);
        let stdout = out.stdout();
        assert!(
            stdout.lines().any(|l| l.starts_with("# Max Latencies")),
            "signal {sig}: {stdout}"
        );
    }
}

#[test]
fn a_second_interrupt_30ms_later_is_the_same_stop_and_the_trace_is_removed() {
    let _turn = alongside();
    let lock = tempfile::tempdir().unwrap();
    for cmd in ["hwlat", "noise --trace"] {
        let mut child = if cmd == "hwlat" {
            hwlat_user_space(&lock.path().join("lock"), "60", "50ms").spawn()
        } else {
            own_group(["noise", "--trace", "-a", &last_cpu(), "-D", "60", "-q"])
                .json()
                .spawn()
        };
        let pid = child.id();
        // The handlers are wired before the instance is made (both are
        // there once it is).
        child.wait_for("its trace instance", LIMIT, || {
            !instances_of(pid).is_empty()
        });
        child.catches_sigint();
        stop_like_timeout(&child, libc::SIGINT);
        let out = child.wait_within(LIMIT);
        assert_eq!(
            out.exits(0).document()["end_reason"],
            "interrupted",
            "{cmd}"
        );
        assert!(
            instances_of(pid).is_empty(),
            "{cmd}: {:?}",
            instances_of(pid)
        );
        assert!(own_tracefs_mounts_of(pid).is_empty(), "{cmd}");
    }
}

#[test]
fn other_fatal_signals_remove_the_trace_instance() {
    let _turn = alongside();
    let lock = tempfile::tempdir().unwrap();
    for sig in [libc::SIGUSR1, libc::SIGALRM] {
        let mut child = hwlat_user_space(&lock.path().join("lock"), "60", "50ms").spawn();
        let pid = child.id();
        // The handlers are wired before the instance is made (both are
        // there once it is).
        child.wait_for("its trace instance", LIMIT, || {
            !instances_of(pid).is_empty()
        });
        child.catches_sigint();
        child.signal(sig);
        let out = child.wait_within(LIMIT);
        // It dies of the signal, as without a handler, after its clean-up.
        assert_eq!(out.status.signal(), Some(sig), "{:?}", out.status);
        assert!(
            instances_of(pid).is_empty(),
            "signal {sig}: {:?}",
            instances_of(pid)
        );
        assert!(own_tracefs_mounts_of(pid).is_empty(), "signal {sig}");
    }
}

#[test]
fn a_stop_during_a_calibration_ends_the_run_soon_with_its_results() {
    let _turn = alongside();
    let lock = tempfile::tempdir().unwrap();
    let cpu = last_cpu();
    let runs: Vec<(&str, Run)> = vec![
        (
            "hwlat",
            hwlat_user_space(&lock.path().join("lock"), "1", "60s"),
        ),
        (
            "noise",
            own_group([
                "noise",
                "-a",
                &cpu,
                "-D",
                "1",
                "--calibrate",
                "60s",
                "-s",
                "tsc",
                "-q",
            ])
            .json(),
        ),
        (
            "period",
            own_group(["period", "--calibrate", "60s", "-s", "tsc", "-q"]).json(),
        ),
        (
            "clock",
            own_group(["clock", "--calibrate", "60s", "-s", "tsc", "-q"]).json(),
        ),
        (
            "clock --warp",
            own_group([
                "clock",
                "--calibrate",
                "10ms",
                "--warp",
                "60s",
                "-s",
                "tsc",
                "-q",
            ])
            .json(),
        ),
    ];
    for (what, run) in runs {
        let mut child = run.spawn();
        child.catches_sigint();
        // Well inside the minute of calibration (or warp test).
        std::thread::sleep(Duration::from_millis(1500));
        let sent = Instant::now();
        child.signal(libc::SIGINT);
        let out = child.wait_within(LIMIT);
        let took = sent.elapsed();
        assert!(took < AFTER_STOP, "{what}: ended {took:?} after the stop");
        let doc = out.exits(0).document();
        assert_eq!(doc["end_reason"], "interrupted", "{what}");
    }
}

#[test]
fn durations_past_their_bound_are_refused() {
    let _turn = alongside();
    for args in [
        vec!["hwlat", "--calibrate", "100d"],
        vec!["noise", "--calibrate", "100d"],
        vec!["period", "--calibrate", "100d"],
        vec!["clock", "--calibrate", "100d"],
        vec!["clock", "--warp", "11m"],
        vec!["cyclic", "-D", "366d"],
        vec!["noise", "-D", "366d"],
        vec!["cyclic", "--start-delay", "2h"],
        vec!["compare", "a.json", "b.json", "--tail-threshold", "2h"],
    ] {
        let line = Run::new(&args).exits(2).one_line();
        assert!(line.contains("at most"), "{args:?}: {line}");
    }
    // And --help shows each bound.
    for (cmd, shown) in [
        ("hwlat", "at most 10m"),
        ("noise", "at most 10m"),
        ("period", "at most 10m"),
        ("clock", "at most 10m"),
        ("cyclic", "at most 365d"),
    ] {
        let help = Run::new([cmd, "--help"]).exits(0).stdout();
        assert!(help.contains(shown), "{cmd}: {help}");
    }
}

#[test]
fn a_second_stop_while_the_results_are_written_exits_at_once() {
    let _turn = alongside();
    // The document goes to a FIFO nobody reads: after the first stop the
    // run waits for a reader (up to a minute); a second stop, a second
    // later, is a person's "now", and ends the process at once.
    let d = tempfile::tempdir().unwrap();
    let (mut child, _fifo) = cyclic_to_a_fifo(d.path(), "60");
    // The handlers are there from the start; the run, a moment later (a
    // stop before it begins ends the process at once).
    std::thread::sleep(Duration::from_millis(500));
    child.sigint();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(child.running(), "it ended without a reader of its FIFO");
    let sent = Instant::now();
    child.sigint();
    let out = child.wait_within(LIMIT);
    assert!(
        sent.elapsed() < AFTER_STOP,
        "ended {:?} after the second stop",
        sent.elapsed()
    );
    assert_eq!(out.status.code(), Some(130));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("exiting at once"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_stop_during_one_probe_of_check_measure_ends_the_others_too() {
    let _turn = alongside();
    // In the noise probe (a run with its handlers): after the IRQ count.
    let out = check_measure_stopped_in("of OS noise", 500, |c| c.signal(libc::SIGTERM));
    // The wake-up latency probe after it begins stopped: not 10 s more.
    assert!(out.stdout().contains("isolcpus"), "{}", out.stdout());
}

#[test]
fn a_stop_during_the_irq_count_of_check_measure_keeps_the_audit() {
    let _turn = alongside();
    let out = check_measure_stopped_in("of IRQ counting", 300, |c| {
        stop_like_timeout(c, libc::SIGINT)
    });
    let text = out.stdout();
    // The audit is written, the probes not run are said, none is cited
    // with numbers it did not measure.
    assert!(text.contains("isolcpus"), "{text}");
    assert!(text.contains("IRQs/s"), "{text}");
    assert!(text.contains("(counted over "), "{text}");
    assert!(
        text.contains(
            "--measure was stopped: the OS noise, hwlat and wake-up latency probes did not run"
        ),
        "{text}"
    );
    assert!(!text.contains("rtscope cyclic 1 ms:"), "{text}");
    assert!(!text.contains("-0 IRQs/s"), "{text}");
}

/// A stop in the first milliseconds of a traced run (the handlers are
/// installed before the command starts): the process takes back its trace
/// instance and its own tracefs mount, whatever it was doing.
#[test]
fn a_stop_during_set_up_leaves_no_trace_instance_or_mount() {
    let _turn = alongside();
    for ms in [5, 20, 40, 60, 80, 120, 200] {
        let child = traced_cyclic("100us", &[]).json().spawn();
        let pid = child.id();
        std::thread::sleep(Duration::from_millis(ms));
        child.signal(libc::SIGINT);
        let out = child.wait_within(LIMIT);
        // Killed before main installed the handlers (nothing taken yet),
        // stopped before the run began (130, said on stderr) or during it
        // (0, results written).
        assert!(
            out.status.signal() == Some(libc::SIGINT) || [0, 130].contains(&out.code()),
            "{ms} ms: {:?} {}",
            out.status,
            out.stderr()
        );
        assert!(
            instances_of(pid).is_empty(),
            "{ms} ms: {:?}",
            instances_of(pid)
        );
        assert!(
            own_tracefs_mounts_of(pid).is_empty(),
            "{ms} ms: {:?}",
            own_tracefs_mounts_of(pid)
        );
        let dirs = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&rtscope_core::trace::own_mount_prefix(pid))
            })
            .count();
        assert_eq!(
            dirs,
            0,
            "{ms} ms: its mount point is left ({:?}, {})",
            out.status,
            out.stderr()
        );
    }
}

/// A traced run under a load that floods the trace (a million task switches
/// a second): the reads of the trace are bounded in time, so the stop still
/// ends the run soon, and the document says what was not read.
#[test]
fn a_flood_of_trace_events_does_not_hold_the_stop() {
    let _turn = alongside();
    let mut child = traced_cyclic("1s", &["--load", "messaging,instances=1"])
        .json()
        .spawn();
    let pid = child.id();
    child.wait_for("its trace instance", LIMIT, || {
        !instances_of(pid).is_empty()
    });
    std::thread::sleep(Duration::from_millis(1500));
    let sent = Instant::now();
    stop_like_timeout(&child, libc::SIGINT);
    let out = child.wait_within(LIMIT);
    assert!(
        sent.elapsed() < AFTER_STOP,
        "ended {:?} after the stop",
        sent.elapsed()
    );
    let doc = out.exits(0).document();
    assert_eq!(doc["end_reason"], "interrupted");
    assert!(doc["trace"]["events_read"].as_u64().unwrap() > 0);
}

/// One stop after the run has ended, while its results are written (here:
/// the document waits for a reader of its FIFO): taken as a stop, the
/// results are still written (it ended the process at once, results lost).
#[test]
fn one_stop_while_the_results_are_written_still_writes_them() {
    let _turn = alongside();
    let d = tempfile::tempdir().unwrap();
    let (mut child, fifo) = cyclic_to_a_fifo(d.path(), "1");
    // The run ends by its duration, then waits for a reader.
    std::thread::sleep(Duration::from_millis(2500));
    assert!(child.running(), "it ended without a reader of its FIFO");
    stop_like_timeout(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.running(),
        "the stop ended it before the results were written"
    );
    let text = std::fs::read_to_string(&fifo).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["end_reason"], "duration");
    let out = child.wait_within(LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", out.stderr());
}
