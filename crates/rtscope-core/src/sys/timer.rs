//! One-shot waits to an absolute deadline for `rtscope timer` and the
//! `timer` module: every kernel interface a program can sleep on (a one-shot
//! timerfd, a one-shot POSIX timer signalling one thread, `epoll_pwait2`,
//! `FUTEX_WAIT_BITSET` with an absolute timeout, `pselect`). Each wait makes
//! exactly one blocking call (plus the arming call of a kernel timer) and
//! never allocates; an interrupted wait (EINTR) returns early and the caller
//! decides whether to wait again.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::AtomicU32;

use super::time::{ns_to_ts, ClockId};

/// `FUTEX_WAIT_BITSET` (the only futex wait that takes an absolute timeout).
const FUTEX_WAIT_BITSET: libc::c_int = 9;
/// Match any waker.
const FUTEX_BITSET_MATCH_ANY: u32 = 0xffff_ffff;

/// Maps an interrupted call to `Ok(())`: the caller sees an early return.
#[inline]
fn eintr_ok(e: io::Error) -> io::Result<()> {
    if e.raw_os_error() == Some(libc::EINTR) {
        Ok(())
    } else {
        Err(e)
    }
}

/// A one-shot timerfd, re-armed for each wait.
#[derive(Debug)]
pub struct OneShotTimerfd {
    fd: OwnedFd,
}

impl OneShotTimerfd {
    /// Creates a disarmed timerfd on `clock`.
    pub fn new(clock: ClockId) -> io::Result<Self> {
        // SAFETY: plain syscall with constant flags.
        let fd = unsafe { libc::timerfd_create(clock, libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by timerfd_create and is owned by nobody else.
        Ok(OneShotTimerfd {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Arms the timer for the absolute time `deadline_ns` (no interval).
    #[inline]
    pub fn arm(&self, deadline_ns: u64) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: ns_to_ts(0),
            it_value: ns_to_ts(deadline_ns.max(1)),
        };
        // SAFETY: `fd` is a valid timerfd and `spec` a valid itimerspec.
        let rc = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Blocks until the armed expiry (or a signal: returns early).
    #[inline]
    pub fn wait(&self) -> io::Result<()> {
        let mut n: u64 = 0;
        // SAFETY: reading 8 bytes into a valid, aligned u64.
        let rc = unsafe { libc::read(self.fd.as_raw_fd(), (&mut n as *mut u64).cast(), 8) };
        if rc == 8 {
            return Ok(());
        }
        eintr_ok(io::Error::last_os_error())
    }

    /// Arms and waits: sleeps until `deadline_ns`.
    #[inline]
    pub fn sleep_until(&self, deadline_ns: u64) -> io::Result<()> {
        self.arm(deadline_ns)?;
        self.wait()
    }

    /// The descriptor (for an epoll set).
    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }
}

/// A one-shot POSIX timer that signals `signo` to one thread, waited for with
/// `sigwaitinfo`. The signal must be blocked in that thread. Deleted on drop.
#[derive(Debug)]
pub struct OneShotPosixTimer {
    id: libc::timer_t,
    set: libc::sigset_t,
}

// SAFETY: a timer_t is a kernel handle; it may be used and deleted from any thread.
unsafe impl Send for OneShotPosixTimer {}

/// `timer_create`'s error, with the cause of EAGAIN named: each POSIX timer
/// holds one queued signal of the user's RLIMIT_SIGPENDING, and when other
/// processes of the same user have used the limit up (`SigQ` in
/// /proc/self/status), no timer can be made.
pub fn timer_create_error(e: io::Error) -> io::Error {
    if e.raw_os_error() != Some(libc::EAGAIN) {
        return e;
    }
    let sigq = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("SigQ:"))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    io::Error::new(
        io::ErrorKind::WouldBlock,
        format!(
            "timer_create: no queued signal left for a POSIX timer (this user's queued signals, SigQ, are {sigq}: RLIMIT_SIGPENDING is used up by other processes or timers; ulimit -i raises it)"
        ),
    )
}

impl OneShotPosixTimer {
    /// A disarmed timer on `clock` that signals `signo` to thread `tid`.
    pub fn new(clock: ClockId, signo: i32, tid: i32) -> io::Result<Self> {
        // SAFETY: sigevent is POD; zero is a valid starting value.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = signo;
        sev.sigev_notify_thread_id = tid;
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: `sev` and `id` are valid for the call.
        if unsafe { libc::timer_create(clock, &mut sev, &mut id) } != 0 {
            return Err(timer_create_error(io::Error::last_os_error()));
        }
        Ok(OneShotPosixTimer {
            id,
            set: super::sigset_of(&[signo]),
        })
    }

    /// Arms for the absolute time `deadline_ns`, then waits for the signal
    /// (a signal outside the set returns early).
    #[inline]
    pub fn sleep_until(&self, deadline_ns: u64) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: ns_to_ts(0),
            it_value: ns_to_ts(deadline_ns.max(1)),
        };
        // SAFETY: `id` is a live timer; `spec` is valid.
        let rc = unsafe {
            libc::timer_settime(self.id, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        super::sigwait_one_interruptible(&self.set).map(|_| ())
    }
}

impl Drop for OneShotPosixTimer {
    fn drop(&mut self) {
        // SAFETY: `id` is a live timer created by timer_create and deleted once.
        unsafe { libc::timer_delete(self.id) };
    }
}

/// `struct __kernel_timespec`: 64-bit seconds and nanoseconds on every
/// architecture. `epoll_pwait2` (Linux 5.11) has only this form, while
/// `libc::timespec` of 32-bit ARM's glibc has 32-bit fields: passed as is, the
/// kernel read the nanoseconds into the seconds' high half and a 1 ms sleep
/// never ended (found on the kernel lab's armhf guest).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KernelTimespec {
    tv_sec: i64,
    tv_nsec: i64,
}

impl KernelTimespec {
    pub(crate) fn from_ns(ns: u64) -> Self {
        KernelTimespec {
            tv_sec: (ns / 1_000_000_000) as i64,
            tv_nsec: (ns % 1_000_000_000) as i64,
        }
    }
}

/// An empty epoll set: `epoll_pwait2` on it is a sleep with a nanosecond
/// relative timeout (what an event loop's timeout gives).
#[derive(Debug)]
pub struct EpollSleep {
    fd: OwnedFd,
}

impl EpollSleep {
    /// Creates the (empty) epoll instance.
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall with constant flags.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by epoll_create1 and is owned by nobody else.
        Ok(EpollSleep {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Waits `ns` (relative) for events that never come.
    #[inline]
    pub fn sleep_for(&self, ns: u64) -> io::Result<()> {
        let ts = KernelTimespec::from_ns(ns);
        // SAFETY: epoll_event is POD.
        let mut ev: libc::epoll_event = unsafe { std::mem::zeroed() };
        // SAFETY: epoll_pwait2(epfd, events, maxevents, timeout, sigmask, sigsetsize):
        // `ev` has room for 1 event, `ts` is a valid __kernel_timespec, a null
        // mask leaves the signal mask alone.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                self.fd.as_raw_fd(),
                &mut ev as *mut libc::epoll_event,
                1,
                &ts as *const KernelTimespec,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if rc < 0 {
            return eintr_ok(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// `FUTEX_WAIT_BITSET` on a private word nobody wakes, with an absolute
/// CLOCK_MONOTONIC timeout: returns at the deadline (ETIMEDOUT), on a signal,
/// or when the word is not `expected`.
#[inline]
pub fn futex_sleep_until(word: &AtomicU32, expected: u32, deadline_ns: u64) -> io::Result<()> {
    let ts = ns_to_ts(deadline_ns);
    // SAFETY: `word` is a valid, aligned u32 for the call; `ts` is a valid timespec
    // read as an absolute CLOCK_MONOTONIC time by FUTEX_WAIT_BITSET.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            FUTEX_BITSET_MATCH_ANY,
        )
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ETIMEDOUT) | Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(()),
            _ => Err(e),
        };
    }
    Ok(())
}

/// `pselect` with no descriptors: a sleep of `ns` (relative).
#[inline]
pub fn pselect_sleep(ns: u64) -> io::Result<()> {
    let ts = ns_to_ts(ns);
    // SAFETY: no descriptor sets (null), a valid timespec, no signal mask.
    let rc = unsafe {
        libc::pselect(
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &ts,
            std::ptr::null(),
        )
    };
    if rc < 0 {
        return eintr_ok(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn timer_create_eagain_names_the_queued_signal_limit() {
        let e = timer_create_error(io::Error::from_raw_os_error(libc::EAGAIN));
        let t = e.to_string();
        assert!(t.starts_with("timer_create: no queued signal left for a POSIX timer (this user's queued signals, SigQ, are "), "{t}");
        assert!(
            t.contains("RLIMIT_SIGPENDING") && t.contains("ulimit -i"),
            "{t}"
        );
        // The limit itself, read from this process's status.
        assert!(t.contains('/') && !t.contains("are unknown"), "{t}");
        let other = timer_create_error(io::Error::from_raw_os_error(libc::EINVAL));
        assert_eq!(other.raw_os_error(), Some(libc::EINVAL));
    }

    use super::*;

    fn now() -> u64 {
        super::super::clock_ns(libc::CLOCK_MONOTONIC)
    }

    /// Every wait returns, and not before its deadline (the kernel never
    /// wakes a timer early; lateness is not asserted).
    #[test]
    fn waits_return_not_before_the_deadline() {
        let tfd = OneShotTimerfd::new(libc::CLOCK_MONOTONIC).unwrap();
        let d = now() + 200_000;
        tfd.sleep_until(d).unwrap();
        assert!(now() >= d);

        let ep = EpollSleep::new().unwrap();
        let t0 = now();
        match ep.sleep_for(200_000) {
            Ok(()) => assert!(now() >= t0 + 200_000),
            // epoll_pwait2 needs Linux 5.11; user-mode emulators (qemu 7.2,
            // which CI runs the ARM tests under) lack it: an error, not a
            // wrong sleep.
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::ENOSYS), "{e}"),
        }

        let w = AtomicU32::new(0);
        let d = now() + 200_000;
        futex_sleep_until(&w, 0, d).unwrap();
        assert!(now() >= d);

        let t0 = now();
        pselect_sleep(200_000).unwrap();
        assert!(now() >= t0 + 200_000);
    }

    #[test]
    fn the_kernel_timespec_has_64_bit_fields_everywhere() {
        // The layout epoll_pwait2 reads, on 32-bit ARM as on 64-bit machines.
        assert_eq!(std::mem::size_of::<KernelTimespec>(), 16);
        let ts = KernelTimespec::from_ns(3_000_000_007);
        assert_eq!((ts.tv_sec, ts.tv_nsec), (3, 7));
        assert_eq!(
            KernelTimespec::from_ns(999_999_999),
            KernelTimespec {
                tv_sec: 0,
                tv_nsec: 999_999_999
            }
        );
        // Seconds past 32 bits stay whole.
        assert_eq!(
            KernelTimespec::from_ns(5_000_000_000 * 1_000_000_000).tv_sec,
            5_000_000_000
        );
    }

    #[test]
    fn only_an_interruption_is_an_early_return() {
        assert!(eintr_ok(io::Error::from_raw_os_error(libc::EINTR)).is_ok());
        let e = eintr_ok(io::Error::from_raw_os_error(libc::EBADF)).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
    }

    #[test]
    fn the_timerfd_is_a_timerfd_and_refuses_a_bad_clock() {
        let t = OneShotTimerfd::new(libc::CLOCK_MONOTONIC).unwrap();
        let link = std::fs::read_link(format!("/proc/self/fd/{}", t.raw_fd())).unwrap();
        assert_eq!(link.to_str(), Some("anon_inode:[timerfd]"));
        assert!(OneShotTimerfd::new(12_345).is_err());
    }

    /// In a child (counting the process's timers): the timer exists while
    /// its value lives and is deleted on drop.
    #[test]
    fn the_posix_timer_is_deleted_on_drop() {
        fn probe() -> i32 {
            let count = crate::sys::time::posix_timer_count;
            let before = count();
            let sig = libc::SIGRTMIN() + 7;
            let Ok(t) = OneShotPosixTimer::new(libc::CLOCK_MONOTONIC, sig, crate::sys::gettid())
            else {
                return 10;
            };
            let during = count();
            drop(t);
            if before < 0 || during != before + 1 || count() != before {
                return 11;
            }
            0
        }
        assert_eq!(
            crate::sys::probe_in_child(probe).unwrap(),
            crate::sys::ChildExit::Code(0)
        );
    }

    #[test]
    fn futex_returns_at_once_when_the_word_differs() {
        let w = AtomicU32::new(1);
        let t0 = now();
        futex_sleep_until(&w, 0, t0 + 10_000_000_000).unwrap();
        assert!(now() < t0 + 5_000_000_000);
    }
}
