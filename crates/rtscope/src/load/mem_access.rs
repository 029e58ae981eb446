//! `mem-access:P`: volatile reads and writes, one per cache line, over a
//! buffer larger than the last-level cache, regulated to P %. No system calls
//! after setup: it stresses the memory hierarchy the measurement shares (cache
//! evictions, memory bandwidth, and on a VM the host's memory system).

use anyhow::Context;
use rtscope_core::sys::{AnonMap, Prot};

use super::{regulate::duty_cycle, Ctx, LoadSpec};

pub const COUNTERS: &[&str] = &["passes", "lines_touched", "bytes_moved"];
const LINES_PER_STEP: usize = 512;

fn sysfs(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Size of the last-level cache of CPU 0 from sysfs, bytes.
pub fn llc_bytes() -> Option<u64> {
    let mut best: Option<(u32, u64)> = None;
    for i in 0..16 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let Some(level) = sysfs(&format!("{dir}/level")).and_then(|l| l.parse::<u32>().ok()) else {
            continue;
        };
        if sysfs(&format!("{dir}/type")).as_deref() == Some("Instruction") {
            continue;
        }
        let Some(size) = sysfs(&format!("{dir}/size")).and_then(|s| super::parse_size(&s).ok())
        else {
            continue;
        };
        if best.is_none_or(|(l, _)| level > l) {
            best = Some((level, size));
        }
    }
    best.map(|b| b.1)
}

fn line_bytes() -> usize {
    sysfs("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size")
        .and_then(|s| s.parse().ok())
        .filter(|&n: &usize| n.is_power_of_two() && n >= 16)
        .unwrap_or(64)
}

pub fn memory(spec: &LoadSpec) -> u64 {
    spec.size("size")
        .unwrap_or_else(|| llc_bytes().map_or(32 << 20, |l| (4 * l).max(16 << 20)))
}

pub fn run(ctx: &Ctx) -> anyhow::Result<()> {
    let size = memory(&ctx.spec) as usize;
    let line = line_bytes();
    let m = AnonMap::new(size, Prot::ReadWrite).context("mmap")?;
    let mut off = 0usize;
    duty_cycle(ctx, ctx.spec.level_or_full(), || {
        let mut n = 0;
        while n < LINES_PER_STEP {
            let v = m.read_byte(off);
            m.write_byte(off, v.wrapping_add(1));
            off += line;
            n += 1;
            if off >= size {
                off = 0;
                ctx.add(0, 1);
            }
        }
        ctx.add(1, n as u64);
        ctx.add(2, (n * line) as u64);
        Ok(())
    })
}
