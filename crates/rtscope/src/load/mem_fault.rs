//! `mem-fault:P`: mmap a region PROT_NONE, write to each page; every write
//! raises SIGSEGV, whose handler (sigaction with SA_SIGINFO) mprotects the
//! faulting page read-write and returns, so the write retries and succeeds;
//! munmap; repeat, regulated to P %. Stresses signal delivery, the fault path
//! for access violations, mprotect (VMA splitting and merging) and munmap.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use anyhow::Context;
use rtscope_core::sys::{self, AnonMap, Prot};

use super::{regulate::duty_cycle, Ctx, LoadSpec};

pub const COUNTERS: &[&str] = &["rounds", "pages_touched", "faults_handled"];
const PAGES_PER_STEP: usize = 16;

static BASE: AtomicUsize = AtomicUsize::new(0);
static LEN: AtomicUsize = AtomicUsize::new(0);
static PAGE: AtomicUsize = AtomicUsize::new(4096);
static FAULTS: AtomicU64 = AtomicU64::new(0);

/// SIGSEGV handler (signal context: atomics and one mprotect only).
fn on_fault(addr: usize) -> bool {
    let (base, len) = (BASE.load(Ordering::Acquire), LEN.load(Ordering::Acquire));
    if len == 0 || addr < base || addr >= base + len {
        return false;
    }
    let page = PAGE.load(Ordering::Relaxed);
    if sys::mprotect_raw_rw(addr & !(page - 1), page) {
        FAULTS.fetch_add(1, Ordering::Relaxed);
        true
    } else {
        false
    }
}

pub fn memory(spec: &LoadSpec) -> u64 {
    spec.size("size").unwrap_or(16 << 20)
}

pub fn run(ctx: &Ctx) -> anyhow::Result<()> {
    let page = sys::page_size();
    PAGE.store(page, Ordering::Relaxed);
    sys::install_fault_handler(on_fault).context("sigaction(SIGSEGV)")?;
    let size = (memory(&ctx.spec) as usize).div_ceil(page) * page;
    let mut map: Option<AnonMap> = None;
    let mut off = 0usize;
    duty_cycle(ctx, ctx.spec.level_or_full(), || {
        let m = match map.take() {
            Some(m) => m,
            None => {
                off = 0;
                let m = AnonMap::new(size, Prot::None).context("mmap")?;
                BASE.store(m.addr(), Ordering::Release);
                LEN.store(m.len(), Ordering::Release);
                m
            }
        };
        let mut n = 0;
        while n < PAGES_PER_STEP && off < size {
            m.write_byte(off, 1); // faults; the handler opens the page; retried
            off += page;
            n += 1;
        }
        ctx.add(1, n as u64);
        ctx.add(2, FAULTS.swap(0, Ordering::Relaxed));
        if off >= size {
            LEN.store(0, Ordering::Release);
            drop(m); // munmap
            ctx.add(0, 1);
        } else {
            map = Some(m);
        }
        Ok(())
    })
}
