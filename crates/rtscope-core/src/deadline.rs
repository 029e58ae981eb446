//! SCHED_DEADLINE: its parameters and their checks, the errors the kernel
//! gives explained, and the measurement of a deadline task's wake-up latency
//! (what rt-tests' `cyclicdeadline` measures).
//!
//! A deadline task does not arm a timer: the scheduler releases it at the
//! start of each period with its runtime, it does its job, and it gives the
//! rest of the period back with `sched_yield()`, which throttles it until the
//! next period begins. Its wake-up latency is the time from the start of the
//! period to the task running. `sched_getattr` gives only the relative
//! parameters, but the kernel shows a deadline task's absolute deadline as
//! `dl.deadline` in `/proc/PID/sched`, on the scheduler's clock; the period
//! began a relative deadline before it. The loop keeps the grid itself
//! ([`Grid`]) and asks the kernel where it stands when that is in doubt:
//!
//! - **Calibration.** A normal thread that becomes a deadline task gets its
//!   period 0 at the scheduler's clock reading inside that `sched_setattr`.
//!   Read back right after, its deadline gives the scheduler's clock against
//!   the measuring clock read just before the call ([`Calibration`]): a
//!   period start mapped with it is at most the call's duration early, so
//!   latencies are never understated by it.
//! - **Period 0 of the measurement.** The thread stays a deadline task from
//!   its set-up to its end (one that left SCHED_DEADLINE while throttled and
//!   came back was seen stuck for good, unkillable until made a normal thread
//!   from outside). It sleeps until the start, put a deadline plus 200 µs
//!   ahead so that its deadline has passed: a deadline task waking after its
//!   deadline gets a new period at the wake-up, whose start it reads back.
//! - **One wake-up per period.** Period *k* begins `k × period` later; each
//!   wake-up is for the period after the last and is measured from its
//!   start. A wake-up a period or more late counts `latency / period`
//!   overruns, as in `rtscope cyclic`.
//! - **After a wake-up later than the deadline**, the kernel may have moved
//!   its periods: it starts them anew when a replenishment comes after the
//!   deadline ("DL replenish lagged too much"), postpones a task that overran
//!   its runtime by whole periods, and releases a task whose job ran into the
//!   next period again at once. The late wake-up is measured on the grid it
//!   was due on; at the next one the loop reads the kernel's deadline and
//!   measures from the period it gives (when that has begun; otherwise it
//!   asks again at the one after). A wake-up before its period's start by
//!   the grid is not measured, is counted, and the kernel is asked likewise.
//! - **Without `/proc`**, the grid begins at the start itself (a timer
//!   never expires early: latencies at most the start's wake-up latency
//!   high), and after a late wake-up the kernel's periods are taken to begin
//!   anew at it, the latest they can (latencies a lower bound from there, as
//!   all of cyclicdeadline's are: it counts periods from its first wake-up).
//!
//! The latency is read on CLOCK_MONOTONIC_RAW, as cyclicdeadline does: the
//! scheduler's clock is not slewed by NTP either (on CLOCK_MONOTONIC the
//! calibration would drift by the slew). Sample times are moved to the run's
//! clock by the offset between the two taken at the start.
//!
//! The hot path is: yield, read the clock, subtract, push; no allocation, no
//! lock. The kernel's deadline is read (a `pread` of `/proc`, into a buffer
//! on the stack) only at the start and after a late or early wake-up.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::cyclic::{first_deadline, reached, Clock, LoopConfig, LoopEnd};
use crate::sample::{Sample, SampleSink};
use crate::sys::{self, ClockId};
use crate::units::{format_cpu_list, format_ns};

/// The smallest runtime the kernel takes (it keeps runtimes in units of
/// 2^10 ns, `DL_SCALE`).
pub const MIN_RUNTIME_NS: u64 = 1 << 10;

/// A SCHED_DEADLINE reservation: `runtime_ns` of CPU time in every period
/// of `period_ns`, available within `deadline_ns` of the period's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadlineParams {
    /// CPU time per period, ns.
    pub runtime_ns: u64,
    /// Relative deadline within the period, ns.
    pub deadline_ns: u64,
    /// The period, ns.
    pub period_ns: u64,
}

/// The periods the kernel allows (`kernel.sched_deadline_period_min_us`
/// and `_max_us`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeriodLimits {
    /// Shortest period allowed, ns.
    pub min_ns: u64,
    /// Longest period allowed, ns.
    pub max_ns: u64,
}

impl PeriodLimits {
    /// The kernel's defaults: 100 µs to 2^22 µs (about 4.2 s).
    pub const DEFAULT: PeriodLimits = PeriodLimits {
        min_ns: 100_000,
        max_ns: (1 << 22) * 1000,
    };

    /// This system's limits (the defaults where the files cannot be read).
    pub fn of_system() -> PeriodLimits {
        let read = |name: &str| -> Option<u64> {
            std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
                .ok()?
                .trim()
                .parse::<u64>()
                .ok()?
                .checked_mul(1000)
        };
        PeriodLimits {
            min_ns: read("sched_deadline_period_min_us").unwrap_or(Self::DEFAULT.min_ns),
            max_ns: read("sched_deadline_period_max_us").unwrap_or(Self::DEFAULT.max_ns),
        }
    }
}

/// Which of the kernel's rules (`__checkparam_dl`) parameters break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamError {
    /// The runtime is below [`MIN_RUNTIME_NS`].
    RuntimeTooShort,
    /// The runtime is longer than the deadline.
    RuntimeAboveDeadline,
    /// The deadline is longer than the period.
    DeadlineAbovePeriod,
    /// The period is below the system's minimum.
    PeriodTooShort(u64),
    /// The period is above the system's maximum.
    PeriodTooLong(u64),
}

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamError::RuntimeTooShort => write!(
                f,
                "the runtime must be at least {MIN_RUNTIME_NS} ns (the kernel counts it in units of 1024 ns)"
            ),
            ParamError::RuntimeAboveDeadline => {
                f.write_str("the runtime must not be longer than the deadline")
            }
            ParamError::DeadlineAbovePeriod => {
                f.write_str("the deadline must not be longer than the period")
            }
            ParamError::PeriodTooShort(min) => write!(
                f,
                "the period must be at least {} (kernel.sched_deadline_period_min_us)",
                format_ns(*min)
            ),
            ParamError::PeriodTooLong(max) => write!(
                f,
                "the period must be at most {} (kernel.sched_deadline_period_max_us)",
                format_ns(*max)
            ),
        }
    }
}

impl std::error::Error for ParamError {}

impl DeadlineParams {
    /// The kernel's checks of the parameters, so that bad values are refused
    /// by the rule they break before any thread exists:
    /// `1024 ns ≤ runtime ≤ deadline ≤ period`, the period within `limits`.
    pub fn check(&self, limits: &PeriodLimits) -> Result<(), ParamError> {
        if self.runtime_ns < MIN_RUNTIME_NS {
            return Err(ParamError::RuntimeTooShort);
        }
        if self.runtime_ns > self.deadline_ns {
            return Err(ParamError::RuntimeAboveDeadline);
        }
        if self.deadline_ns > self.period_ns {
            return Err(ParamError::DeadlineAbovePeriod);
        }
        if self.period_ns < limits.min_ns {
            return Err(ParamError::PeriodTooShort(limits.min_ns));
        }
        if self.period_ns > limits.max_ns {
            return Err(ParamError::PeriodTooLong(limits.max_ns));
        }
        Ok(())
    }

    /// The share of a CPU reserved, as the kernel counts it: `runtime /
    /// period` in fixed point with 20 fractional bits (`to_ratio`).
    pub fn bandwidth(&self) -> u64 {
        ratio(self.period_ns, self.runtime_ns)
    }

    /// The reserved share of a CPU in per cent (for messages).
    pub fn percent(&self) -> f64 {
        self.runtime_ns as f64 * 100.0 / self.period_ns.max(1) as f64
    }

    /// cyclicdeadline's runtime for a task with this deadline: 60 % of it,
    /// or with more threads than CPUs `80 % × cpus / threads` of it (so that
    /// the threads together reserve at most 80 % of the CPUs); at least
    /// [`MIN_RUNTIME_NS`].
    pub fn default_runtime(deadline_ns: u64, threads: usize, cpus: usize) -> u64 {
        let percent = if threads > cpus {
            (cpus as u128 * 80 / threads.max(1) as u128) as u64
        } else {
            60
        };
        ((u128::from(deadline_ns) * u128::from(percent) / 100) as u64).max(MIN_RUNTIME_NS)
    }

    /// Makes the calling thread a deadline task with these parameters and
    /// reads back what the kernel holds. The error is explained in one line
    /// ([`explain`]).
    pub fn apply(&self) -> Result<DeadlineParams, DeadlineError> {
        if let Err(e) = sys::set_deadline(self.runtime_ns, self.deadline_ns, self.period_ns) {
            return Err(DeadlineError::explained(&e, self));
        }
        let a = sys::get_attr().map_err(|e| DeadlineError {
            errno: e.raw_os_error(),
            message: format!("cannot read back the SCHED_DEADLINE parameters: {e}"),
        })?;
        Ok(DeadlineParams {
            runtime_ns: a.runtime_ns,
            deadline_ns: a.deadline_ns,
            period_ns: a.period_ns,
        })
    }
}

/// The kernel's `to_ratio(period, runtime)`: `runtime / period` with 20
/// fractional bits (0 for a period of 0).
fn ratio(period: u64, runtime: u64) -> u64 {
    if period == 0 {
        return 0;
    }
    ((u128::from(runtime) << 20) / u128::from(period)) as u64
}

/// The share of each CPU deadline tasks may reserve together:
/// `kernel.sched_rt_runtime_us / sched_rt_period_us`. `None`: no limit
/// (a runtime of -1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BandwidthLimit {
    /// Runtime per period, µs.
    pub runtime_us: u64,
    /// The period, µs.
    pub period_us: u64,
    /// What the kernel's own servers hold of each CPU inside that share
    /// (the fair-class server since 6.12), if any.
    pub reserved: Option<ServerReserve>,
}

/// A per-CPU reservation the kernel holds out of the deadline bandwidth for
/// itself: the fair-class deadline server (`sched/fair_server/cpuN` in
/// debugfs; 50 ms of every 1 s by default since Linux 6.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerReserve {
    /// The server's runtime in each period, ns.
    pub runtime_ns: u64,
    /// The server's period, ns.
    pub period_ns: u64,
    /// Taken from the kernel's defaults because debugfs could not be read.
    pub assumed: bool,
}

impl ServerReserve {
    /// The fair server's reservation on `cpus`: the largest one read from
    /// `debugfs` (`None` where every CPU's server is off), or where nothing
    /// can be read the kernel's default on 6.12 and later (`release`), none
    /// before.
    pub fn fair_server(debugfs: &std::path::Path, cpus: &[usize], release: &str) -> Option<Self> {
        use crate::noise::throttle::{fair_server_kernel, read_fair_server, FAIR_SERVER_DEFAULT};
        let read: Vec<(u64, u64)> = cpus
            .iter()
            .filter_map(|&c| read_fair_server(debugfs, c))
            .collect();
        if read.is_empty() {
            return fair_server_kernel(release).then_some(ServerReserve {
                period_ns: FAIR_SERVER_DEFAULT.0,
                runtime_ns: FAIR_SERVER_DEFAULT.1,
                assumed: true,
            });
        }
        read.into_iter()
            .filter(|&(period, runtime)| period > 0 && runtime > 0)
            .max_by_key(|&(period, runtime)| ratio(period, runtime))
            .map(|(period_ns, runtime_ns)| ServerReserve {
                runtime_ns,
                period_ns,
                assumed: false,
            })
    }

    /// The reservation in per cent of a CPU.
    pub fn percent(&self) -> f64 {
        self.runtime_ns as f64 * 100.0 / self.period_ns.max(1) as f64
    }

    fn bandwidth(&self) -> u64 {
        ratio(self.period_ns, self.runtime_ns)
    }
}

impl BandwidthLimit {
    /// This system's limit: `None` when there is none (runtime -1) or the
    /// files cannot be read.
    pub fn of_system() -> Option<BandwidthLimit> {
        let (runtime, period) = rt_sysctls();
        Self::from_sysctls(runtime?, period?)
    }

    /// From the two sysctls (a negative runtime is no limit).
    pub fn from_sysctls(runtime_us: i64, period_us: u64) -> Option<BandwidthLimit> {
        (runtime_us >= 0).then_some(BandwidthLimit {
            runtime_us: runtime_us as u64,
            period_us,
            reserved: None,
        })
    }

    /// This limit less what `reserved` holds of each CPU.
    pub fn beside(self, reserved: Option<ServerReserve>) -> BandwidthLimit {
        BandwidthLimit { reserved, ..self }
    }

    /// What deadline tasks may still reserve of each CPU, in per cent: the
    /// limit less the kernel's own reservation.
    pub fn free_percent(&self) -> f64 {
        self.percent() - self.reserved.map_or(0.0, |r| r.percent())
    }

    /// The limit in per cent of a CPU.
    pub fn percent(&self) -> f64 {
        self.runtime_us as f64 * 100.0 / self.period_us.max(1) as f64
    }

    /// Whether deadline tasks reserving `params` together fit on `cpus` CPUs
    /// of one root domain, as admission control counts (`__dl_overflow`:
    /// the sum of the tasks' bandwidths, with the kernel's own servers', at
    /// most the limit's times the CPUs). Other deadline tasks of the system
    /// are not counted: the kernel may still refuse.
    pub fn admits(&self, params: &[DeadlineParams], cpus: usize) -> bool {
        let servers = u128::from(self.reserved.map_or(0, |r| r.bandwidth())) * cpus as u128;
        let total: u128 = params.iter().map(|p| u128::from(p.bandwidth())).sum();
        let limit = u128::from(ratio(self.period_us, self.runtime_us)) * cpus as u128;
        total + servers <= limit
    }
}

/// `kernel.sched_rt_runtime_us` and `sched_rt_period_us`, where readable.
fn rt_sysctls() -> (Option<i64>, Option<u64>) {
    let read = |name: &str| std::fs::read_to_string(format!("/proc/sys/kernel/{name}")).ok();
    (
        read("sched_rt_runtime_us").and_then(|s| s.trim().parse().ok()),
        read("sched_rt_period_us").and_then(|s| s.trim().parse().ok()),
    )
}

/// A refusal of SCHED_DEADLINE, explained in one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadlineError {
    /// The kernel's errno, if the kernel refused.
    pub errno: Option<i32>,
    /// What went wrong, for a person.
    pub message: String,
}

impl std::fmt::Display for DeadlineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeadlineError {}

impl DeadlineError {
    /// The kernel's refusal `e` of `params`, explained with this system's facts.
    pub fn explained(e: &io::Error, params: &DeadlineParams) -> DeadlineError {
        DeadlineError {
            errno: e.raw_os_error(),
            message: explain(e, params, &DeadlineFacts::gather()),
        }
    }
}

impl From<DeadlineError> for io::Error {
    fn from(e: DeadlineError) -> io::Error {
        match e.errno {
            // The errno stays readable; the text is the explanation.
            Some(n) => io::Error::new(io::Error::from_raw_os_error(n).kind(), e.message),
            None => io::Error::other(e.message),
        }
    }
}

/// What explains a refusal of SCHED_DEADLINE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadlineFacts {
    /// Whether the process runs as root.
    pub root: bool,
    /// The CPUs the calling thread may run on.
    pub allowed_cpus: Vec<usize>,
    /// The CPUs online.
    pub online_cpus: Vec<usize>,
    /// `kernel.sched_rt_runtime_us` (-1: no limit), if readable.
    pub rt_runtime_us: Option<i64>,
    /// `kernel.sched_rt_period_us`, if readable.
    pub rt_period_us: Option<u64>,
}

impl DeadlineFacts {
    /// This process's and system's facts.
    pub fn gather() -> DeadlineFacts {
        let (rt_runtime_us, rt_period_us) = rt_sysctls();
        let online_cpus = crate::units::online_cpus();
        DeadlineFacts {
            root: sys::geteuid() == 0,
            allowed_cpus: sys::affinity().unwrap_or_else(|_| online_cpus.clone()),
            online_cpus,
            rt_runtime_us,
            rt_period_us,
        }
    }
}

/// Explains in one line why the kernel refused to make a thread a deadline
/// task with `p`, and what to do.
pub fn explain(e: &io::Error, p: &DeadlineParams, facts: &DeadlineFacts) -> String {
    let asked = format!(
        "runtime {} every {} (deadline {})",
        format_ns(p.runtime_ns),
        format_ns(p.period_ns),
        format_ns(p.deadline_ns)
    );
    match e.raw_os_error() {
        Some(libc::EPERM) if !facts.root => "not allowed to use SCHED_DEADLINE: it needs root or \
             CAP_SYS_NICE (RLIMIT_RTPRIO does not grant it): run as root or grant CAP_SYS_NICE \
             (setcap cap_sys_nice+ep $(which rtscope))"
            .to_string(),
        Some(libc::EPERM)
            if facts
                .online_cpus
                .iter()
                .any(|c| !facts.allowed_cpus.contains(c)) =>
        {
            format!(
                "SCHED_DEADLINE refused: this thread may run only on CPUs {} of {}, and the kernel \
                 admits a deadline task only where it may run on every CPU of its root domain: run \
                 rtscope without taskset or a cpuset that narrows it, or make those CPUs an exclusive \
                 cpuset partition (cgroup v2: cpuset.cpus.partition=root) and run it there",
                format_cpu_list(&facts.allowed_cpus),
                format_cpu_list(&facts.online_cpus)
            )
        }
        Some(libc::EPERM) if facts.rt_runtime_us == Some(0) => "SCHED_DEADLINE refused: deadline \
             tasks may use no CPU time (kernel.sched_rt_runtime_us is 0): set it above 0 \
             (sysctl kernel.sched_rt_runtime_us=950000)"
            .to_string(),
        Some(libc::EPERM) => "SCHED_DEADLINE refused although running as root: in a container or \
             user namespace root lacks CAP_SYS_NICE, and a cpuset that is not a whole root domain \
             refuses deadline tasks (run it on the host, or in a cpuset partition)"
            .to_string(),
        Some(libc::EBUSY) => {
            let limit = match (facts.rt_runtime_us, facts.rt_period_us) {
                (Some(r), Some(per)) if r >= 0 => format!(
                    "at most {:.0}% of each of the {} CPUs (kernel.sched_rt_runtime_us {r} of \
                     sched_rt_period_us {per})",
                    r as f64 * 100.0 / per.max(1) as f64,
                    facts.online_cpus.len()
                ),
                _ => "at most kernel.sched_rt_runtime_us of every sched_rt_period_us".to_string(),
            };
            format!(
                "admission control refused SCHED_DEADLINE {asked}, {:.1}% of a CPU: deadline tasks \
                 may reserve {limit}, and other reservations hold the rest (other deadline tasks, \
                 this run's other threads, on recent kernels the fair-class server's 5% of each \
                 CPU): lower the runtime, lengthen the period, or run fewer threads",
                p.percent()
            )
        }
        Some(libc::EINVAL) => format!(
            "SCHED_DEADLINE refused {asked} as invalid: the kernel needs 1024 ns <= runtime <= \
             deadline <= period and a period within kernel.sched_deadline_period_min_us and \
             _max_us; a kernel built without SCHED_DEADLINE refuses it the same way"
        ),
        Some(libc::ENOSYS) => "this kernel has no sched_setattr system call: SCHED_DEADLINE needs \
             Linux 3.14 or later"
            .to_string(),
        _ => format!("cannot use SCHED_DEADLINE {asked}: {e}"),
    }
}

/// Where the periods of a deadline task begin: period *k* `k × period`
/// after the anchor, each wake-up for the period after the last. Times are
/// readings of the measuring clock, ns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grid {
    /// The start of the period the next wake-up is for.
    next: u64,
    period: u64,
    deadline: u64,
}

/// What a wake-up was, by the [`Grid`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// It came before its period's start by the grid: the latency is
    /// unknown.
    Early,
    /// Its latency from its period's start and the periods it overran;
    /// `late` when that is more than the relative deadline (the kernel may
    /// have moved its periods since).
    Measured {
        /// Latency from the period's start, ns.
        latency_ns: i64,
        /// Periods overrun.
        overruns: u32,
        /// More than the relative deadline late.
        late: bool,
    },
}

impl Grid {
    /// The grid of a task whose period 0 began at `anchor`.
    pub fn new(anchor: u64, period_ns: u64, deadline_ns: u64) -> Grid {
        let period = period_ns.max(1);
        Grid {
            next: anchor.saturating_add(period),
            period,
            deadline: deadline_ns,
        }
    }

    /// The start of the period the next wake-up is for.
    pub fn next_start(&self) -> u64 {
        self.next
    }

    /// Takes in a wake-up at `t`.
    #[inline]
    pub fn observe(&mut self, t: u64) -> Wake {
        let start = self.next;
        if t < start {
            return Wake::Early;
        }
        let latency = t - start;
        self.next = start.saturating_add(self.period);
        Wake::Measured {
            latency_ns: latency.min(i64::MAX as u64) as i64,
            overruns: (latency / self.period).min(u64::from(u32::MAX)) as u32,
            late: latency > self.deadline,
        }
    }

    /// Moves the grid so that the period the next wake-up is for begins at
    /// `start`.
    pub fn set_next(&mut self, start: u64) {
        self.next = start;
    }
}

/// How the scheduler's clock, on which the kernel keeps a deadline task's
/// absolute deadline (`dl.deadline` in `/proc/PID/sched`), maps to the
/// measuring clock: learnt when the task became a deadline task, whose
/// period 0 began within that `sched_setattr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Calibration {
    /// The scheduler's clock minus the measuring clock read just before the
    /// call (so that a period start mapped with it is never later than the
    /// kernel's: latencies are not understated by it).
    pub offset_ns: i64,
    /// How long the call took: the mapping is at most this much early.
    pub window_ns: u64,
}

impl Calibration {
    /// The start of the kernel's current period on the measuring clock, from
    /// its absolute deadline `kernel_deadline` (scheduler's clock).
    pub fn period_start(&self, kernel_deadline: u64, deadline_ns: u64) -> u64 {
        (kernel_deadline as i64)
            .wrapping_sub(deadline_ns as i64)
            .wrapping_sub(self.offset_ns) as u64
    }
}

/// The calling thread's `/proc/thread-self/sched`, where the kernel shows a
/// deadline task's absolute deadline; read without allocating.
pub struct SchedFile(std::fs::File);

impl SchedFile {
    /// Opens the calling thread's file (the thread that reads it must be
    /// the one that opened it). `None` where `/proc` is not there.
    pub fn open() -> Option<SchedFile> {
        std::fs::File::open("/proc/thread-self/sched")
            .ok()
            .map(SchedFile)
    }

    /// The thread's absolute deadline (scheduler's clock), if it is a
    /// deadline task.
    pub fn deadline(&self) -> Option<u64> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 8192];
        let n = self.0.read_at(&mut buf, 0).ok()?;
        parse_dl_deadline(&buf[..n])
    }
}

/// The `dl.deadline` of a `/proc/PID/sched` text (ns on the scheduler's
/// clock; shown for deadline tasks only).
pub fn parse_dl_deadline(text: &[u8]) -> Option<u64> {
    let key = b"dl.deadline";
    let at = text.windows(key.len()).position(|w| w == key)?;
    let line = text[at + key.len()..].split(|&b| b == b'\n').next()?;
    let colon = line.iter().position(|&b| b == b':')?;
    let value = line[colon + 1..].trim_ascii();
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

impl DeadlineParams {
    /// [`DeadlineParams::apply`], with the calibration of the scheduler's
    /// clock against `clock` (where `sched` can be read): the calling
    /// thread must be a normal thread, so that its period 0 begins within
    /// the call.
    pub fn apply_calibrated<C: Clock>(
        &self,
        clock: &C,
        sched: Option<&SchedFile>,
    ) -> Result<(DeadlineParams, Option<Calibration>), DeadlineError> {
        let before = clock.now();
        let back = self.apply()?;
        let window_ns = clock.now().saturating_sub(before);
        let calibration = sched.and_then(SchedFile::deadline).map(|d| Calibration {
            offset_ns: (d as i64)
                .wrapping_sub(self.deadline_ns as i64)
                .wrapping_sub(before as i64),
            window_ns,
        });
        Ok((back, calibration))
    }
}

/// A deadline measurement thread's counters, shared with whoever reads
/// them while it runs (relaxed: each is written by the thread only).
#[derive(Debug, Default)]
pub struct GridCounters {
    /// Times the grid was set from the kernel's deadline after a wake-up
    /// later than the deadline or before its period (the first not counted).
    pub reanchored: AtomicU64,
    /// Wake-ups before their period's start by the grid (not measured).
    pub early: AtomicU64,
}

/// How a deadline measurement thread waits and ends its jobs; a trait so
/// that the loop can be driven with a simulated scheduler.
pub trait DeadlineTask {
    /// Sleeps until `t` (absolute, on the run's clock): `Ok(false)` when a
    /// signal interrupted the sleep.
    fn sleep_until(&mut self, t: u64) -> io::Result<bool>;
    /// Ends this period's job: returns when the task runs in its next period.
    fn yield_period(&mut self) -> io::Result<()>;
    /// The task's absolute deadline as the kernel holds it (on the
    /// scheduler's clock), where it can be read.
    fn kernel_deadline(&mut self) -> Option<u64>;
}

/// The calling thread, a SCHED_DEADLINE task already
/// ([`DeadlineParams::apply_calibrated`]).
pub struct SchedDeadline {
    /// The clock the start is slept on.
    pub clock: ClockId,
    /// The thread's own `/proc/thread-self/sched`.
    pub sched: Option<SchedFile>,
}

impl DeadlineTask for SchedDeadline {
    fn sleep_until(&mut self, t: u64) -> io::Result<bool> {
        sys::sleep_until_interruptible(self.clock, t)
    }

    #[inline]
    fn yield_period(&mut self) -> io::Result<()> {
        sys::sched_yield()
    }

    fn kernel_deadline(&mut self) -> Option<u64> {
        self.sched.as_ref()?.deadline()
    }
}

/// What a deadline loop needs besides a [`LoopConfig`] (whose times, start
/// and end, are on the run's clock).
#[derive(Debug, Clone, Copy)]
pub struct DeadlineConfig {
    /// The relative deadline.
    pub deadline_ns: u64,
    /// The measuring clock's reading minus the run clock's, at the same
    /// moment: a reading `t` is `t - offset_ns` on the run's clock.
    pub offset_ns: i64,
    /// The scheduler's clock against the measuring clock, where known.
    pub calibration: Option<Calibration>,
}

/// A measuring clock's reading on the run's clock.
#[inline]
fn on_run_clock(t: u64, offset_ns: i64) -> u64 {
    t.wrapping_sub(offset_ns as u64)
}

/// Measures a deadline task's wake-up latency until `loops` samples, the end
/// time, the stop flag, a break, or an error (see [`crate::cyclic::run_loop`]
/// for these; the samples' `t_ns` are on the run's clock). `clock` is the
/// measuring clock. The task, a deadline task already, sleeps until the
/// start (the first point of the start's grid a deadline plus the margin
/// ahead, so that its deadline has passed and the wake-up begins a period
/// 0), takes the grid from the kernel's deadline (or, where it cannot be
/// read, from the start itself), then: yield, read the clock, take the
/// latency from the [`Grid`], push. After a wake-up later than the deadline
/// or before its period, the next wake-up is measured from the kernel's
/// period, read back; without it, from the late wake-up (see the module
/// doc).
pub fn run_deadline_loop<T: DeadlineTask, C: Clock, S: SampleSink>(
    task: &mut T,
    clock: &C,
    sink: &mut S,
    cfg: &LoopConfig,
    dl: &DeadlineConfig,
    counters: &GridCounters,
    stop: &AtomicBool,
) -> LoopEnd {
    let period = cfg.period_ns.max(1);
    let loops = cfg.loops.unwrap_or(u64::MAX);
    let break_above = cfg.break_above_ns.map_or(i64::MAX, |b| b as i64);
    let margin = cfg.start_margin_ns.saturating_add(dl.deadline_ns);
    let now = on_run_clock(clock.now(), dl.offset_ns);
    let first = first_deadline(cfg.start_ns, period, now, margin);
    loop {
        if stop.load(Ordering::Relaxed) {
            return LoopEnd::Stopped;
        }
        if reached(cfg.end_ns, first) {
            return LoopEnd::Duration;
        }
        match task.sleep_until(first) {
            Ok(true) => break,
            Ok(false) => continue,
            Err(e) => return LoopEnd::Error(e),
        }
    }
    // Period 0 began when the expired timer woke the task: not before
    // `first` (a timer never expires early), as the kernel says if it can.
    let kernel_start = |task: &mut T| {
        let c = dl.calibration?;
        Some(c.period_start(task.kernel_deadline()?, dl.deadline_ns))
    };
    let anchor = kernel_start(task).unwrap_or(first.wrapping_add(dl.offset_ns as u64));
    let mut grid = Grid::new(anchor, period, dl.deadline_ns);
    // After a late or early wake-up: where the kernel's periods are is
    // asked at the next one.
    let mut unsure = false;
    let mut seq = 0u64;
    while seq < loops {
        if stop.load(Ordering::Relaxed) {
            return LoopEnd::Stopped;
        }
        if reached(cfg.end_ns, on_run_clock(grid.next_start(), dl.offset_ns)) {
            return LoopEnd::Duration;
        }
        if let Err(e) = task.yield_period() {
            return LoopEnd::Error(e);
        }
        let t = clock.now();
        if unsure {
            // The kernel's current period, if it has begun: this wake-up's.
            if let Some(start) = kernel_start(task).filter(|&s| s <= t) {
                grid.set_next(start);
                unsure = false;
                counters.reanchored.fetch_add(1, Ordering::Relaxed);
            }
        }
        let wake = grid.observe(t);
        match wake {
            Wake::Early => {
                counters.early.fetch_add(1, Ordering::Relaxed);
                // Without the kernel's word, the grid moves to it.
                grid.set_next(t.saturating_add(period));
                unsure = true;
            }
            Wake::Measured { late: true, .. } => {
                // Without the kernel's word, its periods are taken to begin
                // anew at this wake-up (the latest they can).
                grid.set_next(t.saturating_add(period));
                unsure = true;
            }
            Wake::Measured { .. } => {}
        }
        if let (
            Wake::Measured {
                latency_ns,
                overruns,
                ..
            },
            true,
        ) = (wake, seq >= cfg.warmup)
        {
            let cpu = match cfg.fixed_cpu {
                Some(c) => c,
                None => sys::current_cpu() as u32,
            };
            let t_ns = on_run_clock(t, dl.offset_ns);
            sink.push(Sample {
                seq,
                t_ns,
                latency_ns,
                overruns,
                cpu,
            });
            if latency_ns > break_above {
                stop.store(true, Ordering::Relaxed);
                return LoopEnd::Break {
                    seq,
                    t_ns,
                    latency_ns,
                };
            }
        }
        // A wake-up that was not measured counts towards `loops`, as the
        // warm-up does.
        seq += 1;
    }
    LoopEnd::Loops
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn p(runtime_ns: u64, deadline_ns: u64, period_ns: u64) -> DeadlineParams {
        DeadlineParams {
            runtime_ns,
            deadline_ns,
            period_ns,
        }
    }

    const LIMITS: PeriodLimits = PeriodLimits {
        min_ns: 100_000,
        max_ns: 4_000_000_000,
    };

    /// Each rule at its boundary: the value allowed passes, one more (or
    /// less) is refused by that rule.
    #[test]
    fn parameters_are_checked_as_the_kernel_does() {
        assert_eq!(p(1024, 1024, 100_000).check(&LIMITS), Ok(()));
        assert_eq!(
            p(1023, 1023, 100_000).check(&LIMITS),
            Err(ParamError::RuntimeTooShort)
        );
        assert_eq!(p(50_000, 50_000, 100_000).check(&LIMITS), Ok(()));
        assert_eq!(
            p(50_001, 50_000, 100_000).check(&LIMITS),
            Err(ParamError::RuntimeAboveDeadline)
        );
        assert_eq!(p(1024, 200_000, 200_000).check(&LIMITS), Ok(()));
        assert_eq!(
            p(1024, 200_001, 200_000).check(&LIMITS),
            Err(ParamError::DeadlineAbovePeriod)
        );
        assert_eq!(
            p(1024, 99_999, 99_999).check(&LIMITS),
            Err(ParamError::PeriodTooShort(100_000))
        );
        assert_eq!(p(1024, 1024, 4_000_000_000).check(&LIMITS), Ok(()));
        assert_eq!(
            p(1024, 1024, 4_000_000_001).check(&LIMITS),
            Err(ParamError::PeriodTooLong(4_000_000_000))
        );
        // The runtime is checked first.
        assert_eq!(p(5, 10, 1).check(&LIMITS), Err(ParamError::RuntimeTooShort));
        assert_eq!(
            ParamError::PeriodTooShort(100_000).to_string(),
            "the period must be at least 100us (kernel.sched_deadline_period_min_us)"
        );
        assert_eq!(
            ParamError::PeriodTooLong(4_194_304_000).to_string(),
            "the period must be at most 4.194s (kernel.sched_deadline_period_max_us)"
        );
        assert_eq!(
            ParamError::RuntimeTooShort.to_string(),
            "the runtime must be at least 1024 ns (the kernel counts it in units of 1024 ns)"
        );
    }

    #[test]
    fn the_system_limits_are_read() {
        let l = PeriodLimits::of_system();
        assert!(l.min_ns <= l.max_ns, "{l:?}");
        if let Ok(s) = std::fs::read_to_string("/proc/sys/kernel/sched_deadline_period_min_us") {
            assert_eq!(l.min_ns, s.trim().parse::<u64>().unwrap() * 1000);
        }
        if let Ok(s) = std::fs::read_to_string("/proc/sys/kernel/sched_deadline_period_max_us") {
            assert_eq!(l.max_ns, s.trim().parse::<u64>().unwrap() * 1000);
        }
        assert_eq!(PeriodLimits::DEFAULT.max_ns, 4_194_304_000);
    }

    #[test]
    fn bandwidth_is_the_kernels_fixed_point_ratio() {
        assert_eq!(p(100_000, 1_000_000, 1_000_000).bandwidth(), 104_857);
        assert_eq!(p(1, 1, 1).bandwidth(), 1 << 20);
        assert_eq!(ratio(0, 5), 0);
        assert_eq!(ratio(3, 1), 349_525);
        assert_eq!(p(250_000, 1_000_000, 2_000_000).percent(), 12.5);
        assert_eq!(p(1, 1, 0).percent(), 100.0);
    }

    #[test]
    fn default_runtime_is_cyclicdeadlines() {
        assert_eq!(DeadlineParams::default_runtime(1_000_000, 2, 2), 600_000);
        assert_eq!(DeadlineParams::default_runtime(1_000_000, 1, 2), 600_000);
        // 3 threads on 2 CPUs: 2 * 80 / 3 = 53 %.
        assert_eq!(DeadlineParams::default_runtime(1_000_000, 3, 2), 530_000);
        assert_eq!(DeadlineParams::default_runtime(1_000_000, 4, 2), 400_000);
        // Never below the kernel's minimum.
        assert_eq!(DeadlineParams::default_runtime(1_000, 1, 1), MIN_RUNTIME_NS);
        assert_eq!(
            DeadlineParams::default_runtime(1_000_000, 1000, 2),
            MIN_RUNTIME_NS
        );
        assert_eq!(
            DeadlineParams::default_runtime(u64::MAX, 1, 1),
            (u128::from(u64::MAX) * 60 / 100) as u64
        );
    }

    /// The system's limit is what its two files say.
    #[test]
    fn the_rt_sysctls_are_read() {
        let read = |name: &str| {
            std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
                .ok()
                .map(|s| s.trim().to_string())
        };
        let runtime = read("sched_rt_runtime_us").and_then(|s| s.parse::<i64>().ok());
        let period = read("sched_rt_period_us").and_then(|s| s.parse::<u64>().ok());
        assert_eq!(rt_sysctls(), (runtime, period));
        let expected = match (runtime, period) {
            (Some(r), Some(p)) => BandwidthLimit::from_sysctls(r, p),
            _ => None,
        };
        assert_eq!(BandwidthLimit::of_system(), expected);
        if runtime == Some(950_000) && period == Some(1_000_000) {
            assert_eq!(BandwidthLimit::of_system().unwrap().percent(), 95.0);
        }
    }

    #[test]
    fn admission_is_counted_as_the_kernel_does() {
        assert_eq!(BandwidthLimit::from_sysctls(-1, 1_000_000), None);
        let l = BandwidthLimit::from_sysctls(950_000, 1_000_000).unwrap();
        assert_eq!(l.percent(), 95.0);
        let sixty = p(600_000, 1_000_000, 1_000_000);
        assert!(l.admits(&[sixty, sixty], 2));
        assert!(l.admits(&[sixty, sixty, sixty], 2));
        assert!(!l.admits(&[sixty, sixty, sixty, sixty], 2));
        // Exactly the limit is admitted, a little more is not.
        let half = BandwidthLimit::from_sysctls(500_000, 1_000_000).unwrap();
        assert!(half.admits(&[p(500_000, 1_000_000, 1_000_000)], 1));
        assert!(!half.admits(&[p(500_001, 1_000_000, 1_000_000)], 1));
        assert!(half.admits(&[], 0));
        assert!(!half.admits(&[p(1024, 1_000_000, 1_000_000)], 0));
        assert!(BandwidthLimit::from_sysctls(0, 1_000_000)
            .unwrap()
            .admits(&[], 4));
    }

    /// The fair server's 5 % counts on each CPU, as on 6.12 and later: on
    /// 2 CPUs at 95 %, 2 × 90 % fits and 2 × 90.5 % does not (what 6.18 does).
    #[test]
    fn the_fair_server_holds_its_share_of_each_cpu() {
        let server = ServerReserve {
            runtime_ns: 50_000_000,
            period_ns: 1_000_000_000,
            assumed: true,
        };
        assert_eq!(server.percent(), 5.0);
        let l = BandwidthLimit::from_sysctls(950_000, 1_000_000)
            .unwrap()
            .beside(Some(server));
        assert_eq!(l.percent(), 95.0);
        assert_eq!(l.free_percent(), 90.0);
        let ninety = p(900_000, 1_000_000, 1_000_000);
        let more = p(905_000, 1_000_000, 1_000_000);
        assert!(l.admits(&[ninety, ninety], 2));
        assert!(!l.admits(&[more, ninety], 2));
        assert!(l.beside(None).admits(&[more, more], 2));
        assert_eq!(l.beside(None).free_percent(), 95.0);
        // The reserve scales with the CPUs: 1 × 185 % cannot fit 2 CPUs' 180 %.
        assert!(!l.admits(&[p(1_000_000, 1_000_000, 1_000_000), more], 2));
    }

    /// Read from debugfs where it is there (the largest reservation of the
    /// CPUs; none where every server is off); the defaults from 6.12 on.
    #[test]
    fn the_fair_server_is_read_or_assumed_by_release() {
        let d = tempfile::tempdir().unwrap();
        let none = ServerReserve::fair_server(d.path(), &[0, 1], "6.1.0-rt");
        assert_eq!(none, None);
        let assumed = ServerReserve::fair_server(d.path(), &[0, 1], "6.18.4").unwrap();
        assert!(assumed.assumed);
        assert_eq!(
            (assumed.runtime_ns, assumed.period_ns),
            (50_000_000, 1_000_000_000)
        );
        let write = |cpu: usize, period: u64, runtime: u64| {
            let dir = d.path().join(format!("sched/fair_server/cpu{cpu}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("period"), format!("{period}\n")).unwrap();
            std::fs::write(dir.join("runtime"), format!("{runtime}\n")).unwrap();
        };
        write(0, 1_000_000_000, 20_000_000);
        write(1, 1_000_000_000, 30_000_000);
        let read = ServerReserve::fair_server(d.path(), &[0, 1], "6.18.4").unwrap();
        assert_eq!(
            read,
            ServerReserve {
                runtime_ns: 30_000_000,
                period_ns: 1_000_000_000,
                assumed: false
            }
        );
        // Only the CPUs asked about count.
        let first = ServerReserve::fair_server(d.path(), &[0], "6.18.4").unwrap();
        assert_eq!(first.runtime_ns, 20_000_000);
        // Servers turned off (runtime 0) reserve nothing.
        write(0, 1_000_000_000, 0);
        write(1, 1_000_000_000, 0);
        assert_eq!(
            ServerReserve::fair_server(d.path(), &[0, 1], "6.18.4"),
            None
        );
        // Nor does a period of 0 (no server the kernel would run).
        write(1, 0, 30_000_000);
        assert_eq!(
            ServerReserve::fair_server(d.path(), &[0, 1], "6.18.4"),
            None
        );
    }

    fn facts() -> DeadlineFacts {
        DeadlineFacts {
            root: true,
            allowed_cpus: vec![0, 1],
            online_cpus: vec![0, 1],
            rt_runtime_us: Some(950_000),
            rt_period_us: Some(1_000_000),
        }
    }

    fn errno(n: i32) -> io::Error {
        io::Error::from_raw_os_error(n)
    }

    /// Each refusal names its cause and what to do, in one line.
    #[test]
    fn refusals_are_explained() {
        let asked = p(600_000, 1_000_000, 1_000_000);
        let say = |n: i32, f: &DeadlineFacts| {
            let m = explain(&errno(n), &asked, f);
            assert!(!m.contains('\n'), "{m}");
            m
        };
        let unprivileged = DeadlineFacts {
            root: false,
            ..facts()
        };
        assert!(say(libc::EPERM, &unprivileged)
            .starts_with("not allowed to use SCHED_DEADLINE: it needs root or CAP_SYS_NICE"));
        let narrowed = DeadlineFacts {
            allowed_cpus: vec![1],
            ..facts()
        };
        assert!(say(libc::EPERM, &narrowed).starts_with(
            "SCHED_DEADLINE refused: this thread may run only on CPUs 1 of 0-1, and the kernel \
             admits a deadline task only where it may run on every CPU of its root domain"
        ));
        // Allowed on more CPUs than are online (offline ones): not narrowed.
        let wide = DeadlineFacts {
            allowed_cpus: vec![0, 1, 2],
            rt_runtime_us: Some(0),
            ..facts()
        };
        assert!(say(libc::EPERM, &wide).starts_with(
            "SCHED_DEADLINE refused: deadline tasks may use no CPU time (kernel.sched_rt_runtime_us is 0)"
        ));
        assert!(say(libc::EPERM, &facts())
            .starts_with("SCHED_DEADLINE refused although running as root"));
        assert_eq!(
            say(libc::EBUSY, &facts()),
            "admission control refused SCHED_DEADLINE runtime 600us every 1ms (deadline 1ms), \
             60.0% of a CPU: deadline tasks may reserve at most 95% of each of the 2 CPUs \
             (kernel.sched_rt_runtime_us 950000 of sched_rt_period_us 1000000), and other \
             reservations hold the rest (other deadline tasks, this run's other threads, on \
             recent kernels the fair-class server's 5% of each CPU): lower the runtime, \
             lengthen the period, or run fewer threads"
        );
        let unknown = DeadlineFacts {
            rt_runtime_us: Some(-1),
            ..facts()
        };
        assert!(say(libc::EBUSY, &unknown).contains(
            "may reserve at most kernel.sched_rt_runtime_us of every sched_rt_period_us"
        ));
        let no_period = DeadlineFacts {
            rt_period_us: None,
            ..facts()
        };
        assert!(say(libc::EBUSY, &no_period).contains("at most kernel.sched_rt_runtime_us"));
        assert!(say(libc::EINVAL, &facts()).starts_with(
            "SCHED_DEADLINE refused runtime 600us every 1ms (deadline 1ms) as invalid: the kernel \
             needs 1024 ns <= runtime <= deadline <= period"
        ));
        assert!(say(libc::ENOSYS, &facts()).contains("needs Linux 3.14 or later"));
        assert_eq!(
            say(libc::ENOMEM, &facts()),
            format!(
                "cannot use SCHED_DEADLINE runtime 600us every 1ms (deadline 1ms): {}",
                errno(libc::ENOMEM)
            )
        );
        let shown = DeadlineError {
            errno: Some(libc::EBUSY),
            message: "why".into(),
        };
        assert_eq!(shown.to_string(), "why");
        // As an io::Error the errno's kind is kept, the text is the explanation.
        let e: io::Error = DeadlineError {
            errno: Some(libc::EPERM),
            message: "m".into(),
        }
        .into();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(e.to_string(), "m");
        let e: io::Error = DeadlineError {
            errno: None,
            message: "n".into(),
        }
        .into();
        assert_eq!(
            (e.kind(), e.to_string()),
            (io::ErrorKind::Other, "n".into())
        );
    }

    #[test]
    fn facts_are_this_systems() {
        let f = DeadlineFacts::gather();
        assert_eq!(f.root, sys::geteuid() == 0);
        assert_eq!(f.online_cpus, crate::units::online_cpus());
        assert!(!f.allowed_cpus.is_empty());
    }

    fn measured(latency_ns: i64, overruns: u32, late: bool) -> Wake {
        Wake::Measured {
            latency_ns,
            overruns,
            late,
        }
    }

    /// On the grid: each wake-up is measured from its period's start.
    #[test]
    fn wake_ups_on_the_grid() {
        let mut g = Grid::new(1000, 1000, 1000);
        assert_eq!(g.next_start(), 2000);
        assert_eq!(g.observe(2010), measured(10, 0, false));
        assert_eq!(g.observe(3005), measured(5, 0, false));
        assert_eq!(g.observe(4000), measured(0, 0, false));
        // Late by the deadline (a period here) is not later than it; the
        // next period has begun already.
        assert_eq!(g.observe(6000), measured(1000, 1, false));
        assert_eq!(g.next_start(), 6000);
        assert_eq!(g.observe(6001), measured(1, 0, false));
        // Period 1000, deadline 500: 501 is late.
        let mut g = Grid::new(0, 1000, 500);
        assert_eq!(g.observe(1500), measured(500, 0, false));
        assert_eq!(g.observe(2501), measured(501, 0, true));
        assert_eq!(g.observe(5000), measured(2000, 2, true));
        g.set_next(7000);
        assert_eq!(g.observe(7003), measured(3, 0, false));
    }

    /// Before its period's start: not measured, the grid left as it was.
    #[test]
    fn an_early_wake_up_is_not_measured() {
        let mut g = Grid::new(1000, 1000, 1000);
        assert_eq!(g.observe(1999), Wake::Early);
        assert_eq!(g.next_start(), 2000);
        assert_eq!(g.observe(2000), measured(0, 0, false));
    }

    #[test]
    fn extreme_values_do_not_overflow() {
        let mut g = Grid::new(u64::MAX - 10, 1000, 1000);
        assert_eq!(g.next_start(), u64::MAX);
        assert_eq!(g.observe(u64::MAX), measured(0, 0, false));
        let mut g = Grid::new(0, 0, 0);
        assert_eq!(g.observe(5), measured(4, 4, true));
        let mut g = Grid::new(0, 1, u64::MAX);
        assert_eq!(g.observe(u64::MAX), measured(i64::MAX, u32::MAX, false));
    }

    #[test]
    fn the_calibration_maps_the_kernels_deadline() {
        let c = Calibration {
            offset_ns: 1_000_000,
            window_ns: 3,
        };
        assert_eq!(c.period_start(1_011_500, 1000), 10_500);
        let c = Calibration {
            offset_ns: -500,
            window_ns: 3,
        };
        assert_eq!(c.period_start(2_000, 1000), 1_500);
    }

    /// A simulated deadline task: a sleep wakes `wake_ns` late, each yield
    /// returns at the next scripted release, the kernel's deadline is
    /// scripted.
    struct Sim<'a> {
        now: &'a Cell<u64>,
        releases: Vec<u64>,
        i: usize,
        calls: Vec<String>,
        wake_ns: u64,
        fail_sleep: bool,
        interrupt_sleep: usize,
        /// What `kernel_deadline` answers, one after the other (then None).
        deadlines: Vec<Option<u64>>,
    }

    impl DeadlineTask for Sim<'_> {
        fn sleep_until(&mut self, t: u64) -> io::Result<bool> {
            self.calls.push(format!("sleep {t}"));
            if self.fail_sleep {
                return Err(io::Error::other("refused"));
            }
            if self.interrupt_sleep > 0 {
                self.interrupt_sleep -= 1;
                // Time goes on while it sleeps.
                self.now.set(self.now.get() + 2000);
                return Ok(false);
            }
            // `t` is on the run's clock, `now` the measuring clock.
            let woke = (t as i64 + DL.offset_ns) as u64 + self.wake_ns;
            self.now.set(woke.max(self.now.get()));
            Ok(true)
        }
        fn yield_period(&mut self) -> io::Result<()> {
            let Some(&r) = self.releases.get(self.i) else {
                return Err(io::Error::other("no more releases"));
            };
            self.i += 1;
            self.now.set(r.max(self.now.get()));
            Ok(())
        }
        fn kernel_deadline(&mut self) -> Option<u64> {
            self.calls.push("deadline?".into());
            if self.deadlines.is_empty() {
                return None;
            }
            self.deadlines.remove(0)
        }
    }

    struct SimClock<'a>(&'a Cell<u64>);
    impl Clock for SimClock<'_> {
        fn now(&self) -> u64 {
            self.0.get()
        }
    }

    fn sim(now: &Cell<u64>, releases: Vec<u64>) -> Sim<'_> {
        Sim {
            now,
            releases,
            i: 0,
            calls: vec![],
            wake_ns: 0,
            fail_sleep: false,
            interrupt_sleep: 0,
            deadlines: vec![],
        }
    }

    fn cfg(loops: u64) -> LoopConfig {
        LoopConfig {
            period_ns: 1000,
            start_ns: 10_000,
            start_margin_ns: 100,
            warmup: 0,
            loops: Some(loops),
            end_ns: None,
            break_above_ns: None,
            fixed_cpu: Some(1),
        }
    }

    /// The measuring clock runs 500 ns ahead of the run's clock here; the
    /// scheduler's clock 1_000_000 ahead of the measuring clock.
    const DL: DeadlineConfig = DeadlineConfig {
        deadline_ns: 1000,
        offset_ns: 500,
        calibration: Some(Calibration {
            offset_ns: 1_000_000,
            window_ns: 2,
        }),
    };

    /// The kernel's deadline of a period that began at `start` (measuring
    /// clock), as [`DL`] maps it.
    fn kd(start: u64) -> Option<u64> {
        Some(start + 1000 + 1_000_000)
    }

    fn run_with(
        task: &mut Sim,
        now: &Cell<u64>,
        c: &LoopConfig,
        dl: &DeadlineConfig,
        stop: &AtomicBool,
    ) -> (LoopEnd, Vec<Sample>, GridCounters) {
        let counters = GridCounters::default();
        let mut out = Vec::new();
        let end = run_deadline_loop(task, &SimClock(now), &mut out, c, dl, &counters, stop);
        (end, out, counters)
    }

    fn run(
        task: &mut Sim,
        now: &Cell<u64>,
        c: &LoopConfig,
        stop: &AtomicBool,
    ) -> (LoopEnd, Vec<Sample>, GridCounters) {
        run_with(task, now, c, &DL, stop)
    }

    fn latencies(out: &[Sample]) -> Vec<(u64, i64, u32)> {
        out.iter()
            .map(|s| (s.seq, s.latency_ns, s.overruns))
            .collect()
    }

    /// Period 0 is the kernel's, read back after the start's wake-up; the
    /// samples are measured from its grid, their times on the run's clock.
    #[test]
    fn the_loop_measures_from_the_kernels_period_zero() {
        let now = Cell::new(9_000);
        // The start 10000 on the run clock (10500 measuring); the wake-up
        // 30 late, the kernel's period 0 at 10520.
        let mut task = sim(&now, vec![11_540, 12_523, 13_520, 16_000]);
        task.wake_ns = 30;
        task.deadlines = vec![kd(10_520)];
        let stop = AtomicBool::new(false);
        let (end, out, counters) = run(&mut task, &now, &cfg(4), &stop);
        assert!(matches!(end, LoopEnd::Loops), "{end:?}");
        assert_eq!(task.calls, ["sleep 10000", "deadline?"]);
        assert_eq!(
            latencies(&out),
            [(0, 20, 0), (1, 3, 0), (2, 0, 0), (3, 1480, 1)]
        );
        assert_eq!(out[0].t_ns, 11_040);
        assert!(out.iter().all(|s| s.cpu == 1));
        assert_eq!(counters.reanchored.load(Ordering::Relaxed), 0);
        assert_eq!(counters.early.load(Ordering::Relaxed), 0);
        assert!(!stop.load(Ordering::Relaxed));
        // Unknown to the kernel (or no calibration): the start itself.
        for dl in [
            DL,
            DeadlineConfig {
                calibration: None,
                ..DL
            },
        ] {
            let now = Cell::new(9_000);
            let mut task = sim(&now, vec![11_540]);
            task.wake_ns = 30;
            if dl.calibration.is_none() {
                task.deadlines = vec![kd(10_520)];
            }
            let (_, out, _) = run_with(&mut task, &now, &cfg(1), &dl, &stop);
            assert_eq!(latencies(&out), [(0, 40, 0)]);
        }
        // The start is a deadline plus the margin ahead at least.
        for (at, first) in [(9_400, "sleep 10000"), (9_401, "sleep 11000")] {
            let now = Cell::new(at);
            let mut task = sim(&now, vec![]);
            let _ = run(&mut task, &now, &cfg(1), &stop);
            assert_eq!(task.calls[0], first);
        }
    }

    /// After a late wake-up, the next is measured from the kernel's period,
    /// read back (a restart, a replay, a postponement alike).
    #[test]
    fn after_a_late_wake_up_the_kernels_period_is_read() {
        let now = Cell::new(9_000);
        // Period 0 at 10500; period 1 at 11500 woken 1100 late; the kernel
        // then restarted at 12750: the next wake-up 12 after 13750.
        let mut task = sim(&now, vec![12_600, 13_762, 14_770]);
        task.deadlines = vec![kd(10_500), kd(13_750)];
        let stop = AtomicBool::new(false);
        let (_, out, c) = run(&mut task, &now, &cfg(3), &stop);
        assert_eq!(latencies(&out), [(0, 1100, 1), (1, 12, 0), (2, 20, 0)]);
        assert_eq!(c.reanchored.load(Ordering::Relaxed), 1);
        // The kernel's period not begun yet (its deadline postponed): the
        // assumed restart at the late wake-up, and asked again next time.
        let now = Cell::new(9_000);
        let mut task = sim(&now, vec![12_600, 13_610, 14_605]);
        task.deadlines = vec![kd(10_500), kd(20_000), kd(14_600)];
        let (_, out, c) = run(&mut task, &now, &cfg(3), &stop);
        assert_eq!(latencies(&out), [(0, 1100, 1), (1, 10, 0), (2, 5, 0)]);
        assert_eq!(c.reanchored.load(Ordering::Relaxed), 1);
        // A period that began exactly at the wake-up counts.
        let now = Cell::new(9_000);
        let mut task = sim(&now, vec![12_600, 13_000]);
        task.deadlines = vec![kd(10_500), kd(13_000)];
        let (_, out, _) = run(&mut task, &now, &cfg(2), &stop);
        assert_eq!(latencies(&out)[1], (1, 0, 0));
        // Without the kernel's word: from the late wake-up.
        let now = Cell::new(9_000);
        let mut task = sim(&now, vec![12_600, 13_610]);
        task.deadlines = vec![kd(10_500)];
        let (_, out, c) = run(&mut task, &now, &cfg(2), &stop);
        assert_eq!(latencies(&out), [(0, 1100, 1), (1, 10, 0)]);
        assert_eq!(c.reanchored.load(Ordering::Relaxed), 0);
        // Asked only once after each late wake-up.
        assert_eq!(task.calls, ["sleep 10000", "deadline?", "deadline?"]);
    }

    /// Before its period: not measured, counted; the grid moves to it and
    /// the kernel is asked at the next.
    #[test]
    fn an_early_wake_up_is_counted_and_the_kernel_asked() {
        let now = Cell::new(9_000);
        let mut task = sim(&now, vec![11_400, 12_405, 13_404]);
        task.deadlines = vec![kd(10_500), kd(12_400)];
        let stop = AtomicBool::new(false);
        let (_, out, c) = run(&mut task, &now, &cfg(3), &stop);
        // It counts towards the loops.
        assert_eq!(latencies(&out), [(1, 5, 0), (2, 4, 0)]);
        assert_eq!(c.early.load(Ordering::Relaxed), 1);
        assert_eq!(c.reanchored.load(Ordering::Relaxed), 1);
        // Without the kernel: measured from the early one.
        let now = Cell::new(9_000);
        let mut task = sim(&now, vec![11_400, 12_405]);
        let (_, out, _) = run_with(
            &mut task,
            &now,
            &cfg(2),
            &DeadlineConfig {
                calibration: None,
                ..DL
            },
            &stop,
        );
        assert_eq!(latencies(&out), [(1, 5, 0)]);
    }

    #[test]
    fn warmup_break_and_stop() {
        let now = Cell::new(9_000);
        let mut c = cfg(10);
        c.warmup = 1;
        c.break_above_ns = Some(30);
        let mut task = sim(&now, vec![11_600, 12_510, 13_530, 14_531, 15_500]);
        let stop = AtomicBool::new(false);
        let (end, out, _) = run(&mut task, &now, &c, &stop);
        // The warm-up's 100 is not pushed nor checked; 30 is not above 30,
        // 31 is.
        match end {
            LoopEnd::Break {
                seq,
                t_ns,
                latency_ns,
            } => assert_eq!((seq, t_ns, latency_ns), (3, 14_031, 31)),
            e => panic!("{e:?}"),
        }
        assert_eq!(out.iter().map(|s| s.seq).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(stop.load(Ordering::Relaxed));
        // A raised stop flag ends the loop before it sleeps.
        let mut task = sim(&now, vec![]);
        let (end, out, _) = run(&mut task, &now, &cfg(3), &stop);
        assert!(matches!(end, LoopEnd::Stopped), "{end:?}");
        assert!(out.is_empty() && task.calls.is_empty());
        // A late warm-up wake-up has the kernel asked too.
        let now = Cell::new(9_000);
        let mut c = cfg(2);
        c.warmup = 1;
        let stop = AtomicBool::new(false);
        let mut task = sim(&now, vec![13_000, 14_109]);
        task.deadlines = vec![kd(10_500), kd(14_100)];
        let (_, out, counters) = run(&mut task, &now, &c, &stop);
        assert_eq!(latencies(&out), [(1, 9, 0)]);
        assert_eq!(counters.reanchored.load(Ordering::Relaxed), 1);
    }

    /// The end time on the run's clock: the loop ends before a period that
    /// begins at or after it, also before the first.
    #[test]
    fn the_end_time_is_kept() {
        let now = Cell::new(9_000);
        let mut c = cfg(100);
        // Period 2 begins at 12000 on the run clock: 1 sample.
        c.end_ns = Some(12_000);
        let mut task = sim(&now, vec![11_500, 12_500, 13_500]);
        let stop = AtomicBool::new(false);
        let (end, out, _) = run(&mut task, &now, &c, &stop);
        assert!(matches!(end, LoopEnd::Duration), "{end:?}");
        assert_eq!(out.len(), 1);
        c.end_ns = Some(12_001);
        let now = Cell::new(9_000);
        let mut task = sim(&now, vec![11_500, 12_500, 13_500]);
        let (_, out, _) = run(&mut task, &now, &c, &stop);
        assert_eq!(out.len(), 2);
        // An end at the start: nothing at all.
        c.end_ns = Some(10_000);
        let mut task = sim(&now, vec![]);
        let (end, _, _) = run(&mut task, &now, &c, &stop);
        assert!(matches!(end, LoopEnd::Duration), "{end:?}");
        assert!(task.calls.is_empty());
    }

    #[test]
    fn an_interrupted_sleep_is_retried_and_errors_end_the_loop() {
        let now = Cell::new(9_000);
        let mut task = sim(&now, vec![13_020]);
        task.interrupt_sleep = 2;
        let stop = AtomicBool::new(false);
        let (end, out, _) = run_with(
            &mut task,
            &now,
            &cfg(1),
            &DeadlineConfig {
                calibration: None,
                ..DL
            },
            &stop,
        );
        assert!(matches!(end, LoopEnd::Loops), "{end:?}");
        // Until the sleep ends (at 13000 measuring, after 2 interrupted
        // sleeps of 2000); the grid from the start, 10500.
        assert_eq!(task.calls, ["sleep 10000", "sleep 10000", "sleep 10000"]);
        assert_eq!(latencies(&out), [(0, 1520, 1)]);
        // A failing sleep, a failing yield.
        let mut task = sim(&now, vec![]);
        task.fail_sleep = true;
        let (end, _, _) = run(&mut task, &now, &cfg(1), &stop);
        assert!(matches!(end, LoopEnd::Error(ref e) if e.to_string() == "refused"));
        let mut task = sim(&now, vec![]);
        let (end, out, _) = run(&mut task, &now, &cfg(1), &stop);
        assert!(matches!(end, LoopEnd::Error(ref e) if e.to_string() == "no more releases"));
        assert!(out.is_empty());
    }

    #[test]
    fn the_kernels_deadline_is_read_from_proc() {
        let text = b"rtscope-t0 (14085, #threads: 3)\n-------\nse.exec_start  :  13152521.995593\npolicy  :  6\ndl.runtime   :   5978798\ndl.deadline      :       13157290646171\n";
        assert_eq!(parse_dl_deadline(text), Some(13_157_290_646_171));
        assert_eq!(parse_dl_deadline(b"dl.deadline : 42"), Some(42));
        assert_eq!(parse_dl_deadline(b"policy : 0\n"), None);
        assert_eq!(parse_dl_deadline(b"dl.deadline : \n"), None);
        assert_eq!(parse_dl_deadline(b"dl.deadline : 12x\n"), None);
        assert_eq!(parse_dl_deadline(b"dl.deadline 12\n"), None);
        assert_eq!(parse_dl_deadline(b"dl.deadline : -3\n"), None);
        // What u64's parser would take, but the kernel never writes.
        assert_eq!(parse_dl_deadline(b"dl.deadline : +12\n"), None);
        // A normal thread's shows none.
        let own = std::fs::read("/proc/thread-self/sched").unwrap();
        assert_eq!(parse_dl_deadline(&own), None);
    }

    /// The real thing, as root: a thread becomes a deadline task, its
    /// parameters are read back, the scheduler's clock calibrated, and it
    /// measures a few periods.
    #[test]
    fn a_real_deadline_task_measures() {
        let params = p(200_000, 1_000_000, 1_000_000);
        let got = std::thread::spawn(move || {
            let raw = crate::cyclic::PosixClock(libc::CLOCK_MONOTONIC_RAW);
            let sched = SchedFile::open();
            let (back, calibration) = params.apply_calibrated(&raw, sched.as_ref())?;
            let first_deadline = sched.as_ref().and_then(SchedFile::deadline);
            let mono = libc::CLOCK_MONOTONIC;
            let offset = raw.now() as i64 - sys::clock_ns(mono) as i64;
            let c = LoopConfig {
                period_ns: 1_000_000,
                start_ns: sys::clock_ns(mono) + 1_000_000,
                start_margin_ns: 200_000,
                warmup: 0,
                loops: Some(5),
                end_ns: None,
                break_above_ns: None,
                fixed_cpu: None,
            };
            let counters = GridCounters::default();
            let mut out = Vec::new();
            let mut task = SchedDeadline { clock: mono, sched };
            // The task's own reading is the file's: between two readings of
            // it (a deadline only moves on; under load the kernel may
            // replenish the task between two reads).
            let file = |t: &SchedDeadline| t.sched.as_ref().and_then(SchedFile::deadline);
            let before = file(&task);
            let own = task.kernel_deadline();
            let after = file(&task);
            match (before, own, after) {
                (Some(b), Some(o), Some(a)) => assert!(b <= o && o <= a, "{b} {o} {a}"),
                (None, None, None) => {}
                other => panic!("the task's reading and the file's differ: {other:?}"),
            }
            let end = run_deadline_loop(
                &mut task,
                &raw,
                &mut out,
                &c,
                &DeadlineConfig {
                    deadline_ns: 1_000_000,
                    offset_ns: offset,
                    calibration,
                },
                &counters,
                &AtomicBool::new(false),
            );
            let policy = sys::get_attr().unwrap().policy;
            let last_deadline = task.kernel_deadline();
            let _ = sys::set_scheduler(libc::SCHED_OTHER, 0);
            Ok((
                back,
                calibration,
                end,
                out,
                policy,
                (first_deadline, own, last_deadline),
                c.start_ns,
            ))
        })
        .join()
        .unwrap();
        match got {
            Ok((back, calibration, end, out, policy, deadlines, start)) => {
                assert_eq!(back, params);
                // Where /proc shows it, the kernel's deadline was read: on
                // the scheduler's clock (well past a second after boot),
                // and moved on by a period at each of the 5 yields at least.
                if std::path::Path::new("/proc/thread-self/sched").exists() {
                    assert!(calibration.is_some());
                    let (first, own, last) = deadlines;
                    let first = first.unwrap();
                    assert!(first > 1_000_000_000, "{first}");
                    // A deadline only moves on: under load (the arm job
                    // under qemu beside other builds) the kernel replenished
                    // the task by a period between the two readings.
                    assert!(own.is_some_and(|o| o >= first), "{deadlines:?}");
                    assert!(last.unwrap() >= first + 5 * 1_000_000, "{deadlines:?}");
                }
                // The loop slept until the start.
                assert!(out[0].t_ns >= start, "{} {start}", out[0].t_ns);
                assert!(matches!(end, LoopEnd::Loops), "{end:?}");
                assert_eq!(policy, libc::SCHED_DEADLINE);
                assert!(!out.is_empty() && out.len() <= 5);
                assert!(out.iter().all(|s| s.latency_ns >= 0));
                assert!(out.windows(2).all(|w| w[0].t_ns < w[1].t_ns));
            }
            // Unprivileged: refused, and told why.
            Err(e) => {
                let e: DeadlineError = e;
                assert!(sys::geteuid() != 0, "{e}");
                assert_eq!(e.errno, Some(libc::EPERM));
                assert!(e.message.starts_with("not allowed to use SCHED_DEADLINE"));
            }
        }
    }
}
