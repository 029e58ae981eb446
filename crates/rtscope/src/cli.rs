//! Command-line definitions (clap derive) only: no logic beyond value parsing.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use rtscope_core::units::{parse_cpu_list, parse_duration_ns, Unit};

/// rtscope: a real-time latency lab for Linux.
#[derive(Debug, Parser)]
#[command(name = "rtscope", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Periodic wake-up latency (what cyclictest measures), with missed periods counted.
    Cyclic(CyclicArgs),
    /// Time sources: what reading each clock costs, counter calibration, cross-CPU check.
    Clock(ClockArgs),
    /// A periodic loop's period as each time source observes it: mean, error, jitter.
    Period(PeriodArgs),
}

/// A duration in ns; a bare number is microseconds.
pub fn duration_us(s: &str) -> Result<u64, String> {
    parse_duration_ns(s, Unit::Us).map_err(|e| e.to_string())
}

/// A duration in ns; a bare number is seconds.
pub fn duration_s(s: &str) -> Result<u64, String> {
    parse_duration_ns(s, Unit::S).map_err(|e| e.to_string())
}

/// A non-zero duration in ns; a bare number is microseconds.
pub fn positive_duration_us(s: &str) -> Result<u64, String> {
    match duration_us(s)? {
        0 => Err("must be greater than 0".into()),
        v => Ok(v),
    }
}

/// A non-zero duration in ns; a bare number is seconds.
pub fn positive_duration_s(s: &str) -> Result<u64, String> {
    match duration_s(s)? {
        0 => Err("must be greater than 0".into()),
        v => Ok(v),
    }
}

/// A CPU list such as `0-3,6`.
pub fn cpu_list(s: &str) -> Result<Vec<usize>, String> {
    parse_cpu_list(s).map_err(|e| e.to_string())
}

fn positive_usize(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(v) => Ok(v),
        Err(_) => Err(format!("'{s}' is not a positive whole number")),
    }
}

fn positive_u64(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(v) => Ok(v),
        Err(_) => Err(format!("'{s}' is not a positive whole number")),
    }
}

/// Scheduling policy of measurement threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PolicyArg {
    Fifo,
    Rr,
    Other,
    Batch,
    Idle,
}

/// Clock the schedule and the latency are measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClockArg {
    Monotonic,
    Realtime,
}

/// How a measurement thread waits for its next period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WakeArg {
    /// clock_nanosleep(TIMER_ABSTIME) to the next deadline
    Absolute,
    /// clock_nanosleep of one period, relative
    Relative,
    /// nanosleep of one period
    Nanosleep,
    /// a periodic timerfd, blocking read
    Timerfd,
    /// a periodic POSIX timer signalling the thread, sigwaitinfo
    PosixTimer,
}

/// Options shared by every experiment that runs real-time threads.
#[derive(Debug, Clone, Args)]
pub struct RtArgs {
    /// Real-time priority of measurement threads (1-99 for fifo/rr).
    #[arg(short = 'p', long, default_value_t = 95, value_parser = clap::value_parser!(u8).range(0..=99))]
    pub priority: u8,

    /// Scheduling policy of measurement threads.
    #[arg(long, value_enum, default_value_t = PolicyArg::Fifo)]
    pub policy: PolicyArg,

    /// Run as SCHED_OTHER without real-time privileges (the result is marked as such).
    #[arg(long)]
    pub no_rt: bool,

    /// Leave the system alone: no mlockall, no /dev/cpu_dma_latency, no timer-slack change.
    #[arg(long)]
    pub default_system: bool,
}

/// Where results go.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Write the result document (JSON) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Rewrite the JSON result every DURATION during long runs (needs --json).
    #[arg(long, value_name = "DURATION", value_parser = positive_duration_s)]
    pub checkpoint: Option<u64>,

    /// Print only the final summary.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
pub struct CyclicArgs {
    /// Number of measurement threads (default: one per CPU of --cpus, or per online CPU).
    #[arg(short = 't', long, value_parser = positive_usize)]
    pub threads: Option<usize>,

    /// CPUs to run measurement threads on, e.g. 0-3,6 (default: every online CPU).
    #[arg(short = 'a', long = "cpus", value_name = "LIST", value_parser = cpu_list)]
    pub cpus: Option<Vec<usize>>,

    /// Period (ns, us, ms, s; a bare number is microseconds).
    #[arg(short = 'i', long, value_name = "DURATION", default_value = "1ms",
          value_parser = positive_duration_us, allow_hyphen_values = true)]
    pub period: u64,

    /// Added to the period of each further thread (thread n: period + n * distance).
    #[arg(long, value_name = "DURATION", default_value = "0", value_parser = duration_us,
          allow_hyphen_values = true)]
    pub distance: u64,

    /// Stop after this many wake-ups per thread.
    #[arg(short = 'l', long, value_parser = positive_u64)]
    pub loops: Option<u64>,

    /// Stop after this long (s, m, h, d; a bare number is seconds).
    #[arg(short = 'D', long, value_name = "DURATION", value_parser = positive_duration_s,
          allow_hyphen_values = true)]
    pub duration: Option<u64>,

    /// First wake-up at now + this delay.
    #[arg(long, value_name = "DURATION", default_value = "1ms", value_parser = duration_us)]
    pub start_delay: u64,

    /// Clock for the schedule and the latency.
    #[arg(long, value_enum, default_value_t = ClockArg::Monotonic)]
    pub clock: ClockArg,

    /// How threads wait for their next period.
    #[arg(long, value_enum, default_value_t = WakeArg::Absolute)]
    pub wake: WakeArg,

    #[command(flatten)]
    pub rt: RtArgs,

    /// Keep the N worst samples with their timestamps.
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub spikes: usize,

    /// Write every sample as CSV (thread,cpu,seq,t_ns,latency_ns) to FILE.
    #[arg(long, value_name = "FILE")]
    pub raw: Option<PathBuf>,

    /// Write a cyclictest-format histogram (1 us bins, one column per thread) to FILE.
    #[arg(long, value_name = "FILE")]
    pub histogram: Option<PathBuf>,

    /// Range of the --histogram file (a bare number is microseconds).
    #[arg(long, value_name = "DURATION", default_value = "400us", value_parser = positive_duration_us)]
    pub histogram_max: u64,

    /// Stop at the first sample above DURATION and record where it happened.
    #[arg(long, value_name = "DURATION", value_parser = positive_duration_us)]
    pub break_above: Option<u64>,

    /// Run to the end, then exit with code 3 if any sample was above DURATION.
    #[arg(long, value_name = "DURATION", value_parser = positive_duration_us)]
    pub fail_above: Option<u64>,

    #[command(flatten)]
    pub out: OutputArgs,
}

/// A time-source name (`rtscope clock --list` shows them).
pub fn source_name(s: &str) -> Result<String, String> {
    match rtscope_core::clock::SourceId::from_name(s) {
        Some(_) => Ok(s.to_string()),
        None => Err(format!(
            "unknown source '{s}' (known: {})",
            rtscope_core::clock::SourceId::ALL
                .iter()
                .map(|x| x.name())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

fn at_least_two(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(v) if v >= 2 => Ok(v),
        Ok(_) => Err("must be at least 2 (a delta needs two readings)".into()),
        Err(_) => Err(format!("'{s}' is not a whole number")),
    }
}

/// How `rtscope clock` reads each source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClockModeArg {
    /// N back-to-back reads: the read cost, warm
    Consecutive,
    /// two back-to-back reads every interval (--every): the cold path
    Sparse,
    /// like sparse, the gaps alternating between the --every values: colder still
    Alternating,
}

#[derive(Debug, Clone, Args)]
pub struct ClockArgs {
    /// How to read each source.
    #[arg(long, value_enum, default_value_t = ClockModeArg::Consecutive)]
    pub mode: ClockModeArg,

    /// Consecutive mode: reads per source (N reads give N-1 deltas).
    #[arg(short = 'n', long = "reads", value_name = "N", default_value_t = 1_000_000,
          value_parser = at_least_two)]
    pub reads: u64,

    /// Sparse modes: the gap before each pair of reads (a bare number is seconds);
    /// alternating takes a list [default: sparse 1s, alternating 1s,5s].
    #[arg(long, value_name = "DURATION[,DURATION...]", value_delimiter = ',',
          value_parser = positive_duration_s)]
    pub every: Vec<u64>,

    /// Sparse modes: number of wake-ups (pairs of reads per source).
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = positive_usize)]
    pub pairs: usize,

    /// Sources to measure, comma-separated (default: every source available here).
    #[arg(short = 's', long = "source", value_name = "NAME[,NAME...]", value_delimiter = ',',
          value_parser = source_name)]
    pub sources: Vec<String>,

    /// Calibrate counters against CLOCK_MONOTONIC_RAW over this window (a bare number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = positive_duration_s)]
    pub calibrate: u64,

    /// Cross-CPU warp test per CPU pair for this long; 0 skips it (a bare number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = duration_s)]
    pub warp: u64,

    /// CPU to measure on (default: the last online CPU).
    #[arg(short = 'a', long, value_name = "CPU")]
    pub cpu: Option<usize>,

    /// List the sources with their availability and exit.
    #[arg(long)]
    pub list: bool,

    #[command(flatten)]
    pub rt: RtArgs,

    /// Write the result document (JSON) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// No progress, no header: only the final tables.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
pub struct PeriodArgs {
    /// Loop periods, each run in turn (a bare number is microseconds).
    #[arg(short = 'i', long, value_name = "DURATION[,DURATION...]", value_delimiter = ',',
          default_value = "100us,1ms", value_parser = positive_duration_us)]
    pub period: Vec<u64>,

    /// Cycles per period (N cycles give N-1 observed periods).
    #[arg(short = 'l', long, value_name = "N", default_value_t = 1000, value_parser = at_least_two)]
    pub cycles: u64,

    /// Sources that timestamp every cycle, comma-separated (default: every source available here).
    #[arg(short = 's', long = "source", value_name = "NAME[,NAME...]", value_delimiter = ',',
          value_parser = source_name)]
    pub sources: Vec<String>,

    /// Calibrate counters against CLOCK_MONOTONIC_RAW over this window (a bare number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = positive_duration_s)]
    pub calibrate: u64,

    /// CPU to run the loop on (default: the last online CPU).
    #[arg(short = 'a', long, value_name = "CPU")]
    pub cpu: Option<usize>,

    #[command(flatten)]
    pub rt: RtArgs,

    /// Write the result document (JSON) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// No header: only the final table.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}
