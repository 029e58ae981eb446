//! The verdict of `rtscope compare`: for each verdict percentile, the effect
//! of run B against the baseline A as a ratio `qB / qA - 1` with a 95 %
//! interval, and a call that claims a difference only where the whole
//! interval lies beyond the practical-effect threshold.
//!
//! ## The rule
//!
//! With the threshold `δ` (`--min-effect`, default 5 %) the *no-effect zone*
//! is `1/(1 + δ) <= qB/qA <= 1 + δ` (symmetric on a log scale). With the 95 %
//! interval `[lo, hi]` of `qB/qA`:
//!
//! - **worse** when `lo > 1 + δ`; **better** when `hi < 1/(1 + δ)`;
//! - **same** ("within ±δ") when the interval lies wholly inside the zone;
//! - **no clear difference** otherwise (the interval reaches into the zone
//!   and beyond it), with advice on how much more data would resolve it;
//! - **too few samples** when no interval can be formed.
//!
//! ## Where the interval comes from (the first that applies)
//!
//! 1. **Repetitions** (`--repeat N`, both sides with ≥ 2, or one side with
//!    ≥ 2 and the other a single run): the log of the percentile of each
//!    repetition; the effect is the difference of the mean logs, its interval
//!    Welch's t interval (with one single run, the repetitions' spread stands
//!    for both sides). This is the only method that sees the variation
//!    between runs.
//! 2. **Block bootstrap** (both series carry per-block histograms): the
//!    circular block bootstrap over the run's time blocks. The block length
//!    (in recorded 100 ms blocks) is chosen per series and percentile from
//!    the data by Politis & White's (2004, corrected 2009) rule, applied to
//!    the per-block excess of samples at or below the percentile; it is
//!    capped so that every run has at least 8 bootstrap blocks. The standard
//!    error of each run's log-percentile is the standard deviation over the
//!    resamples; the interval is `log ratio ± t · SE` with Welch's degrees of
//!    freedom from the numbers of bootstrap blocks (with few blocks a
//!    bootstrap underestimates the spread; the t quantile pays for it).
//! 3. **Independence assumed** (documents without blocks: older files,
//!    imports): each run's order-statistics interval ([`super::stats`]) turned
//!    into a standard error on the log scale, combined as above with the
//!    normal quantile. Latency samples are not independent: these intervals
//!    are too narrow, and the label says so.
//!
//! Resampling is deterministic (a fixed seed): the same files give the same
//! verdict.

use rtscope_core::record::blocks::{self, bucket_range, Block};
use rtscope_core::result::Series;
use rtscope_core::units::format_ns;

use super::stats::RankedHistogram;

/// Two-sided 95 %: the normal quantile.
const Z975: f64 = 1.959_964;
/// The normal quantile of 80 % power (for the advice).
const Z80: f64 = 0.841_621;
/// Fewest bootstrap blocks a run may be cut into.
pub const MIN_BOOT_BLOCKS: usize = 8;
/// Fewest samples beyond a percentile (on each side of a comparison) for a
/// bootstrap or repetition interval.
pub const MIN_TAIL: f64 = 20.0;

/// How verdicts are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The practical-effect threshold δ (0.05 = 5 %).
    pub min_effect: f64,
    /// Bootstrap resamples per run and percentile.
    pub resamples: usize,
    /// Seed of the resampling.
    pub seed: u64,
    /// `compare --tail-threshold`: the threshold of the tail verdicts
    /// (`None`: the baseline's p99.9; see [`super::tail`]).
    pub tail_threshold_ns: Option<u64>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            min_effect: 0.05,
            resamples: 2000,
            seed: 0x5eed_1234_abcd_0001,
            tail_threshold_ns: None,
        }
    }
}

/// SplitMix64: a small, fast, seeded generator (Steele, Lea & Flood 2014).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Uniform in (0, 1).
    #[cfg(test)]
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    #[cfg(test)]
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// The 97.5 % quantile of Student's t with `df` degrees of freedom (a table
/// to 30, the Cornish–Fisher expansion beyond; fractional df rounded down).
pub fn t975(df: f64) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    if !df.is_finite() {
        return Z975;
    }
    let d = df.floor().max(1.0);
    if d <= 30.0 {
        return T[d as usize - 1];
    }
    let z = Z975;
    z + (z.powi(3) + z) / (4.0 * d)
        + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * d * d)
}

/// Welch–Satterthwaite degrees of freedom of `va + vb` with `da`, `db` df each.
fn welch_df(va: f64, da: f64, vb: f64, db: f64) -> f64 {
    let num = (va + vb).powi(2);
    let den = va * va / da.max(1.0) + vb * vb / db.max(1.0);
    if den <= 0.0 {
        da + db
    } else {
        num / den
    }
}

// ---------------------------------------------------------------------------
// Block data and the bootstrap.

/// A series' blocks with cumulative counts over a shared bucket grid.
pub struct BlockData {
    /// Per non-empty block: cumulative counts over the grid.
    cum: Vec<Vec<u64>>,
    /// Recorded block length, ns.
    pub block_ns: u64,
}

/// The shared bucket grid of two series: sorted bucket indices.
pub struct Grid {
    buckets: Vec<u16>,
}

impl Grid {
    /// The union of the buckets used by `parts`.
    pub fn new(parts: &[&[Block]]) -> Self {
        let mut buckets: Vec<u16> = parts
            .iter()
            .flat_map(|p| p.iter().flatten().map(|e| e.0))
            .collect();
        buckets.sort_unstable();
        buckets.dedup();
        Grid { buckets }
    }

    fn len(&self) -> usize {
        self.buckets.len()
    }

    /// The value at continuous rank `r` (0 < r <= total) given the count at
    /// or below each grid bucket, interpolated within the bucket.
    fn value(&self, cum: impl Fn(usize) -> u64, r: f64) -> f64 {
        // Smallest k with cum(k) >= r.
        let (mut lo, mut hi) = (0usize, self.len() - 1);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if cum(mid) as f64 >= r {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let k = lo;
        let below = if k == 0 { 0 } else { cum(k - 1) } as f64;
        let here = cum(k) as f64 - below;
        let (low, width) = bucket_range(self.buckets[k]);
        let frac = if here > 0.0 {
            ((r - below) / here).clamp(0.0, 1.0)
        } else {
            1.0
        };
        low as f64 + frac * width as f64
    }
}

impl BlockData {
    /// The non-empty blocks of `blocks` on `grid`.
    pub fn new(blocks: &[Block], block_ns: u64, grid: &Grid) -> Self {
        let cum = blocks
            .iter()
            .filter(|b| b.iter().any(|e| e.1 > 0))
            .map(|b| {
                let mut dense = vec![0u64; grid.len()];
                for (k, n) in b {
                    if let Ok(i) = grid.buckets.binary_search(k) {
                        dense[i] += n;
                    }
                }
                let mut acc = 0;
                for d in &mut dense {
                    acc += *d;
                    *d = acc;
                }
                dense
            })
            .collect();
        BlockData { cum, block_ns }
    }

    /// Number of non-empty blocks.
    pub fn len(&self) -> usize {
        self.cum.len()
    }

    /// Whether there is no block.
    pub fn is_empty(&self) -> bool {
        self.cum.is_empty()
    }

    /// Number of samples.
    pub fn total(&self) -> u64 {
        self.cum
            .iter()
            .map(|c| c.last().copied().unwrap_or(0))
            .sum()
    }

    /// The `q`-quantile of all blocks with weights `w` (block index, weight).
    fn quantile_weighted(&self, grid: &Grid, w: &[(usize, u64)], q: f64) -> f64 {
        let total: u64 = w
            .iter()
            .map(|&(b, n)| n * self.cum[b].last().copied().unwrap_or(0))
            .sum();
        let r = (q * total as f64).max(0.5);
        grid.value(|k| w.iter().map(|&(b, n)| n * self.cum[b][k]).sum(), r)
    }

    /// The `q`-quantile of the whole series.
    pub fn quantile(&self, grid: &Grid, q: f64) -> f64 {
        if self.is_empty() {
            return 0.0;
        }
        let w: Vec<(usize, u64)> = (0..self.len()).map(|b| (b, 1)).collect();
        self.quantile_weighted(grid, &w, q)
    }

    /// The bootstrap block length (in recorded blocks) for the `q`-quantile:
    /// Politis & White's rule on the per-block excess count at or below it,
    /// capped so that there are at least [`MIN_BOOT_BLOCKS`] blocks.
    pub fn block_length(&self, grid: &Grid, q: f64) -> usize {
        let n = self.len();
        let cap = (n / MIN_BOOT_BLOCKS).max(1);
        if n < 2 * MIN_BOOT_BLOCKS {
            return 1.min(cap);
        }
        let xi = self.quantile(grid, q);
        // The grid bucket holding the quantile.
        let k = grid
            .buckets
            .partition_point(|b| {
                let (lo, w) = bucket_range(*b);
                ((lo + w) as f64) <= xi
            })
            .min(grid.len() - 1);
        let y: Vec<f64> = self
            .cum
            .iter()
            .map(|c| c[k] as f64 - q * c.last().copied().unwrap_or(0) as f64)
            .collect();
        let floor = (n as f64).sqrt().ceil();
        politis_white(&y).ceil().max(floor).clamp(1.0, cap as f64) as usize
    }

    /// Circular block bootstrap of the `q`-quantile: `resamples` values of
    /// the log-quantile, blocks of `m` recorded blocks.
    pub fn bootstrap_log(
        &self,
        grid: &Grid,
        q: f64,
        m: usize,
        resamples: usize,
        rng: &mut Rng,
    ) -> Vec<f64> {
        let n = self.len();
        let draws = n.div_ceil(m);
        let mut weights = vec![0u64; n];
        let mut w: Vec<(usize, u64)> = Vec::with_capacity(n);
        (0..resamples)
            .map(|_| {
                weights.iter_mut().for_each(|x| *x = 0);
                for _ in 0..draws {
                    let s = rng.below(n);
                    for j in 0..m {
                        weights[(s + j) % n] += 1;
                    }
                }
                w.clear();
                w.extend(
                    weights
                        .iter()
                        .enumerate()
                        .filter(|(_, x)| **x > 0)
                        .map(|(b, x)| (b, *x)),
                );
                self.quantile_weighted(grid, &w, q).max(1.0).ln()
            })
            .collect()
    }
}

/// Politis & White's (2004; Patton, Politis & White 2009) automatic block
/// length for the circular block bootstrap of the mean of `x`.
pub fn politis_white(x: &[f64]) -> f64 {
    let n = x.len();
    if n < 4 {
        return 1.0;
    }
    let nf = n as f64;
    let mean = x.iter().sum::<f64>() / nf;
    let e: Vec<f64> = x.iter().map(|v| v - mean).collect();
    let kn = (nf.log10().sqrt().ceil() as usize).max(5);
    let mmax = (nf.sqrt().ceil() as usize + kn).min(n - 1);
    let acv = |k: usize| e[k..].iter().zip(&e).map(|(a, b)| a * b).sum::<f64>() / nf;
    let r0 = acv(0);
    if r0 <= 0.0 {
        return 1.0;
    }
    let acvs: Vec<f64> = (0..=mmax).map(acv).collect();
    let thr = 2.0 * (nf.log10() / nf).sqrt();
    // m̂: the smallest lag after which kn autocorrelations in a row are insignificant.
    let mut mhat = None;
    let mut run = 0;
    for (k, a) in acvs.iter().enumerate().skip(1) {
        if (a / r0).abs() < thr {
            run += 1;
            if run == kn {
                mhat = Some(k - kn);
                break;
            }
        } else {
            run = 0;
        }
    }
    let mhat = mhat.unwrap_or_else(|| {
        // None found: the largest significant lag.
        (1..=mmax)
            .rev()
            .find(|&k| (acvs[k] / r0).abs() >= thr)
            .unwrap_or(0)
    });
    let m = (2 * mhat).min(mmax);
    if m == 0 {
        return 1.0;
    }
    let lambda = |t: f64| {
        let t = t.abs();
        if t <= 0.5 {
            1.0
        } else if t <= 1.0 {
            2.0 * (1.0 - t)
        } else {
            0.0
        }
    };
    let (mut g, mut g0) = (0.0, acvs[0]);
    for (k, a) in acvs.iter().enumerate().take(m + 1).skip(1) {
        let l = lambda(k as f64 / m as f64);
        g += 2.0 * l * k as f64 * a;
        g0 += 2.0 * l * a;
    }
    let d = 4.0 / 3.0 * g0 * g0;
    if d <= 0.0 {
        return 1.0;
    }
    (2.0 * g * g / d).cbrt() * nf.cbrt()
}

// ---------------------------------------------------------------------------
// Effects.

/// Which method produced an interval.
#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    /// Between-run spread of `--repeat` repetitions.
    Repetitions { a: usize, b: usize },
    /// Block bootstrap: bootstrap blocks and their length per run.
    Blocks {
        a: (usize, u64),
        b: (usize, u64),
        resamples: usize,
    },
    /// Order statistics, samples assumed independent.
    Independence,
}

impl Method {
    /// A short description: "block bootstrap, 47 blocks of 100ms".
    pub fn describe(&self) -> String {
        match self {
            Method::Repetitions { a, b } if *b == 1 || *a == 1 => format!(
                "between runs: {a} vs {b} (one side a single run: the repetitions' spread assumed for both)"
            ),
            Method::Repetitions { a, b } => format!("between runs: {a} vs {b} repetitions"),
            Method::Blocks { a, b, .. } if a == b => {
                format!("block bootstrap, {} blocks of {}", a.0, format_ns(a.1))
            }
            Method::Blocks { a, b, .. } => format!(
                "block bootstrap, {} blocks of {} vs {} of {}",
                a.0,
                format_ns(a.1),
                b.0,
                format_ns(b.1)
            ),
            Method::Independence => "independence assumed".into(),
        }
    }
}

/// What the interval says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// The interval lies wholly above `1 + δ`.
    Worse,
    /// The interval lies wholly below `1 / (1 + δ)`.
    Better,
    /// The interval lies wholly inside the no-effect zone.
    Same,
    /// The interval reaches into the zone and out of it.
    Unclear,
    /// No interval.
    TooFewSamples,
    /// A run has no distribution at all (no percentiles recorded: an
    /// import of cyclictest run without `-h`): nothing to compare, however
    /// many samples.
    NoDistribution,
}

/// The effect at one percentile.
#[derive(Debug, Clone, PartialEq)]
pub struct Effect {
    pub name: &'static str,
    pub q: f64,
    /// `qB / qA - 1`.
    pub estimate: Option<f64>,
    /// The 95 % interval of `qB / qA - 1`.
    pub interval: Option<(f64, f64)>,
    pub method: Method,
    pub call: Call,
    /// For `Unclear`: how much more data would resolve it.
    pub advice: Option<Advice>,
}

/// How much more data would resolve an unclear effect (80 % power, standard
/// error shrinking as one over the square root of the data).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Advice {
    /// The difference to resolve (`qB/qA - 1`, its size).
    pub difference: f64,
    /// Data needed, as a multiple of what there is.
    pub factor: f64,
}

/// The call of a log-interval under the threshold `delta`.
pub fn call(lo_log: f64, hi_log: f64, delta: f64) -> Call {
    let z = delta.ln_1p();
    if lo_log > z {
        Call::Worse
    } else if hi_log < -z {
        Call::Better
    } else if lo_log >= -z && hi_log <= z {
        Call::Same
    } else {
        Call::Unclear
    }
}

/// An effect from a log-ratio estimate with its standard error and the
/// quantile for the interval.
fn effect_from_log(
    name: &'static str,
    q: f64,
    est: f64,
    se: f64,
    crit: f64,
    method: Method,
    delta: f64,
) -> Effect {
    let (lo, hi) = (est - crit * se, est + crit * se);
    let c = call(lo, hi, delta);
    // The difference to resolve: the one seen, or twice the threshold if larger.
    let z = delta.ln_1p();
    let target = est.abs().max((2.0 * delta).ln_1p());
    let need = (target - z) / (crit + Z80);
    let advice = (c == Call::Unclear && se > 0.0 && need > 0.0).then(|| Advice {
        difference: target.exp_m1(),
        factor: (se / need).powi(2).max(1.0),
    });
    Effect {
        name,
        q,
        estimate: Some(est.exp_m1()),
        interval: Some((lo.exp_m1(), hi.exp_m1())),
        method,
        call: c,
        advice,
    }
}

fn too_few(name: &'static str, q: f64, est: Option<f64>, method: Method) -> Effect {
    Effect {
        name,
        q,
        estimate: est,
        interval: None,
        method,
        call: Call::TooFewSamples,
        advice: None,
    }
}

fn stat_at(s: &Series, q: f64) -> u64 {
    if q <= 0.5 {
        s.stats.p50_ns
    } else if q <= 0.9 {
        s.stats.p90_ns
    } else if q <= 0.99 {
        s.stats.p99_ns
    } else if q <= 0.999 {
        s.stats.p99_9_ns
    } else if q <= 0.9999 {
        s.stats.p99_99_ns
    } else {
        s.stats.p99_999_ns
    }
}

/// Mean and sample variance of the log-percentiles of `reps`; `None` when
/// a repetition has too few samples beyond the percentile.
fn rep_logs(reps: &[&Series], q: f64) -> Option<(f64, f64, usize)> {
    let logs: Vec<f64> = reps
        .iter()
        .map(|s| {
            let tail = s.stats.count as f64 * (1.0 - q);
            (tail >= MIN_TAIL / 2.0).then(|| (stat_at(s, q).max(1) as f64).ln())
        })
        .collect::<Option<_>>()?;
    let n = logs.len();
    let mean = logs.iter().sum::<f64>() / n as f64;
    let var = if n > 1 {
        logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1) as f64
    } else {
        0.0
    };
    Some((mean, var, n))
}

/// The repetitions of a series (those with samples), or the series itself.
fn runs_of(s: &Series) -> Vec<&Series> {
    if s.repetitions.is_empty() {
        vec![s]
    } else {
        s.repetitions.iter().filter(|r| r.stats.count > 0).collect()
    }
}

fn by_repetitions(a: &Series, b: &Series, name: &'static str, q: f64, st: &Settings) -> Effect {
    let (ra, rb) = (runs_of(a), runs_of(b));
    let method = Method::Repetitions {
        a: ra.len(),
        b: rb.len(),
    };
    let usable = !ra.is_empty() && !rb.is_empty() && ra.len().max(rb.len()) >= 2;
    let (true, Some((ma, va, na)), Some((mb, vb, nb))) =
        (usable, rep_logs(&ra, q), rep_logs(&rb, q))
    else {
        return too_few(name, q, None, method);
    };
    let est = mb - ma;
    let (se, df) = match (na, nb) {
        (1, _) => ((vb * (1.0 + 1.0 / nb as f64)).sqrt(), (nb - 1) as f64),
        (_, 1) => ((va * (1.0 + 1.0 / na as f64)).sqrt(), (na - 1) as f64),
        _ => {
            let (sa, sb) = (va / na as f64, vb / nb as f64);
            (
                (sa + sb).sqrt(),
                welch_df(sa, (na - 1) as f64, sb, (nb - 1) as f64),
            )
        }
    };
    effect_from_log(name, q, est, se, t975(df), method, st.min_effect)
}

fn by_blocks(
    a: (&[Block], u64),
    b: (&[Block], u64),
    name: &'static str,
    q: f64,
    st: &Settings,
) -> Option<Effect> {
    let grid = Grid::new(&[a.0, b.0]);
    if grid.len() == 0 {
        return None;
    }
    let da = BlockData::new(a.0, a.1, &grid);
    let db = BlockData::new(b.0, b.1, &grid);
    if da.len() < MIN_BOOT_BLOCKS || db.len() < MIN_BOOT_BLOCKS {
        return None;
    }
    let (ma, mb) = (da.block_length(&grid, q), db.block_length(&grid, q));
    let method = Method::Blocks {
        a: (da.len() / ma, da.block_ns * ma as u64),
        b: (db.len() / mb, db.block_ns * mb as u64),
        resamples: st.resamples,
    };
    let (qa, qb) = (da.quantile(&grid, q), db.quantile(&grid, q));
    let est = qb.max(1.0).ln() - qa.max(1.0).ln();
    let tail = |d: &BlockData| d.total() as f64 * (1.0 - q);
    if tail(&da) < MIN_TAIL || tail(&db) < MIN_TAIL {
        return Some(too_few(name, q, Some(est.exp_m1()), method));
    }
    // One stream per percentile, the same for every comparison.
    let mut rng = Rng::new(st.seed ^ q.to_bits());
    let var = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1).max(1) as f64
    };
    let va = var(&da.bootstrap_log(&grid, q, ma, st.resamples, &mut rng));
    let vb = var(&db.bootstrap_log(&grid, q, mb, st.resamples, &mut rng));
    let df = welch_df(
        va,
        (da.len() / ma - 1) as f64,
        vb,
        (db.len() / mb - 1) as f64,
    );
    Some(effect_from_log(
        name,
        q,
        est,
        (va + vb).sqrt(),
        t975(df),
        method,
        st.min_effect,
    ))
}

fn by_independence(a: &Series, b: &Series, name: &'static str, q: f64, st: &Settings) -> Effect {
    let (pa, pb) = (stat_at(a, q), stat_at(b, q));
    let est = (pa > 0 && pb > 0).then(|| (pb as f64).ln() - (pa as f64).ln());
    let se = |s: &Series| {
        let ci = RankedHistogram::new(s).quantile_ci(q);
        match (ci.lo_ns, ci.hi_ns) {
            (Some(lo), Some(hi)) if lo > 0 && s.stats.count > 0 => {
                Some(((hi as f64).ln() - (lo as f64).ln()) / (2.0 * Z975))
            }
            _ => None,
        }
    };
    match (est, se(a), se(b)) {
        (Some(e), Some(sa), Some(sb)) => effect_from_log(
            name,
            q,
            e,
            (sa * sa + sb * sb).sqrt(),
            Z975,
            Method::Independence,
            st.min_effect,
        ),
        _ => too_few(name, q, est.map(f64::exp_m1), Method::Independence),
    }
}

/// The effect of `b` against the baseline `a` at the `q`-quantile, by the
/// first method that applies (see the module documentation).
pub fn effect(a: &Series, b: &Series, name: &'static str, q: f64, st: &Settings) -> Effect {
    let distribution = |s: &Series| {
        s.stats.has_percentiles() || s.repetitions.iter().any(|r| r.stats.has_percentiles())
    };
    if !distribution(a) || !distribution(b) {
        return Effect {
            call: Call::NoDistribution,
            ..too_few(name, q, None, Method::Independence)
        };
    }
    let reps = |s: &Series| s.repetitions.len();
    if reps(a) >= 2 || reps(b) >= 2 {
        return by_repetitions(a, b, name, q, st);
    }
    let decoded = |s: &Series| {
        s.blocks
            .as_ref()
            .and_then(|h| blocks::decode(h).map(|d| (d, h.block_ns)))
    };
    if let (Some(ba), Some(bb)) = (decoded(a), decoded(b)) {
        if let Some(e) = by_blocks((&ba.0, ba.1), (&bb.0, bb.1), name, q, st) {
            return e;
        }
    }
    by_independence(a, b, name, q, st)
}

/// `+31 %`: an effect as a signed percentage.
pub fn pct(x: f64) -> String {
    let p = x * 100.0;
    // No "-0.0%".
    let p = if p.abs() < 0.05 { 0.0 } else { p };
    if p.abs() < 9.95 {
        format!("{p:+.1}%")
    } else {
        format!("{p:+.0}%")
    }
}

/// `5%`, `2.5%`: a threshold as a plain percentage.
pub fn pct_plain(x: f64) -> String {
    let p = (x * 1000.0).round() / 10.0;
    if p.fract() == 0.0 || p >= 10.0 {
        format!("{p:.0}%")
    } else {
        format!("{p}%")
    }
}

impl Effect {
    /// `p99 +31% [+12%, +55%]`, or `p99.9 ?` without an interval.
    pub fn text(&self) -> String {
        match (self.estimate, self.interval) {
            (Some(e), Some((lo, hi))) => {
                format!("{} {} [{}, {}]", self.name, pct(e), pct(lo), pct(hi))
            }
            (Some(e), None) => format!("{} {} [?]", self.name, pct(e)),
            _ => format!("{} ?", self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::record::SeriesRecorder;
    use rtscope_core::sample::Sample;

    /// A synthetic run: `n` samples every `period_ns`, latency
    /// `base * exp(sigma * x)` where x is AR(1) with coefficient `phi`
    /// (stationary, unit variance), times `scale`.
    fn ar1_series(seed: u64, n: usize, period_ns: u64, phi: f64, sigma: f64, scale: f64) -> Series {
        let mut rng = Rng::new(seed);
        let mut rec = SeriesRecorder::new(0, 4, None);
        let mut x = rng.normal();
        let innov = (1.0 - phi * phi).sqrt();
        for i in 0..n {
            x = phi * x + innov * rng.normal();
            let lat = 20_000.0 * (sigma * x).exp() * scale * (1.0 + 0.3 * rng.unit());
            rec.record(&Sample {
                seq: i as u64,
                t_ns: i as u64 * period_ns,
                latency_ns: lat as i64,
                overruns: 0,
                cpu: 0,
            });
        }
        rec.to_series("s", 0)
    }

    fn without_blocks(s: &Series) -> Series {
        Series {
            blocks: None,
            ..s.clone()
        }
    }

    const QS: [(f64, &str); 2] = [(0.5, "p50"), (0.99, "p99")];

    /// Over `pairs` seeded A/A pairs: how many pairs got any verdict, and
    /// how many percentile intervals missed the true ratio 1.
    fn aa_rates(pairs: u64, st: &Settings, strip: bool, phi: f64) -> (usize, usize) {
        let (mut verdicts, mut misses) = (0, 0);
        for p in 0..pairs {
            let mut a = ar1_series(1000 + 2 * p, 8000, 1_000_000, phi, 0.3, 1.0);
            let mut b = ar1_series(1001 + 2 * p, 8000, 1_000_000, phi, 0.3, 1.0);
            if strip {
                a = without_blocks(&a);
                b = without_blocks(&b);
            }
            let es: Vec<Effect> = QS.iter().map(|(q, n)| effect(&a, &b, n, *q, st)).collect();
            if es
                .iter()
                .any(|e| matches!(e.call, Call::Worse | Call::Better))
            {
                verdicts += 1;
            }
            misses += es
                .iter()
                .filter(|e| e.interval.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0))
                .count();
        }
        (verdicts, misses)
    }

    #[test]
    fn rng_is_deterministic_and_uniform() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let xs: Vec<u64> = (0..5).map(|_| a.next_u64()).collect();
        assert_eq!(xs, (0..5).map(|_| b.next_u64()).collect::<Vec<_>>());
        let mut counts = [0u32; 10];
        for _ in 0..10_000 {
            counts[a.below(10)] += 1;
        }
        assert!(counts.iter().all(|c| (900..1100).contains(c)), "{counts:?}");
        let m: f64 = (0..10_000).map(|_| a.normal()).sum::<f64>() / 10_000.0;
        assert!(m.abs() < 0.05, "{m}");
    }

    #[test]
    fn t_quantiles() {
        assert_eq!(t975(1.0), 12.706);
        assert_eq!(t975(4.7), 2.776);
        assert!((t975(40.0) - 2.021).abs() < 0.002, "{}", t975(40.0));
        assert!((t975(120.0) - 1.980).abs() < 0.002);
        assert!((t975(f64::INFINITY) - 1.96).abs() < 0.001);
    }

    #[test]
    fn the_rule() {
        let d = 0.05;
        let l = |x: f64| x.ln_1p();
        assert_eq!(call(l(0.06), l(0.5), d), Call::Worse);
        assert_eq!(call(l(0.04), l(0.5), d), Call::Unclear);
        assert_eq!(call(l(-0.5), l(-0.06), d), Call::Better);
        // 1/1.05 - 1 = -4.76 %: -4.9 % is outside the zone.
        assert_eq!(call(l(-0.5), l(-0.049), d), Call::Better);
        assert_eq!(call(l(-0.5), l(-0.047), d), Call::Unclear);
        assert_eq!(call(l(-0.04), l(0.04), d), Call::Same);
        assert_eq!(call(l(-0.1), l(0.1), d), Call::Unclear);
        // No zone: any interval that excludes 0.
        assert_eq!(call(l(0.001), l(0.002), 0.0), Call::Worse);
    }

    #[test]
    fn politis_white_grows_with_dependence() {
        let mut rng = Rng::new(3);
        let iid: Vec<f64> = (0..400).map(|_| rng.normal()).collect();
        let mut x = 0.0;
        let ar: Vec<f64> = (0..400)
            .map(|_| {
                x = 0.8 * x + rng.normal();
                x
            })
            .collect();
        let (bi, ba) = (politis_white(&iid), politis_white(&ar));
        assert!(bi < 2.0, "iid: {bi}");
        assert!(ba > 4.0, "AR(1) 0.8: {ba}");
    }

    #[test]
    fn quantile_of_blocks_matches_the_histogram() {
        let s = ar1_series(5, 20_000, 500_000, 0.0, 0.3, 1.0);
        let b = blocks::decode(s.blocks.as_ref().unwrap()).unwrap();
        let grid = Grid::new(&[&b]);
        let d = BlockData::new(&b, 100_000_000, &grid);
        assert_eq!(d.total(), 20_000);
        assert_eq!(d.len(), 100);
        for q in [0.5, 0.99] {
            let v = d.quantile(&grid, q);
            let h = stat_at(&s, q) as f64;
            assert!((v / h - 1.0).abs() < 0.02, "q={q}: {v} vs {h}");
        }
    }

    #[test]
    fn a_real_shift_is_found_with_its_size() {
        let st = Settings::default();
        let a = ar1_series(11, 10_000, 1_000_000, 0.99, 0.3, 1.0);
        let b = ar1_series(12, 10_000, 1_000_000, 0.99, 0.3, 1.3);
        let e = effect(&a, &b, "p50", 0.5, &st);
        assert!(matches!(e.method, Method::Blocks { .. }), "{e:?}");
        assert_eq!(e.call, Call::Worse, "{}", e.text());
        let (lo, hi) = e.interval.unwrap();
        assert!(lo < 0.3 && 0.3 < hi, "{}", e.text());
        let back = effect(&b, &a, "p50", 0.5, &st);
        assert_eq!(back.call, Call::Better, "{}", back.text());
        // Deterministic: the same inputs give the same interval.
        assert_eq!(effect(&a, &b, "p50", 0.5, &st), e);
    }

    #[test]
    fn same_within_the_zone_and_advice_when_thin() {
        let st = Settings::default();
        // Long independent runs: a tight interval around 0.
        let a = ar1_series(21, 40_000, 250_000, 0.0, 0.2, 1.0);
        let b = ar1_series(22, 40_000, 250_000, 0.0, 0.2, 1.0);
        let e = effect(&a, &b, "p50", 0.5, &st);
        assert_eq!(e.call, Call::Same, "{}", e.text());
        assert!(e.advice.is_none());
        // Short, strongly dependent runs at p99: unclear, with advice.
        let a = ar1_series(23, 3000, 1_000_000, 0.995, 0.5, 1.0);
        let b = ar1_series(24, 3000, 1_000_000, 0.995, 0.5, 1.0);
        let e = effect(&a, &b, "p99", 0.99, &st);
        assert_eq!(e.call, Call::Unclear, "{}", e.text());
        let adv = e.advice.unwrap();
        assert!(adv.factor > 1.0 && adv.difference >= 0.1, "{adv:?}");
    }

    #[test]
    fn documents_without_blocks_assume_independence() {
        let st = Settings::default();
        let a = without_blocks(&ar1_series(31, 10_000, 1_000_000, 0.0, 0.3, 1.0));
        let b = without_blocks(&ar1_series(32, 10_000, 1_000_000, 0.0, 0.3, 2.0));
        let e = effect(&a, &b, "p50", 0.5, &st);
        assert_eq!(e.method, Method::Independence);
        assert_eq!(e.method.describe(), "independence assumed");
        assert_eq!(e.call, Call::Worse, "{}", e.text());
        // p99.9 of 10 000 samples: no upper bound, too few.
        let few = effect(&a, &b, "p99.99", 0.9999, &st);
        assert_eq!(few.call, Call::TooFewSamples);
    }

    #[test]
    fn empty_repetitions_are_left_out() {
        let st = Settings::default();
        let rep = |seed: u64| without_blocks(&ar1_series(seed, 4000, 1_000_000, 0.0, 0.2, 1.0));
        let mut reps: Vec<Series> = (0..4).map(rep).collect();
        reps.push(Series::default());
        let a = Series {
            repetitions: reps.clone(),
            ..Default::default()
        };
        let e = effect(&a, &a, "p50", 0.5, &st);
        assert_eq!(e.method, Method::Repetitions { a: 4, b: 4 });
        assert_ne!(e.call, Call::TooFewSamples);
    }

    #[test]
    fn repetitions_use_the_spread_between_runs() {
        let st = Settings::default();
        // Each repetition drawn around its own level (run-to-run spread of
        // about 10 %): a within-run method would call differences.
        let rep = |seed: u64, scale: f64| {
            let mut r = Rng::new(seed);
            let level = (0.1 * r.normal()).exp();
            without_blocks(&ar1_series(seed, 4000, 1_000_000, 0.0, 0.2, level * scale))
        };
        let pooled = |reps: Vec<Series>| Series {
            repetitions: reps,
            ..Default::default()
        };
        let a = pooled((0..6).map(|i| rep(100 + i, 1.0)).collect());
        let b = pooled((0..6).map(|i| rep(200 + i, 1.0)).collect());
        let e = effect(&a, &b, "p50", 0.5, &st);
        assert_eq!(e.method, Method::Repetitions { a: 6, b: 6 });
        assert!(matches!(e.call, Call::Unclear | Call::Same), "{}", e.text());
        let c = pooled((0..6).map(|i| rep(300 + i, 1.6)).collect());
        let e = effect(&a, &c, "p50", 0.5, &st);
        assert_eq!(e.call, Call::Worse, "{}", e.text());
        // One side a single run: the repetitions' spread stands for both.
        let single = rep(400, 1.0);
        let e = effect(&a, &single, "p50", 0.5, &st);
        assert_eq!(e.method, Method::Repetitions { a: 6, b: 1 });
        assert!(e.method.describe().contains("assumed for both"));
    }

    /// Calibration on data with known autocorrelation: AR(1) latencies with a
    /// correlation time of 100 ms (phi = 0.99 per 1 ms sample), 8 s runs.
    #[test]
    fn calibration_aa_false_verdicts_coverage_and_detection() {
        let pairs = 60;
        let st = Settings {
            resamples: 400,
            ..Settings::default()
        };
        // With the 5 % threshold: at most 5 % of A/A pairs get a verdict.
        let (v, _) = aa_rates(pairs, &st, false, 0.99);
        assert!(
            v * 20 <= pairs as usize,
            "{v} of {pairs} A/A pairs got a verdict"
        );
        // Coverage itself (no threshold): the block bootstrap misses the
        // true ratio in about 5 % of intervals ...
        let st0 = Settings {
            min_effect: 0.0,
            ..st
        };
        let (_, miss_blocks) = aa_rates(pairs, &st0, false, 0.99);
        let total = pairs as usize * QS.len();
        assert!(
            miss_blocks * 100 <= total * 8,
            "block bootstrap missed {miss_blocks} of {total}"
        );
        // ... where assuming independence misses far more often on the same data.
        let (v_ind, miss_ind) = aa_rates(pairs, &st, true, 0.99);
        assert!(
            miss_ind * 100 >= total * 50,
            "independence missed only {miss_ind} of {total}"
        );
        assert!(
            v_ind * 100 >= pairs as usize * 30,
            "independence: {v_ind} verdicts"
        );
        // A real +40 % shift on the same kind of data is still detected.
        let found = (0..20u64)
            .filter(|p| {
                let a = ar1_series(5000 + 2 * p, 8000, 1_000_000, 0.99, 0.3, 1.0);
                let b = ar1_series(5001 + 2 * p, 8000, 1_000_000, 0.99, 0.3, 1.4);
                effect(&a, &b, "p50", 0.5, &st).call == Call::Worse
            })
            .count();
        assert!(
            found >= 16,
            "a +40 % shift detected in only {found} of 20 pairs"
        );
    }
}
