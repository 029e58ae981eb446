//! How much more episode counts vary than a Poisson count would: their
//! over-dispersion at the scale of seconds.
//!
//! Episodes ([`super::episodes`]) make exceedances that come in one burst
//! count once, but the bursts themselves are not always independent: a
//! neighbour on a shared machine that runs for a second or two makes
//! episodes in many blocks in a row, in one run and not in the other. The
//! episode count of a run then varies more than a Poisson count of its
//! mean, and a test that takes it for one calls two runs of the same
//! command different.
//!
//! The dispersion φ is estimated as in a quasi-Poisson model: the runs'
//! blocks are grouped into **super-blocks** of about a second
//! ([`SUPER_BLOCK_NS`]); each run has its own rate (episodes per block), so
//! a super-block of `m` blocks expects `m` times its run's rate; Pearson's
//! χ² of the observed counts against those is divided by its degrees of
//! freedom (super-blocks less one per run). Without clustering beyond a
//! block χ²/df is about 1 (less, when episodes fill most blocks: a block
//! holds one at most); φ = max(1, χ²/df). A count's variance is then about
//! φ times its mean: taken as a Poisson count it is worth `count / φ`
//! independent events.

use super::episodes::Episodes;

/// The length of a super-block: about a second.
pub const SUPER_BLOCK_NS: u64 = 1_000_000_000;

/// Fewest degrees of freedom for an estimate (fewer: no estimate, as
/// `χ²/df` of one or two terms says little).
pub const MIN_DF: usize = 3;

/// The dispersion of several runs' episode counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dispersion {
    /// φ = max(1, χ²/df): the factor a count's variance has over its mean.
    pub phi: f64,
    /// Pearson's χ² / df itself (below 1 when the counts vary less than
    /// Poisson counts would).
    pub ratio: f64,
    /// The degrees of freedom: super-blocks less one per run.
    pub df: usize,
    /// Blocks per super-block; 0 where the cells were the runs'
    /// repetitions ([`of_cells`]).
    pub super_block: usize,
}

/// Blocks of `block_ns` per super-block: the number nearest
/// [`SUPER_BLOCK_NS`], at least 2.
pub fn super_block_len(block_ns: u64) -> usize {
    if block_ns == 0 {
        return 2;
    }
    ((SUPER_BLOCK_NS + block_ns / 2) / block_ns).max(2) as usize
}

/// Episodes and blocks in each super-block of `len` blocks of `e` (the last
/// may be shorter).
pub fn super_counts(e: &Episodes, len: usize) -> Vec<(u64, u64)> {
    e.per_block
        .chunks(len.max(1))
        .map(|c| (c.iter().filter(|&&n| n > 0).count() as u64, c.len() as u64))
        .collect()
}

/// The dispersion of the episode counts of `runs` (all at the same block
/// length) over super-blocks, each run with its own rate; `None` with fewer
/// than [`MIN_DF`] degrees of freedom or no episodes at all.
pub fn of(runs: &[&Episodes]) -> Option<Dispersion> {
    let len = super_block_len(runs.first()?.block_ns);
    let cells: Vec<Vec<(u64, u64)>> = runs.iter().map(|e| super_counts(e, len)).collect();
    Some(Dispersion {
        super_block: len,
        ..of_cells(&cells)?
    })
}

/// The dispersion of episode counts in cells of any size: for each run its
/// cells' (episodes, blocks), e.g. one cell a repetition of a repeated run;
/// each run with its own rate. `super_block` is 0; `None` as [`of`].
pub fn of_cells(runs: &[Vec<(u64, u64)>]) -> Option<Dispersion> {
    let (mut chi2, mut cells, mut fitted, mut any) = (0.0, 0usize, 0usize, false);
    for sc in runs {
        let (k, n) = sc.iter().fold((0, 0), |(k, n), &(x, m)| (k + x, n + m));
        if n == 0 {
            continue;
        }
        cells += sc.iter().filter(|c| c.1 > 0).count();
        fitted += 1;
        if k == 0 {
            // A rate of 0 fits every cell exactly.
            continue;
        }
        any = true;
        let rate = k as f64 / n as f64;
        for &(x, m) in sc.iter().filter(|c| c.1 > 0) {
            let mu = rate * m as f64;
            chi2 += (x as f64 - mu).powi(2) / mu;
        }
    }
    let df = cells.saturating_sub(fitted);
    if df < MIN_DF || !any {
        return None;
    }
    let ratio = chi2 / df as f64;
    Some(Dispersion {
        phi: ratio.max(1.0),
        ratio,
        df,
        super_block: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::blocks::DEFAULT_BLOCK_NS;

    fn eps(per_block: Vec<u64>) -> Episodes {
        Episodes {
            block_ns: DEFAULT_BLOCK_NS,
            per_block,
        }
    }

    #[test]
    fn super_blocks_are_about_a_second() {
        assert_eq!(super_block_len(DEFAULT_BLOCK_NS), 10);
        assert_eq!(super_block_len(2 * DEFAULT_BLOCK_NS), 5);
        assert_eq!(super_block_len(8 * DEFAULT_BLOCK_NS), 2);
        assert_eq!(super_block_len(0), 2);
        let e = eps(vec![0, 3, 0, 0, 1, 1, 0]);
        assert_eq!(super_counts(&e, 3), vec![(1, 3), (2, 3), (0, 1)]);
    }

    #[test]
    fn even_episodes_are_not_dispersed_clustered_ones_are() {
        // One episode in every second block: every super-block has 5 of 10,
        // χ² = 0.
        let even = eps((0..50).map(|i| i % 2).collect());
        let d = of(&[&even, &even]).unwrap();
        assert_eq!((d.ratio, d.phi, d.df, d.super_block), (0.0, 1.0, 8, 10));
        // The same 25 episodes in the first 2.5 s: super-blocks of 10, 10,
        // 5, 0, 0 against a mean of 5: χ² = (25 + 25 + 0 + 25 + 25) / 5 = 20
        // in the first run, 0 in the second; df = 10 − 2 = 8.
        let clustered = eps((0..50).map(|i| u64::from(i < 25)).collect());
        let d = of(&[&clustered, &even]).unwrap();
        assert!((d.ratio - 2.5).abs() < 1e-12, "{d:?}");
        assert_eq!(d.phi, d.ratio);
        // A run without episodes fits its rate of 0 exactly, and counts
        // towards the degrees of freedom less its rate.
        let none = eps(vec![0; 50]);
        let d = of(&[&clustered, &none]).unwrap();
        assert!((d.ratio - 2.5).abs() < 1e-12, "{d:?}");
        // Too few super-blocks, or no episodes: no estimate.
        let short = eps(vec![1; 20]);
        assert_eq!(of(&[&short, &short]), None);
        assert_eq!(of(&[&none, &none]), None);
        assert_eq!(of(&[]), None);
    }

    #[test]
    fn repetitions_are_cells_too() {
        // Three repetitions a side: 9, 0, 0 episodes in 20 blocks each
        // against 1, 1, 1; χ² = (36 + 9 + 9) / 3 = 18 and 0, over 6 − 2 df.
        let d = of_cells(&[vec![(9, 20), (0, 20), (0, 20)], vec![(1, 20); 3]]).unwrap();
        assert_eq!((d.ratio, d.phi, d.df, d.super_block), (4.5, 4.5, 4, 0));
        // Two repetitions a side: 2 df, no estimate; no episodes: none.
        assert_eq!(of_cells(&[vec![(9, 20), (0, 20)], vec![(1, 20); 2]]), None);
        assert_eq!(of_cells(&[vec![(0, 20); 3], vec![(0, 20); 3]]), None);
    }
}
