//! `cpu:P`: an arithmetic busy loop (floating-point square roots and integer
//! multiply-adds) at a duty cycle of P %. Stresses the scheduler only: the
//! measurement thread must preempt a task that never sleeps (P = 100) or that
//! sleeps and wakes every 4-6 ms (P < 100), which exercises wake-up preemption.
//!
//! `policy=fifo|rr[,priority=N]` turns it into a real-time hog, the way
//! stress-ng's `--sched fifo --sched-prio N` does: a task of higher priority
//! than the measurement thread takes the measured CPU on purpose. Such a load
//! must never hold a CPU for good, so with `every=E,for=F` it keeps its
//! schedule by its own clock: it sleeps to absolute CLOCK_MONOTONIC
//! deadlines and spins for F at the start of each E period (the supervisor,
//! which may share the CPU and would not run while it spins, never stops
//! it). Without `every=`/`for=` it is refused unless RT throttling is on
//! (the supervisor checks that): that is how RT throttling is injected.

use std::hint::black_box;

use rtscope_core::sys;

use super::{regulate::duty_cycle, Ctx, LoadSpec, Schedule};

pub const COUNTERS: &[&str] = &["ops"];
const OPS_PER_STEP: u64 = 2000;

/// The environment variable through which the supervisor tells a
/// self-timed worker when its schedule's grid starts (CLOCK_MONOTONIC ns):
/// the planned opening of the measurement window. Without it the grid
/// starts when the worker does.
pub const ORIGIN_ENV: &str = "RTSCOPE_LOAD_ORIGIN_NS";

/// The keys of a `cpu` spec taken together.
pub fn check(spec: &LoadSpec) -> Result<(), String> {
    let rt = spec.real_time();
    if rt.is_none() && spec.params.contains_key("priority") {
        return Err(format!(
            "load {}: priority= needs policy=fifo or policy=rr (SCHED_OTHER has no priority)",
            spec.text
        ));
    }
    if rt.is_some() && spec.schedule.is_some() && spec.level_or_full() < 100 {
        return Err(format!(
            "load {}: a real-time load spins the whole of for= in each every= period: \
             give no level (or 100) and a shorter for=",
            spec.text
        ));
    }
    Ok(())
}

pub fn run(ctx: &Ctx) -> anyhow::Result<()> {
    let mut x = 1.5f64;
    let mut n: u64 = 0x9e37_79b9_7f4a_7c15;
    let step = || {
        for _ in 0..OPS_PER_STEP {
            x = black_box((x * 1.000_001 + 0.5).sqrt());
            n = black_box(n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
        ctx.add(0, OPS_PER_STEP);
        Ok(())
    };
    match ctx.spec.schedule.filter(|_| ctx.spec.self_timed()) {
        Some(sc) => {
            let origin = std::env::var(ORIGIN_ENV)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| sys::clock_ns(CLOCK));
            self_timed(ctx, sc, origin, step)?;
        }
        None => duty_cycle(ctx, ctx.spec.level_or_full(), step)?,
    }
    black_box((x, n));
    Ok(())
}

const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;

/// The on-phase `[on, off)` of the first period of `sc` (its grid starting
/// at `origin`) that has not ended at `now`.
pub fn phase_at(sc: &Schedule, origin: u64, now: u64) -> (u64, u64) {
    let first = origin + sc.start_ns;
    let k = now.saturating_sub(first) / sc.every_ns;
    let on = first + k * sc.every_ns;
    if now < on + sc.for_ns {
        (on, on + sc.for_ns)
    } else {
        (on + sc.every_ns, on + sc.every_ns + sc.for_ns)
    }
}

/// Spins (calling `step`) from each on-phase's start to its end, by the
/// wall clock, and sleeps to the next one; a phase missed (the worker was
/// kept off the CPU) is skipped, never made up.
fn self_timed(
    ctx: &Ctx,
    sc: Schedule,
    origin: u64,
    mut step: impl FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    while !ctx.stopped() {
        let (on, off) = phase_at(&sc, origin, sys::clock_ns(CLOCK));
        // A signal (SIGTERM: stop) interrupts the sleep.
        if !sys::sleep_until_interruptible(CLOCK, on)? {
            continue;
        }
        while sys::clock_ns(CLOCK) < off && !ctx.stopped() {
            step()?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::parse_spec;

    #[test]
    fn phases() {
        let sc = Schedule {
            every_ns: 100,
            for_ns: 10,
            start_ns: 50,
        };
        assert_eq!(phase_at(&sc, 1000, 0), (1050, 1060));
        assert_eq!(phase_at(&sc, 1000, 1050), (1050, 1060));
        assert_eq!(phase_at(&sc, 1000, 1059), (1050, 1060));
        assert_eq!(phase_at(&sc, 1000, 1060), (1150, 1160));
        assert_eq!(phase_at(&sc, 1000, 1449), (1450, 1460));
    }

    #[test]
    fn rt_keys() {
        let s = parse_spec("cpu:100,policy=fifo,priority=99,every=100ms,for=2ms").unwrap();
        assert_eq!(s.real_time(), Some((rtscope_core::rt::Policy::Fifo, 99)));
        assert!(s.self_timed());
        let s = parse_spec("cpu,policy=rr").unwrap();
        assert_eq!(s.real_time(), Some((rtscope_core::rt::Policy::Rr, 1)));
        assert!(!s.self_timed());
        let s = parse_spec("cpu:50,policy=other,every=1s,for=100ms").unwrap();
        assert_eq!(s.real_time(), None);
        assert!(!s.self_timed());
        assert_eq!(parse_spec("cpu").unwrap().real_time(), None);
        // A level with a real-time policy and no schedule: duty-cycled.
        parse_spec("cpu:30,policy=fifo,priority=5").unwrap();
        for (spec, want) in [
            ("cpu,priority=10", "needs policy=fifo"),
            ("cpu,policy=other,priority=10", "needs policy=fifo"),
            ("cpu,policy=fifo,priority=0", "expected 1 to 99"),
            ("cpu,policy=fifo,priority=100", "expected 1 to 99"),
            ("cpu,policy=fifo,priority=-3", "negative"),
            ("cpu,policy=fifo,priority=high", "not a whole number"),
            ("cpu,policy=deadline", "one of other, fifo, rr"),
            ("cpu,policy=fifo,policy=rr", "twice"),
            ("cpu:50,policy=fifo,every=100ms,for=2ms", "no level"),
            ("mem-churn,policy=fifo", "unknown parameter 'policy'"),
        ] {
            let e = parse_spec(spec).unwrap_err();
            assert!(e.contains(want), "{spec}: {e}");
            assert!(!e.contains('\n'), "{spec}: one line");
        }
    }
}
