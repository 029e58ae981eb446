//! What every check needs to know about the machine, read once through a
//! [`Root`]: kernel version and preemption model, boot parameters, CPUs.

use std::collections::BTreeMap;

use rtscope_core::system::{bracketed_choice, isolated_cpu_set, preemption_model};
use rtscope_core::units::{format_cpu_list, parse_cpu_list};

use super::root::Root;

/// The machine as the checks see it.
#[derive(Debug, Clone)]
pub struct Facts {
    pub release: String,
    pub version: String,
    /// (major, minor) of the release; (0, 0) when unreadable.
    pub kver: (u32, u32),
    pub arch: String,
    /// `PREEMPT_RT`, `PREEMPT_DYNAMIC`, `PREEMPT`, ... (from the version string).
    pub model: String,
    pub rt: bool,
    /// The PREEMPT_DYNAMIC mode in force, where it can be read or is set on the command line.
    pub dyn_mode: Option<String>,
    pub cmdline: String,
    /// Kernel parameters: `key` -> value (`""` for flags); the last one wins.
    pub params: BTreeMap<String, String>,
    pub online: Vec<usize>,
    /// CPUs isolated from the scheduler (`isolcpus=` domain, or `/sys/.../isolated`).
    pub isolated: Vec<usize>,
    pub nohz_full: Vec<usize>,
    pub cpu_flags: Vec<String>,
    pub hypervisor: bool,
    /// Effective uid of this process (`/proc/self/status`).
    pub euid: Option<u32>,
    /// The CPUs the checks are about: `--cpus`, else the isolated CPUs.
    pub targets: Vec<usize>,
    /// Where [`targets`](Self::targets) came from.
    pub targets_from: &'static str,
}

/// `6.18.44-fc` -> (6, 18).
pub fn kernel_version(release: &str) -> (u32, u32) {
    let mut it = release
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<u32>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

/// Kernel parameters of a command line (before a `--`, which passes the rest to init).
pub fn parse_params(cmdline: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for w in cmdline.split_whitespace() {
        if w == "--" {
            break;
        }
        match w.split_once('=') {
            Some((k, v)) => m.insert(k.to_string(), v.to_string()),
            None => m.insert(w.to_string(), String::new()),
        };
    }
    m
}

/// A CPU list from sysfs/cmdline, tolerating `(null)`, flags and empty values.
pub fn cpus_of(v: Option<&str>) -> Vec<usize> {
    match v {
        Some(s) if !s.is_empty() && s != "(null)" => isolated_cpu_set(s),
        _ => Vec::new(),
    }
}

impl Facts {
    /// Reads the facts under `root`; `cpus` is the user's `--cpus`.
    pub fn read(root: &Root, cpus: Option<&[usize]>) -> Facts {
        let release = root.read("/proc/sys/kernel/osrelease").unwrap_or_default();
        let version = root.read("/proc/sys/kernel/version").unwrap_or_default();
        let realtime_flag = root.read("/sys/kernel/realtime").as_deref() == Some("1");
        let model = preemption_model(&version, realtime_flag).to_string();
        let cmdline = root.read("/proc/cmdline").unwrap_or_default();
        let params = parse_params(&cmdline);
        let dyn_mode = root
            .read("/sys/kernel/debug/sched/preempt")
            .as_deref()
            .and_then(bracketed_choice)
            .or_else(|| params.get("preempt").cloned());
        let cpuinfo = root.read_raw("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == name).then(|| v.trim().to_string())
            })
        };
        let cpu_flags: Vec<String> = field("flags")
            .or_else(|| field("Features"))
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let arch = root.read("/proc/sys/kernel/arch").unwrap_or_else(|| {
            if field("CPU implementer").is_some() {
                if cpu_flags.iter().any(|f| f == "asimd" || f == "fp") {
                    "aarch64".into()
                } else {
                    "arm".into()
                }
            } else if cpu_flags.iter().any(|f| f == "lm") {
                "x86_64".into()
            } else {
                "unknown".into()
            }
        });
        let online = root
            .read("/sys/devices/system/cpu/online")
            .and_then(|s| parse_cpu_list(&s).ok())
            .unwrap_or_default();
        let isolated = {
            let from_param = params
                .get("isolcpus")
                .map(|v| cpus_of(Some(v)))
                .unwrap_or_default();
            let sys = cpus_of(root.read("/sys/devices/system/cpu/isolated").as_deref());
            if sys.is_empty() {
                from_param
            } else {
                sys
            }
        };
        let nohz_full = {
            let sys = cpus_of(root.read("/sys/devices/system/cpu/nohz_full").as_deref());
            if sys.is_empty() {
                cpus_of(params.get("nohz_full").map(String::as_str))
            } else {
                sys
            }
        };
        let euid = root.read_raw("/proc/self/status").and_then(|s| {
            s.lines().find_map(|l| {
                let rest = l.strip_prefix("Uid:")?;
                rest.split_whitespace().nth(1)?.parse().ok()
            })
        });
        let (targets, targets_from) = match cpus {
            Some(c) => (c.to_vec(), "--cpus"),
            None if !isolated.is_empty() => (isolated.clone(), "the isolated CPUs"),
            None => (Vec::new(), "none"),
        };
        Facts {
            kver: kernel_version(&release),
            rt: model == "PREEMPT_RT",
            hypervisor: cpu_flags.iter().any(|f| f == "hypervisor"),
            release,
            version,
            arch,
            model,
            dyn_mode,
            cmdline,
            params,
            online,
            isolated,
            nohz_full,
            cpu_flags,
            euid,
            targets,
            targets_from,
        }
    }

    pub fn at_least(&self, major: u32, minor: u32) -> bool {
        self.kver >= (major, minor)
    }

    pub fn is_x86(&self) -> bool {
        self.arch == "x86_64" || self.arch.starts_with('i')
    }

    pub fn is_arm(&self) -> bool {
        self.arch.starts_with("aarch64") || self.arch.starts_with("arm")
    }

    pub fn has_flag(&self, f: &str) -> bool {
        self.cpu_flags.iter().any(|x| x == f)
    }

    /// The target CPUs as a list (`2-3`), or `-`.
    pub fn targets_text(&self) -> String {
        if self.targets.is_empty() {
            "-".into()
        } else {
            format_cpu_list(&self.targets)
        }
    }

    /// Where kernel parameters are set on this kind of machine.
    pub fn bootloader_hint(&self) -> &'static str {
        if self.is_arm() {
            "add to the kernel command line (/boot/firmware/cmdline.txt, extlinux.conf or U-Boot bootargs) and reboot"
        } else {
            "add to GRUB_CMDLINE_LINUX in /etc/default/grub, run update-grub (or grubby --update-kernel=ALL --args=...), reboot"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_params() {
        assert_eq!(kernel_version("6.18.44-fc-v782"), (6, 18));
        assert_eq!(kernel_version("5.10.0-rt-amd64"), (5, 10));
        assert_eq!(kernel_version(""), (0, 0));
        let p = parse_params("quiet isolcpus=domain,2-3 nohz_full=2-3 -- --init-arg=1");
        assert_eq!(p.get("quiet").map(String::as_str), Some(""));
        assert_eq!(p.get("isolcpus").map(String::as_str), Some("domain,2-3"));
        assert!(!p.contains_key("--init-arg"));
        assert_eq!(cpus_of(Some("(null)")), Vec::<usize>::new());
        assert_eq!(cpus_of(Some("managed_irq,domain,2-3")), vec![2, 3]);
    }
}
