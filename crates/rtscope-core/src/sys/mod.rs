//! Every `unsafe` libc call rtscope makes, each wrapped exactly once.
//!
//! **Not covered by semantic versioning.** This module is public for the
//! `rtscope` binary, hidden from the documentation, and its items may change
//! or go in any release. Embedders use the modules above it
//! ([`crate::rt`], [`crate::clock`], [`crate::timer`], ...).
//!
//! The rest of the crate (and the binary) calls these safe wrappers. Keeping the
//! `unsafe` surface in one module makes it reviewable: each function documents
//! why the call is sound. The functions used on the measurement hot path
//! ([`clock_ns`], [`sleep_until`], [`sleep_for`], [`timerfd_wait`],
//! [`sigwait_one`]) perform exactly one libc call and never allocate.
//!
//! The wrappers are split by topic into submodules; everything is re-exported
//! here, so callers name them `sys::foo` whatever file they live in:
//!
//! - `time`: clocks, sleeps, timerfd and POSIX timers, timer slack
//! - `timer`: one-shot waits to a deadline on every kernel interface (`rtscope timer`)
//! - `sched`: scheduling policy, priority, CPU affinity
//! - `signal`: signal masks, waiting for and sending signals
//! - `proc`: process identity, fork, exit, reaping, supervision
//! - `info`: kernel and privilege facts (uname, rlimits, euid, kernel log)
//! - `mount`: mounting tracefs for private trace instances; whether a pid is alive
//! - `net`: kernel receive timestamps on sockets (`SO_TIMESTAMPNS`, `recvmsg`)
//! - `gpio`: GPIO character device uAPI v2 (line requests, edge events, output values)
//! - `rtc`: `/dev/rtc` periodic interrupts (`RTC_IRQP_SET`, `RTC_PIE_ON`/`OFF`, blocking read)
//! - `tty`: raw mode and speed of a serial terminal (`--stream DEVICE --baud N`)
//! - `mem`: memory locking, anonymous mappings, the SIGSEGV fault handler
//! - `ipc`: shared memory and the IPC primitives of `rtscope ipc`
//! - `perf` (aarch64 only): perf events and their user page

mod gpio;
mod info;
mod ipc;
mod mem;
mod mount;
mod net;
// Used by aarch64's perf-cycles source only, but plain Linux: built (and
// tested against the real kernel) everywhere.
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code, unused_imports))]
mod perf;
mod proc;
mod rtc;
mod sched;
mod signal;
mod time;
mod timer;
mod tty;
mod wake;

pub use gpio::*;
pub use info::*;
pub use ipc::*;
pub use mem::*;
pub use mount::*;
pub use net::*;
#[cfg_attr(not(target_arch = "aarch64"), allow(unused_imports))]
pub use perf::*;
pub use proc::*;
pub use rtc::*;
pub use sched::*;
pub use signal::*;
pub use time::*;
pub use timer::*;
pub use tty::*;
pub use wake::*;

use std::io;

/// Runs the libc call `f` again for as long as it fails with `EINTR` (a signal
/// handler ran while it blocked), and turns its return value into an
/// `io::Result`.
///
/// Only for calls that should be restarted transparently. Calls that must
/// return to their caller when a signal arrives (so that it can look at a stop
/// flag: [`sleep_for`], [`nanosleep`], [`sleep_until_interruptible`],
/// [`futex_wait`]) handle `EINTR` themselves and do not use this.
#[inline]
fn retry_eintr<R: SysRet>(mut f: impl FnMut() -> R) -> io::Result<R::Ok> {
    loop {
        match f().check() {
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            r => return r,
        }
    }
}

/// How a libc call reports failure, so that [`retry_eintr`] can tell success,
/// an interrupted call and a real error apart.
///
/// Plain integers follow the usual convention (`read`, `semop`, `waitpid`,
/// `sigwaitinfo`, ...): a negative return is an error whose code is in `errno`,
/// anything else is the result. Implemented for `c_int`, `ssize_t` (`isize`)
/// and `c_long` (`i64`; `i32` on 32-bit targets). Calls that return the error
/// number itself are wrapped in [`Errno`].
trait SysRet {
    /// What a successful call gives back.
    type Ok;
    /// Success, or the error the call reported. Called right after the call,
    /// before anything else can overwrite `errno`.
    fn check(self) -> io::Result<Self::Ok>;
}

#[inline]
fn negative_is_errno<T: PartialOrd + Default>(rc: T) -> io::Result<T> {
    if rc < T::default() {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

impl SysRet for i32 {
    type Ok = i32;
    #[inline]
    fn check(self) -> io::Result<i32> {
        negative_is_errno(self)
    }
}

impl SysRet for i64 {
    type Ok = i64;
    #[inline]
    fn check(self) -> io::Result<i64> {
        negative_is_errno(self)
    }
}

impl SysRet for isize {
    type Ok = isize;
    #[inline]
    fn check(self) -> io::Result<isize> {
        negative_is_errno(self)
    }
}

/// The return value of a call that returns its error number instead of setting
/// `errno` (`clock_nanosleep`, the `pthread_*` functions): 0 is success.
struct Errno(libc::c_int);

impl SysRet for Errno {
    type Ok = ();
    #[inline]
    fn check(self) -> io::Result<()> {
        match self.0 {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_eintr_restarts_only_on_eintr() {
        let mut calls = 0;
        let r = retry_eintr(|| {
            calls += 1;
            Errno(if calls < 3 { libc::EINTR } else { 0 })
        });
        assert!(r.is_ok());
        assert_eq!(calls, 3);

        let mut calls = 0;
        let r = retry_eintr(|| {
            calls += 1;
            Errno(libc::EAGAIN)
        });
        assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EAGAIN));
        assert_eq!(calls, 1);
    }

    #[test]
    fn retry_eintr_reads_errno_for_negative_returns() {
        let mut calls = 0;
        let r = retry_eintr(|| {
            calls += 1;
            // SAFETY: closing an invalid descriptor only fails with EBADF.
            unsafe { libc::close(-1) }
        });
        assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EBADF));
        assert_eq!(calls, 1);
        assert_eq!(retry_eintr(|| 5isize).unwrap(), 5);
        // The raw system call returns a c_long.
        // SAFETY: as above.
        let r = retry_eintr(|| unsafe { libc::syscall(libc::SYS_close, -1) });
        assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EBADF));
        assert_eq!(retry_eintr(|| 7 as libc::c_long).unwrap(), 7);
    }
}
