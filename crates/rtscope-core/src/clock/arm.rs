//! ARM counters.
//!
//! - `cntvct`: the generic timer's virtual count, a fixed-frequency counter
//!   shared by all CPUs (what the kernel's clocksource reads), with an `isb`
//!   before the read so that it is not taken early. aarch64: `mrs cntvct_el0`;
//!   32-bit ARM: `mrrc p15, 1, lo, hi, c14` (ARMv7 cores with the generic timer
//!   extension, e.g. Cortex-A7/A15, and every ARMv8 core running 32-bit code;
//!   older cores such as ARM11, Cortex-A8/A9 have none). Its frequency is
//!   declared in `cntfrq`.
//! - aarch64 `perf-cycles`: the PMU cycle counter. User space may only read it
//!   through perf_event: the event is opened for this thread, its user page is
//!   mapped, and a read follows the page's seqlock protocol (offset + hardware
//!   counter), as the kernel's libperf does. The kernel must allow it
//!   (`sysctl kernel.perf_user_access=1`); the register is only read while the
//!   page says `cap_user_rdpmc` with a counter index, so it never traps. It
//!   counts CPU cycles of this thread only, and stops while the CPU idles: a
//!   cost meter, not a clock.
//! - armv7 `pmccntr`: the PMU cycle counter PMCCNTR, read directly when the
//!   kernel (or a module) has set PMUSERENR.EN; 32 bits wide, so differences
//!   are taken modulo 2^32.
//!
//! # Probing without crashing
//!
//! A coprocessor or system-register read that user space may not make traps
//! (`SIGILL`): PMCCNTR without PMUSERENR.EN, CNTVCT on a core without the
//! generic timer, any PMU register under a hypervisor that hides the PMU. So
//! the first open of `cntvct` and `pmccntr` reads the registers in a forked
//! child ([`crate::sys::probe_in_child`]): a trap kills the child, and the
//! source is reported unavailable with the reason in one line. The outcome is
//! cached for the life of the process.

use std::sync::OnceLock;

use crate::clock::{SourceId, Unavailable};
use crate::sys::{self, ChildExit};

/// What the probe child's exit codes mean (besides 0: the registers read fine).
const PROBE_STUCK: i32 = 20;

/// Runs `probe` in a child once per process (per `cell`) and turns its end
/// into availability: `codes` names the probe's own non-zero exit codes.
fn probe_once(
    cell: &'static OnceLock<Result<(), String>>,
    id: SourceId,
    what: &str,
    probe: fn() -> i32,
    codes: &[(i32, &str)],
) -> Result<(), Unavailable> {
    cell.get_or_init(|| match sys::probe_in_child(probe) {
        Ok(ChildExit::Code(0)) => Ok(()),
        Ok(ChildExit::Code(PROBE_STUCK)) => Err(format!("{what} does not advance")),
        Ok(ChildExit::Code(c)) => Err(codes
            .iter()
            .find(|(k, _)| *k == c)
            .map(|(_, r)| r.to_string())
            .unwrap_or_else(|| format!("the probe of {what} exited with code {c}"))),
        Ok(ChildExit::Signal(libc::SIGILL)) => {
            Err(format!("reading {what} traps (SIGILL): {}", trap_hint(id)))
        }
        Ok(ChildExit::Signal(s)) => Err(format!("the probe of {what} died of signal {s}")),
        Err(e) => Err(format!("could not fork a probe of {what}: {e}")),
    })
    .clone()
    .map_err(|r| Unavailable::new(id, r))
}

/// Why a read of `id` may trap.
fn trap_hint(id: SourceId) -> &'static str {
    match id {
        SourceId::Pmccntr => {
            "user access to the PMU is not enabled (PMUSERENR.EN; a kernel module must set it), or a hypervisor hides the PMU"
        }
        _ => "this core has no generic timer, or the kernel does not let user space read it",
    }
}

/// Reads `counter` until it changes (at most ~1M reads): 0, or [`PROBE_STUCK`].
#[inline(always)]
fn advances(counter: impl Fn() -> u64) -> i32 {
    let first = counter();
    for _ in 0..1_000_000 {
        if counter() != first {
            return 0;
        }
    }
    PROBE_STUCK
}

#[cfg(target_arch = "aarch64")]
pub use aarch64::*;
#[cfg(target_arch = "arm")]
pub use armv7::*;

/// `Cntvct::open` (probed once, in a child) and its `Counter` impl, over the
/// architecture's `cntvct()` read; `$reg` names the register in messages.
#[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
macro_rules! cntvct_source {
    ($reg:literal) => {
        impl Cntvct {
            /// Checks, in a child process, that the counter reads without a trap
            /// and advances.
            pub fn open() -> Result<Self, Unavailable> {
                static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
                super::probe_once(
                    &PROBE,
                    SourceId::Cntvct,
                    $reg,
                    || super::advances(cntvct),
                    &[],
                )?;
                Ok(Cntvct(()))
            }
        }

        impl Counter for Cntvct {
            #[inline(always)]
            fn read(&self) -> u64 {
                cntvct()
            }
        }
    };
}

#[cfg(target_arch = "aarch64")]
mod aarch64 {
    use core::arch::asm;
    use std::os::fd::OwnedFd;
    use std::sync::atomic::{compiler_fence, Ordering};

    use std::sync::OnceLock;

    use crate::clock::declared::DeclaredFrequency;
    use crate::clock::{Counter, SourceId, Unavailable};
    use crate::sys;

    /// `isb; mrs cntvct_el0`.
    #[derive(Debug, Clone, Copy)]
    pub struct Cntvct(());

    #[inline(always)]
    fn cntvct() -> u64 {
        let v: u64;
        // SAFETY: only called once the probe child read it without a trap (Linux
        // enables EL0 access, CNTKCTL_EL1.EL0VCTEN, or traps and emulates it);
        // the instructions touch no memory.
        unsafe { asm!("isb", "mrs {v}, cntvct_el0", v = out(reg) v, options(nostack, nomem)) };
        v
    }

    cntvct_source!("cntvct_el0");

    /// The frequency in `cntfrq_el0`.
    pub fn cntfrq_hz() -> u64 {
        let v: u64;
        // SAFETY: cntfrq_el0 is readable at EL0 whenever the counter is (callers
        // hold an opened `Cntvct`); no memory touched.
        unsafe { asm!("mrs {v}, cntfrq_el0", v = out(reg) v, options(nostack, nomem)) };
        v
    }

    /// What the architecture declares for `cntvct`.
    pub fn declared_frequencies() -> Vec<DeclaredFrequency> {
        let hz = cntfrq_hz();
        if hz == 0 {
            return vec![];
        }
        vec![DeclaredFrequency {
            origin: "cntfrq_el0".into(),
            hz: hz as f64,
        }]
    }

    // struct perf_event_attr (PERF_ATTR_SIZE_VER8, 136 bytes), as raw fields.
    const ATTR_SIZE: usize = 136;
    const PERF_TYPE_HARDWARE: u32 = 0;
    const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
    // flags bitfield: exclude_kernel (bit 5), exclude_hv (bit 6).
    const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
    const FLAG_EXCLUDE_HV: u64 = 1 << 6;
    // arm64 PMU format: config1 bit 0 = 64-bit counter, bit 1 = user-space read.
    const CONFIG1_LONG_RDPMC: u64 = 0b11;

    fn attr_bytes() -> [u8; ATTR_SIZE] {
        let mut a = [0u8; ATTR_SIZE];
        a[0..4].copy_from_slice(&PERF_TYPE_HARDWARE.to_ne_bytes());
        a[4..8].copy_from_slice(&(ATTR_SIZE as u32).to_ne_bytes());
        a[8..16].copy_from_slice(&PERF_COUNT_HW_CPU_CYCLES.to_ne_bytes());
        a[40..48].copy_from_slice(&(FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV).to_ne_bytes());
        a[56..64].copy_from_slice(&CONFIG1_LONG_RDPMC.to_ne_bytes());
        a
    }

    // struct perf_event_mmap_page offsets.
    const PC_LOCK: usize = 8;
    const PC_INDEX: usize = 12;
    const PC_OFFSET: usize = 16;
    const PC_CAPABILITIES: usize = 40;
    const PC_PMC_WIDTH: usize = 48;
    const CAP_USER_RDPMC: u64 = 1 << 2;

    /// The PMU cycle counter of this thread, read in user space.
    #[derive(Debug)]
    pub struct PerfCycles {
        page: sys::MappedPage,
        _fd: OwnedFd,
    }

    /// Reads PMU counter `idx` (the perf index minus one): 31 is the cycle
    /// counter, others the event counters.
    #[inline(always)]
    fn read_pmc(idx: u32) -> u64 {
        macro_rules! evcntr {
            ($($n:literal),*) => {
                match idx {
                    31 => { let v: u64; unsafe { asm!("mrs {v}, pmccntr_el0", v = out(reg) v, options(nostack, nomem)) }; v }
                    $( $n => { let v: u64; unsafe { asm!(concat!("mrs {v}, pmevcntr", $n, "_el0"), v = out(reg) v, options(nostack, nomem)) }; v } )*
                    _ => 0,
                }
            };
        }
        // SAFETY (every arm): the kernel granted user access to this counter
        // (cap_user_rdpmc with a non-zero index); reading a PMU register touches
        // no memory.
        evcntr!(
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
            24, 25, 26, 27, 28, 29, 30
        )
    }

    impl PerfCycles {
        /// Opens the cycle-counter event for the calling thread and checks that
        /// the kernel lets user space read it.
        pub fn open() -> Result<Self, Unavailable> {
            let id = SourceId::PerfCycles;
            let fd = sys::perf_event_open_self(&attr_bytes()).map_err(|e| {
                let why = if e.raw_os_error() == Some(libc::ENOSYS) {
                    "perf_event_open is not implemented here (a kernel without CONFIG_PERF_EVENTS, or a user-mode emulator)".to_string()
                } else {
                    format!(
                        "perf_event_open: {e} (kernel.perf_event_paranoid, or no PMU in this VM)"
                    )
                };
                Unavailable::new(id, why)
            })?;
            let page = sys::MappedPage::map(&fd)
                .map_err(|e| Unavailable::new(id, format!("mmap of the perf page: {e}")))?;
            let p = PerfCycles { page, _fd: fd };
            // Let the event be scheduled in, then look at the capabilities.
            let _ = p.read_raw();
            if !user_readable(p.field_u64(PC_CAPABILITIES), p.field_u32(PC_INDEX)) {
                return Err(Unavailable::new(
                    id,
                    "the kernel does not allow user-space PMU reads (sysctl kernel.perf_user_access=1)",
                ));
            }
            Ok(p)
        }

        #[inline(always)]
        fn field_u32(&self, off: usize) -> u32 {
            // SAFETY: `off` lies within the mapped perf page (a whole page); the
            // kernel updates these fields concurrently, hence volatile.
            unsafe { core::ptr::read_volatile(self.page.as_ptr().add(off) as *const u32) }
        }

        #[inline(always)]
        fn field_u64(&self, off: usize) -> u64 {
            // SAFETY: as in `field_u32`; the offsets used are 8-byte aligned.
            unsafe { core::ptr::read_volatile(self.page.as_ptr().add(off) as *const u64) }
        }

        /// The seqlock read of tools/lib/perf/mmap.c (`perf_mmap__read_self`).
        #[inline(always)]
        fn read_raw(&self) -> u64 {
            seqlock_read(|o| self.field_u32(o), |o| self.field_u64(o), read_pmc)
        }
    }

    /// Whether the perf page lets user space read the counter: the
    /// capability bit, and a counter index (0: not scheduled on a counter).
    #[inline(always)]
    fn user_readable(caps: u64, index: u32) -> bool {
        caps & CAP_USER_RDPMC != 0 && index != 0
    }

    /// One count from the perf page whose fields `u32_at`/`u64_at` read (by
    /// byte offset), with PMU counter `pmc(index - 1)` added while the page
    /// says it may be read, sign-extended from the page's counter width;
    /// taken again while the page's lock word changed under the read.
    #[inline(always)]
    fn seqlock_read(
        u32_at: impl Fn(usize) -> u32,
        u64_at: impl Fn(usize) -> u64,
        pmc: impl Fn(u32) -> u64,
    ) -> u64 {
        loop {
            let seq = u32_at(PC_LOCK);
            compiler_fence(Ordering::SeqCst);
            let mut count = u64_at(PC_OFFSET);
            let idx = u32_at(PC_INDEX);
            if user_readable(u64_at(PC_CAPABILITIES), idx) {
                let width = u32::from(u32_at(PC_PMC_WIDTH) as u16).clamp(1, 64);
                let v = pmc(idx - 1);
                let shift = 64 - width;
                let v = ((v << shift) as i64 >> shift) as u64;
                count = count.wrapping_add(v);
            }
            compiler_fence(Ordering::SeqCst);
            if u32_at(PC_LOCK) == seq {
                return count;
            }
        }
    }

    impl Counter for PerfCycles {
        #[inline(always)]
        fn read(&self) -> u64 {
            self.read_raw()
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn cntvct_opens_advances_and_declares_a_frequency() {
            let c = Cntvct::open().expect("Linux lets EL0 read cntvct_el0");
            let a = c.read();
            let b = (0..1_000_000).map(|_| c.read()).find(|&v| v != a);
            assert!(b.is_some_and(|b| b > a));
            assert!(cntfrq_hz() > 0);
            assert_eq!(declared_frequencies()[0].origin, "cntfrq_el0");
        }

        #[test]
        fn the_frequency_is_declared_in_hz() {
            // Architecturally 1 GHz from ARMv8.6; never below 1 MHz in practice.
            assert!(cntfrq_hz() >= 1_000_000, "{}", cntfrq_hz());
        }

        /// The perf_event_attr bytes, field by field (include/uapi/linux/perf_event.h).
        #[test]
        fn the_cycle_counter_event() {
            let a = attr_bytes();
            let u32_at = |o: usize| u32::from_ne_bytes(a[o..o + 4].try_into().unwrap());
            let u64_at = |o: usize| u64::from_ne_bytes(a[o..o + 8].try_into().unwrap());
            // type PERF_TYPE_HARDWARE, size, config PERF_COUNT_HW_CPU_CYCLES.
            assert_eq!((u32_at(0), u32_at(4), u64_at(8)), (0, 136, 0));
            // exclude_kernel (bit 5) and exclude_hv (bit 6), nothing else.
            assert_eq!(u64_at(40), 0x60);
            // config1: a 64-bit counter, readable from user space.
            assert_eq!(u64_at(56), 3);
            let rest: u64 = a.iter().map(|&b| u64::from(b)).sum();
            assert_eq!(rest, 136 + 0x60 + 3);
        }

        #[test]
        fn user_reads_need_the_capability_and_an_index() {
            assert!(user_readable(CAP_USER_RDPMC, 1));
            assert!(user_readable(!0, 32));
            assert!(!user_readable(CAP_USER_RDPMC, 0));
            assert!(!user_readable(!CAP_USER_RDPMC, 5));
        }

        /// A scripted perf page: the seqlock read adds the counter (index
        /// minus one), sign-extended from its width, only when it may, and
        /// reads again while the lock word moves.
        #[test]
        fn the_seqlock_read_of_a_scripted_page() {
            use std::cell::Cell;
            let read = |index: u32, caps: u64, width: u32, pmc: u64, locks: &[u32]| {
                let n = Cell::new(0);
                let u32_at = |o: usize| match o {
                    PC_LOCK => {
                        let i = n.get();
                        n.set(i + 1);
                        locks[i.min(locks.len() - 1)]
                    }
                    PC_INDEX => index,
                    PC_PMC_WIDTH => width,
                    _ => panic!("u32 at {o}"),
                };
                let u64_at = |o: usize| match o {
                    PC_OFFSET => 1_000_000,
                    PC_CAPABILITIES => caps,
                    _ => panic!("u64 at {o}"),
                };
                // The counter number is part of the value: a wrong one shows.
                let count = seqlock_read(u32_at, u64_at, |i| pmc + u64::from(i) * 1000);
                (count, n.get())
            };
            // Counter 31 (index 32), 64 bits wide: 1,000,000 + 5 + 31,000.
            assert_eq!(read(32, CAP_USER_RDPMC, 64, 5, &[4]), (1_031_005, 2));
            // Not readable: the offset alone.
            assert_eq!(read(0, CAP_USER_RDPMC, 64, 5, &[4]).0, 1_000_000);
            assert_eq!(read(32, 0, 64, 5, &[4]).0, 1_000_000);
            // A 32-bit counter reading all ones (the scripted value plus the
            // counter term) is -1.
            let minus_one = 0xffff_ffff - 31_000;
            assert_eq!(read(32, CAP_USER_RDPMC, 32, minus_one, &[4]).0, 999_999);
            // Width 0 is taken as 1 bit: 1 is then -1.
            assert_eq!(read(1, CAP_USER_RDPMC, 0, 1, &[4]).0, 999_999);
            // The lock word moved once during the read: read twice.
            assert_eq!(read(32, CAP_USER_RDPMC, 64, 5, &[4, 6, 6]), (1_031_005, 4));
        }

        #[test]
        fn perf_cycles_open_or_say_why_in_one_line() {
            match PerfCycles::open() {
                Ok(p) => {
                    let a = p.read();
                    assert!(p.read() >= a);
                }
                Err(e) => {
                    assert_eq!(e.source_name, "perf-cycles");
                    assert!(!e.reason.is_empty() && !e.reason.contains('\n'), "{e}");
                    // The reason fits the kernel's answer: ENOSYS is "not implemented".
                    let errno = sys::perf_event_open_self(&attr_bytes())
                        .err()
                        .and_then(|e| e.raw_os_error());
                    if errno.is_some() {
                        assert_eq!(
                            e.reason.starts_with("perf_event_open is not implemented"),
                            errno == Some(libc::ENOSYS),
                            "{e} ({errno:?})"
                        );
                    }
                }
            }
        }
    }
}

#[cfg(target_arch = "arm")]
mod armv7 {
    use core::arch::asm;
    use std::sync::OnceLock;

    use crate::clock::declared::DeclaredFrequency;
    use crate::clock::{Counter, SourceId, Unavailable};

    /// `isb; mrrc p15, 1, lo, hi, c14`: the generic timer's virtual count
    /// (CNTVCT) from 32-bit code.
    #[derive(Debug, Clone, Copy)]
    pub struct Cntvct(());

    #[inline(always)]
    fn cntvct() -> u64 {
        let (lo, hi): (u32, u32);
        // SAFETY: only called once the probe child read it without a trap (the
        // core has the generic timer and the kernel enabled PL0 access); the
        // instructions touch no memory.
        unsafe {
            asm!("isb", "mrrc p15, 1, {lo}, {hi}, c14", lo = out(reg) lo, hi = out(reg) hi,
                 options(nostack, nomem))
        };
        (u64::from(hi) << 32) | u64::from(lo)
    }

    cntvct_source!("CNTVCT");

    /// The frequency in CNTFRQ.
    pub fn cntfrq_hz() -> u64 {
        let v: u32;
        // SAFETY: CNTFRQ is readable at PL0 whenever CNTVCT is (callers hold an
        // opened `Cntvct`); no memory touched.
        unsafe { asm!("mrc p15, 0, {v}, c14, c0, 0", v = out(reg) v, options(nostack, nomem)) };
        u64::from(v)
    }

    /// What the architecture declares for `cntvct`.
    pub fn declared_frequencies() -> Vec<DeclaredFrequency> {
        let hz = cntfrq_hz();
        if hz == 0 {
            return vec![];
        }
        vec![DeclaredFrequency {
            origin: "cntfrq".into(),
            hz: hz as f64,
        }]
    }

    /// PMCCNTR, read with `mrc p15, 0, rX, c9, c13, 0`.
    #[derive(Debug, Clone, Copy)]
    pub struct Pmccntr(());

    #[inline(always)]
    fn pmccntr() -> u64 {
        let v: u32;
        // SAFETY: only called once the probe child read it without a trap
        // (PMUSERENR.EN set); no memory touched.
        unsafe { asm!("mrc p15, 0, {v}, c9, c13, 0", v = out(reg) v, options(nostack, nomem)) };
        u64::from(v)
    }

    const PMU_USER_OFF: i32 = 10;
    const CYCLES_OFF: i32 = 11;

    /// Runs in the probe child: PMUSERENR.EN, then PMCNTENSET bit 31, then
    /// whether PMCCNTR advances. Each read only happens once the previous one
    /// said it may.
    fn probe_pmccntr() -> i32 {
        let user: u32;
        // SAFETY: PMUSERENR is read-only at PL0 on ARMv7 (a hypervisor may trap
        // it: the child then dies of SIGILL, which the parent reports).
        unsafe { asm!("mrc p15, 0, {v}, c9, c14, 0", v = out(reg) user, options(nostack, nomem)) };
        if user & 1 == 0 {
            return PMU_USER_OFF;
        }
        let enabled: u32;
        // SAFETY: readable at PL0 once PMUSERENR.EN is set (checked above).
        unsafe {
            asm!("mrc p15, 0, {v}, c9, c12, 1", v = out(reg) enabled, options(nostack, nomem))
        };
        if enabled & (1 << 31) == 0 {
            return CYCLES_OFF;
        }
        super::advances(pmccntr)
    }

    impl Pmccntr {
        /// Checks, in a child process, that user access is enabled, the cycle
        /// counter runs, and reading it does not trap.
        pub fn open() -> Result<Self, Unavailable> {
            static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
            super::probe_once(
                &PROBE,
                SourceId::Pmccntr,
                "PMCCNTR",
                probe_pmccntr,
                &[
                    (
                        PMU_USER_OFF,
                        "user access to the PMU is disabled (PMUSERENR.EN = 0; a kernel module must enable it)",
                    ),
                    (
                        CYCLES_OFF,
                        "the cycle counter is not enabled (PMCNTENSET bit 31)",
                    ),
                ],
            )?;
            Ok(Pmccntr(()))
        }
    }

    impl Counter for Pmccntr {
        #[inline(always)]
        fn read(&self) -> u64 {
            pmccntr()
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::sys::{probe_in_child, ChildExit};

        #[test]
        fn pmccntr_opens_or_says_why_in_one_line() {
            match Pmccntr::open() {
                Ok(p) => {
                    let _ = p.read();
                }
                Err(e) => {
                    assert_eq!(e.source_name, "pmccntr");
                    assert!(!e.reason.is_empty() && !e.reason.contains('\n'), "{e}");
                }
            }
        }

        #[test]
        fn a_raw_pmccntr_read_either_works_or_traps_in_the_child() {
            // What the probe guards against: without PMUSERENR.EN the read traps.
            match probe_in_child(|| {
                std::hint::black_box(pmccntr());
                0
            })
            .unwrap()
            {
                ChildExit::Code(0) | ChildExit::Signal(libc::SIGILL) => {}
                other => panic!("{other:?}"),
            }
        }

        #[test]
        fn cntvct_opens_or_says_why() {
            match Cntvct::open() {
                Ok(c) => {
                    assert!(c.read() > 0);
                }
                Err(e) => assert!(e.reason.contains("CNTVCT"), "{e}"),
            }
        }
    }
}

/// The probing the ARM counters share, on any architecture.
#[cfg(test)]
mod probe_tests {
    use super::*;
    use std::cell::Cell;

    fn reason(r: Result<(), Unavailable>) -> String {
        r.unwrap_err().reason
    }

    #[test]
    fn a_probe_is_run_once_and_its_end_explained() {
        static OK: OnceLock<Result<(), String>> = OnceLock::new();
        assert!(probe_once(&OK, SourceId::Cntvct, "cntvct", || 0, &[]).is_ok());
        // Cached: a second probe is not run.
        assert!(probe_once(&OK, SourceId::Cntvct, "cntvct", || 3, &[]).is_ok());

        static STUCK: OnceLock<Result<(), String>> = OnceLock::new();
        let r = probe_once(&STUCK, SourceId::Cntvct, "cntvct", || PROBE_STUCK, &[]);
        assert_eq!(reason(r), "cntvct does not advance");

        static NAMED: OnceLock<Result<(), String>> = OnceLock::new();
        let codes = [(7, "the PMU is off"), (8, "other")];
        let r = probe_once(&NAMED, SourceId::Pmccntr, "pmccntr", || 7, &codes);
        assert_eq!(reason(r), "the PMU is off");

        static OTHER: OnceLock<Result<(), String>> = OnceLock::new();
        let r = probe_once(&OTHER, SourceId::Pmccntr, "pmccntr", || 9, &codes);
        assert_eq!(reason(r), "the probe of pmccntr exited with code 9");
    }

    #[test]
    fn a_trap_is_told_from_another_death() {
        fn ill() -> i32 {
            // SAFETY: raise() is async-signal-safe; the child dies of it.
            unsafe { libc::raise(libc::SIGILL) };
            0
        }
        fn abort() -> i32 {
            // SAFETY: as above.
            unsafe { libc::raise(libc::SIGABRT) };
            0
        }
        static PMU: OnceLock<Result<(), String>> = OnceLock::new();
        let r = probe_once(&PMU, SourceId::Pmccntr, "pmccntr", ill, &[]);
        assert_eq!(
            reason(r),
            format!(
                "reading pmccntr traps (SIGILL): {}",
                trap_hint(SourceId::Pmccntr)
            )
        );
        assert!(trap_hint(SourceId::Pmccntr).contains("PMUSERENR.EN"));
        static TIMER: OnceLock<Result<(), String>> = OnceLock::new();
        let r = probe_once(&TIMER, SourceId::Cntvct, "cntvct", ill, &[]);
        assert!(reason(r).ends_with(
            "this core has no generic timer, or the kernel does not let user space read it"
        ));
        static ABORT: OnceLock<Result<(), String>> = OnceLock::new();
        let r = probe_once(&ABORT, SourceId::Cntvct, "cntvct", abort, &[]);
        assert_eq!(
            reason(r),
            format!("the probe of cntvct died of signal {}", libc::SIGABRT)
        );
    }

    #[test]
    fn a_counter_advances_or_is_stuck() {
        assert_eq!(advances(|| 5), PROBE_STUCK);
        let n = Cell::new(0u64);
        // Moves on its 1000th read only.
        let slow = || {
            n.set(n.get() + 1);
            n.get() / 1000
        };
        assert_eq!(advances(slow), 0);
        assert_eq!(n.get(), 1000);
    }
}
