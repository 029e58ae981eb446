//! `mem-churn:P`: mmap a private anonymous read-write region, write one byte
//! per page (page size from sysconf), munmap; repeat, regulated to P %.
//! Stresses the page-fault path (anonymous faults, page allocation and
//! zeroing), the page allocator, the mm's VMA tree and TLB shootdowns on
//! munmap (the interrupts that reach other CPUs, the measurement's included).

use anyhow::Context;
use rtscope_core::sys::{self, AnonMap, Prot};

use super::{regulate::duty_cycle, Ctx, LoadSpec};

pub const COUNTERS: &[&str] = &["rounds", "pages_touched"];
const PAGES_PER_STEP: usize = 64;

pub fn memory(spec: &LoadSpec) -> u64 {
    spec.size("size").unwrap_or(16 << 20)
}

pub fn run(ctx: &Ctx) -> anyhow::Result<()> {
    let page = sys::page_size();
    let size = (memory(&ctx.spec) as usize).div_ceil(page) * page;
    let mut map: Option<AnonMap> = None;
    let mut off = 0usize;
    duty_cycle(ctx, ctx.spec.level_or_full(), || {
        let m = match map.take() {
            Some(m) => m,
            None => {
                off = 0;
                AnonMap::new(size, Prot::ReadWrite).context("mmap")?
            }
        };
        let mut n = 0;
        while n < PAGES_PER_STEP && off < size {
            m.write_byte(off, 1);
            off += page;
            n += 1;
        }
        ctx.add(1, n as u64);
        if off >= size {
            drop(m); // munmap
            ctx.add(0, 1);
        } else {
            map = Some(m);
        }
        Ok(())
    })
}
