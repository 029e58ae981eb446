//! Scheduling of the calling thread: real-time policy and priority, CPU
//! affinity, and which CPU it runs on now; SCHED_DEADLINE's parameters
//! (`sched_setattr`/`sched_getattr`, which `sched_setscheduler` cannot set)
//! and `sched_yield`, with which a deadline task ends its job of a period.

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

/// What `sched_getattr` says of the calling thread: its policy and, for
/// SCHED_DEADLINE, its runtime, deadline and period (ns; 0 otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedAttr {
    pub policy: i32,
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
}

/// The size of `struct sched_attr` as first published (`SCHED_ATTR_SIZE_VER0`):
/// the fields up to the period, which every kernel with SCHED_DEADLINE takes.
const SCHED_ATTR_SIZE_VER0: u32 = 48;

/// Makes the calling thread a SCHED_DEADLINE task with these parameters
/// (`sched_setattr(0, attr, 0)`; the kernel's checks and admission control
/// decide, their errno is returned as it is).
pub fn set_deadline(runtime_ns: u64, deadline_ns: u64, period_ns: u64) -> io::Result<()> {
    // SAFETY: sched_attr is POD; all-zero is a valid value.
    let mut attr: libc::sched_attr = unsafe { std::mem::zeroed() };
    attr.size = SCHED_ATTR_SIZE_VER0;
    attr.sched_policy = libc::SCHED_DEADLINE as u32;
    attr.sched_runtime = runtime_ns;
    attr.sched_deadline = deadline_ns;
    attr.sched_period = period_ns;
    // The raw system call: glibc wraps sched_setattr only since 2.41, musl not at all.
    // SAFETY: pid 0 names the calling thread; `attr` is valid for the call and
    // its `size` says how much of it the kernel reads.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            0 as libc::pid_t,
            &attr as *const libc::sched_attr,
            0 as libc::c_uint,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's scheduling attributes (`sched_getattr`).
pub fn get_attr() -> io::Result<SchedAttr> {
    // SAFETY: as in `set_deadline`.
    let mut attr: libc::sched_attr = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 names the calling thread; the kernel writes at most
    // SCHED_ATTR_SIZE_VER0 bytes, and `attr` is at least that large.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0 as libc::pid_t,
            &mut attr as *mut libc::sched_attr,
            SCHED_ATTR_SIZE_VER0 as libc::c_uint,
            0 as libc::c_uint,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(SchedAttr {
        policy: attr.sched_policy as i32,
        runtime_ns: attr.sched_runtime,
        deadline_ns: attr.sched_deadline,
        period_ns: attr.sched_period,
    })
}

/// `sched_yield()`: for a SCHED_DEADLINE task, the end of its job in this
/// period (the scheduler throttles it until the next period begins).
#[inline]
pub fn sched_yield() -> io::Result<()> {
    // SAFETY: sched_yield has no preconditions.
    if unsafe { libc::sched_yield() } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The CPUs the calling thread may run on.
pub fn affinity() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is POD; sched_getaffinity writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
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

    /// A thread may run where it is allowed to: the list read back is what
    /// was set, and a new thread inherits its creator's.
    #[test]
    fn affinity_is_read_back() {
        let cpus = crate::units::online_cpus();
        let (first, last) = (cpus[0], *cpus.last().unwrap());
        let got = std::thread::spawn(move || {
            let before = affinity().unwrap();
            set_affinity(&[first]).unwrap();
            let inherited = std::thread::spawn(|| affinity().unwrap()).join().unwrap();
            set_affinity(&[last]).unwrap();
            (before, inherited, affinity().unwrap())
        })
        .join()
        .unwrap();
        assert!(
            got.0.contains(&first) && got.0.contains(&last),
            "{:?}",
            got.0
        );
        assert_eq!(got.1, vec![first]);
        assert_eq!(got.2, vec![last]);
    }

    /// SCHED_DEADLINE set with sched_setattr is what sched_getattr reads back
    /// (as root; an unprivileged thread is refused with EPERM), a yield of a
    /// deadline task returns, and the kernel's own checks answer EINVAL.
    #[test]
    fn deadline_attributes_are_set_and_read_back() {
        let got = std::thread::spawn(|| {
            let other = get_attr().unwrap();
            let bad = set_deadline(200_000, 100_000, 1_000_000).unwrap_err();
            let set = set_deadline(100_000, 900_000, 2_000_000).map(|()| {
                // A yield ends the period: the kernel's deadline moves on.
                let deadline = || {
                    crate::deadline::parse_dl_deadline(
                        &std::fs::read("/proc/thread-self/sched").unwrap_or_default(),
                    )
                };
                let before = deadline();
                sched_yield().unwrap();
                let after = deadline();
                if let (Some(b), Some(a)) = (before, after) {
                    assert!(a >= b + 2_000_000, "{b} {a}");
                }
                let a = get_attr().unwrap();
                set_scheduler(libc::SCHED_OTHER, 0).unwrap();
                a
            });
            (other, bad.raw_os_error(), set)
        })
        .join()
        .unwrap();
        // (A fair task's runtime is its slice on kernels that have one.)
        assert_eq!(got.0.policy, libc::SCHED_OTHER);
        assert_eq!(got.0.period_ns, 0);
        assert_eq!(got.1, Some(libc::EINVAL));
        match got.2 {
            Ok(a) => assert_eq!(
                a,
                SchedAttr {
                    policy: libc::SCHED_DEADLINE,
                    runtime_ns: 100_000,
                    deadline_ns: 900_000,
                    period_ns: 2_000_000,
                }
            ),
            Err(e) => assert!(
                e.raw_os_error() == Some(libc::EPERM) && crate::sys::geteuid() != 0,
                "{e}"
            ),
        }
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
