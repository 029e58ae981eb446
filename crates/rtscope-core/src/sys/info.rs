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
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if n > 0 {
        n as u64
    } else {
        100
    }
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
