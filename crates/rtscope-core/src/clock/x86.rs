//! The x86-64 time-stamp counter, read three ways:
//!
//! - `rdtsc`: one instruction, not ordered with the instructions around it
//!   (the CPU may execute it early or late);
//! - `rdtscp`: waits until all earlier instructions have executed (later ones
//!   may still start before it);
//! - `lfence; rdtsc`: fully ordered, what the kernel's `rdtsc_ordered()` does.
//!
//! Also the facts about the counter: whether it is invariant (constant rate,
//! running in deep C-states) and which frequency CPUID, the hypervisor and the
//! kernel declare for it.

use core::arch::x86_64::{__cpuid, __cpuid_count, __rdtscp, _mm_lfence, _rdtsc};

use super::calibrate::{DeclaredFrequency, TscInvariance};
use super::{Counter, SourceId, Unavailable};

/// `rdtsc`.
#[derive(Debug, Clone, Copy)]
pub struct Rdtsc(());

/// `rdtscp` (the TSC_AUX value it also returns is discarded).
#[derive(Debug, Clone, Copy)]
pub struct Rdtscp(());

/// `lfence; rdtsc`.
#[derive(Debug, Clone, Copy)]
pub struct LfenceRdtsc(());

fn cpuid(leaf: u32) -> (u32, u32, u32, u32) {
    // CPUID is available on every x86-64 CPU; the intrinsic has no other precondition.
    #[allow(unused_unsafe)]
    // SAFETY: see above.
    let r = unsafe { __cpuid(leaf) };
    (r.eax, r.ebx, r.ecx, r.edx)
}

fn cpuid_sub(leaf: u32, sub: u32) -> (u32, u32, u32, u32) {
    #[allow(unused_unsafe)]
    // SAFETY: as in `cpuid`.
    let r = unsafe { __cpuid_count(leaf, sub) };
    (r.eax, r.ebx, r.ecx, r.edx)
}

fn has_tsc() -> bool {
    cpuid(1).3 & (1 << 4) != 0
}

fn has_rdtscp() -> bool {
    cpuid(0x8000_0000).0 >= 0x8000_0001 && cpuid(0x8000_0001).3 & (1 << 27) != 0
}

fn check_tsc(id: SourceId) -> Result<(), Unavailable> {
    if !has_tsc() {
        return Err(Unavailable::new(id, "the CPU has no time-stamp counter"));
    }
    if !crate::sys::tsc_allowed() {
        return Err(Unavailable::new(
            id,
            "rdtsc is disabled for this process (prctl PR_SET_TSC)",
        ));
    }
    Ok(())
}

impl Rdtsc {
    /// Checks that the CPU has a TSC and the process may read it.
    pub fn open() -> Result<Self, Unavailable> {
        check_tsc(SourceId::Tsc).map(|_| Rdtsc(()))
    }
}

impl Rdtscp {
    /// Also checks the CPU has `rdtscp`.
    pub fn open() -> Result<Self, Unavailable> {
        check_tsc(SourceId::Rdtscp)?;
        if !has_rdtscp() {
            return Err(Unavailable::new(
                SourceId::Rdtscp,
                "the CPU has no rdtscp instruction",
            ));
        }
        Ok(Rdtscp(()))
    }
}

impl LfenceRdtsc {
    /// Checks that the CPU has a TSC (lfence is part of SSE2, always on x86-64).
    pub fn open() -> Result<Self, Unavailable> {
        check_tsc(SourceId::LfenceTsc).map(|_| LfenceRdtsc(()))
    }
}

impl Counter for Rdtsc {
    #[inline(always)]
    fn read(&self) -> u64 {
        #[allow(unused_unsafe)]
        // SAFETY: `open` checked the CPU has a TSC and the process may read it.
        unsafe {
            _rdtsc()
        }
    }
}

impl Counter for Rdtscp {
    #[inline(always)]
    fn read(&self) -> u64 {
        let mut aux = 0u32;
        // SAFETY: `open` checked rdtscp exists; `aux` is a valid u32 to write.
        unsafe { __rdtscp(&mut aux) }
    }
}

impl Counter for LfenceRdtsc {
    #[inline(always)]
    fn read(&self) -> u64 {
        #[allow(unused_unsafe)]
        // SAFETY: lfence is SSE2 (baseline x86-64); `open` checked the TSC.
        unsafe {
            _mm_lfence();
            _rdtsc()
        }
    }
}

/// Whether the TSC runs at a constant rate in every state, from the kernel's
/// CPU flags and CPUID leaf 0x80000007.
pub fn tsc_invariant() -> TscInvariance {
    let flags = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("flags"))
                .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        })
        .unwrap_or_default();
    let has = |f: &str| flags.iter().any(|x| x == f);
    let cpuid_invariant = if cpuid(0x8000_0000).0 >= 0x8000_0007 {
        Some(cpuid(0x8000_0007).3 & (1 << 8) != 0)
    } else {
        None
    };
    TscInvariance {
        constant_tsc: has("constant_tsc"),
        nonstop_tsc: has("nonstop_tsc"),
        tsc_known_freq: has("tsc_known_freq"),
        cpuid_invariant,
    }
}

/// The TSC frequency as CPUID (leaf 0x15, 0x16), the hypervisor (leaf
/// 0x40000010) and the kernel log declare it, where they do.
pub fn declared_frequencies() -> Vec<DeclaredFrequency> {
    let mut out = Vec::new();
    let max = cpuid(0).0;
    if max >= 0x15 {
        let (den, num, crystal, _) = cpuid_sub(0x15, 0);
        if den != 0 && num != 0 && crystal != 0 {
            out.push(DeclaredFrequency {
                origin: "cpuid 0x15 (crystal x ratio)".into(),
                hz: f64::from(crystal) * f64::from(num) / f64::from(den),
            });
        }
    }
    if max >= 0x16 {
        let base_mhz = cpuid_sub(0x16, 0).0 & 0xffff;
        if base_mhz != 0 {
            out.push(DeclaredFrequency {
                origin: "cpuid 0x16 (processor base frequency)".into(),
                hz: f64::from(base_mhz) * 1e6,
            });
        }
    }
    let hypervisor = cpuid(1).2 & (1 << 31) != 0;
    if hypervisor && cpuid(0x4000_0000).0 >= 0x4000_0010 {
        let khz = cpuid(0x4000_0010).0;
        if khz != 0 {
            out.push(DeclaredFrequency {
                origin: "hypervisor cpuid 0x40000010".into(),
                hz: f64::from(khz) * 1e3,
            });
        }
    }
    if let Some(f) = crate::sys::kernel_log().and_then(|l| kernel_log_tsc_hz(&l)) {
        out.push(f);
    }
    out
}

/// The kernel's own TSC frequency from its boot log: the refined calibration
/// if there is one, else the detected frequency.
pub fn kernel_log_tsc_hz(log: &str) -> Option<DeclaredFrequency> {
    fn mhz_after(line: &str, key: &str) -> Option<f64> {
        let rest = &line[line.find(key)? + key.len()..];
        rest.split_whitespace().next()?.parse::<f64>().ok()
    }
    let mut detected = None;
    let mut refined = None;
    for line in log.lines() {
        if let Some(v) = mhz_after(line, "Refined TSC clocksource calibration:") {
            refined = Some(v);
        } else if line.contains("tsc: Detected") {
            detected = mhz_after(line, "tsc: Detected").or(detected);
        }
    }
    refined
        .map(|v| ("kernel log (refined TSC calibration)", v))
        .or(detected.map(|v| ("kernel log (tsc: Detected)", v)))
        .map(|(o, mhz)| DeclaredFrequency {
            origin: o.into(),
            hz: mhz * 1e6,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_log_parsing() {
        let log = "[    0.000062] tsc: Detected 2445.424 MHz processor\n\
                   [    1.2] tsc: Refined TSC clocksource calibration: 2445.432 MHz\n";
        let f = kernel_log_tsc_hz(log).unwrap();
        assert_eq!(f.hz, 2_445_432_000.0);
        assert!(f.origin.contains("refined"));
        let f = kernel_log_tsc_hz("[0.1] tsc: Detected 3000.000 MHz TSC\n").unwrap();
        assert_eq!(f.hz, 3e9);
        assert!(kernel_log_tsc_hz("nothing here").is_none());
    }

    #[test]
    fn reads_advance() {
        if let Ok(t) = Rdtsc::open() {
            let a = t.read();
            let b = t.read();
            assert!(b > a);
        }
        if let Ok(t) = LfenceRdtsc::open() {
            let a = t.read();
            let b = t.read();
            assert!(b > a);
        }
    }
}
