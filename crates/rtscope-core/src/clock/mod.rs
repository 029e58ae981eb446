//! Time sources: every clock the machine offers, how much reading it costs,
//! and how to turn its counts into nanoseconds.
//!
//! A measured interval is `t2 - t1 = tP + tR`: the time of the thing measured
//! plus the cost of reading the clock. This module lists the sources
//! ([`SourceId`]), opens them ([`Source`]), converts their counts ([`Scale`],
//! calibrated by [`calibrate`]), checks counters across CPUs ([`warp`]),
//! measures read costs ([`measure`]) and offers two tools to applications:
//! [`Stopwatch`] (subtracts its own read cost) and [`PeriodProbe`] (period and
//! jitter of a control loop).
//!
//! # Sources
//!
//! | name | what it reads |
//! |---|---|
//! | `monotonic`, `monotonic-raw`, `realtime`, `boottime`, `tai`, `monotonic-coarse`, `realtime-coarse` | `clock_gettime` through the vDSO |
//! | `gettimeofday` | `gettimeofday` (µs) |
//! | `monotonic-syscall` | `syscall(SYS_clock_gettime, CLOCK_MONOTONIC)`: the kernel entered |
//! | `tsc`, `rdtscp`, `lfence-tsc` | x86-64 time-stamp counter: `rdtsc`, `rdtscp`, `lfence; rdtsc` |
//! | `cntvct` | ARM generic timer virtual count (`isb; mrs cntvct_el0`; 32-bit: `mrrc` CNTVCT) |
//! | `perf-cycles` | aarch64 PMU cycle counter through perf_event, read in user space |
//! | `pmccntr` | armv7 PMU cycle counter (PMCCNTR), where user access is enabled |
//!
//! Each architecture's code compiles only for that architecture; elsewhere the
//! source opens as [`Unavailable`] with the reason, never as an error.
//!
//! # Reading without dispatch
//!
//! The [`Counter`] trait has one `#[inline(always)]` method. The measurement
//! loops are generic over it and are instantiated once per concrete counter
//! (through the crate-internal `with_counter!` match), so the measured cost is
//! the read itself, not a virtual call.

pub mod calibrate;
mod declared;
pub mod measure;
mod posix;
pub mod probe;
pub mod stopwatch;
pub mod warp;

// The ARM counters themselves are built on ARM only; the probing they share
// is plain Linux and is built (and tested) everywhere.
#[cfg_attr(
    not(any(target_arch = "aarch64", target_arch = "arm")),
    allow(dead_code, unused_imports)
)]
pub mod arm;
#[cfg(target_arch = "x86_64")]
pub mod x86;

use serde::{Deserialize, Serialize};

pub use calibrate::Calibration;
pub use posix::{Gettimeofday, PosixCounter, SyscallCounter};
pub use probe::{PeriodProbe, PeriodStats};
pub use stopwatch::Stopwatch;

/// A clock or counter that can be read: the hot-path interface.
pub trait Counter {
    /// The current count (ns for POSIX clocks, ticks for counters).
    fn read(&self) -> u64;
}

impl<C: Counter + ?Sized> Counter for &C {
    #[inline(always)]
    fn read(&self) -> u64 {
        (**self).read()
    }
}

/// Every time source rtscope knows, on every architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceId {
    /// `CLOCK_MONOTONIC` through the vDSO.
    Monotonic,
    /// `CLOCK_MONOTONIC_RAW`: not slewed by NTP.
    MonotonicRaw,
    /// `CLOCK_REALTIME`: wall-clock time, may step.
    Realtime,
    /// `CLOCK_BOOTTIME`: monotonic, counting suspend.
    Boottime,
    /// `CLOCK_TAI`: International Atomic Time.
    Tai,
    /// `CLOCK_MONOTONIC_COARSE`: the last tick's time, cheap and coarse.
    MonotonicCoarse,
    /// `CLOCK_REALTIME_COARSE`: the last tick's wall-clock time.
    RealtimeCoarse,
    /// `gettimeofday(2)`: wall-clock time in µs.
    Gettimeofday,
    /// `CLOCK_MONOTONIC` through the real system call, not the vDSO.
    MonotonicSyscall,
    /// x86-64 `rdtsc`: the time-stamp counter, unordered.
    Tsc,
    /// x86-64 `rdtscp`: waits for earlier instructions to finish.
    Rdtscp,
    /// x86-64 `lfence; rdtsc`: ordered after earlier loads.
    LfenceTsc,
    /// Arm `cntvct_el0`: the generic timer's virtual count.
    Cntvct,
    /// Arm cycle counter through `perf_event_open` (user-space reads).
    PerfCycles,
    /// Arm `pmccntr`: the PMU cycle counter, where user access is enabled.
    Pmccntr,
}

/// What a source's counts are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CountUnit {
    /// Nanoseconds already (POSIX clocks, gettimeofday scaled to ns).
    Ns,
    /// Counter ticks: a frequency converts them.
    Ticks,
}

impl SourceId {
    /// Every source, in the order tables list them.
    pub const ALL: [SourceId; 15] = [
        SourceId::Tsc,
        SourceId::Rdtscp,
        SourceId::LfenceTsc,
        SourceId::Cntvct,
        SourceId::PerfCycles,
        SourceId::Pmccntr,
        SourceId::Monotonic,
        SourceId::MonotonicRaw,
        SourceId::Realtime,
        SourceId::Boottime,
        SourceId::Tai,
        SourceId::MonotonicCoarse,
        SourceId::RealtimeCoarse,
        SourceId::Gettimeofday,
        SourceId::MonotonicSyscall,
    ];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            SourceId::Monotonic => "monotonic",
            SourceId::MonotonicRaw => "monotonic-raw",
            SourceId::Realtime => "realtime",
            SourceId::Boottime => "boottime",
            SourceId::Tai => "tai",
            SourceId::MonotonicCoarse => "monotonic-coarse",
            SourceId::RealtimeCoarse => "realtime-coarse",
            SourceId::Gettimeofday => "gettimeofday",
            SourceId::MonotonicSyscall => "monotonic-syscall",
            SourceId::Tsc => "tsc",
            SourceId::Rdtscp => "rdtscp",
            SourceId::LfenceTsc => "lfence-tsc",
            SourceId::Cntvct => "cntvct",
            SourceId::PerfCycles => "perf-cycles",
            SourceId::Pmccntr => "pmccntr",
        }
    }

    /// Looks a source up by name.
    pub fn from_name(name: &str) -> Option<SourceId> {
        SourceId::ALL.into_iter().find(|s| s.name() == name)
    }

    /// One line saying what the source reads.
    pub fn description(self) -> &'static str {
        match self {
            SourceId::Monotonic => "CLOCK_MONOTONIC via the vDSO",
            SourceId::MonotonicRaw => "CLOCK_MONOTONIC_RAW via the vDSO (not slewed by NTP)",
            SourceId::Realtime => "CLOCK_REALTIME via the vDSO (wall clock, can step)",
            SourceId::Boottime => "CLOCK_BOOTTIME via the vDSO (counts suspend)",
            SourceId::Tai => "CLOCK_TAI via the vDSO (wall clock without leap seconds)",
            SourceId::MonotonicCoarse => "CLOCK_MONOTONIC_COARSE (last tick, no counter read)",
            SourceId::RealtimeCoarse => "CLOCK_REALTIME_COARSE (last tick, no counter read)",
            SourceId::Gettimeofday => "gettimeofday(2), microseconds",
            SourceId::MonotonicSyscall => {
                "CLOCK_MONOTONIC through syscall(SYS_clock_gettime): no vDSO"
            }
            SourceId::Tsc => "x86-64 time-stamp counter, rdtsc",
            SourceId::Rdtscp => {
                "x86-64 time-stamp counter, rdtscp (waits for earlier instructions)"
            }
            SourceId::LfenceTsc => "x86-64 time-stamp counter, lfence; rdtsc (ordered)",
            SourceId::Cntvct => {
                "ARM generic timer virtual count (isb; mrs cntvct_el0, or mrrc CNTVCT on 32-bit)"
            }
            SourceId::PerfCycles => {
                "aarch64 PMU cycle counter via perf_event, read in user space (this thread only)"
            }
            SourceId::Pmccntr => "armv7 PMU cycle counter PMCCNTR (needs user access enabled)",
        }
    }

    /// Whether the source never goes backwards on its own (wall clocks can be stepped).
    pub fn monotonic(self) -> bool {
        !matches!(
            self,
            SourceId::Realtime | SourceId::Tai | SourceId::RealtimeCoarse | SourceId::Gettimeofday
        )
    }

    /// What the counts are.
    pub fn unit(self) -> CountUnit {
        if self.is_counter() {
            CountUnit::Ticks
        } else {
            CountUnit::Ns
        }
    }

    /// A hardware counter that needs a frequency (as opposed to a kernel clock in ns).
    pub fn is_counter(self) -> bool {
        matches!(
            self,
            SourceId::Tsc
                | SourceId::Rdtscp
                | SourceId::LfenceTsc
                | SourceId::Cntvct
                | SourceId::PerfCycles
                | SourceId::Pmccntr
        )
    }

    /// Width of the count in bits: deltas are taken modulo 2^width.
    pub fn width_bits(self) -> u32 {
        match self {
            // The architecture guarantees at least 56 bits.
            SourceId::Cntvct => 56,
            SourceId::Pmccntr => 32,
            _ => 64,
        }
    }

    /// Whether the count advances while the CPU idles (a PMU cycle counter
    /// stops; calibration then busy-waits instead of sleeping).
    pub fn counts_in_idle(self) -> bool {
        !matches!(self, SourceId::PerfCycles | SourceId::Pmccntr)
    }

    /// Whether one reading means the same on every CPU and thread (a
    /// per-thread perf counter does not).
    pub fn is_global(self) -> bool {
        self != SourceId::PerfCycles
    }

    /// The POSIX clock id behind a kernel clock.
    pub fn clock_id(self) -> Option<libc::clockid_t> {
        Some(match self {
            SourceId::Monotonic | SourceId::MonotonicSyscall => libc::CLOCK_MONOTONIC,
            SourceId::MonotonicRaw => libc::CLOCK_MONOTONIC_RAW,
            SourceId::Realtime | SourceId::Gettimeofday => libc::CLOCK_REALTIME,
            SourceId::Boottime => libc::CLOCK_BOOTTIME,
            SourceId::Tai => libc::CLOCK_TAI,
            SourceId::MonotonicCoarse => libc::CLOCK_MONOTONIC_COARSE,
            SourceId::RealtimeCoarse => libc::CLOCK_REALTIME_COARSE,
            _ => return None,
        })
    }
}

impl std::fmt::Display for SourceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a source cannot be used on this machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: unavailable: {reason}")]
pub struct Unavailable {
    /// The source's name ([`SourceId::name`]).
    pub source_name: &'static str,
    /// Why it cannot be used.
    pub reason: String,
}

impl Unavailable {
    pub(crate) fn new(id: SourceId, reason: impl Into<String>) -> Self {
        Unavailable {
            source_name: id.name(),
            reason: reason.into(),
        }
    }
}

/// An opened source: one variant per concrete counter type.
#[derive(Debug)]
pub enum Source {
    /// A POSIX clock through `clock_gettime`.
    Posix(PosixCounter),
    /// `gettimeofday(2)`.
    Gettimeofday(Gettimeofday),
    /// A POSIX clock through the raw system call.
    Syscall(SyscallCounter),
    #[cfg(target_arch = "x86_64")]
    /// `rdtsc`.
    Tsc(x86::Rdtsc),
    #[cfg(target_arch = "x86_64")]
    /// `rdtscp`.
    Rdtscp(x86::Rdtscp),
    #[cfg(target_arch = "x86_64")]
    /// `lfence; rdtsc`.
    LfenceTsc(x86::LfenceRdtsc),
    #[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
    /// The generic timer's virtual count.
    Cntvct(arm::Cntvct),
    #[cfg(target_arch = "aarch64")]
    /// The cycle counter through `perf_event_open`.
    PerfCycles(arm::PerfCycles),
    #[cfg(target_arch = "arm")]
    /// `pmccntr`, the PMU cycle counter.
    Pmccntr(arm::Pmccntr),
}

/// Runs `$body` with `$c` bound to the concrete counter inside `$src` (a
/// `&Source`): the body is compiled once per counter type.
macro_rules! with_counter {
    ($src:expr, $c:ident => $body:expr) => {
        match $src {
            $crate::clock::Source::Posix($c) => $body,
            $crate::clock::Source::Gettimeofday($c) => $body,
            $crate::clock::Source::Syscall($c) => $body,
            #[cfg(target_arch = "x86_64")]
            $crate::clock::Source::Tsc($c) => $body,
            #[cfg(target_arch = "x86_64")]
            $crate::clock::Source::Rdtscp($c) => $body,
            #[cfg(target_arch = "x86_64")]
            $crate::clock::Source::LfenceTsc($c) => $body,
            #[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
            $crate::clock::Source::Cntvct($c) => $body,
            #[cfg(target_arch = "aarch64")]
            $crate::clock::Source::PerfCycles($c) => $body,
            #[cfg(target_arch = "arm")]
            $crate::clock::Source::Pmccntr($c) => $body,
        }
    };
}
pub(crate) use with_counter;

impl Counter for Source {
    #[inline(always)]
    fn read(&self) -> u64 {
        with_counter!(self, c => c.read())
    }
}

impl Source {
    /// Opens a source, or says why it is not available here.
    pub fn open(id: SourceId) -> Result<Source, Unavailable> {
        if let Some(clock) = id.clock_id() {
            if !crate::sys::clock_works(clock) {
                return Err(Unavailable::new(id, "the kernel does not offer this clock"));
            }
        }
        match id {
            SourceId::Gettimeofday => return Ok(Source::Gettimeofday(Gettimeofday)),
            SourceId::MonotonicSyscall => {
                return Ok(Source::Syscall(SyscallCounter(libc::CLOCK_MONOTONIC)))
            }
            _ => {}
        }
        if let Some(clock) = id.clock_id() {
            return Ok(Source::Posix(PosixCounter { id, clock }));
        }
        open_counter(id)
    }

    /// Which source this is.
    pub fn id(&self) -> SourceId {
        match self {
            Source::Posix(p) => p.id,
            Source::Gettimeofday(_) => SourceId::Gettimeofday,
            Source::Syscall(_) => SourceId::MonotonicSyscall,
            #[cfg(target_arch = "x86_64")]
            Source::Tsc(_) => SourceId::Tsc,
            #[cfg(target_arch = "x86_64")]
            Source::Rdtscp(_) => SourceId::Rdtscp,
            #[cfg(target_arch = "x86_64")]
            Source::LfenceTsc(_) => SourceId::LfenceTsc,
            #[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
            Source::Cntvct(_) => SourceId::Cntvct,
            #[cfg(target_arch = "aarch64")]
            Source::PerfCycles(_) => SourceId::PerfCycles,
            #[cfg(target_arch = "arm")]
            Source::Pmccntr(_) => SourceId::Pmccntr,
        }
    }

    /// The resolution the kernel reports for a kernel clock, ns
    /// (`clock_getres`; 1000 for gettimeofday). `None` for counters (1 tick).
    pub fn kernel_resolution_ns(&self) -> Option<u64> {
        match self.id() {
            SourceId::Gettimeofday => Some(1000),
            id => id.clock_id().and_then(|c| crate::sys::clock_res_ns(c).ok()),
        }
    }

    /// The frequency the hardware or the kernel declares for a counter, if any
    /// (CPUID, the hypervisor, the kernel log, `cntfrq_el0`), with its origin.
    pub fn declared_frequencies(&self) -> Vec<calibrate::DeclaredFrequency> {
        #[allow(clippy::match_single_binding)]
        match self {
            #[cfg(target_arch = "x86_64")]
            Source::Tsc(_) | Source::Rdtscp(_) | Source::LfenceTsc(_) => {
                x86::declared_frequencies()
            }
            #[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
            Source::Cntvct(_) => arm::declared_frequencies(),
            _ => Vec::new(),
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn open_counter(id: SourceId) -> Result<Source, Unavailable> {
    match id {
        SourceId::Tsc => x86::Rdtsc::open().map(Source::Tsc),
        SourceId::Rdtscp => x86::Rdtscp::open().map(Source::Rdtscp),
        SourceId::LfenceTsc => x86::LfenceRdtsc::open().map(Source::LfenceTsc),
        other => Err(Unavailable::new(other, not_here(other))),
    }
}

#[cfg(target_arch = "aarch64")]
fn open_counter(id: SourceId) -> Result<Source, Unavailable> {
    match id {
        SourceId::Cntvct => arm::Cntvct::open().map(Source::Cntvct),
        SourceId::PerfCycles => arm::PerfCycles::open().map(Source::PerfCycles),
        other => Err(Unavailable::new(other, not_here(other))),
    }
}

#[cfg(target_arch = "arm")]
fn open_counter(id: SourceId) -> Result<Source, Unavailable> {
    match id {
        SourceId::Cntvct => arm::Cntvct::open().map(Source::Cntvct),
        SourceId::Pmccntr => arm::Pmccntr::open().map(Source::Pmccntr),
        other => Err(Unavailable::new(other, not_here(other))),
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "arm")))]
fn open_counter(id: SourceId) -> Result<Source, Unavailable> {
    Err(Unavailable::new(id, not_here(id)))
}

/// "x86-64 only (this machine is aarch64)".
fn not_here(id: SourceId) -> String {
    let arch = match id {
        SourceId::Tsc | SourceId::Rdtscp | SourceId::LfenceTsc => "x86-64",
        SourceId::Cntvct => "ARM",
        SourceId::PerfCycles => "aarch64",
        _ => "armv7",
    };
    format!("{arch} only (this machine is {})", std::env::consts::ARCH)
}

/// Converts a source's counts to nanoseconds.
///
/// Keeps the frequency as a float for reports and a fixed-point multiplier
/// (`ns = ticks * mult >> 44`, like the kernel's clocksource `mult`/`shift`)
/// for the hot path.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Scale {
    /// Counts per second (1e9 for sources that count ns).
    pub hz: f64,
    #[serde(skip)]
    mult: u64,
}

/// Fixed-point shift: 44 bits keep the multiplier's relative error below 1e-13
/// for counters from 1 kHz up.
const SCALE_SHIFT: u32 = 44;

impl Scale {
    /// Identity: the source counts nanoseconds.
    pub fn ns() -> Scale {
        Scale::from_hz(1e9)
    }

    /// A counter running at `hz` counts per second (must be positive and finite).
    pub fn from_hz(hz: f64) -> Scale {
        let hz = if hz.is_finite() && hz > 0.0 { hz } else { 1e9 };
        let mult = (1e9 / hz * (1u64 << SCALE_SHIFT) as f64).round();
        Scale {
            hz,
            mult: if mult >= u64::MAX as f64 {
                u64::MAX
            } else {
                mult.max(1.0) as u64
            },
        }
    }

    /// Nanoseconds per count.
    pub fn ns_per_tick(&self) -> f64 {
        1e9 / self.hz
    }

    /// `ticks` in ns, with sub-ns precision.
    #[inline]
    pub fn to_ns_f64(&self, ticks: f64) -> f64 {
        ticks * 1e9 / self.hz
    }

    /// `ticks` in ns, rounded to the nearest ns, integer arithmetic only (for hot paths).
    #[inline]
    pub fn to_ns(&self, ticks: u64) -> u64 {
        let v = (u128::from(ticks) * u128::from(self.mult) + (1u128 << (SCALE_SHIFT - 1)))
            >> SCALE_SHIFT;
        if v > u128::from(u64::MAX) {
            u64::MAX
        } else {
            v as u64
        }
    }

    /// A signed tick difference in ns (magnitude rounded to the nearest ns).
    #[inline]
    pub fn signed_to_ns(&self, ticks: i64) -> i64 {
        let ns = self.to_ns(ticks.unsigned_abs()).min(i64::MAX as u64) as i64;
        if ticks < 0 {
            -ns
        } else {
            ns
        }
    }
}

/// The difference `later - earlier` of two readings of a counter `width_bits`
/// wide. Narrower counters are differenced modulo 2^width (one wrap between the
/// readings is undone); for 64-bit sources the difference is signed, so a wall
/// clock stepped backwards gives a negative value.
#[inline(always)]
pub fn delta(earlier: u64, later: u64, width_bits: u32) -> i64 {
    let d = later.wrapping_sub(earlier);
    if width_bits >= 64 {
        d as i64
    } else {
        (d & ((1u64 << width_bits) - 1)) as i64
    }
}

/// What the report says about a source (available or not).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SourceInfo {
    /// The source's name (`monotonic`, `lfence-tsc`, ...).
    pub name: String,
    /// What it is, in a line.
    pub description: String,
    /// Whether it can be read on this machine.
    pub available: bool,
    /// Why it cannot be used here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// Whether it never goes backwards.
    pub monotonic: bool,
    /// What its counts are (ns, µs or counter ticks).
    pub unit: CountUnit,
    /// How many bits the counter has before it wraps.
    pub width_bits: u32,
    /// Size of one count in ns: `clock_getres` for kernel clocks, 1/frequency
    /// for counters (after calibration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution_ns: Option<f64>,
    /// Counts per second used to convert to ns (counters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_hz: Option<f64>,
    /// The counter frequency measured against CLOCK_MONOTONIC_RAW.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
    /// The cross-CPU consistency test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warp: Option<warp::WarpResult>,
}

impl SourceInfo {
    /// The entry for a source that could not be opened.
    pub fn unavailable(u: &Unavailable, id: SourceId) -> Self {
        SourceInfo {
            name: id.name().into(),
            description: id.description().into(),
            available: false,
            unavailable_reason: Some(u.reason.clone()),
            monotonic: id.monotonic(),
            unit: id.unit(),
            width_bits: id.width_bits(),
            resolution_ns: None,
            frequency_hz: None,
            calibration: None,
            warp: None,
        }
    }

    /// The entry for an opened source with its scale (and calibration).
    pub fn available(src: &Source, scale: Scale, calibration: Option<Calibration>) -> Self {
        let id = src.id();
        let resolution_ns = if id.is_counter() {
            Some(scale.ns_per_tick())
        } else {
            src.kernel_resolution_ns().map(|r| r as f64)
        };
        SourceInfo {
            name: id.name().into(),
            description: id.description().into(),
            available: true,
            unavailable_reason: None,
            monotonic: id.monotonic(),
            unit: id.unit(),
            width_bits: id.width_bits(),
            resolution_ns,
            frequency_hz: id.is_counter().then_some(scale.hz),
            calibration,
            warp: None,
        }
    }
}

/// Errors of the embeddable tools ([`Stopwatch`], [`PeriodProbe`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClockError {
    #[error(transparent)]
    /// The source asked for cannot be used here.
    Unavailable(#[from] Unavailable),
    #[error("no usable time source")]
    /// No source on this machine can be used.
    NoSource,
    #[error("{0}")]
    /// Reading or calibrating a source failed.
    Io(#[from] std::io::Error),
}

/// Opens a source and, for a counter, calibrates it over `window_ns`.
/// Kernel clocks get [`Scale::ns`] without calibration.
pub fn open_calibrated(
    id: SourceId,
    window_ns: u64,
) -> Result<(Source, Scale, Option<Calibration>), Unavailable> {
    open_calibrated_until(id, window_ns, &std::sync::atomic::AtomicBool::new(false))
}

/// [`open_calibrated`], the calibration cut short when `stop` is raised
/// ([`calibrate::calibrate_until`]).
pub fn open_calibrated_until(
    id: SourceId,
    window_ns: u64,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<(Source, Scale, Option<Calibration>), Unavailable> {
    let src = Source::open(id)?;
    if !id.is_counter() {
        return Ok((src, Scale::ns(), None));
    }
    let cal = calibrate::calibrate_source_until(&src, window_ns, stop);
    Ok((src, Scale::from_hz(cal.hz), Some(cal)))
}

/// The sources a stopwatch prefers, best first: an ordered read of an
/// invariant counter, then the raw counter, then the kernel's monotonic clock.
pub fn preferred_sources() -> Vec<SourceId> {
    let mut v = Vec::new();
    #[cfg(target_arch = "x86_64")]
    if x86::tsc_invariant().invariant() {
        v.extend([SourceId::LfenceTsc, SourceId::Tsc]);
    }
    #[cfg(any(target_arch = "aarch64", target_arch = "arm"))]
    v.push(SourceId::Cntvct);
    v.extend([SourceId::MonotonicRaw, SourceId::Monotonic]);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for id in SourceId::ALL {
            assert_eq!(SourceId::from_name(id.name()), Some(id));
            let json = serde_json::to_string(&id).unwrap();
            assert_eq!(json, format!("\"{}\"", id.name()));
        }
        assert_eq!(SourceId::from_name("nosuch"), None);
    }

    #[test]
    fn scale_identity_and_conversion() {
        let s = Scale::ns();
        for t in [0u64, 1, 999, 1_000_000_007, u64::MAX / 2] {
            assert_eq!(s.to_ns(t), t);
        }
        // 2.5 GHz: 0.4 ns per tick.
        let s = Scale::from_hz(2.5e9);
        assert_eq!(s.to_ns(25), 10);
        assert_eq!(s.to_ns(24), 10); // 9.6 rounds to 10
        assert_eq!(s.to_ns(2_500_000_000), 1_000_000_000);
        assert!((s.to_ns_f64(25.0) - 10.0).abs() < 1e-9);
        // 19.2 MHz (a typical arm generic timer): 52.083 ns per tick.
        let s = Scale::from_hz(19.2e6);
        assert_eq!(s.to_ns(192), 10_000);
        assert_eq!(s.signed_to_ns(-192), -10_000);
        // Integer path matches the exact value within 1 ns over an hour of ticks.
        let s = Scale::from_hz(2_445_424_000.0);
        let ticks = 2_445_424_000u64 * 3600 + 12_345;
        let exact = (ticks as f64 * 1e9 / 2_445_424_000.0).round();
        assert!((s.to_ns(ticks) as f64 - exact).abs() <= 1.0);
    }

    /// Every source's properties, pinned: (monotonic, counter, width,
    /// counts in idle, global, POSIX clock).
    #[test]
    fn source_properties() {
        use SourceId::*;
        type Row = (
            SourceId,
            bool,
            bool,
            u32,
            bool,
            bool,
            Option<libc::clockid_t>,
        );
        let rows: [Row; 15] = [
            (Tsc, true, true, 64, true, true, None),
            (Rdtscp, true, true, 64, true, true, None),
            (LfenceTsc, true, true, 64, true, true, None),
            (Cntvct, true, true, 56, true, true, None),
            (PerfCycles, true, true, 64, false, false, None),
            (Pmccntr, true, true, 32, false, true, None),
            (
                Monotonic,
                true,
                false,
                64,
                true,
                true,
                Some(libc::CLOCK_MONOTONIC),
            ),
            (
                MonotonicRaw,
                true,
                false,
                64,
                true,
                true,
                Some(libc::CLOCK_MONOTONIC_RAW),
            ),
            (
                Realtime,
                false,
                false,
                64,
                true,
                true,
                Some(libc::CLOCK_REALTIME),
            ),
            (
                Boottime,
                true,
                false,
                64,
                true,
                true,
                Some(libc::CLOCK_BOOTTIME),
            ),
            (Tai, false, false, 64, true, true, Some(libc::CLOCK_TAI)),
            (
                MonotonicCoarse,
                true,
                false,
                64,
                true,
                true,
                Some(libc::CLOCK_MONOTONIC_COARSE),
            ),
            (
                RealtimeCoarse,
                false,
                false,
                64,
                true,
                true,
                Some(libc::CLOCK_REALTIME_COARSE),
            ),
            (
                Gettimeofday,
                false,
                false,
                64,
                true,
                true,
                Some(libc::CLOCK_REALTIME),
            ),
            (
                MonotonicSyscall,
                true,
                false,
                64,
                true,
                true,
                Some(libc::CLOCK_MONOTONIC),
            ),
        ];
        assert_eq!(rows.len(), SourceId::ALL.len());
        let mut descriptions = std::collections::HashSet::new();
        for (id, mono, counter, width, idle, global, clock) in rows {
            assert_eq!(id.monotonic(), mono, "{id}");
            assert_eq!(id.is_counter(), counter, "{id}");
            let unit = if counter {
                CountUnit::Ticks
            } else {
                CountUnit::Ns
            };
            assert_eq!(id.unit(), unit, "{id}");
            assert_eq!(id.width_bits(), width, "{id}");
            assert_eq!(id.counts_in_idle(), idle, "{id}");
            assert_eq!(id.is_global(), global, "{id}");
            assert_eq!(id.clock_id(), clock, "{id}");
            assert_eq!(id.to_string(), id.name());
            // One line of its own, naming what is read.
            let d = id.description();
            assert!(d.len() > 10 && !d.contains('\n'), "{id}: {d}");
            assert!(descriptions.insert(d), "{id}: {d}");
        }
        assert!(Monotonic.description().contains("CLOCK_MONOTONIC"));
        assert!(Tsc.description().contains("rdtsc"));
    }

    #[test]
    fn kernel_clocks_open_as_their_kind() {
        let tod = Source::open(SourceId::Gettimeofday).unwrap();
        assert!(matches!(tod, Source::Gettimeofday(_)));
        // gettimeofday counts whole microseconds.
        assert_eq!(tod.read() % 1000, 0);
        assert_eq!(tod.kernel_resolution_ns(), Some(1000));
        let sys = Source::open(SourceId::MonotonicSyscall).unwrap();
        assert!(matches!(sys, Source::Syscall(_)));
        for id in [
            SourceId::Boottime,
            SourceId::MonotonicCoarse,
            SourceId::Monotonic,
        ] {
            let s = Source::open(id).unwrap();
            assert!(matches!(s, Source::Posix(_)), "{id}");
            let want = crate::sys::clock_res_ns(id.clock_id().unwrap()).unwrap();
            assert_eq!(s.kernel_resolution_ns(), Some(want), "{id}");
            assert!(s.declared_frequencies().is_empty());
        }
        // The coarse clock moves by ticks (a jiffy), not by ns.
        let coarse = Source::open(SourceId::MonotonicCoarse).unwrap();
        assert!(coarse.kernel_resolution_ns().unwrap() > 1000);
    }

    /// The architecture's counter (TSC: CPUID and the hypervisor; aarch64:
    /// cntfrq_el0) declares what its module reads, and has no kernel
    /// resolution. Not on armv7: qemu-arm, where CI runs these tests, traps
    /// the CNTFRQ read as an illegal instruction.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn the_counter_declares_what_the_hardware_says() {
        #[cfg(target_arch = "x86_64")]
        let (id, declared) = (SourceId::Tsc, x86::declared_frequencies());
        #[cfg(target_arch = "aarch64")]
        let (id, declared) = (SourceId::Cntvct, arm::declared_frequencies());
        let Ok(c) = Source::open(id) else {
            return;
        };
        assert_eq!(c.kernel_resolution_ns(), None);
        let want: Vec<_> = declared.into_iter().map(|d| d.hz).collect();
        let got: Vec<_> = c.declared_frequencies().into_iter().map(|d| d.hz).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn only_counters_are_calibrated() {
        let (src, scale, cal) = open_calibrated(SourceId::Monotonic, 1_000_000).unwrap();
        assert_eq!(src.id(), SourceId::Monotonic);
        assert_eq!(scale, Scale::ns());
        assert!(cal.is_none());
        #[cfg(target_arch = "x86_64")]
        if let Ok((_, _, cal)) = open_calibrated(SourceId::Tsc, 5_000_000) {
            assert!(cal.is_some());
        }
    }

    #[test]
    fn unavailable_names_the_architecture() {
        let arch = |id| not_here(id).split(' ').next().unwrap().to_string();
        for id in [SourceId::Tsc, SourceId::Rdtscp, SourceId::LfenceTsc] {
            assert_eq!(arch(id), "x86-64");
        }
        assert_eq!(arch(SourceId::Cntvct), "ARM");
        assert_eq!(arch(SourceId::PerfCycles), "aarch64");
        assert_eq!(arch(SourceId::Pmccntr), "armv7");
        assert!(not_here(SourceId::Tsc).ends_with(&format!("is {})", std::env::consts::ARCH)));
    }

    #[test]
    fn ns_per_tick_and_saturation() {
        assert_eq!(Scale::from_hz(2.5e9).ns_per_tick(), 0.4);
        assert_eq!(Scale::ns().ns_per_tick(), 1.0);
        // 1 kHz: one tick is a millisecond, so u64::MAX ticks overflow the ns.
        let slow = Scale::from_hz(1e3);
        assert_eq!(slow.to_ns(u64::MAX), u64::MAX);
        assert_eq!(slow.signed_to_ns(i64::MIN + 1), -i64::MAX);
        assert_eq!(slow.to_ns(3), 3_000_000);
    }

    #[test]
    fn scale_rejects_nonsense() {
        assert_eq!(Scale::from_hz(0.0).hz, 1e9);
        assert_eq!(Scale::from_hz(f64::NAN).hz, 1e9);
    }

    #[test]
    fn wrap_around_is_undone() {
        // 32-bit counter wrapping between the readings.
        assert_eq!(delta(0xFFFF_FFF0, 0x0000_0010, 32), 0x20);
        assert_eq!(delta(5, 9, 32), 4);
        // 56-bit counter.
        let top = (1u64 << 56) - 3;
        assert_eq!(delta(top, 4, 56), 7);
        // 64-bit: plain difference, wrap included, signed for steps back.
        assert_eq!(delta(u64::MAX - 1, 3, 64), 5);
        assert_eq!(delta(100, 40, 64), -60);
        // Bits above the width are ignored (a PMU may report garbage there).
        assert_eq!(delta(0xABCD_0000_0001, 0x1234_0000_0003, 32), 2);
    }

    #[test]
    fn posix_sources_open_here() {
        for id in [
            SourceId::Monotonic,
            SourceId::MonotonicRaw,
            SourceId::Realtime,
            SourceId::Gettimeofday,
            SourceId::MonotonicSyscall,
        ] {
            let s = Source::open(id).unwrap();
            assert_eq!(s.id(), id);
            let a = s.read();
            let b = s.read();
            assert!(b >= a || !id.monotonic());
        }
    }

    #[test]
    fn foreign_sources_are_unavailable_not_errors() {
        #[cfg(target_arch = "x86_64")]
        let foreign = [SourceId::Cntvct, SourceId::PerfCycles, SourceId::Pmccntr];
        #[cfg(not(target_arch = "x86_64"))]
        let foreign = [SourceId::Tsc, SourceId::Rdtscp, SourceId::LfenceTsc];
        for id in foreign {
            let e = Source::open(id).unwrap_err();
            assert!(e.reason.contains("only"), "{e}");
        }
    }
}
