//! The wait APIs a [`PreciseSleep`](super::PreciseSleep) can sleep on: one
//! trait, [`OneShotWait`], and one real implementation per kernel interface
//! ([`SystemWait`]). Every wait is on CLOCK_MONOTONIC (the relative ones
//! compute their timeout from it just before the call).

use std::io;
use std::sync::atomic::AtomicU32;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::sys;

/// A wait to an absolute deadline on CLOCK_MONOTONIC (or a simulated clock in
/// tests). It may return early (a signal); it never allocates.
pub trait OneShotWait {
    /// Waits until `target_ns` (absolute). `now_ns` is the time read just
    /// before the call (relative APIs subtract it).
    fn wait_until(&mut self, target_ns: u64, now_ns: u64) -> io::Result<()>;
}

impl<W: OneShotWait + ?Sized> OneShotWait for &mut W {
    #[inline]
    fn wait_until(&mut self, target_ns: u64, now_ns: u64) -> io::Result<()> {
        (**self).wait_until(target_ns, now_ns)
    }
}

/// The wait APIs `rtscope timer` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum WaitApi {
    /// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`.
    #[serde(rename = "clock_nanosleep")]
    ClockNanosleep,
    /// `nanosleep` of the remaining time (relative).
    Nanosleep,
    /// A one-shot `timerfd` armed with `TFD_TIMER_ABSTIME`, blocking `read`.
    Timerfd,
    /// A one-shot POSIX timer (`SIGEV_THREAD_ID`), `sigwaitinfo`.
    PosixTimer,
    /// `epoll_pwait2` on an empty set with a ns timeout (an event loop's timeout).
    Epoll,
    /// `FUTEX_WAIT_BITSET` with an absolute timeout.
    Futex,
    /// `std::sync::Condvar::wait_timeout` (a futex behind a mutex, relative).
    Condvar,
    /// `pselect` with no descriptors (relative).
    Select,
}

crate::named_enum!(WaitApi, "wait API", {
    WaitApi::ClockNanosleep => "clock_nanosleep",
    WaitApi::Nanosleep => "nanosleep",
    WaitApi::Timerfd => "timerfd",
    WaitApi::PosixTimer => "posix-timer",
    WaitApi::Epoll => "epoll",
    WaitApi::Futex => "futex",
    WaitApi::Condvar => "condvar",
    WaitApi::Select => "select",
});

impl WaitApi {
    /// Whether the kernel is given an absolute deadline (else a timeout
    /// computed from a clock read just before the call).
    pub fn absolute(self) -> bool {
        matches!(
            self,
            WaitApi::ClockNanosleep | WaitApi::Timerfd | WaitApi::PosixTimer | WaitApi::Futex
        )
    }
}

/// One of the real wait APIs, with what it needs created up front (the
/// timerfd, the POSIX timer, the epoll set, the futex word, the condvar).
pub enum SystemWait {
    /// `clock_nanosleep(TIMER_ABSTIME)`.
    ClockNanosleep,
    /// `nanosleep(2)` of the time left.
    Nanosleep,
    /// A one-shot `timerfd`, read.
    Timerfd(sys::OneShotTimerfd),
    /// A one-shot POSIX timer, its signal awaited.
    PosixTimer(sys::OneShotPosixTimer),
    /// `epoll_wait` with a timeout.
    Epoll(sys::EpollSleep),
    /// `FUTEX_WAIT` with a timeout on a word nobody wakes.
    Futex(AtomicU32),
    /// `Condvar::wait_timeout` on a mutex nobody signals.
    Condvar(Mutex<()>, Condvar),
    /// `pselect(2)` with a timeout and no descriptors.
    Select,
}

/// The signal a [`WaitApi::PosixTimer`] wait uses (the one `cyclic` uses).
pub fn posix_timer_signal() -> i32 {
    crate::cyclic::timer_signal()
}

impl SystemWait {
    /// Creates what `api` needs. For [`WaitApi::PosixTimer`] the timer
    /// signals the calling thread, and its signal is blocked here in the
    /// calling thread: open it on the thread that waits.
    pub fn open(api: WaitApi) -> io::Result<Self> {
        Ok(match api {
            WaitApi::ClockNanosleep => SystemWait::ClockNanosleep,
            WaitApi::Nanosleep => SystemWait::Nanosleep,
            WaitApi::Timerfd => {
                SystemWait::Timerfd(sys::OneShotTimerfd::new(libc::CLOCK_MONOTONIC)?)
            }
            WaitApi::PosixTimer => {
                let sig = posix_timer_signal();
                sys::block_signals(&[sig])?;
                SystemWait::PosixTimer(sys::OneShotPosixTimer::new(
                    libc::CLOCK_MONOTONIC,
                    sig,
                    sys::gettid(),
                )?)
            }
            WaitApi::Epoll => SystemWait::Epoll(sys::EpollSleep::new()?),
            WaitApi::Futex => SystemWait::Futex(AtomicU32::new(0)),
            WaitApi::Condvar => SystemWait::Condvar(Mutex::new(()), Condvar::new()),
            WaitApi::Select => SystemWait::Select,
        })
    }
}

impl OneShotWait for SystemWait {
    #[inline]
    fn wait_until(&mut self, target_ns: u64, now_ns: u64) -> io::Result<()> {
        let rel = target_ns.saturating_sub(now_ns);
        match self {
            SystemWait::ClockNanosleep => {
                sys::sleep_until_interruptible(libc::CLOCK_MONOTONIC, target_ns).map(|_| ())
            }
            SystemWait::Nanosleep => sys::nanosleep_interruptible(rel).map(|_| ()),
            SystemWait::Timerfd(t) => t.sleep_until(target_ns),
            SystemWait::PosixTimer(t) => t.sleep_until(target_ns),
            SystemWait::Epoll(e) => e.sleep_for(rel),
            SystemWait::Futex(w) => sys::futex_sleep_until(w, 0, target_ns),
            SystemWait::Condvar(m, c) => {
                // Nobody notifies: the wait ends at its timeout (or spuriously).
                // Locking through `&Mutex` is what a condvar user does.
                let m: &Mutex<()> = m;
                let g = m.lock().unwrap_or_else(|p| p.into_inner());
                let _ = c.wait_timeout(g, Duration::from_nanos(rel));
                Ok(())
            }
            SystemWait::Select => sys::pselect_sleep(rel),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_apis() {
        for api in WaitApi::ALL {
            let abs = matches!(
                api,
                WaitApi::ClockNanosleep | WaitApi::Timerfd | WaitApi::PosixTimer | WaitApi::Futex
            );
            assert_eq!(api.absolute(), abs, "{api:?}");
        }
    }

    #[test]
    fn posix_timer_signal_is_cyclics_real_time_signal() {
        let s = posix_timer_signal();
        assert_eq!(s, crate::cyclic::timer_signal());
        assert!(s > libc::SIGRTMIN() && s <= libc::SIGRTMAX(), "{s}");
    }

    /// Every real wait blocks until its deadline: a waiter that returned at
    /// once would need thousands of calls to reach it. Early returns (a
    /// condvar may wake spuriously) are allowed, as PreciseSleep loops.
    #[test]
    fn every_api_waits_until_the_deadline() {
        for api in WaitApi::ALL {
            // Through `&mut W` as well: the blanket impl forwards.
            let mut w = SystemWait::open(*api).unwrap();
            let mut by_ref: &mut SystemWait = &mut w;
            let target = sys::clock_ns(libc::CLOCK_MONOTONIC) + 2_000_000;
            let mut calls = 0;
            loop {
                let now = sys::clock_ns(libc::CLOCK_MONOTONIC);
                if now >= target {
                    break;
                }
                match OneShotWait::wait_until(&mut by_ref, target, now) {
                    // qemu-user lacks some system calls (epoll_pwait2): the
                    // ARM test runs pass over them; on x86-64 every API works.
                    Err(e)
                        if cfg!(not(target_arch = "x86_64"))
                            && e.raw_os_error() == Some(libc::ENOSYS) =>
                    {
                        eprintln!("{api:?}: not here ({e})");
                        calls = 1;
                        break;
                    }
                    r => r.unwrap(),
                }
                calls += 1;
            }
            assert!((1..=20).contains(&calls), "{api:?}: {calls} waits");
        }
    }
}
