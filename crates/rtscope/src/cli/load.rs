//! `rtscope load` and `rtscope matrix`, and the load worker.

use super::*;

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

    /// How long to run (s, m, h, d; a bare number is seconds; at most 365d).
    #[arg(short = 'D', long, value_name = "DURATION", default_value = "10s",
          value_parser = run_duration)]
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
    pub fn options(self) -> crate::experiment::load::LoadCommand {
        crate::experiment::load::LoadCommand {
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
pub(super) fn level(s: &str) -> Result<u8, String> {
    match s.trim_end_matches('%').parse::<i64>() {
        Ok(v) if (1..=100).contains(&v) => Ok(v as u8),
        Ok(v) => Err(format!("level {v} is out of range (1-100)")),
        Err(_) => Err(format!("'{s}' is not a level (1-100)")),
    }
}

#[derive(Debug, Clone, Args)]
pub struct MatrixArgs {
    /// Periods, comma-separated (a bare number is microseconds; each at most 1h).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "1ms",
          value_parser = wait_us)]
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

impl MatrixArgs {
    /// The command's plain options.
    pub fn options(self) -> anyhow::Result<crate::experiment::matrix::MatrixOptions> {
        Ok(crate::experiment::matrix::MatrixOptions {
            rt: self.rt.choice()?,
            periods: self.periods,
            loads: self.loads,
            levels: self.levels,
            samples: self.samples,
            out: self.out,
            resume: self.resume,
            repeat: self.repeat,
            threads: self.threads,
            cpus: self.cpus,
            load_cpus: self.load_cpus,
            clock: self.clock,
            wake: self.wake,
            quiet: self.quiet,
        })
    }
}
