//! Tail verdicts of `rtscope compare`: how often each run went beyond a
//! threshold, per hour of measuring, and whether a run is worse or better
//! in the tail than the baseline.
//!
//! Percentile verdicts ([`super::verdict`]) need samples beyond the
//! percentile on both sides (20 for p99.9: 20 000 samples a run); the
//! maximum gets none. A rate of rare events does not: a run's exceedances of
//! a fixed threshold are counted, and counts are compared as rates.
//!
//! - **Threshold**: `--tail-threshold DURATION`, or the baseline's p99.9.
//!   An exceedance is a value above it (at the histogram's resolution,
//!   0.1 %); for a periodic series, a value over the intended periods, so
//!   that a missed period counts at its lateness as in the other figures.
//! - **Rate**: exceedances / the run's measuring time (`duration_ns`; a
//!   pooled run: the sum of its repetitions'), per hour, with the exact
//!   (Garwood) 95 % Poisson interval: `[χ²(α/2; 2k)/2, χ²(1−α/2; 2k+2)/2]`,
//!   computed through the regularized incomplete gamma function.
//! - **Verdict**: the exact conditional test of the rate ratio: given
//!   `n = kA + kB` exceedances, `kB` is binomial with `p = tB·rB / (tA·rA +
//!   tB·rB)`; the Clopper–Pearson interval of `p` becomes the 95 % interval
//!   of `rB / rA`. **Worse in the tail** when the whole interval lies above
//!   `1 + δ` (`--min-effect`), **better** when it lies below `1 / (1 + δ)`,
//!   **can't tell** otherwise.
//! - **Repeated runs** (`--repeat`, pooled): exceedances cluster in time,
//!   so the Poisson interval is too narrow when they do. Where both runs
//!   have repetitions and per-block histograms, a circular block bootstrap
//!   over their 100 ms blocks (block length by Politis & White, at least 8
//!   bootstrap blocks) gives a second interval of the ratio, and a call is
//!   made only when both intervals make it.
//! - **Episodes clustered over seconds** (a neighbour on a shared machine
//!   busy for a second or two): the episode counts vary more than Poisson
//!   counts. Their dispersion over super-blocks of about 1 s
//!   ([`rtscope_core::record::dispersion`]), widened for its degrees of
//!   freedom ([`counts_divisor`]), divides both counts before the exact
//!   interval is taken (quasi-Poisson), and the verdict says so.

use std::fmt::Write;

use rtscope_core::record::dispersion::Dispersion;
use rtscope_core::record::episodes::{self, Episodes};
use rtscope_core::result::Series;
use rtscope_core::units::format_ns;

use super::esc;
pub use super::tail_dispersion::counts_divisor;
use super::tail_dispersion::{dispersion_of, method_text};
use super::verdict::{politis_white, Rng, Settings, MIN_BOOT_BLOCKS, MIN_TAIL};
use crate::output::printable;

/// Two-sided 95 %.
const ALPHA: f64 = 0.05;

// ---------------------------------------------------------------------------
// Special functions.

/// ln Γ(x), x > 0 (Lanczos, g = 7, n = 9: about 15 significant digits).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized lower incomplete gamma function P(a, x), a > 0, x ≥ 0
/// (series below a + 1, Lentz's continued fraction above).
pub fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let lead = a * x.ln() - x - ln_gamma(a);
    if x < a + 1.0 {
        let (mut ap, mut sum, mut del) = (a, 1.0 / a, 1.0 / a);
        for _ in 0..100_000 {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * 1e-16 {
                break;
            }
        }
        (sum.ln() + lead).exp().min(1.0)
    } else {
        1.0 - (lead.exp() * gamma_cf(a, x)).clamp(0.0, 1.0)
    }
}

/// The smallest magnitude a continued fraction's terms are let down to.
const TINY: f64 = 1e-300;

/// Lentz's guard: a term that would be (nearly) zero becomes [`TINY`].
fn guard(v: f64) -> f64 {
    if v.abs() < TINY {
        TINY
    } else {
        v
    }
}

/// The continued fraction of Q(a, x) without its leading factor.
fn gamma_cf(a: f64, x: f64) -> f64 {
    let mut b = x + 1.0 - a;
    let mut c = 1.0 / TINY;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..100_000 {
        let an = -(i as f64) * (i as f64 - a);
        b += 2.0;
        d = an * d + b;
        d = guard(d);
        c = b + an / c;
        c = guard(c);
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function I_x(a, b), a, b > 0, 0 ≤ x ≤ 1.
pub fn beta_inc(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let lead =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        (lead * beta_cf(a, b, x) / a).clamp(0.0, 1.0)
    } else {
        (1.0 - lead * beta_cf(b, a, 1.0 - x) / b).clamp(0.0, 1.0)
    }
}

/// The continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    d = guard(d);
    d = 1.0 / d;
    let mut h = d;
    for m in 1..100_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = guard(d);
        c = 1.0 + aa / c;
        c = guard(c);
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = guard(d);
        c = 1.0 + aa / c;
        c = guard(c);
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The `x` in `[lo, hi]` where the increasing function `f` reaches `target`
/// (bisection, 200 halvings: to the resolution of an f64).
fn solve_increasing(f: impl Fn(f64) -> f64, target: f64, mut lo: f64, mut hi: f64) -> f64 {
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The exact (Garwood) two-sided `1 − alpha` interval of a Poisson mean
/// from `k` events: the λ where `P(X ≥ k; λ) = alpha/2` and where
/// `P(X ≤ k; λ) = alpha/2` (0 below when `k = 0`).
pub fn poisson_interval(k: u64, alpha: f64) -> (f64, f64) {
    let kf = k as f64;
    let top = kf + 20.0 * (kf + 1.0).sqrt() + 20.0;
    let lo = if k == 0 {
        0.0
    } else {
        // P(X >= k; λ) = P(k, λ), increasing in λ.
        solve_increasing(|l| gamma_p(kf, l), alpha / 2.0, 0.0, top)
    };
    // P(X <= k; λ) = 1 − P(k + 1, λ): decreasing; so P(k + 1, λ) = 1 − alpha/2.
    let hi = solve_increasing(|l| gamma_p(kf + 1.0, l), 1.0 - alpha / 2.0, 0.0, top);
    (lo, hi)
}

/// The exact (Clopper–Pearson) two-sided `1 − alpha` interval of a binomial
/// proportion from `x` successes in `n` trials.
#[cfg(test)]
pub fn binomial_interval(x: u64, n: u64, alpha: f64) -> (f64, f64) {
    assert!(x <= n && n > 0, "binomial_interval({x}, {n})");
    binomial_interval_of(x as f64, n as f64, alpha)
}

/// [`binomial_interval`] of real "counts" `0 <= x <= n`, `n > 0` (the beta
/// quantiles it is made of are defined for them): effective counts.
fn binomial_interval_of(xf: f64, nf: f64, alpha: f64) -> (f64, f64) {
    let lo = if xf <= 0.0 {
        0.0
    } else {
        // P(X >= x; p) = I_p(x, n − x + 1), increasing in p.
        solve_increasing(|p| beta_inc(xf, nf - xf + 1.0, p), alpha / 2.0, 0.0, 1.0)
    };
    let hi = if xf >= nf {
        1.0
    } else {
        // P(X <= x; p) = 1 − I_p(x + 1, n − x) = alpha/2.
        solve_increasing(
            |p| beta_inc(xf + 1.0, nf - xf, p),
            1.0 - alpha / 2.0,
            0.0,
            1.0,
        )
    };
    (lo, hi)
}

/// The exact conditional 95 % interval of the rate ratio `rB / rA` from
/// `ka` events in exposure `ta` and `kb` in `tb`; `None` without events.
#[cfg(test)]
pub fn rate_ratio_interval(ka: u64, ta: f64, kb: u64, tb: f64) -> Option<(f64, f64)> {
    quasi_rate_ratio_interval(ka, ta, kb, tb, 1.0)
}

/// The conditional 95 % interval of `rB / rA` when each count's variance is
/// `phi` (≥ 1) times its mean: the exact interval of the effective counts
/// `ka / phi` and `kb / phi` (quasi-Poisson); `phi = 1` is
/// [`rate_ratio_interval`].
pub fn quasi_rate_ratio_interval(
    ka: u64,
    ta: f64,
    kb: u64,
    tb: f64,
    phi: f64,
) -> Option<(f64, f64)> {
    let n = ka + kb;
    if n == 0 || ta <= 0.0 || tb <= 0.0 {
        return None;
    }
    let phi = phi.max(1.0);
    let (pl, pu) = binomial_interval_of(kb as f64 / phi, n as f64 / phi, ALPHA);
    let odds = |p: f64| {
        if p >= 1.0 {
            f64::INFINITY
        } else {
            p / (1.0 - p)
        }
    };
    Some((odds(pl) * ta / tb, odds(pu) * ta / tb))
}

// ---------------------------------------------------------------------------
// The block bootstrap of a rate ratio.

/// The block length (in blocks) for the circular bootstrap of `x`:
/// Politis & White's, at least 1, with at least [`MIN_BOOT_BLOCKS`] blocks.
pub fn boot_block_length(x: &[u64]) -> usize {
    let f: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let cap = (x.len() / MIN_BOOT_BLOCKS).max(1);
    (politis_white(&f).round() as usize).clamp(1, cap)
}

/// One circular-block-bootstrap resample of the sum of `x` (blocks of
/// `len`, as many as fit the series' length, whole).
fn resample_sum(x: &[u64], len: usize, rng: &mut Rng) -> (u64, usize) {
    let n = x.len();
    let draws = (n / len).max(1);
    let mut sum = 0;
    for _ in 0..draws {
        let start = rng.below(n);
        for j in 0..len {
            sum += x[(start + j) % n];
        }
    }
    (sum, draws * len)
}

/// The 95 % percentile interval of `rB / rA` by the circular block
/// bootstrap of both runs' per-block exceedances (`resamples` each);
/// `None` with fewer than [`MIN_BOOT_BLOCKS`] blocks on a side.
pub fn bootstrap_ratio(a: &[u64], b: &[u64], resamples: usize, seed: u64) -> Option<BootInterval> {
    if a.len() < MIN_BOOT_BLOCKS || b.len() < MIN_BOOT_BLOCKS || resamples < 40 {
        return None;
    }
    let (la, lb) = (boot_block_length(a), boot_block_length(b));
    let mut rng = Rng::new(seed);
    let mut ratios: Vec<f64> = (0..resamples)
        .map(|_| {
            let (sa, na) = resample_sum(a, la, &mut rng);
            let (sb, nb) = resample_sum(b, lb, &mut rng);
            // Half an event added to each side (Haldane): a side without
            // events in the data gives no degenerate interval (0 or ∞ in
            // every resample) that would agree with any exact call.
            (sb as f64 + 0.5) / nb as f64 / ((sa as f64 + 0.5) / na as f64)
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((q * resamples as f64) as usize).min(resamples - 1)];
    Some(BootInterval {
        lo: at(ALPHA / 2.0),
        hi: at(1.0 - ALPHA / 2.0),
        blocks: (a.len() / la, b.len() / lb),
        block_len: (la, lb),
    })
}

/// A block-bootstrap interval of the rate ratio.
#[derive(Debug, Clone, PartialEq)]
pub struct BootInterval {
    pub lo: f64,
    pub hi: f64,
    /// Bootstrap blocks per run (baseline, run).
    pub blocks: (usize, usize),
    /// Their length in recorded blocks.
    pub block_len: (usize, usize),
}

// ---------------------------------------------------------------------------
// The comparison.

/// A tail call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailCall {
    Worse,
    Better,
    CantTell,
}

/// The call of a ratio interval under the practical-effect threshold δ.
pub fn call(lo: f64, hi: f64, delta: f64) -> TailCall {
    if lo > 1.0 + delta {
        TailCall::Worse
    } else if hi < 1.0 / (1.0 + delta) {
        TailCall::Better
    } else {
        TailCall::CantTell
    }
}

/// One run's exceedances.
#[derive(Debug, Clone, PartialEq)]
pub struct TailRun {
    pub name: String,
    /// Values above the threshold.
    pub exceedances: u64,
    /// Measuring time, hours (0: not known, an import without its time).
    pub hours: f64,
    /// Values in all (samples, or intended periods).
    pub count: u64,
    /// Exact 95 % interval of the rate of values, per hour (as if they were
    /// independent; shown for the values, never the verdict's basis when
    /// there are episodes).
    pub interval: (f64, f64),
    /// The episodes (blocks with a value above the threshold), where every
    /// compared run has per-block histograms.
    pub episodes: Option<RunEpisodes>,
}

impl TailRun {
    /// Exceedances per hour.
    pub fn rate(&self) -> f64 {
        self.exceedances as f64 / self.hours
    }
}

/// One run's episodes.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEpisodes {
    /// Blocks with at least one value above the threshold.
    pub count: u64,
    /// Blocks with samples.
    pub blocks: usize,
    /// Their length, ns.
    pub block_ns: u64,
    /// Exact (Garwood) 95 % interval of the episode rate, per hour.
    pub interval: (f64, f64),
}

impl RunEpisodes {
    /// The time the blocks cover, hours.
    pub fn hours(&self) -> f64 {
        self.blocks as f64 * self.block_ns as f64 / 3.6e12
    }

    /// Episodes per hour.
    pub fn rate(&self) -> f64 {
        self.count as f64 / self.hours()
    }
}

/// What a tail verdict counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// Episodes: blocks with a value above the threshold (every run has
    /// per-block histograms).
    Episodes,
    /// The values themselves, as if independent (documents without blocks:
    /// imports, older files): too narrow where exceedances come in bursts.
    Values,
}

/// One run against the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct TailVerdict {
    /// What was counted.
    pub basis: Basis,
    /// `rB / rA` of what was counted: `None` when the baseline had none.
    pub ratio: Option<f64>,
    /// The conditional interval of the ratio (`None`: nothing counted, or a
    /// run without measuring time): exact, or on the effective counts when
    /// the episodes are over-dispersed (`dispersion`).
    pub exact: Option<(f64, f64)>,
    /// The dispersion of both runs' episodes over super-blocks of about a
    /// second (`None`: values, or too few super-blocks to estimate it).
    pub dispersion: Option<Dispersion>,
    /// What the counts were divided by ([`counts_divisor`]; 1: exact).
    pub phi: f64,
    /// The block-bootstrap interval of the episode rate ratio.
    pub boot: Option<BootInterval>,
    pub call: TailCall,
    /// Why there is no interval, when a run has no measuring time: its name.
    pub no_time: Option<String>,
}

/// How much data a p99.9 verdict needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Need {
    /// Values each run (each repetition, with repetitions) needs.
    pub per_run: u64,
    /// Whether that is per repetition.
    pub per_repetition: bool,
    /// The fewest values a run (repetition) here has.
    pub have: u64,
    /// Seconds a run needs at the baseline's rate of values.
    pub secs: Option<f64>,
}

/// The tail comparison of one matched series.
#[derive(Debug, Clone, PartialEq)]
pub struct TailComparison {
    pub threshold_ns: u64,
    /// Whether the threshold is the baseline's p99.9 (not given).
    pub from_baseline: bool,
    pub runs: Vec<TailRun>,
    /// One per run after the baseline.
    pub verdicts: Vec<TailVerdict>,
    pub need: Need,
}

/// Values of `s` above `threshold_ns` (histogram buckets starting above it).
pub fn exceedances(s: &Series, threshold_ns: u64) -> u64 {
    s.histogram
        .buckets
        .iter()
        .filter(|b| b[0] > threshold_ns)
        .map(|b| b[1])
        .sum()
}

/// What a p99.9 verdict needs, from the baseline `a`: [`MIN_TAIL`] values
/// beyond it in each run, or half that in each repetition when runs are
/// repeated (as [`super::verdict`] asks).
pub fn need_p999(series: &[Series], durations_ns: &[u64]) -> Need {
    let q = 0.999;
    let per_repetition = series.iter().any(|s| s.repetitions.len() >= 2);
    let beyond = if per_repetition {
        MIN_TAIL / 2.0
    } else {
        MIN_TAIL
    };
    let per_run = (beyond / (1.0 - q)).round() as u64;
    let units = |s: &Series| -> Vec<u64> {
        if s.repetitions.is_empty() {
            vec![s.stats.count]
        } else {
            s.repetitions.iter().map(|r| r.stats.count).collect()
        }
    };
    let have = series.iter().flat_map(units).min().unwrap_or(0);
    let a = &series[0];
    let secs = (durations_ns[0] > 0 && a.stats.count > 0).then(|| {
        let per_s = a.stats.count as f64 / (durations_ns[0] as f64 / 1e9);
        per_run as f64 / per_s
    });
    Need {
        per_run,
        per_repetition,
        have,
        secs,
    }
}

/// The Garwood interval of `k` events in `hours`, per hour (unbounded
/// without measuring time).
fn per_hour(k: u64, hours: f64) -> (f64, f64) {
    if hours > 0.0 {
        let (lo, hi) = poisson_interval(k, ALPHA);
        (lo / hours, hi / hours)
    } else {
        (0.0, f64::INFINITY)
    }
}

/// Compares the tails of `series` (the matched series as compared, the
/// first the baseline) measured over `durations_ns`. `None` when there is
/// no threshold (none given, and the baseline has no p99.9).
///
/// Where every run has per-block histograms the verdict counts episodes
/// (blocks with a value above the threshold, at the runs' common block
/// length: [`rtscope_core::record::episodes`]): the exact conditional test
/// of their rates, and a circular block bootstrap of the blocks' episode
/// indicators; a call is made only when both make it. Without blocks the
/// values are counted as if independent, and the verdict says so.
pub fn compare(
    names: &[String],
    series: &[Series],
    durations_ns: &[u64],
    st: &Settings,
) -> Option<TailComparison> {
    let a = series.first()?;
    let (threshold_ns, from_baseline) = match st.tail_threshold_ns {
        Some(t) => (t, false),
        None if a.stats.has_percentiles() => (a.stats.p99_9_ns, true),
        None => return None,
    };
    let common = episodes::common_block_ns(series.iter().map(|s| s.blocks.as_ref()));
    let eps: Option<Vec<Episodes>> = common.and_then(|len| {
        series
            .iter()
            .map(|s| episodes::of(s.blocks.as_ref()?, threshold_ns, len))
            .collect()
    });
    let runs: Vec<TailRun> = names
        .iter()
        .zip(series)
        .zip(durations_ns)
        .enumerate()
        .map(|(i, ((n, s), &d))| {
            let k = exceedances(s, threshold_ns);
            let hours = d as f64 / 3.6e12;
            let episodes = eps.as_ref().map(|e| {
                let e = &e[i];
                let r = RunEpisodes {
                    count: e.count(),
                    blocks: e.per_block.len(),
                    block_ns: e.block_ns,
                    interval: (0.0, 0.0),
                };
                RunEpisodes {
                    interval: per_hour(r.count, r.hours()),
                    ..r
                }
            });
            TailRun {
                name: n.clone(),
                exceedances: k,
                hours,
                count: s.stats.count,
                interval: per_hour(k, hours),
                episodes,
            }
        })
        .collect();
    let verdicts = (1..series.len())
        .map(|i| {
            let (ra, rb) = (&runs[0], &runs[i]);
            let no_time = [ra, rb]
                .iter()
                .find(|r| r.hours <= 0.0)
                .map(|r| r.name.clone());
            let (basis, ka, ta, kb, tb) = match (&ra.episodes, &rb.episodes) {
                (Some(x), Some(y)) if no_time.is_none() => {
                    (Basis::Episodes, x.count, x.hours(), y.count, y.hours())
                }
                _ => (
                    Basis::Values,
                    ra.exceedances,
                    ra.hours,
                    rb.exceedances,
                    rb.hours,
                ),
            };
            let disp = match (&eps, basis) {
                (Some(e), Basis::Episodes) => {
                    dispersion_of([&series[0], &series[i]], [&e[0], &e[i]], threshold_ns)
                }
                _ => None,
            };
            let phi = disp.map_or(1.0, |d| counts_divisor(&d));
            let exact = quasi_rate_ratio_interval(ka, ta, kb, tb, phi);
            let boot = match (&eps, basis) {
                (Some(e), Basis::Episodes) => bootstrap_ratio(
                    &e[0].indicators(),
                    &e[i].indicators(),
                    st.resamples,
                    st.seed ^ threshold_ns ^ i as u64,
                ),
                _ => None,
            };
            let c_exact = exact.map_or(TailCall::CantTell, |(lo, hi)| call(lo, hi, st.min_effect));
            let c = match &boot {
                Some(bi) if call(bi.lo, bi.hi, st.min_effect) != c_exact => TailCall::CantTell,
                _ => c_exact,
            };
            TailVerdict {
                basis,
                ratio: (ka > 0 && ta > 0.0 && tb > 0.0)
                    .then(|| (kb as f64 / tb) / (ka as f64 / ta)),
                exact,
                dispersion: disp,
                phi,
                boot,
                call: c,
                no_time,
            }
        })
        .collect();
    Some(TailComparison {
        threshold_ns,
        from_baseline,
        runs,
        verdicts,
        need: need_p999(series, durations_ns),
    })
}

// ---------------------------------------------------------------------------
// Presentation.

/// A rate per hour with three significant digits: `3600/h`, `0.52/h`.
pub fn rate_text(r: f64) -> String {
    if !r.is_finite() {
        return "∞".into();
    }
    if r == 0.0 {
        return "0".into();
    }
    let digits = (2 - r.abs().log10().floor() as i32).max(0) as usize;
    format!("{r:.digits$}")
}

/// A ratio: `4.0x`, `0.25x`, `∞`.
pub fn ratio_text(r: f64) -> String {
    if !r.is_finite() {
        "∞".into()
    } else if r == 0.0 {
        "0x".into()
    } else if r >= 10.0 {
        format!("{r:.0}x")
    } else if r >= 0.1 {
        format!("{r:.2}x")
    } else {
        format!("{r:.3}x")
    }
}

/// The measuring time: `3.0s`, `25min`, `2.5h`.
fn hours_text(h: f64) -> String {
    let s = h * 3600.0;
    if s < 120.0 {
        format!("{s:.1}s")
    } else if s < 7200.0 {
        format!("{:.0}min", s / 60.0)
    } else {
        format!("{h:.1}h")
    }
}

/// The threshold as said: `1.247ms (the baseline's p99.9)`.
pub fn threshold_text(t: &TailComparison) -> String {
    if t.from_baseline {
        format!("{} (the baseline's p99.9)", format_ns(t.threshold_ns))
    } else {
        format!("{} (--tail-threshold)", format_ns(t.threshold_ns))
    }
}

/// One run's line: `b: 12 above in 3.0s = 14400/h [7441, 25155]`, with its
/// episodes where it has them (`; 3 episodes in 30 blocks = 3600/h [742,
/// 10521]`), or `b: 9 above (no measuring time recorded)`.
pub fn run_line(r: &TailRun) -> String {
    if r.hours <= 0.0 {
        return format!(
            "{}: {} above (no measuring time recorded: no rate)",
            r.name, r.exceedances
        );
    }
    let mut s = format!(
        "{}: {} above in {} = {}/h",
        r.name,
        r.exceedances,
        hours_text(r.hours),
        rate_text(r.rate()),
    );
    match &r.episodes {
        Some(e) => {
            let _ = write!(
                s,
                "; {} episodes in {} blocks = {}/h [{}, {}]",
                e.count,
                e.blocks,
                rate_text(e.rate()),
                rate_text(e.interval.0),
                rate_text(e.interval.1)
            );
        }
        None => {
            let _ = write!(
                s,
                " [{}, {}]",
                rate_text(r.interval.0),
                rate_text(r.interval.1)
            );
        }
    }
    s
}

/// The verdict's sentence for run `b` against the baseline `a`.
pub fn verdict_line(v: &TailVerdict, b: &str, a: &str) -> String {
    let what = match v.call {
        TailCall::Worse => format!("{b} is worse in the tail than {a}"),
        TailCall::Better => format!("{b} is better in the tail than {a}"),
        TailCall::CantTell => format!("can't tell {b} from {a} in the tail"),
    };
    if let Some(n) = &v.no_time {
        return format!(
            "{what}: {n} has no measuring time (an import without the run's time), so no rate"
        );
    }
    let Some((lo, hi)) = v.exact else {
        return match v.basis {
            Basis::Values => format!("{what}: neither run went above the threshold"),
            Basis::Episodes => {
                format!("{what}: neither run went above the threshold (at the blocks' resolution)")
            }
        };
    };
    let (what_ratio, method) = match (v.basis, v.dispersion.filter(|_| v.phi > 1.0)) {
        (Basis::Episodes, Some(d)) => ("episode rate ratio", method_text(&d, v.phi)),
        (Basis::Episodes, None) => ("episode rate ratio", "exact conditional test".into()),
        (Basis::Values, _) => (
            "rate ratio",
            "exact conditional test, values taken as independent: too narrow where they come in bursts"
                .into(),
        ),
    };
    let mut s = format!(
        "{what}: {what_ratio} {} [{}, {}] ({method})",
        v.ratio.map_or("∞".into(), ratio_text),
        ratio_text(lo),
        ratio_text(hi)
    );
    if let Some(bi) = &v.boot {
        let _ = write!(
            s,
            "; block bootstrap [{}, {}] ({} and {} blocks)",
            ratio_text(bi.lo),
            ratio_text(bi.hi),
            bi.blocks.0,
            bi.blocks.1
        );
    }
    s
}

/// How long a run would need to judge p99.9.
pub fn need_line(n: &Need) -> String {
    let unit = if n.per_repetition {
        "repetition"
    } else {
        "run"
    };
    let time = n
        .secs
        .map(|s| format!(", about {} at the baseline's rate", hours_text(s / 3600.0)))
        .unwrap_or_default();
    let enough = if n.have >= n.per_run {
        "enough"
    } else {
        "too few"
    };
    format!(
        "p99.9 needs {} values beyond it in each {unit}: {} values{time}; the shortest here has {} ({enough})",
        if n.per_repetition {
            MIN_TAIL / 2.0
        } else {
            MIN_TAIL
        },
        n.per_run,
        n.have
    )
}

/// What the rates' intervals and the verdicts count.
pub fn basis_text(t: &TailComparison) -> String {
    match t.runs.first().and_then(|r| r.episodes.as_ref()) {
        Some(e) => format!(
            "verdicts on episodes: {} blocks with a value above, as exceedances come in bursts; 95% exact Poisson intervals",
            format_ns(e.block_ns)
        ),
        None => "95% exact Poisson interval; no per-block histograms, so values are taken as independent".into(),
    }
}

/// The terminal lines of a tail comparison (after a series' verdicts).
pub fn text(t: &TailComparison, names: &[String]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "tail: values above {}, per hour of measuring ({}):",
        threshold_text(t),
        basis_text(t)
    );
    for r in &t.runs {
        let _ = writeln!(o, "  {}", printable(&run_line(r)));
    }
    for (i, v) in t.verdicts.iter().enumerate() {
        let _ = writeln!(
            o,
            "tail verdict: {}",
            printable(&verdict_line(v, &names[i + 1], &names[0]))
        );
    }
    let _ = writeln!(o, "  {}", need_line(&t.need));
    o
}

/// The HTML section of a comparison's tail verdicts (one table per series):
/// each series' label with its tails, and the runs' names, baseline first
/// ([`Comparison::tails`](super::compare::Comparison::tails)).
pub fn html_section(tails: &[(&str, &TailComparison)], names: &[String]) -> String {
    let mut b = String::new();
    if tails.is_empty() {
        return b;
    }
    b.push_str("<section class=\"tail\">\n<h3>Tail verdicts</h3>\n");
    b.push_str(
        "<p class=\"sub\">Values above a threshold per hour of measuring. Exceedances come in \
         bursts, so the verdicts count episodes (time blocks with a value above the threshold): \
         the exact conditional test of their rate ratio and a block bootstrap, a call only where \
         both make it; where episodes cluster over seconds, their counts are divided by their \
         dispersion first. Runs without per-block histograms are compared on the values, taken \
         as independent (too narrow).</p>\n",
    );
    for (label, t) in tails {
        let _ = writeln!(
            b,
            "<h4>{}: above {}</h4>",
            esc(label),
            esc(&threshold_text(t))
        );
        b.push_str("<table><thead><tr><th>run</th><th>above</th><th>measured</th><th>per hour</th><th>episodes</th><th>episodes per hour, 95 % interval</th></tr></thead><tbody>\n");
        for r in &t.runs {
            let (rate, eps, eps_rate) = if r.hours <= 0.0 {
                ("unknown".to_string(), "-".to_string(), "-".to_string())
            } else {
                (
                    format!("{}/h", rate_text(r.rate())),
                    r.episodes.as_ref().map_or("-".into(), |e| {
                        format!(
                            "{} in {} blocks of {}",
                            e.count,
                            e.blocks,
                            format_ns(e.block_ns)
                        )
                    }),
                    r.episodes.as_ref().map_or("-".into(), |e| {
                        format!(
                            "{}/h ({} – {}/h)",
                            rate_text(e.rate()),
                            rate_text(e.interval.0),
                            rate_text(e.interval.1)
                        )
                    }),
                )
            };
            let _ = writeln!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&r.name),
                r.exceedances,
                esc(&if r.hours > 0.0 {
                    hours_text(r.hours)
                } else {
                    "unknown".into()
                }),
                esc(&rate),
                esc(&eps),
                esc(&eps_rate)
            );
        }
        b.push_str("</tbody></table>\n");
        for (i, v) in t.verdicts.iter().enumerate() {
            let class = match v.call {
                TailCall::Worse => "worse",
                TailCall::Better => "better",
                TailCall::CantTell => "same",
            };
            let _ = writeln!(
                b,
                "<p class=\"verdict {class}\">{}</p>",
                esc(&verdict_line(v, &names[i + 1], &names[0]))
            );
        }
        let _ = writeln!(b, "<p class=\"sub\">{}</p>", esc(&need_line(&t.need)));
    }
    b.push_str("</section>\n");
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tail_dispersion::Z975;
    use crate::report::verdict::Rng;
    use rtscope_core::record::blocks::{self, bucket_range, Block};

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-12)
    }

    #[test]
    fn ln_gamma_matches_factorials_and_half() {
        for (n, f) in [(1u32, 1.0f64), (2, 1.0), (5, 24.0), (11, 3_628_800.0)] {
            assert!(close(ln_gamma(n as f64), f.ln(), 1e-12) || f == 1.0, "{n}");
        }
        assert!(ln_gamma(1.0).abs() < 1e-13);
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-12
        ));
        assert!(close(ln_gamma(0.1), 2.252_712_651_734_206, 1e-12));
        assert!(close(ln_gamma(171.0), 706.573_062_245_787_4, 1e-12));
    }

    #[test]
    fn incomplete_gamma_known_values() {
        // P(1, x) = 1 - e^-x.
        assert!(close(gamma_p(1.0, 2.0), 1.0 - (-2.0f64).exp(), 1e-12));
        // P(3, 2) = 1 - e^-2 (1 + 2 + 2) (the series side), P(3, 7) the fraction side.
        assert!(close(gamma_p(3.0, 2.0), 1.0 - 5.0 * (-2.0f64).exp(), 1e-12));
        assert!(close(
            gamma_p(3.0, 7.0),
            1.0 - (-7.0f64).exp() * (1.0 + 7.0 + 24.5),
            1e-12
        ));
        assert_eq!(gamma_p(2.0, 0.0), 0.0);
        assert!(gamma_p(2.0, 1e3) > 0.999_999);
    }

    #[test]
    fn lentz_guard() {
        assert_eq!(guard(0.0), TINY);
        assert_eq!(guard(-1e-301), TINY);
        assert_eq!(guard(2.0), 2.0);
        assert_eq!(guard(-3.0), -3.0);
        // gamma_cf's first denominator is 0 at x = a - 1: guarded, still right.
        assert!(close(
            gamma_p(3.0, 2.0 + 1e-9),
            1.0 - 5.0 * (-2.0f64).exp(),
            1e-6
        ));
    }

    fn section(c: &super::super::compare::Comparison) -> String {
        let (tails, names) = c.tails();
        html_section(&tails, &names)
    }

    #[test]
    fn the_html_section() {
        use super::super::compare;
        use super::super::Run;
        use rtscope_core::result::ResultDocument;
        let run = |name: &str, tail: u64| {
            let mut s = series(vec![[10_000, 100_000], [200_000, tail]], 10_000);
            s.label = "all".into();
            let mut doc =
                ResultDocument::new("cyclic", serde_json::json!({}), Default::default(), vec![s]);
            doc.duration_ns = 3_600_000_000_000;
            Run {
                name: name.into(),
                path: format!("{name}.json").into(),
                doc,
            }
        };
        let c = compare::build(String::new(), vec![run("a<", 5), run("b", 50)], &[]).unwrap();
        let h = section(&c);
        assert!(
            h.starts_with("<section class=\"tail\">\n<h3>Tail verdicts</h3>"),
            "{h}"
        );
        assert!(
            h.contains("<h4>all: above 10us (the baseline&#39;s p99.9)</h4>"),
            "{h}"
        );
        assert!(
            h.contains("<tr><td>a&lt;</td><td>5</td><td>60min</td><td>5.00/h</td><td>-</td><td>-</td></tr>"),
            "{h}"
        );
        // No blocks: the values, taken as independent, and said so.
        assert!(
            h.contains(
                "<p class=\"verdict worse\">b is worse in the tail than a&lt;: rate ratio 10x [4.01x, 32x] (exact conditional test, values taken as independent"
            ),
            "{h}"
        );
        assert!(h.ends_with("</section>\n"));
        let c = compare::build(String::new(), vec![run("b", 50), run("a", 5)], &[]).unwrap();
        assert!(section(&c).contains("<p class=\"verdict better\">"));
        let c = compare::build(String::new(), vec![run("a", 5), run("b", 5)], &[]).unwrap();
        assert!(section(&c).contains("<p class=\"verdict same\">"));
        // No threshold (no percentiles): no section.
        let mut x = run("x", 5);
        x.doc.series[0].stats.unknown.percentiles = true;
        let c = compare::build(String::new(), vec![x, run("b", 5)], &[]).unwrap();
        assert_eq!(section(&c), "");
    }

    #[test]
    fn incomplete_beta_known_values() {
        // I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 - (1 - x)^b.
        assert!(close(beta_inc(1.0, 1.0, 0.3), 0.3, 1e-12));
        assert!(close(beta_inc(3.0, 1.0, 0.4), 0.064, 1e-12));
        assert!(close(beta_inc(1.0, 4.0, 0.2), 1.0 - 0.8f64.powi(4), 1e-12));
        // Symmetry: I_0.5(a, a) = 0.5; I_x(a, b) = 1 - I_1-x(b, a).
        assert!(close(beta_inc(7.0, 7.0, 0.5), 0.5, 1e-12));
        assert!(close(
            beta_inc(2.5, 6.0, 0.7),
            1.0 - beta_inc(6.0, 2.5, 0.3),
            1e-12
        ));
        assert_eq!(beta_inc(2.0, 3.0, 0.0), 0.0);
        assert_eq!(beta_inc(2.0, 3.0, 1.0), 1.0);
    }

    /// Garwood's intervals, as tabulated (e.g. R `poisson.test`,
    /// scipy `chi2.ppf(0.025, 2k)/2`, `chi2.ppf(0.975, 2k+2)/2`).
    #[test]
    fn poisson_intervals_match_the_tables() {
        let cases = [
            (0u64, 0.0, 3.688_879),
            (1, 0.025_318, 5.571_643),
            (2, 0.242_209, 7.224_688),
            (5, 1.623_486, 11.668_332),
            (10, 4.795_389, 18.390_356),
            (100, 81.363_949, 121.627_676),
        ];
        for (k, lo, hi) in cases {
            let (l, h) = poisson_interval(k, 0.05);
            assert!(close(l, lo, 1e-5) || (lo == 0.0 && l == 0.0), "{k}: {l}");
            assert!(close(h, hi, 1e-5), "{k}: {h}");
        }
        // Large counts: close to k ± 1.96 √k.
        let (l, h) = poisson_interval(1_000_000, 0.05);
        assert!(close(l, 1e6 - 1.96 * 1e3, 1e-4), "{l}");
        assert!(close(h, 1e6 + 1.96 * 1e3, 1e-4), "{h}");
    }

    /// Clopper–Pearson, as tabulated (R `binom.test`).
    #[test]
    fn binomial_intervals_match_the_tables() {
        let cases = [
            (5u64, 10u64, 0.187_086, 0.812_914),
            (0, 10, 0.0, 0.308_497),
            (10, 10, 0.691_503, 1.0),
            (1, 20, 0.001_265, 0.248_733),
        ];
        for (x, n, lo, hi) in cases {
            let (l, h) = binomial_interval(x, n, 0.05);
            assert!(
                close(l, lo, 1e-4) || (lo == 0.0 && l == 0.0),
                "{x}/{n}: {l}"
            );
            assert!(close(h, hi, 1e-4), "{x}/{n}: {h}");
        }
    }

    #[test]
    fn rate_ratios_and_their_calls() {
        // Equal counts over equal time: the ratio interval holds 1.
        let (lo, hi) = rate_ratio_interval(10, 1.0, 10, 1.0).unwrap();
        assert!(lo < 1.0 && hi > 1.0);
        assert_eq!(call(lo, hi, 0.05), TailCall::CantTell);
        // 5 vs 40 in the same time: clearly worse; the reverse, better.
        // (The Clopper-Pearson interval of 40/45 as odds, checked against
        // a direct sum of binomial terms: [3.157385, 25.971145].)
        let (lo, hi) = rate_ratio_interval(5, 1.0, 40, 1.0).unwrap();
        assert!(
            close(lo, 3.157_385, 1e-5) && close(hi, 25.971_145, 1e-5),
            "{lo} {hi}"
        );
        assert_eq!(call(lo, hi, 0.05), TailCall::Worse);
        let (lo, hi) = rate_ratio_interval(40, 1.0, 5, 1.0).unwrap();
        assert_eq!(call(lo, hi, 0.05), TailCall::Better);
        // The same counts, B measured 8x as long: the same rate.
        let (lo, hi) = rate_ratio_interval(5, 1.0, 40, 8.0).unwrap();
        assert!(lo < 1.0 && hi > 1.0, "{lo} {hi}");
        // None in the baseline: no upper bound.
        let (lo, hi) = rate_ratio_interval(0, 1.0, 30, 1.0).unwrap();
        assert!(hi.is_infinite() && lo > 5.0, "{lo}");
        assert_eq!(rate_ratio_interval(0, 1.0, 0, 1.0), None);
        assert_eq!(rate_ratio_interval(3, 0.0, 3, 1.0), None);
        // The rule at its edges.
        assert_eq!(call(1.06, 2.0, 0.05), TailCall::Worse);
        assert_eq!(call(1.05, 2.0, 0.05), TailCall::CantTell);
        assert_eq!(call(0.1, 0.95, 0.05), TailCall::Better);
        assert_eq!(call(0.1, 1.0 / 1.05, 0.05), TailCall::CantTell);
    }

    #[test]
    fn the_bootstrap_widens_for_clustered_exceedances() {
        // 200 blocks each; exceedances spread evenly (Poisson-like) or all in
        // a few bursts: the same totals, the bursts' interval far wider.
        let even_a: Vec<u64> = (0..200).map(|i| u64::from(i % 4 == 0)).collect();
        let even_b: Vec<u64> = (0..200).map(|i| u64::from(i % 2 == 0)).collect();
        let burst_a: Vec<u64> = (0..200).map(|i| if i % 50 == 0 { 13 } else { 0 }).collect();
        let burst_b: Vec<u64> = (0..200).map(|i| if i % 50 == 0 { 25 } else { 0 }).collect();
        let e = bootstrap_ratio(&even_a, &even_b, 2000, 1).unwrap();
        let b = bootstrap_ratio(&burst_a, &burst_b, 2000, 1).unwrap();
        assert!(e.lo > 1.2 && e.hi < 3.5, "{e:?}");
        assert!(b.hi / b.lo > 2.0 * e.hi / e.lo, "{b:?} vs {e:?}");
        // Deterministic.
        assert_eq!(bootstrap_ratio(&burst_a, &burst_b, 2000, 1), Some(b));
        // Too few blocks: none.
        assert_eq!(bootstrap_ratio(&even_a[..7], &even_b, 2000, 1), None);
        assert_eq!(bootstrap_ratio(&even_a, &even_b, 10, 1), None);
        // Block lengths stay within their bounds.
        assert_eq!(boot_block_length(&[0, 1, 0, 1]), 1);
        assert!(boot_block_length(&burst_a) <= 200 / MIN_BOOT_BLOCKS);
    }

    #[test]
    fn block_exceedances_count_buckets_above() {
        // Bucket 40 starts at 16, bucket 100 at a larger value.
        let (low40, _) = bucket_range(40);
        let (low100, _) = bucket_range(100);
        let blocks: Vec<Block> = vec![vec![(40, 5), (100, 2)], vec![], vec![(100, 3)]];
        let per = |t: u64| -> Vec<u64> { blocks.iter().map(|b| episodes::above(b, t)).collect() };
        assert_eq!(per(low40), vec![2, 0, 3]);
        assert_eq!(per(low40 - 1), vec![7, 0, 3]);
        assert_eq!(per(low100), vec![0, 0, 0]);
    }

    fn series(buckets: Vec<[u64; 2]>, p999: u64) -> Series {
        let mut s = Series::default();
        s.stats.count = buckets.iter().map(|b| b[1]).sum();
        s.stats.p99_9_ns = p999;
        s.histogram.buckets = buckets;
        s
    }

    #[test]
    fn a_comparison_counts_rates_and_calls() {
        let a = series(vec![[10_000, 100_000], [200_000, 5]], 10_000);
        let b = series(
            vec![[10_000, 100_000], [150_000, 40], [300_000, 10]],
            10_000,
        );
        assert_eq!(exceedances(&a, 10_000), 5);
        assert_eq!(exceedances(&b, 10_000), 50);
        assert_eq!(exceedances(&b, 150_000), 10);
        let names = vec!["a".to_string(), "b".to_string()];
        let hour = 3_600_000_000_000u64;
        let st = Settings::default();
        let t = compare(&names, &[a.clone(), b.clone()], &[hour, hour], &st).unwrap();
        assert!(t.from_baseline);
        assert_eq!(t.threshold_ns, 10_000);
        assert_eq!(t.runs[0].exceedances, 5);
        assert!(close(t.runs[1].rate(), 50.0, 1e-12));
        assert!(close(t.runs[0].interval.1, 11.668_332, 1e-5));
        assert_eq!(t.verdicts[0].call, TailCall::Worse);
        assert!(close(t.verdicts[0].ratio.unwrap(), 10.0, 1e-12));
        assert!(t.verdicts[0].boot.is_none());
        // A threshold given: above 150 us, 0 against 10.
        let st2 = Settings {
            tail_threshold_ns: Some(150_000),
            ..st
        };
        let t2 = compare(&names, &[a.clone(), b.clone()], &[hour, hour], &st2).unwrap();
        assert!(!t2.from_baseline);
        assert_eq!(t2.runs[0].exceedances, 5);
        assert_eq!(t2.runs[1].exceedances, 10);
        // The reverse, measured 10x as long: the same rate, can't tell.
        let t3 = compare(&names, &[b.clone(), a.clone()], &[hour, hour / 10], &st).unwrap();
        assert_eq!(t3.verdicts[0].call, TailCall::CantTell);
        // No percentiles and no threshold: nothing to compare.
        let mut np = a.clone();
        np.stats.unknown.percentiles = true;
        assert_eq!(compare(&names, &[np, b], &[hour, hour], &st), None);
    }

    #[test]
    fn the_need_of_p999() {
        let mut a = Series::default();
        a.stats.count = 3000;
        let n = need_p999(&[a.clone(), a.clone()], &[3_000_000_000, 3_000_000_000]);
        assert_eq!(n.per_run, 20_000);
        assert!(!n.per_repetition);
        assert_eq!(n.have, 3000);
        assert!(close(n.secs.unwrap(), 20.0, 1e-9));
        assert!(need_line(&n).contains("p99.9 needs 20 values beyond it in each run: 20000 values, about 20.0s at the baseline's rate; the shortest here has 3000 (too few)"));
        let mut r = a.clone();
        r.repetitions = vec![a.clone(), a.clone()];
        r.stats.count = 6000;
        let n = need_p999(&[r.clone(), r], &[6_000_000_000, 6_000_000_000]);
        assert!(n.per_repetition);
        assert_eq!(n.per_run, 10_000);
        assert_eq!(n.have, 3000);
        let mut big = a.clone();
        big.stats.count = 30_000;
        let n = need_p999(&[big.clone(), big], &[0, 0]);
        assert_eq!(n.secs, None);
        assert!(need_line(&n).ends_with("(enough)"));
    }

    #[test]
    fn texts() {
        assert_eq!(rate_text(3600.0), "3600");
        assert_eq!(rate_text(14.44), "14.4");
        assert_eq!(rate_text(0.5234), "0.523");
        assert_eq!(rate_text(0.0), "0");
        assert_eq!(rate_text(f64::INFINITY), "∞");
        assert_eq!(ratio_text(4.0), "4.00x");
        assert_eq!(ratio_text(25.4), "25x");
        assert_eq!(ratio_text(0.05), "0.050x");
        assert_eq!(ratio_text(0.0), "0x");
        assert_eq!(ratio_text(f64::INFINITY), "∞");
        assert_eq!(hours_text(3.0 / 3600.0), "3.0s");
        assert_eq!(hours_text(0.5), "30min");
        assert_eq!(hours_text(2.5), "2.5h");
        let v = TailVerdict {
            basis: Basis::Episodes,
            no_time: None,
            ratio: Some(4.0),
            exact: Some((1.5, 12.0)),
            boot: None,
            call: TailCall::Worse,
            dispersion: None,
            phi: 1.0,
        };
        assert_eq!(
            verdict_line(&v, "b", "a"),
            "b is worse in the tail than a: episode rate ratio 4.00x [1.50x, 12x] (exact conditional test)"
        );
        let none = TailVerdict {
            basis: Basis::Values,
            no_time: None,
            ratio: None,
            exact: None,
            boot: None,
            call: TailCall::CantTell,
            dispersion: None,
            phi: 1.0,
        };
        assert_eq!(
            verdict_line(&none, "b", "a"),
            "can't tell b from a in the tail: neither run went above the threshold"
        );
        let r = TailRun {
            episodes: None,
            name: "b".into(),
            exceedances: 12,
            hours: 3.0 / 3600.0,
            count: 3000,
            interval: (7441.0, 25155.0),
        };
        assert_eq!(run_line(&r), "b: 12 above in 3.0s = 14400/h [7441, 25155]");
        // With episodes: their rate and interval; without a measuring time:
        // no rate at all (before: "9 above in 0.0s = ∞/h").
        let e = TailRun {
            episodes: Some(RunEpisodes {
                count: 3,
                blocks: 30,
                block_ns: 100_000_000,
                interval: (742.0, 10521.0),
            }),
            ..r.clone()
        };
        assert_eq!(
            run_line(&e),
            "b: 12 above in 3.0s = 14400/h; 3 episodes in 30 blocks = 3600/h [742, 10521]"
        );
        let z = TailRun { hours: 0.0, ..r };
        assert_eq!(
            run_line(&z),
            "b: 12 above (no measuring time recorded: no rate)"
        );
        let v = TailVerdict {
            basis: Basis::Values,
            no_time: Some("b".into()),
            ratio: None,
            exact: None,
            boot: None,
            call: TailCall::CantTell,
            dispersion: None,
            phi: 1.0,
        };
        assert_eq!(
            verdict_line(&v, "b", "a"),
            "can't tell b from a in the tail: b has no measuring time (an import without the run's time), so no rate"
        );
    }

    // Tests written against the mutants cargo-mutants left (docs/testing.md).
    // Reference values: mpmath (40 digits) by bisection on its regularized
    // incomplete beta and gamma functions, independent of the code above.

    #[test]
    #[should_panic(expected = "binomial_interval(3, 2)")]
    fn binomial_interval_refuses_more_successes_than_trials() {
        let _ = binomial_interval(3, 2, ALPHA);
    }

    #[test]
    #[should_panic(expected = "binomial_interval(0, 0)")]
    fn binomial_interval_refuses_no_trials() {
        let _ = binomial_interval(0, 0, ALPHA);
    }

    #[test]
    fn rate_ratios_scale_with_the_exposures() {
        // 5 events in 2 h against 40 in 0.5 h: the Clopper-Pearson interval
        // of 40/45 as odds ([3.157385, 25.971145]) times ta / tb = 4.
        let (lo, hi) = rate_ratio_interval(5, 2.0, 40, 0.5).unwrap();
        assert!(close(lo, 12.629_541, 1e-6), "{lo}");
        assert!(close(hi, 103.884_579, 1e-6), "{hi}");
        // None in the baseline: the lower end is the odds of 30/30's lower
        // bound (0.884297), the upper end unbounded.
        let (lo, hi) = rate_ratio_interval(0, 1.0, 30, 1.0).unwrap();
        assert!(close(lo, 7.642_795, 1e-6), "{lo}");
        assert_eq!(hi, f64::INFINITY);
        // No exposure on the run's side either: no interval.
        assert_eq!(rate_ratio_interval(3, 1.0, 3, 0.0), None);
    }

    #[test]
    fn block_lengths_are_capped_at_an_eighth_of_the_series() {
        // A step (32 zeros, then 32 fives): autocorrelated at every lag,
        // Politis & White ask for long blocks; 64 blocks allow at most 8.
        let step: Vec<u64> = (0..64).map(|i| if i < 32 { 0 } else { 5 }).collect();
        let f: Vec<f64> = step.iter().map(|&v| v as f64).collect();
        assert!(politis_white(&f) > 8.5, "{}", politis_white(&f));
        assert_eq!(boot_block_length(&step), 64 / MIN_BOOT_BLOCKS);
        // The bootstrap then draws 8 blocks of 8 from each side.
        let bi = bootstrap_ratio(&step, &step, 40, 1).unwrap();
        assert_eq!((bi.blocks, bi.block_len), ((8, 8), (8, 8)));
        // A constant series has no autocorrelation to speak of: 1.
        assert_eq!(boot_block_length(&[3; 64]), 1);
    }

    #[test]
    fn a_resample_draws_whole_blocks_around_the_circle() {
        let mut rng = Rng::new(7);
        // 10 blocks in blocks of 3: 3 draws, 9 blocks; of a constant 2, 18.
        assert_eq!(resample_sum(&[2; 10], 3, &mut rng), (18, 9));
        // One block as long as the series covers it whole from any start
        // (around the end and on from the beginning): its sum, every time.
        let x = [1, 2, 4, 8];
        for _ in 0..40 {
            assert_eq!(resample_sum(&x, 4, &mut rng), (15, 4));
        }
    }

    #[test]
    fn bootstrap_quantiles_of_a_known_distribution() {
        // The baseline: 9 blocks of one exceedance each (9 in every
        // resample). The run: 8 blocks, every other one with one. Both give
        // blocks of length 1 (at most 9/8 and 8/8 blocks), so a resample's
        // ratio is ((X + 0.5) / 8) / (9.5 / 9), half an event added to each
        // side, with X ~ Binomial(8, 1/2): P(X <= 0) = 0.0039, P(X <= 1) =
        // 0.0352, P(X <= 6) = 0.9648, P(X <= 7) = 0.9961. Its 2.5 % and
        // 97.5 % quantiles are X = 1 and X = 7 (the 5 % and 95 %, X = 2 and
        // 6); with 20 000 resamples the empirical ones are those by more
        // than 7 standard errors.
        let a = [1u64; 9];
        let b = [1u64, 0, 1, 0, 1, 0, 1, 0];
        let bi = bootstrap_ratio(&a, &b, 20_000, 3).unwrap();
        let r = |x: f64| (x + 0.5) / 8.0 / (9.5 / 9.0);
        assert!(
            close(bi.lo, r(1.0), 1e-12) && close(bi.hi, r(7.0), 1e-12),
            "{bi:?}"
        );
        assert_eq!(bi.blocks, (9, 8));
        assert_eq!(bi.block_len, (1, 1));
        // Exactly 8 blocks a side and 40 resamples are enough.
        assert!(bootstrap_ratio(&b, &a, 2000, 3).is_some());
        assert!(bootstrap_ratio(&a, &b, 40, 3).is_some());
        assert_eq!(bootstrap_ratio(&a, &b, 39, 3), None);
        // Neither run above the threshold: no information, a ratio of 1.
        let z = bootstrap_ratio(&[0; 9], &[0; 9], 100, 3).unwrap();
        assert_eq!((z.lo, z.hi), (1.0, 1.0));
        // Only the run above it: 9.5 against 0.5, never the degenerate ∞
        // (or 0) in every resample that would agree with any exact call.
        let z = bootstrap_ratio(&[0; 9], &[1; 9], 100, 3).unwrap();
        assert_eq!((z.lo, z.hi), (19.0, 19.0));
        let z = bootstrap_ratio(&[0, 0, 0, 0, 0, 0, 0, 1, 1], &[0; 9], 400, 3).unwrap();
        assert!(z.lo < 0.25 && z.hi >= 1.0, "{z:?}");
    }

    #[test]
    fn a_rate_is_per_hour() {
        let r = TailRun {
            episodes: None,
            name: "a".into(),
            exceedances: 6,
            hours: 0.5,
            count: 100,
            interval: (0.0, 0.0),
        };
        assert_eq!(r.rate(), 12.0);
    }

    #[test]
    fn no_rate_of_values_without_values() {
        let a = Series::default();
        let n = need_p999(&[a.clone(), a], &[1_000_000_000, 1_000_000_000]);
        assert_eq!(n.secs, None);
        assert_eq!(n.have, 0);
    }

    #[test]
    fn runs_without_measuring_time_get_no_ratio() {
        let a = series(vec![[10_000, 1000], [200_000, 5]], 10_000);
        let b = series(vec![[10_000, 1000], [200_000, 50]], 10_000);
        let names = vec!["a".to_string(), "b".to_string()];
        let hour = 3_600_000_000_000u64;
        let st = Settings::default();
        // A baseline of no measuring time: an unbounded rate interval, no
        // ratio, no exact interval, no call.
        let t = compare(&names, &[a.clone(), b.clone()], &[0, hour], &st).unwrap();
        assert_eq!(t.runs[0].interval, (0.0, f64::INFINITY));
        assert_eq!(t.verdicts[0].ratio, None);
        assert_eq!(t.verdicts[0].exact, None);
        assert_eq!(t.verdicts[0].call, TailCall::CantTell);
        // Said as such, not as "neither run went above the threshold".
        assert_eq!(t.verdicts[0].no_time.as_deref(), Some("a"));
        assert!(
            verdict_line(&t.verdicts[0], "b", "a").ends_with(
                "a has no measuring time (an import without the run's time), so no rate"
            ),
            "{:?}",
            t.verdicts[0]
        );
        let t = compare(&names, &[a.clone(), b.clone()], &[hour, 0], &st).unwrap();
        assert_eq!(t.verdicts[0].no_time.as_deref(), Some("b"));
        assert_eq!(t.verdicts[0].ratio, None);
        assert_eq!(t.runs[1].interval, (0.0, f64::INFINITY));
        // Half an hour: the Garwood interval of 5 ([1.623486, 11.668332])
        // per hour is twice as high.
        let t = compare(&names, &[a.clone(), b.clone()], &[hour / 2, hour], &st).unwrap();
        let (lo, hi) = t.runs[0].interval;
        assert!(
            close(lo, 3.246_972, 1e-6) && close(hi, 23.336_664, 1e-6),
            "{lo} {hi}"
        );
        assert_eq!(t.runs[0].rate(), 10.0);
        // A baseline without exceedances: no ratio, an exact interval with
        // no upper end, and worse (50 against 0 in the same time).
        let none = series(vec![[10_000, 1000]], 10_000);
        let t = compare(&names, &[none, b], &[hour, hour], &st).unwrap();
        assert_eq!(t.verdicts[0].ratio, None);
        assert_eq!(t.verdicts[0].exact.unwrap().1, f64::INFINITY);
        assert_eq!(t.verdicts[0].call, TailCall::Worse);
    }

    /// A repeated run's series: two repetitions, `above` exceedances of
    /// 100 us (at 500 us) spread over 200 blocks by `per_block`.
    fn repeated(per_block: impl Fn(usize) -> u64, blocks: bool) -> Series {
        let low = blocks::bucket_of(1_000);
        let high = blocks::bucket_of(500_000);
        let counts: Vec<u64> = (0..200).map(per_block).collect();
        let above: u64 = counts.iter().sum();
        let mut s = series(vec![[1_000, 200_000], [500_000, above]], 10_000);
        s.repetitions = vec![Series::default(), Series::default()];
        if blocks {
            let mut h = rtscope_core::result::BlockHistograms::default();
            h.block_ns = blocks::DEFAULT_BLOCK_NS;
            h.sub_buckets = blocks::BLOCK_SUB_BUCKETS;
            h.blocks = counts
                .iter()
                .map(|&n| blocks::encode(&vec![(low, 1000), (high, n)]))
                .collect();
            s.blocks = Some(h);
        }
        s
    }

    #[test]
    fn runs_with_blocks_are_called_on_episodes_where_the_bootstrap_agrees() {
        let names = vec!["a".to_string(), "b".to_string()];
        let hour = 3_600_000_000_000u64;
        let st = Settings {
            // 100 us and 1 ns: it also seeds the bootstrap (below).
            tail_threshold_ns: Some(100_001),
            ..Settings::default()
        };
        // Spread evenly: 50 against 100 episodes, worse by both tests.
        let a = repeated(|i| u64::from(i % 4 == 0), true);
        let b = repeated(|i| u64::from(i % 2 == 0), true);
        let t = compare(&names, &[a.clone(), b.clone()], &[hour, hour], &st).unwrap();
        let v = &t.verdicts[0];
        assert_eq!(v.basis, Basis::Episodes);
        let e = t.runs[1].episodes.as_ref().unwrap();
        assert_eq!((e.count, e.blocks), (100, 200));
        let (lo, _) = v.exact.unwrap();
        assert!(lo > 1.05, "{v:?}");
        let boot = v.boot.as_ref().expect("both with blocks");
        assert!(boot.lo > 1.05, "{boot:?}");
        assert_eq!(v.call, TailCall::Worse);
        // The interval is the bootstrap of those blocks' episodes, seeded
        // by the settings, the threshold and the run's index.
        let xa: Vec<u64> = (0..200).map(|i| u64::from(i % 4 == 0)).collect();
        let xb: Vec<u64> = (0..200).map(|i| u64::from(i % 2 == 0)).collect();
        assert_eq!(
            Some(boot.clone()),
            bootstrap_ratio(&xa, &xb, st.resamples, st.seed ^ 100_001 ^ 1)
        );
        // Twice the values in the same two bursts: two episodes each, can't
        // tell; taken as independent values (blocks removed), 50 against 100
        // would have been called worse.
        let a = repeated(|i| if i % 100 == 0 { 25 } else { 0 }, true);
        let b = repeated(|i| if i % 100 == 0 { 50 } else { 0 }, true);
        let t = compare(&names, &[a.clone(), b.clone()], &[hour, hour], &st).unwrap();
        let v = &t.verdicts[0];
        assert_eq!(
            (v.basis, v.call),
            (Basis::Episodes, TailCall::CantTell),
            "{v:?}"
        );
        assert_eq!(v.ratio, Some(1.0));
        let (mut a, mut b) = (a, b);
        a.blocks = None;
        b.blocks = None;
        let t = compare(&names, &[a, b], &[hour, hour], &st).unwrap();
        let v = &t.verdicts[0];
        assert_eq!((v.basis, v.call), (Basis::Values, TailCall::Worse), "{v:?}");
        assert!(v.boot.is_none() && t.runs[0].episodes.is_none());
        assert!(verdict_line(v, "b", "a").contains("values taken as independent"));
        // One side without blocks: values, no bootstrap.
        let a = repeated(|i| u64::from(i % 4 == 0), false);
        let t = compare(&names, &[b_of(), a], &[hour, hour], &st).unwrap();
        assert_eq!(t.verdicts[0].basis, Basis::Values);
        assert!(t.verdicts[0].boot.is_none());
    }

    fn b_of() -> Series {
        repeated(|i| u64::from(i % 2 == 0), true)
    }

    /// A simulated run of `blocks` 100 ms blocks (1000 values each) whose
    /// exceedances of 100 us come in bursts: episodes start in a block with
    /// probability `p`, each a burst of 1 + Geometric(mean `burst` - 1)
    /// values that spills into the next block half the time.
    fn bursty(rng: &mut Rng, blocks: usize, p: f64, burst: f64) -> Series {
        bursty_at(rng, &vec![p; blocks], burst)
    }

    /// [`bursty`] with a probability of its own for each block.
    fn bursty_at(rng: &mut Rng, p: &[f64], burst: f64) -> Series {
        let blocks = p.len();
        let mut per = vec![0u64; blocks + 1];
        for (i, &p) in p.iter().enumerate() {
            if rng.unit() < p {
                let mut n = 1u64;
                while rng.unit() > 1.0 / burst {
                    n += 1;
                }
                if rng.unit() < 0.5 {
                    per[i] += n.div_ceil(2);
                    per[i + 1] += n / 2;
                } else {
                    per[i] += n;
                }
            }
        }
        per.truncate(blocks);
        let (low, high) = (blocks::bucket_of(1_000), blocks::bucket_of(500_000));
        let above: u64 = per.iter().sum();
        let total = 1000 * blocks as u64;
        let mut s = series(vec![[1_000, total - above], [500_000, above]], 10_000);
        let mut h = rtscope_core::result::BlockHistograms::default();
        h.block_ns = blocks::DEFAULT_BLOCK_NS;
        h.sub_buckets = blocks::BLOCK_SUB_BUCKETS;
        h.blocks = per
            .iter()
            .map(|&n| blocks::encode(&vec![(low, 1000 - n.min(1000)), (high, n)]))
            .collect();
        s.blocks = Some(h);
        s
    }

    /// Over `pairs` simulated pairs (5 s runs, bursts of mean `burst`), the
    /// pairs called worse or better: with blocks (episodes), and with the
    /// blocks removed (the values as independent events).
    fn aa_calls(pairs: u64, p: (f64, f64), burst: f64) -> (usize, usize) {
        let (calls, _) = calls_of(pairs, |rng, side| {
            bursty(rng, 50, if side == 0 { p.0 } else { p.1 }, burst)
        });
        calls
    }

    /// Over `pairs` pairs of runs made by `run(rng, side)` (5 s runs), the
    /// pairs called worse or better: with blocks (episodes), and with the
    /// blocks removed (the values as independent events); and the episode
    /// verdicts.
    fn calls_of(
        pairs: u64,
        run: impl Fn(&mut Rng, usize) -> Series,
    ) -> ((usize, usize), Vec<TailVerdict>) {
        let names = vec!["a".to_string(), "b".to_string()];
        let st = Settings {
            tail_threshold_ns: Some(100_000),
            resamples: 500,
            ..Settings::default()
        };
        let d = 50 * blocks::DEFAULT_BLOCK_NS;
        let (mut episodes, mut values, mut verdicts) = (0, 0, vec![]);
        for seed in 0..pairs {
            let mut rng = Rng::new(0xa11ce ^ seed.wrapping_mul(0x9e37_79b9));
            let a = run(&mut rng, 0);
            let b = run(&mut rng, 1);
            let t = compare(&names, &[a.clone(), b.clone()], &[d, d], &st).unwrap();
            episodes += usize::from(t.verdicts[0].call != TailCall::CantTell);
            verdicts.push(t.verdicts[0].clone());
            let (mut a, mut b) = (a, b);
            a.blocks = None;
            b.blocks = None;
            let t = compare(&names, &[a, b], &[d, d], &st).unwrap();
            assert_eq!(t.verdicts[0].basis, Basis::Values);
            values += usize::from(t.verdicts[0].call != TailCall::CantTell);
        }
        ((episodes, values), verdicts)
    }

    /// A 5 s run on a machine shared with a neighbour that, in a second
    /// with probability `busy`, runs for 1 to 2 s (10 to 20 blocks) and
    /// makes an episode in a block with probability `p_busy` while it runs;
    /// `p` otherwise; bursts of mean `burst` values.
    fn neighbour(rng: &mut Rng, busy: f64, p: f64, p_busy: f64, burst: f64) -> Series {
        let mut ps = vec![p; 50];
        for second in 0..5 {
            if rng.unit() < busy {
                let start = second * 10 + rng.below(10);
                let len = 10 + rng.below(11);
                for q in ps.iter_mut().skip(start).take(len) {
                    *q = p_busy;
                }
            }
        }
        bursty_at(rng, &ps, burst)
    }

    #[test]
    fn calibration_aa_tail_verdicts_on_clusters_of_seconds() {
        // A/A on a shared machine: a neighbour busy for 1 to 2 s in a fifth
        // of the seconds makes episodes in 60 % of its blocks, against 10 %
        // otherwise. The exact test of the episode counts (and the
        // bootstrap of 100 ms blocks) called 39 of these 200 pairs; the
        // counts divided by their dispersion over 1 s super-blocks, 20; and
        // that dispersion widened for its 8 df (t), 8: at most 5 %.
        let aa = |rng: &mut Rng, _| neighbour(rng, 0.2, 0.1, 0.6, 4.0);
        let ((calls, values), v) = calls_of(200, aa);
        assert!(calls <= 10, "{calls} of 200 A/A pairs got a tail verdict");
        assert!(values >= 60, "values as independent: {values} of 200");
        // The dispersion is estimated in every pair (10 super-blocks, 8 df)
        // and said where it widened the interval.
        assert!(v.iter().all(|v| v.dispersion.is_some_and(|d| d.df == 8)));
        let wide = v
            .iter()
            .find(|v| v.dispersion.unwrap().ratio > 2.0)
            .unwrap();
        assert!(wide.phi > wide.dispersion.unwrap().ratio);
        let line = verdict_line(wide, "b", "a");
        assert!(
            line.contains("(conditional test; episodes cluster: dispersion "),
            "{line}"
        );
        assert!(line.contains(" (8 df), counts taken as 1/"), "{line}");
        // A/B: four times the episodes outside the neighbour's seconds is
        // still found in a good share of the pairs (64 of 200; 96 by the
        // exact test alone), and without a neighbour (82; 126).
        let ((found, _), _) = calls_of(200, |rng, side| {
            neighbour(rng, 0.2, [0.1, 0.4][side], 0.6, 4.0)
        });
        assert!(found >= 50, "4x the episodes: found in {found} of 200");
        let ((found, _), _) = calls_of(200, |rng, side| {
            neighbour(rng, 0.0, [0.05, 0.2][side], 0.6, 4.0)
        });
        assert!(
            found >= 60,
            "4x the episodes, no neighbour: found in {found} of 200"
        );
    }

    /// A series of repetitions of 20 blocks, block `j` of repetition `r`
    /// with `above(r, j)` values above 100 us; the pooled blocks are the
    /// repetitions' one after the other.
    fn with_repetitions(reps: usize, above: impl Fn(usize, usize) -> u64) -> Series {
        let (low, high) = (blocks::bucket_of(1_000), blocks::bucket_of(500_000));
        let hist = |per: &[u64]| {
            let mut h = rtscope_core::result::BlockHistograms::default();
            h.block_ns = blocks::DEFAULT_BLOCK_NS;
            h.sub_buckets = blocks::BLOCK_SUB_BUCKETS;
            h.blocks = per
                .iter()
                .map(|&n| blocks::encode(&vec![(low, 1000 - n), (high, n)]))
                .collect();
            h
        };
        let per: Vec<Vec<u64>> = (0..reps)
            .map(|r| (0..20).map(|j| above(r, j)).collect())
            .collect();
        let all: Vec<u64> = per.concat();
        let n: u64 = all.iter().sum();
        let mut s = series(
            vec![[1_000, 1000 * all.len() as u64 - n], [500_000, n]],
            10_000,
        );
        s.blocks = Some(hist(&all));
        s.repetitions = per
            .iter()
            .map(|p| Series {
                blocks: Some(hist(p)),
                ..Series::default()
            })
            .collect();
        s
    }

    #[test]
    fn repetitions_that_differ_widen_the_interval() {
        let names = vec!["a".to_string(), "b".to_string()];
        let st = Settings {
            tail_threshold_ns: Some(100_000),
            ..Settings::default()
        };
        let d = 60 * blocks::DEFAULT_BLOCK_NS;
        // 2 episodes in every repetition of a; b's 10 all in its first,
        // every other block: over 1 s super-blocks 5, 5, 0, 0, 0, 0 (χ²/df
        // = 20/10, 2.6 widened), between repetitions 10, 0, 0 (20/4, 10
        // widened by t(4) = 2.776): the repetitions divide more.
        let a = with_repetitions(3, |_, j| u64::from(j % 10 == 0));
        let b = with_repetitions(3, |r, j| u64::from(r == 0 && j % 2 == 0));
        let t = compare(&names, &[a.clone(), b], &[d, d], &st).unwrap();
        let v = &t.verdicts[0];
        let disp = v.dispersion.unwrap();
        assert_eq!((disp.df, disp.super_block), (4, 0), "{v:?}");
        assert!((disp.ratio - 5.0).abs() < 1e-9, "{v:?}");
        assert!(
            (v.phi - 5.0 * (2.776 / Z975).powi(2)).abs() < 1e-12,
            "{v:?}"
        );
        assert!(
            verdict_line(v, "b", "a").contains(
                "(conditional test; episodes cluster: dispersion 5.0 between repetitions (4 df), counts taken as 1/10)"
            ),
            "{}",
            verdict_line(v, "b", "a")
        );
        // Alike repetitions: the super-blocks' dispersion (none here).
        let t = compare(&names, &[a.clone(), a], &[d, d], &st).unwrap();
        let disp = t.verdicts[0].dispersion.unwrap();
        assert_eq!((disp.ratio, disp.df, disp.super_block), (0.0, 10, 10));
        assert_eq!(t.verdicts[0].phi, 1.0);
    }

    #[test]
    fn calibration_aa_tail_verdicts_on_bursts() {
        // A/A: an episode in 10 % of the blocks, bursts of 8 values on
        // average. Counted as values, most pairs get a verdict (before:
        // 4 of 6 real pairs did); counted as episodes at most 5 %.
        let (episodes, values) = aa_calls(100, (0.1, 0.1), 8.0);
        assert!(
            episodes <= 5,
            "{episodes} of 100 A/A pairs got a tail verdict"
        );
        assert!(values >= 30, "values as independent: {values} of 100");
        // Without bursts (one value an episode) both are calibrated.
        let (episodes, values) = aa_calls(100, (0.1, 0.1), 1.0);
        assert!(episodes <= 5 && values <= 8, "{episodes} {values}");
        // A/B: four times the episodes (2.5 against 10 in 5 s) is found in
        // 6 of these 20 pairs (75 of 200). A burst spills into the next
        // block half the time, one episode or two: the counts are
        // over-dispersed (φ = E[c²]/E[c] = 2.5/1.5 ≈ 1.7), which the exact
        // test alone took for independent episodes and found 13 of 20.
        // From 5 against 20, 14 of 20; eight times (2.5 against 20), 19.
        let (found, _) = aa_calls(20, (0.05, 0.2), 8.0);
        assert!(found >= 5, "4x the episodes: found in {found} of 20");
        let (found, _) = aa_calls(20, (0.1, 0.4), 8.0);
        assert!(found >= 12, "4x from 5: found in {found} of 20");
        let (found, _) = aa_calls(20, (0.05, 0.4), 8.0);
        assert!(found >= 17, "8x the episodes: found in {found} of 20");
    }

    #[test]
    fn more_texts() {
        // Units change at 2 min and 2 h.
        assert_eq!(hours_text(119.0 / 3600.0), "119.0s");
        assert_eq!(hours_text(120.0 / 3600.0), "2min");
        assert_eq!(hours_text(7199.0 / 3600.0), "120min");
        assert_eq!(hours_text(2.0), "2.0h");
        // Ratios: whole from 10x, two decimals from 0.1x.
        assert_eq!(ratio_text(10.0), "10x");
        assert_eq!(ratio_text(9.99), "9.99x");
        assert_eq!(ratio_text(0.1), "0.10x");
        assert_eq!(ratio_text(0.099), "0.099x");
        assert_eq!(rate_text(999.4), "999");
        assert_eq!(rate_text(1.0), "1.00");
        let v = TailVerdict {
            basis: Basis::Episodes,
            no_time: None,
            ratio: None,
            exact: Some((0.01, 0.5)),
            boot: Some(BootInterval {
                lo: 0.02,
                hi: 0.75,
                blocks: (25, 40),
                block_len: (8, 5),
            }),
            call: TailCall::Better,
            dispersion: None,
            phi: 1.0,
        };
        assert_eq!(
            verdict_line(&v, "b", "a"),
            "b is better in the tail than a: episode rate ratio ∞ [0.010x, 0.50x] (exact conditional test); \
             block bootstrap [0.020x, 0.75x] (25 and 40 blocks)"
        );
        let need = Need {
            per_run: 10_000,
            per_repetition: true,
            have: 10_000,
            secs: None,
        };
        assert_eq!(
            need_line(&need),
            "p99.9 needs 10 values beyond it in each repetition: 10000 values; the shortest here has 10000 (enough)"
        );
        let t = TailComparison {
            threshold_ns: 150_000,
            from_baseline: false,
            runs: vec![
                TailRun {
                    episodes: None,
                    name: "a".into(),
                    exceedances: 0,
                    hours: 0.5,
                    count: 10,
                    interval: (0.0, 7.4),
                },
                TailRun {
                    episodes: None,
                    name: "b\x1b".into(),
                    exceedances: 1,
                    hours: 0.5,
                    count: 10,
                    interval: (0.05, 11.1),
                },
            ],
            verdicts: vec![TailVerdict {
                basis: Basis::Values,
                no_time: None,
                ratio: None,
                exact: None,
                boot: None,
                call: TailCall::CantTell,
                dispersion: None,
                phi: 1.0,
            }],
            need,
        };
        assert_eq!(threshold_text(&t), "150us (--tail-threshold)");
        let names = vec!["a".to_string(), "b".to_string()];
        assert_eq!(
            text(&t, &names),
            "tail: values above 150us (--tail-threshold), per hour of measuring (95% exact Poisson interval; no per-block histograms, so values are taken as independent):\n\
             \x20 a: 0 above in 30min = 0/h [0, 7.40]\n\
             \x20 b?: 1 above in 30min = 2.00/h [0.0500, 11.1]\n\
             tail verdict: can't tell b from a in the tail: neither run went above the threshold\n\
             \x20 p99.9 needs 10 values beyond it in each repetition: 10000 values; the shortest here has 10000 (enough)\n"
        );
    }
}
