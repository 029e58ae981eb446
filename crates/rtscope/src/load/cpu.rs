//! `cpu:P`: an arithmetic busy loop (floating-point square roots and integer
//! multiply-adds) at a duty cycle of P %. Stresses the scheduler only: the
//! measurement thread must preempt a task that never sleeps (P = 100) or that
//! sleeps and wakes every 4-6 ms (P < 100), which exercises wake-up preemption.

use std::hint::black_box;

use super::{regulate::duty_cycle, Ctx};

pub const COUNTERS: &[&str] = &["ops"];
const OPS_PER_STEP: u64 = 2000;

pub fn run(ctx: &Ctx) -> anyhow::Result<()> {
    let mut x = 1.5f64;
    let mut n: u64 = 0x9e37_79b9_7f4a_7c15;
    duty_cycle(ctx, ctx.spec.level_or_full(), || {
        for _ in 0..OPS_PER_STEP {
            x = black_box((x * 1.000_001 + 0.5).sqrt());
            n = black_box(n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
        ctx.add(0, OPS_PER_STEP);
        Ok(())
    })?;
    black_box((x, n));
    Ok(())
}
