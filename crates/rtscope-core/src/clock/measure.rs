//! The read-cost measurements: back-to-back reads (warm), pairs of reads after
//! a sleep (cold), and the summary of the resulting deltas.
//!
//! The loops are generic over [`Counter`] and marked `#[inline(never)]`, so
//! each counter type gets its own tight loop with the read inlined. They write
//! into buffers the caller allocated (and touched) beforehand: nothing is
//! allocated while reading.

use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};

use super::{delta, with_counter, Counter, Scale, Source};
use crate::record::{LatencyHistogram, RunningStats};
use crate::result::{Series, SeriesCounters, Spike};
use crate::sys;

/// Fills `ts` with back-to-back readings of `c`.
#[inline(never)]
pub fn consecutive<C: Counter>(c: &C, ts: &mut [u64]) {
    for slot in ts.iter_mut() {
        *slot = c.read();
    }
}

/// Two readings of `c`, back to back.
#[inline(never)]
pub fn read_pair<C: Counter>(c: &C) -> (u64, u64) {
    let a = c.read();
    let b = c.read();
    (a, b)
}

/// [`consecutive`] on an opened source (dispatched once, outside the loop).
pub fn source_consecutive(src: &Source, ts: &mut [u64]) {
    with_counter!(src, c => consecutive(c, ts))
}

/// [`read_pair`] on an opened source.
#[inline]
pub fn source_pair(src: &Source) -> (u64, u64) {
    with_counter!(src, c => read_pair(c))
}

/// Writes the differences of consecutive readings `ts` (a counter `width_bits`
/// wide) into `out` (cleared first; give it capacity `ts.len()` to avoid
/// allocating).
pub fn deltas_into(ts: &[u64], width_bits: u32, out: &mut Vec<i64>) {
    out.clear();
    out.extend(ts.windows(2).map(|w| delta(w[0], w[1], width_bits)));
}

/// A buffer of `n` readings, every page written once so that the measurement
/// does not take page faults.
pub fn touched_buffer(n: usize) -> Vec<u64> {
    let mut v = vec![0u64; n];
    for x in v.iter_mut() {
        *x = u64::MAX;
    }
    std::hint::black_box(&mut v);
    v
}

/// Exact summary of a set of deltas, in the source's counts and in ns (with
/// sub-ns precision for fast counters).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DeltaSummary {
    /// Number of deltas.
    pub count: u64,
    /// Smallest delta, ns.
    pub min_ns: f64,
    /// Median delta, ns.
    pub p50_ns: f64,
    /// Mean delta, ns.
    pub mean_ns: f64,
    /// 99th percentile, ns.
    pub p99_ns: f64,
    /// Largest delta, ns.
    pub max_ns: f64,
    /// Standard deviation, ns.
    pub stddev_ns: f64,
    /// Smallest delta, in the source's counts.
    pub min_ticks: i64,
    /// Median delta, in counts.
    pub p50_ticks: i64,
    /// Mean delta, in counts.
    pub mean_ticks: f64,
    /// 99th percentile, in counts.
    pub p99_ticks: i64,
    /// Largest delta, in counts.
    pub max_ticks: i64,
    /// Deltas of 0: the source had not advanced between the two readings
    /// (a coarse clock, or a read cheaper than one count).
    pub zero_deltas: u64,
    /// Deltas below 0: the source stepped backwards.
    pub negative_deltas: u64,
    /// Smallest non-zero delta, ns: the finest step the source showed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smallest_step_ns: Option<f64>,
}

/// The value at quantile `q` of sorted data, as hdrhistogram defines it (the
/// smallest value with at least ceil(q n) values at or below it).
fn quantile_sorted(sorted: &[i64], q: f64) -> i64 {
    let n = sorted.len();
    if n == 0 {
        return 0;
    }
    let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
    sorted[rank - 1]
}

/// Summarises `deltas` (sorted in place).
pub fn summarize(deltas: &mut [i64], scale: &Scale) -> DeltaSummary {
    if deltas.is_empty() {
        return DeltaSummary::default();
    }
    deltas.sort_unstable();
    let n = deltas.len() as f64;
    let sum: i128 = deltas.iter().map(|&d| i128::from(d)).sum();
    let mean = sum as f64 / n;
    let var = deltas
        .iter()
        .map(|&d| (d as f64 - mean).powi(2))
        .sum::<f64>()
        / n;
    let ns = |t: f64| scale.to_ns_f64(t);
    let q = |p: f64| quantile_sorted(deltas, p);
    DeltaSummary {
        count: deltas.len() as u64,
        min_ns: ns(deltas[0] as f64),
        p50_ns: ns(q(0.5) as f64),
        mean_ns: ns(mean),
        p99_ns: ns(q(0.99) as f64),
        max_ns: ns(deltas[deltas.len() - 1] as f64),
        stddev_ns: ns(var.sqrt()),
        min_ticks: deltas[0],
        p50_ticks: q(0.5),
        mean_ticks: mean,
        p99_ticks: q(0.99),
        max_ticks: deltas[deltas.len() - 1],
        zero_deltas: deltas.iter().filter(|&&d| d == 0).count() as u64,
        negative_deltas: deltas.iter().filter(|&&d| d < 0).count() as u64,
        smallest_step_ns: deltas.iter().find(|&&d| d > 0).map(|&d| ns(d as f64)),
    }
}

/// The `n` largest deltas as (index, delta), largest first (before sorting).
pub fn worst(deltas: &[i64], n: usize) -> Vec<(usize, i64)> {
    let mut v: Vec<(usize, i64)> = deltas.iter().copied().enumerate().collect();
    v.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

/// A result-document series from deltas: the histogram and percentiles in
/// whole ns, mean and standard deviation exact (from the counts), the exact
/// summary under the `summary` attribute. `spikes` are (index, delta, time ns).
pub fn series_from_deltas(
    label: &str,
    deltas: &[i64],
    scale: &Scale,
    summary: &DeltaSummary,
    spikes: &[(usize, i64, u64)],
) -> Series {
    let mut hist = LatencyHistogram::new();
    let mut stats = RunningStats::default();
    let mut negative = 0;
    for &d in deltas {
        let ns = scale.signed_to_ns(d);
        if ns < 0 {
            negative += 1;
        }
        hist.record(ns.max(0) as u64);
        stats.push(ns);
    }
    let mut st = stats.summary(&hist);
    if st.count > 0 {
        st.mean_ns = summary.mean_ns;
        st.stddev_ns = summary.stddev_ns;
    }
    let mut attributes = std::collections::BTreeMap::new();
    attributes.insert(
        "summary".to_string(),
        serde_json::to_value(summary).unwrap_or_default(),
    );
    Series {
        label: label.to_string(),
        attributes,
        stats: st,
        counters: SeriesCounters {
            negative,
            ..Default::default()
        },
        histogram: hist.export(),
        spikes: spikes
            .iter()
            .map(|&(i, d, t)| Spike {
                latency_ns: scale.signed_to_ns(d),
                t_ns: t,
                seq: i as u64,
                cpu: 0,
            })
            .collect(),
        ..Default::default()
    }
}

/// How the sparse modes wait.
pub trait Sleeper {
    /// Current time, ns.
    fn now_ns(&mut self) -> u64;
    /// Sleeps until `deadline_ns`; false when interrupted (stop requested).
    fn sleep_until(&mut self, deadline_ns: u64) -> bool;
}

/// Sleeps on CLOCK_MONOTONIC with absolute deadlines; a signal interrupts the
/// sleep, and if `stop` is then set the sleep ends early.
pub struct SystemSleeper<'a> {
    /// Set to end a sleep early (checked when a signal interrupts it).
    pub stop: &'a AtomicBool,
}

impl Sleeper for SystemSleeper<'_> {
    fn now_ns(&mut self) -> u64 {
        sys::clock_ns(libc::CLOCK_MONOTONIC)
    }

    fn sleep_until(&mut self, deadline_ns: u64) -> bool {
        loop {
            match sys::sleep_until_interruptible(libc::CLOCK_MONOTONIC, deadline_ns) {
                Ok(true) => return !self.stop.load(Ordering::Relaxed),
                Ok(false) if !self.stop.load(Ordering::Relaxed) => continue,
                _ => return false,
            }
        }
    }
}

/// What a sparse run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SparseOutcome {
    /// Wake-ups at which readings were taken.
    pub pairs: usize,
    /// Wake-ups that came after the following deadline (the schedule re-anchored).
    pub late: u64,
    /// Stopped before all pairs were taken.
    pub interrupted: bool,
}

/// Wakes `pairs` times, the gap before wake-up `i` being `gaps[i % gaps.len()]`
/// (one gap: every interval; several: alternating), on an absolute schedule,
/// and calls `at_wake(i, deadline)` right after each wake-up.
pub fn run_sparse<S: Sleeper>(
    sleeper: &mut S,
    gaps: &[u64],
    pairs: usize,
    stop: &AtomicBool,
    mut at_wake: impl FnMut(usize, u64),
) -> SparseOutcome {
    let mut out = SparseOutcome::default();
    if gaps.is_empty() || pairs == 0 {
        return out;
    }
    let mut next = sleeper.now_ns() + gaps[0];
    for i in 0..pairs {
        if stop.load(Ordering::Relaxed) || !sleeper.sleep_until(next) {
            out.interrupted = true;
            break;
        }
        at_wake(i, next);
        out.pairs += 1;
        let gap = gaps[(i + 1) % gaps.len()];
        let now = sleeper.now_ns();
        next += gap;
        if next <= now {
            out.late += 1;
            next = now + gap;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::calibrate::sim::SimMachine;

    struct SimSleeper {
        now: u64,
        wakes: Vec<u64>,
        /// Wake-up `i` comes this late.
        late_at: Option<(usize, u64)>,
        stop_after: Option<usize>,
    }

    impl Sleeper for SimSleeper {
        fn now_ns(&mut self) -> u64 {
            self.now
        }
        fn sleep_until(&mut self, d: u64) -> bool {
            if self.stop_after == Some(self.wakes.len()) {
                return false;
            }
            let extra = match self.late_at {
                Some((i, by)) if i == self.wakes.len() => by,
                _ => 0,
            };
            self.now = self.now.max(d) + extra;
            self.wakes.push(self.now);
            true
        }
    }

    fn sim() -> SimSleeper {
        SimSleeper {
            now: 0,
            wakes: vec![],
            late_at: None,
            stop_after: None,
        }
    }

    const S: u64 = 1_000_000_000;

    #[test]
    fn sparse_every_interval() {
        let mut s = sim();
        let stop = AtomicBool::new(false);
        let mut seen = vec![];
        let o = run_sparse(&mut s, &[S], 4, &stop, |i, d| seen.push((i, d)));
        assert_eq!(o.pairs, 4);
        assert!(!o.interrupted);
        assert_eq!(s.wakes, vec![S, 2 * S, 3 * S, 4 * S]);
        assert_eq!(seen, vec![(0, S), (1, 2 * S), (2, 3 * S), (3, 4 * S)]);
        // No gaps, or no pairs: nothing to do.
        let o = run_sparse(&mut sim(), &[], 3, &stop, |_, _| {});
        assert_eq!(o, SparseOutcome::default());
        let o = run_sparse(&mut sim(), &[S], 0, &stop, |_, _| {});
        assert_eq!(o, SparseOutcome::default());
    }

    #[test]
    fn alternating_gaps() {
        let mut s = sim();
        let stop = AtomicBool::new(false);
        let o = run_sparse(&mut s, &[S, 5 * S], 5, &stop, |_, _| {});
        assert_eq!(o.pairs, 5);
        // Gaps before each wake-up: 1, 5, 1, 5, 1 s.
        assert_eq!(s.wakes, vec![S, 6 * S, 7 * S, 12 * S, 13 * S]);
    }

    #[test]
    fn late_wakeup_reanchors() {
        let mut s = sim();
        s.late_at = Some((1, 3 * S / 2)); // second wake-up 1.5 s late
        let stop = AtomicBool::new(false);
        let o = run_sparse(&mut s, &[S], 3, &stop, |_, _| {});
        assert_eq!(o.late, 1);
        assert_eq!(s.wakes, vec![S, 7 * S / 2, 9 * S / 2]);
    }

    #[test]
    fn interrupted_keeps_what_it_has() {
        let mut s = sim();
        s.stop_after = Some(2);
        let stop = AtomicBool::new(false);
        let mut n = 0;
        let o = run_sparse(&mut s, &[S, 5 * S], 10, &stop, |_, _| n += 1);
        assert_eq!((o.pairs, n, o.interrupted), (2, 2, true));
        let stop = AtomicBool::new(true);
        let o = run_sparse(&mut sim(), &[S], 10, &stop, |_, _| {});
        assert_eq!((o.pairs, o.interrupted), (0, true));
    }

    #[test]
    fn consecutive_reads_of_a_simulated_counter() {
        // 1 GHz counter, 10 ns per read: every delta is 10 ticks.
        let m = SimMachine::new(1e9, 64);
        let mut ts = touched_buffer(1000);
        consecutive(&m, &mut ts);
        let mut d = Vec::with_capacity(1000);
        deltas_into(&ts, 64, &mut d);
        assert_eq!(d.len(), 999);
        assert!(d.iter().all(|&x| x == 10));
        let s = summarize(&mut d, &Scale::from_hz(1e9));
        assert_eq!(s.count, 999);
        assert_eq!((s.min_ticks, s.p50_ticks, s.max_ticks), (10, 10, 10));
        assert!((s.mean_ns - 10.0).abs() < 1e-9);
    }

    #[test]
    fn pairs_and_source_reads() {
        // Two reads of the simulated counter, 10 ns apart.
        let m = SimMachine::new(1e9, 64);
        let (a, b) = read_pair(&m);
        assert_eq!(b - a, 10);
        assert!(a > 0);
        // An opened kernel clock: readings in order, none left untouched.
        let src = Source::open(crate::clock::SourceId::Monotonic).unwrap();
        let before = sys::clock_ns(libc::CLOCK_MONOTONIC);
        let (a, b) = source_pair(&src);
        assert!(before <= a && a <= b, "{before} {a} {b}");
        let mut ts = touched_buffer(64);
        source_consecutive(&src, &mut ts);
        let after = sys::clock_ns(libc::CLOCK_MONOTONIC);
        assert!(ts.windows(2).all(|w| w[0] <= w[1]));
        assert!(ts[0] >= b && ts[63] <= after, "{ts:?}");
    }

    #[test]
    fn summary_in_ticks_and_ns() {
        // A 2.5 GHz counter: 25 ticks = 10 ns.
        let scale = Scale::from_hz(2.5e9);
        let mut d: Vec<i64> = (0..100).map(|i| if i < 98 { 25 } else { 2500 }).collect();
        d.push(0);
        let spikes = worst(&d, 2);
        assert_eq!(spikes, vec![(98, 2500), (99, 2500)]);
        let s = summarize(&mut d, &scale);
        assert_eq!(s.count, 101);
        assert_eq!(s.zero_deltas, 1);
        assert_eq!(s.p50_ticks, 25);
        assert!((s.p50_ns - 10.0).abs() < 1e-9);
        assert!((s.max_ns - 1000.0).abs() < 1e-9);
        assert!((s.smallest_step_ns.unwrap() - 10.0).abs() < 1e-9);
        let ser = series_from_deltas("x", &d, &scale, &s, &[]);
        assert_eq!(ser.stats.count, 101);
        assert!((ser.stats.mean_ns - s.mean_ns).abs() < 1e-12);
        assert_eq!(ser.stats.max_ns, 1000);
    }

    #[test]
    fn summary_and_series_of_signed_deltas() {
        let scale = Scale::ns();
        let mut d = vec![20i64, -5, 10, 0, 15, 0];
        let s = summarize(&mut d, &scale);
        assert_eq!(d, [-5, 0, 0, 10, 15, 20], "sorted in place");
        assert_eq!(
            (s.count, s.min_ticks, s.p50_ticks, s.p99_ticks, s.max_ticks),
            (6, -5, 0, 20, 20)
        );
        assert_eq!((s.zero_deltas, s.negative_deltas), (2, 1));
        let mean = 40.0 / 6.0;
        assert_eq!(s.mean_ticks, mean);
        // Population variance.
        let var = d.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / 6.0;
        assert!((s.stddev_ns - var.sqrt()).abs() < 1e-9, "{}", s.stddev_ns);
        assert_eq!(s.smallest_step_ns, Some(10.0));
        assert_eq!(quantile_sorted(&[1, 2, 3, 4], 0.25), 1);
        assert_eq!(quantile_sorted(&[], 0.5), 0);
        // The series: negatives counted (and recorded as 0 in the histogram),
        // mean and deviation exact from the summary, spikes in ns.
        let ser = series_from_deltas("monotonic warm", &d, &scale, &s, &[(3, 20, 777)]);
        assert_eq!(ser.label, "monotonic warm");
        assert_eq!(ser.counters.negative, 1);
        assert_eq!(
            (ser.stats.count, ser.stats.min_ns, ser.stats.max_ns),
            (6, -5, 20)
        );
        assert_eq!(
            (ser.stats.mean_ns, ser.stats.stddev_ns),
            (s.mean_ns, s.stddev_ns)
        );
        // Mean and deviation are the summary's (exact), not the histogram's.
        let mut exact = s.clone();
        exact.mean_ns = 6.75;
        exact.stddev_ns = 1.5;
        let ser2 = series_from_deltas("x", &d, &scale, &exact, &[]);
        assert_eq!((ser2.stats.mean_ns, ser2.stats.stddev_ns), (6.75, 1.5));
        let in_hist: u64 = ser.histogram.buckets.iter().map(|b| b[1]).sum();
        assert_eq!(in_hist, 6);
        assert_eq!(
            ser.histogram.buckets[0],
            [0, 3],
            "-5 and the zeros in the 0 bucket"
        );
        assert_eq!(ser.attributes["summary"]["negative_deltas"], 1);
        assert_eq!(ser.spikes.len(), 1);
        let sp = &ser.spikes[0];
        assert_eq!((sp.latency_ns, sp.t_ns, sp.seq), (20, 777, 3));
        // No deltas: nothing taken from the summary.
        let empty = series_from_deltas("e", &[], &scale, &s, &[]);
        assert_eq!((empty.stats.count, empty.stats.mean_ns), (0, 0.0));
    }

    #[test]
    fn the_system_sleeper_goes_on_after_a_signal_and_ends_on_stop() {
        use std::time::Duration;
        let mono = || sys::clock_ns(libc::CLOCK_MONOTONIC);
        let stop = AtomicBool::new(false);
        let mut s = SystemSleeper { stop: &stop };
        let a = mono();
        let n = s.now_ns();
        assert!(a <= n && n <= mono());
        let tid = crate::rt::accept_wake().unwrap();
        // A signal without a stop: the sleep goes on to its deadline.
        let deadline = mono() + 60_000_000;
        std::thread::scope(|sc| {
            sc.spawn(|| {
                std::thread::sleep(Duration::from_millis(15));
                crate::rt::wake_thread(tid).unwrap();
            });
            assert!(s.sleep_until(deadline));
        });
        assert!(mono() >= deadline);
        // A stop, then the signal (repeated, in case one comes before the
        // sleep): the sleep ends before its deadline, and says so.
        let done = AtomicBool::new(false);
        let deadline = mono() + 5_000_000_000;
        std::thread::scope(|sc| {
            sc.spawn(|| {
                std::thread::sleep(Duration::from_millis(15));
                stop.store(true, Ordering::Relaxed);
                while !done.load(Ordering::Relaxed) {
                    crate::rt::wake_thread(tid).unwrap();
                    std::thread::sleep(Duration::from_millis(10));
                }
            });
            assert!(!s.sleep_until(deadline));
            done.store(true, Ordering::Relaxed);
        });
        assert!(mono() < deadline, "slept to the deadline despite the stop");
        // Stopped before: a sleep that ran its course says stop too.
        assert!(!s.sleep_until(mono() + 1_000_000));
    }

    #[test]
    fn wrapped_narrow_counter_deltas() {
        let ts = [0xFFFF_FFF0u64, 0xFFFF_FFFA, 0x0000_0004, 0x0000_000E];
        let mut d = Vec::new();
        deltas_into(&ts, 32, &mut d);
        assert_eq!(d, vec![10, 10, 10]);
    }
}
