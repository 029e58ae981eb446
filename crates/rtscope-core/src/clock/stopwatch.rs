//! A stopwatch that subtracts its own read cost.
//!
//! Two readings around a piece of code measure `t2 - t1 = tP + tR`: the code's
//! time plus the cost of one reading. [`Stopwatch`] measures `tR` once, when it
//! is created (the median of 10,000 back-to-back read differences), and
//! subtracts it from every elapsed time it returns.
//!
//! ```
//! use rtscope_core::clock::Stopwatch;
//!
//! let sw = Stopwatch::new().expect("a time source");
//! let t = sw.start();
//! let v: u64 = (0..1000u64).map(|i| i * i).sum();
//! let ns = sw.elapsed_ns(t);
//! println!("sum {v} took {ns} ns on {} (read cost {:.1} ns subtracted)",
//!          sw.source_name(), sw.read_cost_ns());
//! ```

use super::measure::{consecutive, deltas_into, touched_buffer};
use super::{
    delta, open_calibrated, preferred_sources, Calibration, ClockError, Counter, Scale, Source,
    SourceId,
};

/// Calibration window used by [`Stopwatch::new`] and [`super::PeriodProbe::new`].
pub const QUICK_CALIBRATION_NS: u64 = 100_000_000;

/// Reads used to measure the read cost.
const COST_READS: usize = 10_001;

/// A reading taken by [`Stopwatch::start`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark(pub u64);

/// Elapsed time with the read cost subtracted. Generic over the counter so that
/// `Stopwatch<Rdtsc>` reads with one inlined instruction; the default holds an
/// opened [`Source`].
#[derive(Debug)]
pub struct Stopwatch<C: Counter = Source> {
    counter: C,
    scale: Scale,
    width_bits: u32,
    name: String,
    read_cost_ticks: u64,
    calibration: Option<Calibration>,
}

impl Stopwatch<Source> {
    /// The best source this machine has (an ordered read of an invariant TSC
    /// on x86-64, `cntvct` on aarch64, else CLOCK_MONOTONIC_RAW), calibrated
    /// over 100 ms.
    pub fn new() -> Result<Self, ClockError> {
        for id in preferred_sources() {
            if let Ok(sw) = Stopwatch::with_source(id, QUICK_CALIBRATION_NS) {
                return Ok(sw);
            }
        }
        Err(ClockError::NoSource)
    }

    /// A stopwatch on a chosen source, counters calibrated over `calibration_ns`.
    pub fn with_source(id: SourceId, calibration_ns: u64) -> Result<Self, ClockError> {
        let (src, scale, cal) = open_calibrated(id, calibration_ns)?;
        let mut sw = Stopwatch::from_counter(src, scale, id.width_bits(), id.name());
        sw.calibration = cal;
        Ok(sw)
    }

    /// Which source it reads.
    pub fn source(&self) -> SourceId {
        self.counter.id()
    }
}

impl<C: Counter> Stopwatch<C> {
    /// A stopwatch on any counter with a known scale; measures the read cost now.
    pub fn from_counter(counter: C, scale: Scale, width_bits: u32, name: &str) -> Self {
        let mut ts = touched_buffer(COST_READS);
        consecutive(&counter, &mut ts);
        let mut d = Vec::with_capacity(COST_READS);
        deltas_into(&ts, width_bits, &mut d);
        d.sort_unstable();
        let median = d.get(d.len() / 2).copied().unwrap_or(0).max(0) as u64;
        Stopwatch {
            counter,
            scale,
            width_bits,
            name: name.to_string(),
            read_cost_ticks: median,
            calibration: None,
        }
    }

    /// Takes the start reading.
    #[inline(always)]
    pub fn start(&self) -> Mark {
        Mark(self.counter.read())
    }

    /// Counts since `since`, minus the read cost (never below 0).
    #[inline(always)]
    pub fn elapsed_ticks(&self, since: Mark) -> u64 {
        let now = self.counter.read();
        (delta(since.0, now, self.width_bits).max(0) as u64).saturating_sub(self.read_cost_ticks)
    }

    /// Nanoseconds since `since`, minus the read cost.
    #[inline(always)]
    pub fn elapsed_ns(&self, since: Mark) -> u64 {
        self.scale.to_ns(self.elapsed_ticks(since))
    }

    /// Nanoseconds since `since`, minus the read cost, with sub-ns precision.
    #[inline(always)]
    pub fn elapsed_ns_f64(&self, since: Mark) -> f64 {
        self.scale.to_ns_f64(self.elapsed_ticks(since) as f64)
    }

    /// Runs `f` and returns its result with its duration in ns.
    #[inline]
    pub fn time<R>(&self, f: impl FnOnce() -> R) -> (R, u64) {
        let t = self.start();
        let r = f();
        let ns = self.elapsed_ns(t);
        (r, ns)
    }

    /// The read cost that is subtracted, ns.
    pub fn read_cost_ns(&self) -> f64 {
        self.scale.to_ns_f64(self.read_cost_ticks as f64)
    }

    /// The read cost that is subtracted, in counts.
    pub fn read_cost_ticks(&self) -> u64 {
        self.read_cost_ticks
    }

    /// The conversion to ns.
    pub fn scale(&self) -> Scale {
        self.scale
    }

    /// The source's name (`lfence-tsc`, `monotonic-raw`, ...).
    pub fn source_name(&self) -> &str {
        &self.name
    }

    /// The counter calibration, for counters opened with [`Stopwatch::with_source`].
    pub fn calibration(&self) -> Option<&Calibration> {
        self.calibration.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::calibrate::sim::SimMachine;

    #[test]
    fn subtracts_the_read_cost() {
        // 2 GHz simulated counter, 10 ns per read = 20 ticks.
        let m = SimMachine::new(2e9, 64);
        let sw = Stopwatch::from_counter(&m, Scale::from_hz(2e9), 64, "sim");
        assert_eq!(sw.source_name(), "sim");
        assert!(sw.calibration().is_none());
        assert_eq!(sw.read_cost_ticks(), 20);
        assert!((sw.read_cost_ns() - 10.0).abs() < 1e-9);
        let t = sw.start();
        m.now_ns.set(m.now_ns.get() + 500.0); // the "work"
        assert_eq!(sw.elapsed_ticks(t), 1000);
        let t = sw.start();
        m.now_ns.set(m.now_ns.get() + 500.0);
        assert_eq!(sw.elapsed_ns(t), 500);
        let t = sw.start();
        m.now_ns.set(m.now_ns.get() + 500.0);
        assert!((sw.elapsed_ns_f64(t) - 500.0).abs() < 1e-9);
        // Nothing in between: 0, not a negative wrap.
        let t = sw.start();
        assert_eq!(sw.elapsed_ticks(t), 0);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_counter_stopwatch_keeps_its_calibration() {
        let Ok(sw) = Stopwatch::with_source(SourceId::Tsc, 2_000_000) else {
            return;
        };
        assert_eq!(sw.source_name(), "tsc");
        let cal = sw.calibration().unwrap();
        assert_eq!(cal.hz, sw.scale().hz);
        let sw = Stopwatch::with_source(SourceId::Monotonic, 2_000_000).unwrap();
        assert_eq!(sw.source_name(), "monotonic");
        assert!(sw.calibration().is_none());
    }

    #[test]
    fn real_stopwatch_works() {
        let sw = Stopwatch::new().unwrap();
        let (_, ns) = sw.time(|| std::thread::sleep(std::time::Duration::from_millis(2)));
        assert!(ns >= 1_000_000, "{ns}");
        // The read cost (what a back-to-back pair of reads costs) is
        // subtracted: an elapsed count is never more than the raw span to a
        // later read less that cost. Without the subtraction it would be
        // whenever the later read took less than the calibrated cost. (No
        // median is compared with the cost: under qemu on a loaded machine
        // such timings missed any bound, 151 and 220 ticks against 271-280.)
        let cost = sw.read_cost_ticks();
        for _ in 0..1001 {
            let t = sw.start();
            let e = sw.elapsed_ticks(t);
            let later = sw.start();
            let span = delta(t.0, later.0, sw.width_bits).max(0) as u64;
            assert!(
                e <= span.saturating_sub(cost),
                "elapsed {e} ticks, span {span}, read cost {cost}"
            );
        }
        assert!((sw.read_cost_ns() - sw.scale().to_ns_f64(cost as f64)).abs() < 1e-9);
    }
}
