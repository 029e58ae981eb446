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
    pub hostname: Option<String>,
    /// `x86_64`, `aarch64`, ...
    pub arch: String,
    pub kernel_release: String,
    pub kernel_version: String,
    /// `PREEMPT_RT`, `PREEMPT_DYNAMIC`, `PREEMPT`, `voluntary`, `none`, or `unknown`.
    pub preemption_model: String,
    /// True when the kernel is PREEMPT_RT (`/sys/kernel/realtime` or the version string).
    pub preempt_rt: bool,
    /// The PREEMPT_DYNAMIC mode in force (`full`, `voluntary`, `none`, `lazy`) where readable.
    pub preempt_dynamic_mode: Option<String>,
    pub cmdline: Option<String>,
    pub isolcpus: Option<String>,
    pub nohz_full: Option<String>,
    pub rcu_nocbs: Option<String>,
    pub clocksource: Option<String>,
    pub clocksources_available: Vec<String>,
    pub cpu_model: Option<String>,
    pub online_cpus: String,
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

fn read_trim(path: &str) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
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
        let (_, release, version, machine) = sys::uname();
        let realtime_flag = read_trim("/sys/kernel/realtime").as_deref() == Some("1");
        let preempt_rt = realtime_flag || version.contains("PREEMPT_RT");
        let preempt_dynamic_mode = read_trim("/sys/kernel/debug/sched/preempt")
            .as_deref()
            .and_then(bracketed_choice);
        let cmdline = read_trim("/proc/cmdline");
        let param = |k: &str| cmdline.as_deref().and_then(|c| cmdline_param(c, k));
        let isolated_sys = read_trim("/sys/devices/system/cpu/isolated");
        let nohz_sys = read_trim("/sys/devices/system/cpu/nohz_full").filter(|s| s != "(null)");
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
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
        let cpus = online_cpus();
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
            (!parts.is_empty()).then(|| parts.join(" / "))
        };
        let num = |p: &str| read_trim(p).and_then(|s| s.parse::<i64>().ok());
        let (rt_soft, rt_hard) = sys::rlimit_rtprio();
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
            timer_slack_ns: sys::timer_slack(),
            rlimit_rtprio: [lim(rt_soft), lim(rt_hard)],
            euid: sys::geteuid(),
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

    #[test]
    fn capture_does_not_fail() {
        let s = SystemSnapshot::capture();
        assert!(!s.kernel_release.is_empty());
        assert!(s.cpu_count >= 1);
    }
}
