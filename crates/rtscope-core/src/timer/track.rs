//! Online estimators of a wait API's lateness, for the adaptive and hybrid
//! compensations. Both have a fixed size, allocate once when created and do
//! O(1) (EWMA) or O(buckets) (window quantile) work per wake.

/// Exponentially weighted mean and variance of the lateness (ns).
///
/// `margin(k) = mean + k·σ`: with `k = 0` it estimates the mean lateness
/// (what minimises the mean error of a compensated sleep without a spin);
/// larger `k` wakes earlier, so that fewer wakes are late, at the cost of a
/// longer spin. It follows a change of conditions within about `1/alpha`
/// wakes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EwmaTracker {
    alpha: f64,
    mean: f64,
    var: f64,
    n: u64,
}

impl EwmaTracker {
    /// A tracker with smoothing factor `alpha` (0 < alpha ≤ 1), starting at `initial_ns`.
    pub fn new(alpha: f64, initial_ns: u64) -> Self {
        EwmaTracker {
            alpha: alpha.clamp(1e-6, 1.0),
            mean: initial_ns as f64,
            var: 0.0,
            n: 0,
        }
    }

    /// Adds one observed lateness.
    #[inline]
    pub fn push(&mut self, x_ns: u64) {
        let x = x_ns as f64;
        if self.n == 0 && self.mean == 0.0 {
            self.mean = x;
        } else {
            let d = x - self.mean;
            self.mean += self.alpha * d;
            self.var = (1.0 - self.alpha) * (self.var + self.alpha * d * d);
        }
        self.n += 1;
    }

    /// The mean lateness, ns.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// The standard deviation, ns.
    pub fn stddev(&self) -> f64 {
        self.var.sqrt()
    }

    /// `mean + k·σ`, ns (never negative).
    #[inline]
    pub fn margin(&self, k: f64) -> u64 {
        (self.mean + k * self.stddev()).max(0.0) as u64
    }
}

/// Buckets of the window quantile: 16 linear buckets of 128 ns, then 8 per
/// power of two (a relative width of at most 1/8).
const LINEAR: usize = 16;
const SUB: usize = 8;
const UNIT_SHIFT: u32 = 7;
const BUCKETS: usize = LINEAR + 54 * SUB;

/// The `q`-quantile of the last `W` latenesses, from a log-linear histogram
/// of the window and a ring of its bucket indices: fixed memory (about
/// 2·W + 4·432 bytes), no allocation after [`new`](Self::new). The estimate
/// is the upper edge of the bucket, so it errs by at most 1/8 on the side of
/// waking early. Waking `quantile(q)` early makes about `1 − q` of the wakes
/// late while conditions stay as in the window.
#[derive(Debug, Clone)]
pub struct WindowQuantile {
    counts: Box<[u32; BUCKETS]>,
    ring: Box<[u16]>,
    next: usize,
    filled: usize,
}

fn bucket(v_ns: u64) -> usize {
    let u = v_ns >> UNIT_SHIFT;
    if u < LINEAR as u64 {
        return u as usize;
    }
    let e = 63 - u.leading_zeros() as usize; // >= 4
    let m = ((u >> (e - 3)) & 7) as usize;
    (LINEAR + (e - 4) * SUB + m).min(BUCKETS - 1)
}

fn lower_edge(idx: usize) -> u64 {
    if idx < LINEAR {
        return (idx as u64) << UNIT_SHIFT;
    }
    let e = (idx - LINEAR) / SUB + 4;
    let m = ((idx - LINEAR) % SUB) as u64;
    ((8 + m) << (e - 3)) << UNIT_SHIFT
}

impl WindowQuantile {
    /// A window of the last `window` values (at least 1).
    pub fn new(window: usize) -> Self {
        WindowQuantile {
            counts: Box::new([0; BUCKETS]),
            ring: vec![0u16; window.max(1)].into_boxed_slice(),
            next: 0,
            filled: 0,
        }
    }

    /// Adds one value, dropping the oldest when the window is full.
    #[inline]
    pub fn push(&mut self, v_ns: u64) {
        let b = bucket(v_ns);
        if self.filled == self.ring.len() {
            let old = self.ring[self.next] as usize;
            self.counts[old] -= 1;
        } else {
            self.filled += 1;
        }
        self.ring[self.next] = b as u16;
        self.counts[b] += 1;
        self.next = (self.next + 1) % self.ring.len();
    }

    /// Values in the window.
    pub fn len(&self) -> usize {
        self.filled
    }

    /// Whether nothing was pushed yet.
    pub fn is_empty(&self) -> bool {
        self.filled == 0
    }

    /// The upper edge of the bucket holding the `q`-quantile; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.filled == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.filled as f64).ceil() as usize).max(1);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c as usize;
            if seen >= rank {
                return Some(if i + 1 < BUCKETS {
                    lower_edge(i + 1)
                } else {
                    u64::MAX
                });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_contain_their_values() {
        let mut last = 0;
        for v in (0..5_000_000u64).step_by(997).chain([u64::MAX / 2]) {
            let b = bucket(v);
            assert!(b >= last, "bucket of {v} went down");
            last = b;
            assert!(lower_edge(b) <= v, "{v} below its bucket");
            if b + 1 < BUCKETS {
                assert!(v < lower_edge(b + 1), "{v} above its bucket");
            }
        }
    }

    #[test]
    fn window_quantile_forgets_old_values() {
        let mut w = WindowQuantile::new(100);
        for _ in 0..100 {
            w.push(1_000_000);
        }
        assert!(w.quantile(0.5).unwrap() >= 1_000_000);
        for _ in 0..100 {
            w.push(10_000);
        }
        let q = w.quantile(0.99).unwrap();
        assert!((10_000..=10_000 * 9 / 8 + 128).contains(&q), "{q}");
        assert_eq!(w.len(), 100);
    }

    #[test]
    fn window_quantile_ranks() {
        let mut w = WindowQuantile::new(1000);
        for i in 0..1000u64 {
            w.push(i * 1000);
        }
        let q = w.quantile(0.9).unwrap();
        // The 900th value is 899 µs; the edge is within 1/8 above.
        assert!((899_000..=899_000 * 9 / 8).contains(&q), "{q}");
        assert!(WindowQuantile::new(4).quantile(0.5).is_none());
    }

    #[test]
    fn ewma_starts_from_its_initial_value_and_its_margin_is_mean_plus_k_sigma() {
        // A non-zero initial value is the first mean: the first push moves it
        // by alpha, like every later one.
        let mut t = EwmaTracker::new(0.5, 1_000);
        t.push(3_000);
        assert_eq!(t.mean(), 2_000.0);
        // Started at 0, the first push is taken as the mean; later pushes
        // average in, also when the mean is back at 0.
        let mut t = EwmaTracker::new(0.5, 0);
        t.push(0);
        assert_eq!(t.mean(), 0.0);
        t.push(100);
        assert_eq!(t.mean(), 50.0);
        // var = (1 − α)(0 + α·100²) = 2500, σ = 50.
        assert_eq!(t.stddev(), 50.0);
        assert_eq!(t.margin(0.0), 50);
        assert_eq!(t.margin(2.0), 150);
        assert_eq!(t.margin(-5.0), 0, "never negative");
    }

    #[test]
    fn window_quantile_forgets_old_small_values_too() {
        let mut w = WindowQuantile::new(100);
        assert!(w.is_empty());
        for _ in 0..100 {
            w.push(10_000);
        }
        assert!(!w.is_empty());
        for _ in 0..100 {
            w.push(1_000_000);
        }
        assert!(w.quantile(0.01).unwrap() >= 1_000_000);
        // Values in the first bucket: its upper edge is one unit.
        let mut w = WindowQuantile::new(4);
        w.push(50);
        assert_eq!(w.quantile(0.5), Some(128));
    }

    #[test]
    fn ewma_follows_a_step() {
        let mut t = EwmaTracker::new(0.1, 0);
        for _ in 0..200 {
            t.push(50_000);
        }
        assert!((t.mean() - 50_000.0).abs() < 1.0);
        assert!(t.stddev() < 1.0);
        for _ in 0..200 {
            t.push(10_000);
        }
        assert!((t.mean() - 10_000.0).abs() < 100.0, "{}", t.mean());
        let mut t = EwmaTracker::new(0.05, 0);
        for i in 0..2000 {
            t.push(if i % 2 == 0 { 40_000 } else { 60_000 });
        }
        assert!((t.mean() - 50_000.0).abs() < 1_000.0);
        assert!((t.stddev() - 10_000.0).abs() < 1_000.0, "{}", t.stddev());
        assert!(t.margin(2.0) > t.margin(0.0));
    }
}
