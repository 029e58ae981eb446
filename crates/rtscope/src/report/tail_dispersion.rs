//! The dispersion of two runs' episode counts, for the tail verdicts
//! ([`super::tail`]): how much more they vary than Poisson counts, over
//! super-blocks of about a second and between repetitions
//! ([`rtscope_core::record::dispersion`]), what the counts are divided by,
//! and how the verdict says so.

use rtscope_core::record::dispersion::{self, Dispersion};
use rtscope_core::record::episodes::{self, Episodes};
use rtscope_core::result::Series;

use super::verdict::t975;

/// The 97.5 % point of the standard normal.
pub const Z975: f64 = 1.959_963_984_540_054;

/// What the episode counts are divided by for the quasi-Poisson interval:
/// the dispersion χ²/df widened for its own uncertainty, as a quasi-Poisson
/// interval takes Student's t with the dispersion's df for the normal
/// point, `(t(df) / z)²` (1.38 at 8 df: two 5 s runs), and at least 1.
pub fn counts_divisor(d: &Dispersion) -> f64 {
    let c = t975(d.df as f64) / Z975;
    (d.ratio * c * c).max(1.0)
}

/// The dispersion of two runs' episodes `e`: over super-blocks of about a
/// second, and between repetitions where both runs have at least two (with
/// blocks): the one that divides the counts more.
pub(super) fn dispersion_of(
    s: [&Series; 2],
    e: [&Episodes; 2],
    threshold_ns: u64,
) -> Option<Dispersion> {
    let by_time = dispersion::of(&e);
    let reps = |s: &Series| -> Option<Vec<(u64, u64)>> {
        if s.repetitions.len() < 2 {
            return None;
        }
        s.repetitions
            .iter()
            .map(|r| {
                let x = episodes::of(r.blocks.as_ref()?, threshold_ns, e[0].block_ns)?;
                Some((x.count(), x.per_block.len() as u64))
            })
            .collect()
    };
    let by_rep = reps(s[0])
        .zip(reps(s[1]))
        .and_then(|(a, b)| dispersion::of_cells(&[a, b]));
    match (by_time, by_rep) {
        (Some(t), Some(r)) if counts_divisor(&r) > counts_divisor(&t) => Some(r),
        (t, r) => t.or(r),
    }
}

/// The method of a verdict whose counts were divided by `phi` (> 1):
/// `conditional test; episodes cluster: dispersion 3.6 (9 df), counts taken
/// as 1/4.7`.
pub(super) fn method_text(d: &Dispersion, phi: f64) -> String {
    format!(
        "conditional test; {}dispersion {}{} ({} df), counts taken as 1/{}",
        if d.ratio >= 1.1 {
            "episodes cluster: "
        } else {
            ""
        },
        phi_text(d.ratio),
        if d.super_block == 0 {
            " between repetitions"
        } else {
            ""
        },
        d.df,
        phi_text(phi)
    )
}

/// A dispersion: `0.85`, `1.04`, `3.2`, `12`.
fn phi_text(phi: f64) -> String {
    if phi < 2.0 {
        format!("{phi:.2}")
    } else if phi < 10.0 {
        format!("{phi:.1}")
    } else {
        format!("{phi:.0}")
    }
}
