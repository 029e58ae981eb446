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

use core::arch::x86_64::{__cpuid_count, __rdtscp, _mm_lfence, _rdtsc};

use super::declared::{DeclaredFrequency, TscInvariance};
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

/// CPUID's four registers (eax, ebx, ecx, edx) for a leaf and sub-leaf.
type Regs = (u32, u32, u32, u32);

/// The CPUID instruction; the facts below take it as a function so that
/// tests can give them a scripted CPU.
fn cpuid(leaf: u32, sub: u32) -> Regs {
    // CPUID is available on every x86-64 CPU; the intrinsic has no other precondition.
    #[allow(unused_unsafe)]
    // SAFETY: see above.
    let r = unsafe { __cpuid_count(leaf, sub) };
    (r.eax, r.ebx, r.ecx, r.edx)
}

fn has_tsc(cpuid: impl Fn(u32, u32) -> Regs) -> bool {
    cpuid(1, 0).3 & (1 << 4) != 0
}

fn has_rdtscp(cpuid: impl Fn(u32, u32) -> Regs) -> bool {
    cpuid(0x8000_0000, 0).0 >= 0x8000_0001 && cpuid(0x8000_0001, 0).3 & (1 << 27) != 0
}

fn check_tsc(id: SourceId) -> Result<(), Unavailable> {
    if !has_tsc(cpuid) {
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
        if !has_rdtscp(cpuid) {
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
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    tsc_invariance(&cpuinfo, cpuid)
}

/// The kernel's CPU flags: the first `flags` line of /proc/cpuinfo.
fn cpu_flags(cpuinfo: &str) -> Vec<&str> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, f)| f.split_whitespace().collect())
        .unwrap_or_default()
}

fn tsc_invariance(cpuinfo: &str, cpuid: impl Fn(u32, u32) -> Regs) -> TscInvariance {
    let flags = cpu_flags(cpuinfo);
    let has = |f: &str| flags.contains(&f);
    let cpuid_invariant = if cpuid(0x8000_0000, 0).0 >= 0x8000_0007 {
        Some(cpuid(0x8000_0007, 0).3 & (1 << 8) != 0)
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
    declared(cpuid, crate::sys::kernel_log().as_deref())
}

fn declared(cpuid: impl Fn(u32, u32) -> Regs, kernel_log: Option<&str>) -> Vec<DeclaredFrequency> {
    let mut out = Vec::new();
    let max = cpuid(0, 0).0;
    if max >= 0x15 {
        let (den, num, crystal, _) = cpuid(0x15, 0);
        if den != 0 && num != 0 && crystal != 0 {
            out.push(DeclaredFrequency {
                origin: "cpuid 0x15 (crystal x ratio)".into(),
                hz: f64::from(crystal) * f64::from(num) / f64::from(den),
            });
        }
    }
    if max >= 0x16 {
        let base_mhz = cpuid(0x16, 0).0 & 0xffff;
        if base_mhz != 0 {
            out.push(DeclaredFrequency {
                origin: "cpuid 0x16 (processor base frequency)".into(),
                hz: f64::from(base_mhz) * 1e6,
            });
        }
    }
    let hypervisor = cpuid(1, 0).2 & (1 << 31) != 0;
    if hypervisor && cpuid(0x4000_0000, 0).0 >= 0x4000_0010 {
        let khz = cpuid(0x4000_0010, 0).0;
        if khz != 0 {
            out.push(DeclaredFrequency {
                origin: "hypervisor cpuid 0x40000010".into(),
                hz: f64::from(khz) * 1e3,
            });
        }
    }
    if let Some(f) = kernel_log.and_then(kernel_log_tsc_hz) {
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

    /// The real CPU's flags as the kernel lists them.
    fn real_flags() -> Vec<String> {
        let info = std::fs::read_to_string("/proc/cpuinfo").unwrap();
        cpu_flags(&info).into_iter().map(str::to_string).collect()
    }

    /// The real CPUID against what the kernel read from it at boot: the
    /// vendor string and the family, model and stepping of leaf 1.
    #[test]
    fn cpuid_reads_what_the_kernel_read() {
        let info = std::fs::read_to_string("/proc/cpuinfo").unwrap();
        let field = |k: &str| {
            info.lines()
                .find(|l| l.split(':').next().unwrap().trim() == k)
                .map(|l| l.split_once(':').unwrap().1.trim().to_string())
        };
        let (max, b, c, d) = cpuid(0, 0);
        assert!(max >= 1, "{max}");
        let vendor: Vec<u8> = [b, d, c].iter().flat_map(|r| r.to_le_bytes()).collect();
        assert_eq!(
            Some(String::from_utf8_lossy(&vendor).into_owned()),
            field("vendor_id")
        );
        let sig = cpuid(1, 0).0;
        let base = (sig >> 8) & 0xf;
        let family = if base == 0xf {
            base + ((sig >> 20) & 0xff)
        } else {
            base
        };
        let mut model = (sig >> 4) & 0xf;
        if base == 6 || base == 0xf {
            model |= ((sig >> 16) & 0xf) << 4;
        }
        assert_eq!(field("cpu family"), Some(family.to_string()));
        assert_eq!(field("model"), Some(model.to_string()));
        assert_eq!(field("stepping"), Some((sig & 0xf).to_string()));
    }

    #[test]
    fn features_agree_with_the_kernels_flags() {
        let flags = real_flags();
        let has = |f: &str| flags.iter().any(|x| x == f);
        assert_eq!(has_tsc(cpuid), has("tsc"));
        assert_eq!(has_rdtscp(cpuid), has("rdtscp"));
        assert_eq!(Rdtsc::open().is_ok(), has("tsc"));
        assert_eq!(LfenceRdtsc::open().is_ok(), has("tsc"));
        assert_eq!(Rdtscp::open().is_ok(), has("tsc") && has("rdtscp"));
        let inv = tsc_invariant();
        assert_eq!(inv.constant_tsc, has("constant_tsc"));
        assert_eq!(inv.nonstop_tsc, has("nonstop_tsc"));
        assert_eq!(inv.tsc_known_freq, has("tsc_known_freq"));
    }

    /// PR_SET_TSC is a per-thread setting: a thread that forbids itself the
    /// TSC sees every TSC source refused, with the reason.
    #[test]
    fn a_thread_without_the_tsc_is_refused_it() {
        if !real_flags().iter().any(|f| f == "tsc") {
            return;
        }
        let refused = std::thread::spawn(|| {
            // SAFETY: PR_SET_TSC takes an int; it affects this thread only.
            let rc = unsafe { libc::prctl(libc::PR_SET_TSC, libc::PR_TSC_SIGSEGV, 0, 0, 0) };
            assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
            [
                Rdtsc::open().err(),
                Rdtscp::open().err(),
                LfenceRdtsc::open().err(),
            ]
        })
        .join()
        .unwrap();
        for r in refused {
            let r = r.expect("opened with the TSC disabled");
            assert!(r.to_string().contains("PR_SET_TSC"), "{r}");
        }
    }

    /// A scripted CPU: the registers of each leaf; unlisted leaves read 0.
    fn cpu(table: &[(u32, Regs)]) -> impl Fn(u32, u32) -> Regs + '_ {
        move |leaf, _| {
            table
                .iter()
                .find(|(l, _)| *l == leaf)
                .map_or((0, 0, 0, 0), |(_, r)| *r)
        }
    }

    #[test]
    fn the_tsc_and_rdtscp_feature_bits() {
        assert!(has_tsc(cpu(&[(1, (0, 0, 0, 1 << 4))])));
        assert!(!has_tsc(cpu(&[(1, (0, 0, 0, !(1 << 4)))])));
        let ext =
            |max: u32, edx: u32| [(0x8000_0000, (max, 0, 0, 0)), (0x8000_0001, (0, 0, 0, edx))];
        assert!(has_rdtscp(cpu(&ext(0x8000_0001, 1 << 27))));
        assert!(!has_rdtscp(cpu(&ext(0x8000_0001, !(1 << 27)))));
        // The leaf is not there to be read.
        assert!(!has_rdtscp(cpu(&ext(0x8000_0000, 1 << 27))));
    }

    #[test]
    fn invariance_from_flags_and_leaf_0x80000007() {
        let info = "processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc\nflags\t\t: tsc_known_freq\n";
        let ext =
            |max: u32, edx: u32| [(0x8000_0000, (max, 0, 0, 0)), (0x8000_0007, (0, 0, 0, edx))];
        let i = tsc_invariance(info, cpu(&ext(0x8000_0007, 1 << 8)));
        assert_eq!(
            i,
            TscInvariance {
                constant_tsc: true,
                nonstop_tsc: true,
                tsc_known_freq: false,
                cpuid_invariant: Some(true),
            }
        );
        let i = tsc_invariance(info, cpu(&ext(0x8000_0007, !(1 << 8))));
        assert_eq!(i.cpuid_invariant, Some(false));
        let i = tsc_invariance("", cpu(&ext(0x8000_0006, 1 << 8)));
        assert_eq!(
            i,
            TscInvariance {
                constant_tsc: false,
                nonstop_tsc: false,
                tsc_known_freq: false,
                cpuid_invariant: None,
            }
        );
    }

    fn hz(d: &[DeclaredFrequency]) -> Vec<(&str, f64)> {
        d.iter().map(|f| (f.origin.as_str(), f.hz)).collect()
    }

    #[test]
    fn every_declared_frequency_with_its_origin() {
        let full = [
            (0, (0x16, 0, 0, 0)),
            (1, (0, 0, 1 << 31, 0)),
            // 24 MHz crystal x 176 / 2.
            (0x15, (2, 176, 24_000_000, 0)),
            // 2100 MHz in the low 16 bits; the high bits are not part of it.
            (0x16, (0xabcd_0834, 0, 0, 0)),
            (0x4000_0000, (0x4000_0010, 0, 0, 0)),
            (0x4000_0010, (2_111_998, 0, 0, 0)),
        ];
        let log = "[0.0] tsc: Detected 2112.5 MHz processor\n";
        assert_eq!(
            hz(&declared(cpu(&full), Some(log))),
            [
                ("cpuid 0x15 (crystal x ratio)", 2.112e9),
                ("cpuid 0x16 (processor base frequency)", 2.1e9),
                ("hypervisor cpuid 0x40000010", 2.111998e9),
                ("kernel log (tsc: Detected)", 2.1125e9),
            ]
        );
        // Leaves above the CPU's highest are not read.
        let mut t = full;
        t[0].1 .0 = 0x15;
        assert_eq!(hz(&declared(cpu(&t), None)).len(), 2);
        t[0].1 .0 = 0x14;
        assert_eq!(
            hz(&declared(cpu(&t), None)),
            [("hypervisor cpuid 0x40000010", 2.111998e9)]
        );
        // Leaf 0x15 needs all three of its values.
        for i in 0..3 {
            let mut t = full;
            match i {
                0 => t[2].1 .0 = 0,
                1 => t[2].1 .1 = 0,
                _ => t[2].1 .2 = 0,
            }
            let d = declared(cpu(&t), None);
            assert_eq!(d.len(), 2, "{:?}", hz(&d));
            assert!(d[0].origin.starts_with("cpuid 0x16"));
        }
        // No base frequency.
        let mut t = full;
        t[3].1 .0 = 0xabcd_0000;
        assert_eq!(declared(cpu(&t), None).len(), 2);
        // No hypervisor bit, a hypervisor without the timing leaf, or a zero in it.
        for (row, v) in [(1, 1 << 30), (4, 0x4000_000f), (5, 0)] {
            let mut t = full;
            if row == 1 {
                t[1].1 .2 = v;
            } else {
                t[row].1 .0 = v;
            }
            let d = declared(cpu(&t), None);
            assert_eq!(d.len(), 2, "row {row}: {:?}", hz(&d));
        }
    }

    #[test]
    fn reads_advance() {
        if !real_flags().iter().any(|f| f == "tsc") {
            return;
        }
        let t = Rdtsc::open().unwrap();
        let a = t.read();
        let b = t.read();
        assert!(b > a);
        let t = LfenceRdtsc::open().unwrap();
        let a = t.read();
        let b = t.read();
        assert!(b > a);
        if let Ok(t) = Rdtscp::open() {
            let a = t.read();
            let b = t.read();
            assert!(b > a);
        }
    }
}
