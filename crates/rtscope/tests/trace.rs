//! `rtscope cyclic --trace` / `--trace-outliers`: short real runs checked for
//! the document's structure (never a latency bound), the stages adding up,
//! the accuracy check, the private trace instance's removal (normal and
//! interrupted runs), and bad input.

mod common;

use common::{instances_of, own_tracefs_mounts_of, Run};
use serde_json::Value;
use std::time::Duration;

/// The traced tests look at tracefs instances: one at a time.
static TRACING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    TRACING.lock().unwrap_or_else(|e| e.into_inner())
}

fn last_cpu() -> String {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    online.trim().rsplit([',', '-']).next().unwrap().to_string()
}

/// Runs `rtscope cyclic` with `args` and a JSON file; its document, stdout and pid.
fn run_cyclic(args: &[&str]) -> (Value, String, u32) {
    let out = Run::new(["cyclic", "-a", &last_cpu()])
        .json()
        .args(args)
        .exits(0);
    (out.document(), out.stdout(), out.id())
}

fn series<'a>(doc: &'a Value, label: &str) -> &'a Value {
    doc["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["label"] == label)
        .unwrap_or_else(|| panic!("no series {label}"))
}

fn n(v: &Value) -> i64 {
    v.as_i64().unwrap()
}

#[test]
fn traced_run_splits_every_sample_and_cleans_up() {
    let _one = one_at_a_time();
    let (doc, stdout, pid) = run_cyclic(&["--trace", "-l", "500", "-q"]);
    let t = &doc["trace"];
    assert_eq!(t["clock"], "mono");
    assert_eq!(doc["plan"]["trace"]["mode"], "on");
    let samples = n(&t["samples"]);
    let joined = n(&t["joined"]);
    assert_eq!(samples, n(&series(&doc, "all")["stats"]["count"]));
    // Every sample is accounted for, once: joined, paired with an incomplete
    // kernel record, or counted as unmatched.
    assert!(joined > 0, "{t}");
    assert_eq!(
        joined + n(&t["incomplete"]) + n(&t["unmatched_samples"]),
        samples,
        "{t}"
    );
    // Stage series exist, with the counts the trace says were observed.
    for stage in [
        "timer",
        "wakeup",
        "sched",
        "return",
        "switch+return",
        "rtscope-kernel",
    ] {
        let s = series(&doc, &format!("stage {stage}"));
        assert_eq!(s["attributes"]["stage"], stage);
        assert_eq!(s["stats"]["count"], t["observed"][stage], "{stage}");
    }
    assert_eq!(n(&t["observed"]["timer"]), joined);
    assert_eq!(n(&t["observed"]["rtscope-kernel"]), joined);
    // The accuracy check ran on every joined sample.
    let a = &t["accuracy"];
    assert_eq!(n(&a["checked"]), joined);
    assert_eq!(a["passed"], n(&a["below_kernel"]) == 0);
    // The stages of each kept sample add up to its latency exactly.
    let worst = t["worst"].as_array().unwrap();
    assert!(!worst.is_empty());
    for w in worst {
        let sum = n(&w["timer_ns"])
            + w["wakeup_ns"].as_i64().unwrap_or(0)
            + w["switch_return_ns"].as_i64().unwrap_or(0)
            + n(&w["rtscope_kernel_ns"]);
        if w["wakeup_ns"].is_i64() {
            assert_eq!(sum, n(&w["latency_ns"]), "{w}");
        }
        if let (Some(a), Some(b)) = (w["sched_ns"].as_i64(), w["return_ns"].as_i64()) {
            assert_eq!(a + b, n(&w["switch_return_ns"]), "{w}");
        }
        assert!(w["context"].is_null(), "context only with --trace-outliers");
    }
    // Worst first.
    let lat: Vec<i64> = worst.iter().map(|w| n(&w["latency_ns"])).collect();
    assert!(lat.windows(2).all(|p| p[0] >= p[1]), "{lat:?}");
    assert!(stdout.contains("stage timer"), "{stdout}");
    assert!(stdout.contains("accuracy check:"), "{stdout}");
    assert!(instances_of(pid).is_empty(), "{:?}", instances_of(pid));
    assert!(
        own_tracefs_mounts_of(pid).is_empty(),
        "{:?}",
        own_tracefs_mounts_of(pid)
    );
}

#[test]
fn outliers_keep_their_context() {
    let _one = one_at_a_time();
    // 1 µs: every sample is an outlier; the worst --spikes keep their window.
    let (doc, stdout, pid) = run_cyclic(&["--trace-outliers", "1us", "--spikes", "4", "-l", "300"]);
    assert_eq!(doc["plan"]["trace"]["outliers_ns"], 1000);
    let worst = doc["trace"]["worst"].as_array().unwrap();
    assert!(!worst.is_empty() && worst.len() <= 4, "{}", worst.len());
    for w in worst {
        let ctx = w["context"].as_array().unwrap();
        let kinds: Vec<&str> = ctx.iter().map(|c| c["kind"].as_str().unwrap()).collect();
        for k in ["armed", "timer", "exit"] {
            assert!(kinds.contains(&k), "{k} missing: {kinds:?}");
        }
        // In time order, relative to the intended wake time.
        let starts: Vec<i64> = ctx.iter().map(|c| n(&c["start_ns"])).collect();
        assert!(starts.windows(2).all(|p| p[0] <= p[1]), "{starts:?}");
        let exit = ctx.iter().find(|c| c["kind"] == "exit").unwrap();
        assert_eq!(
            n(&exit["start_ns"]),
            n(&w["latency_ns"]) - n(&w["rtscope_kernel_ns"])
        );
    }
    assert!(stdout.contains("wait returns (sys_exit)"), "{stdout}");
    assert!(instances_of(pid).is_empty());
    assert!(
        own_tracefs_mounts_of(pid).is_empty(),
        "{:?}",
        own_tracefs_mounts_of(pid)
    );
}

#[test]
fn interrupted_traced_run_writes_and_cleans_up() {
    let _one = one_at_a_time();
    let cpu = last_cpu();
    let args = [
        "cyclic",
        "-a",
        &cpu,
        "-D",
        "60s",
        "-q",
        "--trace-outliers",
        "50us",
    ];
    // The pid is needed for the instance name: look for any rtscope-<pid>-*
    // left by a child of this test after it ended.
    let (out, _) = Run::new(args)
        .json()
        .interrupt_after(Duration::from_millis(1500), Duration::from_secs(10));
    let doc = out.exits(0).document();
    assert_eq!(doc["end_reason"], "interrupted");
    assert!(doc["trace"]["joined"].as_u64().unwrap() > 0);
    // No instance of a process that no longer exists is left behind.
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    for l in info.lines().filter(|l| l.contains(" - tracefs ")) {
        let m = l.split_whitespace().nth(4).unwrap();
        for e in std::fs::read_dir(format!("{m}/instances"))
            .unwrap()
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name
                .strip_prefix("rtscope-")
                .and_then(|r| r.split('-').next())
            {
                assert!(
                    std::path::Path::new(&format!("/proc/{pid}")).exists(),
                    "stale instance {name}"
                );
            }
        }
    }
}

/// `--trace-irqs-off`: the `preemptirq` events are enabled where the
/// kernel has them (and in the plan), and where it has not a note says so:
/// one of the two, never both, never neither.
#[test]
fn irqs_off_events_are_enabled_or_their_absence_is_said() {
    let _one = one_at_a_time();
    let out = Run::new(["cyclic", "-a", &last_cpu()])
        .json()
        .args(["--trace-outliers", "1ms", "--trace-irqs-off", "-l", "200"])
        .exits(0);
    let doc = out.document();
    assert_eq!(doc["plan"]["trace"]["irqs_off"], true);
    let events: Vec<&str> = doc["trace"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    let enabled =
        events.contains(&"preemptirq/irq_disable") && events.contains(&"preemptirq/irq_enable");
    let noted = out
        .stderr()
        .contains("note: --trace-irqs-off: this kernel has no preemptirq events");
    assert!(
        enabled != noted,
        "enabled {enabled}, noted {noted}: {}",
        out.stderr()
    );
    // Never counted missing: the kernel may simply not have them.
    let missing = doc["trace"]["missing_events"].as_array().unwrap();
    assert!(
        !missing
            .iter()
            .any(|m| m.as_str().unwrap().starts_with("preemptirq")),
        "{missing:?}"
    );
    // Without the option they are not enabled, and the plan leaves it out.
    let (doc, _, _) = run_cyclic(&["--trace-outliers", "1ms", "-l", "100"]);
    assert!(
        doc["plan"]["trace"].get("irqs_off").is_none(),
        "{}",
        doc["plan"]["trace"]
    );
    assert!(!doc["trace"]["events"].to_string().contains("preemptirq"));
}

#[test]
fn bad_trace_input_is_one_line() {
    for args in [
        vec!["cyclic", "--trace", "--wake", "timerfd", "-l", "10"],
        vec!["cyclic", "--trace", "--clock", "realtime", "-l", "10"],
        vec!["cyclic", "--trace", "--repeat", "2", "-l", "10"],
        vec!["cyclic", "--trace=sometimes", "-l", "10"],
        vec!["cyclic", "--trace-outliers", "0", "-l", "10"],
        vec!["cyclic", "--trace", "--trace-buffer", "1", "-l", "10"],
        vec!["cyclic", "--trace", "--trace-irqs-off", "-l", "10"],
    ] {
        let out = Run::new(&args).exits(2);
        if !args.contains(&"--trace=sometimes")
            && !args.contains(&"0")
            && !args.contains(&"--trace-buffer")
        {
            out.one_line();
        }
    }
}

/// Without permission to trace: `--trace` says why in one line (exit 2),
/// `--trace=auto` runs untraced. Needs root (to drop to nobody) and setpriv.
#[test]
fn no_permission_refused_or_untraced() {
    let is_root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    let setpriv = std::path::Path::new("/usr/bin/setpriv");
    if !is_root || !setpriv.exists() {
        eprintln!("skipped: needs root and /usr/bin/setpriv");
        return;
    }
    let bin = common::rtscope_path();
    // The binary must be reachable by nobody.
    if !bin.ancestors().skip(1).all(|d| {
        std::fs::metadata(d).is_ok_and(|m| {
            use std::os::unix::fs::PermissionsExt;
            m.permissions().mode() & 0o001 != 0
        })
    }) {
        eprintln!("skipped: the binary's directories are not reachable by nobody");
        return;
    }
    let run = |mode: &str| Run::new(["cyclic", mode, "--no-rt", "-l", "50"]).by_nobody();
    let line = run("--trace").exits(2).one_line();
    assert!(line.contains("--trace:"), "{line}");
    let out = run("--trace=auto").exits(0);
    let err = out.stderr();
    assert!(err.contains("running untraced"), "{err}");
    assert!(!out.stdout().contains("accuracy check"));
}

/// A buffer far too small for the events of a fast run: whatever is lost is
/// counted and said, and what is joined is still consistent (a loss never
/// pairs the arming of one wait with the expiry of another).
#[test]
fn losses_are_counted_and_never_mis_join() {
    let _one = one_at_a_time();
    let out = Run::new(["cyclic", "-a", &last_cpu(), "-i", "50us", "-D", "2s", "-q"])
        .args(["--trace-outliers", "10ms", "--trace-buffer", "64"])
        .json()
        .ran();
    let doc = out.document();
    let t = &doc["trace"];
    let lost = n(&t["overruns"]) + n(&t["lost_pages"]);
    if lost > 0 {
        assert!(
            doc["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().contains("the trace lost events")),
            "{}",
            doc["warnings"]
        );
    }
    assert_eq!(t["accuracy"]["below_kernel"], 0, "{t}");
    out.exits(0);
}

/// A run killed with SIGKILL cannot unmount the tracefs it mounted for
/// itself (where the machine had none mounted); the next traced run does.
/// In a mount namespace of its own (`unshare -m`), with the machine's
/// tracefs unmounted there only.
#[test]
fn the_next_run_unmounts_what_a_killed_run_mounted() {
    let _one = one_at_a_time();
    if !common::tool("unshare") || rtscope_core::sys::geteuid() != 0 {
        assert!(std::env::var_os("CI").is_none(), "unshare and root needed");
        eprintln!("skipped: needs unshare and root");
        return;
    }
    let script = r#"
set -u
grep ' - tracefs \| - debugfs ' /proc/self/mountinfo | awk '{print $5}' | sort -r |
  while read -r m; do umount -l "$m" || exit 9; done
"$RTSCOPE" cyclic -a 0 -D 60s -q --trace >/dev/null 2>&1 &
pid=$!
for i in $(seq 100); do
  grep -q "/rtscope-tracefs-$pid-" /proc/self/mountinfo && break
  sleep 0.1
done
kill -9 "$pid"; wait "$pid" 2>/dev/null
echo "killed: $(grep -c "/rtscope-tracefs-$pid-" /proc/self/mountinfo)"
"$RTSCOPE" cyclic -a 0 -D 200ms -q --trace >/dev/null 2>&1
echo "after the next run: $(grep -c "/rtscope-tracefs-$pid-" /proc/self/mountinfo)"
ls -d /tmp/rtscope-tracefs-"$pid"-* 2>/dev/null | wc -l | sed 's/^/directories: /'
"#;
    let out = std::process::Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script])
        .env("RTSCOPE", common::rtscope_path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("killed: 1\n"),
        "the killed run had mounted: {text}"
    );
    assert!(
        text.contains("after the next run: 0\ndirectories: 0\n"),
        "{text}"
    );
}
