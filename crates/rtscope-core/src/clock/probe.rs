//! Period and jitter of a periodic loop, observed with one time source.
//!
//! [`PeriodStats`] turns successive timestamps into the distribution of the
//! observed period (histogram, statistics, timeline, longest periods) plus the
//! jitter against the requested period; `rtscope period` and [`PeriodProbe`]
//! both use it, so an application's own measurement and the CLI's land in the
//! same result-document shape.
//!
//! ```no_run
//! use rtscope_core::clock::PeriodProbe;
//!
//! let period_ns = 1_000_000;
//! let mut probe = PeriodProbe::new(period_ns).expect("a time source");
//! for _ in 0..1000 {
//!     probe.tick(); // once per cycle, first thing after the wake-up
//!     // ... the control loop's work, then sleep until the next cycle ...
//! #   std::thread::sleep(std::time::Duration::from_nanos(period_ns));
//! }
//! let s = probe.summary();
//! println!("mean period {:.1} ns, error {:+.1} ns, jitter {:+.0}..{:+.0} ns",
//!          s.mean_period_ns, s.error_ns, s.jitter_min_ns, s.jitter_max_ns);
//! probe.write_json(std::path::Path::new("loop.json")).unwrap();
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::stopwatch::QUICK_CALIBRATION_NS;
use super::{
    delta, open_calibrated, preferred_sources, ClockError, Counter, Scale, Source, SourceId,
};
use crate::record::{LatencyHistogram, SeriesRecorder};
use crate::result::{now_rfc3339, ResultDocument, Series};
use crate::sample::Sample;
use crate::system::SystemSnapshot;

/// What the observed periods say.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PeriodSummary {
    /// Periods observed (cycles - 1).
    pub periods: u64,
    /// The period asked for, ns.
    pub requested_ns: u64,
    /// Mean observed period, ns (exact, from the source's counts).
    pub mean_period_ns: f64,
    /// Mean observed period minus the requested one, ns.
    pub error_ns: f64,
    /// Smallest and largest (observed - requested), ns.
    pub jitter_min_ns: f64,
    /// Largest (observed - requested), ns.
    pub jitter_max_ns: f64,
    /// Standard deviation of the observed period, ns.
    pub jitter_stddev_ns: f64,
    /// Percentiles of |observed - requested|, ns (from a histogram, 0.1 %).
    pub abs_jitter_p50_ns: u64,
    /// 99th percentile of |observed - requested|, ns.
    pub abs_jitter_p99_ns: u64,
    /// Largest |observed - requested|, ns (exact).
    pub abs_jitter_max_ns: f64,
}

/// Accumulates observed periods. Allocates at creation only.
#[derive(Debug, Clone)]
pub struct PeriodStats {
    requested_ns: u64,
    scale: Scale,
    rec: SeriesRecorder,
    abs_jitter: LatencyHistogram,
    n: u64,
    ticks_sum: i128,
    min_ticks: i64,
    max_ticks: i64,
    mean: f64,
    m2: f64,
}

impl PeriodStats {
    /// For a loop with period `requested_ns` observed with a source of `scale`;
    /// keeps the `spikes` longest periods.
    pub fn new(requested_ns: u64, scale: Scale, spikes: usize) -> Self {
        PeriodStats {
            requested_ns,
            scale,
            rec: SeriesRecorder::new(0, spikes, None),
            abs_jitter: LatencyHistogram::new(),
            n: 0,
            ticks_sum: 0,
            min_ticks: i64::MAX,
            max_ticks: i64::MIN,
            mean: 0.0,
            m2: 0.0,
        }
    }

    /// Adds one observed period of `ticks`, ending `t_ns` after the first cycle.
    #[inline]
    pub fn push(&mut self, seq: u64, t_ns: u64, ticks: i64) {
        let ns = self.scale.signed_to_ns(ticks);
        self.rec.record(&Sample {
            seq,
            t_ns,
            latency_ns: ns,
            overruns: 0,
            cpu: 0,
        });
        let exact = self.scale.to_ns_f64(ticks as f64);
        self.abs_jitter
            .record((exact - self.requested_ns as f64).abs().round() as u64);
        self.n += 1;
        self.ticks_sum += i128::from(ticks);
        self.min_ticks = self.min_ticks.min(ticks);
        self.max_ticks = self.max_ticks.max(ticks);
        let d = exact - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (exact - self.mean);
    }

    /// Periods recorded.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The summary so far.
    pub fn summary(&self) -> PeriodSummary {
        if self.n == 0 {
            return PeriodSummary {
                requested_ns: self.requested_ns,
                ..Default::default()
            };
        }
        let req = self.requested_ns as f64;
        let mean = self.scale.to_ns_f64(self.ticks_sum as f64 / self.n as f64);
        PeriodSummary {
            periods: self.n,
            requested_ns: self.requested_ns,
            mean_period_ns: mean,
            error_ns: mean - req,
            jitter_min_ns: self.scale.to_ns_f64(self.min_ticks as f64) - req,
            jitter_max_ns: self.scale.to_ns_f64(self.max_ticks as f64) - req,
            jitter_stddev_ns: (self.m2 / self.n as f64).sqrt(),
            abs_jitter_p50_ns: self.abs_jitter.quantile(0.5),
            abs_jitter_p99_ns: self.abs_jitter.quantile(0.99),
            abs_jitter_max_ns: (self.scale.to_ns_f64(self.min_ticks as f64) - req)
                .abs()
                .max((self.scale.to_ns_f64(self.max_ticks as f64) - req).abs()),
        }
    }

    /// The series: the observed-period distribution, with `period_ns` (the
    /// requested period), `frequency_hz` and `period` (the [`PeriodSummary`])
    /// as attributes.
    pub fn to_series(&self, label: &str) -> Series {
        let mut s = self.rec.to_series(label, 0);
        if self.n > 0 {
            let sum = self.summary();
            s.stats.mean_ns = sum.mean_period_ns;
            s.stats.stddev_ns = sum.jitter_stddev_ns;
        }
        s.attributes
            .insert("period_ns".into(), json!(self.requested_ns));
        s.attributes
            .insert("frequency_hz".into(), json!(self.scale.hz));
        s.attributes.insert(
            "period".into(),
            serde_json::to_value(self.summary()).unwrap_or_default(),
        );
        s
    }
}

/// Called once per cycle by a control loop: collects its period and jitter.
/// Generic over the counter; the default holds an opened [`Source`].
#[derive(Debug)]
pub struct PeriodProbe<C: Counter = Source> {
    counter: C,
    width_bits: u32,
    name: String,
    stats: PeriodStats,
    first: Option<u64>,
    last: Option<u64>,
    seq: u64,
    started_at: String,
    start_clock_ns: u64,
}

impl PeriodProbe<Source> {
    /// A probe for a loop of `period_ns` on the best source of this machine
    /// (as [`super::Stopwatch::new`] chooses it), calibrated over 100 ms.
    pub fn new(period_ns: u64) -> Result<Self, ClockError> {
        for id in preferred_sources() {
            if let Ok(p) = PeriodProbe::with_source(id, period_ns, QUICK_CALIBRATION_NS) {
                return Ok(p);
            }
        }
        Err(ClockError::NoSource)
    }

    /// A probe on a chosen source, counters calibrated over `calibration_ns`.
    pub fn with_source(
        id: SourceId,
        period_ns: u64,
        calibration_ns: u64,
    ) -> Result<Self, ClockError> {
        let (src, scale, _) = open_calibrated(id, calibration_ns)?;
        Ok(PeriodProbe::from_counter(
            src,
            scale,
            id.width_bits(),
            id.name(),
            period_ns,
        ))
    }
}

impl<C: Counter> PeriodProbe<C> {
    /// A probe on any counter with a known scale.
    pub fn from_counter(
        counter: C,
        scale: Scale,
        width_bits: u32,
        name: &str,
        period_ns: u64,
    ) -> Self {
        PeriodProbe {
            counter,
            width_bits,
            name: name.to_string(),
            stats: PeriodStats::new(period_ns, scale, 16),
            first: None,
            last: None,
            seq: 0,
            started_at: now_rfc3339(),
            start_clock_ns: crate::sys::clock_ns(libc::CLOCK_MONOTONIC),
        }
    }

    /// Marks one cycle: reads the source and records the period since the
    /// previous call. No allocation, no lock, no system call beyond the read.
    #[inline]
    pub fn tick(&mut self) {
        let now = self.counter.read();
        if let Some(prev) = self.last {
            let first = self.first.unwrap_or(now);
            let since = delta(first, now, self.width_bits).max(0) as u64;
            let t_ns = self.stats.scale.to_ns(since);
            self.stats
                .push(self.seq, t_ns, delta(prev, now, self.width_bits));
            self.seq += 1;
        } else if self.first.is_none() {
            self.first = Some(now);
        }
        self.last = Some(now);
    }

    /// Forgets the last timestamp: the next [`tick`](Self::tick) starts a new
    /// period (after a deliberate pause that should not count as one).
    pub fn skip(&mut self) {
        self.last = None;
    }

    /// Periods recorded.
    pub fn count(&self) -> u64 {
        self.stats.count()
    }

    /// Mean period, error and jitter so far.
    pub fn summary(&self) -> PeriodSummary {
        self.stats.summary()
    }

    /// The series, labelled `<source> <period>`.
    pub fn series(&self) -> Series {
        let label = format!(
            "{} {}",
            self.name,
            crate::units::format_ns(self.stats.requested_ns)
        );
        let mut s = self.stats.to_series(&label);
        s.attributes.insert("source".into(), json!(self.name));
        s
    }

    /// A result document (experiment `period`) that `rtscope` can report on
    /// and compare.
    pub fn document(&self) -> ResultDocument {
        let now = crate::sys::clock_ns(libc::CLOCK_MONOTONIC);
        let plan = json!({
            "origin": "PeriodProbe",
            "sources": [self.name],
            "periods_ns": [self.stats.requested_ns],
        });
        let mut doc = ResultDocument::new(
            "period",
            plan,
            SystemSnapshot::capture(),
            vec![self.series()],
        );
        doc.started_at = self.started_at.clone();
        doc.start_clock_ns = self.start_clock_ns;
        doc.duration_ns = now.saturating_sub(self.start_clock_ns);
        doc
    }

    /// Writes [`document`](Self::document) atomically as JSON.
    pub fn write_json(&self, path: &Path) -> std::io::Result<()> {
        self.document().write(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::calibrate::sim::SimMachine;

    #[test]
    fn period_and_jitter_of_a_simulated_loop() {
        // 1 GHz counter; the loop runs 100 us periods, alternately 2 us early and late.
        let m = SimMachine::new(1e9, 64);
        let mut p = PeriodProbe::from_counter(&m, Scale::from_hz(1e9), 64, "sim", 100_000);
        let start = m.now_ns.get();
        for i in 0..11u64 {
            let jitter = if i % 2 == 0 { 0.0 } else { 2000.0 };
            m.now_ns.set(start + (i * 100_000) as f64 + jitter);
            p.tick();
        }
        let s = p.summary();
        assert_eq!(s.periods, 10);
        // Periods: 102, 98, 102, ... us (five of each).
        assert!((s.mean_period_ns - 100_000.0).abs() < 1e-6, "{s:?}");
        assert!(s.error_ns.abs() < 1e-6);
        assert!((s.jitter_min_ns + 2000.0).abs() < 1e-6);
        assert!((s.jitter_max_ns - 2000.0).abs() < 1e-6);
        assert!((s.jitter_stddev_ns - 2000.0).abs() < 1e-6);
        assert_eq!(s.abs_jitter_p99_ns, 2000);
        let ser = p.series();
        assert_eq!(ser.label, "sim 100us");
        assert_eq!(ser.stats.count, 10);
        assert_eq!(ser.stats.min_ns, 98_000);
        assert_eq!(ser.stats.max_ns, 102_000);
        // Each period has its own sequence number.
        let seqs: Vec<u64> = ser.spikes.iter().map(|s| s.seq).collect();
        assert!(seqs.iter().any(|&q| q > 0), "{seqs:?}");
    }

    #[test]
    fn summary_of_uneven_periods_and_of_none() {
        // 2.5 GHz: 250_001 ticks are 100_000.4 ns.
        let scale = Scale::from_hz(2.5e9);
        let mut p = PeriodStats::new(100_000, scale, 4);
        let none = p.summary();
        assert_eq!((none.periods, none.requested_ns), (0, 100_000));
        let empty = p.to_series("e");
        assert_eq!((empty.stats.count, empty.stats.mean_ns), (0, 0.0));
        for (i, t) in [242_500i64, 252_500, 255_000, 250_001].iter().enumerate() {
            p.push(i as u64, 100 * (i as u64 + 1), *t);
        }
        let s = p.summary();
        // Periods 97, 101, 102 and 100.0004 µs.
        assert_eq!(s.requested_ns, 100_000);
        assert!((s.jitter_min_ns + 3_000.0).abs() < 1e-6, "{s:?}");
        assert!((s.jitter_max_ns - 2_000.0).abs() < 1e-6, "{s:?}");
        assert!((s.abs_jitter_max_ns - 3_000.0).abs() < 1e-6, "{s:?}");
        let mean = (97_000.0 + 101_000.0 + 102_000.0 + 100_000.4) / 4.0;
        assert!((s.mean_period_ns - mean).abs() < 1e-6, "{s:?}");
        // The longest period the farthest off: 99 and 104 µs.
        let mut q = PeriodStats::new(100_000, Scale::ns(), 0);
        q.push(0, 1, 99_000);
        q.push(1, 2, 104_000);
        assert_eq!(q.summary().abs_jitter_max_ns, 4_000.0);
        // The series carries the exact mean and deviation, not the rounded ones.
        let ser = p.to_series("x");
        assert_eq!(ser.stats.mean_ns, s.mean_period_ns);
        assert_eq!(ser.stats.stddev_ns, s.jitter_stddev_ns);
    }

    #[test]
    fn skip_starts_a_new_period() {
        let m = SimMachine::new(1e9, 64);
        let mut p = PeriodProbe::from_counter(&m, Scale::from_hz(1e9), 64, "sim", 1000);
        p.tick();
        m.now_ns.set(m.now_ns.get() + 1000.0);
        p.tick();
        p.skip();
        m.now_ns.set(m.now_ns.get() + 1_000_000.0);
        p.tick();
        m.now_ns.set(m.now_ns.get() + 1000.0);
        p.tick();
        assert_eq!(p.count(), 2);
        assert!(p.summary().jitter_max_ns < 100.0);
    }

    #[test]
    fn document_round_trips() {
        let mut p = PeriodProbe::with_source(SourceId::Monotonic, 200_000, 0).unwrap();
        for _ in 0..20 {
            p.tick();
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        p.write_json(&path).unwrap();
        let doc = ResultDocument::read(&path).unwrap();
        assert_eq!(doc.experiment, "period");
        assert_eq!(doc.series.len(), 1);
        assert_eq!(doc.series[0].stats.count, 19);
        assert_eq!(doc.series[0].attributes["source"], "monotonic");
        assert!(
            doc.series[0].attributes["period"]["mean_period_ns"]
                .as_f64()
                .unwrap()
                > 0.0
        );
    }
}
