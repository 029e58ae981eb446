//! Scheduling and privileges: RT throttling, permission and rlimits for
//! real-time scheduling, timer migration, kernel threads and workqueues.

use super::*;

pub(super) fn rt_throttling(root: &Root, f: &Facts) -> Check {
    let title = "RT throttling";
    let Some(r) = root.read_i64("/proc/sys/kernel/sched_rt_runtime_us") else {
        return Check::new(
            "rt-throttling",
            title,
            Status::Na,
            "sched_rt_runtime_us not readable".into(),
        )
        .why("RT throttling stalls RT tasks that use more than their share of a period");
    };
    let period = root
        .read_i64("/proc/sys/kernel/sched_rt_period_us")
        .unwrap_or(1_000_000);
    if r < 0 {
        return Check::new(
            "rt-throttling",
            title,
            Status::Ok,
            "sched_rt_runtime_us=-1 (off)".into(),
        )
        .why("RT throttling stalls RT tasks that use more than their share of a period");
    }
    let extra = if f.at_least(6, 12) {
        "; since 6.12 the fair deadline server also reserves 50 ms/s for normal tasks: /sys/kernel/debug/sched/fair_server/cpuN/runtime"
    } else {
        ""
    };
    Check::new(
        "rt-throttling",
        title,
        Status::Warn,
        format!("sched_rt_runtime_us={r} of {period}"),
    )
    .why("an RT task that runs longer than the runtime is stopped until the period ends (a busy RT loop stalls ~50 ms every second)")
    .fix(format!("sysctl -w kernel.sched_rt_runtime_us=-1 (persist in /etc/sysctl.d/){extra}"))
    .cmd("sysctl -w kernel.sched_rt_runtime_us=-1")
}

/// What SCHED_DEADLINE tasks may reserve of each CPU: the RT bandwidth
/// (`sched_rt_runtime_us` of `sched_rt_period_us`) less the fair-class
/// server's share (Linux 6.12 and later), as admission control counts it.
pub(super) fn deadline_bandwidth(root: &Root, f: &Facts) -> Check {
    use rtscope_core::deadline::{BandwidthLimit, ServerReserve};
    let (id, title) = ("sched-deadline", "SCHED_DEADLINE bandwidth");
    let why = "the kernel admits deadline tasks (cyclic --policy deadline) only while their \
               runtime/period together fit this share of each CPU";
    let Some(r) = root.read_i64("/proc/sys/kernel/sched_rt_runtime_us") else {
        return Check::new(
            id,
            title,
            Status::Na,
            "sched_rt_runtime_us not readable".into(),
        )
        .why(why);
    };
    let period = root
        .read_i64("/proc/sys/kernel/sched_rt_period_us")
        .filter(|p| *p > 0)
        .unwrap_or(1_000_000);
    let Some(limit) = BandwidthLimit::from_sysctls(r, period as u64) else {
        return Check::new(
            id,
            title,
            Status::Ok,
            "no limit (sched_rt_runtime_us=-1): admission control admits any deadline task".into(),
        )
        .why(why);
    };
    let server = ServerReserve::fair_server(&root.path("/sys/kernel/debug"), &f.online, &f.release);
    let limit = limit.beside(server);
    let server_text = server.map_or(String::new(), |s| {
        format!(
            ", less the fair-class server's {:.1}%{}",
            s.percent(),
            if s.assumed {
                " (its default: /sys/kernel/debug/sched/fair_server not readable)"
            } else {
                ""
            }
        )
    });
    let free = limit.free_percent();
    let cpus = f.online.len().max(1);
    let found = format!(
        "{free:.1}% of each CPU, {:.0}% of {cpus} CPU{} in all (sched_rt_runtime_us={r} of \
         {period}{server_text})",
        free * cpus as f64,
        if cpus == 1 { "" } else { "s" }
    );
    if free > 0.0 {
        return Check::new(id, title, Status::Ok, found).why(why);
    }
    Check::new(id, title, Status::Warn, format!("none: {found}"))
        .why(why)
        .fix("sysctl -w kernel.sched_rt_runtime_us=950000 (the default; persist in /etc/sysctl.d/)")
        .cmd("sysctl -w kernel.sched_rt_runtime_us=950000")
}

/// This process's cgroup (v1 `cpu` controller, or v2) relative path.
pub(super) fn own_cgroup(root: &Root) -> Option<(String, bool)> {
    let text = root.read_raw("/proc/self/cgroup")?;
    for l in text.lines() {
        let mut it = l.splitn(3, ':');
        let (_, ctrl, path) = (it.next()?, it.next()?, it.next()?);
        if ctrl.split(',').any(|c| c == "cpu") {
            return Some((path.to_string(), true));
        }
    }
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(|p| (p.to_string(), false))
}

/// The RT runtime of this process's cgroup, where the kernel has RT group scheduling.
pub(super) fn cgroup_rt_runtime(root: &Root) -> Option<(String, i64)> {
    let (path, v1) = own_cgroup(root)?;
    let dirs: Vec<String> = if v1 {
        vec![
            format!("/sys/fs/cgroup/cpu{path}"),
            format!("/sys/fs/cgroup/cpu,cpuacct{path}"),
        ]
    } else {
        vec![format!("/sys/fs/cgroup{path}")]
    };
    for d in dirs {
        let d = d.trim_end_matches('/').to_string();
        for name in ["cpu.rt_runtime_us", "cpu.rt.runtime_us"] {
            let file = format!("{d}/{name}");
            if let Some(v) = root.read_i64(&file) {
                return Some((file, v));
            }
        }
    }
    None
}

pub(super) fn rt_permitted(root: &Root, f: &Facts) -> Check {
    let title = "SCHED_FIFO allowed for this process";
    let cg = cgroup_rt_runtime(root);
    if let Some((file, 0)) = &cg {
        return Check::new(
            "sched-fifo",
            title,
            Status::Fail,
            format!("{file} = 0: this cgroup has no RT budget"),
        )
        .why("with RT group scheduling, a cgroup without RT runtime cannot run SCHED_FIFO tasks: even root gets EPERM")
        .fix(format!("give the cgroup a budget (echo 950000 > {file}, parents first), or run the container with --cpu-rt-runtime=950000 (docker) / outside it"))
        .cmd(format!("echo 950000 > {file}"));
    }
    if !root.is_live() {
        let found = match &cg {
            Some((file, v)) => format!("{file} = {v}; not probed (--root)"),
            None => "not probed (--root)".into(),
        };
        return Check::new("sched-fifo", title, Status::Na, found)
            .why("real-time measurements need SCHED_FIFO");
    }
    let probe = rtscope_core::rt::ThreadSetup {
        policy: rtscope_core::rt::Policy::Fifo,
        priority: 1,
        cpus: vec![],
        timer_slack_ns: None,
        prefault_stack: 0,
        block_signals: vec![],
    };
    let res = std::thread::spawn(move || probe.apply().map(|_| ()))
        .join()
        .unwrap_or(Ok(()));
    match res {
        Ok(()) => Check::new(
            "sched-fifo",
            title,
            Status::Ok,
            format!(
                "a test thread got SCHED_FIFO{}",
                if f.euid == Some(0) { " (root)" } else { "" }
            ),
        )
        .why("real-time measurements need SCHED_FIFO"),
        Err(e) => Check::new("sched-fifo", title, Status::Fail, format!("refused: {e}"))
            .why("real-time measurements need SCHED_FIFO")
            .fix("raise RLIMIT_RTPRIO (limits.conf: @realtime - rtprio 98) or grant CAP_SYS_NICE"),
    }
}

/// A `/proc/self/limits` row as (soft, hard); `None` for unlimited.
pub(super) fn limit(root: &Root, name: &str) -> Option<(Option<u64>, Option<u64>)> {
    let text = root.read_raw("/proc/self/limits")?;
    let l = text.lines().find(|l| l.starts_with(name))?;
    let rest: Vec<&str> = l[name.len()..].split_whitespace().collect();
    let v = |s: &str| s.parse::<u64>().ok();
    Some((v(rest.first()?), v(rest.get(1)?)))
}

pub(super) fn rlimit(root: &Root, f: &Facts, id: &'static str) -> Check {
    let root_user = f.euid == Some(0);
    let (title, row, why) = if id == "rlimit-rtprio" {
        (
            "RLIMIT_RTPRIO",
            "Max realtime priority",
            "an unprivileged user may only use RT priorities up to RLIMIT_RTPRIO",
        )
    } else {
        (
            "RLIMIT_MEMLOCK",
            "Max locked memory",
            "mlockall needs RLIMIT_MEMLOCK (or CAP_IPC_LOCK): unlocked pages fault in the RT path",
        )
    };
    let Some((soft, hard)) = limit(root, row) else {
        return Check::new(
            id,
            title,
            Status::Na,
            "/proc/self/limits not readable".into(),
        )
        .why(why);
    };
    let show = |v: Option<u64>| v.map_or("unlimited".into(), |x| x.to_string());
    let found = format!("soft {} hard {}", show(soft), show(hard));
    let enough = if id == "rlimit-rtprio" {
        soft.is_none_or(|v| v >= 95)
    } else {
        soft.is_none()
    };
    if enough {
        return Check::new(id, title, Status::Ok, found).why(why);
    }
    if root_user {
        return Check::new(
            id,
            title,
            Status::Ok,
            format!("{found}; root (CAP_SYS_NICE/CAP_IPC_LOCK) is not bound by it"),
        )
        .why(why);
    }
    let (fix, status) = if id == "rlimit-rtprio" {
        ("/etc/security/limits.d/99-realtime.conf: '@realtime - rtprio 98', add the user to group realtime, log in again", Status::Fail)
    } else {
        ("/etc/security/limits.d/99-realtime.conf: '@realtime - memlock unlimited', add the user to group realtime, log in again", Status::Warn)
    };
    Check::new(id, title, status, found).why(why).fix(fix)
}

pub(super) fn timer_migration(root: &Root, f: &Facts) -> Check {
    let title = "timer migration";
    let Some(v) = root.read_i64("/proc/sys/kernel/timer_migration") else {
        return Check::new("timer-migration", title, Status::Na, "not readable".into())
            .why("timer migration decides where unpinned timers expire");
    };
    // The tuning guides disagree: RT kernels want timers moved off the busy
    // RT CPUs to housekeeping ones (on); a non-RT kernel without isolation
    // gets less cross-CPU noise with it off.
    let want = if f.rt || !f.isolated.is_empty() { 1 } else { 0 };
    let reason = if want == 1 {
        "with PREEMPT_RT or isolated CPUs, on lets unpinned timers leave the RT CPUs"
    } else {
        "without PREEMPT_RT and isolation, off keeps timers from being pulled across CPUs"
    };
    Check::new(
        "timer-migration",
        title,
        if v == want { Status::Ok } else { Status::Warn },
        format!("kernel.timer_migration={v}"),
    )
    .why(reason)
    .fix(format!("sysctl -w kernel.timer_migration={want}"))
    .cmd(format!("sysctl -w kernel.timer_migration={want}"))
}

pub(super) fn kthreads(root: &Root, f: &Facts) -> Check {
    let title = "kernel threads allowed on the RT CPUs";
    if f.targets.is_empty() {
        return Check::new(
            "kthreads",
            title,
            Status::Na,
            "no RT CPUs named or isolated".into(),
        )
        .why("unbound kernel threads may run on any CPU they are allowed on");
    }
    let mut movable = Vec::new();
    for (pid, comm) in processes(root) {
        let Some(status) = root.read_raw(&format!("/proc/{pid}/status")) else {
            continue;
        };
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k).map(|v| v.trim().to_string()))
        };
        let ppid = field("PPid:").and_then(|v| v.parse::<u64>().ok());
        let kernel = pid == 2 || ppid == Some(2);
        if !kernel {
            continue;
        }
        let allowed = cpus_of(field("Cpus_allowed_list:").as_deref());
        // Per-CPU threads (bound to one CPU) cannot move; flag the unbound ones.
        if allowed.len() > 1 && allowed.iter().any(|c| f.targets.contains(c)) {
            movable.push(comm);
        }
    }
    let found = if movable.is_empty() {
        format!(
            "no unbound kernel thread may run on CPUs {}",
            list(&f.targets)
        )
    } else {
        movable.sort();
        movable.dedup();
        let shown: Vec<&str> = movable.iter().take(5).map(String::as_str).collect();
        format!(
            "{} unbound kernel threads may run on CPUs {} ({}{})",
            movable.len(),
            list(&f.targets),
            shown.join(", "),
            if movable.len() > 5 { ", ..." } else { "" }
        )
    };
    let hk = list(&housekeeping(f));
    Check::new(
        "kthreads",
        title,
        if movable.is_empty() { Status::Ok } else { Status::Warn },
        found,
    )
    .why("unbound kernel threads (kworkers, rcu, kswapd) run wherever they are allowed")
    .fix(format!("kernel parameter isolcpus=domain,... keeps them off; at runtime: taskset -pc {hk} PID for each (kthreadd first)"))
    .cmd(format!("for p in $(ps -o pid= --ppid 2) 2; do taskset -pc {hk} $p >/dev/null 2>&1 || true; done"))
}

pub(super) fn workqueues(root: &Root, f: &Facts) -> Check {
    let title = "unbound workqueues (cpumask)";
    let files = [
        "/sys/devices/virtual/workqueue/cpumask",
        "/sys/bus/workqueue/devices/writeback/cpumask",
    ];
    let masks: Vec<(&str, String)> = files
        .iter()
        .filter_map(|p| root.read(p).map(|v| (*p, v)))
        .collect();
    if masks.is_empty() {
        return Check::new(
            "workqueues",
            title,
            Status::Na,
            "no workqueue cpumask".into(),
        )
        .why("unbound work items (writeback, ...) run on any CPU of the workqueue cpumask");
    }
    if f.targets.is_empty() {
        return Check::new(
            "workqueues",
            title,
            Status::Na,
            masks
                .iter()
                .map(|(p, v)| format!("{}={v}", p.rsplit('/').nth(1).unwrap_or("")))
                .collect::<Vec<_>>()
                .join(", "),
        )
        .why("unbound work items (writeback, ...) run on any CPU of the workqueue cpumask");
    }
    let hk_mask = hex_mask(&housekeeping(f));
    let mut bad = Vec::new();
    let mut shown = Vec::new();
    for (p, v) in &masks {
        let cpus = cpus_from_mask(v);
        shown.push(format!("{}={v}", p.rsplit('/').nth(1).unwrap_or("")));
        if cpus.iter().any(|c| f.targets.contains(c)) {
            bad.push(*p);
        }
    }
    let mut c = Check::new(
        "workqueues",
        title,
        if bad.is_empty() {
            Status::Ok
        } else {
            Status::Warn
        },
        format!("{} (RT CPUs {})", shown.join(", "), list(&f.targets)),
    )
    .why("unbound work items (writeback, ...) run on any CPU of the workqueue cpumask")
    .fix(format!("echo {hk_mask} > each of {}", bad.join(", ")));
    for p in bad {
        c = c.cmd(format!("echo {hk_mask} > {p}"));
    }
    c
}
