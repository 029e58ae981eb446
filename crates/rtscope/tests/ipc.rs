//! Integration tests of `rtscope ipc`: the real binary, short runs. They check
//! structure, exit codes, clean-up and file formats, never a latency bound.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Run, Spawned, LIMIT};

const MECHANISMS: [&str; 13] = [
    "futex",
    "posix-sem",
    "sysv-sem",
    "mutex",
    "condvar",
    "signal",
    "eventfd",
    "pipe",
    "fifo",
    "unix-stream",
    "unix-dgram",
    "posix-mq",
    "sysv-mq",
];

/// The latency series of an ipc document. Every one of them is checked to
/// have no negative latency: a wake-up stamp read on the same clock after the
/// send stamp can never be earlier.
fn latency_series(doc: &serde_json::Value) -> Vec<&serde_json::Value> {
    let lat: Vec<&serde_json::Value> = doc["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["attributes"]["measures"] == "latency")
        .collect();
    for s in &lat {
        let label = &s["label"];
        assert_eq!(s["counters"]["negative"], 0, "{label}: negative latencies");
        if s["stats"]["count"].as_u64().unwrap() > 0 {
            assert!(s["stats"]["min_ns"].as_i64().unwrap() >= 0, "{label}");
        }
    }
    lat
}

/// Processes whose command line contains `token` (a forked receiver keeps its
/// parent's command line). Tests pass a path in their own temporary
/// directory, which no other run's command line holds.
fn processes_with(token: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(token) {
                found.push(format!("{name}: {cmd}"));
            }
        }
    }
    found
}

/// Every SysV object the run recorded is gone from /proc/sysvipc.
fn assert_sysv_removed(doc: &serde_json::Value) -> usize {
    let sem = std::fs::read_to_string("/proc/sysvipc/sem").unwrap_or_default();
    let msg = std::fs::read_to_string("/proc/sysvipc/msg").unwrap_or_default();
    let ids = |table: &str| -> Vec<String> {
        table
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
            .collect()
    };
    let (sem_ids, msg_ids) = (ids(&sem), ids(&msg));
    let mut checked = 0;
    for s in latency_series(doc) {
        for o in s["attributes"]["ipc_objects"].as_array().unwrap() {
            let o = o.as_str().unwrap();
            let (kind, id) = o.split_once(' ').unwrap();
            let live = match kind {
                "sysv_sem" => &sem_ids,
                "sysv_msg" => &msg_ids,
                k => panic!("unknown object kind {k}"),
            };
            assert!(!live.iter().any(|x| x == id), "{o} still exists");
            checked += 1;
        }
    }
    checked
}

#[test]
fn all_mechanisms_produce_full_series_with_repetitions() {
    let out = Run::new([
        "ipc",
        "--mech",
        "all",
        "-l",
        "200",
        "--repetitions",
        "2",
        "--period",
        "200us",
        "-q",
    ])
    .json()
    .exits(0);
    let doc = out.document();
    assert_eq!(doc["experiment"], "ipc");
    assert_eq!(doc["end_reason"], "loops");
    let lat = latency_series(&doc);
    assert_eq!(lat.len(), MECHANISMS.len());
    for m in MECHANISMS {
        let s = lat
            .iter()
            .find(|s| s["attributes"]["mechanism"] == m)
            .unwrap_or_else(|| panic!("no series for {m}"));
        assert_eq!(s["stats"]["count"], 400, "{m}");
        let a = &s["attributes"];
        assert_eq!(a["between"], "threads");
        assert_eq!(a["period_ns"], 200_000);
        assert_eq!(a["repetitions"], 2);
        let reps = a["repetition_summaries"].as_array().unwrap();
        assert_eq!(reps.len(), 2, "{m}");
        for r in reps {
            assert_eq!(r["count"], 200);
            assert!(r["min_ns"].as_i64() <= r["p50_ns"].as_i64());
            assert!(r["p50_ns"].as_i64() <= r["max_ns"].as_i64());
        }
        let label = s["label"].as_str().unwrap();
        assert!(label.starts_with(m) && label.ends_with("200us"), "{label}");
        // Sync mechanisms default to a handoff, data mechanisms to a round trip.
        let natural = if m.contains("sem")
            || ["futex", "mutex", "condvar", "signal", "eventfd"].contains(&m)
        {
            "handoff"
        } else {
            "roundtrip"
        };
        assert_eq!(a["pattern"], natural, "{m}");
    }
    // The driving task's activation latency is its own series, one per experiment.
    let act: Vec<_> = doc["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["attributes"]["measures"] == "activation")
        .collect();
    assert_eq!(act.len(), MECHANISMS.len());
    assert!(act.iter().all(|s| s["label"]
        .as_str()
        .unwrap()
        .starts_with("periodic activation ")
        && s["stats"]["count"] == 400));
    // The terminal table is sorted by median.
    let text = String::from_utf8_lossy(&out.stdout);
    let p50s: Vec<f64> = text
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("periodic activation ("))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .map(|w| w[w.len() - 5].parse::<f64>().unwrap())
        .collect();
    assert_eq!(p50s.len(), MECHANISMS.len(), "{text}");
    assert!(p50s.windows(2).all(|w| w[0] <= w[1]), "{text}");
}

#[test]
fn both_patterns_and_same_cpu_placement() {
    let doc = Run::new([
        "ipc",
        "--mech",
        "futex,pipe,signal",
        "--pattern",
        "handoff,roundtrip",
        "--cpus",
        "0,0",
        "-l",
        "50",
        "--period",
        "200us",
        "-q",
    ])
    .json()
    .exits(0)
    .document();
    let lat = latency_series(&doc);
    assert_eq!(lat.len(), 6);
    for s in lat {
        assert_eq!(s["stats"]["count"], 50);
        assert_eq!(s["attributes"]["sender_cpu"], 0);
        assert_eq!(s["attributes"]["receiver_cpu"], 0);
        assert!(s["label"].as_str().unwrap().contains("cpu0->cpu0"));
    }
}

#[test]
fn between_processes_leaves_no_child_and_no_ipc_object() {
    let run = Run::new([
        "ipc",
        "--between",
        "processes",
        "--mech",
        "all",
        "-l",
        "100",
        "--period",
        "200us",
        "-q",
    ])
    .json();
    let dir = run.dir().to_owned();
    let (run, tmp, _) = private_env(run, &dir);
    let out = run.exits(0);
    let doc = out.document();
    let lat = latency_series(&doc);
    assert_eq!(lat.len(), MECHANISMS.len());
    assert!(lat
        .iter()
        .all(|s| s["stats"]["count"] == 100 && s["attributes"]["between"] == "processes"));
    assert!(processes_with(out.json_path().to_str().unwrap()).is_empty());
    // sysv-sem (1 set) and sysv-mq (2 queues) were recorded and are gone.
    assert_eq!(assert_sysv_removed(&doc), 3);
    assert_no_named_objects(out.id(), MECHANISMS.len(), &tmp);
}

/// No POSIX queue of run `pid`'s first `sessions` experiments exists (asked
/// with mq_open: /dev/mqueue need not be mounted), and no FIFO directory is
/// left in the run's private `tmp`.
fn assert_no_named_objects(pid: u32, sessions: usize, tmp: &Path) {
    for k in 0..sessions {
        for dir in ["fwd", "back"] {
            let name = std::ffi::CString::new(format!("/rtscope-{pid}-{k}-{dir}")).unwrap();
            assert!(
                !rtscope_core::sys::posix_mq_exists(&name).unwrap(),
                "queue {name:?} left behind"
            );
        }
    }
    assert_eq!(ipc_dirs(tmp), Vec::<String>::new(), "FIFO directories left");
}

/// The `rtscope-ipc-*` entries of `tmp`.
fn ipc_dirs(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("rtscope-ipc-"))
        .collect()
}

/// A private TMPDIR and XDG_RUNTIME_DIR (where ipc keeps its state files)
/// under `dir`, so that tests running side by side do not see each other's;
/// also the TMPDIR and the state directory.
fn private_env(run: Run, dir: &Path) -> (Run, PathBuf, PathBuf) {
    let (tmp, runtime) = (dir.join("tmp"), dir.join("run"));
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::create_dir_all(&runtime).unwrap();
    let run = run.env("TMPDIR", &tmp).env("XDG_RUNTIME_DIR", &runtime);
    (run, tmp, runtime.join("rtscope"))
}

/// The ids of the live SysV semaphore sets (`sem`) or message queues (`msg`).
fn live_sysv(table: &str) -> Vec<String> {
    std::fs::read_to_string(format!("/proc/sysvipc/{table}"))
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
        .collect()
}

/// The objects named in the ipc state files of `state_dir`, as "sysv_sem ID".
fn recorded_objects(state_dir: &Path) -> Vec<String> {
    let mut objs = Vec::new();
    let Ok(rd) = std::fs::read_dir(state_dir) else {
        return objs;
    };
    for e in rd.flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap();
        for l in text.lines().filter(|l| l.starts_with("sysv_")) {
            let w: Vec<&str> = l.split(' ').collect();
            objs.push(format!("{} {}", w[0], w[1]));
        }
    }
    objs
}

fn is_live(obj: &str) -> bool {
    let (kind, id) = obj.split_once(' ').unwrap();
    let table = if kind == "sysv_sem" { "sem" } else { "msg" };
    live_sysv(table).iter().any(|x| x == id)
}

/// Polls (up to 5 s) until no process has `token` in its command line.
fn wait_gone(token: &str) {
    for _ in 0..100 {
        if processes_with(token).is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("left running: {:?}", processes_with(token));
}

/// A long `ipc --between processes` run of `mech`, its document asked for.
fn long_run(mech: &str) -> Run {
    Run::new([
        "ipc",
        "--between",
        "processes",
        "--mech",
        mech,
        "-l",
        "100000",
        "--period",
        "200us",
        "-q",
    ])
    .json()
}

/// Starts a [`long_run`] of `mech` in its own process group with a private
/// environment under `dir`; returns once its receiver process runs and has
/// measured a little, with the TMPDIR and state directory.
fn start_long_run(mech: &str, dir: &Path) -> (Spawned, PathBuf, PathBuf) {
    use std::os::unix::process::CommandExt;
    let run = long_run(mech).setup(|c| {
        c.process_group(0);
    });
    let (run, tmp, state) = private_env(run, dir);
    let child = run.spawn();
    wait_for_child(child.id());
    std::thread::sleep(Duration::from_millis(300));
    (child, tmp, state)
}

#[test]
fn sighup_to_the_run_or_its_process_group_leaves_nothing_behind() {
    for (mech, objects) in [("sysv-sem", 1), ("sysv-mq", 2)] {
        for group in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let (child, tmp, state) = start_long_run(mech, dir.path());
            let pid = child.pid();
            if group {
                // What a terminal hangup does: every process of the group.
                rtscope_core::sys::killpg(pid, libc::SIGHUP).unwrap();
            } else {
                rtscope_core::sys::kill(pid, libc::SIGHUP).unwrap();
            }
            let out = child.wait_within(LIMIT);
            let what = format!(
                "{mech}, SIGHUP to the {}",
                if group { "group" } else { "run" }
            );
            assert_eq!(
                out.status.code(),
                Some(0),
                "{what}: {:?} {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            let doc = out.document();
            assert_eq!(doc["end_reason"], "interrupted", "{what}");
            assert_eq!(assert_sysv_removed(&doc), objects, "{what}");
            wait_gone(out.json_path().to_str().unwrap());
            assert_eq!(ipc_dirs(&tmp), Vec::<String>::new(), "{what}");
            assert_eq!(recorded_objects(&state), Vec::<String>::new(), "{what}");
        }
    }
}

#[test]
fn after_sigkill_the_next_run_or_cleanup_removes_exactly_what_was_left() {
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().join("run/rtscope");
    // What the killed runs left (recorded and still there).
    let mut left: Vec<String> = Vec::new();
    for mech in ["posix-mq", "fifo", "sysv-mq", "sysv-sem"] {
        let before = recorded_objects(&state_dir);
        let (child, tmp, _) = start_long_run(mech, dir.path());
        // A new run removed what the killed one before it left.
        for o in &left {
            assert!(!is_live(o), "{mech}: {o} of the killed run is still there");
        }
        child.signal(libc::SIGKILL);
        let killed = child.wait_within(LIMIT);
        // The receiver follows its parent (PR_SET_PDEATHSIG).
        wait_gone(killed.json_path().to_str().unwrap());
        assert_no_named_objects(killed.id(), 1, &tmp);
        left = recorded_objects(&state_dir)
            .into_iter()
            .filter(|o| !before.contains(o))
            .collect();
        let expected = match mech {
            "sysv-mq" => 2, // a round trip: one queue per direction
            "sysv-sem" => 1,
            _ => 0,
        };
        assert_eq!(left.len(), expected, "{mech}: {left:?}");
        for o in &left {
            assert!(is_live(o), "{mech}: {o} is recorded and should still exist");
        }
    }
    let cleanup = |dir: &Path| {
        private_env(Run::new(["ipc", "--cleanup"]), dir)
            .0
            .exits(0)
            .stdout()
    };
    let text = cleanup(dir.path());
    assert_eq!(text.lines().count(), 1, "{text}");
    let id = left[0].strip_prefix("sysv_sem ").unwrap();
    assert!(
        text.starts_with(&format!("removed SysV semaphore set {id} ")),
        "{text}"
    );
    assert!(
        !is_live(&left[0]),
        "{} still exists after --cleanup",
        left[0]
    );
    assert_eq!(recorded_objects(&state_dir), Vec::<String>::new());
    assert_eq!(cleanup(dir.path()), "nothing to clean up\n");
}

/// A SysV object made with ipcmk, removed (by id) when dropped.
struct Foreign {
    kind: &'static str,
    id: String,
}

impl Foreign {
    fn new(kind: &'static str) -> Foreign {
        let flag = if kind == "sem" { "-S" } else { "-Q" };
        let mut cmd = std::process::Command::new("ipcmk");
        if kind == "sem" {
            cmd.args([flag, "1"]);
        } else {
            cmd.arg(flag);
        }
        let out = cmd.output().expect("ipcmk runs");
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        let id = text.trim().rsplit(' ').next().unwrap().to_string();
        Foreign { kind, id }
    }

    /// (key, ctime) from /proc/sysvipc.
    fn key_ctime(&self) -> (String, String) {
        let table = std::fs::read_to_string(format!("/proc/sysvipc/{}", self.kind)).unwrap();
        let w: Vec<&str> = table
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|w| w.get(1) == Some(&self.id.as_str()))
            .expect("object exists")
            .into_iter()
            .collect();
        (w[0].to_string(), w[w.len() - 1].to_string())
    }

    fn exists(&self) -> bool {
        live_sysv(self.kind).contains(&self.id)
    }
}

impl Drop for Foreign {
    fn drop(&mut self) {
        let flag = if self.kind == "sem" { "-s" } else { "-q" };
        let _ = std::process::Command::new("ipcrm")
            .args([flag, &self.id])
            .output();
    }
}

#[test]
fn cleanup_never_removes_an_object_it_cannot_prove_is_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let (cleanup, _, state_dir) = private_env(Run::new(["ipc", "--cleanup"]), dir.path());
    std::fs::create_dir_all(&state_dir).unwrap();
    let sem = Foreign::new("sem");
    let msg = Foreign::new("msg");
    let (sem_key, sem_ctime) = sem.key_ctime();
    let (msg_key, msg_ctime) = msg.key_ctime();
    // A pid that has ended.
    let mut t = std::process::Command::new("true").spawn().unwrap();
    let dead = t.id();
    t.wait().unwrap();
    let me = std::process::id();
    let my_start: String = {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        let rest = stat.rsplit_once(')').unwrap().1.to_string();
        rest.split_whitespace().nth(19).unwrap().to_string()
    };
    let state = |pid: u32, start: &str, line: String| {
        format!("rtscope ipc state v1\nowner {pid} {start}\n{line}\n")
    };
    let files = [
        // The run is dead, but the creation time does not match.
        (
            "ipc-1.state",
            state(
                dead,
                "1",
                format!(
                    "sysv_sem {} {sem_key} {}",
                    sem.id,
                    sem_ctime.parse::<i64>().unwrap() - 7
                ),
            ),
        ),
        // Everything matches, but the run that wrote it is alive.
        (
            "ipc-2.state",
            state(
                me,
                &my_start,
                format!("sysv_msg {} {msg_key} {msg_ctime}", msg.id),
            ),
        ),
        // The run is dead, but the key does not match.
        (
            "ipc-3.state",
            state(dead, "1", format!("sysv_msg {} 12345 {msg_ctime}", msg.id)),
        ),
        // The kind does not match (a queue recorded as a semaphore set).
        (
            "ipc-4.state",
            state(
                dead,
                "1",
                format!("sysv_sem {} {msg_key} {msg_ctime}", msg.id),
            ),
        ),
        // Everything matches, but the file is not this user's.
        (
            "ipc-5.state",
            state(
                dead,
                "1",
                format!("sysv_sem {} {sem_key} {sem_ctime}", sem.id),
            ),
        ),
    ];
    for (name, text) in &files {
        std::fs::write(state_dir.join(name), text).unwrap();
    }
    let nobody = state_dir.join("ipc-5.state");
    std::os::unix::fs::chown(&nobody, Some(65534), Some(65534)).unwrap();
    assert_eq!(cleanup.exits(0).stdout(), "nothing to clean up\n");
    assert!(sem.exists(), "semaphore set {} was removed", sem.id);
    assert!(msg.exists(), "message queue {} was removed", msg.id);
    // The live run's record and the other user's file are kept.
    assert!(state_dir.join("ipc-2.state").exists());
    assert!(nobody.exists());
}

#[test]
fn sigint_in_processes_mode_cleans_up_and_writes_the_result() {
    let child = long_run("sysv-mq,sysv-sem,fifo,posix-mq").spawn();
    let token = child.json_path().to_str().unwrap().to_string();
    // Wait until the receiver runs as a child process, then let it measure a little.
    wait_for_child(child.id());
    std::thread::sleep(Duration::from_millis(300));
    assert!(processes_with(&token).len() >= 2);
    let doc = child.interrupt(LIMIT).exits(0).document();
    assert_eq!(doc["end_reason"], "interrupted");
    let lat = latency_series(&doc);
    assert_eq!(lat.len(), 1, "stopped in the first experiment");
    assert!(lat[0]["stats"]["count"].as_u64().unwrap() > 0);
    assert!(processes_with(&token).is_empty());
    assert_eq!(assert_sysv_removed(&doc), 2);
}

/// A stop interrupts the sender's wait for its next period: with a 20 s
/// period, threads and processes, the run ends within seconds of SIGINT with
/// its result (before the fix it ended at the next wake-up, 20 s later).
#[test]
fn sigint_ends_a_long_period_at_once() {
    for between in ["threads", "processes"] {
        let (out, took) = Run::new([
            "ipc",
            "--mech",
            "pipe",
            "--between",
            between,
            "-i",
            "20s",
            "-l",
            "3",
            "-q",
        ])
        .json()
        .interrupt_after(Duration::from_millis(1500), Duration::from_secs(10));
        let doc = out.exits(0).document();
        assert_eq!(doc["end_reason"], "interrupted", "{between}");
        assert!(
            doc["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .all(|w| !w.as_str().unwrap().contains("failed")),
            "{between}: {}",
            doc["warnings"]
        );
        eprintln!("ipc {between} -i 20s: ended {took:?} after SIGINT");
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for args in [
        &["ipc", "--mech", "smoke-signal"][..],
        &["ipc", "--mech", "mutex", "--pattern", "roundtrip"],
        &["ipc", "--repetitions", "0"],
        &["ipc", "--period", "0"],
        &["ipc", "--period", "1ms,0"],
        &["ipc", "--period", "5000000h"],
        &["ipc", "-l", "0"],
        &["ipc", "--cpus", "3"],
        &["ipc", "--cpus", "0,9999"],
        &["ipc", "--between", "planets"],
        &["ipc", "--policy", "fifo", "-p", "0"],
    ] {
        let e = Run::new(args).exits(2).one_line();
        assert!(e.starts_with("error"), "{args:?}: {e}");
    }
}

#[test]
fn list_shows_the_table() {
    let t = Run::new(["ipc", "--list"]).exits(0).stdout();
    for m in MECHANISMS {
        assert!(t.contains(m), "{m}");
    }
    assert!(t.contains("handoff,roundtrip"));
}

/// The children of process `pid` (from /proc/*/status).
fn children_of(pid: u32) -> Vec<i32> {
    let mut kids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        let ppid = status
            .lines()
            .find_map(|l| l.strip_prefix("PPid:"))
            .map(|v| v.trim().to_string());
        if ppid.as_deref() == Some(&pid.to_string()) {
            if let Ok(k) = e.file_name().to_string_lossy().parse() {
                kids.push(k);
            }
        }
    }
    kids
}

#[test]
fn a_receiver_process_that_dies_ends_the_run_without_hanging() {
    for (mech, keeps_samples) in [("futex", true), ("posix-mq", false)] {
        let child = long_run(mech).spawn();
        let kids = wait_for_child(child.id());
        assert_eq!(kids.len(), 1, "{mech}: one receiver process");
        // Until the receiver has taken part in a few hundred exchanges (each
        // wakes it), however long a busy machine makes that take.
        wait_for_wakeups(kids[0], 300);
        rtscope_core::sys::kill(kids[0], libc::SIGKILL).unwrap();
        let out = child.wait_within(LIMIT).exits(1);
        let e = out.stderr();
        assert!(e.contains("receiver process ended"), "{mech}: {e}");
        let doc = out.document();
        assert_eq!(doc["end_reason"], "error");
        let n = latency_series(&doc)[0]["stats"]["count"].as_u64().unwrap();
        assert_eq!(n > 0, keeps_samples, "{mech}: {n} samples");
    }
}

/// Polls (up to 30 s) until process `pid` has been woken `n` times
/// (`voluntary_ctxt_switches`).
fn wait_for_wakeups(pid: i32, n: u64) {
    let switches = || {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))?
            .trim()
            .parse::<u64>()
            .ok()
    };
    for _ in 0..600 {
        if switches().is_some_and(|s| s >= n) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("process {pid} was woken {:?} times in 30 s", switches());
}

/// Polls (up to 20 s) until process `pid` has a child; returns its children.
fn wait_for_child(pid: u32) -> Vec<i32> {
    for _ in 0..400 {
        let kids = children_of(pid);
        if !kids.is_empty() {
            return kids;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("process {pid} never forked a receiver");
}

#[test]
fn runs_under_load_between_processes_and_reaps_everything() {
    let doc = Run::new([
        "ipc",
        "--mech",
        "futex",
        "-l",
        "100",
        "--between",
        "processes",
        "-q",
    ])
    .args(["--load", "cpu:30", "--load-cpus", "0"])
    .json()
    .exits(0)
    .document();
    let loads = doc["loads"].as_array().unwrap();
    assert_eq!(loads.len(), 1);
    assert!(loads[0]["counters"]["ops"].as_u64().unwrap() > 0);
    let pid = loads[0]["instance_reports"][0]["pid"].as_i64().unwrap();
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "load worker {pid} left"
    );
    assert_eq!(latency_series(&doc)[0]["stats"]["count"], 100);
}
