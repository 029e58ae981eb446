//! Clocks, sleeps and timers: reading a clock (through the vDSO or the raw
//! system call), sleeping to an absolute or relative deadline, timerfds and
//! POSIX timers that signal one thread, and the timer slack that widens every
//! sleep. This is what the measurement loops spend their time in.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::{retry_eintr, Errno};

const NS_PER_SEC: u64 = 1_000_000_000;

#[inline]
fn ts_to_ns(ts: &libc::timespec) -> u64 {
    (ts.tv_sec as u64)
        .wrapping_mul(NS_PER_SEC)
        .wrapping_add(ts.tv_nsec as u64)
}

#[inline]
pub(super) fn ns_to_ts(ns: u64) -> libc::timespec {
    // SAFETY: timespec is plain old data; all-zero is a valid value.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    ts.tv_sec = (ns / NS_PER_SEC) as _;
    ts.tv_nsec = (ns % NS_PER_SEC) as _;
    ts
}

/// A POSIX clock id (`CLOCK_MONOTONIC`, `CLOCK_REALTIME`, ...).
pub type ClockId = libc::clockid_t;

/// Reads `clock` in nanoseconds (through the vDSO where the kernel offers it).
#[inline]
pub fn clock_ns(clock: ClockId) -> u64 {
    // SAFETY: timespec is POD; clock_gettime writes it fully or fails.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts_to_ns(&ts)
}

/// Resolution of `clock` in nanoseconds, as `clock_getres` reports it.
pub fn clock_res_ns(clock: ClockId) -> io::Result<u64> {
    // SAFETY: as in `clock_ns`.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `ts` is valid and writable.
    if unsafe { libc::clock_getres(clock, &mut ts) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ts_to_ns(&ts))
}

/// `clock_nanosleep` as the bare system call; returns 0 or the error number.
///
/// The libc wrapper is a thread-cancellation point: glibc brackets the call with
/// `__pthread_enable_asynccancel`/`__pthread_disable_asynccancel`, which is work
/// on every wake-up of a measurement loop that never uses cancellation (it
/// showed in `perf` profiles of `rtscope cyclic`). musl's wrapper does the same.
#[inline]
pub(super) fn raw_clock_nanosleep(clock: ClockId, flags: libc::c_int, ts: &libc::timespec) -> i32 {
    // SAFETY: SYS_clock_nanosleep takes (clockid_t, int, const struct timespec *,
    // struct timespec *); `ts` is a valid timespec of the libc's layout for this
    // target and the remaining-time pointer may be null.
    let r = unsafe {
        libc::syscall(
            libc::SYS_clock_nanosleep,
            clock as libc::c_long,
            flags as libc::c_long,
            ts as *const libc::timespec,
            std::ptr::null_mut::<libc::timespec>(),
        )
    };
    if r == 0 {
        0
    } else {
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EINVAL)
    }
}

/// Sleeps until the absolute time `deadline_ns` on `clock` (`TIMER_ABSTIME`).
/// Restarts transparently after a signal interrupted the sleep.
#[inline]
pub fn sleep_until(clock: ClockId, deadline_ns: u64) -> io::Result<()> {
    let ts = ns_to_ts(deadline_ns);
    retry_eintr(|| Errno(raw_clock_nanosleep(clock, libc::TIMER_ABSTIME, &ts)))
}

/// Sleeps `ns` relative to now on `clock` (`clock_nanosleep` without `TIMER_ABSTIME`).
/// An interrupted sleep returns early (like cyclictest's relative mode).
#[inline]
pub fn sleep_for(clock: ClockId, ns: u64) -> io::Result<()> {
    let ts = ns_to_ts(ns);
    match raw_clock_nanosleep(clock, 0, &ts) {
        0 | libc::EINTR => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// `nanosleep(2)` for `ns` (always measured against CLOCK_MONOTONIC by the kernel).
#[inline]
pub fn nanosleep(ns: u64) -> io::Result<()> {
    let ts = ns_to_ts(ns);
    // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null.
    if unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) } != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
    Ok(())
}

/// Sleeps until the absolute time `deadline_ns` on `clock`, like [`sleep_until`],
/// but returns `Ok(false)` when a signal handler interrupted the sleep (so the
/// caller can look at its stop flag) and `Ok(true)` when the deadline passed.
#[inline]
pub fn sleep_until_interruptible(clock: ClockId, deadline_ns: u64) -> io::Result<bool> {
    let ts = ns_to_ts(deadline_ns);
    match raw_clock_nanosleep(clock, libc::TIMER_ABSTIME, &ts) {
        0 => Ok(true),
        libc::EINTR => Ok(false),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// Creates a timerfd on `clock` that first expires at absolute `first_ns` and then
/// every `period_ns`.
pub fn timerfd_periodic(clock: ClockId, first_ns: u64, period_ns: u64) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with constant flags.
    let fd = unsafe { libc::timerfd_create(clock, libc::TFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by timerfd_create and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let spec = libc::itimerspec {
        it_interval: ns_to_ts(period_ns),
        it_value: ns_to_ts(first_ns),
    };
    // SAFETY: `fd` is a valid timerfd and `spec` a valid itimerspec.
    let rc = unsafe {
        libc::timerfd_settime(
            fd.as_raw_fd(),
            libc::TFD_TIMER_ABSTIME,
            &spec,
            std::ptr::null_mut(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// Blocks on a timerfd until it expires; returns the number of expirations.
#[inline]
pub fn timerfd_wait(fd: &OwnedFd) -> io::Result<u64> {
    let mut n: u64 = 0;
    // SAFETY: reading 8 bytes into a valid, aligned u64.
    let rc = retry_eintr(|| unsafe { libc::read(fd.as_raw_fd(), (&mut n as *mut u64).cast(), 8) })?;
    if rc != 8 {
        // A timerfd read returns 8 bytes or fails; this cannot happen.
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(n)
}

/// A POSIX interval timer that delivers `signo` to one thread (`SIGEV_THREAD_ID`).
/// Deleted on drop.
#[derive(Debug)]
pub struct ThreadTimer {
    id: libc::timer_t,
}

// SAFETY: a timer_t is a kernel handle; it may be used and deleted from any thread.
unsafe impl Send for ThreadTimer {}

impl ThreadTimer {
    /// Creates a timer on `clock` that signals `signo` to thread `tid`, first at absolute
    /// `first_ns`, then every `period_ns`.
    pub fn periodic(
        clock: ClockId,
        signo: i32,
        tid: i32,
        first_ns: u64,
        period_ns: u64,
    ) -> io::Result<Self> {
        // SAFETY: sigevent is POD; zero is a valid starting value.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = signo;
        sev.sigev_notify_thread_id = tid;
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: `sev` and `id` are valid for the call.
        if unsafe { libc::timer_create(clock, &mut sev, &mut id) } != 0 {
            return Err(super::timer::timer_create_error(io::Error::last_os_error()));
        }
        let timer = ThreadTimer { id };
        let spec = libc::itimerspec {
            it_interval: ns_to_ts(period_ns),
            it_value: ns_to_ts(first_ns),
        };
        // SAFETY: `id` is a live timer; `spec` is valid.
        let rc = unsafe {
            libc::timer_settime(timer.id, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(timer)
    }
}

impl Drop for ThreadTimer {
    fn drop(&mut self) {
        // SAFETY: `id` is a live timer created by timer_create and deleted once.
        unsafe { libc::timer_delete(self.id) };
    }
}

/// Sets the calling thread's timer slack in ns (`PR_SET_TIMERSLACK`).
pub fn set_timer_slack(ns: u64) -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's effective timer slack in ns (`PR_GET_TIMERSLACK`).
pub fn timer_slack() -> u64 {
    // SAFETY: prctl with integer arguments only.
    let rc = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    rc.max(0) as u64
}

/// CPU time consumed by the whole process so far, in ns (`CLOCK_PROCESS_CPUTIME_ID`).
pub fn process_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// `gettimeofday(2)` as ns since the epoch (microsecond resolution).
#[inline]
pub fn gettimeofday_ns() -> u64 {
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    // SAFETY: `tv` is a valid, writable timeval; the timezone pointer may be null.
    unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
    (tv.tv_sec as u64)
        .wrapping_mul(NS_PER_SEC)
        .wrapping_add((tv.tv_usec as u64).wrapping_mul(1000))
}

/// Reads `clock` through the raw `clock_gettime` system call, bypassing the
/// vDSO: what reading the clock costs when the kernel has to be entered.
#[inline]
pub fn clock_ns_syscall(clock: ClockId) -> u64 {
    // SAFETY: timespec is POD.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: SYS_clock_gettime takes (clockid_t, struct timespec *); `ts` is valid
    // and writable for the duration of the call.
    unsafe {
        libc::syscall(
            libc::SYS_clock_gettime,
            clock as libc::c_long,
            &mut ts as *mut libc::timespec,
        )
    };
    ts_to_ns(&ts)
}

/// Whether reading `clock` works on this kernel (`clock_gettime` returns 0).
pub fn clock_works(clock: ClockId) -> bool {
    // SAFETY: as in `clock_ns`.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `ts` is valid and writable.
    unsafe { libc::clock_gettime(clock, &mut ts) == 0 }
}

/// Whether the `rdtsc` instruction may be executed by this process
/// (`prctl(PR_GET_TSC)`; a process can be set up so that it faults).
#[cfg(target_arch = "x86_64")]
pub fn tsc_allowed() -> bool {
    let mut state: libc::c_int = 0;
    // SAFETY: PR_GET_TSC writes one int through the pointer, which is valid.
    let rc = unsafe { libc::prctl(libc::PR_GET_TSC, &mut state as *mut libc::c_int, 0, 0, 0) };
    rc != 0 || state == libc::PR_TSC_ENABLE
}

/// The number of POSIX timers of this process (`/proc/self/timers`), by
/// system calls alone (for a test's forked child); -1 if unreadable.
#[cfg(test)]
pub(crate) fn posix_timer_count() -> i32 {
    let mut buf = [0u8; 8192];
    // SAFETY: a constant path; the descriptor is closed below.
    let fd = unsafe { libc::open(c"/proc/self/timers".as_ptr(), libc::O_RDONLY) };
    if fd < 0 {
        return -1;
    }
    let mut len = 0;
    loop {
        // SAFETY: reads into the unused rest of `buf`.
        let n = unsafe { libc::read(fd, buf[len..].as_mut_ptr().cast(), buf.len() - len) };
        if n <= 0 {
            break;
        }
        len += n as usize;
    }
    // SAFETY: `fd` is open and ours.
    unsafe { libc::close(fd) };
    // One "notify:" line per timer ("ID:" is also the end of "ClockID:").
    buf[..len].windows(7).filter(|w| w == b"notify:").count() as i32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{probe_in_child, ChildExit};

    fn now() -> u64 {
        clock_ns(libc::CLOCK_MONOTONIC)
    }

    #[test]
    fn timespecs_and_ns() {
        let ts = ns_to_ts(3_000_000_007);
        assert_eq!((ts.tv_sec as u64, ts.tv_nsec as u64), (3, 7));
        assert_eq!(ts_to_ns(&ts), 3_000_000_007);
        assert_eq!(ts_to_ns(&ns_to_ts(999_999_999)), 999_999_999);
    }

    #[test]
    fn clocks_read_and_resolve() {
        let (a, b) = (
            clock_ns(libc::CLOCK_MONOTONIC),
            clock_ns_syscall(libc::CLOCK_MONOTONIC),
        );
        assert!(a > 1_000 && b >= a, "{a} {b}");
        // The wall clock, three ways, in the same second or so.
        let (r, g) = (clock_ns(libc::CLOCK_REALTIME), gettimeofday_ns());
        assert!(
            r > 1_600_000_000_000_000_000 && g.abs_diff(r) < 60_000_000_000,
            "{r} {g}"
        );
        assert_eq!(clock_res_ns(libc::CLOCK_MONOTONIC).unwrap(), 1);
        // The coarse clock ticks with the scheduler tick (1/HZ).
        let mut ts: libc::timespec = ns_to_ts(0);
        // SAFETY: `ts` is valid and writable.
        assert_eq!(
            unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut ts) },
            0
        );
        let coarse = clock_res_ns(libc::CLOCK_MONOTONIC_COARSE).unwrap();
        assert_eq!(coarse, ts_to_ns(&ts));
        assert!(coarse >= 1_000_000, "{coarse}");
        assert!(clock_res_ns(12_345).is_err());
        assert!(clock_works(libc::CLOCK_MONOTONIC));
        assert!(!clock_works(12_345));
        // The process's CPU time holds this thread's.
        let t0 = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
        while clock_ns(libc::CLOCK_THREAD_CPUTIME_ID) < t0 + 1_000_000 {}
        assert!(process_cpu_ns() >= clock_ns(libc::CLOCK_THREAD_CPUTIME_ID));
    }

    /// Sleeps end at or after their deadline (never early; lateness is not
    /// asserted).
    #[test]
    fn sleeps_do_not_end_early() {
        let d = now() + 2_000_000;
        sleep_until(libc::CLOCK_MONOTONIC, d).unwrap();
        assert!(now() >= d);
        let t0 = now();
        nanosleep(2_000_000).unwrap();
        assert!(now() >= t0 + 2_000_000);
        let t0 = now();
        sleep_for(libc::CLOCK_MONOTONIC, 2_000_000).unwrap();
        assert!(now() >= t0 + 2_000_000);
        let d = now() + 2_000_000;
        assert!(sleep_until_interruptible(libc::CLOCK_MONOTONIC, d).unwrap());
        assert!(now() >= d);
        assert!(sleep_until(12_345, d).is_err());
        assert!(sleep_for(12_345, 1).is_err());
        assert!(sleep_until_interruptible(12_345, d).is_err());
    }

    /// A signal ends nanosleep and the interruptible sleep early, without
    /// an error; the interruptible one says it was interrupted.
    #[test]
    fn a_signal_ends_the_interruptible_sleeps() {
        use std::sync::atomic::{AtomicI32, Ordering};
        for interruptible in [false, true] {
            let tid = AtomicI32::new(0);
            let r = std::thread::scope(|s| {
                let h = s.spawn(|| {
                    tid.store(crate::rt::accept_wake().unwrap(), Ordering::SeqCst);
                    if interruptible {
                        let d = now() + 60_000_000_000;
                        sleep_until_interruptible(libc::CLOCK_MONOTONIC, d).map(|done| !done)
                    } else {
                        nanosleep(60_000_000_000).map(|()| true)
                    }
                });
                while tid.load(Ordering::SeqCst) == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                crate::rt::wake_until_ended(&[tid.load(Ordering::SeqCst)], |_| !h.is_finished());
                h.join().unwrap()
            });
            assert!(r.unwrap(), "interruptible {interruptible}");
        }
    }

    #[test]
    fn a_periodic_timerfd_counts_its_expirations() {
        let fd = timerfd_periodic(libc::CLOCK_MONOTONIC, now() + 1_000_000, 1_000_000).unwrap();
        nanosleep(10_000_000).unwrap();
        // At least the expirations of 9 ms are waiting.
        let n = timerfd_wait(&fd).unwrap();
        assert!(n >= 2, "{n}");
        assert_eq!(
            timerfd_periodic(12_345, 1, 1).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
    }

    /// In a child (counting the process's timers): a POSIX timer exists
    /// while its value lives and is deleted on drop; an unknown clock is refused.
    #[test]
    fn a_thread_timer_is_deleted_on_drop() {
        fn probe() -> i32 {
            let before = posix_timer_count();
            let sig = libc::SIGRTMIN() + 7;
            if crate::sys::block_signals(&[sig]).is_err() {
                return 10;
            }
            let far = clock_ns(libc::CLOCK_MONOTONIC) + 3_600_000_000_000;
            let tid = crate::sys::gettid();
            let Ok(t) = ThreadTimer::periodic(libc::CLOCK_MONOTONIC, sig, tid, far, 1_000_000)
            else {
                return 11;
            };
            let during = posix_timer_count();
            drop(t);
            let after = posix_timer_count();
            if ThreadTimer::periodic(12_345, sig, tid, far, 1).is_ok() {
                return 12;
            }
            if before < 0 || during != before + 1 || after != before {
                return 13;
            }
            0
        }
        assert_eq!(probe_in_child(probe).unwrap(), ChildExit::Code(0));
    }

    /// In a child with its standard input closed: descriptor 0 is a
    /// descriptor like any other.
    #[test]
    fn descriptor_zero_is_a_timerfd_too() {
        fn probe() -> i32 {
            // SAFETY: closing this child's standard input.
            unsafe { libc::close(0) };
            match timerfd_periodic(libc::CLOCK_MONOTONIC, 1, 1_000_000) {
                Ok(fd) if fd.as_raw_fd() == 0 => 0,
                Ok(_) => 10,
                Err(_) => 11,
            }
        }
        assert_eq!(probe_in_child(probe).unwrap(), ChildExit::Code(0));
    }

    #[test]
    fn timer_slack_is_set_per_thread() {
        let got = std::thread::spawn(|| {
            set_timer_slack(4_321).unwrap();
            timer_slack()
        })
        .join()
        .unwrap();
        assert_eq!(got, 4_321);
    }

    /// PR_GET_TSC per thread: a thread that forbade itself the TSC is told so.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn tsc_permission_per_thread() {
        assert!(tsc_allowed());
        let allowed = std::thread::spawn(|| {
            // SAFETY: PR_SET_TSC takes an int; it affects this thread only.
            unsafe { libc::prctl(libc::PR_SET_TSC, libc::PR_TSC_SIGSEGV, 0, 0, 0) };
            tsc_allowed()
        })
        .join()
        .unwrap();
        assert!(!allowed);
    }
}
