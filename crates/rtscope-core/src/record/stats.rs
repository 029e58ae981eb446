//! Exact running statistics (count, min, max, mean, standard deviation) computed
//! from the samples themselves, not from histogram buckets. Percentiles come
//! from the histogram (relative error at most 0.1 %).

use crate::record::LatencyHistogram;
use crate::result::Stats;

/// Welford's online mean and variance, plus min and max.
#[derive(Debug, Clone, Default)]
pub struct RunningStats {
    n: u64,
    min: i64,
    max: i64,
    mean: f64,
    m2: f64,
    sum: i128,
}

impl RunningStats {
    /// Adds one value.
    #[inline]
    pub fn push(&mut self, x: i64) {
        if self.n == 0 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        self.n += 1;
        self.sum += i128::from(x);
        let xf = x as f64;
        let d = xf - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (xf - self.mean);
    }

    /// Adds the `n` values `first, first + step, ..., first + (n - 1) * step`
    /// at once (the missed periods of a late wake-up): count, sum, min and
    /// max exactly; the mean and variance by merging the progression's own
    /// (Chan et al.'s pairwise update), without a step per value.
    pub fn push_progression(&mut self, first: i64, step: u64, n: u64) {
        if n == 0 {
            return;
        }
        let (nf, sf) = (n as f64, step as f64);
        // The missed periods' values lie below the wake-up's latency: no overflow.
        let last = (i128::from(first) + i128::from(step) * i128::from(n - 1)) as i64;
        if self.n == 0 {
            self.min = first;
            self.max = last;
        } else {
            self.min = self.min.min(first);
            self.max = self.max.max(last);
        }
        let mean_b = first as f64 + sf * (nf - 1.0) / 2.0;
        let m2_b = sf * sf * nf * (nf * nf - 1.0) / 12.0;
        let total = (self.n + n) as f64;
        let d = mean_b - self.mean;
        self.m2 += m2_b + d * d * self.n as f64 * nf / total;
        self.mean += d * nf / total;
        self.n += n;
        self.sum += i128::from(n) * i128::from(first)
            + i128::from(step) * (i128::from(n) * i128::from(n - 1) / 2);
    }

    /// The statistics of both sets of values together (Chan et al.'s
    /// pairwise update for the mean and variance; count, sum, min and max
    /// exactly).
    pub fn merged(&self, other: &RunningStats) -> RunningStats {
        if other.n == 0 {
            return self.clone();
        }
        if self.n == 0 {
            return other.clone();
        }
        let (na, nb) = (self.n as f64, other.n as f64);
        let total = na + nb;
        let d = other.mean - self.mean;
        RunningStats {
            n: self.n + other.n,
            min: self.min.min(other.min),
            max: self.max.max(other.max),
            mean: self.mean + d * nb / total,
            m2: self.m2 + other.m2 + d * d * na * nb / total,
            sum: self.sum + other.sum,
        }
    }

    /// Number of values.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Exact mean (from the integer sum); 0 when empty.
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }

    /// Population standard deviation; 0 when fewer than two values.
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            0.0
        } else {
            (self.m2 / self.n as f64).sqrt()
        }
    }

    /// Smallest value (0 when empty).
    pub fn min(&self) -> i64 {
        self.min
    }

    /// Largest value (0 when empty).
    pub fn max(&self) -> i64 {
        self.max
    }

    /// The summary for the result document; percentiles read from `hist`.
    pub fn summary(&self, hist: &LatencyHistogram) -> Stats {
        // A bucket's highest equivalent value can lie above the largest sample
        // (or below the smallest): clamp percentiles to the exact range.
        let lo = self.min.max(0) as u64;
        let hi = self.max.max(0) as u64;
        let q = |p: f64| {
            if self.n == 0 {
                0
            } else {
                hist.quantile(p).clamp(lo, hi)
            }
        };
        Stats {
            count: self.n,
            min_ns: self.min,
            max_ns: self.max,
            mean_ns: self.mean(),
            stddev_ns: self.stddev(),
            p50_ns: q(0.5),
            p90_ns: q(0.9),
            p99_ns: q(0.99),
            p99_9_ns: q(0.999),
            p99_99_ns: q(0.9999),
            p99_999_ns: q(0.99999),
            unknown: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive_quantile(sorted: &[i64], q: f64) -> i64 {
        // hdrhistogram's definition: the smallest value with at least
        // ceil(q * n) values at or below it (at least one).
        let n = sorted.len();
        let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
        sorted[rank - 1]
    }

    proptest! {
        #[test]
        fn matches_naive(v in proptest::collection::vec(0i64..50_000_000, 1..2000)) {
            let mut st = RunningStats::default();
            let mut h = LatencyHistogram::new();
            for &x in &v {
                st.push(x);
                h.record(x as u64);
            }
            let n = v.len() as f64;
            let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
            let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
            let s = st.summary(&h);
            prop_assert_eq!(s.count, v.len() as u64);
            prop_assert_eq!(s.min_ns, *v.iter().min().unwrap());
            prop_assert_eq!(s.max_ns, *v.iter().max().unwrap());
            prop_assert!((s.mean_ns - mean).abs() <= 1e-6 * mean.abs().max(1.0));
            if v.len() > 1 {
                prop_assert!((s.stddev_ns - var.sqrt()).abs() <= 1e-6 * var.sqrt().max(1.0));
            }
            let mut sorted = v.clone();
            sorted.sort_unstable();
            for (q, got) in [(0.5, s.p50_ns), (0.9, s.p90_ns), (0.99, s.p99_ns), (0.999, s.p99_9_ns)] {
                let want = naive_quantile(&sorted, q) as f64;
                // 3 significant digits: the reported bucket top is within 0.1 % (+1 ns).
                prop_assert!((got as f64 - want).abs() <= want * 1e-3 + 1.0,
                    "q={} got={} want={}", q, got, want);
            }
        }
    }

    /// Two sets merged give what pushing all their values gives; an empty
    /// one changes nothing (either side).
    #[test]
    fn merged_is_all_values_together() {
        let sets: [&[i64]; 4] = [&[], &[5], &[-3, 9, 9, 40], &[1_000_000, 7]];
        for a in sets {
            for b in sets {
                let (mut x, mut y, mut all) = (
                    RunningStats::default(),
                    RunningStats::default(),
                    RunningStats::default(),
                );
                a.iter().for_each(|&v| {
                    x.push(v);
                    all.push(v)
                });
                b.iter().for_each(|&v| {
                    y.push(v);
                    all.push(v)
                });
                let m = x.merged(&y);
                assert_eq!(
                    (m.n, m.min, m.max, m.sum),
                    (all.n, all.min, all.max, all.sum),
                    "{a:?} {b:?}"
                );
                assert!((m.mean - all.mean).abs() < 1e-9, "{a:?} {b:?}");
                assert!((m.stddev() - all.stddev()).abs() < 1e-6, "{a:?} {b:?}");
            }
        }
    }

    /// A progression added at once gives what adding its values one by
    /// one gives (count, sum, min, max exactly; mean and stddev to 1e-9).
    #[test]
    fn progressions_match_their_values() {
        for (before, first, step, n) in [
            (vec![], 500i64, 1_000u64, 1u64),
            (vec![], 0, 7, 2),
            (vec![10_i64, 20, 5_000], 250, 1_000_000, 4_000),
            (vec![-3], 1_000, 1, 3),
            (vec![9_000_000], 17, 1_000, 9_999),
            (vec![4, 4], 4, 0, 5),
        ] {
            let mut fast = RunningStats::default();
            let mut slow = RunningStats::default();
            for &x in &before {
                fast.push(x);
                slow.push(x);
            }
            fast.push_progression(first, step, n);
            for k in 0..n {
                slow.push(first + (k * step) as i64);
            }
            let h = LatencyHistogram::new();
            let (f, s) = (fast.summary(&h), slow.summary(&h));
            assert_eq!((f.count, f.min_ns, f.max_ns), (s.count, s.min_ns, s.max_ns));
            assert_eq!(fast.sum, slow.sum, "{first} {step} {n}");
            assert!((f.mean_ns - s.mean_ns).abs() <= 1e-9 * s.mean_ns.abs().max(1.0));
            assert!(
                (f.stddev_ns - s.stddev_ns).abs() <= 1e-9 * s.stddev_ns.max(1.0),
                "{} {}",
                f.stddev_ns,
                s.stddev_ns
            );
        }
        let mut st = RunningStats::default();
        st.push(7);
        st.push_progression(1, 1, 0);
        assert_eq!((st.count(), st.min(), st.max()), (1, 7, 7));
    }

    #[test]
    fn negatives_and_empty() {
        let st = RunningStats::default();
        assert_eq!(st.mean(), 0.0);
        assert_eq!(st.stddev(), 0.0);
        let mut st = RunningStats::default();
        st.push(-5);
        st.push(5);
        assert_eq!(st.min(), -5);
        assert_eq!(st.max(), 5);
        assert_eq!(st.mean(), 0.0);
        assert_eq!(st.stddev(), 5.0);
    }
}
