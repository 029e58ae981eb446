//! `rtscope check`.

use super::*;

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

    /// How long each --measure probe runs (a bare number is seconds; at most 365d).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = run_duration,
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
