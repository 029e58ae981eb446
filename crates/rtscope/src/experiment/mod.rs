//! Experiments, one module each: a plan (plain settings, no clap types) and
//! a measurement that returns series. Everything around the measurement —
//! real-time environment, loads, stop signals, the result document, writing
//! and printing — is the harness in [`run`]; the text they print lives in
//! `crate::output`. `docs/architecture.md` has the recipe for a new one.

pub mod clock;
pub mod cyclic;
pub mod cyclic_trace;
pub mod cyclictest;
pub mod hwlat;
pub mod ipc;
pub mod irq;
pub mod irq_gpio;
pub mod load;
pub mod matrix;
pub mod noise;
pub mod period;
pub mod qualify;
pub mod repeat;
pub mod run;
pub mod timer;
