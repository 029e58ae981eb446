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
use crate::experiment::run::{Outputs, RtChoice, RunRequest};

mod check;
mod clock;
mod cyclic;
mod hwlat;
mod install;
mod ipc;
mod irq;
mod load;
pub mod man;
mod noise;
mod qualify;
mod report;
mod timer;

pub use check::*;
pub use clock::*;
pub use cyclic::*;
pub use hwlat::*;
pub use install::*;
pub use ipc::*;
pub use irq::*;
pub use load::*;
pub use noise::*;
pub use qualify::*;
pub use report::*;
pub use timer::*;

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
    /// Is this machine good enough for a deadline, and if not, why? check, hwlat, then a
    /// measurement on every CPU under load with outliers traced: one verdict (docs/qualify.md).
    Qualify(QualifyArgs),
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

/// `parse`, refusing a value above `max` ("at most `shown`", the bound as
/// `--help` shows it): every duration option has a bound
/// ([`crate::limits::MAX_RUN_NS`], [`crate::limits::MAX_CALIBRATE_NS`],
/// [`crate::limits::MAX_WAIT_NS`]).
fn at_most(
    parse: fn(&str) -> Result<u64, String>,
    max: u64,
    shown: &'static str,
) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |s| match parse(s)? {
        v if v > max => Err(format!("at most {shown}")),
        v => Ok(v),
    }
}

/// How long a run measures (`-D`, `--measure-time`, `--checkpoint`): non-zero,
/// a bare number is seconds, at most [`crate::limits::MAX_RUN_NS`].
pub fn run_duration(s: &str) -> Result<u64, String> {
    at_most(positive_duration_s, crate::limits::MAX_RUN_NS, "365d")(s)
}

/// A calibration or warp-test window (`--calibrate`, `--warp`): a bare number
/// is seconds, at most [`crate::limits::MAX_CALIBRATE_NS`].
pub fn calibration_window(s: &str) -> Result<u64, String> {
    at_most(positive_duration_s, crate::limits::MAX_CALIBRATE_NS, "10m")(s)
}

/// [`calibration_window`] where 0 (skip it) is allowed.
pub fn calibration_window_or_0(s: &str) -> Result<u64, String> {
    at_most(duration_s, crate::limits::MAX_CALIBRATE_NS, "10m")(s)
}

/// A period, delay or threshold: non-zero, a bare number is microseconds,
/// at most [`crate::limits::MAX_WAIT_NS`].
pub fn wait_us(s: &str) -> Result<u64, String> {
    at_most(positive_duration_us, crate::limits::MAX_WAIT_NS, "1h")(s)
}

/// A measurement period: [`wait_us`], and at least 1 µs (cyclictest's own
/// unit). Shorter, every wake-up misses thousands of periods, and filling
/// them in over the intended periods costs the aggregator more than the
/// run gives it time for (a 1 s run of `-i 1ns` took 51 s and held a stop).
pub fn period_us(s: &str) -> Result<u64, String> {
    let ns = wait_us(s)?;
    if ns < 1_000 {
        return Err(format!(
            "{s}: at least 1us (a period shorter than a wake-up's own cost only counts missed periods)"
        ));
    }
    Ok(ns)
}

/// [`wait_us`] where 0 is allowed.
pub fn wait_us_or_0(s: &str) -> Result<u64, String> {
    at_most(duration_us, crate::limits::MAX_WAIT_NS, "1h")(s)
}

/// A gap or interval whose bare number is seconds, non-zero, at most
/// [`crate::limits::MAX_WAIT_NS`].
pub fn wait_s(s: &str) -> Result<u64, String> {
    at_most(positive_duration_s, crate::limits::MAX_WAIT_NS, "1h")(s)
}

/// [`wait_s`] where 0 is allowed.
pub fn wait_s_or_0(s: &str) -> Result<u64, String> {
    at_most(duration_s, crate::limits::MAX_WAIT_NS, "1h")(s)
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

impl LoadArgs {
    /// The run request of an experiment with these loads, `rt` and `outputs`.
    pub fn request(&self, rt: RtChoice, outputs: Outputs) -> RunRequest {
        RunRequest {
            rt,
            loads: self.load.clone(),
            load_cpus: self.load_cpus.clone(),
            outputs,
        }
    }
}

/// The options of a run that every measuring command shares but cyclic
/// (whose outputs have checkpoints): the command line of a [`RunRequest`].
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub rt: RtArgs,

    #[command(flatten)]
    pub loads: LoadArgs,

    #[command(flatten)]
    pub out: ResultArgs,
}

impl RunArgs {
    /// The run request these arguments ask for.
    pub fn request(&self) -> anyhow::Result<RunRequest> {
        self.request_with(|o| o)
    }

    /// [`RunArgs::request`], its outputs completed by `outputs` (live views).
    pub fn request_with(
        &self,
        outputs: impl FnOnce(Outputs) -> Outputs,
    ) -> anyhow::Result<RunRequest> {
        Ok(self
            .loads
            .request(self.rt.choice()?, outputs(Outputs::from(&self.out))))
    }
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
    /// Real-time priority of measurement threads (1-99 for fifo/rr; default 95;
    /// refused with --policy deadline, whose tasks have none).
    #[arg(short = 'p', long, value_parser = priority, allow_hyphen_values = true)]
    pub priority: Option<u8>,

    /// Scheduling policy of measurement threads [default: fifo].
    #[arg(long, value_parser = named::<Policy>(Policy::NAMES))]
    pub policy: Option<Policy>,

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

    /// Rewrite the JSON result every DURATION during long runs (needs --json; at most 365d).
    #[arg(long, value_name = "DURATION", value_parser = run_duration)]
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

/// Watching a run while it goes on (`docs/live.md`): the options of every
/// experiment whose aggregator publishes snapshots.
#[derive(Debug, Clone, Args)]
pub struct LiveArgs {
    /// Stream snapshots while the run goes on to DEST: - (stdout), a file, a FIFO or a
    /// terminal device; a slow reader loses lines (counted), never holds the run.
    #[arg(long, value_name = "DEST", help_heading = "Watching live")]
    pub stream: Option<PathBuf>,

    /// Time between streamed snapshots; 0 streams every raw sample (a bare number is seconds;
    /// at most 1h).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = wait_s_or_0,
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

    /// With --listen: also answer requests for this host name or IP address, optionally
    /// with :PORT (repeatable, at most 32); on loopback only localhost, 127.x and [::1] are
    /// answered (DNS rebinding).
    #[arg(
        long = "allow-host",
        value_name = "NAME",
        help_heading = "Watching live"
    )]
    pub allow_host: Vec<String>,

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
            allow_hosts: self.allow_host.clone(),
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

impl RtArgs {
    /// The validated real-time settings.
    pub fn choice(&self) -> anyhow::Result<RtChoice> {
        self.check_priority()?;
        self.note_no_rt();
        RtChoice::new(self.policy(), self.prio(), self.no_rt, self.default_system)
    }

    /// `--policy`, or its default (fifo).
    fn policy(&self) -> Policy {
        self.policy.unwrap_or(Policy::Fifo)
    }

    /// `--no-rt` overrides a real-time policy or priority given with it (a
    /// script may add it where real-time is refused): said on stderr, not
    /// dropped without a word.
    fn note_no_rt(&self) {
        if !self.no_rt || self.policy == Some(Policy::Deadline) {
            return;
        }
        let mut given = Vec::new();
        if let Some(p) = self.policy.filter(|p| p.is_rt()) {
            given.push(format!("--policy {}", p.name()));
        }
        if let Some(p) = self.priority.filter(|&p| p > 0) {
            given.push(format!("-p {p}"));
        }
        if !given.is_empty() {
            eprintln!(
                "rtscope: --no-rt: {} not applied, the threads run SCHED_OTHER",
                given.join(" and ")
            );
        }
    }

    /// A priority given with a policy that has none (other, batch, idle)
    /// was dropped without a word: refused (0 is theirs, and allowed).
    fn check_priority(&self) -> anyhow::Result<()> {
        match self.priority {
            Some(p)
                if p != 0
                    && matches!(self.policy(), Policy::Other | Policy::Batch | Policy::Idle) =>
            {
                Err(crate::error::usage(format!(
                    "-p {p}: --policy {} has no real-time priority (only 0); give -p with fifo or rr",
                    self.policy().name()
                )))
            }
            _ => Ok(()),
        }
    }

    /// [`RtArgs::choice`], `--policy deadline` allowed.
    pub fn choice_with_deadline(&self) -> anyhow::Result<RtChoice> {
        if self.policy == Some(Policy::Deadline) && !self.no_rt && self.priority.is_some() {
            return Err(crate::error::usage(
                "-p/--priority does not apply to --policy deadline: a deadline task has no \
                 priority (--dl-runtime, --dl-deadline and the period -i set it)",
            ));
        }
        self.check_priority()?;
        self.note_no_rt();
        RtChoice::with_deadline(self.policy(), self.prio(), self.no_rt, self.default_system)
    }

    /// `-p`, or its default (95).
    fn prio(&self) -> u8 {
        self.priority.unwrap_or(95)
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
        assert_eq!(o.run.rt.policy, Policy::Deadline);
        assert_eq!(o.run.rt.priority, 0);
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
        // A priority is refused with deadline (it would be ignored), not
        // with --no-rt (SCHED_OTHER then) nor with another policy.
        let rt = |args: &[&str]| {
            let mut v = vec!["rtscope", "cyclic"];
            v.extend_from_slice(args);
            let Command::Cyclic(a) = Cli::try_parse_from(v).unwrap().command else {
                panic!("not cyclic");
            };
            a.rt.choice_with_deadline()
        };
        let e = rt(&["--policy", "deadline", "-p", "95"]).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(
            e.to_string().starts_with("-p/--priority does not apply"),
            "{e}"
        );
        // --no-rt contradicts deadline (it ran SCHED_OTHER silently, and
        // then called --dl-runtime "for --policy deadline"): refused.
        for args in [
            &["--policy", "deadline", "-p", "95", "--no-rt"][..],
            &["--policy", "deadline", "--no-rt", "--dl-runtime", "100us"],
        ] {
            let e = rt(args).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2);
            assert!(e.to_string().contains("contradict"), "{e}");
        }
        let c = rt(&["--policy", "fifo", "-p", "95", "--no-rt"]).unwrap();
        assert_eq!((c.policy, c.priority), (Policy::Other, 0));
        let c = rt(&["--policy", "rr", "-p", "7"]).unwrap();
        assert_eq!((c.policy, c.priority), (Policy::Rr, 7));
        // A priority with a policy that has none was dropped silently.
        for pol in ["other", "batch", "idle"] {
            let e = rt(&["--policy", pol, "-p", "50"]).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2);
            assert!(e.to_string().contains("has no real-time priority"), "{e}");
            assert_eq!(rt(&["--policy", pol, "-p", "0"]).unwrap().priority, 0);
        }
        assert_eq!(rt(&[]).unwrap().priority, 95);
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
