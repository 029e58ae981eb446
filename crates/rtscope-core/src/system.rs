//! A snapshot of the machine a measurement ran on: kernel, preemption model,
//! boot parameters that matter for latency, clock source, CPUs, frequency
//! governors, virtualisation, RT throttling and limits.
//!
//! Every field is read from procfs/sysfs without changing anything; a field
//! that cannot be read is `null` rather than an error, so a snapshot always
//! succeeds (on a board with a minimal kernel, in a container, ...).

use std::collections::BTreeMap;
use std::fs;

use serde::{Deserialize, Serialize};

use crate::sys;
use crate::units::{format_cpu_list, online_cpus, parse_cpu_list};

/// What was known about the machine when the run started.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SystemSnapshot {
    /// The host name, where readable.
    pub hostname: Option<String>,
    /// `x86_64`, `aarch64`, ...
    pub arch: String,
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v`.
    pub kernel_version: String,
    /// `PREEMPT_RT`, `PREEMPT_DYNAMIC`, `PREEMPT`, `voluntary`, `none`, or `unknown`.
    pub preemption_model: String,
    /// True when the kernel is PREEMPT_RT (`/sys/kernel/realtime` or the version string).
    pub preempt_rt: bool,
    /// The PREEMPT_DYNAMIC mode in force (`full`, `voluntary`, `none`, `lazy`) where readable.
    pub preempt_dynamic_mode: Option<String>,
    /// The kernel command line (`/proc/cmdline`).
    pub cmdline: Option<String>,
    /// Its `isolcpus=`, if any.
    pub isolcpus: Option<String>,
    /// Its `nohz_full=`, if any.
    pub nohz_full: Option<String>,
    /// Its `rcu_nocbs=`, if any.
    pub rcu_nocbs: Option<String>,
    /// The current clocksource.
    pub clocksource: Option<String>,
    /// The clocksources the kernel offers.
    pub clocksources_available: Vec<String>,
    /// The CPU model name.
    pub cpu_model: Option<String>,
    /// The online CPUs, as a CPU list.
    pub online_cpus: String,
    /// Their number.
    pub cpu_count: usize,
    /// `on`, `off`, `notsupported`, ... from `/sys/devices/system/cpu/smt/control`.
    pub smt: Option<String>,
    /// cpufreq governor per CPU (absent where cpufreq is not present).
    pub governors: BTreeMap<String, String>,
    /// Whether the CPU reports running under a hypervisor.
    pub hypervisor: bool,
    /// DMI vendor / product / hypervisor type, where readable.
    pub virtualization: Option<String>,
    /// `/proc/sys/kernel/sched_rt_runtime_us` (-1: RT throttling off).
    pub sched_rt_runtime_us: Option<i64>,
    /// `/proc/sys/kernel/sched_rt_period_us`.
    pub sched_rt_period_us: Option<i64>,
    /// This process's timer slack, ns.
    pub timer_slack_ns: u64,
    /// RLIMIT_RTPRIO soft and hard (`null` = unlimited).
    pub rlimit_rtprio: [Option<u64>; 2],
    /// Effective uid (0 = root).
    pub euid: u32,
    /// CPU feature flags that matter for timekeeping (constant_tsc, nonstop_tsc, ...).
    pub clock_flags: Vec<String>,
}

/// A file's text, trimmed; `None` when it cannot be read or is blank.
fn read_trim(read: &dyn Fn(&str) -> Option<String>, path: &str) -> Option<String> {
    read(path)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The device-tree files that name a virtual machine where there is no DMI
/// and no CPU hypervisor flag (ARM guests): the root node's `compatible`
/// and the `/hypervisor` node's.
pub const DEVICE_TREE_VM_FILES: [&str; 2] = [
    "/sys/firmware/devicetree/base/compatible",
    "/sys/firmware/devicetree/base/hypervisor/compatible",
];

/// The virtual machine a device tree names, from the contents of
/// [`DEVICE_TREE_VM_FILES`] (NUL-separated string lists, as the kernel gives
/// them): qemu's `virt` machine (`linux,dummy-virt`), or any `/hypervisor`
/// node (Xen, KVM's and others' paravirtual interfaces).
pub fn device_tree_vm(root: Option<&str>, hypervisor: Option<&str>) -> Option<String> {
    let list = |s: Option<&str>| -> Vec<String> {
        s.unwrap_or_default()
            .split('\0')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect()
    };
    let hv = list(hypervisor);
    if !hv.is_empty() {
        return Some(format!("device tree hypervisor node: {}", hv.join(", ")));
    }
    list(root)
        .iter()
        .any(|c| c == "linux,dummy-virt")
        .then(|| "QEMU virt machine (device tree: linux,dummy-virt)".to_string())
}

/// What [`SystemSnapshot::capture`] asks of the machine besides its files.
struct Machine {
    /// `uname(2)`: (sysname, release, version, machine).
    uname: (String, String, String, String),
    online_cpus: Vec<usize>,
    rlimit_rtprio: (u64, u64),
    timer_slack_ns: u64,
    euid: u32,
}

fn cmdline_param(cmdline: &str, key: &str) -> Option<String> {
    cmdline.split_whitespace().find_map(|w| {
        w.strip_prefix(key)
            .and_then(|r| r.strip_prefix('='))
            .map(str::to_string)
    })
}

/// Derives the preemption model from the kernel version string and
/// `/sys/kernel/realtime`.
pub fn preemption_model(version: &str, realtime_flag: bool) -> &'static str {
    if realtime_flag || version.contains("PREEMPT_RT") {
        "PREEMPT_RT"
    } else if version.contains("PREEMPT_DYNAMIC") {
        "PREEMPT_DYNAMIC"
    } else if version.contains("PREEMPT_LAZY") {
        "PREEMPT_LAZY"
    } else if version.contains("PREEMPT") {
        "PREEMPT"
    } else {
        "unknown"
    }
}

/// Extracts the active choice from a line like `none voluntary (full) lazy`.
pub fn bracketed_choice(s: &str) -> Option<String> {
    s.split_whitespace()
        .find(|w| w.starts_with('(') && w.ends_with(')'))
        .map(|w| w.trim_matches(|c| c == '(' || c == ')').to_string())
}

impl SystemSnapshot {
    /// Reads the snapshot of the running machine.
    pub fn capture() -> Self {
        let machine = Machine {
            uname: sys::uname(),
            online_cpus: online_cpus(),
            rlimit_rtprio: sys::rlimit_rtprio(),
            timer_slack_ns: sys::timer_slack(),
            euid: sys::geteuid(),
        };
        Self::capture_with(&|p: &str| fs::read_to_string(p).ok(), machine)
    }

    /// The snapshot from the files `read` gives (by absolute path) and the
    /// facts of `m`.
    fn capture_with(read: &dyn Fn(&str) -> Option<String>, m: Machine) -> Self {
        let read_trim = |p: &str| read_trim(read, p);
        let (_, release, version, machine) = m.uname;
        let realtime_flag = read_trim("/sys/kernel/realtime").as_deref() == Some("1");
        let preempt_rt = realtime_flag || version.contains("PREEMPT_RT");
        let preempt_dynamic_mode = read_trim("/sys/kernel/debug/sched/preempt")
            .as_deref()
            .and_then(bracketed_choice);
        let cmdline = read_trim("/proc/cmdline");
        let param = |k: &str| cmdline.as_deref().and_then(|c| cmdline_param(c, k));
        let isolated_sys = read_trim("/sys/devices/system/cpu/isolated");
        let nohz_sys = read_trim("/sys/devices/system/cpu/nohz_full").filter(|s| s != "(null)");
        let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == name).then(|| v.trim().to_string())
            })
        };
        let flags: Vec<String> = field("flags")
            .or_else(|| field("Features"))
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let hypervisor = flags.iter().any(|f| f == "hypervisor");
        let clock_flags = flags
            .iter()
            .filter(|f| {
                matches!(
                    f.as_str(),
                    "tsc"
                        | "constant_tsc"
                        | "nonstop_tsc"
                        | "tsc_reliable"
                        | "rdtscp"
                        | "tsc_known_freq"
                        | "tsc_deadline_timer"
                        | "evtstrm"
                )
            })
            .cloned()
            .collect();
        let cpu_model = field("model name")
            .or_else(|| field("Hardware"))
            .or_else(|| field("Model"))
            .or_else(|| field("CPU part").map(|p| format!("CPU part {p}")));
        let cpus = m.online_cpus;
        let mut governors = BTreeMap::new();
        for c in &cpus {
            if let Some(g) = read_trim(&format!(
                "/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"
            )) {
                governors.insert(format!("cpu{c}"), g);
            }
        }
        let virtualization = {
            let parts: Vec<String> = [
                "/sys/hypervisor/type",
                "/sys/class/dmi/id/sys_vendor",
                "/sys/class/dmi/id/product_name",
            ]
            .iter()
            .filter_map(|p| read_trim(p))
            .collect();
            if parts.is_empty() {
                let [root, hv] = DEVICE_TREE_VM_FILES.map(read);
                device_tree_vm(root.as_deref(), hv.as_deref())
            } else {
                Some(parts.join(" / "))
            }
        };
        let num = |p: &str| read_trim(p).and_then(|s| s.parse::<i64>().ok());
        let (rt_soft, rt_hard) = m.rlimit_rtprio;
        let lim = |v: u64| (v != u64::MAX).then_some(v);
        SystemSnapshot {
            hostname: read_trim("/proc/sys/kernel/hostname"),
            arch: if machine.is_empty() {
                std::env::consts::ARCH.to_string()
            } else {
                machine
            },
            preemption_model: preemption_model(&version, realtime_flag).to_string(),
            kernel_release: release,
            kernel_version: version,
            preempt_rt,
            preempt_dynamic_mode,
            isolcpus: param("isolcpus").or(isolated_sys),
            nohz_full: param("nohz_full").or(nohz_sys),
            rcu_nocbs: param("rcu_nocbs"),
            cmdline,
            clocksource: read_trim(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            ),
            clocksources_available: read_trim(
                "/sys/devices/system/clocksource/clocksource0/available_clocksource",
            )
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect(),
            cpu_model,
            online_cpus: format_cpu_list(&cpus),
            cpu_count: cpus.len(),
            smt: read_trim("/sys/devices/system/cpu/smt/control"),
            governors,
            hypervisor,
            virtualization,
            sched_rt_runtime_us: num("/proc/sys/kernel/sched_rt_runtime_us"),
            sched_rt_period_us: num("/proc/sys/kernel/sched_rt_period_us"),
            timer_slack_ns: m.timer_slack_ns,
            rlimit_rtprio: [lim(rt_soft), lim(rt_hard)],
            euid: m.euid,
            clock_flags,
        }
    }

    /// The conditions in this snapshot that weaken real-time results, as
    /// one-line warnings.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if !self.preempt_rt {
            w.push(format!(
                "kernel is not PREEMPT_RT ({}{}): expect long tails",
                self.preemption_model,
                self.preempt_dynamic_mode
                    .as_deref()
                    .map(|m| format!(", mode {m}"))
                    .unwrap_or_default()
            ));
        }
        if self.hypervisor || self.virtualization.is_some() {
            w.push(format!(
                "running in a virtual machine ({}): host scheduling adds latency",
                self.virtualization
                    .as_deref()
                    .unwrap_or("the CPU reports a hypervisor")
            ));
        }
        if let Some(r) = self.sched_rt_runtime_us {
            if r >= 0 {
                w.push(format!(
                    "RT throttling is on (sched_rt_runtime_us={r}): RT tasks can be stalled"
                ));
            }
        }
        let non_perf: Vec<&String> = self
            .governors
            .iter()
            .filter(|(_, g)| g.as_str() != "performance")
            .map(|(c, _)| c)
            .collect();
        if !non_perf.is_empty() {
            w.push(format!(
                "cpufreq governor is not 'performance' on {}",
                non_perf
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ));
        }
        w
    }
}

/// Parses an isolcpus-style value (`managed_irq,domain,2-3`) into CPUs, ignoring flags.
pub fn isolated_cpu_set(v: &str) -> Vec<usize> {
    let cpus: Vec<&str> = v
        .split(',')
        .filter(|p| p.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .collect();
    parse_cpu_list(&cpus.join(",")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preemption() {
        assert_eq!(
            preemption_model("#1 SMP PREEMPT_RT Tue", false),
            "PREEMPT_RT"
        );
        assert_eq!(
            preemption_model("#1 SMP PREEMPT_DYNAMIC Mon", false),
            "PREEMPT_DYNAMIC"
        );
        assert_eq!(preemption_model("#1 SMP", true), "PREEMPT_RT");
        assert_eq!(preemption_model("#1 SMP", false), "unknown");
        assert_eq!(
            bracketed_choice("none voluntary (full) lazy").as_deref(),
            Some("full")
        );
    }

    #[test]
    fn cmdline_params() {
        let c = "quiet isolcpus=managed_irq,2-3 nohz_full=2-3 rcu_nocbs=2-3";
        assert_eq!(
            cmdline_param(c, "isolcpus").as_deref(),
            Some("managed_irq,2-3")
        );
        assert_eq!(cmdline_param(c, "nohz_full").as_deref(), Some("2-3"));
        assert_eq!(cmdline_param(c, "nosmt"), None);
        assert_eq!(isolated_cpu_set("managed_irq,domain,2-3,5"), vec![2, 3, 5]);
    }

    /// A machine made of the given files (path, text); every other file is missing.
    fn snapshot_of(files: &[(&str, &str)], m: Machine) -> SystemSnapshot {
        let files: BTreeMap<String, String> = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        SystemSnapshot::capture_with(&|p: &str| files.get(p).cloned(), m)
    }

    fn machine(version: &str, arch: &str) -> Machine {
        Machine {
            uname: (
                "Linux".into(),
                "6.18.0-test".into(),
                version.into(),
                arch.into(),
            ),
            online_cpus: vec![0, 1, 2, 3],
            rlimit_rtprio: (0, u64::MAX),
            timer_slack_ns: 50_000,
            euid: 1000,
        }
    }

    #[test]
    fn a_virtual_x86_machine_is_read_field_by_field() {
        let s = snapshot_of(
            &[
                ("/proc/sys/kernel/hostname", "lab-7\n"),
                ("/sys/kernel/realtime", "0\n"),
                (
                    "/sys/kernel/debug/sched/preempt",
                    "none voluntary (full) lazy\n",
                ),
                (
                    "/proc/cmdline",
                    "BOOT_IMAGE=/vmlinuz isolcpus=managed_irq,2-3 rcu_nocbs=2-3\n",
                ),
                ("/sys/devices/system/cpu/isolated", "1\n"),
                ("/sys/devices/system/cpu/nohz_full", "(null)\n"),
                (
                    "/proc/cpuinfo",
                    "processor\t: 0\nmodel name\t: Test CPU @ 2.0GHz\n\
                     flags\t\t: fpu tsc hypervisor constant_tsc nonstop_tsc rdtscp sse\n\n\
                     processor\t: 1\nflags\t\t: fpu\n",
                ),
                (
                    "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
                    "performance\n",
                ),
                (
                    "/sys/devices/system/cpu/cpu2/cpufreq/scaling_governor",
                    "powersave\n",
                ),
                ("/sys/class/dmi/id/sys_vendor", "QEMU\n"),
                ("/sys/class/dmi/id/product_name", "Standard PC\n"),
                ("/sys/hypervisor/type", "  \n"),
                ("/proc/sys/kernel/sched_rt_runtime_us", "950000\n"),
                ("/proc/sys/kernel/sched_rt_period_us", "1000000\n"),
                (
                    "/sys/devices/system/clocksource/clocksource0/current_clocksource",
                    "kvm-clock\n",
                ),
                (
                    "/sys/devices/system/clocksource/clocksource0/available_clocksource",
                    "kvm-clock tsc acpi_pm \n",
                ),
                ("/sys/devices/system/cpu/smt/control", "notsupported\n"),
            ],
            machine("#1 SMP PREEMPT_DYNAMIC Tue Nov 24", "x86_64"),
        );
        let expected = SystemSnapshot {
            hostname: Some("lab-7".into()),
            arch: "x86_64".into(),
            kernel_release: "6.18.0-test".into(),
            kernel_version: "#1 SMP PREEMPT_DYNAMIC Tue Nov 24".into(),
            preemption_model: "PREEMPT_DYNAMIC".into(),
            preempt_rt: false,
            preempt_dynamic_mode: Some("full".into()),
            cmdline: Some("BOOT_IMAGE=/vmlinuz isolcpus=managed_irq,2-3 rcu_nocbs=2-3".into()),
            // The boot parameter, before sysfs' list.
            isolcpus: Some("managed_irq,2-3".into()),
            // "(null)": none.
            nohz_full: None,
            rcu_nocbs: Some("2-3".into()),
            clocksource: Some("kvm-clock".into()),
            clocksources_available: vec!["kvm-clock".into(), "tsc".into(), "acpi_pm".into()],
            cpu_model: Some("Test CPU @ 2.0GHz".into()),
            online_cpus: "0-3".into(),
            cpu_count: 4,
            smt: Some("notsupported".into()),
            governors: [("cpu0", "performance"), ("cpu2", "powersave")]
                .iter()
                .map(|(c, g)| (c.to_string(), g.to_string()))
                .collect(),
            hypervisor: true,
            // A blank file is no part.
            virtualization: Some("QEMU / Standard PC".into()),
            sched_rt_runtime_us: Some(950_000),
            sched_rt_period_us: Some(1_000_000),
            timer_slack_ns: 50_000,
            rlimit_rtprio: [Some(0), None],
            euid: 1000,
            clock_flags: vec![
                "tsc".into(),
                "constant_tsc".into(),
                "nonstop_tsc".into(),
                "rdtscp".into(),
            ],
        };
        assert_eq!(s, expected);
        assert_eq!(
            s.warnings(),
            [
                "kernel is not PREEMPT_RT (PREEMPT_DYNAMIC, mode full): expect long tails",
                "running in a virtual machine (QEMU / Standard PC): host scheduling adds latency",
                "RT throttling is on (sched_rt_runtime_us=950000): RT tasks can be stalled",
                "cpufreq governor is not 'performance' on cpu2",
            ]
        );
    }

    #[test]
    fn a_real_time_arm_board_is_read_field_by_field() {
        let s = snapshot_of(
            &[
                ("/sys/kernel/realtime", "1\n"),
                ("/sys/devices/system/cpu/nohz_full", "1-3\n"),
                ("/sys/devices/system/cpu/isolated", "1-3\n"),
                (
                    "/proc/cpuinfo",
                    "processor\t: 0\nFeatures\t: fp asimd evtstrm crc32\nCPU part\t: 0xd08\n",
                ),
                ("/proc/sys/kernel/sched_rt_runtime_us", "-1\n"),
                ("/proc/sys/kernel/sched_rt_period_us", "soon\n"),
                (
                    "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
                    "performance\n",
                ),
            ],
            Machine {
                online_cpus: vec![0, 1],
                rlimit_rtprio: (u64::MAX, 99),
                euid: 0,
                ..machine("#1 SMP Mon", "")
            },
        );
        // Neither PREEMPT_RT in the version nor a mode: the flag alone says RT.
        assert!(s.preempt_rt);
        assert_eq!(s.preemption_model, "PREEMPT_RT");
        assert_eq!(s.preempt_dynamic_mode, None);
        assert_eq!(s.arch, std::env::consts::ARCH);
        assert_eq!(
            (s.isolcpus.as_deref(), s.nohz_full.as_deref()),
            (Some("1-3"), Some("1-3"))
        );
        assert_eq!((s.cmdline.as_deref(), s.rcu_nocbs.as_deref()), (None, None));
        assert_eq!(s.clock_flags, ["evtstrm"]);
        assert_eq!(s.cpu_model.as_deref(), Some("CPU part 0xd08"));
        assert!(!s.hypervisor);
        assert_eq!(s.virtualization, None);
        assert_eq!(
            (s.sched_rt_runtime_us, s.sched_rt_period_us),
            (Some(-1), None)
        );
        assert_eq!(s.rlimit_rtprio, [None, Some(99)]);
        assert_eq!((s.hostname, s.clocksource, s.smt), (None, None, None));
        assert!(s.clocksources_available.is_empty());
        assert_eq!((s.online_cpus.as_str(), s.cpu_count, s.euid), ("0-1", 2, 0));
        // RT kernel, bare metal, no throttling, performance governor: nothing to warn of.
        let mut quiet = SystemSnapshot::capture_with(&|_| None, machine("PREEMPT_RT", "aarch64"));
        assert_eq!(quiet.warnings(), Vec::<String>::new());
        // The hypervisor flag alone is a virtual machine; throttling at 0 µs is on.
        quiet.hypervisor = true;
        quiet.sched_rt_runtime_us = Some(0);
        assert_eq!(
            quiet.warnings(),
            [
                "running in a virtual machine (the CPU reports a hypervisor): host scheduling adds latency",
                "RT throttling is on (sched_rt_runtime_us=0): RT tasks can be stalled",
            ]
        );
    }

    #[test]
    fn an_arm_guest_is_named_by_its_device_tree() {
        // qemu's virt machine: no DMI, no hypervisor flag in the Features.
        let s = snapshot_of(
            &[
                (
                    "/proc/cpuinfo",
                    "processor\t: 0\nFeatures\t: fp asimd evtstrm\n",
                ),
                (DEVICE_TREE_VM_FILES[0], "linux,dummy-virt\0"),
            ],
            machine("#1 SMP PREEMPT_RT", "aarch64"),
        );
        assert!(!s.hypervisor);
        assert_eq!(
            s.virtualization.as_deref(),
            Some("QEMU virt machine (device tree: linux,dummy-virt)")
        );
        assert_eq!(
            s.warnings()[0],
            "running in a virtual machine (QEMU virt machine (device tree: linux,dummy-virt)): host scheduling adds latency"
        );
        // DMI, where a guest has it (UEFI), comes first.
        let s = snapshot_of(
            &[
                ("/sys/class/dmi/id/sys_vendor", "QEMU\n"),
                (DEVICE_TREE_VM_FILES[0], "linux,dummy-virt\0"),
            ],
            machine("#1 SMP", "aarch64"),
        );
        assert_eq!(s.virtualization.as_deref(), Some("QEMU"));
        // A board's device tree names no virtual machine.
        let s = snapshot_of(
            &[(
                DEVICE_TREE_VM_FILES[0],
                "raspberrypi,4-model-b\0brcm,bcm2711\0",
            )],
            machine("#1 SMP", "aarch64"),
        );
        assert_eq!(s.virtualization, None);
    }

    #[test]
    fn device_tree_vms_from_their_string_lists() {
        assert_eq!(device_tree_vm(None, None), None);
        assert!(device_tree_vm(Some("linux,dummy-virt"), None).is_some());
        // Any entry of the list, not only the first.
        assert!(device_tree_vm(Some("acme,board\0linux,dummy-virt\0"), None).is_some());
        assert_eq!(device_tree_vm(Some("linux,dummy-virtual\0"), None), None);
        assert_eq!(device_tree_vm(Some("\0 \0"), Some("\0")), None);
        // A hypervisor node names the machine a guest, whatever the root says.
        assert_eq!(
            device_tree_vm(Some("acme,board\0"), Some("xen,xen-4.17\0xen,xen\0")).as_deref(),
            Some("device tree hypervisor node: xen,xen-4.17, xen,xen")
        );
    }

    #[test]
    fn models_and_choices_from_their_text() {
        assert_eq!(
            preemption_model("#1 SMP PREEMPT_LAZY", false),
            "PREEMPT_LAZY"
        );
        assert_eq!(preemption_model("#1 SMP PREEMPT Tue", false), "PREEMPT");
        // A word that only opens (or only closes) a bracket is no choice.
        assert_eq!(bracketed_choice("none (voluntary full) lazy"), None);
        assert_eq!(bracketed_choice("(none) full"), Some("none".into()));
    }

    /// The real machine's snapshot agrees with what the kernel says directly.
    #[test]
    fn the_running_machine() {
        let s = SystemSnapshot::capture();
        let (_, release, _, _) = sys::uname();
        assert_eq!(s.kernel_release, release);
        assert_eq!(s.cpu_count, online_cpus().len());
        assert_eq!(s.euid, sys::geteuid());
        assert_eq!(s.timer_slack_ns, sys::timer_slack());
        let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap();
        assert_eq!(s.cmdline.as_deref(), Some(cmdline.trim()));
    }
}
