//! Duty-cycle regulation: work for LEVEL % of every slice, sleep the rest.
//!
//! Slices are 5 ms long and laid on absolute deadlines of CLOCK_MONOTONIC, so
//! that the load is smooth against 1 ms measurement periods and does not drift.
//! A step that overshoots its slice (an munmap of a large region, say) is paid
//! back in the following slices, so the long-run share stays at LEVEL.

use rtscope_core::sys;

use super::Ctx;

/// Length of one regulation slice.
pub const SLICE_NS: u64 = 5_000_000;

const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;

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
    let busy = (SLICE_NS * level / 100) as i64;
    // Work done beyond the target so far (negative: owed).
    let mut debt: i64 = 0;
    let mut slice_start = sys::clock_ns(CLOCK);
    while !ctx.stopped() {
        let target = busy - debt;
        let t0 = sys::clock_ns(CLOCK);
        let mut now = t0;
        if target > 0 {
            while ((now - t0) as i64) < target && !ctx.stopped() {
                step()?;
                now = sys::clock_ns(CLOCK);
            }
        }
        let worked = (now - t0) as i64;
        // Pay back overshoot, forgive an unfinished slice (we were stopped or preempted).
        debt = (debt + worked - busy).clamp(-busy, 20 * SLICE_NS as i64);
        slice_start += SLICE_NS;
        if now < slice_start {
            sys::sleep_until(CLOCK, slice_start)?;
        } else if now > slice_start + SLICE_NS {
            // Fell more than a slice behind: start afresh rather than catch up in a burst.
            slice_start = now;
        }
    }
    Ok(())
}
