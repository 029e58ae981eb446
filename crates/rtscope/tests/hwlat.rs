//! `rtscope hwlat`: the user-space method on this machine (whose kernel has
//! no hwlat tracer), and the tracer method on a fake tracefs
//! (`RTSCOPE_HWLAT_TRACEFS`) whose per-CPU pipe is a FIFO fed with lines the
//! 6.1 RT guest of the kernel lab printed: the document, the live gauges,
//! and tracefs byte for byte as it was after every way out (the end,
//! SIGINT, SIGTERM, a second SIGINT, an error, a refusal, a run killed
//! outright and the next one). Never a latency bound.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{alongside, instances_of, mkfifo, own_tracefs_mounts_of, Run, Spawned, LIMIT};

fn last_cpu() -> usize {
    *rtscope_core::units::online_cpus().last().unwrap()
}

/// Lines of the kernel lab's 6.1 PREEMPT_RT x86-64 guest (per-CPU
/// trace_pipe of CPU 1): two stalls of the host, NMIs.
const LINES: &str = "\
           <...>-167     [001] dn.....     5.652892: #1     inner/outer(us): 2967/8276  ts:1795648606.299571570 count:846
           <...>-167     [001] dn.....     7.768887: #3     inner/outer(us): 108190/14203 ts:1795648608.452362880 count:219 nmi-total:10297 nmi-count:3
           <...>-167     [001] d......     7.944639: #4     inner/outer(us): 109772/32116 ts:1795648609.526552000 count:342 nmi-total:361 nmi-count:2
";

/// A fake tracefs as the 6.1 RT guest has it, its files without a final
/// newline so that what rtscope writes back is byte for byte what it read;
/// CPU 0's trace_pipe is a FIFO.
fn fake_tracefs() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (f, v) in [
        (
            "available_tracers",
            "timerlat osnoise hwlat blk function nop",
        ),
        ("current_tracer", "nop"),
        ("tracing_on", "1"),
        ("tracing_thresh", "0"),
        ("tracing_max_latency", "0"),
        ("tracing_cpumask", "3"),
        ("buffer_size_kb", "1410"),
        ("set_event", ""),
        ("hwlat_detector/width", "500000"),
        ("hwlat_detector/window", "1000000"),
        ("hwlat_detector/mode", "round-robin"),
    ] {
        let p = d.path().join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, v).unwrap();
    }
    std::fs::create_dir_all(d.path().join("per_cpu/cpu0")).unwrap();
    mkfifo(&d.path().join("per_cpu/cpu0/trace_pipe"));
    d
}

/// Every regular file of a tree with its bytes (the FIFO left out), as
/// text where it is (byte for byte either way).
fn files(root: &Path) -> Vec<(PathBuf, Result<String, Vec<u8>>)> {
    let mut v = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                dirs.push(e.path());
            } else if t.is_file() {
                let b = std::fs::read(e.path()).unwrap();
                v.push((e.path(), String::from_utf8(b).map_err(|e| e.into_bytes())));
            }
        }
    }
    v.sort();
    v
}

/// `rtscope hwlat` with `args` on the tracefs `tracefs`.
fn hwlat(tracefs: &Path, args: &[&str]) -> Run {
    Run::new(["hwlat"])
        .args(args)
        .env("RTSCOPE_HWLAT_TRACEFS", tracefs)
}

/// Waits until `child` has set the fake tracer: `current_tracer` hwlat and
/// `tracing_on` 1, which rtscope writes last (it turns tracing off before its
/// settings), so that every setting is written.
fn until_set(child: &mut Spawned, tracefs: &Path) {
    let read = |f: &str| std::fs::read_to_string(tracefs.join(f)).unwrap();
    child.wait_for("the tracer set", Duration::from_secs(30), || {
        read("current_tracer") == "hwlat" && read("tracing_on").trim() == "1"
    });
}

/// Feeds the recorded lines into CPU 0's pipe (blocks until rtscope reads it).
fn feed(tracefs: &Path) -> std::thread::JoinHandle<()> {
    let p = tracefs.join("per_cpu/cpu0/trace_pipe");
    std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
        f.write_all(LINES.as_bytes()).unwrap();
    })
}

#[test]
fn the_tracer_on_a_fake_tracefs_reads_the_samples_and_gives_it_back() {
    let _turn = alongside();
    let fs = fake_tracefs();
    let before = files(fs.path());
    let child = hwlat(
        fs.path(),
        &[
            "-a",
            "0",
            "-D",
            "2s",
            "--window",
            "1s",
            "--width",
            "950ms",
            "--threshold",
            "10us",
        ],
    )
    .json()
    .spawn();
    let feeder = feed(fs.path());
    let out = child.wait_within(LIMIT);
    feeder.join().unwrap();
    let out = out.exits(0);
    let stdout = out.stdout();
    let doc = out.document();
    assert_eq!(doc["experiment"], "hwlat");
    assert_eq!(doc["plan"]["method_used"], "tracer");
    assert_eq!(doc["end_reason"], "duration");
    let s = &doc["series"][0];
    assert_eq!(s["label"], "cpu 0");
    assert_eq!(s["stats"]["count"], 3);
    assert_eq!(s["stats"]["max_ns"], 109_772_000);
    let a = &s["attributes"];
    assert_eq!(a["method"], "tracer");
    assert_eq!(a["inner_max_ns"], 109_772_000);
    assert_eq!(a["outer_max_ns"], 32_116_000);
    assert_eq!(a["nmi_count"], 5);
    assert_eq!(a["nmi_total_ns"], 10_658_000);
    assert_eq!(a["above_threshold"], 846 + 219 + 342);
    let samples = a["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 3);
    assert_eq!(samples[1]["seq"], 3);
    assert_eq!(samples[1]["inner_ns"], 108_190_000);
    // The SMIs: counted on an Intel CPU with the msr driver, else why not.
    let smi = &doc["plan"]["session"]["smi"];
    assert_eq!(smi["counts"].as_array().unwrap().len(), 1);
    assert_eq!(
        smi["counts"][0].is_null(),
        smi["reason"].is_string(),
        "{smi}"
    );
    assert_eq!(a["smi_count"], smi["counts"][0]);
    // What the tracer was set to, and the run's own check of the restore.
    let t = &doc["plan"]["tracer"];
    assert_eq!(t["width_us"], 950_000);
    assert_eq!(t["window_us"], 1_000_000);
    assert_eq!(t["threshold_us"], 10);
    assert_eq!(t["cpumask"], "1");
    assert_eq!(t["mode"], "round-robin");
    let r = &doc["plan"]["session"]["tracer"]["restored"];
    assert_eq!(r["differences"], serde_json::json!([]));
    assert!(r["error"].is_null());
    assert_eq!(r["before"]["current_tracer"], "nop");
    assert_eq!(doc["plan"]["session"]["tracer"]["max_latency_us"], 0);
    assert!(
        stdout.contains("tracefs: given back as it was (10 files read before and after)"),
        "{stdout}"
    );
    assert!(stdout.contains("method: the kernel's hwlat tracer (window 1s, width 950ms, threshold 10us, round-robin)"), "{stdout}");
    // Byte for byte as it was, the state file gone.
    assert_eq!(files(fs.path()), before);
}

#[test]
fn every_way_out_gives_the_tracer_back() {
    let _turn = alongside();
    use std::os::unix::process::ExitStatusExt;
    for (what, signals) in [
        ("SIGINT", vec![libc::SIGINT]),
        ("SIGTERM", vec![libc::SIGTERM]),
        // One stop delivered twice, as `timeout` does (to the process, then
        // to its group): the same stop, not a second one.
        ("the same stop twice", vec![libc::SIGINT, libc::SIGTERM]),
        // Signals whose default ends the process: the tracer given back
        // first, then the process ends of the signal.
        ("SIGUSR1", vec![libc::SIGUSR1]),
        ("SIGALRM", vec![libc::SIGALRM]),
    ] {
        let fs = fake_tracefs();
        let before = files(fs.path());
        let mut child = hwlat(
            fs.path(),
            &["-a", "0", "-D", "60s", "--width", "900ms", "-q"],
        )
        .json()
        .spawn();
        child.catches_sigint();
        until_set(&mut child, fs.path());
        assert_eq!(
            std::fs::read_to_string(fs.path().join("hwlat_detector/width")).unwrap(),
            "900000"
        );
        for sig in &signals {
            child.signal(*sig);
            std::thread::sleep(Duration::from_millis(30));
        }
        let out = child.wait_within(LIMIT);
        match signals[0] {
            libc::SIGINT | libc::SIGTERM => {
                let doc = out.exits(0).document();
                assert_eq!(doc["end_reason"], "interrupted", "{what}");
            }
            sig => assert_eq!(out.status.signal(), Some(sig), "{what}"),
        }
        assert_eq!(files(fs.path()), before, "{what}");
    }
}

#[test]
fn a_killed_runs_tracer_is_given_back_by_the_next_run() {
    let _turn = alongside();
    let fs = fake_tracefs();
    let before = files(fs.path());
    let mut child = hwlat(fs.path(), &["-a", "0", "-D", "60s", "-q"]).spawn();
    until_set(&mut child, fs.path());
    child.signal(libc::SIGKILL);
    let killed = child.wait_within(LIMIT).id();
    // Left set, with the state file that says by whom.
    assert_eq!(
        std::fs::read_to_string(fs.path().join("current_tracer")).unwrap(),
        "hwlat"
    );
    assert!(fs.path().join(".rtscope-hwlat.state").exists());
    let doc = hwlat(fs.path(), &["-a", "0", "-D", "300ms", "-q"])
        .json()
        .exits(0)
        .document();
    assert!(
        doc["warnings"].as_array().unwrap().iter().any(|w| w
            .as_str()
            .unwrap()
            .contains(&format!("left set by a run that was killed (pid {killed})"))),
        "{}",
        doc["warnings"]
    );
    assert_eq!(
        doc["plan"]["session"]["tracer"]["recovered_from_pid"],
        killed
    );
    assert_eq!(files(fs.path()), before);
}

#[test]
fn someone_elses_tracer_is_refused_and_left_alone() {
    let _turn = alongside();
    let fs = fake_tracefs();
    std::fs::write(fs.path().join("current_tracer"), "function").unwrap();
    let before = files(fs.path());
    let line = hwlat(fs.path(), &["-a", "0", "-D", "1s"])
        .exits(2)
        .one_line();
    assert!(line.contains("current_tracer is 'function'"), "{line}");
    assert_eq!(files(fs.path()), before);
    // Top-level events: someone is tracing.
    std::fs::write(fs.path().join("current_tracer"), "nop").unwrap();
    std::fs::write(fs.path().join("set_event"), "sched:sched_switch").unwrap();
    let before = files(fs.path());
    let line = hwlat(fs.path(), &["-a", "0", "-D", "1s"])
        .exits(2)
        .one_line();
    assert!(
        line.contains("(sched:sched_switch): someone is tracing"),
        "{line}"
    );
    assert_eq!(files(fs.path()), before);
    // No mode file: --mode refused.
    std::fs::write(fs.path().join("set_event"), "").unwrap();
    std::fs::remove_file(fs.path().join("hwlat_detector/mode")).unwrap();
    let line = hwlat(fs.path(), &["-a", "0", "--mode", "per-cpu"])
        .exits(2)
        .one_line();
    assert!(line.contains("has no hwlat_detector/mode"));
    // A CPU without a pipe: an error of the machine's half-way (exit 1),
    // everything given back.
    if last_cpu() > 0 {
        let cpu = last_cpu().to_string();
        let before = files(fs.path());
        let err = hwlat(fs.path(), &["-a", &cpu, "-D", "1s"])
            .exits(1)
            .stderr();
        assert!(
            err.contains(&format!("error: per_cpu/cpu{cpu}/trace_pipe: No such file")),
            "{err}"
        );
        assert_eq!(files(fs.path()), before);
    }
}

#[test]
fn live_gauges_of_the_tracers_samples() {
    let _turn = alongside();
    let fs = fake_tracefs();
    let mut child = hwlat(
        fs.path(),
        &["-a", "0", "-D", "4s", "--listen", "127.0.0.1:0"],
    )
    .spawn();
    let addr = child.listening_on();
    feed(fs.path()).join().unwrap();
    // The samples reach the gauges within a snapshot or two.
    let mut metrics = String::new();
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(100));
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        metrics.clear();
        let _ = s.read_to_string(&mut metrics);
        if metrics.contains("rtscope_latency_max_seconds{series=\"cpu 0\"} 0.109772") {
            break;
        }
    }
    assert!(metrics.contains("experiment=\"hwlat\""), "{metrics}");
    assert!(
        metrics.contains("rtscope_latency_max_seconds{series=\"cpu 0\"} 0.109772"),
        "{metrics}"
    );
    assert!(
        metrics.contains("rtscope_samples_total{series=\"cpu 0\"} 3"),
        "{metrics}"
    );
    child.wait_within(LIMIT).exits(0);
}

#[test]
fn from_user_space_here() {
    let _turn = alongside();
    let cpu = last_cpu();
    let out = Run::new([
        "hwlat",
        "--method",
        "user-space",
        "-a",
        &cpu.to_string(),
        "-D",
        "1s",
        "--calibrate",
        "50ms",
        "-q",
    ])
    .json()
    .exits(0);
    let pid = out.id();
    let stdout = out.stdout();
    assert!(stdout.contains("method: user space (--method user-space): interrupts were on, each figure is an upper bound"), "{stdout}");
    let doc = out.document();
    assert_eq!(doc["experiment"], "hwlat");
    assert_eq!(doc["plan"]["method_used"], "user-space");
    assert!(doc["plan"]["tracer"].is_null());
    assert!(doc["plan"]["session"]["tracer"].is_null());
    assert_eq!(doc["plan"]["session"]["why"], "--method user-space");
    assert_eq!(doc["plan"]["session"]["user_space"]["trace"], true);
    let s = &doc["series"][0];
    assert_eq!(s["label"], format!("cpu {cpu}"));
    let a = &s["attributes"];
    assert_eq!(a["method"], "user-space");
    let (gaps, kept) = (
        a["gaps"].as_u64().unwrap(),
        a["gaps_unexplained"].as_u64().unwrap(),
    );
    assert!(kept <= gaps, "{a}");
    assert_eq!(s["stats"]["count"].as_u64().unwrap(), kept);
    // The engine's own figures of the same CPU: every gap the loop saw (the
    // engine's count leaves out RT throttling's gaps, which hwlat attributes
    // too: here a run can be throttled).
    assert!(a["noise"]["iterations"].as_u64().unwrap() > 0, "{a}");
    let throttled: u64 = a["noise"]["sources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "throttling")
        .map(|s| s["gaps"].as_u64().unwrap())
        .sum();
    assert!(
        a["noise"]["gaps"].as_u64().unwrap() + throttled >= gaps,
        "{a}"
    );
    assert!(doc["warnings"].as_array().unwrap().iter().any(|w| w
        .as_str()
        .unwrap()
        .starts_with("measured from user space: interrupts were on")));
    let smi = &doc["plan"]["session"]["smi"];
    assert_eq!(
        smi["counts"][0].is_null(),
        smi["reason"].is_string(),
        "{smi}"
    );
    // Its trace instance and mount are gone.
    assert!(instances_of(pid).is_empty());
    assert!(own_tracefs_mounts_of(pid).is_empty());
}

#[test]
fn without_the_tracer_auto_says_why() {
    let _turn = alongside();
    let fs = fake_tracefs();
    std::fs::write(fs.path().join("available_tracers"), "blk function nop").unwrap();
    // --method tracer: refused; auto: user space, with the reason (the run
    // itself needs the real tracefs for its events: asked, not made here).
    let line = hwlat(fs.path(), &["-a", "0", "--method", "tracer"])
        .exits(2)
        .one_line();
    assert!(line.contains("--method tracer: this kernel has no hwlat tracer: it needs CONFIG_HWLAT_TRACER; available_tracers: blk function nop"), "{line}");
    let line = hwlat(Path::new("/nonexistent-tracefs"), &["-a", "0"])
        .exits(2)
        .one_line();
    assert!(
        line.contains("is no tracefs (no available_tracers)"),
        "{line}"
    );
    assert!(
        line.contains("needs the hwlat tracer or, without it, kernel trace events"),
        "{line}"
    );
}

#[test]
fn bad_input_is_one_line_exit_2() {
    let _turn = alongside();
    for args in [
        vec!["hwlat", "--width", "1s", "--window", "1s"],
        vec!["hwlat", "--width", "2s"],
        vec!["hwlat", "-a", "4095"],
        vec!["hwlat", "-a", "x"],
        vec!["hwlat", "-D", "0"],
        vec!["hwlat", "-D", "99999999999999h"],
        vec!["hwlat", "--window", "99999999999999999999"],
        vec!["hwlat", "--threshold", "500ns"],
        vec!["hwlat", "--mode", "sideways"],
        vec!["hwlat", "--method", "tracer", "--source", "tsc"],
        vec!["hwlat", "--method", "user-space", "--width", "100ms"],
        vec!["hwlat", "--json", "/nonexistent/dir/h.json"],
    ] {
        Run::new(&args).exits(2).one_line();
    }
    let line = Run::new(["hwlat", "--width", "1s", "--window", "1s"])
        .ran()
        .one_line();
    assert!(
        line.contains("the CPU sampled runs with interrupts off for --width of every --window"),
        "{line}"
    );
}

/// A user-space run on the last CPU whose lock file is `lock` (each test
/// its own: two tests' runs are not refused as each other's).
fn user_space(lock: &Path, args: &[&str]) -> Run {
    let cpu = last_cpu().to_string();
    Run::new(["hwlat", "--method", "user-space", "-a", &cpu])
        .args(args)
        .env("RTSCOPE_HWLAT_LOCK", lock)
}

#[test]
fn a_second_user_space_run_is_refused_as_a_second_tracer_run_is() {
    let _turn = alongside();
    let d = tempfile::tempdir().unwrap();
    let lock = d.path().join("lock");
    let mut first = user_space(&lock, &["-D", "60", "--calibrate", "50ms", "-q"])
        .json()
        .spawn();
    first.catches_sigint();
    let line = user_space(&lock, &["-D", "1", "--calibrate", "50ms", "-q"])
        .exits(2)
        .one_line();
    assert!(
        line.contains(&format!(
            "another rtscope hwlat run measures from user space (pid {})",
            first.id()
        )),
        "{line}"
    );
    first.sigint();
    assert_eq!(
        first.wait_within(LIMIT).exits(0).document()["end_reason"],
        "interrupted"
    );
    // Its lock went with it.
    user_space(&lock, &["-D", "300ms", "--calibrate", "50ms", "-q"]).exits(0);
}

/// Waits for a stderr line containing `text` while the child still runs
/// (so: said before the run ends), then stops it; returns the document.
fn said_while_running(mut child: Spawned, text: &str) -> serde_json::Value {
    child.wait_for_line(true, LIMIT, |l| l.contains(text).then_some(()));
    assert!(child.running(), "ended before it said {text}");
    child.sigint();
    child.wait_within(LIMIT).exits(0).document()
}

fn has_warning(doc: &serde_json::Value, text: &str) -> bool {
    doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains(text))
}

#[test]
fn options_the_method_does_not_use_are_named_before_the_run() {
    let _turn = alongside();
    // auto on a kernel without the tracer: user space, the tracer's options
    // named as not used (the run's events come from the real tracefs).
    let fs = fake_tracefs();
    std::fs::write(fs.path().join("available_tracers"), "blk function nop").unwrap();
    let d = tempfile::tempdir().unwrap();
    let cpu = last_cpu().to_string();
    let child = hwlat(
        fs.path(),
        &[
            "-a",
            &cpu,
            "-D",
            "60",
            "--calibrate",
            "50ms",
            "--width",
            "100ms",
            "--window",
            "200ms",
            "--mode",
            "per-cpu",
        ],
    )
    .env("RTSCOPE_HWLAT_LOCK", d.path().join("lock"))
    .json()
    .spawn();
    let text = "--window, --width, --mode: not used, as this run measures from user space (they are settings of the kernel's hwlat tracer only)";
    let doc = said_while_running(child, text);
    assert_eq!(doc["plan"]["method_used"], "user-space");
    assert!(has_warning(&doc, text), "{}", doc["warnings"]);
    // auto with the tracer: the user-space options named as not used.
    let fs = fake_tracefs();
    let child = hwlat(fs.path(), &["-a", "0", "-D", "60", "--calibrate", "1s"])
        .json()
        .spawn();
    let feeder = feed(fs.path());
    let text = "--calibrate: not used, as this run uses the kernel's hwlat tracer (it is a setting of the user-space method only)";
    let doc = said_while_running(child, text);
    feeder.join().unwrap();
    assert_eq!(doc["plan"]["method_used"], "tracer");
    assert!(has_warning(&doc, text), "{}", doc["warnings"]);
}

#[test]
fn per_cpu_mode_on_every_cpu_is_said_before_the_run() {
    let _turn = alongside();
    let fs = fake_tracefs();
    let cpus = rtscope_core::units::online_cpus();
    for c in &cpus[1..] {
        std::fs::create_dir_all(fs.path().join(format!("per_cpu/cpu{c}"))).unwrap();
        mkfifo(&fs.path().join(format!("per_cpu/cpu{c}/trace_pipe")));
    }
    let all = rtscope_core::units::format_cpu_list(&cpus);
    let child = hwlat(fs.path(), &["-a", &all, "-D", "60", "--mode", "per-cpu"])
        .json()
        .spawn();
    let doc = said_while_running(child, "per-cpu mode on every online CPU");
    assert!(has_warning(&doc, "per-cpu mode on every online CPU"));
}

#[test]
fn without_tracefs_access_the_reason_is_said_once() {
    let _turn = alongside();
    if !common::tool("setpriv") {
        eprintln!("skipped: no setpriv");
        return;
    }
    let line = Run::new(["hwlat", "-D", "1"])
        .by_nobody()
        .exits(2)
        .one_line();
    assert_eq!(
        line.matches("tracefs is not available").count(),
        1,
        "{line}"
    );
    // tracefs mounted (where it is here) but closed to nobody: said so,
    // not "not mounted".
    let mounted = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| l.contains(" - tracefs ") && !l.contains("/rtscope-tracefs-"));
    if mounted {
        assert!(line.contains("this user may not use it"), "{line}");
        assert!(!line.contains("not mounted"), "{line}");
    }
}

#[test]
fn repeated_runs_count_every_repetitions_gaps() {
    let _turn = alongside();
    let d = tempfile::tempdir().unwrap();
    let doc = user_space(
        &d.path().join("lock"),
        &["-D", "300ms", "--calibrate", "20ms", "--repeat", "3", "-q"],
    )
    .json()
    .exits(0)
    .document();
    let s = &doc["series"][0];
    let reps = s["repetitions"].as_array().unwrap();
    assert_eq!(reps.len(), 3);
    let sum = |k: &str| -> u64 {
        reps.iter()
            .map(|r| r["attributes"][k].as_u64().unwrap())
            .sum()
    };
    let a = &s["attributes"];
    assert_eq!(a["gaps"].as_u64().unwrap(), sum("gaps"), "{a}");
    assert_eq!(
        a["gaps_unexplained"].as_u64().unwrap(),
        sum("gaps_unexplained"),
        "{a}"
    );
    // The pooled count of unexplained gaps is the pooled statistics' count.
    assert_eq!(
        s["stats"]["count"].as_u64().unwrap(),
        sum("gaps_unexplained")
    );
    let n = &a["noise"];
    let noise_sum: u64 = reps
        .iter()
        .map(|r| r["attributes"]["noise"]["iterations"].as_u64().unwrap())
        .sum();
    assert_eq!(n["iterations"].as_u64().unwrap(), noise_sum, "{n}");
}

/// A gate on a series an hwlat run cannot have (its series are `cpu N`):
/// refused before the run (it measured the run, then exit 3).
#[test]
fn a_gate_on_a_series_the_run_cannot_have_is_refused_before_it() {
    let _turn = alongside();
    let line = Run::new([
        "hwlat",
        "-a",
        "0",
        "-D",
        "1",
        "-q",
        "--fail-if",
        "thread 0:max>1s",
    ])
    .exits(2)
    .one_line();
    assert!(
        line.contains("this run has no series 'thread 0' (its series: cpu 0)"),
        "{line}"
    );
}
