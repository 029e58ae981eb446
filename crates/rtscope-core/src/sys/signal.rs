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

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's blocked signals, of `signals`.
    fn blocked(signals: &[i32]) -> Vec<i32> {
        // SAFETY: sigset_t is POD; pthread_sigmask only writes the old set.
        let mut mask: libc::sigset_t = unsafe { std::mem::zeroed() };
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask) };
        signals
            .iter()
            .copied()
            // SAFETY: `mask` is an initialised set.
            .filter(|&s| unsafe { libc::sigismember(&mask, s) } == 1)
            .collect()
    }

    #[test]
    fn sets_and_masks_per_thread() {
        let set = sigset_of(&[libc::SIGUSR1, libc::SIGTERM]);
        for (s, inside) in [(libc::SIGUSR1, 1), (libc::SIGTERM, 1), (libc::SIGUSR2, 0)] {
            // SAFETY: `set` is an initialised set.
            assert_eq!(unsafe { libc::sigismember(&set, s) }, inside);
        }
        let (during, after) = std::thread::spawn(|| {
            let both = [libc::SIGUSR1, libc::SIGUSR2];
            block_signals(&both).unwrap();
            let during = blocked(&both);
            unblock_signals(&[libc::SIGUSR1]).unwrap();
            (during, blocked(&both))
        })
        .join()
        .unwrap();
        assert_eq!(during, [libc::SIGUSR1, libc::SIGUSR2]);
        assert_eq!(after, [libc::SIGUSR2]);
        // This thread's mask is its own.
        assert!(blocked(&[libc::SIGUSR2]).is_empty());
    }

    /// A POSIX timer's signal, waited for after 20 periods, reports the
    /// expirations it stands for beyond the first; a signal sent by a
    /// thread reports none. Both ways of waiting: `sigwait_one` and the
    /// interruptible `sigwait_one_interruptible`.
    #[test]
    fn a_timers_signal_brings_its_overruns_and_another_none() {
        let got = std::thread::spawn(|| {
            let (sig, sig2) = (libc::SIGRTMIN() + 5, libc::SIGRTMIN() + 6);
            // Both stay blocked until the thread ends, which discards what is
            // still pending for it.
            block_signals(&[sig, sig2]).unwrap();
            let tid = crate::sys::gettid();
            let timer_overruns = || {
                let now = crate::sys::clock_ns(libc::CLOCK_MONOTONIC);
                let timer = crate::sys::ThreadTimer::periodic(
                    libc::CLOCK_MONOTONIC,
                    sig,
                    tid,
                    now + 1_000_000,
                    1_000_000,
                )
                .unwrap();
                crate::sys::nanosleep(20_000_000).unwrap();
                timer
            };
            let t = timer_overruns();
            let over = sigwait_one(&sigset_of(&[sig])).unwrap();
            drop(t);
            // A signal of the first timer may still be pending: drained here.
            let _ = sigwait_pending(sig);
            let t = timer_overruns();
            let over2 = crate::sys::sigwait_one_interruptible(&sigset_of(&[sig])).unwrap();
            drop(t);
            tgkill(crate::sys::getpid(), tid, sig2).unwrap();
            let sent = sigwait_one(&sigset_of(&[sig2])).unwrap();
            tgkill(crate::sys::getpid(), tid, sig2).unwrap();
            let sent2 = crate::sys::sigwait_one_interruptible(&sigset_of(&[sig2])).unwrap();
            (over, over2, sent, sent2)
        })
        .join()
        .unwrap();
        // 20 ms of 1 ms periods: at least 19 expirations after the first.
        assert!(got.0 >= 2 && got.1.is_some_and(|o| o >= 2), "{got:?}");
        assert_eq!((got.2, got.3), (0, Some(0)));
    }

    /// Takes `sig` if it is pending for this thread, without waiting.
    fn sigwait_pending(sig: i32) -> bool {
        let set = sigset_of(&[sig]);
        let zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid set and timeout; the info pointer may be null.
        unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &zero) == sig }
    }

    #[test]
    fn refusals() {
        for bad in [0, 1, -1] {
            assert_eq!(
                killpg(bad, 0).unwrap_err().raw_os_error(),
                Some(libc::EINVAL)
            );
        }
        // Signal 0 checks a target without sending anything.
        kill(crate::sys::getpid(), 0).unwrap();
        assert_eq!(
            kill(i32::MAX, 0).unwrap_err().raw_os_error(),
            Some(libc::ESRCH)
        );
        tgkill(crate::sys::getpid(), crate::sys::gettid(), 0).unwrap();
        assert!(tgkill(crate::sys::getpid(), i32::MAX, 0).is_err());
    }
}
