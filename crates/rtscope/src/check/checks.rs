//! The checks, one function each: read through the [`Root`], judge, and say
//! what was found, why it matters and the fix for this kernel.

use std::collections::BTreeMap;

use serde::Serialize;

use rtscope_core::units::format_cpu_list;

use super::facts::{cpus_of, Facts};
use super::root::Root;

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Status {
    #[serde(rename = "ok")]
    Ok,
    #[serde(rename = "n/a")]
    Na,
    #[serde(rename = "warn")]
    Warn,
    #[serde(rename = "fail")]
    Fail,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Na => "n/a",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// One check's result.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub id: &'static str,
    pub title: &'static str,
    pub status: Status,
    /// What was found.
    pub found: String,
    /// Why it matters for latency.
    pub why: String,
    /// The fix, for this kernel and preemption model (absent when nothing to do).
    pub fix: Option<String>,
    /// Shell commands that apply the runtime part of the fix (for `--fix-script`).
    pub commands: Vec<String>,
    /// Kernel parameters the fix needs (boot-time; never applied).
    pub kernel_params: Vec<String>,
    /// Numbers measured by `--measure` that bear on this check.
    pub measured: Option<String>,
}

impl Check {
    fn new(id: &'static str, title: &'static str, status: Status, found: String) -> Self {
        Check {
            id,
            title,
            status,
            found,
            why: String::new(),
            fix: None,
            commands: Vec::new(),
            kernel_params: Vec::new(),
            measured: None,
        }
    }

    fn why(mut self, w: &str) -> Self {
        self.why = w.to_string();
        self
    }

    fn fix(mut self, f: impl Into<String>) -> Self {
        self.fix = Some(f.into());
        self
    }

    fn cmd(mut self, c: impl Into<String>) -> Self {
        self.commands.push(c.into());
        self
    }

    fn param(mut self, p: impl Into<String>) -> Self {
        self.kernel_params.push(p.into());
        self
    }

    /// Drops the fix when the check passed.
    fn settle(mut self) -> Self {
        if matches!(self.status, Status::Ok | Status::Na) {
            self.fix = None;
            self.commands.clear();
            self.kernel_params.clear();
        }
        self
    }
}

/// Every check, in the order they are printed.
pub fn all(root: &Root, f: &Facts) -> Vec<Check> {
    [
        preemption(f),
        isolcpus(f),
        nohz_full(f),
        rcu_nocbs(f),
        irqaffinity(f),
        cpus_named(f),
        irq_affinity(root, f),
        irqbalance(root, f),
        rt_throttling(root, f),
        rt_permitted(root, f),
        rlimit(root, f, "rlimit-rtprio"),
        rlimit(root, f, "rlimit-memlock"),
        cpufreq(root, f),
        cpuidle(root, f),
        thp(root),
        stat_interval(root),
        swappiness(root),
        watchdogs(root, f),
        timer_migration(root, f),
        clocksource(root, f),
        smt(root, f),
        kthreads(root, f),
        workqueues(root, f),
        virtualization(root, f),
        container(root),
        mitigations(root, f),
        console(root, f),
        hwlat(root, f),
    ]
    .into_iter()
    .map(Check::settle)
    .collect()
}

fn list(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        "none".into()
    } else {
        format_cpu_list(cpus)
    }
}

fn subset(a: &[usize], b: &[usize]) -> bool {
    a.iter().all(|c| b.contains(c))
}

/// A CPU list as a hex mask (`2-3` -> `c`), for cpumask files.
pub fn hex_mask(cpus: &[usize]) -> String {
    let max = cpus.iter().copied().max().unwrap_or(0);
    let mut words = vec![0u32; max / 32 + 1];
    for &c in cpus {
        words[c / 32] |= 1 << (c % 32);
    }
    let mut s: Vec<String> = words.iter().rev().map(|w| format!("{w:08x}")).collect();
    let first = s[0].trim_start_matches('0').to_string();
    s[0] = if first.is_empty() && s.len() == 1 {
        "0".into()
    } else {
        first
    };
    if s[0].is_empty() {
        s.remove(0);
    }
    s.join(",")
}

/// The CPUs a housekeeping mask should hold: online CPUs minus the targets.
fn housekeeping(f: &Facts) -> Vec<usize> {
    f.online
        .iter()
        .copied()
        .filter(|c| !f.targets.contains(c))
        .collect()
}

/// The CPUs a suggested isolation would isolate: the targets, or the last
/// online CPU(s) when nothing is named (keeping CPU 0 for housekeeping).
fn suggested_isolation(f: &Facts) -> Vec<usize> {
    if !f.targets.is_empty() {
        return f.targets.clone();
    }
    match f.online.len() {
        0 | 1 => Vec::new(),
        n => f.online[n / 2..].to_vec(),
    }
}

fn preemption(f: &Facts) -> Check {
    let mode = f.dyn_mode.as_deref();
    let found = match (f.model.as_str(), mode) {
        (m, Some(d)) if m == "PREEMPT_DYNAMIC" => format!("{} {m} (mode {d})", f.release),
        (m, _) if m == "PREEMPT_DYNAMIC" => format!("{} {m} (mode not readable)", f.release),
        (m, _) => format!("{} {m}", f.release),
    };
    if f.rt {
        return Check::new("preempt-rt", "kernel preemption model", Status::Ok, found)
            .why("PREEMPT_RT makes almost all kernel code preemptible: bounded wake-up latency");
    }
    let rt_kernel = if f.at_least(6, 12) {
        "boot a kernel built with CONFIG_PREEMPT_RT=y (mainline since 6.12; Debian/Ubuntu linux-image-rt, RHEL kernel-rt)"
    } else {
        "boot a PREEMPT_RT kernel (this kernel predates 6.12: RT needs the out-of-tree patch set, e.g. Debian linux-image-rt-*, RHEL kernel-rt)"
    };
    let weak = matches!(f.model.as_str(), "unknown" | "PREEMPT_DYNAMIC")
        && matches!(mode, Some("none") | Some("voluntary"))
        || f.model == "unknown";
    let mut c = Check::new(
        "preempt-rt",
        "kernel preemption model",
        if weak { Status::Fail } else { Status::Warn },
        found,
    )
    .why("without PREEMPT_RT, non-preemptible kernel sections (spinlocks, softirqs) add unbounded tails")
    .fix(rt_kernel);
    if f.model == "PREEMPT_DYNAMIC" && mode != Some("full") {
        c = c.param("preempt=full");
        c.fix = Some(format!("{rt_kernel}; meanwhile boot with preempt=full"));
    }
    c
}

fn isolcpus(f: &Facts) -> Check {
    let raw = f.params.get("isolcpus").cloned();
    if f.isolated.is_empty() {
        let s = suggested_isolation(f);
        let mut c = Check::new(
            "isolcpus",
            "isolated CPUs",
            Status::Warn,
            "no isolated CPUs".into(),
        )
        .why("without isolation the scheduler puts other tasks and their wake-ups on the RT CPUs");
        if !s.is_empty() {
            let flags = if f.at_least(5, 6) {
                "managed_irq,domain,"
            } else {
                ""
            };
            let p = format!("isolcpus={flags}{}", list(&s));
            c = c
                .fix(format!("kernel parameter {p}; {}", f.bootloader_hint()))
                .param(p);
        }
        return c;
    }
    let found = match raw {
        Some(r) => format!("isolcpus={r} (CPUs {})", list(&f.isolated)),
        None => format!("CPUs {} isolated", list(&f.isolated)),
    };
    Check::new("isolcpus", "isolated CPUs", Status::Ok, found)
        .why("isolated CPUs run only what is pinned there")
}

fn nohz_full(f: &Facts) -> Check {
    let title = "tickless isolated CPUs (nohz_full)";
    if f.isolated.is_empty() && f.nohz_full.is_empty() {
        return Check::new("nohz-full", title, Status::Na, "no isolated CPUs".into())
            .why("nohz_full stops the periodic tick on isolated CPUs running one task");
    }
    let missing: Vec<usize> = f
        .isolated
        .iter()
        .copied()
        .filter(|c| !f.nohz_full.contains(c))
        .collect();
    let found = format!("nohz_full CPUs {}", list(&f.nohz_full));
    let status = if missing.is_empty() && subset(&f.nohz_full, &f.isolated) {
        Status::Ok
    } else {
        Status::Warn
    };
    let p = format!("nohz_full={}", list(&f.isolated));
    Check::new("nohz-full", title, status, found)
        .why("the scheduler tick interrupts an isolated CPU every 1-4 ms unless nohz_full covers it (and matches isolcpus)")
        .fix(format!("kernel parameter {p} (same list as isolcpus); {}", f.bootloader_hint()))
        .param(p)
}

fn rcu_nocbs(f: &Facts) -> Check {
    let title = "RCU callbacks off isolated CPUs (rcu_nocbs)";
    if f.isolated.is_empty() {
        return Check::new("rcu-nocbs", title, Status::Na, "no isolated CPUs".into())
            .why("RCU callbacks run in softirq on the CPU that queued them unless offloaded");
    }
    let nocbs = cpus_of(f.params.get("rcu_nocbs").map(String::as_str));
    // nohz_full implies rcu_nocbs for the same CPUs.
    let covered: Vec<usize> = nocbs.iter().chain(&f.nohz_full).copied().collect();
    let ok = subset(&f.isolated, &covered);
    let found = if nocbs.is_empty() {
        format!(
            "rcu_nocbs not set (nohz_full covers {})",
            list(&f.nohz_full)
        )
    } else {
        format!("rcu_nocbs={}", list(&nocbs))
    };
    let p = format!("rcu_nocbs={}", list(&f.isolated));
    Check::new(
        "rcu-nocbs",
        title,
        if ok { Status::Ok } else { Status::Warn },
        found,
    )
    .why(
        "RCU callbacks run in softirq on the CPU that queued them unless offloaded to rcuo threads",
    )
    .fix(format!(
        "kernel parameter {p} (plus rcu_nocb_poll to keep the rcuo wake-ups off them); {}",
        f.bootloader_hint()
    ))
    .param(p)
}

fn irqaffinity(f: &Facts) -> Check {
    let title = "default IRQ affinity (irqaffinity)";
    let v = f.params.get("irqaffinity").cloned();
    let iso = if f.targets.is_empty() {
        &f.isolated
    } else {
        &f.targets
    };
    if iso.is_empty() {
        return Check::new(
            "irqaffinity",
            title,
            Status::Na,
            format!("irqaffinity={}", v.as_deref().unwrap_or("not set")),
        )
        .why("irqaffinity= keeps device interrupts on housekeeping CPUs from boot");
    }
    let cpus = cpus_of(v.as_deref());
    let overlap: Vec<usize> = cpus.iter().copied().filter(|c| iso.contains(c)).collect();
    let hk: Vec<usize> = f
        .online
        .iter()
        .copied()
        .filter(|c| !iso.contains(c))
        .collect();
    let (status, found) = match &v {
        None => (Status::Warn, "irqaffinity not set".to_string()),
        Some(s) if !overlap.is_empty() => (
            Status::Warn,
            format!("irqaffinity={s} includes RT CPUs {}", list(&overlap)),
        ),
        Some(s) => (Status::Ok, format!("irqaffinity={s}")),
    };
    let mut c = Check::new("irqaffinity", title, status, found)
        .why("device interrupts land on the RT CPUs unless the default affinity excludes them");
    if !hk.is_empty() {
        let p = format!("irqaffinity={}", list(&hk));
        c = c
            .fix(format!("kernel parameter {p}; {}", f.bootloader_hint()))
            .param(p);
    }
    c
}

fn cpus_named(f: &Facts) -> Check {
    let title = "the CPUs to measure on vs isolation";
    if f.targets_from != "--cpus" {
        return Check::new("cpus", title, Status::Na, "no --cpus given".into())
            .why("naming the RT CPUs (--cpus) checks them against isolcpus/nohz_full");
    }
    let offline: Vec<usize> = f
        .targets
        .iter()
        .copied()
        .filter(|c| !f.online.contains(c))
        .collect();
    if !offline.is_empty() {
        return Check::new(
            "cpus",
            title,
            Status::Fail,
            format!(
                "CPUs {} are not online (online: {})",
                list(&offline),
                list(&f.online)
            ),
        )
        .why("a real-time thread cannot be pinned to a CPU that is not online")
        .fix("name online CPUs in --cpus");
    }
    let not_iso: Vec<usize> = f
        .targets
        .iter()
        .copied()
        .filter(|c| !f.isolated.contains(c))
        .collect();
    let not_nohz: Vec<usize> = f
        .targets
        .iter()
        .copied()
        .filter(|c| !f.nohz_full.contains(c))
        .collect();
    let ok = not_iso.is_empty() && not_nohz.is_empty();
    let found = if ok {
        format!("CPUs {} are isolated and nohz_full", list(&f.targets))
    } else {
        format!(
            "CPUs {}: not isolated {}, not nohz_full {}",
            list(&f.targets),
            list(&not_iso),
            list(&not_nohz)
        )
    };
    let mut c = Check::new(
        "cpus",
        title,
        if ok { Status::Ok } else { Status::Warn },
        found,
    )
    .why("the CPUs the RT work runs on should be the isolated, tickless ones");
    if !ok {
        let l = list(&f.targets);
        let flags = if f.at_least(5, 6) {
            "managed_irq,domain,"
        } else {
            ""
        };
        c = c
            .fix(format!(
                "kernel parameters isolcpus={flags}{l} nohz_full={l} rcu_nocbs={l}; {}",
                f.bootloader_hint()
            ))
            .param(format!("isolcpus={flags}{l}"))
            .param(format!("nohz_full={l}"))
            .param(format!("rcu_nocbs={l}"));
    }
    c
}

/// IRQs (number, name, affinity) whose affinity includes any of `cpus`.
pub fn irqs_on(root: &Root, cpus: &[usize]) -> Vec<(u64, String, Vec<usize>)> {
    let names = irq_names(root);
    let mut v = Vec::new();
    for n in root.numeric_entries("/proc/irq") {
        let eff = root.read(&format!("/proc/irq/{n}/effective_affinity_list"));
        let aff = root.read(&format!("/proc/irq/{n}/smp_affinity_list"));
        let Some(a) = eff.or(aff) else { continue };
        let set = cpus_of(Some(&a));
        if set.iter().any(|c| cpus.contains(c)) {
            v.push((n, names.get(&n).cloned().unwrap_or_default(), set));
        }
    }
    v
}

/// IRQ number -> device name, from `/proc/interrupts`.
pub fn irq_names(root: &Root) -> BTreeMap<u64, String> {
    let text = root.read_raw("/proc/interrupts").unwrap_or_default();
    let mut m = BTreeMap::new();
    for l in text.lines().skip(1) {
        let Some((k, rest)) = l.split_once(':') else {
            continue;
        };
        if let Ok(n) = k.trim().parse::<u64>() {
            let name = rest.split_whitespace().last().unwrap_or("").to_string();
            m.insert(n, name);
        }
    }
    m
}

fn irq_affinity(root: &Root, f: &Facts) -> Check {
    let title = "device IRQs on the RT CPUs";
    if f.targets.is_empty() {
        return Check::new(
            "irq-affinity",
            title,
            Status::Na,
            "no RT CPUs named (--cpus) or isolated".into(),
        )
        .why("every device interrupt that may land on an RT CPU preempts the RT task");
    }
    if !root.exists("/proc/irq") {
        return Check::new(
            "irq-affinity",
            title,
            Status::Na,
            "/proc/irq not readable".into(),
        )
        .why("every device interrupt that may land on an RT CPU preempts the RT task");
    }
    let irqs = irqs_on(root, &f.targets);
    let hk = housekeeping(f);
    let found = if irqs.is_empty() {
        format!("no device IRQ may run on CPUs {}", list(&f.targets))
    } else {
        let shown: Vec<String> = irqs
            .iter()
            .take(6)
            .map(|(n, name, _)| {
                if name.is_empty() {
                    n.to_string()
                } else {
                    format!("{n} {name}")
                }
            })
            .collect();
        format!(
            "{} IRQs may run on CPUs {} ({}{})",
            irqs.len(),
            list(&f.targets),
            shown.join(", "),
            if irqs.len() > 6 { ", ..." } else { "" }
        )
    };
    let mut c = Check::new(
        "irq-affinity",
        title,
        if irqs.is_empty() {
            Status::Ok
        } else {
            Status::Warn
        },
        found,
    )
    .why("every device interrupt that may land on an RT CPU preempts the RT task");
    if !irqs.is_empty() && !hk.is_empty() {
        let l = list(&hk);
        c = c.fix(format!(
            "for i in /proc/irq/[0-9]*; do echo {l} > $i/smp_affinity_list; done (managed IRQs refuse: boot with isolcpus=managed_irq,...)"
        ));
        c = c.cmd(format!(
            "for i in /proc/irq/[0-9]*; do echo {l} > \"$i/smp_affinity_list\" 2>/dev/null || echo \"IRQ ${{i##*/}}: affinity not changeable\"; done"
        ));
        c = c.cmd(format!(
            "echo {} > /proc/irq/default_smp_affinity",
            hex_mask(&hk)
        ));
    }
    c
}

/// The comm of every process (`/proc/<pid>/comm`).
fn processes(root: &Root) -> Vec<(u64, String)> {
    root.numeric_entries("/proc")
        .into_iter()
        .filter_map(|p| root.read(&format!("/proc/{p}/comm")).map(|c| (p, c)))
        .collect()
}

fn irqbalance(root: &Root, f: &Facts) -> Check {
    let title = "irqbalance daemon";
    let running = processes(root).iter().any(|(_, c)| c == "irqbalance");
    if !running {
        return Check::new("irqbalance", title, Status::Ok, "not running".into())
            .why("irqbalance moves device interrupts, possibly onto RT CPUs");
    }
    let banned = root
        .read_raw("/etc/default/irqbalance")
        .or_else(|| root.read_raw("/etc/sysconfig/irqbalance"))
        .unwrap_or_default()
        .lines()
        .any(|l| l.trim_start().starts_with("IRQBALANCE_BANNED_CPULIST"));
    let c = Check::new(
        "irqbalance",
        title,
        if banned && !f.targets.is_empty() {
            Status::Ok
        } else {
            Status::Warn
        },
        format!(
            "running{}",
            if banned {
                " with IRQBALANCE_BANNED_CPULIST set"
            } else {
                ", no banned CPU list"
            }
        ),
    )
    .why("irqbalance moves device interrupts, possibly onto RT CPUs (it honours isolcpus only for domain isolation)");
    if f.targets.is_empty() {
        c.fix("systemctl disable --now irqbalance, or set IRQBALANCE_BANNED_CPULIST to the RT CPUs")
            .cmd("systemctl disable --now irqbalance")
    } else {
        let l = list(&f.targets);
        c.fix(format!("IRQBALANCE_BANNED_CPULIST={l} in /etc/default/irqbalance, then systemctl restart irqbalance"))
            .cmd(format!("echo 'IRQBALANCE_BANNED_CPULIST={l}' >> /etc/default/irqbalance"))
            .cmd("systemctl restart irqbalance")
    }
}

fn rt_throttling(root: &Root, f: &Facts) -> Check {
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

/// This process's cgroup (v1 `cpu` controller, or v2) relative path.
fn own_cgroup(root: &Root) -> Option<(String, bool)> {
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
fn cgroup_rt_runtime(root: &Root) -> Option<(String, i64)> {
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

fn rt_permitted(root: &Root, f: &Facts) -> Check {
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
fn limit(root: &Root, name: &str) -> Option<(Option<u64>, Option<u64>)> {
    let text = root.read_raw("/proc/self/limits")?;
    let l = text.lines().find(|l| l.starts_with(name))?;
    let rest: Vec<&str> = l[name.len()..].split_whitespace().collect();
    let v = |s: &str| s.parse::<u64>().ok();
    Some((v(rest.first()?), v(rest.get(1)?)))
}

fn rlimit(root: &Root, f: &Facts, id: &'static str) -> Check {
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

fn cpufreq(root: &Root, f: &Facts) -> Check {
    let title = "CPU frequency governor";
    let cpus = if f.targets.is_empty() {
        f.online.clone()
    } else {
        f.targets.clone()
    };
    let mut govs = BTreeMap::<String, Vec<usize>>::new();
    let mut freq = Vec::new();
    for &c in &cpus {
        let base = format!("/sys/devices/system/cpu/cpu{c}/cpufreq");
        if let Some(g) = root.read(&format!("{base}/scaling_governor")) {
            govs.entry(g).or_default().push(c);
        }
        if let Some(k) = root.read_i64(&format!("{base}/scaling_cur_freq")) {
            freq.push(k);
        }
    }
    if govs.is_empty() {
        let why = "a changing CPU frequency changes how long the same code takes";
        return Check::new(
            "cpufreq",
            title,
            Status::Na,
            if f.hypervisor {
                "no cpufreq (virtual machine: the host controls the frequency)".into()
            } else {
                "no cpufreq driver".into()
            },
        )
        .why(why);
    }
    let desc: Vec<String> = govs
        .iter()
        .map(|(g, cs)| format!("{g} on {}", list(cs)))
        .collect();
    let mut found = desc.join(", ");
    if let (Some(lo), Some(hi)) = (freq.iter().min(), freq.iter().max()) {
        found.push_str(&format!(", {}-{} MHz now", lo / 1000, hi / 1000));
    }
    let ok = govs.keys().all(|g| g == "performance");
    let l = list(&cpus);
    Check::new("cpufreq", title, if ok { Status::Ok } else { Status::Warn }, found)
        .why("a governor other than performance ramps the frequency: the same work takes longer right after idle")
        .fix(format!("cpupower -c {l} frequency-set -g performance"))
        .cmd(format!("for c in {}; do echo performance > /sys/devices/system/cpu/cpu$c/cpufreq/scaling_governor; done", cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" ")))
}

fn cpuidle(root: &Root, f: &Facts) -> Check {
    let title = "CPU idle states";
    let driver = root.read("/sys/devices/system/cpu/cpuidle/current_driver");
    let dma = root.exists("/dev/cpu_dma_latency");
    let why = "waking from a deep C-state takes tens to hundreds of µs";
    let cpu = f.targets.first().or(f.online.first()).copied().unwrap_or(0);
    let base = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle");
    let mut deep = Vec::new();
    let mut states = Vec::new();
    for s in root.list(&base) {
        if !s.starts_with("state") {
            continue;
        }
        let name = root.read(&format!("{base}/{s}/name")).unwrap_or(s.clone());
        let lat = root.read_i64(&format!("{base}/{s}/latency")).unwrap_or(0);
        let disabled = root.read_i64(&format!("{base}/{s}/disable")).unwrap_or(0) == 1;
        states.push(format!(
            "{name}:{lat}us{}",
            if disabled { "(off)" } else { "" }
        ));
        if lat > 10 && !disabled {
            deep.push(format!("{name} {lat}us"));
        }
    }
    let dma_text = if dma {
        "/dev/cpu_dma_latency present (rtscope holds it at 0 during runs)"
    } else {
        "no /dev/cpu_dma_latency"
    };
    let found = match (&driver, states.is_empty()) {
        (None, _) | (_, true) => format!(
            "idle driver {}; {dma_text}",
            driver.as_deref().unwrap_or("none")
        ),
        (Some(d), false) => format!("driver {d}, CPU {cpu}: {}; {dma_text}", states.join(" ")),
    };
    if deep.is_empty() {
        return Check::new("cpuidle", title, Status::Ok, found).why(why);
    }
    let p = if f.is_x86() {
        "processor.max_cstate=1 intel_idle.max_cstate=0"
    } else {
        "cpuidle.off=1"
    };
    let mut c = Check::new("cpuidle", title, Status::Warn, found)
        .why(why)
        .fix(format!(
            "hold /dev/cpu_dma_latency at 0 while the RT application runs (rtscope does), or disable deep states: kernel parameter {p}; per state: echo 1 > {base}/stateN/disable"
        ));
    for s in p.split(' ') {
        c = c.param(s);
    }
    c
}

fn thp(root: &Root) -> Check {
    let title = "transparent hugepages";
    let Some(v) = root.read("/sys/kernel/mm/transparent_hugepage/enabled") else {
        return Check::new("thp", title, Status::Na, "not available".into())
            .why("khugepaged compaction and huge page faults add ms-long stalls");
    };
    let mode = rtscope_core::system::bracketed_choice(&v.replace('[', "(").replace(']', ")"))
        .unwrap_or(v.clone());
    let status = if mode == "always" {
        Status::Warn
    } else {
        Status::Ok
    };
    Check::new("thp", title, status, format!("enabled={mode}"))
        .why("khugepaged compaction and huge page faults add ms-long stalls")
        .fix("echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (or never; kernel parameter transparent_hugepage=madvise)")
        .cmd("echo madvise > /sys/kernel/mm/transparent_hugepage/enabled")
}

fn stat_interval(root: &Root) -> Check {
    let title = "vmstat update interval";
    let Some(v) = root.read_i64("/proc/sys/vm/stat_interval") else {
        return Check::new("vm-stat-interval", title, Status::Na, "not readable".into())
            .why("the vmstat worker runs on every CPU each interval");
    };
    Check::new(
        "vm-stat-interval",
        title,
        if v >= 10 { Status::Ok } else { Status::Warn },
        format!("vm.stat_interval={v} s"),
    )
    .why("the vmstat_update work item runs on every CPU (isolated ones included) each interval")
    .fix("sysctl -w vm.stat_interval=10")
    .cmd("sysctl -w vm.stat_interval=10")
}

fn swappiness(root: &Root) -> Check {
    let title = "swap";
    let swaps = root
        .read_raw("/proc/swaps")
        .map(|s| s.lines().skip(1).filter(|l| !l.trim().is_empty()).count())
        .unwrap_or(0);
    let sw = root.read_i64("/proc/sys/vm/swappiness");
    let found = format!(
        "{} swap device{}, vm.swappiness={}",
        swaps,
        if swaps == 1 { "" } else { "s" },
        sw.map_or("?".into(), |v| v.to_string())
    );
    let status = if swaps > 0 && sw.is_some_and(|v| v > 10) {
        Status::Warn
    } else {
        Status::Ok
    };
    Check::new("swap", title, status, found)
        .why("a swapped-out page of an RT process costs a disk read (lock memory with mlockall; keep swappiness low)")
        .fix("sysctl -w vm.swappiness=1 (and mlockall in the RT application)")
        .cmd("sysctl -w vm.swappiness=1")
}

fn watchdogs(root: &Root, f: &Facts) -> Check {
    let title = "NMI and soft-lockup watchdogs";
    let nmi = root.read_i64("/proc/sys/kernel/nmi_watchdog");
    let soft = root
        .read_i64("/proc/sys/kernel/soft_watchdog")
        .or_else(|| root.read_i64("/proc/sys/kernel/watchdog"));
    if nmi.is_none() && soft.is_none() {
        return Check::new("watchdogs", title, Status::Na, "no watchdog sysctls".into())
            .why("the watchdogs run a timer and an hrtimer on every CPU");
    }
    let on = nmi == Some(1) || soft == Some(1);
    let found = format!(
        "nmi_watchdog={}, soft watchdog={}",
        nmi.map_or("-".into(), |v| v.to_string()),
        soft.map_or("-".into(), |v| v.to_string())
    );
    let mut c = Check::new(
        "watchdogs",
        title,
        if on { Status::Warn } else { Status::Ok },
        found,
    )
    .why("the lockup detectors fire an hrtimer (and a perf NMI) on every CPU every few seconds");
    if f.targets.is_empty() {
        c = c
            .fix("sysctl -w kernel.watchdog=0 (kernel parameters nowatchdog nmi_watchdog=0)")
            .cmd("sysctl -w kernel.watchdog=0");
    } else {
        let hk = list(&housekeeping(f));
        c = c
            .fix(format!("sysctl -w kernel.watchdog_cpumask={hk} (keeps them on housekeeping CPUs), or kernel.watchdog=0"))
            .cmd(format!("sysctl -w kernel.watchdog_cpumask={hk}"));
    }
    c.param("nmi_watchdog=0")
}

fn timer_migration(root: &Root, f: &Facts) -> Check {
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

fn clocksource(root: &Root, f: &Facts) -> Check {
    let title = "clocksource";
    let base = "/sys/devices/system/clocksource/clocksource0";
    let Some(cur) = root.read(&format!("{base}/current_clocksource")) else {
        return Check::new("clocksource", title, Status::Na, "not readable".into())
            .why("a slow clocksource makes every timestamp a trap or an MMIO read");
    };
    let avail = root
        .read(&format!("{base}/available_clocksource"))
        .unwrap_or_default();
    let good = matches!(
        cur.as_str(),
        "tsc" | "arch_sys_counter" | "arm_arch_counter"
    );
    let mut found = format!("{cur} (available: {avail})");
    let mut status = if good { Status::Ok } else { Status::Warn };
    if f.is_x86() {
        let missing: Vec<&str> = ["constant_tsc", "nonstop_tsc"]
            .into_iter()
            .filter(|fl| !f.has_flag(fl))
            .collect();
        if !missing.is_empty() {
            found.push_str(&format!("; TSC lacks {}", missing.join(", ")));
            status = status.max(Status::Warn);
        } else {
            found.push_str("; TSC invariant");
        }
        if f.params.get("tsc").is_some_and(|v| v == "reliable") {
            found.push_str(", tsc=reliable");
        }
    }
    let mut c = Check::new("clocksource", title, status, found)
        .why("clock_gettime through the vDSO needs tsc/arch counter; hpet, acpi_pm or kvm-clock fallbacks are slower and costlier per read");
    if !good && avail.split_whitespace().any(|a| a == "tsc") {
        c = c
            .fix(format!("echo tsc > {base}/current_clocksource (kernel parameter clocksource=tsc tsc=reliable if the TSC is known good)"))
            .cmd(format!("echo tsc > {base}/current_clocksource"))
            .param("clocksource=tsc");
    } else if !good {
        c = c.fix("use a clocksource the vDSO can read (tsc, arch_sys_counter)");
    } else {
        c = c.fix("boot a machine whose TSC is invariant (constant_tsc, nonstop_tsc)");
    }
    c
}

fn smt(root: &Root, f: &Facts) -> Check {
    let title = "SMT (hyper-threading)";
    let ctl = root.read("/sys/devices/system/cpu/smt/control");
    let cpus = if f.targets.is_empty() {
        f.online.clone()
    } else {
        f.targets.clone()
    };
    let mut shared = Vec::new();
    for &c in &cpus {
        let sib = cpus_of(
            root.read(&format!(
                "/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list"
            ))
            .as_deref(),
        );
        if sib.len() > 1 {
            shared.push(c);
        }
    }
    let found = format!(
        "smt/control={}; CPUs with a sibling thread: {}",
        ctl.as_deref().unwrap_or("-"),
        list(&shared)
    );
    let status = if !shared.is_empty() {
        Status::Warn
    } else if ctl.is_none() {
        Status::Na
    } else {
        Status::Ok
    };
    Check::new("smt", title, status, found)
        .why("a sibling hardware thread shares the core's pipeline and caches: its work slows the RT thread")
        .fix("echo off > /sys/devices/system/cpu/smt/control (kernel parameter nosmt), or keep the sibling of each RT CPU idle")
        .cmd("echo off > /sys/devices/system/cpu/smt/control")
        .param("nosmt")
}

fn kthreads(root: &Root, f: &Facts) -> Check {
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

fn workqueues(root: &Root, f: &Facts) -> Check {
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

/// A hex cpumask (`ffffffff,00000003`) as CPUs.
pub fn cpus_from_mask(v: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for (i, w) in v.split(',').rev().enumerate() {
        if let Ok(x) = u64::from_str_radix(w.trim(), 16) {
            for b in 0..64 {
                if x & (1 << b) != 0 {
                    cpus.push(i * 32 + b);
                }
            }
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

fn virtualization(root: &Root, f: &Facts) -> Check {
    let title = "virtual machine";
    let dmi: Vec<String> = [
        "/sys/hypervisor/type",
        "/sys/class/dmi/id/sys_vendor",
        "/sys/class/dmi/id/product_name",
    ]
    .iter()
    .filter_map(|p| root.read(p))
    .collect();
    let [dt_root, dt_hv] = rtscope_core::system::DEVICE_TREE_VM_FILES.map(|p| root.read_raw(p));
    let dt = rtscope_core::system::device_tree_vm(dt_root.as_deref(), dt_hv.as_deref());
    let vm_vendor = dmi.iter().any(|d| {
        let d = d.to_lowercase();
        [
            "qemu",
            "kvm",
            "vmware",
            "virtualbox",
            "xen",
            "microsoft",
            "amazon ec2",
            "google",
            "firecracker",
            "bochs",
        ]
        .iter()
        .any(|v| d.contains(v))
    });
    if !f.hypervisor && !vm_vendor && dt.is_none() {
        return Check::new(
            "vm",
            title,
            Status::Ok,
            "bare metal (no hypervisor flag)".into(),
        )
        .why("a hypervisor can deschedule a vCPU at any time");
    }
    let what = match (dmi.is_empty(), dt) {
        (false, _) => dmi.join(" / "),
        (true, Some(dt)) => dt,
        (true, None) => "the CPU reports a hypervisor".to_string(),
    };
    Check::new("vm", title, Status::Warn, format!("virtual machine ({what})"))
        .why("the host can deschedule a vCPU at any time: gaps no guest setting removes (rtscope noise shows them as hardware/hypervisor noise)")
        .fix("measure on bare metal; on the host pin each vCPU to a dedicated isolated core, run it SCHED_FIFO, and disable halt polling jitter (kvm.halt_poll_ns)")
}

/// `readlink /proc/self/ns/pid` in the kernel's initial PID namespace.
const INIT_PID_NS: &str = "pid:[4026531836]";

fn container(root: &Root) -> Check {
    let title = "container";
    let mut why_c = Vec::new();
    if root.exists("/.dockerenv") {
        why_c.push("/.dockerenv".to_string());
    }
    if root.exists("/run/.containerenv") {
        why_c.push("/run/.containerenv".to_string());
    }
    if let Some(env) = root.read_raw("/proc/1/environ") {
        if let Some(c) = env.split('\0').find_map(|e| e.strip_prefix("container=")) {
            why_c.push(format!("container={c}"));
        }
    }
    if let Some(cg) = root.read_raw("/proc/1/cgroup") {
        if cg.lines().any(|l| {
            ["docker", "kubepods", "lxc", "libpod", "containerd"]
                .iter()
                .any(|k| l.contains(k))
        }) {
            why_c.push("PID 1 is in a container cgroup".into());
        }
    }
    // The initial PID namespace has a fixed inode number in every kernel
    // (PROC_PID_INIT_INO); a container has its own namespace. A marker file
    // alone is weak: a root file system built from a container image keeps
    // /.dockerenv when it boots in a VM or on a board.
    let pid_ns = root.read_link("/proc/self/ns/pid");
    let host_ns = pid_ns.as_deref() == Some(INIT_PID_NS);
    let strong = why_c
        .iter()
        .any(|w| !w.starts_with("/.dockerenv") && !w.starts_with("/run/.containerenv"));
    if host_ns && !why_c.is_empty() && !strong {
        return Check::new(
            "container",
            title,
            Status::Ok,
            format!(
                "not in a container ({} present, but this is the host's PID namespace: a root file system built from a container image)",
                why_c.join(", ")
            ),
        )
        .why("a container may lack an RT budget or CAP_SYS_NICE");
    }
    if let Some(ns) = pid_ns.filter(|_| !host_ns) {
        if !why_c.is_empty() {
            why_c.push(format!("own PID namespace {ns}"));
        }
    }
    if why_c.is_empty() {
        return Check::new("container", title, Status::Ok, "not in a container".into())
            .why("a container may lack an RT budget or CAP_SYS_NICE");
    }
    let budget = cgroup_rt_runtime(root);
    let found = format!(
        "container ({}){}",
        why_c.join(", "),
        match &budget {
            Some((f, v)) => format!("; {f} = {v}"),
            None => String::new(),
        }
    );
    Check::new("container", title, Status::Warn, found)
        .why("a container may lack an RT budget (cpu.rt_runtime_us) or CAP_SYS_NICE, and shares the host's CPUs")
        .fix("run with --cap-add SYS_NICE --ulimit rtprio=99 --cpu-rt-runtime=950000 (docker; the daemon needs --cpu-rt-runtime too) and --cpuset-cpus on isolated CPUs")
}

fn mitigations(root: &Root, f: &Facts) -> Check {
    let title = "CPU vulnerability mitigations";
    let dir = "/sys/devices/system/cpu/vulnerabilities";
    let names = root.list(dir);
    if names.is_empty() {
        return Check::new("mitigations", title, Status::Na, "not reported".into())
            .why("some mitigations add work to every kernel entry and exit");
    }
    if f.params.get("mitigations").is_some_and(|v| v == "off") {
        return Check::new("mitigations", title, Status::Ok, "mitigations=off".into())
            .why("some mitigations add work to every kernel entry and exit");
    }
    // The ones that cost on every kernel entry/exit or context switch.
    let costly = |n: &str, v: &str| {
        (n == "meltdown" && v.contains("PTI"))
            || (n == "spectre_v2"
                && (v.contains("IBRS") && !v.contains("eIBRS") && !v.contains("IBRS_FW")
                    || v.contains("Retpolines")
                    || v.contains("IBPB: always")))
            || (n == "mds" || n == "mmio_stale_data" || n == "tsx_async_abort")
                && v.contains("Clear CPU buffers")
            || (n == "l1tf" && v.contains("flush"))
            || (n == "retbleed" && (v.contains("untrained return thunk") || v.contains("IBRS")))
            || (n == "spec_rstack_overflow" && v.contains("Safe RET"))
            || (n == "gather_data_sampling" && v.contains("Microcode"))
    };
    let mut hit = Vec::new();
    for n in &names {
        if let Some(v) = root.read(&format!("{dir}/{n}")) {
            if v.starts_with("Mitigation") && costly(n, &v) {
                hit.push(n.clone());
            }
        }
    }
    let found = if hit.is_empty() {
        "no costly mitigation active".to_string()
    } else {
        format!("active: {}", hit.join(", "))
    };
    Check::new(
        "mitigations",
        title,
        if hit.is_empty() {
            Status::Ok
        } else {
            Status::Warn
        },
        found,
    )
    .why("these add work to kernel entry/exit and context switches (each IRQ, each wake-up)")
    .fix(format!(
        "only on machines that run trusted code: kernel parameter mitigations=off; {}",
        f.bootloader_hint()
    ))
    .param("mitigations=off")
}

fn console(root: &Root, f: &Facts) -> Check {
    let title = "printk on a serial console";
    let serial: Vec<String> = f
        .cmdline
        .split_whitespace()
        .take_while(|w| *w != "--")
        .filter_map(|w| w.strip_prefix("console="))
        .filter(|c| {
            c.starts_with("ttyS")
                || c.starts_with("ttyAMA")
                || c.starts_with("ttymxc")
                || c.starts_with("ttyO")
        })
        .map(str::to_string)
        .collect();
    let level = root.read("/proc/sys/kernel/printk").and_then(|s| {
        s.split_whitespace()
            .next()
            .and_then(|v| v.parse::<i64>().ok())
    });
    let found = format!(
        "console={}; console loglevel {}",
        if serial.is_empty() {
            "no serial".into()
        } else {
            serial.join(",")
        },
        level.map_or("?".into(), |l| l.to_string())
    );
    let status = if !serial.is_empty() && level.is_none_or(|l| l > 3) {
        Status::Warn
    } else {
        Status::Ok
    };
    Check::new("console", title, status, found)
        .why("a kernel message to a serial console is written synchronously at ~10 µs per character, often with interrupts off")
        .fix("dmesg -n 1 (console loglevel 1), or drop console=ttyS* / boot with quiet loglevel=3")
        .cmd("dmesg -n 1")
        .param("loglevel=3")
}

/// Whether the kernel has the hwlat tracer: its `available_tracers` where
/// tracefs is mounted, else its config in `/boot`, else its symbols; `None`
/// when none says.
pub fn hwlat_tracer(root: &Root, f: &Facts) -> Option<(bool, &'static str)> {
    for p in [
        "/sys/kernel/tracing/available_tracers",
        "/sys/kernel/debug/tracing/available_tracers",
    ] {
        if let Some(t) = root.read(p) {
            return Some((
                t.split_whitespace().any(|w| w == "hwlat"),
                "available_tracers",
            ));
        }
    }
    if let Some(config) = root.read_raw(&format!("/boot/config-{}", f.release)) {
        return Some((
            config.lines().any(|l| l.trim() == "CONFIG_HWLAT_TRACER=y"),
            "the kernel's config",
        ));
    }
    // The tracer's own init is in the kernel only with it (its output
    // functions are in every kernel); /proc/kallsyms names it to any reader.
    let syms = root.read_raw("/proc/kallsyms")?;
    Some((
        syms.lines()
            .any(|l| l.split_whitespace().nth(2) == Some("hwlat_tracer_init")),
        "the kernel's symbols",
    ))
}

/// The SMI counter of the first target CPU (or CPU 0): its count, or why
/// it cannot be read (nothing is loaded: a missing msr driver is said).
fn smi_counter(root: &Root, f: &Facts) -> (usize, Result<u64, String>) {
    use rtscope_core::hwlat::smi;
    let cpu = f.targets.first().copied().unwrap_or(0);
    let arch = if f.is_x86() {
        "x86_64"
    } else {
        f.arch.as_str()
    };
    let vendor = smi::vendor(&root.read_raw("/proc/cpuinfo").unwrap_or_default());
    if let Some(r) = smi::unsupported(arch, vendor.as_deref()) {
        return (cpu, Err(r));
    }
    let dev = format!("/dev/cpu/{cpu}/msr");
    let res = smi::read_msr(&root.path(&dev), smi::MSR_SMI_COUNT)
        .map(|v| v & 0xffff_ffff)
        .map_err(|e| smi::why(std::path::Path::new(&dev), &e));
    (cpu, res)
}

fn hwlat(root: &Root, f: &Facts) -> Check {
    let title = "hardware latency (hwlat tracer, SMI counter)";
    let (cpu, smi) = smi_counter(root, f);
    let smi_text = match &smi {
        Ok(n) => format!("SMI counter: {n} SMIs on CPU {cpu} since boot"),
        Err(r) => format!("SMI counter: not readable ({r})"),
    };
    let why = "a real-time qualification starts with the machine itself: the kernel's hwlat tracer (rtscope hwlat) measures its stalls (SMIs, firmware, power management, a hypervisor) with interrupts off; MSR_SMI_COUNT counts the SMIs";
    match hwlat_tracer(root, f) {
        Some((true, from)) => Check::new(
            "hwlat",
            title,
            Status::Ok,
            format!("hwlat tracer: yes ({from}); {smi_text}"),
        )
        .why(why),
        Some((false, from)) => Check::new(
            "hwlat",
            title,
            Status::Warn,
            format!("hwlat tracer: no ({from}); {smi_text}"),
        )
        .why(why)
        .fix("a kernel with CONFIG_HWLAT_TRACER=y (Debian's -rt kernels have it); without it rtscope hwlat measures from user space, with interrupts on: an upper bound"),
        None => Check::new(
            "hwlat",
            title,
            Status::Na,
            format!("hwlat tracer: unknown (tracefs not mounted, no /boot/config-{}, no /proc/kallsyms); {smi_text}", f.release),
        )
        .why(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every check runs on any tree, once each, the hwlat row last.
    #[test]
    fn every_check_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let all = all(&root, &Facts::read(&root, None));
        let ids: Vec<&str> = all.iter().map(|c| c.id).collect();
        assert_eq!(ids.len(), 28, "{ids:?}");
        assert_eq!(ids.first(), Some(&"preempt-rt"));
        assert_eq!(ids.last(), Some(&"hwlat"));
        let mut unique = ids.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), ids.len(), "{ids:?}");
    }

    /// The hwlat check on fake trees: the tracer from available_tracers or
    /// the kernel's config, the SMI counter by vendor and msr device.
    #[test]
    fn the_hwlat_tracer_and_the_smi_counter() {
        let check = |files: &[(&str, &[u8])]| {
            let dir = tempfile::tempdir().unwrap();
            for (path, text) in files {
                let p = dir.path().join(path.trim_start_matches('/'));
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, text).unwrap();
            }
            let root = Root::new(dir.path());
            let c = hwlat(&root, &Facts::read(&root, None));
            (c.status, c.found, c.fix)
        };
        let intel: &[u8] = b"processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu lm\n";
        let release: (&str, &[u8]) = ("/proc/sys/kernel/osrelease", b"6.1.0-56-rt-amd64\n");
        let (st, found, _) = check(&[release]);
        assert_eq!(st, Status::Na);
        assert!(
            found.starts_with(
                "hwlat tracer: unknown (tracefs not mounted, no /boot/config-6.1.0-56-rt-amd64, no /proc/kallsyms)"
            ),
            "{found}"
        );
        assert!(
            found.contains("SMI counter: not readable (the CPU's architecture is unknown)"),
            "{found}"
        );
        let (st, found, fix) = check(&[
            release,
            (
                "/boot/config-6.1.0-56-rt-amd64",
                b"# CONFIG_HWLAT_TRACER is not set\n",
            ),
        ]);
        assert_eq!(st, Status::Warn);
        assert!(
            found.starts_with("hwlat tracer: no (the kernel's config)"),
            "{found}"
        );
        assert!(fix.unwrap().contains("CONFIG_HWLAT_TRACER=y"));
        let (st, found, fix) = check(&[
            release,
            ("/boot/config-6.1.0-56-rt-amd64", b"CONFIG_HWLAT_TRACER=y\n"),
            ("/proc/cpuinfo", intel),
        ]);
        assert_eq!(st, Status::Ok);
        assert_eq!(
            found,
            "hwlat tracer: yes (the kernel's config); SMI counter: not readable (no /dev/cpu/0/msr (the msr driver is not loaded: modprobe msr))"
        );
        assert_eq!(fix, None);
        // available_tracers says first; the counter read through the msr device.
        let mut msr = vec![0u8; 0x40];
        msr[0x34] = 42;
        let (st, found, _) = check(&[
            release,
            (
                "/boot/config-6.1.0-56-rt-amd64",
                b"# CONFIG_HWLAT_TRACER is not set\n",
            ),
            (
                "/sys/kernel/tracing/available_tracers",
                b"timerlat osnoise hwlat nop\n",
            ),
            ("/proc/cpuinfo", intel),
            ("/dev/cpu/0/msr", &msr),
        ]);
        assert_eq!(st, Status::Ok);
        assert_eq!(
            found,
            "hwlat tracer: yes (available_tracers); SMI counter: 42 SMIs on CPU 0 since boot"
        );
        // Neither mounted nor configured: the kernel's symbols (the output
        // functions are in every kernel, the tracer's init only with it).
        let (st, found, _) = check(&[(
            "/proc/kallsyms",
            b"ffffffff8149fa20 t trace_hwlat_raw\nffffffff814a0240 t trace_hwlat_print\n",
        )]);
        assert_eq!(st, Status::Warn);
        assert!(
            found.starts_with("hwlat tracer: no (the kernel's symbols)"),
            "{found}"
        );
        let (st, found, _) =
            check(&[("/proc/kallsyms", b"0000000000000000 t hwlat_tracer_init\n")]);
        assert_eq!(st, Status::Ok);
        assert!(
            found.starts_with("hwlat tracer: yes (the kernel's symbols)"),
            "{found}"
        );
        let (st, found, _) = check(&[(
            "/sys/kernel/debug/tracing/available_tracers",
            b"blk function nop\n",
        )]);
        assert_eq!(st, Status::Warn);
        assert!(
            found.starts_with("hwlat tracer: no (available_tracers)"),
            "{found}"
        );
        // An AMD CPU and an ARM one have no counter to read.
        let (_, found, _) = check(&[(
            "/proc/cpuinfo",
            b"vendor_id\t: AuthenticAMD\nflags\t\t: fpu lm\n",
        )]);
        assert!(
            found.contains("AuthenticAMD CPU: MSR_SMI_COUNT (0x34) is Intel's"),
            "{found}"
        );
        let (_, found, _) = check(&[(
            "/proc/cpuinfo",
            b"CPU implementer\t: 0x41\nFeatures\t: fp asimd\n",
        )]);
        assert!(found.contains("aarch64 has no SMIs"), "{found}");
    }

    /// The virtual-machine check on fake trees: bare metal, the CPU's
    /// hypervisor flag, DMI, and an ARM guest named by its device tree
    /// (qemu virt, as the kernel lab's arm64 guest is).
    #[test]
    fn virtual_machines_by_flag_dmi_or_device_tree() {
        let vm = |files: &[(&str, &str)]| {
            let dir = tempfile::tempdir().unwrap();
            for (path, text) in files {
                let p = dir.path().join(path.trim_start_matches('/'));
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, text).unwrap();
            }
            let root = Root::new(dir.path());
            let c = virtualization(&root, &Facts::read(&root, None));
            (c.status, c.found)
        };
        let dt = rtscope_core::system::DEVICE_TREE_VM_FILES[0];
        assert_eq!(vm(&[]).0, Status::Ok);
        assert_eq!(vm(&[(dt, "acme,board\0")]).0, Status::Ok);
        let (st, found) = vm(&[(dt, "linux,dummy-virt\0")]);
        assert_eq!(st, Status::Warn);
        assert!(found.contains("linux,dummy-virt"), "{found}");
        // DMI names the machine first.
        let (st, found) = vm(&[
            ("/sys/class/dmi/id/sys_vendor", "QEMU\n"),
            (dt, "linux,dummy-virt\0"),
        ]);
        assert_eq!(
            (st, found.as_str()),
            (Status::Warn, "virtual machine (QEMU)")
        );
        // The CPU's flag alone.
        let (st, found) = vm(&[(
            "/proc/cpuinfo",
            "processor\t: 0\nflags\t\t: fpu hypervisor\n",
        )]);
        assert_eq!(
            (st, found.as_str()),
            (
                Status::Warn,
                "virtual machine (the CPU reports a hypervisor)"
            )
        );
    }

    #[test]
    fn masks() {
        assert_eq!(hex_mask(&[0]), "1");
        assert_eq!(hex_mask(&[2, 3]), "c");
        assert_eq!(hex_mask(&[0, 33]), "2,00000001");
        assert_eq!(cpus_from_mask("2,00000001"), vec![0, 33]);
        assert_eq!(cpus_from_mask("3"), vec![0, 1]);
        assert_eq!(cpus_from_mask("ffffffff,ffffffff").len(), 64);
    }
}
