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
    // The raw system call, not libc's wrapper: musl's `sched_setscheduler` is a
    // stub that always fails with ENOSYS (POSIX makes it per-process; Linux's
    // is per-thread, which is what is wanted here).
    // SAFETY: pid 0 names the calling thread; `param` is valid for the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_setscheduler,
            0 as libc::pid_t,
            policy as libc::c_int,
            &param as *const libc::sched_param,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The policy and priority of the calling thread.
pub fn get_scheduler() -> io::Result<(i32, i32)> {
    // The raw system call, as in `set_scheduler` (musl's wrapper is an ENOSYS stub).
    // SAFETY: pid 0 names the calling thread.
    let policy = unsafe { libc::syscall(libc::SYS_sched_getscheduler, 0 as libc::pid_t) } as i32;
    if policy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as in `set_scheduler`.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    // Raw too: musl stubs `sched_getparam` out as well.
    // SAFETY: `param` is valid and writable.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getparam,
            0 as libc::pid_t,
            &mut param as *mut libc::sched_param,
        )
    };
    if rc != 0 {
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
