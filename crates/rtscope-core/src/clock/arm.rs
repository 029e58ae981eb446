//! ARM counters.
//!
//! - aarch64 `cntvct`: the generic timer's virtual count, a fixed-frequency
//!   counter shared by all CPUs (what the kernel's clocksource reads), with an
//!   `isb` before the read so that it is not taken early. Its frequency is
//!   declared in `cntfrq_el0`.
//! - aarch64 `perf-cycles`: the PMU cycle counter. User space may only read it
//!   through perf_event: the event is opened for this thread, its user page is
//!   mapped, and a read follows the page's seqlock protocol (offset + hardware
//!   counter), as the kernel's libperf does. The kernel must allow it
//!   (`sysctl kernel.perf_user_access=1`). It counts CPU cycles of this thread
//!   only, and stops while the CPU idles: a cost meter, not a clock.
//! - armv7 `pmccntr`: the PMU cycle counter PMCCNTR, read directly when the
//!   kernel (or a module) has set PMUSERENR.EN; 32 bits wide, so differences
//!   are taken modulo 2^32.

#[cfg(target_arch = "aarch64")]
pub use aarch64::*;
#[cfg(target_arch = "arm")]
pub use armv7::*;

#[cfg(target_arch = "aarch64")]
mod aarch64 {
    use core::arch::asm;
    use std::os::fd::OwnedFd;
    use std::sync::atomic::{compiler_fence, Ordering};

    use crate::clock::calibrate::DeclaredFrequency;
    use crate::clock::{Counter, SourceId, Unavailable};
    use crate::sys;

    /// `isb; mrs cntvct_el0`.
    #[derive(Debug, Clone, Copy)]
    pub struct Cntvct;

    impl Counter for Cntvct {
        #[inline(always)]
        fn read(&self) -> u64 {
            let v: u64;
            // SAFETY: Linux enables EL0 access to the virtual counter
            // (CNTKCTL_EL1.EL0VCTEN); the instructions touch no memory.
            unsafe { asm!("isb", "mrs {v}, cntvct_el0", v = out(reg) v, options(nostack, nomem)) };
            v
        }
    }

    /// The frequency in `cntfrq_el0`.
    pub fn cntfrq_hz() -> u64 {
        let v: u64;
        // SAFETY: cntfrq_el0 is readable at EL0 whenever the counter is.
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
                Unavailable::new(
                    id,
                    format!(
                        "perf_event_open: {e} (kernel.perf_event_paranoid, or no PMU in this VM)"
                    ),
                )
            })?;
            let page = sys::MappedPage::map(&fd)
                .map_err(|e| Unavailable::new(id, format!("mmap of the perf page: {e}")))?;
            let p = PerfCycles { page, _fd: fd };
            // Let the event be scheduled in, then look at the capabilities.
            let _ = p.read_raw();
            let caps = p.field_u64(PC_CAPABILITIES);
            if caps & CAP_USER_RDPMC == 0 || p.field_u32(PC_INDEX) == 0 {
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
            loop {
                let seq = self.field_u32(PC_LOCK);
                compiler_fence(Ordering::SeqCst);
                let mut count = self.field_u64(PC_OFFSET);
                let idx = self.field_u32(PC_INDEX);
                if idx != 0 && self.field_u64(PC_CAPABILITIES) & CAP_USER_RDPMC != 0 {
                    let width = u32::from(self.field_u32(PC_PMC_WIDTH) as u16).clamp(1, 64);
                    let pmc = read_pmc(idx - 1);
                    let shift = 64 - width;
                    let pmc = ((pmc << shift) as i64 >> shift) as u64;
                    count = count.wrapping_add(pmc);
                }
                compiler_fence(Ordering::SeqCst);
                if self.field_u32(PC_LOCK) == seq {
                    return count;
                }
            }
        }
    }

    impl Counter for PerfCycles {
        #[inline(always)]
        fn read(&self) -> u64 {
            self.read_raw()
        }
    }
}

#[cfg(target_arch = "arm")]
mod armv7 {
    use core::arch::asm;

    use crate::clock::{Counter, SourceId, Unavailable};

    /// PMCCNTR, read with `mrc p15, 0, rX, c9, c13, 0`.
    #[derive(Debug, Clone, Copy)]
    pub struct Pmccntr(());

    fn pmuserenr() -> u32 {
        let v: u32;
        // SAFETY: PMUSERENR is readable at PL0 on ARMv7 (read-only); no memory touched.
        unsafe { asm!("mrc p15, 0, {v}, c9, c14, 0", v = out(reg) v, options(nostack, nomem)) };
        v
    }

    fn pmcntenset() -> u32 {
        let v: u32;
        // SAFETY: readable at PL0 once PMUSERENR.EN is set (checked by the caller).
        unsafe { asm!("mrc p15, 0, {v}, c9, c12, 1", v = out(reg) v, options(nostack, nomem)) };
        v
    }

    impl Pmccntr {
        /// Checks that user access is enabled and the cycle counter runs.
        pub fn open() -> Result<Self, Unavailable> {
            let id = SourceId::Pmccntr;
            if pmuserenr() & 1 == 0 {
                return Err(Unavailable::new(
                    id,
                    "user access to the PMU is disabled (PMUSERENR.EN = 0; a kernel module must enable it)",
                ));
            }
            if pmcntenset() & (1 << 31) == 0 {
                return Err(Unavailable::new(
                    id,
                    "the cycle counter is not enabled (PMCNTENSET bit 31)",
                ));
            }
            Ok(Pmccntr(()))
        }
    }

    impl Counter for Pmccntr {
        #[inline(always)]
        fn read(&self) -> u64 {
            let v: u32;
            // SAFETY: `open` checked PMUSERENR.EN, so the read does not trap.
            unsafe { asm!("mrc p15, 0, {v}, c9, c13, 0", v = out(reg) v, options(nostack, nomem)) };
            u64::from(v)
        }
    }
}
