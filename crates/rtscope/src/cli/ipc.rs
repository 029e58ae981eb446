//! `rtscope ipc`.

use super::*;

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
