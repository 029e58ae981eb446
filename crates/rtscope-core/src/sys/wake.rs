//! Waits that return on a signal (EINTR) instead of retrying, so that a run
//! that stops can interrupt a long sleep (see `rt::wake_thread`), and the
//! process-count limit that bounds how many threads a run may start.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use super::info::rlimit;
use super::time::{ns_to_ts, ClockId};

// ---------------------------------------------------------------------------
// Interrupting a measurement thread's wait when a run stops (`rt::accept_wake`,
// `rt::wake_thread`): a no-op handler without SA_RESTART, a thread-directed
// signal, and wait variants that report EINTR instead of restarting.

extern "C" fn noop_signal_handler(_: libc::c_int) {}

/// Installs a handler that does nothing for `sig`, without `SA_RESTART`: a
/// blocking call of a thread that has `sig` unblocked then fails with EINTR
/// when `sig` is sent to that thread.
pub fn install_noop_handler(sig: i32) -> io::Result<()> {
    // SAFETY: sigaction is POD; zero is a valid start (no flags, empty mask).
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = noop_signal_handler as *const () as usize;
    sa.sa_flags = 0;
    // SAFETY: `sa.sa_mask` is a valid sigset to initialise.
    unsafe { libc::sigemptyset(&mut sa.sa_mask) };
    // SAFETY: `sa` is valid; the handler is async-signal-safe (it does nothing).
    if unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `clock_nanosleep` of `ns` relative to now; `Ok(false)` when a signal
/// handler interrupted the sleep, `Ok(true)` when it ran its course.
#[inline]
pub fn sleep_for_interruptible(clock: ClockId, ns: u64) -> io::Result<bool> {
    let ts = ns_to_ts(ns);
    match super::time::raw_clock_nanosleep(clock, 0, &ts) {
        0 => Ok(true),
        libc::EINTR => Ok(false),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// `nanosleep(2)` for `ns`; `Ok(false)` when a signal handler interrupted it.
#[inline]
pub fn nanosleep_interruptible(ns: u64) -> io::Result<bool> {
    let ts = ns_to_ts(ns);
    // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null.
    if unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) } != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINTR) {
            return Ok(false);
        }
        return Err(e);
    }
    Ok(true)
}

/// Blocks on a timerfd until it expires: the number of expirations, or
/// `Ok(None)` when a signal handler interrupted the read.
#[inline]
pub fn timerfd_wait_interruptible(fd: &OwnedFd) -> io::Result<Option<u64>> {
    let mut n: u64 = 0;
    // SAFETY: reading 8 bytes into a valid, aligned u64.
    let rc = unsafe { libc::read(fd.as_raw_fd(), (&mut n as *mut u64).cast(), 8) };
    if rc == 8 {
        return Ok(Some(n));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EINTR) {
        return Ok(None);
    }
    Err(e)
}

/// [`sigwait_one`](super::signal::sigwait_one), but `Ok(None)` when a signal outside `set` ran its
/// handler and interrupted the wait.
#[inline]
pub fn sigwait_one_interruptible(set: &libc::sigset_t) -> io::Result<Option<u32>> {
    // SAFETY: siginfo_t is POD; sigwaitinfo fills it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // The raw system call, not libc's `sigwaitinfo`: musl's wrapper restarts
    // the wait on EINTR, so a wake signal could not end it. The kernel's sigset
    // is the first 8 bytes (64 signals) of libc's larger `sigset_t`.
    // SAFETY: `set` is an initialised sigset of at least 8 bytes; `info` is
    // valid and writable; a null timeout waits without limit.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_rt_sigtimedwait,
            set as *const libc::sigset_t,
            &mut info as *mut libc::siginfo_t,
            std::ptr::null::<libc::timespec>(),
            8 as libc::size_t,
        )
    };
    if rc >= 0 {
        let overrun = if info.si_code == libc::SI_TIMER {
            // SAFETY: si_code says the timer member of the union is valid.
            unsafe { info.si_overrun() }
        } else {
            0
        };
        return Ok(Some(overrun.max(0) as u32));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EINTR) {
        return Ok(None);
    }
    Err(e)
}

/// `RLIMIT_NPROC` (processes and threads of the real user) as (soft, hard);
/// `u64::MAX` means unlimited.
pub fn rlimit_nproc() -> (u64, u64) {
    rlimit(libc::RLIMIT_NPROC)
}
