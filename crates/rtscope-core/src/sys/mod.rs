//! Every `unsafe` libc call rtscope makes, each wrapped exactly once.
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
//! - `sched`: scheduling policy, priority, CPU affinity
//! - `signal`: signal masks, waiting for and sending signals
//! - `proc`: process identity, fork, exit, reaping, supervision
//! - `info`: kernel and privilege facts (uname, rlimits, euid, kernel log)
//! - `mem`: memory locking, anonymous mappings, the SIGSEGV fault handler
//! - `ipc`: shared memory and the IPC primitives of `rtscope ipc`
//! - `perf` (aarch64 only): perf events and their user page

mod info;
mod ipc;
mod mem;
#[cfg(target_arch = "aarch64")]
mod perf;
mod proc;
mod sched;
mod signal;
mod time;

pub use info::*;
pub use ipc::*;
pub use mem::*;
#[cfg(target_arch = "aarch64")]
pub use perf::*;
pub use proc::*;
pub use sched::*;
pub use signal::*;
pub use time::*;
