//! The checks, one function each: read through the [`Root`], judge, and say
//! what was found, why it matters and the fix for this kernel.

use std::collections::BTreeMap;

use serde::Serialize;

use rtscope_core::units::format_cpu_list;

use super::facts::{cpus_of, Facts};
use super::root::Root;

mod boot;
mod irqs;
mod memory;
mod platform;
mod power;
mod sched;

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

/// A check: reads through the [`Root`] and judges with the [`Facts`].
type CheckFn = fn(&Root, &Facts) -> Check;

/// Every check, in the order they are printed, by family (one file each).
const CHECKS: &[CheckFn] = &[
    |_, f| boot::preemption(f),
    |_, f| boot::isolcpus(f),
    |_, f| boot::nohz_full(f),
    |_, f| boot::rcu_nocbs(f),
    |_, f| boot::irqaffinity(f),
    |_, f| boot::cpus_named(f),
    irqs::irq_affinity,
    irqs::irqbalance,
    sched::rt_throttling,
    sched::deadline_bandwidth,
    sched::rt_permitted,
    |root, f| sched::rlimit(root, f, "rlimit-rtprio"),
    |root, f| sched::rlimit(root, f, "rlimit-memlock"),
    power::cpufreq,
    power::cpuidle,
    |root, _| memory::thp(root),
    |root, _| memory::stat_interval(root),
    |root, _| memory::swappiness(root),
    platform::watchdogs,
    sched::timer_migration,
    power::clocksource,
    power::smt,
    sched::kthreads,
    sched::workqueues,
    platform::virtualization,
    |root, _| platform::container(root),
    boot::mitigations,
    boot::console,
    platform::hwlat,
];

/// Every check, in the order they are printed.
pub fn all(root: &Root, f: &Facts) -> Vec<Check> {
    CHECKS.iter().map(|check| check(root, f).settle()).collect()
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

/// The comm of every process (`/proc/<pid>/comm`).
fn processes(root: &Root) -> Vec<(u64, String)> {
    root.numeric_entries("/proc")
        .into_iter()
        .filter_map(|p| root.read(&format!("/proc/{p}/comm")).map(|c| (p, c)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::platform::*;
    use super::*;

    /// A tree of `files` (absolute paths below a temporary root).
    fn fake_tree<T: AsRef<[u8]>>(files: &[(&str, T)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    /// Every check runs on any tree, once each, the hwlat row last.
    #[test]
    fn every_check_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let all = all(&root, &Facts::read(&root, None));
        let ids: Vec<&str> = all.iter().map(|c| c.id).collect();
        assert_eq!(ids.len(), 29, "{ids:?}");
        assert_eq!(ids.first(), Some(&"preempt-rt"));
        assert_eq!(ids.last(), Some(&"hwlat"));
        let mut unique = ids.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), ids.len(), "{ids:?}");
    }

    /// What deadline tasks may reserve: the RT bandwidth less the fair
    /// server's share, read from debugfs or assumed by release.
    #[test]
    fn the_deadline_bandwidth_on_fake_trees() {
        let check = |files: &[(&str, &str)]| {
            let dir = fake_tree(files);
            let root = Root::new(dir.path());
            let c = super::sched::deadline_bandwidth(&root, &Facts::read(&root, None));
            (c.status, c.found, c.fix)
        };
        let online = ("/sys/devices/system/cpu/online", "0-1\n");
        let runtime = |r: &'static str| ("/proc/sys/kernel/sched_rt_runtime_us", r);
        let period = ("/proc/sys/kernel/sched_rt_period_us", "1000000\n");
        let (st, found, _) = check(&[online]);
        assert_eq!(
            (st, found.as_str()),
            (Status::Na, "sched_rt_runtime_us not readable")
        );
        let (st, found, _) = check(&[online, runtime("-1\n"), period]);
        assert_eq!(st, Status::Ok);
        assert!(found.starts_with("no limit"), "{found}");
        // 6.1: no fair server.
        let old = ("/proc/sys/kernel/osrelease", "6.1.0-56-rt-amd64\n");
        let (st, found, fix) = check(&[online, runtime("950000\n"), period, old]);
        assert_eq!(st, Status::Ok);
        assert_eq!(
            found,
            "95.0% of each CPU, 190% of 2 CPUs in all (sched_rt_runtime_us=950000 of 1000000)"
        );
        assert_eq!(fix, None);
        // 6.18 with debugfs unreadable: the server's default.
        let new = ("/proc/sys/kernel/osrelease", "6.18.4\n");
        let (_, found, _) = check(&[online, runtime("950000\n"), period, new]);
        assert_eq!(
            found,
            "90.0% of each CPU, 180% of 2 CPUs in all (sched_rt_runtime_us=950000 of 1000000, \
             less the fair-class server's 5.0% (its default: /sys/kernel/debug/sched/fair_server \
             not readable))"
        );
        // Read from debugfs: 10 % held.
        let srv = |cpu: &str, f: &str, v: &'static str| {
            (format!("/sys/kernel/debug/sched/fair_server/{cpu}/{f}"), v)
        };
        let files = [
            srv("cpu0", "period", "1000000000\n"),
            srv("cpu0", "runtime", "100000000\n"),
            srv("cpu1", "period", "1000000000\n"),
            srv("cpu1", "runtime", "100000000\n"),
        ];
        let mut all: Vec<(&str, &str)> = vec![online, runtime("950000\n"), period, new];
        all.extend(files.iter().map(|(p, v)| (p.as_str(), *v)));
        let (st, found, _) = check(&all);
        assert_eq!(st, Status::Ok);
        assert!(
            found.starts_with("85.0% of each CPU, 170% of 2 CPUs in all")
                && found.ends_with("less the fair-class server's 10.0%)"),
            "{found}"
        );
        // Nothing left: a warning with the fix.
        let (st, found, fix) = check(&[online, runtime("0\n"), period, old]);
        assert_eq!(st, Status::Warn);
        assert!(found.starts_with("none: 0.0% of each CPU"), "{found}");
        assert!(fix
            .unwrap()
            .starts_with("sysctl -w kernel.sched_rt_runtime_us=950000"));
        let (st, _, _) = check(&[online, runtime("50000\n"), period, new]);
        assert_eq!(st, Status::Warn, "5 % less the server's 5 %");
        // Another period; one of 0 is the kernel's default, 1 s.
        let half = ("/proc/sys/kernel/sched_rt_period_us", "500000\n");
        let (_, found, _) = check(&[online, runtime("450000\n"), half, old]);
        assert!(found.starts_with("90.0% of each CPU"), "{found}");
        let zero = ("/proc/sys/kernel/sched_rt_period_us", "0\n");
        let (_, found, _) = check(&[online, runtime("950000\n"), zero, old]);
        assert!(found.starts_with("95.0% of each CPU"), "{found}");
        // One CPU is said in the singular.
        let (_, found, _) = check(&[
            ("/sys/devices/system/cpu/online", "0\n"),
            runtime("950000\n"),
            period,
            old,
        ]);
        assert!(found.contains("95% of 1 CPU in all"), "{found}");
    }

    /// The hwlat check on fake trees: the tracer from available_tracers or
    /// the kernel's config, the SMI counter by vendor and msr device.
    #[test]
    fn the_hwlat_tracer_and_the_smi_counter() {
        let check = |files: &[(&str, &[u8])]| {
            let dir = fake_tree(files);
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
