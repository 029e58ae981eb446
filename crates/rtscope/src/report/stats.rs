//! Confidence intervals for percentiles, computed from a series' histogram
//! by order statistics (the distribution-free binomial method).
//!
//! Of `n` independent samples, the number `B` that lie at or below the true
//! `q`-quantile follows Binomial(n, q). The interval between the `l`-th and
//! the `u`-th smallest samples covers the true quantile with probability
//! `P(l <= B < u)`; `l` and `u` are chosen so that each tail holds at most
//! 2.5 %, which gives at least 95 % coverage. The ranks are turned into values
//! through the histogram: the lower bound is the lowest value of the bucket
//! holding rank `l`, the upper bound the highest value of the bucket holding
//! rank `u`, so the bucket width (0.1 % in rtscope's histograms, 1 µs in
//! imported cyclictest data) widens the interval rather than narrowing it.
//!
//! The binomial CDF is summed exactly on its small side when the expected
//! count there is below [`EXACT_LIMIT`], and taken from the normal
//! approximation (with continuity correction) otherwise, where it is accurate
//! to far better than the 2.5 % tail it is used for.
//!
//! Caveat: latency samples of one run are not truly independent (a
//! disturbance lasts several periods), so these intervals are too narrow.
//! `compare` uses them only for documents without per-block histograms
//! (older files, imports), labelled "independence assumed"; see
//! [`super::verdict`].

use rtscope_core::record::LatencyHistogram;
use rtscope_core::result::Series;

/// One-sided tail probability of the interval (95 % two-sided).
const TAIL: f64 = 0.025;

/// Expected small-side count below which the binomial CDF is summed exactly.
const EXACT_LIMIT: f64 = 500.0;

/// A two-sided interval for a percentile, in ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuantileCi {
    pub q: f64,
    /// Lower bound; `None` when too few samples lie below the quantile.
    pub lo_ns: Option<u64>,
    /// Upper bound; `None` when too few samples lie above the quantile.
    pub hi_ns: Option<u64>,
}

/// Standard normal CDF (Abramowitz–Stegun 7.1.26 for erfc, error < 1.5e-7).
fn phi(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-x * x).exp();
    if z >= 0.0 {
        1.0 - 0.5 * erfc
    } else {
        0.5 * erfc
    }
}

/// `P(K <= k)` for `K ~ Binomial(n, p)` summed exactly from 0 (needs `n p` small).
fn small_side_cdf(n: u64, p: f64, k: u64) -> f64 {
    small_side_cdf_terms(n, p, k).0
}

/// [`small_side_cdf`] and the number of terms it summed: far beyond the mean
/// the sum stops, so a CDF over a billion samples costs a few dozen terms.
fn small_side_cdf_terms(n: u64, p: f64, k: u64) -> (f64, u64) {
    if p <= 0.0 {
        return (1.0, 0);
    }
    if p >= 1.0 {
        return (if k >= n { 1.0 } else { 0.0 }, 0);
    }
    let ratio = p / (1.0 - p);
    let mut pmf = (n as f64 * (-p).ln_1p()).exp();
    let mut sum = pmf;
    let mean = n as f64 * p;
    let mut i = 0u64;
    while i < k.min(n) {
        pmf *= (n - i) as f64 / (i + 1) as f64 * ratio;
        sum += pmf;
        i += 1;
        if negligible_beyond(i, mean, pmf, sum) {
            break;
        }
    }
    (sum.min(1.0), i + 1)
}

/// Where the exact sum stops: past the mean the terms only shrink, and once
/// one is below 1e-18 of the sum the rest cannot change an `f64` result.
fn negligible_beyond(i: u64, mean: f64, pmf: f64, sum: f64) -> bool {
    i as f64 > mean && pmf < 1e-18 * sum
}

/// `P(B <= j)` for `B ~ Binomial(n, q)`.
pub fn binomial_cdf(n: u64, q: f64, j: u64) -> f64 {
    if j >= n {
        return 1.0;
    }
    let nf = n as f64;
    // Sum exactly on the smaller side (q <= 1/2 keeps (1 - q)^n representable).
    if q <= 0.5 && nf * q < EXACT_LIMIT {
        small_side_cdf(n, q, j)
    } else if q > 0.5 && nf * (1.0 - q) < EXACT_LIMIT {
        // P(B <= j) = P(n - B >= n - j) = 1 - P(K <= n - j - 1), K ~ Bin(n, 1 - q).
        1.0 - small_side_cdf(n, 1.0 - q, n - j - 1)
    } else {
        let sd = (nf * q * (1.0 - q)).sqrt();
        phi((j as f64 + 0.5 - nf * q) / sd)
    }
}

/// The 1-based ranks `(l, u)` of the order statistics that bound the
/// `q`-quantile of `n` samples with at least 95 % coverage. `l == 0` means no
/// lower bound, `u > n` no upper bound.
pub fn quantile_ranks(n: u64, q: f64) -> (u64, u64) {
    if n == 0 {
        return (0, 1);
    }
    // l: the largest rank with P(B <= l - 1) <= TAIL (rank 0: none).
    // F is monotone in j, so binary search.
    let cdf = |j: u64| binomial_cdf(n, q, j);
    let (mut lo, mut hi) = (0u64, n + 1); // invariant: answer in [lo, hi)
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if cdf(mid - 1) <= TAIL {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let l = lo;
    // u: the smallest rank with P(B <= u - 1) >= 1 - TAIL (n + 1: none).
    let (mut a, mut b) = (1u64, n + 1); // answer in [a, b]
    while a < b {
        let mid = a + (b - a) / 2;
        if cdf(mid - 1) >= 1.0 - TAIL {
            b = mid;
        } else {
            a = mid + 1;
        }
    }
    (l, a)
}

/// A series' histogram with cumulative counts, for rank look-ups.
pub struct RankedHistogram {
    /// `(lowest value, highest value, cumulative count)` per bucket.
    buckets: Vec<(u64, u64, u64)>,
    /// Half the resolution of the underlying measurement (imported data).
    widen_ns: u64,
    min_ns: u64,
    max_ns: u64,
}

impl RankedHistogram {
    /// From a series of a result document.
    pub fn new(s: &Series) -> Self {
        let hist = LatencyHistogram::from_export(&s.histogram);
        let mut buckets = Vec::with_capacity(s.histogram.buckets.len());
        let mut cum = 0u64;
        let mut sorted = s.histogram.buckets.clone();
        sorted.sort_unstable_by_key(|b| b[0]);
        for b in sorted.iter().filter(|b| b[1] > 0) {
            cum = cum.saturating_add(b[1]);
            let lo = hist.inner().lowest_equivalent(b[0]);
            let hi = hist.inner().highest_equivalent(b[0]);
            buckets.push((lo, hi, cum));
        }
        let resolution = s
            .attributes
            .get("resolution_ns")
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        RankedHistogram {
            buckets,
            widen_ns: resolution / 2,
            min_ns: s.stats.min_ns.max(0) as u64,
            max_ns: s.stats.max_ns.max(0) as u64,
        }
    }

    /// Number of samples in the histogram.
    pub fn total(&self) -> u64 {
        self.buckets.last().map_or(0, |b| b.2)
    }

    fn bucket_of_rank(&self, rank: u64) -> Option<&(u64, u64, u64)> {
        let i = self.buckets.partition_point(|b| b.2 < rank);
        self.buckets.get(i)
    }

    /// The 95 % interval of the `q`-quantile.
    pub fn quantile_ci(&self, q: f64) -> QuantileCi {
        let n = self.total();
        let (l, u) = quantile_ranks(n, q);
        let lo_ns = (l >= 1)
            .then(|| self.bucket_of_rank(l))
            .flatten()
            .map(|b| b.0.saturating_sub(self.widen_ns).max(self.min_ns));
        let hi_ns = (u <= n).then(|| self.bucket_of_rank(u)).flatten().map(|b| {
            let v = b.1.saturating_add(self.widen_ns);
            if self.max_ns > 0 {
                v.min(self.max_ns)
            } else {
                v
            }
        });
        QuantileCi { q, lo_ns, hi_ns }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::result::Series;

    fn series_of(values: &[u64]) -> Series {
        let mut r = rtscope_core::record::SeriesRecorder::new(0, 4, None);
        for (i, v) in values.iter().enumerate() {
            r.record(&rtscope_core::sample::Sample {
                seq: i as u64,
                t_ns: i as u64,
                latency_ns: *v as i64,
                overruns: 0,
                cpu: 0,
            });
        }
        r.to_series("s", 0)
    }

    /// Exact binomial CDF by summing every term in log space (reference).
    fn reference_cdf(n: u64, q: f64, j: u64) -> f64 {
        let mut lg = vec![0.0f64; n as usize + 2];
        for i in 1..=n as usize + 1 {
            lg[i] = lg[i - 1] + (i as f64).ln();
        }
        (0..=j.min(n))
            .map(|k| {
                let k = k as usize;
                let n = n as usize;
                (lg[n] - lg[k] - lg[n - k] + k as f64 * q.ln() + (n - k) as f64 * (1.0 - q).ln())
                    .exp()
            })
            .sum()
    }

    #[test]
    fn cdf_matches_reference() {
        for &(n, q) in &[
            (50u64, 0.5),
            // n q small: summed exactly, where the normal approximation is
            // far off (P(B = 0) = 0.368 against 0.309).
            (1000, 0.001),
            (2000, 0.9995),
            (200, 0.99),
            (555, 0.9),
            (1000, 0.999),
            (3000, 0.5),
            (5000, 0.9),
        ] {
            for j in [0, n / 10, n / 2, n - n / 100, n - 3, n - 1] {
                let a = binomial_cdf(n, q, j);
                let b = reference_cdf(n, q, j);
                assert!((a - b).abs() < 2e-3, "n={n} q={q} j={j}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn the_exact_sum_stops_past_the_mean() {
        // Mean 10.5: the terms past ~60 are below 1e-18 of the sum.
        let (c, terms) = small_side_cdf_terms(1_000_000_000, 1.05e-8, 1_000_000_000);
        assert!((c - 1.0).abs() < 1e-12, "{c}");
        assert!(terms < 100, "{terms} terms");
        // Below the mean every term up to k counts.
        assert_eq!(small_side_cdf_terms(1_000_000_000, 1.05e-8, 5).1, 6);
    }

    #[test]
    fn the_stopping_rule_at_its_edges() {
        // Not before the mean has been passed, however small the term.
        assert!(!negligible_beyond(10, 10.0, 0.0, 1.0));
        assert!(negligible_beyond(11, 10.0, 0.0, 1.0));
        // Strictly below 1e-18 of the sum.
        assert!(!negligible_beyond(11, 10.0, 1e-18, 1.0));
        assert!(!negligible_beyond(11, 10.0, 1e-18, 0.5));
        assert!(negligible_beyond(11, 10.0, 4e-19, 0.5));
    }

    #[test]
    fn degenerate_probabilities() {
        // p = 0: K is always 0; p = 1: K is always n.
        assert_eq!(small_side_cdf(5, 0.0, 0), 1.0);
        assert_eq!(small_side_cdf(5, 1.0, 5), 1.0);
        assert_eq!(small_side_cdf(5, 1.0, 4), 0.0);
        assert_eq!(binomial_cdf(5, 0.3, 5), 1.0);
    }

    #[test]
    fn median_ranks_of_a_small_sample() {
        // Classic table value: n = 100, median, 95 %: ranks 40 and 61.
        assert_eq!(quantile_ranks(100, 0.5), (40, 61));
    }

    #[test]
    fn tail_needs_enough_samples() {
        // p99.9 of 1000 samples: no upper bound (needs rank > n).
        let (_, u) = quantile_ranks(1000, 0.999);
        assert!(u > 1000);
        // of 100 000 samples it is bounded on both sides, around rank 99 900.
        let (l, u) = quantile_ranks(100_000, 0.999);
        assert!(l > 99_870 && l < 99_900, "{l}");
        assert!(u > 99_900 && u < 99_930, "{u}");
    }

    #[test]
    fn coverage_is_at_least_95_percent() {
        for &(n, q) in &[
            (100u64, 0.5),
            (2000, 0.99),
            (20_000, 0.999),
            (10_000_000, 0.9999),
        ] {
            let (l, u) = quantile_ranks(n, q);
            let cov = binomial_cdf(n, q, u - 1)
                - if l == 0 {
                    0.0
                } else {
                    binomial_cdf(n, q, l - 1)
                };
            assert!(cov >= 0.949, "n={n} q={q} coverage {cov}");
        }
    }

    #[test]
    fn interval_holds_the_estimate() {
        let values: Vec<u64> = (0..10_000u64).map(|i| 1000 + (i * 7919) % 5000).collect();
        let s = series_of(&values);
        let h = RankedHistogram::new(&s);
        assert_eq!(h.total(), 10_000);
        for (q, est) in [(0.5, s.stats.p50_ns), (0.99, s.stats.p99_ns)] {
            let ci = h.quantile_ci(q);
            let (lo, hi) = (ci.lo_ns.unwrap(), ci.hi_ns.unwrap());
            assert!(lo <= est && est <= hi, "q={q}: {lo} <= {est} <= {hi}");
            assert!(hi - lo < 500, "q={q}: too wide {lo}..{hi}");
        }
        assert_eq!(h.quantile_ci(0.9999).hi_ns, None);
    }

    #[test]
    fn rank_maps_to_the_bucket_that_holds_it() {
        let s = series_of(&[1000, 1000, 1000, 2000, 2000, 2000]);
        let h = RankedHistogram::new(&s);
        let holds = |rank: u64, v: u64| {
            let b = h.bucket_of_rank(rank).unwrap();
            b.0 <= v && v <= b.1
        };
        // Rank 3 is the last sample of the first bucket, rank 4 the first of the second.
        assert!(holds(1, 1000) && holds(3, 1000), "{:?}", h.buckets);
        assert!(holds(4, 2000) && holds(6, 2000), "{:?}", h.buckets);
        assert!(h.bucket_of_rank(7).is_none());
    }

    #[test]
    fn interval_bounds_at_the_extreme_ranks() {
        // Find samples sizes whose interval reaches rank 1 or rank n exactly:
        // the smallest and largest sample then bound it.
        let mut seen = (false, false);
        for n in 20..400u64 {
            let values: Vec<u64> = (1..=n).map(|v| 1000 + v).collect();
            let h = RankedHistogram::new(&series_of(&values));
            let (l, u) = quantile_ranks(n, 0.95);
            if u == n {
                assert_eq!(h.quantile_ci(0.95).hi_ns, Some(1000 + n), "n={n}");
                seen.1 = true;
            } else if u > n {
                assert_eq!(h.quantile_ci(0.95).hi_ns, None, "n={n}");
            }
            let (l5, _) = quantile_ranks(n, 0.05);
            if l5 == 1 {
                assert_eq!(h.quantile_ci(0.05).lo_ns, Some(1001), "n={n}");
                seen.0 = true;
            } else if l5 == 0 {
                assert_eq!(h.quantile_ci(0.05).lo_ns, None, "n={n}");
            }
            assert!(l >= 1);
        }
        assert_eq!(seen, (true, true));
    }

    #[test]
    fn resolution_widens() {
        let mut s = series_of(&[5_500; 1000]);
        let narrow = RankedHistogram::new(&s).quantile_ci(0.5);
        s.attributes
            .insert("resolution_ns".into(), serde_json::json!(1000));
        s.stats.min_ns = 5000;
        s.stats.max_ns = 5999;
        let wide = RankedHistogram::new(&s).quantile_ci(0.5);
        assert!(wide.lo_ns.unwrap() < narrow.lo_ns.unwrap());
        assert!(wide.hi_ns.unwrap() > narrow.hi_ns.unwrap());
    }
}
