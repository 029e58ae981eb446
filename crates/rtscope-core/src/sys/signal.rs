//! Signals: building sets, blocking and unblocking them per thread, waiting
//! for one synchronously (the signal-driven timer mode), and sending them to a
//! process, a process group or one thread.

use std::io;

use super::retry_eintr;

/// A signal set holding one signal.
pub fn sigset_of(signals: &[i32]) -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set; sigaddset only adds valid numbers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Waits for one of the signals in `set` (which must be blocked in this thread).
/// Returns the timer overrun count the kernel reports with the signal (0 for
/// signals that do not come from a POSIX timer).
#[inline]
pub fn sigwait_one(set: &libc::sigset_t) -> io::Result<u32> {
    // SAFETY: siginfo_t is POD; sigwaitinfo fills it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is an initialised sigset; `info` is valid and writable.
    retry_eintr(|| unsafe { libc::sigwaitinfo(set, &mut info) })?;
    let overrun = if info.si_code == libc::SI_TIMER {
        // SAFETY: si_code says the timer member of the union is valid.
        unsafe { info.si_overrun() }
    } else {
        0
    };
    Ok(overrun.max(0) as u32)
}

/// Blocks `signals` in the calling thread (`pthread_sigmask(SIG_BLOCK)`).
pub fn block_signals(signals: &[i32]) -> io::Result<()> {
    let set = sigset_of(signals);
    // SAFETY: `set` is initialised; the old-set pointer may be null.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Unblocks `signals` in the calling thread (`pthread_sigmask(SIG_UNBLOCK)`).
pub fn unblock_signals(signals: &[i32]) -> io::Result<()> {
    let set = sigset_of(signals);
    // SAFETY: `set` is initialised; the old-set pointer may be null.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Sends `sig` to process `pid`.
pub fn kill(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: plain syscall with integer arguments.
    if unsafe { libc::kill(pid, sig) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends `sig` to every process of process group `pgid`.
pub fn killpg(pgid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: plain syscall with integer arguments; pgid > 1 is checked so that
    // a bad value can never signal our own group (0) or every process (-1 / 1).
    if pgid <= 1 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    if unsafe { libc::killpg(pgid, sig) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends `sig` to thread `tid` of process `pid` (`tgkill`).
#[inline]
pub fn tgkill(pid: i32, tid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: plain syscall with integer arguments.
    if unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, sig) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
