//! A latency histogram with fixed bounds (1 ns .. 100 s, 3 significant digits).
//!
//! Fixed bounds mean the counts array is allocated once, at creation, and never
//! resized: recording never allocates. Values above the highest trackable value
//! are clamped to it (and so still counted).

use hdrhistogram::Histogram;

use crate::result::HistogramExport;

/// Lowest discernible value, ns.
pub const HIST_LOWEST_NS: u64 = 1;
/// Highest trackable value, ns (100 s).
pub const HIST_HIGHEST_NS: u64 = 100_000_000_000;
/// Significant decimal digits kept (relative error at most 0.1 %).
pub const HIST_SIGFIG: u8 = 3;

/// HDR histogram of latencies in ns.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    h: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram with rtscope's fixed bounds.
    pub fn new() -> Self {
        let mut h = Histogram::new_with_bounds(HIST_LOWEST_NS, HIST_HIGHEST_NS, HIST_SIGFIG)
            .expect("constant histogram bounds are valid");
        h.auto(false);
        LatencyHistogram { h }
    }

    /// Records one value (clamped to the highest trackable value).
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.h.saturating_record(ns);
    }

    /// Records `count` occurrences of `ns`.
    pub fn record_n(&mut self, ns: u64, count: u64) {
        self.h.saturating_record_n(ns, count);
    }

    /// Records the lateness of the periods a late wake-up skipped: with
    /// `latency` and `missed` as the loop reports them (`missed` deadlines
    /// passed before the wake-up, `period` apart), the values `latency - k *
    /// period` for `k` in `1..=missed` (never more than `latency / period`,
    /// so none is negative). The counts are those of recording each value;
    /// the work is one step per bucket the values fall in, not one per value.
    pub fn record_missed(&mut self, latency: u64, period: u64, missed: u64) {
        if period == 0 {
            return;
        }
        let mut left = missed.min(latency / period);
        // The smallest of them first, then up by one period at a time.
        let mut v = latency - left * period;
        while left > 0 {
            // Beyond the counts (about 100 s): clamped to the highest
            // trackable value, as `record` does, and so is every larger one.
            if v > self.h.high() && self.h.record_n(v, 0).is_err() {
                self.h.saturating_record_n(v, left);
                return;
            }
            let n = ((self.h.highest_equivalent(v) - v) / period + 1).min(left);
            self.h.saturating_record_n(v, n);
            left -= n;
            v += n * period;
        }
    }

    /// Total number of values recorded.
    pub fn len(&self) -> u64 {
        self.h.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.h.is_empty()
    }

    /// The value at quantile `q` (0..=1), as the highest value equivalent to the
    /// bucket that holds it. 0 for an empty histogram.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.h.is_empty() {
            return 0;
        }
        self.h.value_at_quantile(q)
    }

    /// Adds all counts of `other`.
    pub fn add(&mut self, other: &LatencyHistogram) {
        // Same bounds on both sides, so this cannot fail.
        let _ = self.h.add(&other.h);
    }

    /// Access to the underlying hdrhistogram.
    pub fn inner(&self) -> &Histogram<u64> {
        &self.h
    }

    /// The non-empty buckets as `[lowest equivalent value, count]` pairs.
    pub fn export(&self) -> HistogramExport {
        let buckets = self
            .h
            .iter_recorded()
            .map(|v| {
                [
                    self.h.lowest_equivalent(v.value_iterated_to()),
                    v.count_since_last_iteration(),
                ]
            })
            .collect();
        HistogramExport {
            lowest_ns: HIST_LOWEST_NS,
            highest_ns: HIST_HIGHEST_NS,
            significant_digits: HIST_SIGFIG,
            buckets,
        }
    }

    /// Rebuilds a histogram from its export (used by readers of result documents).
    pub fn from_export(e: &HistogramExport) -> Self {
        let mut h = LatencyHistogram::new();
        for b in &e.buckets {
            h.record_n(b[0], b[1]);
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_and_clamping() {
        let mut h = LatencyHistogram::new();
        h.record(0);
        h.record(1);
        h.record(HIST_HIGHEST_NS * 10);
        assert_eq!(h.len(), 3);
        assert!(h.quantile(1.0) >= HIST_HIGHEST_NS);
    }

    #[test]
    fn empty_and_added() {
        let mut a = LatencyHistogram::new();
        assert!(a.is_empty());
        a.record(10);
        assert!(!a.is_empty());
        let mut b = LatencyHistogram::new();
        b.record_n(20_000, 3);
        a.add(&b);
        assert_eq!(a.len(), 4);
        assert_eq!(a.quantile(1.0), b.quantile(1.0));
    }

    /// The missed periods' lateness, one step per bucket, counts exactly
    /// what recording them one by one counts: small and large periods, a
    /// count beyond `latency / period`, values past the highest trackable one.
    #[test]
    fn missed_periods_count_as_recorded_one_by_one() {
        let cases: [(u64, u64, u64); 9] = [
            (2_500, 1_000, 2),
            (1_000, 1_000, 1),
            (999, 1_000, 0),
            (5_000_000_000, 1_000_000, 5_000),
            (3_000_000_017, 1_000, 3_000_000),
            (7_777, 3, 2_592),
            // More than latency / period: only those with a lateness >= 0.
            (2_500, 1_000, 9),
            (250_000_000_000, 30_000_000_000, 8),
            (u64::MAX, u64::MAX / 4, 4),
        ];
        for (lat, period, missed) in cases {
            let mut fast = LatencyHistogram::new();
            fast.record_missed(lat, period, missed);
            let mut slow = LatencyHistogram::new();
            let mut k = 1;
            while k <= missed && k.checked_mul(period).is_some_and(|x| x <= lat) {
                slow.record(lat - k * period);
                k += 1;
            }
            assert_eq!(fast.len(), k - 1, "{lat} {period} {missed}");
            assert_eq!(fast.export(), slow.export(), "{lat} {period} {missed}");
        }
        let mut h = LatencyHistogram::new();
        h.record_missed(5_000, 0, 3);
        assert!(h.is_empty(), "a period of 0 fills in nothing");
        h.record_missed(2_500, 1_000, 2);
        assert_eq!(h.export().buckets, vec![[500, 1], [1_500, 1]]);
    }

    #[test]
    fn export_round_trip() {
        let mut h = LatencyHistogram::new();
        for v in [5u64, 5, 1234, 99_999, 1_000_000, 7_000_000_000] {
            h.record(v);
        }
        let e = h.export();
        assert_eq!(e.buckets.len(), 5);
        let back = LatencyHistogram::from_export(&e);
        assert_eq!(back.len(), 6);
        for q in [0.0, 0.3, 0.5, 0.9, 1.0] {
            assert_eq!(back.quantile(q), h.quantile(q));
        }
    }
}

/// Exact 1 µs bins `[i us, i+1 us)` up to a maximum, as cyclictest's `-h`
/// histogram counts them, with the overflow count and the sequence numbers of
/// the first overflows. Allocated once at creation.
#[derive(Debug, Clone)]
pub struct MicrosecondBins {
    /// `bins[i]`: samples in `[i µs, i+1 µs)`.
    pub bins: Vec<u64>,
    /// Samples at or above the last bin.
    pub overflows: u64,
    /// Sequence numbers of the first overflows (bounded).
    pub overflow_seqs: Vec<u64>,
    max_seqs: usize,
}

impl MicrosecondBins {
    /// `bins` one-microsecond bins; remembers the first `max_seqs` overflow sequence numbers.
    pub fn new(bins: usize, max_seqs: usize) -> Self {
        MicrosecondBins {
            bins: vec![0; bins],
            overflows: 0,
            overflow_seqs: Vec::with_capacity(max_seqs),
            max_seqs,
        }
    }

    /// Counts a latency (negative latencies count in bin 0).
    #[inline]
    pub fn record(&mut self, latency_ns: i64, seq: u64) {
        let us = (latency_ns.max(0) / 1000) as usize;
        if let Some(b) = self.bins.get_mut(us) {
            *b += 1;
        } else {
            self.overflows += 1;
            if self.overflow_seqs.len() < self.max_seqs {
                self.overflow_seqs.push(seq);
            }
        }
    }
}

#[cfg(test)]
mod us_tests {
    use super::*;

    #[test]
    fn microsecond_bins() {
        let mut h = MicrosecondBins::new(400, 2);
        for (i, v) in [100i64, 999, 1000, 1500, 2999, 450_000, -3, 400_000, 399_999]
            .iter()
            .enumerate()
        {
            h.record(*v, i as u64);
        }
        assert_eq!(h.bins[0], 3);
        assert_eq!(h.bins[1], 2);
        assert_eq!(h.bins[2], 1);
        assert_eq!(h.bins[399], 1);
        assert_eq!(h.overflows, 2);
        assert_eq!(h.overflow_seqs, vec![5, 7]);
        // Overflows beyond max_seqs are counted, their sequence numbers not kept.
        h.record(500_000, 9);
        assert_eq!(h.overflows, 3);
        assert_eq!(h.overflow_seqs, vec![5, 7]);
    }
}
