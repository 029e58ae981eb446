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

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread pinned to each CPU in turn runs there; a CPU beyond the
    /// set's size is refused before the kernel is asked.
    #[test]
    fn pinning_and_the_current_cpu() {
        let cpus = crate::units::online_cpus();
        for &c in cpus.iter().take(2) {
            let now = std::thread::spawn(move || {
                set_affinity(&[c]).unwrap();
                current_cpu()
            })
            .join()
            .unwrap();
            assert_eq!(now, c as i32);
        }
        assert_eq!(
            set_affinity(&[libc::CPU_SETSIZE as usize])
                .unwrap_err()
                .raw_os_error(),
            Some(libc::EINVAL)
        );
        // No CPU at all: the kernel's refusal.
        assert!(std::thread::spawn(|| set_affinity(&[]))
            .join()
            .unwrap()
            .is_err());
    }

    /// The policy read back without the reset-on-fork flag set with it, and
    /// with its priority.
    #[test]
    fn policies_are_read_back() {
        let got = std::thread::spawn(|| {
            // SCHED_OTHER is policy 0: a policy, not an error.
            assert_eq!(get_scheduler().unwrap(), (libc::SCHED_OTHER, 0));
            set_scheduler(libc::SCHED_BATCH | libc::SCHED_RESET_ON_FORK, 0).unwrap();
            let batch = get_scheduler().unwrap();
            let bad = set_scheduler(libc::SCHED_OTHER, 5)
                .unwrap_err()
                .raw_os_error();
            let fifo = set_scheduler(libc::SCHED_FIFO, 2).map(|()| get_scheduler().unwrap());
            (batch, bad, fifo)
        })
        .join()
        .unwrap();
        assert_eq!(got.0, (libc::SCHED_BATCH, 0));
        assert_eq!(got.1, Some(libc::EINVAL));
        match got.2 {
            Ok(f) => assert_eq!(f, (libc::SCHED_FIFO, 2)),
            Err(e) => assert!(
                e.raw_os_error() == Some(libc::EPERM) && std::env::var_os("CI").is_none(),
                "{e}"
            ),
        }
    }
}
