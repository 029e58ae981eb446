//! Counter frequency, measured against CLOCK_MONOTONIC_RAW.
//!
//! A reading of the counter is bracketed by two readings of the reference
//! clock; of several tries the narrowest bracket is kept, and the counter
//! reading is placed at the bracket's middle (uncertain by half its width).
//! The same is done after the window; the frequency is ticks over reference
//! time. Its uncertainty adds both half-widths, one ns of reference
//! resolution at each end and one tick of counter quantisation.
//!
//! The window is walked in steps of at most 100 ms and the tick deltas summed,
//! so a 32-bit counter that wraps within the window is still measured right.
//!
//! Where the kernel's clocksource is the counter itself (clocksource `tsc`),
//! CLOCK_MONOTONIC_RAW is derived from it: the calibration then gives the
//! frequency the kernel uses, i.e. a conversion consistent with the kernel's
//! clocks, not an independent measurement of the crystal.

use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};

pub use super::declared::{DeclaredFrequency, TscInvariance};
use super::{delta, with_counter, Counter, Source};
use crate::sys;

/// The measured frequency of a counter.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    /// Counts per second.
    pub hz: f64,
    /// Half-width of the interval the true frequency lies in, Hz.
    pub uncertainty_hz: f64,
    /// The same, parts per million.
    pub uncertainty_ppm: f64,
    /// Reference clock.
    pub reference: String,
    /// Window asked for, ns.
    pub requested_window_ns: u64,
    /// Reference time between the two bracketed readings, ns.
    pub window_ns: f64,
    /// Counter ticks in that time.
    pub ticks: u64,
    /// Width of the reference brackets around the first and last counter read, ns.
    pub bracket_ns: [u64; 2],
    /// Whether the window was busy-waited (counters that stop while the CPU idles).
    pub busy_wait: bool,
    /// Frequencies declared by CPUID, the hypervisor, the kernel or the architecture.
    #[serde(default)]
    pub declared: Vec<DeclaredFrequency>,
    /// Measured minus declared, ppm, in the order of `declared`.
    #[serde(default)]
    pub declared_diff_ppm: Vec<f64>,
    /// x86: whether the TSC is invariant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invariant: Option<TscInvariance>,
}

/// The reference the counter is measured against.
pub trait Timebase {
    /// Reference time, ns.
    fn ref_ns(&self) -> u64;
    /// Lets `ns` of reference time pass, sleeping or spinning.
    fn wait_ns(&self, ns: u64, busy: bool);
}

/// CLOCK_MONOTONIC_RAW: not slewed by NTP.
#[derive(Debug, Clone, Copy)]
pub struct MonotonicRaw;

impl Timebase for MonotonicRaw {
    #[inline]
    fn ref_ns(&self) -> u64 {
        sys::clock_ns(libc::CLOCK_MONOTONIC_RAW)
    }

    fn wait_ns(&self, ns: u64, busy: bool) {
        if busy {
            let end = self.ref_ns() + ns;
            while self.ref_ns() < end {
                std::hint::spin_loop();
            }
        } else {
            let _ = sys::sleep_for(libc::CLOCK_MONOTONIC, ns);
        }
    }
}

/// Longest step between counter readings during calibration.
pub const CALIBRATION_STEP_NS: u64 = 100_000_000;

/// One counter reading bracketed by the reference: (reference before, counter,
/// reference after), the narrowest of `tries`.
fn bracket<C: Counter, T: Timebase>(c: &C, tb: &T, tries: usize) -> (u64, u64, u64) {
    let mut best = (0, 0, u64::MAX);
    for _ in 0..tries.max(1) {
        let a = tb.ref_ns();
        let t = c.read();
        let b = tb.ref_ns();
        if b.saturating_sub(a) < best.2.saturating_sub(best.0) {
            best = (a, t, b);
        }
    }
    best
}

/// Measures the frequency of counter `c` (`width_bits` wide) against `tb` over
/// `window_ns` (at least 1 ms).
pub fn calibrate<C: Counter, T: Timebase>(
    c: &C,
    tb: &T,
    width_bits: u32,
    window_ns: u64,
    busy: bool,
) -> Calibration {
    calibrate_until(c, tb, width_bits, window_ns, busy, &AtomicBool::new(false))
}

/// [`calibrate`], cut short when `stop` is raised: the window then ends
/// after the step in progress (at most [`CALIBRATION_STEP_NS`]; never before
/// 1 ms), and the result is the frequency over the time it took
/// (`window_ns` below `requested_window_ns`).
pub fn calibrate_until<C: Counter, T: Timebase>(
    c: &C,
    tb: &T,
    width_bits: u32,
    window_ns: u64,
    busy: bool,
    stop: &AtomicBool,
) -> Calibration {
    let window = window_ns.max(1_000_000);
    let (a0, t0, b0) = bracket(c, tb, 16);
    let mut ticks: u64 = 0;
    let mut last = t0;
    let mut waited = 0;
    while waited < window {
        if waited >= 1_000_000 && stop.load(Ordering::Relaxed) {
            break;
        }
        let step = (window - waited).min(CALIBRATION_STEP_NS);
        tb.wait_ns(step, busy);
        waited += step;
        if waited < window {
            let now = c.read();
            ticks = ticks.wrapping_add(delta(last, now, width_bits) as u64);
            last = now;
        }
    }
    let (a1, t1, b1) = bracket(c, tb, 16);
    ticks = ticks.wrapping_add(delta(last, t1, width_bits) as u64);
    let w0 = b0 - a0;
    let w1 = b1 - a1;
    let mid0 = a0 as f64 + w0 as f64 / 2.0;
    let mid1 = a1 as f64 + w1 as f64 / 2.0;
    let elapsed = (mid1 - mid0).max(1.0);
    let hz = ticks as f64 / elapsed * 1e9;
    let rel = (w0 as f64 / 2.0 + w1 as f64 / 2.0 + 2.0) / elapsed + 1.0 / (ticks.max(1) as f64);
    Calibration {
        hz,
        uncertainty_hz: hz * rel,
        uncertainty_ppm: rel * 1e6,
        reference: "monotonic-raw".into(),
        requested_window_ns: window_ns,
        window_ns: elapsed,
        ticks,
        bracket_ns: [w0, w1],
        busy_wait: busy,
        declared: Vec::new(),
        declared_diff_ppm: Vec::new(),
        invariant: None,
    }
}

/// Calibrates an opened counter against CLOCK_MONOTONIC_RAW and adds what the
/// machine declares about it.
pub fn calibrate_source(src: &Source, window_ns: u64) -> Calibration {
    calibrate_source_until(src, window_ns, &AtomicBool::new(false))
}

/// [`calibrate_source`], cut short when `stop` is raised ([`calibrate_until`]).
pub fn calibrate_source_until(src: &Source, window_ns: u64, stop: &AtomicBool) -> Calibration {
    let id = src.id();
    let busy = !id.counts_in_idle();
    let mut cal = with_counter!(src, c => calibrate_until(c, &MonotonicRaw, id.width_bits(), window_ns, busy, stop));
    cal.declared = src.declared_frequencies();
    cal.declared_diff_ppm = cal
        .declared
        .iter()
        .map(|d| (cal.hz - d.hz) / d.hz * 1e6)
        .collect();
    #[cfg(target_arch = "x86_64")]
    if matches!(
        id,
        super::SourceId::Tsc | super::SourceId::Rdtscp | super::SourceId::LfenceTsc
    ) {
        cal.invariant = Some(super::x86::tsc_invariant());
    }
    cal
}

#[cfg(test)]
pub(crate) mod sim {
    //! A simulated machine: a reference clock in ns and a counter derived from
    //! it, each read costing time.
    use std::cell::Cell;

    use super::Timebase;
    use crate::clock::Counter;

    pub struct SimMachine {
        pub now_ns: Cell<f64>,
        pub hz: f64,
        pub offset_ticks: u64,
        pub width_bits: u32,
        pub read_cost_ns: f64,
        pub ref_cost_ns: f64,
    }

    impl SimMachine {
        pub fn new(hz: f64, width_bits: u32) -> Self {
            SimMachine {
                now_ns: Cell::new(1_000_000.0),
                hz,
                offset_ticks: 0,
                width_bits,
                read_cost_ns: 10.0,
                ref_cost_ns: 20.0,
            }
        }
    }

    impl Counter for SimMachine {
        fn read(&self) -> u64 {
            let t = self.now_ns.get();
            self.now_ns.set(t + self.read_cost_ns);
            let ticks = (t * self.hz / 1e9) as u64 + self.offset_ticks;
            if self.width_bits >= 64 {
                ticks
            } else {
                ticks & ((1u64 << self.width_bits) - 1)
            }
        }
    }

    impl Timebase for SimMachine {
        fn ref_ns(&self) -> u64 {
            let t = self.now_ns.get();
            self.now_ns.set(t + self.ref_cost_ns);
            t as u64
        }

        fn wait_ns(&self, ns: u64, _busy: bool) {
            self.now_ns.set(self.now_ns.get() + ns as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sim::SimMachine;
    use super::*;
    use crate::clock::SourceId;

    #[test]
    fn finds_the_simulated_frequency_within_its_uncertainty() {
        for (hz, width, window) in [
            (2_445_424_000.0, 64, 1_000_000_000),
            (19_200_000.0, 56, 200_000_000),
            // 32-bit counter at 1 GHz wraps every 4.3 s: a 10 s window wraps twice.
            (1e9, 32, 10_000_000_000),
        ] {
            let m = SimMachine::new(hz, width);
            let cal = calibrate(&m, &m, width, window, false);
            let err = (cal.hz - hz).abs();
            assert!(
                err <= cal.uncertainty_hz,
                "hz {hz}: got {} ± {}",
                cal.hz,
                cal.uncertainty_hz
            );
            assert!(cal.uncertainty_ppm < 1.0, "{}", cal.uncertainty_ppm);
            assert!((cal.window_ns - window as f64).abs() < 10_000.0);
        }
    }

    /// On the simulated machine every bracket is 30 ns wide (a 20 ns
    /// reference read, then a 10 ns counter read), its middle 15 ns after
    /// its start; the first of 16 tries (50 ns each) is kept. The window is
    /// waited in steps of at most 100 ms with a counter read between steps.
    #[test]
    fn window_brackets_and_steps_exactly() {
        let m = SimMachine::new(1e9, 64);
        let cal = calibrate(&m, &m, 64, 250_000_000, false);
        assert_eq!(cal.bracket_ns, [30, 30]);
        // 16 tries of the first bracket, 250 ms, two reads between the steps.
        assert_eq!(cal.window_ns, 250_000_000.0 + 16.0 * 50.0 + 2.0 * 10.0);
        assert_eq!(
            (cal.requested_window_ns, cal.busy_wait),
            (250_000_000, false)
        );
        // Both counter reads sit 20 ns into their brackets: the ticks are the
        // window, the frequency exact, and the uncertainty the half-widths of
        // the brackets (plus 2 ns) over the window, plus one tick.
        assert_eq!(cal.ticks, 250_000_820);
        assert_eq!(cal.hz, 1e9);
        let rel = (15.0 + 15.0 + 2.0) / cal.window_ns + 1.0 / 250_000_820.0;
        assert!((cal.uncertainty_ppm - rel * 1e6).abs() < 1e-9, "{cal:?}");
        assert!((cal.uncertainty_hz - 1e9 * rel).abs() < 1e-6, "{cal:?}");
        // Less than 1 ms is raised to 1 ms.
        let cal = calibrate(&m, &m, 64, 10, true);
        assert_eq!(cal.window_ns, 1_000_000.0 + 800.0);
        assert!(cal.busy_wait);
    }

    /// A real TSC: calibrated without busy-waiting (it counts in idle), the
    /// declared frequencies compared in ppm, the invariance recorded.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_tsc_calibrates_against_what_it_declares() {
        let Ok(src) = Source::open(SourceId::Tsc) else {
            return;
        };
        let cal = calibrate_source(&src, 5_000_000);
        assert!(!cal.busy_wait);
        assert!(cal.invariant.is_some());
        assert_eq!(cal.declared.len(), cal.declared_diff_ppm.len());
        for (d, ppm) in cal.declared.iter().zip(&cal.declared_diff_ppm) {
            assert_eq!(*ppm, (cal.hz - d.hz) / d.hz * 1e6, "{}", d.origin);
        }
    }

    #[test]
    fn invariance_needs_both_kernel_flags_or_cpuid() {
        let t = |constant_tsc, nonstop_tsc, cpuid_invariant| TscInvariance {
            constant_tsc,
            nonstop_tsc,
            tsc_known_freq: false,
            cpuid_invariant,
        };
        assert!(t(true, true, None).invariant());
        assert!(!t(true, false, None).invariant());
        assert!(!t(false, true, None).invariant());
        assert!(t(false, false, Some(true)).invariant());
        assert!(!t(false, false, Some(false)).invariant());
        assert!(!t(true, false, Some(false)).invariant());
    }

    #[test]
    fn monotonic_raw_waits_the_time_asked() {
        // Sleeping or spinning, `ns` of reference time passes (the sleep is on
        // CLOCK_MONOTONIC, which NTP may run up to 500 ppm fast: 0.1 % slack).
        for busy in [false, true] {
            let a = MonotonicRaw.ref_ns();
            MonotonicRaw.wait_ns(3_000_000, busy);
            let b = MonotonicRaw.ref_ns();
            assert!(b - a >= 2_997_000, "busy {busy}: {} ns", b - a);
        }
    }

    #[test]
    fn starts_near_the_wrap_point() {
        let mut m = SimMachine::new(1e9, 32);
        m.offset_ticks = (1u64 << 32) - 500_000;
        let cal = calibrate(&m, &m, 32, 50_000_000, false);
        assert!((cal.hz - 1e9).abs() <= cal.uncertainty_hz);
    }

    #[test]
    fn real_tsc_or_monotonic_calibrates() {
        let id = if cfg!(target_arch = "x86_64") {
            SourceId::Tsc
        } else {
            SourceId::Monotonic
        };
        let src = Source::open(id).unwrap();
        let cal = calibrate_source(&src, 20_000_000);
        assert!(cal.hz > 1e6 && cal.hz.is_finite());
        assert!(cal.uncertainty_hz > 0.0);
    }
}
