//! Timers: how late a sleep wakes, how to compensate for it, and a software
//! timer service that multiplexes many virtual timers on one kernel timer.
//!
//! - [`PreciseSleep`]: sleep until an absolute deadline on one of the wait
//!   APIs ([`WaitApi`]) with a [`Compensation`]: none, static (a calibrated
//!   offset, the study's method), adaptive (EWMA of the lateness, `mean + k·σ`,
//!   then a spin) or hybrid (a windowed quantile of the lateness, then a
//!   spin). Every sleep returns a [`Wake`]: requested, actual, error and the
//!   time spent spinning, so the cost of accuracy is visible.
//! - [`calibrate`]: measure an API's lateness for static compensation; save
//!   and load it.
//! - [`service`]: [`TimerService`](service::TimerService), the study's polling
//!   and hopping designs, with per-stage timestamps.
//!
//! Everything is generic over the clock ([`crate::cyclic::Clock`]) and the
//! wait ([`OneShotWait`]), so the strategies are tested with a simulated
//! clock; the real waits are on CLOCK_MONOTONIC. `docs/timer.md` describes
//! the designs and shows measured output.

pub mod calibrate;
pub mod service;
mod sleep;
pub mod track;
mod wait;

pub use sleep::{Compensation, PreciseSleep, SleepTuning, Wake};
pub use wait::{posix_timer_signal, OneShotWait, SystemWait, WaitApi};
