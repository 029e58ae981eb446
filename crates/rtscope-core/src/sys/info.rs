//! Facts about the kernel and the process's privileges, read for the system
//! snapshot and the real-time checks: `uname`, resource limits, the effective
//! user id, the clock tick of `/proc` times, and the kernel log.

/// The effective user id.
pub fn geteuid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

/// The type `getrlimit` takes the resource as: glibc has its own, musl a plain int.
#[cfg(target_env = "gnu")]
type RlimitResource = libc::__rlimit_resource_t;
#[cfg(not(target_env = "gnu"))]
type RlimitResource = libc::c_int;

pub(super) fn rlimit(resource: RlimitResource) -> (u64, u64) {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `rl` is valid and writable.
    unsafe { libc::getrlimit(resource, &mut rl) };
    // rlim_t is 32 bits wide on 32-bit ARM, 64 bits elsewhere; RLIM_INFINITY maps to u64::MAX.
    #[allow(clippy::unnecessary_cast)]
    let conv = |v: libc::rlim_t| {
        if v == libc::RLIM_INFINITY {
            u64::MAX
        } else {
            v as u64
        }
    };
    (conv(rl.rlim_cur), conv(rl.rlim_max))
}

/// `RLIMIT_RTPRIO` as (soft, hard); `u64::MAX` means unlimited.
pub fn rlimit_rtprio() -> (u64, u64) {
    rlimit(libc::RLIMIT_RTPRIO)
}

/// `RLIMIT_MEMLOCK` in bytes as (soft, hard); `u64::MAX` means unlimited.
pub fn rlimit_memlock() -> (u64, u64) {
    rlimit(libc::RLIMIT_MEMLOCK)
}

/// Kernel name and release from `uname(2)`: (sysname, release, version, machine).
pub fn uname() -> (String, String, String, String) {
    // SAFETY: utsname is POD; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is valid and writable.
    unsafe { libc::uname(&mut u) };
    // c_char is i8 on x86-64 and u8 on ARM.
    #[allow(clippy::unnecessary_cast)]
    fn s(f: &[libc::c_char]) -> String {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
    (s(&u.sysname), s(&u.release), s(&u.version), s(&u.machine))
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`), the unit of `/proc/PID/stat` times.
pub fn clock_ticks_per_sec() -> u64 {
    // SAFETY: sysconf has no preconditions; on Linux _SC_CLK_TCK cannot fail.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) as u64 }
}

/// The kernel log buffer (`syslog(SYSLOG_ACTION_READ_ALL)`); `None` when not
/// permitted (dmesg_restrict without CAP_SYSLOG) or empty.
pub fn kernel_log() -> Option<String> {
    // SAFETY: SYSLOG_ACTION_SIZE_BUFFER (10) takes no buffer.
    let size = unsafe { libc::klogctl(10, std::ptr::null_mut(), 0) };
    if size <= 0 {
        return None;
    }
    let mut buf = vec![0u8; size as usize];
    // SAFETY: SYSLOG_ACTION_READ_ALL (3) writes at most `size` bytes into `buf`.
    let n = unsafe { libc::klogctl(3, buf.as_mut_ptr().cast(), size) };
    if n <= 0 {
        return None;
    }
    buf.truncate(n as usize);
    Some(String::from_utf8_lossy(&buf).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_effective_user_is_the_kernels() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let uids: Vec<u32> = status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .unwrap()
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect();
        // Real, effective, saved, file system.
        assert_eq!(geteuid(), uids[1]);
    }

    /// Limits as /proc/self/limits lists them ("unlimited" is u64::MAX).
    #[test]
    fn limits_are_the_kernels() {
        let text = std::fs::read_to_string("/proc/self/limits").unwrap();
        let listed = |name: &str| -> (u64, u64) {
            let l = text.lines().find(|l| l.starts_with(name)).unwrap();
            let v: Vec<u64> = l[name.len()..]
                .split_whitespace()
                .take(2)
                .map(|v| {
                    if v == "unlimited" {
                        u64::MAX
                    } else {
                        v.parse().unwrap()
                    }
                })
                .collect();
            (v[0], v[1])
        };
        assert_eq!(rlimit_rtprio(), listed("Max realtime priority"));
        assert_eq!(rlimit_memlock(), listed("Max locked memory"));
        assert_eq!(rlimit(libc::RLIMIT_NOFILE), listed("Max open files"));
        assert_eq!(crate::sys::rlimit_nproc(), listed("Max processes"));
        // Unlimited on every Linux unless an administrator set it.
        assert_eq!(rlimit(libc::RLIMIT_FSIZE), listed("Max file size"));
    }

    /// In a child (resource limits are the whole process's): limits lowered
    /// there are read back. Raising them needs CAP_SYS_RESOURCE, which the
    /// root of this VM does not have.
    #[test]
    fn limits_read_back_as_set() {
        fn probe() -> i32 {
            let rl = libc::rlimit {
                rlim_cur: 3 << 12,
                rlim_max: 5 << 12,
            };
            // SAFETY: `rl` is valid for the call.
            if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &rl) } != 0 {
                return 10;
            }
            if rlimit_memlock() != (3 << 12, 5 << 12) {
                return 11;
            }
            0
        }
        assert_eq!(
            crate::sys::probe_in_child(probe).unwrap(),
            crate::sys::ChildExit::Code(0)
        );
    }

    /// The log buffer as syslog(2) gives it: "<level>[seconds] text" lines.
    /// Root may read it (unless dmesg_restrict is set without CAP_SYSLOG).
    #[test]
    fn the_kernel_log_reads_as_the_kernels() {
        let Some(log) = kernel_log() else {
            assert!(
                geteuid() != 0 || std::env::var_os("CI").is_none(),
                "no kernel log as root"
            );
            return;
        };
        assert!(!log.is_empty());
        for l in log.lines() {
            let rest = l.strip_prefix('<').and_then(|r| r.split_once(">["));
            assert!(
                rest.is_some_and(|(level, _)| level.parse::<u32>().is_ok()),
                "{l}"
            );
        }
    }

    #[test]
    fn uname_and_clock_tick() {
        let (sys, release, version, machine) = uname();
        assert_eq!(sys, "Linux");
        let proc_release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        assert_eq!(release, proc_release.trim());
        let proc_version = std::fs::read_to_string("/proc/sys/kernel/version").unwrap();
        assert_eq!(version, proc_version.trim());
        // "armv7l" for 32-bit ARM; the architecture's own name elsewhere.
        let arch = match std::env::consts::ARCH {
            "arm" => "armv",
            a => a,
        };
        assert!(machine.starts_with(arch), "{machine}");
        // USER_HZ is 100 on every Linux architecture rtscope builds for.
        assert_eq!(clock_ticks_per_sec(), 100);
    }
}
