//! A real-time `cpu` load (`policy=fifo,priority=N,every=E,for=F`), driving
//! the real binary: its worker runs SCHED_FIFO at N, is named `rtscope-cpu`,
//! keeps its own schedule (a small CPU share, no SIGSTOP) and is reaped; the
//! refusals before anything starts are one line and exit 2. Where this
//! process may not use SCHED_FIFO (not root, no real-time budget) the tests
//! that need it say so and pass. No timing bound is asserted.

use std::time::Duration;

mod common;

use common::{alongside, Run, LIMIT};

/// Whether this process may use SCHED_FIFO at `prio` (a thread tries it and ends).
fn fifo_allowed(prio: i32) -> bool {
    std::thread::spawn(move || rtscope_core::sys::set_scheduler(libc::SCHED_FIFO, prio).is_ok())
        .join()
        .unwrap_or(false)
}

/// `(comm, state, pgrp, rt_priority, policy)` of `pid`, from /proc.
fn stat_of(pid: i32) -> Option<(String, String, i32, u64, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = s.find('(')?;
    let close = s.rfind(')')?;
    let comm = s[open + 1..close].to_string();
    let f: Vec<&str> = s[close + 1..].split_whitespace().collect();
    // Fields 3 (state), 5 (pgrp), 40 (rt_priority), 41 (policy) of proc(5).
    Some((
        comm,
        f.first()?.to_string(),
        f.get(2)?.parse().ok()?,
        f.get(37)?.parse().ok()?,
        f.get(38)?.parse().ok()?,
    ))
}

/// Children of `parent`.
fn children(parent: u32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rfind(')')
                    .and_then(|i| s[i + 1..].split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(parent)
            })
        })
        .collect()
}

#[test]
fn fifo_load_is_real_time_named_self_timed_and_reaped() {
    if !fifo_allowed(10) {
        eprintln!(
            "skipped: this process may not use SCHED_FIFO (not root, or no real-time budget)"
        );
        return;
    }
    let _g = alongside();
    let spec = "cpu:100,policy=fifo,priority=10,every=50ms,for=2ms";
    let mut run = Run::new(["load", spec, "--load-cpus", "0", "-D", "1s"])
        .json()
        .spawn();
    let parent = run.id();
    // While it runs: the worker, as the kernel sees it.
    let mut seen = None;
    run.wait_for("a SCHED_FIFO load worker", Duration::from_secs(20), || {
        seen = children(parent)
            .into_iter()
            .find_map(|p| stat_of(p).map(|s| (p, s)))
            .filter(|(_, s)| s.4 == libc::SCHED_FIFO as u64);
        seen.is_some()
    });
    let (pid, (comm, _, pgrp, prio, policy)) = seen.unwrap();
    assert_eq!(comm, "rtscope-cpu");
    assert_eq!(policy, libc::SCHED_FIFO as u64, "policy of {pid}");
    assert_eq!(prio, 10, "rt_priority of {pid}");
    // Its own group, never stopped by rtscope (a self-timed load).
    assert_eq!(pgrp, pid);
    let ran = run.wait_within(LIMIT).exits(0);
    let doc = ran.document();
    let l = &doc["loads"][0];
    assert_eq!(l["spec"], spec);
    assert_eq!(l["policy"], "fifo", "{l}");
    assert_eq!(l["priority"], 10, "{l}");
    assert!(l["errors"].as_array().unwrap().is_empty(), "{l}");
    assert!(l["counters"]["ops"].as_u64().unwrap() > 0, "{l}");
    let inst = &l["instance_reports"][0];
    assert_eq!(inst["pid"], pid);
    assert_eq!(inst["exit"], "exited 0", "{inst}");
    // Its CPU share over the window is small (2 ms of every 50: about 4 %;
    // only "well under half" is asserted).
    let sc = &l["schedule"];
    assert!(sc["on_count"].as_u64().unwrap() > 0, "{sc}");
    let on_s = sc["on_s"].as_f64().unwrap();
    let window_s = l["window_s"].as_f64().unwrap();
    let used_s = l["achieved_cpu_percent"][0].as_f64().unwrap() / 100.0 * on_s;
    assert!(
        used_s < window_s / 2.0,
        "{used_s} s of CPU in {window_s} s: {l}"
    );
    assert!(on_s < window_s / 2.0, "{sc}");
    // Reaped: nothing is left of its group.
    assert!(
        stat_of(pid).is_none_or(|s| s.2 != pid),
        "worker {pid} still there"
    );
}

/// Refused before anything starts, in one line, exit 2: a priority without
/// a real-time policy, one out of range, a level with a self-timed
/// schedule, and (as nobody) a policy this process may not use.
#[test]
fn real_time_refusals() {
    for (spec, want) in [
        ("cpu,priority=5", "needs policy=fifo or policy=rr"),
        ("cpu,policy=fifo,priority=100", "expected 1 to 99"),
        ("cpu,policy=rr,priority=0", "expected 1 to 99"),
        ("cpu:50,policy=fifo,every=100ms,for=2ms", "give no level"),
        ("cpu,policy=batch", "one of other, fifo, rr"),
    ] {
        let e = Run::new(["load", spec, "-D", "1s"]).exits(2).one_line();
        assert!(e.contains(want), "{spec}: {e}");
    }
    let setpriv = std::process::Command::new("setpriv")
        .arg("--help")
        .output()
        .is_ok();
    if setpriv && rtscope_core::sys::geteuid() == 0 {
        let spec = "cpu,policy=fifo,priority=20,every=100ms,for=1ms";
        let e = Run::new(["load", spec, "-D", "1s", "--load-cpus", "0"])
            .by_nobody()
            .exits(2)
            .one_line();
        assert!(
            e.contains("not allowed to use SCHED_FIFO priority 20"),
            "{e}"
        );
        assert!(e.trim_end().ends_with("or use policy=other"), "{e}");
    }
}
