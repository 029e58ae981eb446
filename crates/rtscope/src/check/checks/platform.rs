//! The platform: watchdogs, virtualization, containers, and the hwlat
//! tracer with the SMI counter.

use super::sched::cgroup_rt_runtime;
use super::*;

pub(super) fn watchdogs(root: &Root, f: &Facts) -> Check {
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

pub(super) fn virtualization(root: &Root, f: &Facts) -> Check {
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
pub(super) const INIT_PID_NS: &str = "pid:[4026531836]";

pub(super) fn container(root: &Root) -> Check {
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
pub(super) fn smi_counter(root: &Root, f: &Facts) -> (usize, Result<u64, String>) {
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

pub(super) fn hwlat(root: &Root, f: &Facts) -> Check {
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
