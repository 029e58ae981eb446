//! What the hardware, the hypervisor or the kernel declare about a counter:
//! its frequency and, for an x86 TSC, whether its rate is invariant. The
//! architecture modules read them; [`super::calibrate`] records them beside
//! its measurement.

use serde::{Deserialize, Serialize};

/// A frequency the hardware, the hypervisor or the kernel declares.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeclaredFrequency {
    /// Where it comes from (`cpuid 0x15 ...`, `kernel log ...`, `cntfrq_el0`).
    pub origin: String,
    /// The declared frequency, Hz.
    pub hz: f64,
}

/// Whether an x86 TSC runs at a constant rate in every state.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct TscInvariance {
    /// Kernel flag: constant rate across P-states.
    pub constant_tsc: bool,
    /// Kernel flag: keeps running in deep C-states.
    pub nonstop_tsc: bool,
    /// Kernel flag: the frequency is known from CPUID/the hypervisor, not measured.
    pub tsc_known_freq: bool,
    /// CPUID 0x80000007 EDX bit 8 (invariant TSC), where the leaf exists.
    pub cpuid_invariant: Option<bool>,
}

impl TscInvariance {
    /// Constant rate and non-stop: usable as a clock.
    pub fn invariant(&self) -> bool {
        (self.constant_tsc && self.nonstop_tsc) || self.cpuid_invariant == Some(true)
    }
}
