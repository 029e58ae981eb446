//! `rtscope check` on fake /proc and /sys trees (tests/fixtures/check, made by
//! make-fixtures.py) and on this machine: statuses, exit codes, the JSON
//! against docs/check-schema.json, the fix script, bad input.

mod common;

use std::path::{Path, PathBuf};

use common::{read_valid, Run};
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/check")
        .join(name)
}

/// Runs `check --json` with `args`; returns (exit code, document, stdout).
fn check(args: &[&str]) -> (i32, Value, String) {
    let out = Run::new(["check"]).args(args).json().ran();
    let code = out.status.code().unwrap();
    let doc = read_valid(&out.json_path(), "check-schema.json");
    assert_eq!(doc["exit_code"], code, "document and exit code agree");
    (code, doc, out.stdout())
}

fn status<'a>(doc: &'a Value, id: &str) -> &'a str {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}"))["status"]
        .as_str()
        .unwrap()
}

fn check_of<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap()
}

#[test]
fn tuned_rt_server_passes() {
    let root = fixture("rt-x86");
    let (code, doc, out) = check(&["--root", root.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(doc["kernel"]["preemption_model"], "PREEMPT_RT");
    assert_eq!(doc["target_cpus"], serde_json::json!([2, 3]));
    for id in [
        "preempt-rt",
        "isolcpus",
        "nohz-full",
        "rcu-nocbs",
        "irqaffinity",
        "irq-affinity",
        "rt-throttling",
        "kthreads",
        "workqueues",
    ] {
        assert_eq!(status(&doc, id), "ok", "{id}: {}", check_of(&doc, id));
    }
    // Not probed on a fake tree.
    assert_eq!(status(&doc, "sched-fifo"), "n/a");
    // One line per check, then the totals.
    let n = doc["checks"].as_array().unwrap().len();
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("ok ") || l.starts_with("n/a "))
            .count(),
        n
    );
}

#[test]
fn naming_cpus_that_are_not_isolated_warns() {
    let root = fixture("rt-x86");
    let (code, doc, _) = check(&["--root", root.to_str().unwrap(), "--cpus", "1-2"]);
    assert_eq!(code, 1);
    assert_eq!(status(&doc, "cpus"), "warn");
    let c = check_of(&doc, "cpus");
    assert!(
        c["found"].as_str().unwrap().contains("not isolated 1"),
        "{c}"
    );
    assert!(
        c["kernel_params"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "nohz_full=1-2"),
        "{c}"
    );
    // IRQ 24 (eth0, 0-1) may run on CPU 1.
    assert_eq!(status(&doc, "irq-affinity"), "warn");
    assert_eq!(status(&doc, "irqaffinity"), "warn");
}

#[test]
fn container_without_rt_budget_fails() {
    let root = fixture("container");
    let (code, doc, _) = check(&["--root", root.to_str().unwrap()]);
    assert_eq!(code, 3);
    assert_eq!(status(&doc, "sched-fifo"), "fail");
    let c = check_of(&doc, "sched-fifo");
    assert!(
        c["found"]
            .as_str()
            .unwrap()
            .contains("cpu.rt_runtime_us = 0"),
        "{c}"
    );
    assert_eq!(status(&doc, "container"), "warn");
    let found = check_of(&doc, "container")["found"].to_string();
    assert!(found.contains("own PID namespace"), "{found}");
    assert_eq!(status(&doc, "preempt-rt"), "warn");
    assert_eq!(status(&doc, "thp"), "warn");
    assert_eq!(status(&doc, "smt"), "warn");
    assert_eq!(status(&doc, "watchdogs"), "warn");
    assert_eq!(status(&doc, "mitigations"), "warn");
    assert_eq!(status(&doc, "cpufreq"), "warn");
    // The 6.8 kernel is PREEMPT_DYNAMIC: RT needs the patch set before 6.12.
    let fix = check_of(&doc, "preempt-rt")["fix"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(fix.contains("predates 6.12"), "{fix}");
}

#[test]
fn arm_board() {
    let root = fixture("arm-board");
    let (code, doc, _) = check(&["--root", root.to_str().unwrap()]);
    assert_eq!(code, 3, "RLIMIT_RTPRIO 0 for a normal user fails");
    assert_eq!(doc["arch"], "aarch64");
    assert_eq!(doc["kernel"]["preemption_model"], "PREEMPT_RT");
    assert_eq!(status(&doc, "rlimit-rtprio"), "fail");
    assert_eq!(status(&doc, "rlimit-memlock"), "warn");
    // nohz_full=2-3 disagrees with isolcpus=3.
    assert_eq!(status(&doc, "nohz-full"), "warn");
    assert_eq!(status(&doc, "cpuidle"), "warn");
    let idle = check_of(&doc, "cpuidle");
    assert!(
        idle["kernel_params"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "cpuidle.off=1"),
        "{idle}"
    );
    assert_eq!(status(&doc, "console"), "warn");
    assert_eq!(status(&doc, "clocksource"), "ok");
    assert_eq!(status(&doc, "irq-affinity"), "warn");
    // Boot parameters go to the board's command line, not GRUB.
    let fix = check_of(&doc, "irqaffinity")["fix"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(fix.contains("cmdline.txt"), "{fix}");
}

/// qemu's arm64 `virt` machine has no DMI and no hypervisor flag: its device
/// tree names it (as the kernel lab's arm64 guest showed).
#[test]
fn arm_guest_is_a_virtual_machine_by_its_device_tree() {
    let (_, board, _) = check(&["--root", fixture("arm-board").to_str().unwrap()]);
    assert_eq!(status(&board, "vm"), "ok", "{}", check_of(&board, "vm"));
    let dir = tempfile::tempdir().unwrap();
    let ok = std::process::Command::new("cp")
        .arg("-a")
        .arg(fixture("arm-board"))
        .arg(dir.path().join("root"))
        .status()
        .unwrap();
    assert!(ok.success());
    let dt = dir.path().join("root/sys/firmware/devicetree/base");
    std::fs::create_dir_all(&dt).unwrap();
    std::fs::write(dt.join("compatible"), "linux,dummy-virt\0").unwrap();
    let (_, guest, _) = check(&["--root", dir.path().join("root").to_str().unwrap()]);
    assert_eq!(status(&guest, "vm"), "warn");
    let vm = check_of(&guest, "vm")["found"].to_string();
    assert!(vm.contains("linux,dummy-virt"), "{vm}");
}

#[test]
fn this_vm_copy_flags_what_the_issue_expects() {
    let root = fixture("this-vm");
    let (code, doc, _) = check(&["--root", root.to_str().unwrap()]);
    assert_eq!(code, 1);
    for id in ["preempt-rt", "vm", "rt-throttling", "isolcpus", "console"] {
        assert_eq!(status(&doc, id), "warn", "{id}");
    }
    // No cpufreq in a VM: not applicable rather than ok or warn.
    assert_eq!(status(&doc, "cpufreq"), "n/a");
    // The VM's root file system came from a container image (/.dockerenv),
    // but it runs in the host's PID namespace: not a container.
    assert_eq!(status(&doc, "container"), "ok");
    let found = check_of(&doc, "container")["found"].to_string();
    assert!(found.contains("/.dockerenv present"), "{found}");
}

#[test]
fn this_machine_json_and_fix_script() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("fix.sh");
    let (code, doc, out) = check(&["--fix-script", script.to_str().unwrap()]);
    assert!(code == 0 || code == 1 || code == 3);
    assert_eq!(doc["root"], "/");
    // The SCHED_FIFO probe ran for real.
    assert_ne!(status(&doc, "sched-fifo"), "n/a");
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(text.starts_with("#!/bin/sh\n"));
    assert!(text.contains("REVIEW EVERY LINE"));
    // Every runtime command of a failed or warned check is in the script.
    for c in doc["checks"].as_array().unwrap() {
        if c["status"] == "warn" || c["status"] == "fail" {
            for cmd in c["commands"].as_array().unwrap() {
                assert!(text.contains(cmd.as_str().unwrap()), "{cmd} missing");
            }
        } else {
            assert!(c["fix"].is_null(), "{c}");
        }
    }
    // The script parses as shell.
    let sh = std::process::Command::new("sh")
        .arg("-n")
        .arg(&script)
        .status()
        .unwrap();
    assert!(sh.success());
    assert!(out.contains("fix script:"), "{out}");
}

#[test]
fn measure_attaches_irq_rates() {
    let (_, doc, _) = check(&["--cpus", "0", "--measure", "--measure-time", "1s", "-q"]);
    let m = check_of(&doc, "irq-affinity")["measured"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(m.contains("CPU 0:") && m.contains("IRQs/s"), "{m}");
    // The noise and cyclic probes ran on the same CPU (or say why not).
    let m = check_of(&doc, "vm")["measured"].to_string();
    assert!(m.contains("rtscope noise cpu 0:"), "{m}");
    let m = check_of(&doc, "preempt-rt")["measured"].to_string();
    assert!(
        m.contains("rtscope cyclic 1 ms: CPU 0: p99") || m.contains("cyclic probe failed"),
        "{m}"
    );
}

#[test]
fn bad_input_is_one_line_exit_2() {
    for args in [
        vec!["check", "--root", "/nonexistent/rtscope"],
        vec!["check", "--cpus", "x"],
        vec!["check", "--cpus", "4095"],
        vec!["check", "--measure-time", "1s"],
        vec!["check", "--measure", "--root", "/tmp"],
        vec!["check", "--json", "/nonexistent/dir/x.json"],
    ] {
        Run::new(&args).exits(2).one_line();
    }
}

#[test]
fn the_fix_script_honours_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    for (umask, want) in [("022", 0o755), ("077", 0o700), ("027", 0o750)] {
        let script = dir.path().join(format!("fix-{umask}.sh"));
        let json = dir.path().join(format!("check-{umask}.json"));
        let st = std::process::Command::new("sh")
            .args(["-c", &format!("umask {umask}; exec \"$0\" \"$@\"")])
            .arg(common::rtscope_path())
            .args(["check", "--fix-script"])
            .arg(&script)
            .arg("--json")
            .arg(&json)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!([0, 1, 3].contains(&st.code().unwrap()), "{st:?}");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&script), want, "umask {umask}: the script");
        assert_eq!(mode(&json), want & 0o666, "umask {umask}: the JSON");
    }
    // Written over, a script keeps its mode (an 0600 one is not widened
    // under umask 022), with its owner's execute bit.
    let script = dir.path().join("fix-022.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o600)).unwrap();
    let st = std::process::Command::new("sh")
        .args(["-c", "umask 022; exec \"$0\" \"$@\""])
        .arg(common::rtscope_path())
        .args(["check", "--fix-script"])
        .arg(&script)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!([0, 1, 3].contains(&st.code().unwrap()), "{st:?}");
    let m = std::fs::metadata(&script).unwrap().permissions().mode() & 0o777;
    assert_eq!(m, 0o700, "an 0600 script written over");
}
