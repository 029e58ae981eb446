//! rtscope-core: the embeddable measurement core of rtscope.
//!
//! - [`rt`]: real-time environment (policy, priority, affinity, mlock, cpu_dma_latency)
//! - [`clock`]: time sources, calibration, read cost, stopwatch and period probe
//! - [`cyclic`]: the periodic wake-up measurement loop and its wake methods
//! - [`sample`]: the sample type and the wait-free rings to the aggregator
//! - [`record`]: histogram, statistics, timeline, spikes
//! - [`noise`]: OS noise, oslat's busy loop: gaps above a threshold
//! - [`trace`]: private tracefs instances, raw event parsing, noise attribution
//! - [`file`]: output files written atomically, or through for devices and FIFOs
//! - [`result`]: the versioned result document
//! - [`system`]: snapshot of the machine
//! - [`timer`]: precise sleeps with overhead compensation, a software timer service
//! - [`named`]: enums users name on the command line (`FromStr`/`Display`)
//! - [`units`]: durations and CPU lists as users type them
//! - [`sys`]: every unsafe libc call, wrapped once
//!
//! The crate has no CLI or plotting dependencies and builds as pure Rust.

pub mod clock;
pub mod cyclic;
pub mod file;
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
