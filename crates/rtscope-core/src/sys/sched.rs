//! Scheduling of the calling thread: real-time policy and priority, CPU
//! affinity, and which CPU it runs on now.

use std::io;

/// The CPU the calling thread runs on (glibc reads it from rseq or the vDSO).
#[inline]
pub fn current_cpu() -> i32 {
    // SAFETY: sched_getcpu has no preconditions.
    unsafe { libc::sched_getcpu() }
}

/// Sets the scheduling policy and priority of the calling thread.
pub fn set_scheduler(policy: i32, priority: i32) -> io::Result<()> {
    // SAFETY: sched_param is POD (musl's has more fields than the priority);
    // all-zero is a valid value.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = priority;
    // SAFETY: pid 0 names the calling thread; `param` is valid.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The policy and priority of the calling thread.
pub fn get_scheduler() -> io::Result<(i32, i32)> {
    // SAFETY: pid 0 names the calling thread.
    let policy = unsafe { libc::sched_getscheduler(0) };
    if policy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as in `set_scheduler`.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    // SAFETY: `param` is valid and writable.
    if unsafe { libc::sched_getparam(0, &mut param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((policy & !libc::SCHED_RESET_ON_FORK, param.sched_priority))
}

/// Pins the calling thread to `cpus`.
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: cpu_set_t is POD; CPU_ZERO/CPU_SET only touch the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for &c in cpus {
            if c >= libc::CPU_SETSIZE as usize {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
