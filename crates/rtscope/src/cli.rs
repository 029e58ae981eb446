//! Command-line definitions (clap derive) only: no logic beyond value parsing.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use rtscope_core::cyclic::WakeMethod;
use rtscope_core::named::MeasureClock;
use rtscope_core::rt::Policy;
use rtscope_core::units::{parse_cpu_list, parse_duration_ns, Unit};

use crate::experiment::clock::{ClockOptions, Mode as ClockMode};
use crate::experiment::cyclic::CyclicOptions;
use crate::experiment::ipc::{Between, IpcOptions, Pattern};
use crate::experiment::period::PeriodOptions;
use crate::experiment::run::{Outputs, RtChoice};

/// `rtscope --version`: the semantic version, the git commit and the target
/// (see `build.rs`).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("RTSCOPE_GIT_COMMIT"),
    " ",
    env!("RTSCOPE_TARGET"),
    ")"
);

/// rtscope: a real-time latency lab for Linux.
#[derive(Debug, Parser)]
#[command(name = "rtscope", version = VERSION, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Periodic wake-up latency (what cyclictest measures), with missed periods counted.
    Cyclic(CyclicArgs),
    /// A cyclictest command line run unchanged (its options, its output), with rtscope's
    /// result document too; `rtscope cyclictest --help` lists what each option does.
    #[command(disable_help_flag = true)]
    Cyclictest(CyclictestArgs),
    /// Time sources: what reading each clock costs, counter calibration, cross-CPU check.
    Clock(ClockArgs),
    /// A periodic loop's period as each time source observes it: mean, error, jitter.
    Period(PeriodArgs),
    /// Run background loads alone and report what they achieved (stress-ng style).
    Load(LoadCmdArgs),
    /// Run the cyclic experiment over periods x loads x levels, one result per cell.
    Matrix(MatrixArgs),
    /// IPC and synchronisation latency between two real-time tasks (handoff or round trip).
    Ipc(IpcArgs),
    /// Timer accuracy: sleep error per wait API and delay, compensation, beacon chains, timer service.
    Timer(TimerArgs),
    /// Is this machine ready for real-time work? A readiness audit (changes nothing).
    Check(CheckArgs),
    /// OS noise: time stolen from a busy thread per CPU (oslat's method), attributed with --trace.
    Noise(NoiseArgs),
    /// Hardware latency (hwlatdetect's method): the kernel's hwlat tracer, SMIs counted;
    /// from user space, as an upper bound, where the kernel has no such tracer.
    Hwlat(HwlatArgs),
    /// Interrupt-to-task latency from a chosen source: timer (split into stages with
    /// kernel trace events) or net (kernel receive stamps on UDP packets).
    Irq(IrqArgs),
    /// Turn result documents into one self-contained HTML report.
    Report(ReportArgs),
    /// Compare runs side by side (series matched by label), with confidence intervals.
    Compare(CompareArgs),
    /// Serve the result documents of a directory over HTTP: a list, and each one's HTML report.
    Serve(ServeArgs),
    /// Pool single runs of one experiment into one document, each kept as a repetition
    /// (what --repeat makes in one go), e.g. runs of two settings made alternately.
    Pool(PoolArgs),
    /// Turn another tool's output into an rtscope result document.
    #[command(subcommand)]
    Import(ImportSource),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on stdout.
    Completions(CompletionsArgs),
    /// Print the rtscope(1) man page, or write one page per subcommand to DIR.
    Man(ManArgs),
    /// Internal: one instance of a background load (started by rtscope itself).
    #[command(name = "__load-worker", hide = true)]
    LoadWorker(LoadWorkerArgs),
}

#[derive(Debug, Clone, Args)]
pub struct CyclictestArgs {
    /// cyclictest's options as cyclictest takes them (-h is its histogram; --help lists them).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        num_args = 0..,
        value_name = "CYCLICTEST OPTIONS"
    )]
    pub args: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for, e.g. `rtscope completions bash > /etc/bash_completion.d/rtscope`.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// Write rtscope.1 and one page per subcommand (rtscope-cyclic.1, ...) to DIR
    /// (created if missing) instead of printing rtscope(1).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Result documents (JSON) to report on, one section each.
    #[arg(required = true, value_name = "RESULT.json")]
    pub files: Vec<PathBuf>,

    /// Write the HTML report to FILE (required unless --fail-if is given).
    #[arg(
        short = 'o',
        long,
        value_name = "FILE",
        required_unless_present = "fail_if"
    )]
    pub output: Option<PathBuf>,

    /// Check gates on the stored results (see `rtscope cyclic --help`); exit 3 when one fails.
    #[command(flatten)]
    pub gate: GateArgs,

    /// Leave out what identifies the machine before sharing: host name, kernel command line, user names in paths, IP addresses.
    #[arg(long)]
    pub redact: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Directory of result documents (*.json; not searched recursively).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,

    /// Address to serve on (HOST:PORT; loopback only unless --listen-any).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,

    /// Allow a non-loopback address (anyone who can reach it can read every result in DIR).
    #[arg(long)]
    pub listen_any: bool,

    /// Leave out what identifies the machine from the pages and JSON served: host name, kernel command line, user names in paths, IP addresses.
    #[arg(long)]
    pub redact: bool,
}

#[derive(Debug, Clone, Args)]
pub struct PoolArgs {
    /// Result documents of single runs of the same experiment with the same settings.
    #[arg(required = true, num_args = 2.., value_name = "RESULT.json")]
    pub files: Vec<PathBuf>,

    /// Where to write the pooled document.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub out: PathBuf,

    /// Print nothing but errors.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Result documents, or matrix output directories (compared cell by cell);
    /// the first is the baseline.
    #[arg(required = true, num_args = 2.., value_name = "RESULT")]
    pub files: Vec<PathBuf>,

    /// Pair series explicitly: one label per run, e.g. --match 'thread 0=thread 1' (repeatable).
    #[arg(long = "match", value_name = "LABEL=LABEL")]
    pub matches: Vec<String>,

    /// Also write the comparison as a self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Exit with code 3 when a run is clearly worse than the baseline at some percentile.
    #[arg(long)]
    pub fail_if_worse: bool,

    /// Smallest change that counts (percent, e.g. 5 or 5%): no verdict unless the
    /// whole 95% interval lies beyond it.
    #[arg(long, value_name = "PERCENT", default_value = "5%", value_parser = min_effect)]
    pub min_effect: f64,

    /// Tail verdicts: compare how often each run went above DURATION, per hour of
    /// measuring (a bare number is microseconds) [default: the baseline's p99.9].
    #[arg(long, value_name = "DURATION", value_parser = positive_duration_us)]
    pub tail_threshold: Option<u64>,

    /// Leave out what identifies the machine before sharing: host name, kernel command line, user names in paths, IP addresses.
    #[arg(long)]
    pub redact: bool,
}

/// `--min-effect`: a percentage in [0, 100), `5` or `5%`, as a fraction.
fn min_effect(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%');
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..100.0).contains(&v) => Ok(v / 100.0),
        Ok(_) => Err(format!("'{s}' is out of range (0 to 99.9 percent)")),
        Err(_) => Err(format!("'{s}' is not a percentage (e.g. 5 or 5%)")),
    }
}

/// Where imported data comes from.
#[derive(Debug, Clone, Subcommand)]
pub enum ImportSource {
    /// cyclictest's --json file or its -h histogram text.
    Cyclictest(ImportCyclictestArgs),
}

#[derive(Debug, Clone, Args)]
pub struct ImportCyclictestArgs {
    /// A file written by `cyclictest --json=FILE`.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "histogram",
        required_unless_present = "histogram"
    )]
    pub json: Option<PathBuf>,

    /// cyclictest's `-h`/`-H` histogram output (stdout or --histfile).
    #[arg(long, value_name = "FILE")]
    pub histogram: Option<PathBuf>,

    /// The histogram was written by `cyclictest -N`: bins and values are ns, not µs.
    #[arg(long, requires = "histogram")]
    pub nsecs: bool,

    /// The cyclictest command line the histogram came from (`--cmdline "cyclictest -m -p 90
    /// -h 150 -q"`): its settings go into the plan as `rtscope cyclictest` records them, so
    /// that `compare` sees equal settings as equal (a --json file carries its own).
    #[arg(long, value_name = "LINE", requires = "histogram")]
    pub cmdline: Option<String>,

    /// Write the result document to FILE.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: PathBuf,
}

impl ImportSource {
    /// The command's plain options.
    pub fn options(self) -> crate::import::Import {
        match self {
            ImportSource::Cyclictest(a) => {
                crate::import::Import::Cyclictest(crate::import::CyclictestImport {
                    json: a.json,
                    histogram: a.histogram,
                    nsecs: a.nsecs,
                    cmdline: a.cmdline,
                    output: a.output,
                })
            }
        }
    }
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

/// A parsed CPU list. An alias, so that clap takes `Option<CpuList>` as one
/// value (`-a 0-3`), not as a repeatable option of single CPUs.
pub type CpuList = Vec<usize>;

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

/// A count from 1 to `max` (`what`: why there is a bound).
fn count_at_most(s: &str, max: u64, what: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(v) if v > max => Err(format!("at most {max} ({what})")),
        Ok(v) => Ok(v),
        Err(_) => Err(format!("'{s}' is not a positive whole number")),
    }
}

/// `--repeat N`: 1 to [`crate::limits::MAX_REPEAT`].
fn repeat_count(s: &str) -> Result<usize, String> {
    count_at_most(
        s,
        crate::limits::MAX_REPEAT as u64,
        "each repetition is a whole run",
    )
    .map(|v| v as usize)
}

/// The beacon's `--cycles N`: 1 to [`crate::limits::MAX_BEACON_CYCLES`].
fn beacon_cycles(s: &str) -> Result<u64, String> {
    count_at_most(
        s,
        crate::limits::MAX_BEACON_CYCLES,
        "intervals per order, each kept in memory",
    )
}

/// A load SPEC: `name[:level][,key=value...]`.
pub fn load_spec(s: &str) -> Result<crate::load::LoadSpec, String> {
    crate::load::parse_spec(s)
}

/// Background loads beside an experiment.
#[derive(Debug, Clone, Default, Args)]
pub struct LoadArgs {
    /// Background load NAME[:LEVEL][,KEY=VALUE...], e.g. cpu:50, mem-fault:100,size=64M,
    /// cmd:'stress-ng --vm 1' (repeatable; `rtscope load --list` lists them).
    #[arg(long = "load", value_name = "SPEC", value_parser = load_spec)]
    pub load: Vec<crate::load::LoadSpec>,

    /// CPUs that loads run on, one instance per CPU (default: every online CPU).
    #[arg(long, value_name = "LIST", value_parser = cpu_list)]
    pub load_cpus: Option<CpuList>,
}

#[derive(Debug, Clone, Args)]
pub struct LoadCmdArgs {
    /// Loads to run: NAME[:LEVEL][,KEY=VALUE...].
    #[arg(value_name = "SPEC", value_parser = load_spec)]
    pub specs: Vec<crate::load::LoadSpec>,

    /// List the loads, their parameters and counters.
    #[arg(long, exclusive = true)]
    pub list: bool,

    /// CPUs that loads run on, one instance per CPU (default: every online CPU).
    #[arg(long, value_name = "LIST", value_parser = cpu_list)]
    pub load_cpus: Option<CpuList>,

    /// How long to run (s, m, h, d; a bare number is seconds).
    #[arg(short = 'D', long, value_name = "DURATION", default_value = "10s",
          value_parser = positive_duration_s)]
    pub duration: u64,

    /// Write a result document (JSON, with the `loads` section) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Print only the final table.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

impl LoadCmdArgs {
    /// The command's plain options.
    pub fn options(self) -> crate::load::command::LoadCommand {
        crate::load::command::LoadCommand {
            specs: self.specs,
            list: self.list,
            load_cpus: self.load_cpus,
            duration: self.duration,
            json: self.json,
            quiet: self.quiet,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct LoadWorkerArgs {
    #[arg(long)]
    pub instance: usize,
    #[arg(long)]
    pub parent: i32,
    #[arg(long, value_parser = cpu_list)]
    pub cpus: Option<CpuList>,
    pub spec: String,
}

/// A load level in percent, 1-100.
fn level(s: &str) -> Result<u8, String> {
    match s.trim_end_matches('%').parse::<i64>() {
        Ok(v) if (1..=100).contains(&v) => Ok(v as u8),
        Ok(v) => Err(format!("level {v} is out of range (1-100)")),
        Err(_) => Err(format!("'{s}' is not a level (1-100)")),
    }
}

#[derive(Debug, Clone, Args)]
pub struct MatrixArgs {
    /// Periods, comma-separated (a bare number is microseconds).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "1ms",
          value_parser = positive_duration_us)]
    pub periods: Vec<u64>,

    /// Loads, comma-separated: none, cpu, mem-churn, ...; a KEY=VALUE item belongs to
    /// the load before it (mem-churn,size=64M); cmd:'...' takes the rest of its value.
    /// Repeatable.
    #[arg(long, value_name = "LIST", default_value = "none")]
    pub loads: Vec<String>,

    /// Levels (CPU share per instance, %) for loads that take one, comma-separated.
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "50,100",
          value_parser = level)]
    pub levels: Vec<u8>,

    /// Wake-ups per measurement thread in each cell.
    #[arg(short = 'l', long, default_value_t = 10_000, value_parser = positive_u64)]
    pub samples: u64,

    /// Output directory: one result per cell, matrix.json, summary.md, summary.csv.
    #[arg(short = 'o', long, value_name = "DIR")]
    pub out: PathBuf,

    /// Skip cells whose result is already complete in --out.
    #[arg(long)]
    pub resume: bool,

    /// Run every cell N times, in N rounds over all cells (A/B/A/B: slow drifts of
    /// the machine hit every cell alike); each cell's runs are pooled, kept as
    /// repetitions for `compare`. At most 1000.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = repeat_count)]
    pub repeat: usize,

    /// Number of measurement threads (default: one per CPU of --cpus, or per online CPU).
    #[arg(short = 't', long, value_parser = positive_usize)]
    pub threads: Option<usize>,

    /// CPUs to run measurement threads on (default: every online CPU).
    #[arg(short = 'a', long = "cpus", value_name = "LIST", value_parser = cpu_list)]
    pub cpus: Option<CpuList>,

    /// CPUs that loads run on, one instance per CPU (default: every online CPU).
    #[arg(long, value_name = "LIST", value_parser = cpu_list)]
    pub load_cpus: Option<CpuList>,

    /// Clock for the schedule and the latency.
    #[arg(long, default_value = "monotonic", value_parser = named::<MeasureClock>(MeasureClock::NAMES))]
    pub clock: MeasureClock,

    /// How threads wait for their next period: absolute (clock_nanosleep to the
    /// deadline), relative (clock_nanosleep of one period), nanosleep, timerfd
    /// (periodic timerfd, blocking read), posix-timer (periodic POSIX timer, sigwaitinfo).
    #[arg(long, default_value = "absolute", value_parser = named::<WakeMethod>(WakeMethod::NAMES))]
    pub wake: WakeMethod,

    #[command(flatten)]
    pub rt: RtArgs,

    /// Print only the final summary.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// A value from a core enum's table of names ([`rtscope_core::named`]); help
/// lists the names.
fn named<T>(names: &'static [&'static str]) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: std::str::FromStr + Clone + Send + Sync + 'static,
    T::Err: std::fmt::Debug,
{
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(names)
        .map(|s| s.parse::<T>().expect("every listed name parses"))
}

/// A real-time priority, 0-99 (with the valid range in the message).
fn priority(s: &str) -> Result<u8, String> {
    match s.parse::<i64>() {
        Ok(v) if (0..=99).contains(&v) => Ok(v as u8),
        Ok(v) => Err(format!(
            "priority {v} is out of range (1-99 for fifo/rr; 0 for other, batch, idle)"
        )),
        Err(_) => Err(format!("'{s}' is not a priority (1-99)")),
    }
}

/// Options shared by every experiment that runs real-time threads.
#[derive(Debug, Clone, Args)]
pub struct RtArgs {
    /// Real-time priority of measurement threads (1-99 for fifo/rr).
    #[arg(short = 'p', long, default_value_t = 95, value_parser = priority,
          allow_hyphen_values = true)]
    pub priority: u8,

    /// Scheduling policy of measurement threads.
    #[arg(long, default_value = "fifo", value_parser = named::<Policy>(Policy::NAMES))]
    pub policy: Policy,

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

    /// Also write a self-contained HTML report to FILE.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    /// Print only the final summary.
    #[arg(short = 'q', long)]
    pub quiet: bool,

    #[command(flatten)]
    pub gate: GateArgs,
}

/// CI gates (every experiment's outputs).
#[derive(Debug, Clone, Args)]
pub struct GateArgs {
    /// Exit with code 3 when a gate holds: [SERIES:]STAT OP LIMIT, comma-separated
    /// (e.g. 'p99>50us,max>200us,overruns>0', 'thread 0:p99.9>=100us', 'count<1000').
    /// STAT: min, max, avg (mean), stddev, p50, p90, p99, p99.9, p99.99, p99.999
    /// (durations; a bare number is microseconds), count, overruns (missed),
    /// overrun_samples, dropped, negative, samples_above (counts). OP: >, >=, <, <=.
    /// Without SERIES: every series; `all:` the aggregate where there is one.
    /// At most 64 gates (docs/ci-gates.md).
    #[arg(long = "fail-if", value_name = "GATES", value_parser = crate::gate::parse_gates)]
    pub fail_if: Vec<Vec<crate::gate::Gate>>,

    /// Write the gates' outcome as a JUnit XML report to FILE (one test case per
    /// series and gate), for CI systems.
    #[arg(long, value_name = "FILE", requires = "fail_if")]
    pub junit: Option<PathBuf>,
}

impl GateArgs {
    /// The gates and the JUnit path (bounded in `Outputs::check`).
    pub fn options(&self) -> crate::gate::GateOptions {
        crate::gate::GateOptions {
            gates: self.fail_if.iter().flatten().cloned().collect(),
            junit: self.junit.clone(),
        }
    }
}

/// Where a run's results go (experiments without checkpoints).
#[derive(Debug, Clone, Args)]
pub struct ResultArgs {
    /// Write the result document (JSON) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write a self-contained HTML report of the result to FILE.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    /// Print only the final tables (no header, no progress).
    #[arg(short = 'q', long)]
    pub quiet: bool,

    /// Make N independent runs, one after the other, and pool them (each kept as a
    /// repetition, so that `compare` can use the spread between runs). At most 1000.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = repeat_count)]
    pub repeat: usize,

    #[command(flatten)]
    pub gate: GateArgs,
}

#[derive(Debug, Clone, Args)]
pub struct CyclicArgs {
    /// Number of measurement threads (default: one per CPU of --cpus, or per online CPU).
    #[arg(short = 't', long, value_parser = positive_usize)]
    pub threads: Option<usize>,

    /// CPUs to run measurement threads on, e.g. 0-3,6 (default: every online CPU).
    #[arg(short = 'a', long = "cpus", value_name = "LIST", value_parser = cpu_list)]
    pub cpus: Option<CpuList>,

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

    /// Drop the first N wake-ups of each thread (they count towards --loops).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub warmup: u64,

    /// Clock for the schedule and the latency.
    #[arg(long, default_value = "monotonic", value_parser = named::<MeasureClock>(MeasureClock::NAMES))]
    pub clock: MeasureClock,

    /// How threads wait for their next period: absolute (clock_nanosleep to the
    /// deadline), relative (clock_nanosleep of one period), nanosleep, timerfd
    /// (periodic timerfd, blocking read), posix-timer (periodic POSIX timer, sigwaitinfo).
    #[arg(long, default_value = "absolute", value_parser = named::<WakeMethod>(WakeMethod::NAMES))]
    pub wake: WakeMethod,

    #[command(flatten)]
    pub rt: RtArgs,

    /// With --policy deadline: CPU time each thread reserves per period (a bare
    /// number is microseconds) [default: 60% of the deadline, as cyclicdeadline].
    #[arg(long, value_name = "DURATION", value_parser = positive_duration_us)]
    pub dl_runtime: Option<u64>,

    /// With --policy deadline: the relative deadline, at most the period (a bare
    /// number is microseconds) [default: the period].
    #[arg(long, value_name = "DURATION", value_parser = positive_duration_us)]
    pub dl_deadline: Option<u64>,

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

    /// Run to the end, then exit with code 3 if any sample was above DURATION
    /// (the gate --fail-if 'all:max>DURATION', with its own fail line).
    #[arg(long, value_name = "DURATION", value_parser = positive_duration_us)]
    pub fail_above: Option<u64>,

    /// Make N independent runs, one after the other, and pool them (each kept as a
    /// repetition, so that `compare` can use the spread between runs). At most 1000.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = repeat_count)]
    pub repeat: usize,

    /// Split every sample into stages (timer IRQ, wake-up, scheduling, return to
    /// user) with kernel trace events in a private tracefs instance, and check
    /// each sample against the kernel's bound; `--trace=auto` runs untraced
    /// where tracing is not possible.
    #[arg(long, value_name = "on|auto", num_args = 0..=1, require_equals = true,
          default_missing_value = "on", value_enum)]
    pub trace: Option<crate::experiment::cyclic_trace::TraceMode>,

    /// With tracing, keep what ran on the CPUs (IRQs, softirqs, tasks) from the
    /// arming of the timer to the wake-up for the worst samples above DURATION
    /// (up to --spikes); implies --trace.
    #[arg(long, value_name = "DURATION", value_parser = positive_duration_us)]
    pub trace_outliers: Option<u64>,

    /// Per-CPU trace buffer with --trace, KiB.
    #[arg(long = "trace-buffer", value_name = "KIB", default_value_t = 4096,
          value_parser = clap::value_parser!(u32).range(64..=1_048_576))]
    pub trace_buffer_kb: u32,

    #[command(flatten)]
    pub out: OutputArgs,

    #[command(flatten)]
    pub live: LiveArgs,

    #[command(flatten)]
    pub loads: LoadArgs,
}

/// Watching a run while it goes on (`docs/live.md`): the options of every
/// experiment whose aggregator publishes snapshots.
#[derive(Debug, Clone, Args)]
pub struct LiveArgs {
    /// Stream snapshots while the run goes on to DEST: - (stdout), a file, a FIFO or a
    /// terminal device; a slow reader loses lines (counted), never holds the run.
    #[arg(long, value_name = "DEST", help_heading = "Watching live")]
    pub stream: Option<PathBuf>,

    /// Time between streamed snapshots; 0 streams every raw sample (a bare number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = duration_s,
          help_heading = "Watching live")]
    pub stream_every: u64,

    /// Line format of --stream.
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = crate::live::StreamFormat::Jsonl,
          help_heading = "Watching live")]
    pub stream_format: crate::live::StreamFormat,

    /// With --stream to a terminal device: raw mode at N baud.
    #[arg(long, value_name = "N", help_heading = "Watching live")]
    pub baud: Option<u32>,

    /// Serve /metrics (OpenMetrics), /api/snapshot (JSON) and a live page / on ADDR
    /// (HOST:PORT, loopback only unless --listen-any).
    #[arg(long, value_name = "ADDR", help_heading = "Watching live")]
    pub listen: Option<String>,

    /// Allow --listen on a non-loopback address (anyone who can reach it sees the
    /// run's figures, host name and kernel).
    #[arg(long, help_heading = "Watching live")]
    pub listen_any: bool,

    /// Full-screen terminal view (q or Ctrl-C stops the run, p pauses the display, tab
    /// cycles series, +/- change the time window); without a terminal, the status lines.
    #[arg(long, help_heading = "Watching live")]
    pub live: bool,
}

impl LiveArgs {
    /// The live options these arguments ask for.
    pub fn options(&self) -> crate::live::LiveOptions {
        crate::live::LiveOptions {
            stream: self.stream.clone(),
            stream_every_ns: self.stream_every,
            stream_format: self.stream_format,
            baud: self.baud,
            listen: self.listen.clone(),
            listen_any: self.listen_any,
            tui: self.live,
        }
    }
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

#[derive(Debug, Clone, Args)]
pub struct ClockArgs {
    /// How to read each source.
    #[arg(long, value_enum, default_value_t = ClockMode::Consecutive)]
    pub mode: ClockMode,

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
    #[arg(long, exclusive = true)]
    pub list: bool,

    #[command(flatten)]
    pub rt: RtArgs,

    #[command(flatten)]
    pub loads: LoadArgs,

    #[command(flatten)]
    pub out: ResultArgs,
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

    #[command(flatten)]
    pub loads: LoadArgs,

    #[command(flatten)]
    pub out: ResultArgs,
}

/// Sender and receiver CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuPair(pub usize, pub usize);

/// Parses `A,B` (two CPU numbers, which may be equal).
pub fn cpu_pair(s: &str) -> Result<CpuPair, String> {
    let bad = || format!("'{s}' is not a CPU pair: give sender and receiver CPU as A,B (e.g. 0,1)");
    let (a, b) = s.split_once(',').ok_or_else(bad)?;
    let a = a.trim().parse::<usize>().map_err(|_| bad())?;
    let b = b.trim().parse::<usize>().map_err(|_| bad())?;
    Ok(CpuPair(a, b))
}

#[derive(Debug, Clone, Args)]
pub struct IpcArgs {
    /// Mechanisms, comma-separated, or `all` (`--list` shows them).
    #[arg(short = 'm', long = "mech", value_name = "LIST", default_value = "all")]
    pub mech: String,

    /// List the mechanisms, what they measure and the patterns they support, then exit.
    #[arg(long, exclusive = true)]
    pub list: bool,

    /// Remove the SysV semaphores and message queues that killed ipc runs left
    /// behind (only those provably theirs), print each, then exit.
    #[arg(long, exclusive = true)]
    pub cleanup: bool,

    /// handoff or roundtrip, or both (comma-separated); default: each mechanism's natural one.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PATTERN")]
    pub pattern: Vec<Pattern>,

    /// threads or processes, or both (comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "threads",
        value_name = "PLACEMENT"
    )]
    pub between: Vec<Between>,

    /// Sender and receiver CPUs as A,B (default: the first two online CPUs, or one if there is one).
    #[arg(short = 'a', long = "cpus", value_name = "A,B", value_parser = cpu_pair)]
    pub cpus: Option<CpuPair>,

    /// Priority of the sender (default: the receiver's --priority minus 1).
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(1..=99))]
    pub sender_priority: Option<u8>,

    /// Periods of the driving task, comma-separated (one exchange per period; a bare number is us).
    #[arg(short = 'i', long, value_name = "DURATION", value_delimiter = ',', default_value = "1ms",
          value_parser = positive_duration_us, allow_hyphen_values = true)]
    pub period: Vec<u64>,

    /// Exchanges per repetition.
    #[arg(short = 'l', long, default_value = "1000", value_parser = positive_u64)]
    pub loops: u64,

    /// Repetitions of each experiment (each gets its own summary).
    #[arg(long, default_value = "1", value_parser = positive_u64)]
    pub repetitions: u64,

    #[command(flatten)]
    pub rt: RtArgs,

    #[command(flatten)]
    pub loads: LoadArgs,

    #[command(flatten)]
    pub out: ResultArgs,
}

/// `A..B` (inclusive), or one number.
fn order_range(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("'{s}' is not an order range: give A..B (e.g. 0..8) or one order");
    let (a, b) = match s.split_once("..") {
        Some((a, b)) => (a, b.trim_start_matches('=')),
        None => (s, s),
    };
    let a = a.trim().parse::<u32>().map_err(|_| bad())?;
    let b = b.trim().parse::<u32>().map_err(|_| bad())?;
    Ok((a, b))
}

fn fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("'{s}' is not a number")),
    }
}

/// The study's requests: 320 us to 5 ms.
const STUDY_DELAYS: &str =
    "320us,340us,360us,380us,400us,500us,600us,700us,800us,900us,1ms,2ms,5ms";

#[derive(Debug, Clone, Args)]
pub struct TimerArgs {
    /// Requested delays, comma-separated (a bare number is microseconds)
    /// [default: 320us,340us,...,900us,1ms,2ms,5ms: the study's 13].
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = positive_duration_us)]
    pub delays: Option<Vec<u64>>,

    /// Wait APIs, comma-separated, or all: clock_nanosleep, nanosleep, timerfd, posix-timer,
    /// epoll, futex, condvar, select [default: all].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub api: Option<Vec<String>>,

    /// Compensations, comma-separated: none, static (calibrated offset), adaptive
    /// (EWMA mean + k·σ, then spin), hybrid (windowed quantile, then spin)
    /// [default: none; with --beacon none,static,adaptive].
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          value_parser = named::<rtscope_core::timer::Compensation>(rtscope_core::timer::Compensation::NAMES))]
    pub compensate: Vec<rtscope_core::timer::Compensation>,

    /// Scheduling policies, comma-separated (each measured in turn).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "fifo",
          value_parser = named::<Policy>(Policy::NAMES))]
    pub policy: Vec<Policy>,

    /// Real-time priority for fifo/rr.
    #[arg(short = 'p', long, default_value_t = 95, value_parser = priority,
          allow_hyphen_values = true)]
    pub priority: u8,

    /// Run as SCHED_OTHER without real-time privileges (the result is marked as such).
    #[arg(long)]
    pub no_rt: bool,

    /// Leave the system alone: no mlockall, no /dev/cpu_dma_latency, no timer-slack change.
    #[arg(long)]
    pub default_system: bool,

    /// Wakes per delay in each cell (rounds over the delays; the default sweep takes about 30 s)
    /// [default: 200].
    #[arg(short = 'l', long = "wakes", value_name = "N", value_parser = positive_u64)]
    pub wakes: Option<u64>,

    /// CPU to measure on (default: the last online CPU).
    #[arg(short = 'a', long, value_name = "CPU")]
    pub cpu: Option<usize>,

    /// Load a calibration (saved with --save-calibration, or a timer result) instead of measuring one.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,

    /// Write the calibration used to FILE.
    #[arg(long, value_name = "FILE")]
    pub save_calibration: Option<PathBuf>,

    /// Do not calibrate (adaptive and hybrid then start from 0; static refuses).
    #[arg(long)]
    pub no_calibrate: bool,

    /// Calibration: wakes per calibration delay (320us, 1ms, 5ms) [default: 100].
    #[arg(long, value_name = "N", value_parser = positive_usize)]
    pub calibration_wakes: Option<usize>,

    /// Adaptive: k of the margin mean + k·σ (larger: fewer late wakes, more spin) [default: 1].
    #[arg(long, value_name = "K", value_parser = fraction)]
    pub adaptive_k: Option<f64>,

    /// Hybrid: the quantile of the lateness to wake early by (about 1 - Q of wakes are late)
    /// [default: 0.99].
    #[arg(long, value_name = "Q", value_parser = fraction)]
    pub hybrid_quantile: Option<f64>,

    /// Adaptive and hybrid: the longest margin, and so the longest spin per wake [default: 1ms].
    #[arg(long, value_name = "DURATION", value_parser = positive_duration_us)]
    pub max_spin: Option<u64>,

    /// Beacon mode: a periodic chain at 15.36 ms × 2^BO, re-armed relative, absolute, compensated.
    #[arg(long)]
    pub beacon: bool,

    /// Beacon orders A..B (0..14; 14 is 251.66 s per interval) [default: 0..8].
    #[arg(long, value_name = "A..B", value_parser = order_range)]
    pub orders: Option<(u32, u32)>,

    /// Beacon intervals per order (at most 1000000) [default: 10].
    #[arg(long, value_name = "N", value_parser = beacon_cycles)]
    pub cycles: Option<u64>,

    /// Timer-service designs, comma-separated: polling, hopping (many virtual timers on one timer).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub service: Vec<String>,

    /// Service: virtual timers armed per round [default: 16].
    #[arg(long, value_name = "N")]
    pub timers: Option<usize>,

    /// Service: the polling design's tick [default: 100us].
    #[arg(long, value_name = "DURATION", value_parser = positive_duration_us)]
    pub tick: Option<u64>,

    #[command(flatten)]
    pub loads: LoadArgs,

    #[command(flatten)]
    pub out: ResultArgs,
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// The CPUs real-time work will run on, e.g. 2-3 (default: the isolated CPUs).
    #[arg(short = 'a', long = "cpus", value_name = "LIST", value_parser = cpu_list)]
    pub cpus: Option<CpuList>,

    /// Write the audit as JSON (docs/check-schema.json) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Run short probes on the RT CPUs (IRQ rates, OS noise, cyclic) and attach their numbers.
    #[arg(long)]
    pub measure: bool,

    /// How long each --measure probe runs (a bare number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = positive_duration_s,
          requires = "measure")]
    pub measure_time: u64,

    /// Write the suggested fixes as a shell script to FILE, for review (never run by rtscope).
    #[arg(long, value_name = "FILE")]
    pub fix_script: Option<PathBuf>,

    /// Read /proc and /sys under DIR instead of / (fake trees for tests and offline audits).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,

    /// No progress on stderr.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
pub struct IrqArgs {
    /// The interrupt source: timer, net, rtc, or gpio:CHIP:LINE (GPIO edge
    /// events, e.g. gpio:/dev/gpiochip0:17).
    #[arg(long, value_name = "SOURCE", default_value = "timer",
          value_parser = crate::experiment::irq::parse_source)]
    pub source: crate::experiment::irq::SourceSpec,

    /// CPU of the measurement (receiving) thread (default: the last online CPU).
    #[arg(short = 'a', long, value_name = "CPU")]
    pub cpu: Option<usize>,

    /// Interrupts per second: timer wake-ups, packets sent by the loopback sender,
    /// RTC interrupts (a power of two), GPIO edges made by --drive [default: 1000, rtc 1024].
    #[arg(long, value_name = "HZ")]
    pub rate: Option<u64>,

    /// net: listen on ADDR (e.g. 0.0.0.0:9000) for an external sender of
    /// 8-byte little-endian sequence numbers, instead of the loopback sender.
    #[arg(long, value_name = "ADDR")]
    pub peer: Option<std::net::SocketAddr>,

    /// rtc: the RTC device.
    #[arg(long, value_name = "PATH", default_value = crate::experiment::irq::DEFAULT_RTC)]
    pub rtc_device: std::path::PathBuf,

    /// gpio: the edges that are interrupts [default: rising].
    #[arg(long, value_enum)]
    pub edge: Option<crate::experiment::irq_gpio::Edge>,

    /// gpio: the clock the kernel stamps edges on [default: monotonic].
    #[arg(long, value_enum)]
    pub event_clock: Option<crate::experiment::irq_gpio::EventClock>,

    /// gpio: toggle this output line of the same chip --rate times per second
    /// (wire it to the measured line).
    #[arg(long, value_name = "LINE")]
    pub drive: Option<u32>,

    /// Number of interrupts to measure.
    #[arg(short = 'l', long, value_parser = positive_u64)]
    pub loops: Option<u64>,

    /// Run for this long (ns, us, ms, s, m, h; a bare number is seconds).
    #[arg(short = 'D', long, value_name = "DURATION", value_parser = positive_duration_s)]
    pub duration: Option<u64>,

    /// Keep the N worst samples.
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub spikes: usize,

    /// timer: split every sample into stages with kernel trace events
    /// (default auto: where tracing is possible).
    #[arg(long, value_name = "on|auto", num_args = 0..=1, require_equals = true,
          default_missing_value = "on", value_enum)]
    pub trace: Option<crate::experiment::cyclic_trace::TraceMode>,

    /// timer: keep what ran on the CPU around samples above DURATION.
    #[arg(long, value_name = "DURATION", value_parser = positive_duration_us)]
    pub trace_outliers: Option<u64>,

    #[command(flatten)]
    pub rt: RtArgs,

    #[command(flatten)]
    pub loads: LoadArgs,

    #[command(flatten)]
    pub out: ResultArgs,
}

impl IrqArgs {
    /// The options these arguments ask for.
    pub fn options(&self) -> anyhow::Result<crate::experiment::irq::IrqOptions> {
        use crate::experiment::cyclic_trace::TraceMode;
        use crate::experiment::irq::IrqSource;
        Ok(crate::experiment::irq::IrqOptions {
            source: self.source.source,
            cpu: self.cpu,
            rate_hz: self.rate.unwrap_or(match self.source.source {
                IrqSource::Rtc => 1024,
                _ => 1000,
            }),
            peer: self.peer,
            loops: self.loops,
            duration_ns: self.duration,
            spikes: self.spikes,
            rt: self.rt.choice()?,
            trace: match (self.trace, self.trace_outliers, self.source.source) {
                (Some(m), _, _) => m,
                (None, Some(_), _) => TraceMode::On,
                (None, None, IrqSource::Timer) => TraceMode::Auto,
                (None, None, IrqSource::Net | IrqSource::Rtc | IrqSource::Gpio) => TraceMode::Off,
            },
            trace_outliers_ns: self.trace_outliers,
            outputs: Outputs::from(&self.out),
            loads: self.loads.load.clone(),
            load_cpus: self.loads.load_cpus.clone(),
            rtc_device: self.rtc_device.clone(),
            gpio: self.source.gpio.clone(),
            edge: self.edge,
            event_clock: self.event_clock,
            drive: self.drive,
        })
    }
}

#[derive(Debug, Clone, Args)]
pub struct NoiseArgs {
    /// CPUs to measure, one busy thread each, e.g. 1 or 2-3 (default: the last online CPU).
    #[arg(short = 'a', long = "cpus", value_name = "LIST", value_parser = cpu_list)]
    pub cpus: Option<CpuList>,

    /// How long to measure (s, m, h; a bare number is seconds).
    #[arg(short = 'D', long, value_name = "DURATION", default_value = "10s",
          value_parser = positive_duration_s)]
    pub duration: u64,

    /// Record every loop iteration at least this long as a gap (a bare number is microseconds).
    #[arg(short = 'T', long, value_name = "DURATION", default_value = "1us",
          value_parser = positive_duration_us)]
    pub threshold: u64,

    /// Attribute each gap to the IRQs, softirqs, threads and NMIs that ran in it
    /// (kernel trace events in a private tracefs instance; needs root).
    #[arg(long)]
    pub trace: bool,

    /// Per-CPU trace buffer with --trace, KiB.
    #[arg(long, value_name = "KIB", default_value_t = 4096, requires = "trace",
          value_parser = clap::value_parser!(u32).range(64..=1_048_576))]
    pub trace_buffer_kb: u32,

    /// The counter the loop reads (default: tsc where invariant, cntvct on aarch64, else monotonic).
    #[arg(short = 's', long, value_name = "NAME", value_parser = source_name)]
    pub source: Option<String>,

    /// Calibrate the counter against CLOCK_MONOTONIC_RAW over this window (a bare number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "200ms", value_parser = positive_duration_s)]
    pub calibrate: u64,

    /// Keep the N longest gaps per CPU (with their causes under --trace).
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub spikes: usize,

    #[command(flatten)]
    pub rt: RtArgs,

    #[command(flatten)]
    pub loads: LoadArgs,

    #[command(flatten)]
    pub out: ResultArgs,
}

#[derive(Debug, Clone, Args)]
pub struct HwlatArgs {
    /// CPUs to measure, e.g. 1 or 2-3 (default: every online CPU).
    #[arg(short = 'a', long = "cpus", visible_alias = "cpu-list", value_name = "LIST",
          value_parser = cpu_list)]
    pub cpus: Option<CpuList>,

    /// How long to measure (s, m, h; a bare number is seconds).
    #[arg(short = 'D', long, value_name = "DURATION", default_value = "10s",
          value_parser = positive_duration_s)]
    pub duration: u64,

    /// The tracer takes one sample per window [default: 1s] (a bare number is microseconds).
    #[arg(long, value_name = "DURATION", value_parser = positive_duration_us)]
    pub window: Option<u64>,

    /// The part of each window the CPU sampled spins with interrupts off [default: 500ms];
    /// below --window (a bare number is microseconds).
    #[arg(long, value_name = "DURATION", value_parser = positive_duration_us)]
    pub width: Option<u64>,

    /// A sample is a window whose largest gap is above this (a bare number is microseconds).
    #[arg(short = 'T', long, value_name = "DURATION", default_value = "10us",
          value_parser = positive_duration_us)]
    pub threshold: u64,

    /// Which CPUs the tracer samples at once (hwlat_detector/mode; default: as the kernel has it).
    #[arg(long, value_enum)]
    pub mode: Option<crate::experiment::hwlat::Mode>,

    /// The kernel's hwlat tracer, or a busy loop per CPU from user space (auto: the tracer
    /// where the kernel has it).
    #[arg(long, value_enum, default_value_t = crate::experiment::hwlat::Method::Auto)]
    pub method: crate::experiment::hwlat::Method,

    /// User space: the counter the loop reads (default: tsc where invariant, cntvct on aarch64).
    #[arg(short = 's', long, value_name = "NAME", value_parser = source_name)]
    pub source: Option<String>,

    /// User space: calibrate the counter over this window [default: 200ms] (a bare number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = positive_duration_s)]
    pub calibrate: Option<u64>,

    /// User space: the per-CPU buffer of the kernel events, KiB [default: 4096].
    #[arg(long = "trace-buffer", value_name = "KIB",
          value_parser = clap::value_parser!(u32).range(64..=1_048_576))]
    pub trace_buffer_kb: Option<u32>,

    /// Keep the N largest samples per CPU.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub spikes: usize,

    #[command(flatten)]
    pub rt: RtArgs,

    #[command(flatten)]
    pub loads: LoadArgs,

    #[command(flatten)]
    pub out: ResultArgs,

    #[command(flatten)]
    pub live: LiveArgs,
}

impl HwlatArgs {
    /// The options these arguments ask for.
    pub fn options(&self) -> anyhow::Result<crate::experiment::hwlat::HwlatOptions> {
        let d = crate::experiment::hwlat::HwlatOptions::default();
        let given = [
            ("--window", self.window.is_some()),
            ("--width", self.width.is_some()),
            ("--mode", self.mode.is_some()),
            ("--source", self.source.is_some()),
            ("--calibrate", self.calibrate.is_some()),
            ("--trace-buffer", self.trace_buffer_kb.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, yes)| yes.then_some(name))
        .collect();
        Ok(crate::experiment::hwlat::HwlatOptions {
            cpus: self.cpus.as_deref().map(<[usize]>::to_vec),
            duration_ns: self.duration,
            window_ns: self.window.unwrap_or(d.window_ns),
            width_ns: self.width.unwrap_or(d.width_ns),
            threshold_ns: self.threshold,
            mode: self.mode,
            method: self.method,
            source: self.source.clone(),
            calibration_window_ns: self.calibrate.unwrap_or(d.calibration_window_ns),
            trace_buffer_kb: self.trace_buffer_kb.unwrap_or(d.trace_buffer_kb),
            spikes: self.spikes,
            rt: self.rt.choice()?,
            loads: self.loads.load.clone(),
            load_cpus: self.loads.load_cpus.clone(),
            outputs: Outputs {
                live: self.live.options(),
                ..Outputs::from(&self.out)
            },
            given,
        })
    }
}

impl TimerArgs {
    /// The options these arguments ask for.
    pub fn options(&self) -> anyhow::Result<crate::experiment::timer::TimerOptions> {
        use crate::experiment::timer::defaults as d;
        // The options that only some modes use, when given.
        let given = [
            ("--delays", self.delays.is_some()),
            ("--api", self.api.is_some()),
            ("-l/--wakes", self.wakes.is_some()),
            ("--calibration-wakes", self.calibration_wakes.is_some()),
            ("--adaptive-k", self.adaptive_k.is_some()),
            ("--hybrid-quantile", self.hybrid_quantile.is_some()),
            ("--max-spin", self.max_spin.is_some()),
            ("--orders", self.orders.is_some()),
            ("--cycles", self.cycles.is_some()),
            ("--timers", self.timers.is_some()),
            ("--tick", self.tick.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, yes)| yes.then_some(name))
        .collect();
        let default_delays = || {
            STUDY_DELAYS
                .split(',')
                .map(|v| positive_duration_us(v).expect("the study's delays parse"))
                .collect()
        };
        Ok(crate::experiment::timer::TimerOptions {
            given,
            delays_ns: self.delays.clone().unwrap_or_else(default_delays),
            apis: self.api.clone().unwrap_or_else(|| vec!["all".into()]),
            compensations: (!self.compensate.is_empty()).then(|| self.compensate.clone()),
            policies: self.policy.clone(),
            priority: self.priority,
            no_rt: self.no_rt,
            default_system: self.default_system,
            wakes: self.wakes.unwrap_or(d::WAKES),
            cpu: self.cpu,
            calibration: self.calibration.clone(),
            save_calibration: self.save_calibration.clone(),
            no_calibrate: self.no_calibrate,
            calibration_wakes: self.calibration_wakes.unwrap_or(d::CALIBRATION_WAKES),
            adaptive_k: self.adaptive_k.unwrap_or(d::ADAPTIVE_K),
            hybrid_quantile: self.hybrid_quantile.unwrap_or(d::HYBRID_QUANTILE),
            max_spin_ns: self.max_spin.unwrap_or(d::MAX_SPIN_NS),
            beacon: self.beacon,
            orders: self.orders.unwrap_or(d::ORDERS),
            cycles: self.cycles.unwrap_or(d::CYCLES),
            service: self.service.clone(),
            timers: self.timers.unwrap_or(d::TIMERS),
            tick_ns: self.tick.unwrap_or(d::TICK_NS),
            loads: self.loads.load.clone(),
            load_cpus: self.loads.load_cpus.clone(),
            outputs: Outputs::from(&self.out),
        })
    }
}

impl CheckArgs {
    /// The plan these arguments ask for.
    pub fn plan(&self) -> crate::check::CheckPlan {
        crate::check::CheckPlan {
            root: self.root.clone(),
            cpus: self.cpus.clone(),
            json: self.json.clone(),
            measure: self.measure,
            measure_ns: self.measure_time,
            fix_script: self.fix_script.clone(),
            quiet: self.quiet,
        }
    }
}

impl RtArgs {
    /// The validated real-time settings.
    pub fn choice(&self) -> anyhow::Result<RtChoice> {
        RtChoice::new(self.policy, self.priority, self.no_rt, self.default_system)
    }

    /// [`RtArgs::choice`], `--policy deadline` allowed.
    pub fn choice_with_deadline(&self) -> anyhow::Result<RtChoice> {
        RtChoice::with_deadline(self.policy, self.priority, self.no_rt, self.default_system)
    }
}

impl NoiseArgs {
    /// The options these arguments ask for.
    pub fn options(&self) -> anyhow::Result<crate::experiment::noise::NoiseOptions> {
        Ok(crate::experiment::noise::NoiseOptions {
            cpus: self.cpus.as_deref().map(<[usize]>::to_vec),
            duration_ns: self.duration,
            threshold_ns: self.threshold,
            trace: self.trace,
            trace_buffer_kb: self.trace_buffer_kb,
            source: self.source.clone(),
            calibration_window_ns: self.calibrate,
            spikes: self.spikes,
            rt: self.rt.choice()?,
            loads: self.loads.load.clone(),
            load_cpus: self.loads.load_cpus.clone(),
            outputs: Outputs::from(&self.out),
        })
    }
}

impl From<&ResultArgs> for Outputs {
    fn from(a: &ResultArgs) -> Self {
        Outputs {
            json: a.json.clone(),
            report: a.report.clone(),
            quiet: a.quiet,
            repeat: a.repeat,
            live: Default::default(),
            gates: a.gate.options(),
        }
    }
}

impl CyclicArgs {
    /// The options these arguments ask for.
    pub fn options(&self) -> anyhow::Result<CyclicOptions> {
        Ok(CyclicOptions {
            threads: self.threads,
            cpus: self.cpus.clone(),
            period_ns: self.period,
            distance_ns: self.distance,
            loops: self.loops,
            duration_ns: self.duration,
            start_delay_ns: self.start_delay,
            warmup: self.warmup,
            clock: self.clock,
            wake: self.wake,
            rt: self.rt.choice_with_deadline()?,
            deadline: crate::experiment::cyclic::DeadlineAsk {
                runtime_ns: self.dl_runtime,
                deadline_ns: self.dl_deadline,
            },
            spikes: self.spikes,
            raw: self.raw.clone(),
            histogram: self.histogram.clone(),
            histogram_max_ns: self.histogram_max,
            break_above_ns: self.break_above,
            fail_above_ns: self.fail_above,
            checkpoint_ns: self.out.checkpoint,
            outputs: Outputs {
                json: self.out.json.clone(),
                report: self.out.report.clone(),
                quiet: self.out.quiet,
                repeat: self.repeat,
                live: self.live.options(),
                gates: self.out.gate.options(),
            },
            loads: self.loads.load.clone(),
            load_cpus: self.loads.load_cpus.clone(),
            repeat: self.repeat,
            trace: match (self.trace, self.trace_outliers) {
                (Some(m), _) => m,
                (None, Some(_)) => crate::experiment::cyclic_trace::TraceMode::On,
                (None, None) => crate::experiment::cyclic_trace::TraceMode::Off,
            },
            trace_outliers_ns: self.trace_outliers,
            trace_buffer_kb: self.trace_buffer_kb,
            cyclictest: None,
        })
    }
}

impl ClockArgs {
    /// The options these arguments ask for.
    pub fn options(&self) -> anyhow::Result<ClockOptions> {
        Ok(ClockOptions {
            mode: self.mode,
            reads: self.reads,
            every_ns: self.every.clone(),
            pairs: self.pairs,
            sources: self.sources.clone(),
            calibrate_ns: self.calibrate,
            warp_ns: self.warp,
            cpu: self.cpu,
            rt: self.rt.choice()?,
            loads: self.loads.load.clone(),
            load_cpus: self.loads.load_cpus.clone(),
            outputs: Outputs::from(&self.out),
        })
    }
}

impl PeriodArgs {
    /// The options these arguments ask for.
    pub fn options(&self) -> anyhow::Result<PeriodOptions> {
        Ok(PeriodOptions {
            periods_ns: self.period.clone(),
            cycles: self.cycles,
            sources: self.sources.clone(),
            calibrate_ns: self.calibrate,
            cpu: self.cpu,
            rt: self.rt.choice()?,
            loads: self.loads.load.clone(),
            load_cpus: self.loads.load_cpus.clone(),
            outputs: Outputs::from(&self.out),
        })
    }
}

impl IpcArgs {
    /// The options these arguments ask for.
    pub fn options(&self) -> anyhow::Result<IpcOptions> {
        Ok(IpcOptions {
            mech: self.mech.clone(),
            patterns: self.pattern.clone(),
            between: self.between.clone(),
            cpus: self.cpus.map(|p| (p.0, p.1)),
            sender_priority: self.sender_priority,
            periods_ns: self.period.clone(),
            loops: self.loops,
            repetitions: self.repetitions,
            rt: self.rt.choice()?,
            loads: self.loads.load.clone(),
            load_cpus: self.loads.load_cpus.clone(),
            outputs: Outputs::from(&self.out),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--policy deadline` and its parameters reach the options; elsewhere
    /// the policy is refused.
    #[test]
    fn deadline_options_reach_cyclic() {
        let cli = Cli::try_parse_from([
            "rtscope",
            "cyclic",
            "--policy",
            "deadline",
            "-i",
            "2ms",
            "--dl-runtime",
            "100us",
            "--dl-deadline",
            "800",
        ])
        .unwrap();
        let Command::Cyclic(a) = cli.command else {
            panic!("not cyclic");
        };
        let o = a.options().unwrap();
        assert_eq!(o.rt.policy, Policy::Deadline);
        assert_eq!(o.rt.priority, 0);
        assert_eq!(o.period_ns, 2_000_000);
        assert_eq!(
            o.deadline,
            crate::experiment::cyclic::DeadlineAsk {
                runtime_ns: Some(100_000),
                deadline_ns: Some(800_000),
            }
        );
        let e = a.rt.choice().unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert_eq!(
            a.rt.choice_with_deadline().unwrap().policy,
            Policy::Deadline
        );
    }

    /// `CyclicOptions::default()` (what `matrix` starts its cells from) is
    /// what `rtscope cyclic` does with no option.
    #[test]
    fn cyclic_defaults_agree_with_the_cli() {
        let cli = Cli::try_parse_from(["rtscope", "cyclic"]).unwrap();
        let Command::Cyclic(a) = cli.command else {
            panic!("not cyclic")
        };
        assert_eq!(a.options().unwrap(), CyclicOptions::default());
    }

    #[test]
    fn priority_out_of_range_names_the_range() {
        let e = Cli::try_parse_from(["rtscope", "cyclic", "-p", "-1"]).unwrap_err();
        assert!(e.to_string().contains("out of range (1-99"), "{e}");
    }

    #[test]
    fn counts_have_a_bound() {
        assert_eq!(repeat_count("1"), Ok(1));
        assert_eq!(repeat_count("1000"), Ok(1000));
        assert_eq!(
            repeat_count("1001"),
            Err("at most 1000 (each repetition is a whole run)".into())
        );
        assert!(repeat_count("18446744073709551615").is_err());
        assert!(repeat_count("99999999999999999999")
            .unwrap_err()
            .contains("not a positive"));
        assert_eq!(repeat_count("0"), Err("must be at least 1".into()));
        assert_eq!(beacon_cycles("1000000"), Ok(1_000_000));
        assert!(beacon_cycles("1000001")
            .unwrap_err()
            .contains("at most 1000000"));
        assert!(beacon_cycles("4294967296").is_err());
        assert_eq!(beacon_cycles("0"), Err("must be at least 1".into()));
    }
}
