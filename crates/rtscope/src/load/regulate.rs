//! Duty-cycle regulation: work for LEVEL % of every slice, sleep the rest.
//!
//! Work is measured in the worker thread's own CPU time, so preemption does
//! not count as work. Slices are 5 ms long on average and laid on absolute deadlines of
//! CLOCK_MONOTONIC, so that the load is smooth against 1 ms measurement
//! periods and does not drift. Each slice's length is drawn from 4-6 ms: a
//! fixed 5 ms slice would stay phase-locked to the scheduler tick (4 ms at
//! HZ=250), and tick-sampled accounting (/proc/stat) would then see 40 % or
//! 60 % for a 50 % load depending on the phase.
//! A step that overshoots its slice (an munmap of a large region, say) is paid
//! back in the following slices, so the long-run share stays at LEVEL.

use rtscope_core::sys;

use super::Ctx;

/// Mean length of one regulation slice.
pub const SLICE_NS: u64 = 5_000_000;
/// Slices are `SLICE_NS` +- this much.
const DITHER_NS: u64 = 1_000_000;

/// A tiny xorshift generator for the slice lengths (no need for quality).
struct Dither(u64);

impl Dither {
    /// A generator seeded from `t` (a clock reading): xorshift's state must
    /// never be 0, where it would stay.
    fn seeded(t: u64) -> Self {
        Dither(t | 1)
    }

    fn next_slice(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        SLICE_NS - DITHER_NS + self.0 % (2 * DITHER_NS)
    }
}

const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;

/// The book-keeping of the duty cycle, apart from the clocks: how much work
/// each slice asks for, and the debt carried from one slice to the next.
#[derive(Debug, Clone, Copy)]
struct Budget {
    /// Percent, 1-99.
    level: u64,
    /// Work done beyond the target so far, ns (negative: owed).
    debt: i64,
}

impl Budget {
    /// `(share, target)` of a slice of `slice` ns: the level's share of it,
    /// and the work to do in it once the debt is paid back or made up.
    fn plan(&self, slice: u64) -> (i64, i64) {
        let share = (slice * self.level / 100) as i64;
        (share, share - self.debt)
    }

    /// `worked` ns of CPU time were done in a slice whose share was `share`.
    /// Overshoot is paid back later (at most 20 slices of it); an unfinished
    /// slice is forgiven beyond one share (we were stopped or preempted).
    fn settle(&mut self, worked: i64, share: i64) {
        self.debt = (self.debt + worked - share).clamp(-share, 20 * SLICE_NS as i64);
    }
}

/// Calls `step` (which should take well under a millisecond) for `level` % of
/// every slice, sleeping the rest, until the load is told to stop.
pub fn duty_cycle(
    ctx: &Ctx,
    level: u8,
    mut step: impl FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let level = u64::from(level.clamp(1, 100));
    if level == 100 {
        while !ctx.stopped() {
            step()?;
        }
        return Ok(());
    }
    let mut budget = Budget { level, debt: 0 };
    let mut slice_start = sys::clock_ns(CLOCK);
    let mut dither = Dither::seeded(slice_start);
    while !ctx.stopped() {
        let slice = dither.next_slice();
        let (share, target) = budget.plan(slice);
        // Work is counted in this thread's CPU time, so that time the load is
        // preempted (by the measurement's real-time threads, say) does not
        // count as work done; the wall clock only bounds the slice.
        let t0 = sys::clock_ns(CLOCK);
        let c0 = sys::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
        let mut now = t0;
        let mut cpu = c0;
        // A target of 0 or less (overshoot being paid back) does no step.
        while ((cpu - c0) as i64) < target && now - t0 < slice && !ctx.stopped() {
            step()?;
            now = sys::clock_ns(CLOCK);
            cpu = sys::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
        }
        let worked = (cpu - c0) as i64;
        budget.settle(worked, share);
        slice_start += slice;
        if now < slice_start {
            sys::sleep_until(CLOCK, slice_start)?;
        } else if now > slice_start + slice {
            // Fell more than a slice behind: start afresh rather than catch up in a burst.
            slice_start = now;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_stay_within_bounds_and_average_out() {
        let mut d = Dither(12345);
        let n = 10_000;
        let mut sum = 0;
        for _ in 0..n {
            let s = d.next_slice();
            assert!((SLICE_NS - DITHER_NS..SLICE_NS + DITHER_NS).contains(&s));
            sum += s;
        }
        let mean = sum / n;
        assert!(mean.abs_diff(SLICE_NS) < 50_000, "{mean}");
    }

    #[test]
    fn dither_is_xorshift64_and_spreads_evenly() {
        // Marsaglia's xorshift64 with the triple (13, 7, 17), whose period is
        // 2^64 − 1: no short cycle that could lock onto the tick.
        let mut d = Dither(1);
        assert_eq!(d.next_slice(), 4_269_761);
        assert_eq!(d.0, 1_082_269_761);
        assert_eq!(d.next_slice(), 5_853_505);
        assert_eq!(d.0, 1_152_992_998_833_853_505);
        assert_eq!(d.next_slice(), 4_764_457);
        assert_eq!(d.0, 11_177_516_664_432_764_457);
        // Seeded from any clock reading, 0 and 1 included, the state is not
        // 0 (where xorshift would stay, every slice 4 ms), and it follows
        // the reading.
        for t in [0, 1, 2, 4, u64::MAX] {
            assert_ne!(Dither::seeded(t).0, 0, "seed {t}");
        }
        assert_ne!(Dither::seeded(2).0, Dither::seeded(4).0);
        // Spread evenly over 4-6 ms: ten bins of 0.2 ms hold 10 % each.
        let mut bins = [0u32; 10];
        for _ in 0..20_000 {
            let s = d.next_slice() - (SLICE_NS - DITHER_NS);
            bins[(s / 200_000) as usize] += 1;
        }
        for b in bins {
            assert!((1_700..=2_300).contains(&b), "{bins:?}");
        }
    }

    /// The work is spread over every slice, not done in bursts: any 6 ms
    /// touches at most three slices of 4-6 ms, and a 5 % load does at most
    /// twice its share in a slice (an unfinished slice is made up in the
    /// next) plus one step: under 2 ms in all. A regulator that worked whole
    /// slices and then rested to pay the overshoot back would average 5 %
    /// too, but in bursts of 4-6 ms. Measured in the thread's own CPU time, which a busy machine
    /// can only lower: the bound holds however loaded the machine is.
    #[test]
    fn work_is_spread_over_the_slices_not_bunched() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let stop = Arc::new(AtomicBool::new(false));
        let ctx = Ctx {
            spec: crate::load::parse_spec("cpu:5").unwrap(),
            stop: stop.clone(),
            counters: Arc::new(crate::load::worker::Counters::new(1)),
            instance: 0,
        };
        let start = sys::clock_ns(CLOCK);
        let end = start + 300_000_000;
        // (start on CLOCK, CPU time) of every step; a step burns ~20 µs.
        let mut steps: Vec<(u64, u64)> = Vec::with_capacity(1 << 16);
        let mut stalled = false;
        duty_cycle(&ctx, 5, || {
            let t = sys::clock_ns(CLOCK);
            // Once, a stall of ten slices (as if the worker were stopped):
            // the cycle starts afresh after it instead of catching up on the
            // missed slices in one burst.
            if !stalled && t > start + 100_000_000 {
                stalled = true;
                sys::sleep_until(CLOCK, t + 10 * SLICE_NS).unwrap();
            }
            let c0 = sys::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
            while sys::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID) - c0 < 20_000 {
                std::hint::spin_loop();
            }
            steps.push((t, sys::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID) - c0));
            if t >= end || steps.len() == steps.capacity() {
                stop.store(true, Ordering::Relaxed);
            }
            Ok(())
        })
        .unwrap();
        assert!(steps.len() > 10, "{} steps", steps.len());
        let window = 6_000_000;
        let share = (SLICE_NS + DITHER_NS) * 5 / 100;
        let bound = 3 * (2 * share + steps.iter().map(|s| s.1).max().unwrap());
        let mut j = 0;
        let mut in_window = 0u64;
        for i in 0..steps.len() {
            in_window += steps[i].1;
            while steps[i].0 - steps[j].0 >= window {
                in_window -= steps[j].1;
                j += 1;
            }
            assert!(
                in_window <= bound,
                "{} µs of work in 6 ms at step {i} (bound {} µs)",
                in_window / 1000,
                bound / 1000
            );
        }
    }

    #[test]
    fn budget_asks_for_the_level_and_pays_back_overshoot() {
        let mut b = Budget { level: 30, debt: 0 };
        assert_eq!(b.plan(5_000_000), (1_500_000, 1_500_000));
        // 0.5 ms too much: the next slice asks for that much less.
        b.settle(2_000_000, 1_500_000);
        assert_eq!(b.debt, 500_000);
        assert_eq!(b.plan(4_000_000), (1_200_000, 700_000));
        // Exactly the target: the debt is paid.
        b.settle(700_000, 1_200_000);
        assert_eq!(b.debt, 0);
        // Preempted for whole slices: at most one share is owed.
        b.settle(0, 1_200_000);
        b.settle(0, 1_200_000);
        assert_eq!(b.debt, -1_200_000);
        assert_eq!(b.plan(6_000_000), (1_800_000, 3_000_000));
        // A huge overshoot (an munmap, say) is capped at 20 slices.
        b.settle(1_000_000_000, 1_800_000);
        assert_eq!(b.debt, 20 * SLICE_NS as i64);
        assert!(b.plan(5_000_000).1 < 0);
    }
}
