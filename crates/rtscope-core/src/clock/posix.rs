//! Kernel clocks: `clock_gettime` through the vDSO, `gettimeofday`, and the
//! monotonic clock through the raw system call (what a read costs when the
//! kernel has to be entered).

use super::{Counter, SourceId};
use crate::sys::{self, ClockId};

/// A POSIX clock read with `clock_gettime` (the vDSO where the kernel offers it).
#[derive(Debug, Clone, Copy)]
pub struct PosixCounter {
    /// Which source this is.
    pub id: SourceId,
    /// The clock read.
    pub clock: ClockId,
}

impl Counter for PosixCounter {
    #[inline(always)]
    fn read(&self) -> u64 {
        sys::clock_ns(self.clock)
    }
}

/// `gettimeofday(2)`, in ns (microsecond resolution).
#[derive(Debug, Clone, Copy)]
pub struct Gettimeofday;

impl Counter for Gettimeofday {
    #[inline(always)]
    fn read(&self) -> u64 {
        sys::gettimeofday_ns()
    }
}

/// A POSIX clock read through `syscall(SYS_clock_gettime)`, bypassing the vDSO.
#[derive(Debug, Clone, Copy)]
pub struct SyscallCounter(pub ClockId);

impl Counter for SyscallCounter {
    #[inline(always)]
    fn read(&self) -> u64 {
        sys::clock_ns_syscall(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syscall_and_vdso_agree() {
        let v = PosixCounter {
            id: SourceId::Monotonic,
            clock: libc::CLOCK_MONOTONIC,
        };
        let s = SyscallCounter(libc::CLOCK_MONOTONIC);
        let a = v.read();
        let b = s.read();
        let c = v.read();
        assert!(a <= b && b <= c, "{a} {b} {c}");
    }

    #[test]
    fn gettimeofday_is_realtime_in_us() {
        let g = Gettimeofday.read();
        assert_eq!(g % 1000, 0);
        let r = sys::clock_ns(libc::CLOCK_REALTIME);
        assert!(r.abs_diff(g) < 60_000_000_000);
    }
}
