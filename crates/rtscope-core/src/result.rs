//! The result document: one versioned JSON document per run, the same shape for
//! every experiment. Documented in `docs/result-schema.md`, with a JSON Schema in
//! `docs/result-schema.json`.
//!
//! Every duration is an integer number of nanoseconds and its field name ends in
//! `_ns`; means and standard deviations are floats (still ns).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::system::SystemSnapshot;

mod v2;
use v2::upgrade_v2_series;

/// Version of the document's shape. Bumped on any incompatible change.
///
/// 2: `loads` became typed ([`LoadReport`]); the run environment moved out of
/// `plan` into [`RunEnvironment`]. Version 1 documents are still read
/// (upgraded on reading, see [`upgrade_v1`]).
///
/// 3: statistics that are not known are `null` instead of 0 (a series without
/// samples; percentiles and stddev of an import without a histogram), see
/// [`Stats`]. Version 2 documents are read with [`upgrade_v2`].
pub const SCHEMA_VERSION: u32 = 3;

/// The oldest version [`ResultDocument::read`] still reads.
pub const OLDEST_READABLE_VERSION: u32 = 1;

/// A whole run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ResultDocument {
    /// Shape version of this document ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The program that wrote it.
    pub tool: Tool,
    /// Which experiment: `cyclic`, `clock`, `ipc`, ...
    pub experiment: String,
    /// The exact command line.
    pub command_line: Vec<String>,
    /// Wall-clock start, RFC 3339 UTC.
    pub started_at: String,
    /// Wall-clock end (or time of the checkpoint), RFC 3339 UTC.
    pub ended_at: String,
    /// The measurement clock's reading at start, ns (timeline and spike times are
    /// relative to it, or absolute on this clock for spikes).
    pub start_clock_ns: u64,
    /// How long the measurement ran, ns.
    pub duration_ns: u64,
    /// Why the run ended.
    pub end_reason: EndReason,
    /// The resolved plan: every setting, defaults included. Experiment-specific.
    pub plan: serde_json::Value,
    /// The machine it ran on.
    pub system: SystemSnapshot,
    /// How the measurement threads ran (absent for imported documents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<RunEnvironment>,
    /// One entry per series (per thread, plus their union, for `cyclic`).
    pub series: Vec<Series>,
    /// Background loads that ran beside the measurement, with what they achieved.
    #[serde(default)]
    pub loads: Vec<LoadReport>,
    /// Set when `--break-above` stopped the run.
    #[serde(default)]
    pub break_event: Option<BreakEvent>,
    /// Set when `--fail-above` was given.
    #[serde(default)]
    pub threshold: Option<Threshold>,
    /// `--fail-if` (and `--fail-above`): every gate checked on every series
    /// it applies to, and whether any failed (absent without gates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gates: Option<GateReport>,
    /// Conditions that weaken the result (not RT, no mlock, a VM, ...).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// `--trace`: the join, the accuracy check, the worst samples by stage, the causes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceReport>,
}

/// What `--trace` found (see `trace::stages` for the stages).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct TraceReport {
    /// The trace clock (`mono`: CLOCK_MONOTONIC).
    pub clock: String,
    /// The private tracefs instance used (removed at the end of the run).
    pub instance: String,
    /// Events enabled in it.
    pub events: Vec<String>,
    /// Events asked for that this kernel does not have.
    pub missing_events: Vec<String>,
    /// Events read and decoded.
    pub events_read: u64,
    /// Pages the kernel handed over saying events were lost before them.
    pub lost_pages: u64,
    /// Events the kernel counted as lost.
    pub lost_events: u64,
    /// The per-CPU `overrun` and `dropped events` counters, summed.
    pub overruns: u64,
    /// rtscope samples seen while tracing.
    pub samples: u64,
    /// Samples joined with their kernel wake-up and split into stages.
    pub joined: u64,
    /// Paired, but no timer interrupt or syscall exit seen: not split (joined + this + unmatched = samples).
    pub incomplete: u64,
    /// Samples without a matching kernel wake-up.
    pub unmatched_samples: u64,
    /// Kernel wake-ups of the measured threads without a matching sample.
    pub unmatched_wakes: u64,
    /// For each stage, the number of joined samples it was observed for.
    pub observed: BTreeMap<String, u64>,
    /// The built-in accuracy check of the joined samples.
    pub accuracy: TraceAccuracy,
    /// The worst joined samples, worst first, with their stages.
    pub worst: Vec<WakeStages>,
    /// `--trace-outliers`: the causes of all outliers ([`crate::trace::cause`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub causes: Option<crate::trace::cause::CauseTable>,
    /// `--trace-outliers`: each outlier with its cause, in time order (the first 10 000).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outliers: Vec<crate::trace::cause::OutlierCause>,
}

/// The built-in accuracy check: rtscope's latency − the kernel's bound
/// (`sys_exit − expires`) for every joined sample; it must never be negative.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct TraceAccuracy {
    /// Joined samples checked.
    pub checked: u64,
    /// Samples whose latency is below the kernel's bound.
    pub below_kernel: u64,
    /// Smallest (rtscope's latency − the kernel's bound), ns.
    pub min_ns: i64,
    /// Median of the difference, ns.
    pub p50_ns: u64,
    /// 99th percentile of the difference, ns.
    pub p99_ns: u64,
    /// Largest difference, ns.
    pub max_ns: i64,
    /// `checked > 0 && below_kernel == 0`.
    pub passed: bool,
}

/// One sample split into stages (ns; absent: not observed).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct WakeStages {
    /// The series (thread) it belongs to.
    pub series: String,
    /// The sample's sequence number in its series.
    pub seq: u64,
    /// rtscope's stamp, on the measurement clock.
    pub t_ns: u64,
    /// The CPU it woke on.
    pub cpu: u32,
    /// rtscope's latency of the sample, ns.
    pub latency_ns: i64,
    /// The intended wake time (the kernel's `softexpires`).
    pub expires_ns: u64,
    /// Stage: intended wake time to the timer interrupt (`hrtimer_expire_entry`), ns.
    pub timer_ns: i64,
    /// Stage: timer interrupt to `sched_waking` of the thread, ns.
    pub wakeup_ns: Option<i64>,
    /// Stage: `sched_waking` to `sched_switch` onto the CPU, ns.
    pub sched_ns: Option<i64>,
    /// Stage: `sched_switch` to the return from the sleep system call, ns.
    pub return_ns: Option<i64>,
    /// Stages: `sched_waking` to the return from the system call (sched + return), ns.
    pub switch_return_ns: Option<i64>,
    /// Return from the system call to rtscope's clock read, ns.
    pub rtscope_kernel_ns: i64,
    /// The task the thread was switched in from (`comm[pid]`), when recorded.
    pub switched_from: Option<String>,
    /// `--trace-outliers`: what ran on its CPUs from the timer's arming to the wake-up.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<ContextEntry>,
    /// `--trace-outliers`: its cause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<crate::trace::cause::Diagnosis>,
}

/// One thing that ran in an outlier's window.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct ContextEntry {
    /// Start, ns relative to the intended wake time (negative: before it).
    pub start_ns: i64,
    /// How long it ran, ns.
    pub duration_ns: u64,
    /// The CPU it ran on.
    pub cpu: u32,
    /// `irq`, `softirq`, `vector`, `task`, `nmi`; markers `armed`, `timer`, `waking`, `switch`, `exit`.
    pub kind: String,
    /// Readable: `IRQ 11 virtio0`, `kworker/1:2[77]`, ...
    pub what: String,
}

/// The real-time environment a run's measurement threads had: what was asked
/// and what the system granted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RunEnvironment {
    /// Scheduling policy of the measurement threads (`fifo`, `other`, ...).
    pub policy: crate::rt::Policy,
    /// Their priority (0 for non-real-time policies).
    pub priority: i32,
    /// `--no-rt`: measured without real-time scheduling on purpose.
    #[serde(default)]
    pub no_rt: bool,
    /// `--default-system`: no system tuning was applied.
    #[serde(default)]
    pub default_system: bool,
    /// Whether memory was locked (`mlockall`).
    pub mlocked: bool,
    /// Whether `/dev/cpu_dma_latency` was held at 0.
    pub cpu_dma_latency_held: bool,
}

/// What one background load achieved during a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct LoadReport {
    /// The SPEC as given (`cpu:50`, `mem-fault:100,size=64M`, ...).
    pub spec: String,
    /// Load name from the load table.
    pub name: String,
    /// Requested CPU share per instance, percent (regulated loads only).
    pub level: Option<u8>,
    /// Number of instances (worker processes).
    pub instances: usize,
    /// CPUs the instances ran on.
    pub cpus: Vec<usize>,
    /// Length of the window the CPU share was measured over, seconds.
    pub window_s: f64,
    /// Worker lifetime (the counters' window), seconds.
    pub lifetime_s: f64,
    /// CPU share of each instance over the window, percent of one CPU.
    pub achieved_cpu_percent: Vec<f64>,
    /// Mean of `achieved_cpu_percent`.
    pub achieved_cpu_percent_mean: f64,
    /// Work counters summed over the instances.
    pub counters: BTreeMap<String, u64>,
    /// Per-instance detail.
    pub instance_reports: Vec<InstanceReport>,
    /// Instances that failed.
    pub errors: Vec<String>,
    /// When a load on only part of the time (`every=`, `for=`, `start=`) was on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<LoadSchedule>,
    /// Delivered less than asked beyond the tolerance (CPU share below
    /// `level`, a paced `net` rate below `rate=`); `false` in older documents.
    pub fell_short: bool,
    /// The workers' `policy=` (`other`, `fifo`, `rr`); absent for other loads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Their real-time priority (1-99), with `fifo` and `rr` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<u8>,
}

/// When a scheduled load was on. Its CPU shares (`achieved_cpu_percent`)
/// are measured over `on_s`, the time it was on, not over the window.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct LoadSchedule {
    /// The period, ns: on for `for_ns` at its start, from `start_ns` after the window opened.
    pub every_ns: u64,
    /// How long each on-phase lasts, ns.
    pub for_ns: u64,
    /// When the first on-phase starts, ns after the window opened.
    pub start_ns: u64,
    /// `[on, off]` times, ns from the document's start, in order; the first [`MAX_ON_INTERVALS`].
    pub on_intervals_ns: Vec<[u64; 2]>,
    /// How many times the load was switched on (also beyond the list).
    pub on_count: u64,
    /// Time on within the measurement window, seconds.
    pub on_s: f64,
}

/// The most on-intervals a load report lists.
pub const MAX_ON_INTERVALS: usize = 1000;

/// What one instance of a load achieved.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct InstanceReport {
    /// The instance's index within its load (0, 1, ...).
    pub index: usize,
    /// Worker pid (also its process-group id).
    pub pid: i32,
    /// The CPUs it was pinned to.
    pub cpus: Vec<usize>,
    /// CPU share over the window, percent of one CPU.
    pub cpu_percent: f64,
    /// Work counters, over the worker's whole life.
    pub counters: BTreeMap<String, u64>,
    /// `exited 0`, `exited 1`, `signal 9`, ...
    pub exit: String,
    /// The worker's own error, if it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The program that wrote a document.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Tool {
    /// The program's name (`rtscope`).
    pub name: String,
    /// Its version, and the commit it was built from.
    pub version: String,
}

impl Default for Tool {
    fn default() -> Self {
        Tool {
            name: "rtscope".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// Every thread finished its loops.
    Loops,
    /// The requested duration elapsed.
    Duration,
    /// SIGINT or SIGTERM.
    Interrupted,
    /// `--break-above` fired.
    Break,
    /// A measurement thread failed.
    Error,
    /// The run is still going: this is a periodic checkpoint.
    Running,
    /// Imported from another tool's output.
    Imported,
}

/// One distribution: its label, free-form attributes, statistics, counters,
/// histogram, timeline and worst samples; optionally per-block histograms
/// and the repetitions it pools.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Series {
    /// Unique within the document: `thread 0`, `all`, ...
    pub label: String,
    /// What the series is (thread index, tid, CPU affinity, policy, period_ns ...).
    #[serde(default)]
    pub attributes: BTreeMap<String, serde_json::Value>,
    /// The series' statistics.
    pub stats: Stats,
    /// Overruns, negative and above-threshold samples.
    pub counters: SeriesCounters,
    /// The latency histogram (non-empty buckets).
    pub histogram: HistogramExport,
    /// Max and mean per interval of the run.
    pub timeline: Timeline,
    /// The worst samples, worst first.
    pub spikes: Vec<Spike>,
    /// Per-time-block histograms, for dependence-aware intervals (absent in
    /// documents of older versions and in imports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<BlockHistograms>,
    /// With `--repeat N`: the N independent runs this series pools, each a
    /// full series of its own (without further repetitions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repetitions: Vec<Series>,
    /// A periodic series (`cyclic`): the distribution over the intended
    /// periods, missed ones included (absent elsewhere and in documents of
    /// older versions; see [`Series::over_intended_periods`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrected: Option<Corrected>,
}

/// A periodic series' figures over its intended periods: every wake-up, and
/// every period a late wake-up skipped counted at the lateness it had when
/// the wake-up came (`latency - k * period` for the `k`-th skipped one), so
/// that `stats.count` is `count + counters.overruns` of the series. The
/// correction for coordinated omission (HdrHistogram's `record_correct`,
/// counting the last skipped period too: `docs/cyclic.md`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Corrected {
    /// Statistics over the intended periods.
    pub stats: Stats,
    /// The histogram over the intended periods.
    pub histogram: HistogramExport,
    /// Per-block histograms, each skipped period in the block of its deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<BlockHistograms>,
    /// Periods above `--fail-above`, when it is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub above_threshold: Option<u64>,
}

impl Series {
    /// The series as seen over its intended periods: its statistics,
    /// histogram, blocks and threshold count replaced by those of
    /// [`Series::corrected`] (repetitions likewise); `None` when it (or one
    /// of its repetitions) has none. Timeline, spikes and the other
    /// counters stay those of the wake-ups.
    pub fn over_intended_periods(&self) -> Option<Series> {
        let c = self.corrected.as_ref()?;
        let repetitions = self
            .repetitions
            .iter()
            .map(Series::over_intended_periods)
            .collect::<Option<Vec<_>>>()?;
        Some(Series {
            label: self.label.clone(),
            attributes: self.attributes.clone(),
            stats: c.stats.clone(),
            counters: SeriesCounters {
                above_threshold: c.above_threshold,
                ..self.counters.clone()
            },
            histogram: c.histogram.clone(),
            timeline: self.timeline.clone(),
            spikes: self.spikes.clone(),
            blocks: c.blocks.clone(),
            repetitions,
            corrected: None,
        })
    }
}

/// The run cut into consecutive time blocks, each with a compact histogram
/// (see `record::blocks`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct BlockHistograms {
    /// Length of a block, ns; block `i` covers `[i, i + 1) * block_ns` after
    /// the start (in a pooled series: the repetitions' blocks one after the other).
    pub block_ns: u64,
    /// Buckets per power of two (32): bucket `k < 32` holds the value `k`;
    /// above, bucket `k` starts at `(32 + k % 32) << (k / 32 - 1)` and is
    /// `1 << (k / 32 - 1)` wide.
    pub sub_buckets: u32,
    /// One string per block, in time order: its non-empty buckets as
    /// `bucket:count` pairs separated by spaces (empty for a block without samples).
    pub blocks: Vec<String>,
}

/// Summary statistics. min/max/mean/stddev are exact; percentiles come from the
/// histogram (within 0.1 %).
///
/// What is not known is written as `null` in the document (and read back as 0
/// with the matching flag of [`Stats::unknown`] set): every value but `count`
/// of a series without samples, and what [`Stats::unknown`] names (an import
/// of cyclictest output without a histogram has no percentiles or stddev).
/// Use [`Stats::has_percentiles`], [`Stats::has_stddev`] and
/// [`Stats::has_mean`] before showing a value.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(from = "StatsJson", into = "StatsJson")]
pub struct Stats {
    /// Number of samples.
    pub count: u64,
    /// Smallest latency, ns.
    pub min_ns: i64,
    /// Largest latency, ns.
    pub max_ns: i64,
    /// Mean latency, ns.
    pub mean_ns: f64,
    /// Standard deviation, ns.
    pub stddev_ns: f64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 90th percentile, ns.
    pub p90_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p99_9_ns: u64,
    /// 99.99th percentile, ns.
    pub p99_99_ns: u64,
    /// 99.999th percentile, ns.
    pub p99_999_ns: u64,
    /// Values the source did not measure (written as `null`, their fields 0).
    pub unknown: Unknown,
}

/// Which values of [`Stats`] were not measured (beyond a count of 0, which
/// makes every value unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Unknown {
    /// p50 ... p99.999.
    pub percentiles: bool,
    /// The standard deviation.
    pub stddev: bool,
    /// The mean.
    pub mean: bool,
}

impl Stats {
    /// min and max (any sample at all).
    pub fn has_samples(&self) -> bool {
        self.count > 0
    }
    /// p50 ... p99.999 are measured values.
    pub fn has_percentiles(&self) -> bool {
        self.count > 0 && !self.unknown.percentiles
    }
    /// The standard deviation is a measured value.
    pub fn has_stddev(&self) -> bool {
        self.count > 0 && !self.unknown.stddev
    }
    /// The mean is a measured value.
    pub fn has_mean(&self) -> bool {
        self.count > 0 && !self.unknown.mean
    }
}

/// [`Stats`] as written: unknown values are `null`.
#[derive(Serialize, Deserialize)]
struct StatsJson {
    count: u64,
    min_ns: Option<i64>,
    max_ns: Option<i64>,
    mean_ns: Option<f64>,
    stddev_ns: Option<f64>,
    p50_ns: Option<u64>,
    p90_ns: Option<u64>,
    p99_ns: Option<u64>,
    p99_9_ns: Option<u64>,
    p99_99_ns: Option<u64>,
    p99_999_ns: Option<u64>,
}

impl From<Stats> for StatsJson {
    fn from(s: Stats) -> Self {
        let some = s.count > 0;
        let pc = s.has_percentiles();
        let p = |v: u64| pc.then_some(v);
        StatsJson {
            count: s.count,
            min_ns: some.then_some(s.min_ns),
            max_ns: some.then_some(s.max_ns),
            mean_ns: s.has_mean().then_some(s.mean_ns),
            stddev_ns: s.has_stddev().then_some(s.stddev_ns),
            p50_ns: p(s.p50_ns),
            p90_ns: p(s.p90_ns),
            p99_ns: p(s.p99_ns),
            p99_9_ns: p(s.p99_9_ns),
            p99_99_ns: p(s.p99_99_ns),
            p99_999_ns: p(s.p99_999_ns),
        }
    }
}

impl From<StatsJson> for Stats {
    fn from(j: StatsJson) -> Self {
        let percentiles = [
            j.p50_ns,
            j.p90_ns,
            j.p99_ns,
            j.p99_9_ns,
            j.p99_99_ns,
            j.p99_999_ns,
        ];
        Stats {
            count: j.count,
            min_ns: j.min_ns.unwrap_or(0),
            max_ns: j.max_ns.unwrap_or(0),
            mean_ns: j.mean_ns.unwrap_or(0.0),
            stddev_ns: j.stddev_ns.unwrap_or(0.0),
            p50_ns: j.p50_ns.unwrap_or(0),
            p90_ns: j.p90_ns.unwrap_or(0),
            p99_ns: j.p99_ns.unwrap_or(0),
            p99_9_ns: j.p99_9_ns.unwrap_or(0),
            p99_99_ns: j.p99_99_ns.unwrap_or(0),
            p99_999_ns: j.p99_999_ns.unwrap_or(0),
            unknown: Unknown {
                percentiles: percentiles.iter().any(Option::is_none),
                stddev: j.stddev_ns.is_none(),
                mean: j.mean_ns.is_none(),
            },
        }
    }
}

/// Counters kept beside the distribution.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SeriesCounters {
    /// Periods skipped because a wake-up came after the following deadline.
    pub overruns: u64,
    /// Samples that skipped at least one period.
    pub overrun_samples: u64,
    /// Samples lost because the ring to the aggregator was full.
    pub dropped: u64,
    /// Samples with negative latency (recorded as 0 in the histogram).
    pub negative: u64,
    /// Samples above `--fail-above`, when it is set.
    #[serde(default)]
    pub above_threshold: Option<u64>,
}

/// The histogram's non-empty buckets.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct HistogramExport {
    /// The lowest value the histogram tells apart, ns.
    pub lowest_ns: u64,
    /// The highest value it holds, ns.
    pub highest_ns: u64,
    /// Its precision: significant decimal digits (HdrHistogram).
    pub significant_digits: u8,
    /// `[value_ns, count]`: value is the lowest value of the bucket.
    pub buckets: Vec<[u64; 2]>,
}

/// Per-interval latency summary.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Timeline {
    /// The length of one interval, ns.
    pub interval_ns: u64,
    /// The intervals, in time order.
    pub points: Vec<TimelinePoint>,
}

/// One timeline interval, starting `t_ns` after the run started.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct TimelinePoint {
    /// Start of the interval, ns after the run started.
    pub t_ns: u64,
    /// Samples in it.
    pub count: u64,
    /// Smallest latency in it, ns.
    pub min_ns: u64,
    /// Mean latency in it, ns.
    pub mean_ns: f64,
    /// Largest latency in it, ns.
    pub max_ns: u64,
}

/// One of the worst samples.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Spike {
    /// The sample's latency, ns.
    pub latency_ns: i64,
    /// When it happened, ns on the measurement clock.
    pub t_ns: u64,
    /// Its sequence number in its series.
    pub seq: u64,
    /// The CPU it woke on.
    pub cpu: u32,
}

/// What stopped a run under `--break-above`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BreakEvent {
    /// The `--break-above` threshold, ns.
    pub threshold_ns: u64,
    /// The series the sample belongs to.
    pub series: String,
    /// The sample's sequence number.
    pub seq: u64,
    /// When it woke, ns on the measurement clock.
    pub t_ns: u64,
    /// Its latency, ns.
    pub latency_ns: i64,
}

/// The `--fail-above` verdict.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Threshold {
    /// The `--fail-above` threshold, ns.
    pub fail_above_ns: u64,
    /// Whether any sample exceeded it.
    pub exceeded: bool,
    /// How many samples did.
    pub samples_above: u64,
}

/// The gates of a run (`--fail-if`, `--fail-above`) and their outcome.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GateReport {
    /// No gate failed.
    pub passed: bool,
    /// One entry per gate and series it was checked on, in the order given.
    pub checks: Vec<GateCheck>,
}

/// One gate checked on one series. A gate names the condition that fails
/// the run (`p99>50us`): it fails when that holds, or when the statistic
/// was not recorded (`value` null: no samples, an import without it).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GateCheck {
    /// The gate as given (`p99>50us`, `thread 0:max>=1ms`, `--fail-above 200us`).
    pub gate: String,
    /// The series' label.
    pub series: String,
    /// The statistic's name (`p99`, `max`, `overruns`, ...).
    pub statistic: String,
    /// `>`, `>=`, `<` or `<=`.
    pub op: String,
    /// The limit: ns for a duration statistic, a number for a count.
    pub limit: f64,
    /// `ns` or `count`.
    pub unit: String,
    /// The measured value (same unit), `null` when not recorded.
    pub value: Option<f64>,
    /// Without a value, a bound (ns) it is known to lie below: an hwlat
    /// series without samples, every gap below the threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub below: Option<f64>,
    /// Whether this check failed the run.
    pub failed: bool,
}

/// Errors reading or writing documents.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocError {
    #[error("{path}: {source}")]
    /// Reading or writing the file failed.
    Io {
        /// The file.
        path: String,
        #[source]
        /// What the system said.
        source: std::io::Error,
    },
    #[error("{path}: not an rtscope result document: {source}")]
    /// The file is not valid JSON of a result document.
    Parse {
        /// The file.
        path: String,
        #[source]
        /// What the parser said.
        source: serde_json::Error,
    },
    #[error(
        "{path}: schema_version {found} is not supported (this rtscope reads {SCHEMA_VERSION})"
    )]
    /// A `schema_version` this version of rtscope does not read.
    Version {
        /// The file.
        path: String,
        /// The version it has.
        found: u64,
    },
    /// Valid JSON without an integer `schema_version` (`{}`, `[]`, a null ...).
    #[error("{path}: not an rtscope result document")]
    NotADocument {
        /// The file.
        path: String,
    },
    /// Larger than any result document rtscope writes (a device, a huge file).
    #[error("{path}: not an rtscope result document: larger than {limit_mib} MiB")]
    TooLarge {
        /// The file.
        path: String,
        /// The largest size read, MiB.
        limit_mib: u64,
    },
}

pub use crate::file::{check_writable, write_atomic};

/// Upgrades a version 1 document (as JSON) to the current shape: the run
/// environment that v1 kept in `plan` (`rt`, `mlocked`,
/// `cpu_dma_latency_held`) becomes [`RunEnvironment`]; `loads` entries already
/// have [`LoadReport`]'s fields.
pub fn upgrade_v1(v: &mut serde_json::Value) {
    let Some(o) = v.as_object_mut() else { return };
    o.insert("schema_version".into(), SCHEMA_VERSION.into());
    let plan = o.get_mut("plan").and_then(|p| p.as_object_mut());
    let env = plan.and_then(|p| {
        let mlocked = p.remove("mlocked")?.as_bool()?;
        let dma = p.remove("cpu_dma_latency_held")?.as_bool()?;
        let rt = p.get("rt")?;
        Some(serde_json::json!({
            "policy": rt.get("policy")?,
            "priority": rt.get("priority")?,
            "no_rt": rt.get("no_rt").and_then(|x| x.as_bool()).unwrap_or(false),
            "default_system": rt.get("default_system").and_then(|x| x.as_bool()).unwrap_or(false),
            "mlocked": mlocked,
            "cpu_dma_latency_held": dma,
        }))
    });
    if let Some(env) = env {
        o.insert("environment".into(), env);
    }
}

/// Upgrades a version 2 document (as JSON) to version 3. Version 2 wrote 0
/// where a value was not known; what can only have been unknown becomes
/// `null`: every value of a series without samples, and the percentiles and
/// stddev of an imported series whose percentiles are all 0 above a non-zero
/// maximum (cyclictest output without a histogram).
pub fn upgrade_v2(v: &mut serde_json::Value) {
    fn fix(series: &mut serde_json::Value) {
        let imported = series["attributes"]["source"].is_string();
        if let Some(st) = series.get_mut("stats").and_then(|s| s.as_object_mut()) {
            let count = st.get("count").and_then(|c| c.as_u64()).unwrap_or(0);
            let pct = [
                "p50_ns",
                "p90_ns",
                "p99_ns",
                "p99_9_ns",
                "p99_99_ns",
                "p99_999_ns",
            ];
            if count == 0 {
                for (k, x) in st.iter_mut() {
                    if k != "count" {
                        *x = serde_json::Value::Null;
                    }
                }
            } else if imported
                && st.get("max_ns").and_then(|m| m.as_i64()).unwrap_or(0) > 0
                && pct
                    .iter()
                    .all(|k| st.get(*k).and_then(|x| x.as_u64()) == Some(0))
            {
                for k in pct.iter().chain(&["stddev_ns"]) {
                    st.insert((*k).into(), serde_json::Value::Null);
                }
            }
        }
        if let Some(reps) = series.get_mut("repetitions").and_then(|r| r.as_array_mut()) {
            reps.iter_mut().for_each(fix);
        }
    }
    let Some(o) = v.as_object_mut() else { return };
    o.insert("schema_version".into(), SCHEMA_VERSION.into());
    if let Some(series) = o.get_mut("series").and_then(|s| s.as_array_mut()) {
        series.iter_mut().for_each(fix);
    }
}

impl ResultDocument {
    /// A new document of `experiment` with this plan, machine and series,
    /// stamped now; the rest empty. Callers fill in what their run knows.
    pub fn new(
        experiment: &str,
        plan: serde_json::Value,
        system: SystemSnapshot,
        series: Vec<Series>,
    ) -> Self {
        let now = now_rfc3339();
        ResultDocument {
            schema_version: SCHEMA_VERSION,
            tool: Tool::default(),
            experiment: experiment.into(),
            command_line: std::env::args().collect(),
            started_at: now.clone(),
            ended_at: now,
            start_clock_ns: 0,
            duration_ns: 0,
            end_reason: EndReason::Loops,
            plan,
            system,
            environment: None,
            series,
            loads: vec![],
            break_event: None,
            threshold: None,
            gates: None,
            warnings: vec![],
            trace: None,
        }
    }

    /// Serialises the document as pretty JSON.
    pub fn to_json(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).expect("result documents always serialise");
        v.push(b'\n');
        v
    }

    /// Writes the document atomically to `path`.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        write_atomic(path, &self.to_json())
    }

    /// Reads and version-checks a document. Input larger than 256 MiB (far
    /// above any document rtscope writes) is refused without reading it all,
    /// so that a device (`/dev/zero`) or a huge file ends in an error rather
    /// than in memory exhaustion. A UTF-8 byte-order mark is skipped.
    pub fn read(path: &Path) -> Result<Self, DocError> {
        Self::read_at_most(path, 256 << 20)
    }

    /// [`read`](Self::read) with the size limit in bytes.
    fn read_at_most(path: &Path, limit: u64) -> Result<Self, DocError> {
        let p = path.display().to_string();
        let bytes = read_json_object(path, limit)?;
        let json = &bytes[..];
        // First only the version (no tree of the whole document in memory).
        #[derive(Deserialize)]
        struct Head {
            schema_version: Option<serde_json::Value>,
        }
        let parse = |source| DocError::Parse {
            path: p.clone(),
            source,
        };
        let head: Head = match serde_json::from_slice(json) {
            Ok(h) => h,
            // Valid JSON of another shape (an array, a number, ...).
            Err(e) if e.is_data() => return Err(DocError::NotADocument { path: p }),
            Err(e) => return Err(parse(e)),
        };
        let found = match head.schema_version {
            Some(serde_json::Value::Number(n)) => n.as_u64(),
            _ => None,
        }
        .ok_or_else(|| DocError::NotADocument { path: p.clone() })?;
        if found == 2 {
            // Typed (a tree of JSON values took 16 times the file's size);
            // what does not read so takes the JSON path below.
            if let Ok(mut d) = serde_json::from_slice::<ResultDocument>(json) {
                d.schema_version = SCHEMA_VERSION;
                d.series.iter_mut().for_each(upgrade_v2_series);
                return Ok(d);
            }
        }
        if found == 1 || found == 2 {
            let mut v: serde_json::Value = serde_json::from_slice(json).map_err(parse)?;
            if found == 1 {
                upgrade_v1(&mut v);
            }
            upgrade_v2(&mut v);
            return serde_json::from_value(v).map_err(parse);
        }
        if found != u64::from(SCHEMA_VERSION) {
            return Err(DocError::Version { path: p, found });
        }
        serde_json::from_slice(json).map_err(parse)
    }
}
/// Reads a JSON object from `path` with at most `limit` bytes, the bounded
/// reader behind [`ResultDocument::read`] and every other JSON input rtscope
/// reads whole (a calibration): a directory, a regular file larger than
/// `limit`, a device or FIFO that goes on past it, and anything whose first
/// byte is not `{` (`/dev/zero`, a binary file) are refused without being
/// read into memory; a FIFO nobody writes to is an error after
/// [`input_wait`](crate::file::input_wait). A UTF-8 byte-order mark is
/// skipped (not returned).
pub fn read_json_object(path: &Path, limit: u64) -> Result<Vec<u8>, DocError> {
    use std::io::{BufRead, Read};
    let p = path.display().to_string();
    let io = |source| DocError::Io {
        path: p.clone(),
        source,
    };
    let too_large = || DocError::TooLarge {
        path: p.clone(),
        limit_mib: limit >> 20,
    };
    let file = crate::file::open_input(path, crate::file::input_wait().map_err(io)?).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if meta.is_dir() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory",
        )));
    }
    if meta.is_file() && meta.len() > limit {
        return Err(too_large());
    }
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    let mut input = std::io::BufReader::with_capacity(64 << 10, file.take(limit + 1));
    // A document is a JSON object: anything else (`/dev/zero`, a binary
    // file) is refused at its first byte, before it is read on.
    let head = input.fill_buf().map_err(io)?;
    let head = head.strip_prefix(BOM).unwrap_or(head);
    if head
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b != b'{')
    {
        return Err(DocError::NotADocument { path: p.clone() });
    }
    let mut bytes = Vec::with_capacity(if meta.is_file() {
        meta.len() as usize
    } else {
        0
    });
    input.read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    if bytes.starts_with(BOM) {
        bytes.drain(..BOM.len());
    }
    Ok(bytes)
}

/// The current wall-clock time as RFC 3339 UTC with microseconds.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::SeriesRecorder;
    use crate::sample::Sample;

    fn doc() -> ResultDocument {
        let mut rec = SeriesRecorder::new(1_000, 4, Some(50));
        for i in 0..100u64 {
            rec.record(&Sample {
                seq: i,
                t_ns: 1_000 + i * 1_000_000,
                latency_ns: (i * 37 % 101) as i64,
                overruns: (i % 17 == 0) as u32,
                cpu: (i % 2) as u32,
            });
        }
        let mut s = rec.to_series("thread 0", 3);
        s.attributes.insert("tid".into(), serde_json::json!(42));
        ResultDocument {
            schema_version: SCHEMA_VERSION,
            tool: Tool::default(),
            experiment: "cyclic".into(),
            command_line: vec!["rtscope".into(), "cyclic".into()],
            started_at: now_rfc3339(),
            ended_at: now_rfc3339(),
            start_clock_ns: 1_000,
            duration_ns: 99_000_000,
            end_reason: EndReason::Loops,
            plan: serde_json::json!({"period_ns": 1_000_000}),
            system: SystemSnapshot::capture(),
            environment: Some(RunEnvironment {
                policy: crate::rt::Policy::Fifo,
                priority: 80,
                no_rt: false,
                default_system: false,
                mlocked: true,
                cpu_dma_latency_held: true,
            }),
            series: vec![s],
            loads: vec![LoadReport {
                name: "cpu".into(),
                ..Default::default()
            }],
            break_event: None,
            threshold: Some(Threshold {
                fail_above_ns: 50,
                exceeded: true,
                samples_above: 49,
            }),
            gates: Some(GateReport {
                passed: false,
                checks: vec![GateCheck {
                    gate: "p99>50ns".into(),
                    series: "all".into(),
                    statistic: "p99".into(),
                    op: ">".into(),
                    limit: 50.0,
                    unit: "ns".into(),
                    value: Some(60.0),
                    below: None,
                    failed: true,
                }],
            }),
            warnings: vec!["w".into()],
            trace: None,
        }
    }

    #[test]
    fn unknown_statistics_are_null_and_read_back_as_unknown() {
        let mut d = doc();
        let mut empty = d.series[0].clone();
        empty.label = "empty".into();
        empty.stats = Stats::default();
        d.series.push(empty);
        d.series[0].stats.unknown.percentiles = true;
        d.series[0].stats.unknown.stddev = true;
        let v = serde_json::to_value(&d).unwrap();
        let st = &v["series"][0]["stats"];
        assert!(st["p50_ns"].is_null() && st["p99_999_ns"].is_null() && st["stddev_ns"].is_null());
        assert!(st["min_ns"].is_i64() && st["mean_ns"].is_f64());
        let e = &v["series"][1]["stats"];
        assert_eq!(e["count"], 0);
        for k in [
            "min_ns",
            "max_ns",
            "mean_ns",
            "stddev_ns",
            "p50_ns",
            "p99_ns",
        ] {
            assert!(e[k].is_null(), "{k}: {e}");
        }
        let back: ResultDocument = serde_json::from_value(v).unwrap();
        assert!(!back.series[0].stats.has_percentiles());
        assert!(!back.series[0].stats.has_stddev());
        assert!(back.series[0].stats.has_mean());
        assert!(!back.series[1].stats.has_samples());
        assert_eq!(back.series[0].stats.min_ns, d.series[0].stats.min_ns);
    }

    #[test]
    fn version_2_zeros_that_mean_unknown_become_null() {
        let d = doc();
        let mut v = serde_json::to_value(&d).unwrap();
        v["schema_version"] = 2.into();
        let mut imported = v["series"][0].clone();
        imported["label"] = "imported".into();
        imported["attributes"]["source"] = "cyclictest".into();
        for k in [
            "p50_ns",
            "p90_ns",
            "p99_ns",
            "p99_9_ns",
            "p99_99_ns",
            "p99_999_ns",
        ] {
            imported["stats"][k] = 0.into();
        }
        imported["stats"]["stddev_ns"] = 0.0.into();
        let mut empty = v["series"][0].clone();
        empty["label"] = "empty".into();
        for (k, x) in empty["stats"].as_object_mut().unwrap() {
            *x = if k.ends_with("ns") && k.starts_with('m') && k != "max_ns" {
                0.0.into()
            } else {
                0.into()
            };
        }
        v["series"]
            .as_array_mut()
            .unwrap()
            .extend([imported, empty]);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v2.json");
        std::fs::write(&p, v.to_string()).unwrap();
        let back = ResultDocument::read(&p).unwrap();
        // Read typed (no tree of values), it is what the JSON upgrade gives,
        // repetitions included.
        let mut up = v.clone();
        upgrade_v2(&mut up);
        assert_eq!(back, serde_json::from_value::<ResultDocument>(up).unwrap());
        // As a version 2 writer wrote an empty series (integers; the float
        // zeros above take the JSON path).
        for k in ["min_ns", "max_ns"] {
            v["series"][2]["stats"][k] = 0.into();
        }
        std::fs::write(&p, v.to_string()).unwrap();
        let typed = ResultDocument::read(&p).unwrap();
        let mut up = v.clone();
        upgrade_v2(&mut up);
        assert_eq!(typed, serde_json::from_value::<ResultDocument>(up).unwrap());
        let mut pooled = v.clone();
        let reps = v["series"].clone();
        pooled["series"][0]["repetitions"] = reps;
        std::fs::write(&p, pooled.to_string()).unwrap();
        let mut up = pooled.clone();
        upgrade_v2(&mut up);
        assert_eq!(
            ResultDocument::read(&p).unwrap(),
            serde_json::from_value::<ResultDocument>(up).unwrap()
        );
        std::fs::write(&p, v.to_string()).unwrap();
        assert_eq!(back.schema_version, SCHEMA_VERSION);
        assert!(
            back.series[0].stats.has_percentiles(),
            "measured series untouched"
        );
        assert_eq!(back.series[0].stats, d.series[0].stats);
        assert!(!back.series[1].stats.has_percentiles());
        assert!(!back.series[1].stats.has_stddev());
        assert!(back.series[1].stats.has_mean());
        assert!(!back.series[2].stats.has_samples());
        // Written again, the unknowns are null.
        let again = serde_json::to_value(&back).unwrap();
        assert!(again["series"][1]["stats"]["p50_ns"].is_null());
        assert!(again["series"][2]["stats"]["max_ns"].is_null());
    }

    #[test]
    fn reads_version_1_documents() {
        let d = doc();
        let mut v = serde_json::to_value(&d).unwrap();
        let o = v.as_object_mut().unwrap();
        o.insert("schema_version".into(), 1.into());
        let env = o.remove("environment").unwrap();
        o.insert(
            "plan".into(),
            serde_json::json!({
                "period_ns": 1_000_000,
                "rt": {"policy": "fifo", "priority": 80, "no_rt": false, "default_system": false},
                "mlocked": env["mlocked"],
                "cpu_dma_latency_held": env["cpu_dma_latency_held"],
            }),
        );
        o.insert(
            "loads".into(),
            serde_json::json!([{"name": "cpu", "extra": 1}]),
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v1.json");
        std::fs::write(&p, v.to_string()).unwrap();
        let back = ResultDocument::read(&p).unwrap();
        assert_eq!(back.schema_version, SCHEMA_VERSION);
        assert_eq!(back.environment, d.environment);
        assert_eq!(back.loads, d.loads);
        assert_eq!(back.plan["rt"]["priority"], 80);
        assert!(back.plan.get("mlocked").is_none());
    }

    #[test]
    fn round_trip_through_a_file() {
        let d = doc();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        d.write(&p).unwrap();
        assert_eq!(ResultDocument::read(&p).unwrap(), d);
        // No temporary file is left beside it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn read_refuses_other_versions_and_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v99.json");
        let mut v = serde_json::to_value(doc()).unwrap();
        v["schema_version"] = serde_json::json!(99);
        std::fs::write(&p, v.to_string()).unwrap();
        assert!(matches!(
            ResultDocument::read(&p),
            Err(DocError::Version { found: 99, .. })
        ));
        std::fs::write(&p, b"{not json").unwrap();
        assert!(matches!(
            ResultDocument::read(&p),
            Err(DocError::Parse { .. })
        ));
        assert!(matches!(
            ResultDocument::read(&dir.path().join("missing.json")),
            Err(DocError::Io { .. })
        ));
    }

    /// The view over the intended periods takes the corrected figures
    /// (repetitions too) and keeps the rest; a series, or a repetition,
    /// without them has none; a document without them reads back as such
    /// and writes no field.
    #[test]
    fn the_series_over_its_intended_periods() {
        let mut rec = SeriesRecorder::new(0, 4, Some(1_000)).over_intended_periods(1_000);
        for (i, (lat, missed)) in [(100, 0), (4_500, 4), (300, 0)].into_iter().enumerate() {
            rec.record(&Sample {
                seq: i as u64,
                t_ns: 10_000 * (i as u64 + 1),
                latency_ns: lat,
                overruns: missed,
                cpu: 0,
            });
        }
        let mut s = rec.to_series("thread 0", 2);
        let c = s.corrected.clone().unwrap();
        let v = s.over_intended_periods().unwrap();
        assert_eq!(v.stats, c.stats);
        assert_eq!(v.stats.count, 7);
        assert_eq!(v.histogram, c.histogram);
        assert_eq!(v.blocks, c.blocks);
        assert_eq!(v.counters.above_threshold, Some(4));
        assert_eq!(v.counters.overruns, 4);
        assert_eq!(v.counters.dropped, 2);
        assert_eq!(
            (v.timeline.clone(), v.spikes.clone()),
            (s.timeline.clone(), s.spikes.clone())
        );
        assert!(v.corrected.is_none());
        // Repetitions: each seen over its periods; one without: none at all.
        s.repetitions = vec![s.clone(), s.clone()];
        let v = s.over_intended_periods().unwrap();
        assert_eq!(v.repetitions.len(), 2);
        assert_eq!(v.repetitions[1].stats.count, 7);
        s.repetitions[1].corrected = None;
        assert!(s.over_intended_periods().is_none());
        s.repetitions.clear();
        // Through JSON, and from a document that has no such field.
        let mut d = doc();
        d.series = vec![s.clone()];
        let j = serde_json::to_value(&d).unwrap();
        assert_eq!(j["series"][0]["corrected"]["stats"]["count"], 7);
        let back: ResultDocument = serde_json::from_value(j.clone()).unwrap();
        assert_eq!(back, d);
        let mut old = j;
        old["series"][0]
            .as_object_mut()
            .unwrap()
            .remove("corrected");
        let back: ResultDocument = serde_json::from_value(old).unwrap();
        assert!(back.series[0].corrected.is_none());
        let again = serde_json::to_value(&back).unwrap();
        assert!(again["series"][0].get("corrected").is_none());
        assert!(back.series[0].over_intended_periods().is_none());
    }

    #[test]
    fn which_statistics_a_series_has() {
        let mut s = Stats {
            count: 3,
            ..Default::default()
        };
        assert!(s.has_samples() && s.has_percentiles() && s.has_mean() && s.has_stddev());
        s.unknown.percentiles = true;
        assert!(s.has_samples() && !s.has_percentiles() && s.has_mean());
        assert!(!Stats::default().has_samples());
    }

    /// Version 2 zeros stay numbers where they may be measured: an imported
    /// series with real percentiles, or whose maximum is 0 too; a measured
    /// series whose percentiles are all 0.
    #[test]
    fn version_2_zeros_that_may_be_measured_are_kept() {
        let series = |source: Option<&str>, max: i64, p50: u64| {
            let mut attributes = serde_json::json!({});
            if let Some(s) = source {
                attributes["source"] = s.into();
            }
            serde_json::json!({
                "attributes": attributes,
                "stats": {"count": 5, "max_ns": max, "stddev_ns": 0.0, "p50_ns": p50,
                          "p90_ns": 0, "p99_ns": 0, "p99_9_ns": 0, "p99_99_ns": 0, "p99_999_ns": 0},
            })
        };
        for (s, kept) in [
            (series(Some("cyclictest"), 900, 7), true),
            (series(Some("cyclictest"), 0, 0), true),
            (series(None, 900, 0), true),
            (series(Some("cyclictest"), 900, 0), false),
        ] {
            let mut v = serde_json::json!({"schema_version": 2, "series": [s]});
            upgrade_v2(&mut v);
            let st = &v["series"][0]["stats"];
            assert_eq!(st["p90_ns"].is_null(), !kept, "{st}");
            assert_eq!(st["stddev_ns"].is_null(), !kept, "{st}");
            assert_eq!(v["schema_version"], SCHEMA_VERSION);
        }
    }

    /// The size limit: a file above it is refused unread, one at it is read;
    /// a stream (a FIFO) is cut off one byte past it.
    #[test]
    fn documents_larger_than_the_limit_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.json");
        let f = std::fs::File::create(&p).unwrap();
        // Sparse: nothing is written. A zero byte is no document's start.
        f.set_len((256 << 20) + 1).unwrap();
        match ResultDocument::read(&p) {
            Err(DocError::TooLarge { limit_mib, .. }) => assert_eq!(limit_mib, 256),
            other => panic!("{other:?}"),
        }
        f.set_len(256 << 20).unwrap();
        assert!(matches!(
            ResultDocument::read(&p),
            Err(DocError::NotADocument { .. })
        ));
        let d = doc();
        let text = String::from_utf8(d.to_json()).unwrap();
        let n = text.len() as u64;
        std::fs::write(&p, &text).unwrap();
        assert_eq!(ResultDocument::read_at_most(&p, n).unwrap(), d);
        assert!(matches!(
            ResultDocument::read_at_most(&p, n - 1),
            Err(DocError::TooLarge { .. })
        ));
        let fifo = dir.path().join("doc.fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        for (limit, whole) in [(n, true), (n - 1, false)] {
            // SAFETY: a valid C string; mkfifo only creates the node.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            let (f2, t2) = (fifo.clone(), text.clone());
            let w = std::thread::spawn(move || {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new().write(true).open(f2).unwrap();
                let _ = f.write_all(t2.as_bytes());
            });
            let r = ResultDocument::read_at_most(&fifo, limit);
            w.join().unwrap();
            std::fs::remove_file(&fifo).unwrap();
            match r {
                Ok(back) => assert!(whole && back == d),
                Err(DocError::TooLarge { .. }) => assert!(!whole),
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// An object that is JSON but cannot be a document's head (its version
    /// given twice) is no document, rather than a syntax error.
    #[test]
    fn a_version_given_twice_is_no_document() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("twice.json");
        std::fs::write(&p, br#"{"schema_version": 3, "schema_version": 3}"#).unwrap();
        assert!(matches!(
            ResultDocument::read(&p),
            Err(DocError::NotADocument { .. })
        ));
    }

    #[test]
    fn the_stamp_is_rfc_3339_utc_now() {
        let t = now_rfc3339();
        let at = humantime::parse_rfc3339(&t).unwrap();
        let off = std::time::SystemTime::now().duration_since(at).unwrap();
        assert!(off.as_secs() < 3600, "{t}");
        assert!(
            t.ends_with('Z') && t.len() == "2026-11-24T16:55:19.123456Z".len(),
            "{t}"
        );
    }
}
