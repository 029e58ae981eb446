//! `rtscope clock` and `rtscope period`.

use super::*;

pub(super) fn at_least_two(s: &str) -> Result<u64, String> {
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
    /// alternating takes a list [default: sparse 1s, alternating 1s,5s]; each at most 1h.
    #[arg(long, value_name = "DURATION[,DURATION...]", value_delimiter = ',',
          value_parser = wait_s)]
    pub every: Vec<u64>,

    /// Sparse modes: number of wake-ups (pairs of reads per source).
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = positive_usize)]
    pub pairs: usize,

    /// Sources to measure, comma-separated (default: every source available here).
    #[arg(short = 's', long = "source", value_name = "NAME[,NAME...]", value_delimiter = ',',
          value_parser = source_name)]
    pub sources: Vec<String>,

    /// Calibrate counters against CLOCK_MONOTONIC_RAW over this window (a bare number is
    /// seconds; at most 10m).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = calibration_window)]
    pub calibrate: u64,

    /// Cross-CPU warp test per CPU pair for this long; 0 skips it (a bare number is seconds;
    /// at most 10m).
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = calibration_window_or_0)]
    pub warp: u64,

    /// CPU to measure on (default: the last online CPU).
    #[arg(short = 'a', long, value_name = "CPU")]
    pub cpu: Option<usize>,

    /// List the sources with their availability and exit.
    #[arg(long, exclusive = true)]
    pub list: bool,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Clone, Args)]
pub struct PeriodArgs {
    /// Loop periods, each run in turn (a bare number is microseconds; each at most 1h).
    #[arg(short = 'i', long, value_name = "DURATION[,DURATION...]", value_delimiter = ',',
          default_value = "100us,1ms", value_parser = wait_us)]
    pub period: Vec<u64>,

    /// Cycles per period (N cycles give N-1 observed periods).
    #[arg(short = 'l', long, value_name = "N", default_value_t = 1000, value_parser = at_least_two)]
    pub cycles: u64,

    /// Sources that timestamp every cycle, comma-separated (default: every source available here).
    #[arg(short = 's', long = "source", value_name = "NAME[,NAME...]", value_delimiter = ',',
          value_parser = source_name)]
    pub sources: Vec<String>,

    /// Calibrate counters against CLOCK_MONOTONIC_RAW over this window (a bare number is
    /// seconds; at most 10m).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = calibration_window)]
    pub calibrate: u64,

    /// CPU to run the loop on (default: the last online CPU).
    #[arg(short = 'a', long, value_name = "CPU")]
    pub cpu: Option<usize>,

    #[command(flatten)]
    pub run: RunArgs,
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
            run: self.run.request()?,
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
            run: self.run.request()?,
        })
    }
}
