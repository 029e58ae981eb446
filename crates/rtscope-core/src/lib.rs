//! rtscope-core: the embeddable measurement core of rtscope.
//!
//! - [`rt`]: real-time environment (policy, priority, affinity, mlock, cpu_dma_latency)
//! - [`clock`]: time sources, calibration, read cost, stopwatch and period probe
//! - [`cyclic`]: the periodic wake-up measurement loop and its wake methods
//! - [`sample`]: the sample type and the wait-free rings to the aggregator
//! - [`record`]: histogram, statistics, timeline, spikes
//! - [`noise`]: OS noise, oslat's busy loop: gaps above a threshold
//! - [`hwlat`]: hardware latency: the kernel's hwlat tracer, its trace lines, the SMI counter
//! - [`trace`]: private tracefs instances, raw event parsing, noise attribution
//! - [`file`](mod@file): output files written atomically, or through for devices and FIFOs
//! - [`result`]: the versioned result document
//! - [`system`]: snapshot of the machine
//! - [`timer`]: precise sleeps with overhead compensation, a software timer service
//! - [`named`]: enums users name on the command line (`FromStr`/`Display`)
//! - [`units`]: durations and CPU lists as users type them
//! - `sys`: every unsafe libc call, wrapped once. Public for the `rtscope`
//!   binary but hidden from these pages and **not covered by semantic
//!   versioning**: its functions change with the binary's needs.
//!
//! The crate has no CLI or plotting dependencies and builds as pure Rust
//! (Linux: x86-64, aarch64, armv7; Rust 1.85 or newer).
//!
//! # Embedding
//!
//! ```toml
//! [dependencies]
//! rtscope-core = "0.1"
//! libc = "0.2"
//! ```
//!
//! A 1 ms control loop: SCHED_FIFO for its thread, a [`timer::PreciseSleep`]
//! to each absolute deadline (the kernel's wait, woken a learnt margin early,
//! then a short spin), a [`clock::Stopwatch`] around the work and a
//! [`clock::PeriodProbe`] that checks the loop's own period (as
//! `examples/control-loop` in the repository does, `cargo run --release -p
//! control-loop`):
//!
//! ```no_run
//! use rtscope_core::clock::{PeriodProbe, Stopwatch};
//! use rtscope_core::cyclic::{Clock, PosixClock};
//! use rtscope_core::rt::{Policy, ThreadSetup};
//! use rtscope_core::timer::{Compensation, PreciseSleep, SleepTuning, SystemWait, WaitApi};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // SCHED_FIFO 80 for this thread, timer slack 1 ns, 64 KiB of stack faulted in.
//! let setup = ThreadSetup {
//!     policy: Policy::Fifo,
//!     priority: 80,
//!     cpus: vec![],
//!     timer_slack_ns: Some(1),
//!     prefault_stack: 64 * 1024,
//!     block_signals: vec![],
//! };
//! setup.apply()?; // fails without root, CAP_SYS_NICE or RLIMIT_RTPRIO
//!
//! const PERIOD_NS: u64 = 1_000_000;
//! let clock = PosixClock(libc::CLOCK_MONOTONIC);
//! let wait = SystemWait::open(WaitApi::ClockNanosleep)?;
//! let mut sleep = PreciseSleep::new(wait, clock, Compensation::Adaptive, SleepTuning::default());
//! let sw = Stopwatch::new()?; // the best calibrated counter
//! let mut probe = PeriodProbe::new(PERIOD_NS)?; // expects 1 ms periods
//! let mut next = clock.now() + PERIOD_NS;
//! for _ in 0..1000 {
//!     let wake = sleep.sleep_until(next)?; // absolute deadline: no drift
//!     probe.tick(); // first thing after the wake-up: no allocation, no lock
//!     let t = sw.start();
//!     // ... the control law ...
//!     let _work_ns = sw.elapsed_ns(t);
//!     let _missed_by_ns = wake.error_ns();
//!     next += PERIOD_NS;
//! }
//! let s = probe.summary();
//! println!("{} periods, mean {:.1} ns, jitter up to {:+.1} ns", s.periods, s.mean_period_ns, s.jitter_max_ns);
//! probe.write_json(std::path::Path::new("loop.json"))?; // `rtscope report loop.json`
//! # Ok(())
//! # }
//! ```
//!
//! The pieces: [`rt::ThreadSetup`] (policy, priority, affinity, timer slack,
//! stack prefault for the calling thread), [`timer::PreciseSleep`] with its
//! [`timer::Compensation`] (`None` is the plain `clock_nanosleep`; every
//! sleep returns a [`timer::Wake`] with its error and the time spent
//! spinning), [`clock::Stopwatch`] and [`clock::PeriodProbe`] (see their
//! pages), and [`result::ResultDocument`], the JSON document that `rtscope
//! report` and `rtscope compare` read. `cargo doc -p rtscope-core --no-deps
//! --open` builds these pages.

#![warn(missing_docs)]

pub mod clock;
pub mod cyclic;
pub mod deadline;
pub mod file;
pub mod hwlat;
pub mod named;
pub mod noise;
pub mod record;
pub mod result;
pub mod rt;
pub mod sample;
// The raw libc layer: public for the rtscope binary, hidden from the
// documentation and not covered by semantic versioning (sys/mod.rs).
#[doc(hidden)]
pub mod sys;
pub mod system;
pub mod timer;
pub mod trace;
pub mod units;

// The crate README's example, compiled (not run) as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
