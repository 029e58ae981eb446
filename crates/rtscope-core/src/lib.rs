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
//! - [`sys`]: every unsafe libc call, wrapped once
//!
//! The crate has no CLI or plotting dependencies and builds as pure Rust.
//!
//! # Embedding
//!
//! rtscope-core is not published on crates.io; depend on it by path or git:
//!
//! ```toml
//! [dependencies]
//! rtscope-core = { path = "../rtscope/crates/rtscope-core" }
//! # or: rtscope-core = { git = "<rtscope repository URL>" }
//! libc = "0.2"
//! ```
//!
//! A 1 ms control loop that measures its own period and its work, as
//! `examples/control-loop` does (`cargo run --release -p control-loop`):
//!
//! ```no_run
//! use rtscope_core::clock::{PeriodProbe, Stopwatch};
//! use rtscope_core::rt::{Policy, ThreadSetup};
//! use rtscope_core::sys;
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
//! setup.apply()?; // fails without root / CAP_SYS_NICE
//!
//! let sw = Stopwatch::new()?; // the best calibrated counter
//! let mut probe = PeriodProbe::new(1_000_000)?; // expects 1 ms periods
//! let mut next = sys::clock_ns(libc::CLOCK_MONOTONIC) + 1_000_000;
//! for _ in 0..1000 {
//!     sys::sleep_until(libc::CLOCK_MONOTONIC, next)?; // absolute deadline
//!     probe.tick(); // first thing after the wake-up: no allocation, no lock
//!     let t = sw.start();
//!     // ... the control law ...
//!     let _work_ns = sw.elapsed_ns(t);
//!     next += 1_000_000;
//! }
//! let s = probe.summary();
//! println!("{} periods, mean {:.1} ns, jitter up to {:+.1} ns", s.periods, s.mean_period_ns, s.jitter_max_ns);
//! probe.write_json(std::path::Path::new("loop.json"))?; // `rtscope report loop.json`
//! # Ok(())
//! # }
//! ```
//!
//! The pieces: [`rt::ThreadSetup`] (policy, priority, affinity, timer slack,
//! stack prefault for the calling thread), [`sys::clock_ns`] and
//! [`sys::sleep_until`] (`clock_gettime` and `clock_nanosleep(TIMER_ABSTIME)`,
//! restarted after signals), [`clock::Stopwatch`] and [`clock::PeriodProbe`]
//! (see their pages), and [`result::ResultDocument`], the JSON document that
//! `rtscope report` and `rtscope compare` read. `cargo doc -p rtscope-core
//! --no-deps --open` builds these pages.

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
pub mod sys;
pub mod system;
pub mod timer;
pub mod trace;
pub mod units;
