//! `rtscope qualify`.

use super::*;

#[derive(Debug, Clone, Args)]
pub struct QualifyArgs {
    /// The deadline: every wake-up on every measured CPU must come within it (a bare number is
    /// microseconds; at most 1h); also the --trace-outliers threshold
    #[arg(long = "max", value_name = "DURATION", value_parser = wait_us,
          required_unless_present = "fail_if")]
    pub max: Option<u64>,

    /// Other gates for the verdict, as `cyclic --fail-if` takes them (docs/ci-gates.md)
    #[arg(long, value_name = "GATES")]
    pub fail_if: Option<String>,

    /// How long the measurement runs (s, m, h, d; a bare number is seconds; at most 365d)
    #[arg(short = 'D', long, value_name = "DURATION", default_value = "10m",
          value_parser = run_duration)]
    pub duration: u64,

    /// CPUs to measure, one thread each, e.g. 2-3 (default: every online CPU)
    #[arg(short = 'a', long = "cpus", value_name = "LIST", value_parser = cpu_list)]
    pub cpus: Option<CpuList>,

    /// Background load: `standard` (rteval-like: CPU, memory, I/O and messaging), `none`,
    /// `net` (a loopback UDP flood, added to the others) or any load SPEC of `rtscope load
    /// --list` (repeatable; default: standard)
    #[arg(long = "load", value_name = "PROFILE")]
    pub load: Vec<String>,

    /// Trace where interrupts go off and on in the kernel (the preemptirq events, where the
    /// kernel has them), so that a section with interrupts off is named apart from the
    /// hypervisor or hardware (as `cyclic --trace-irqs-off`: many events; needs --max)
    #[arg(long, requires = "max")]
    pub trace_irqs_off: bool,

    /// Skip the hwlat step
    #[arg(long)]
    pub no_hwlat: bool,

    /// How long the hwlat step runs (a bare number is seconds; at most 1h)
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = wait_s,
          conflicts_with = "no_hwlat")]
    pub hwlat_duration: u64,

    /// Write the qualification (verdict, plan, machine, command line and every step's
    /// result) as JSON to FILE
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Rewrite the --json file every DURATION during the run (a bare number is seconds; at
    /// most 365d; default: 10m)
    #[arg(long, value_name = "DURATION", value_parser = run_duration, requires = "json")]
    pub checkpoint: Option<u64>,

    /// Write a self-contained HTML report, the verdict at its top, to FILE
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    /// Write the verdict as a JUnit XML report to FILE (one test case per step and CPU)
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,

    /// Leave out what identifies the machine (host name, kernel command line, user names in
    /// paths, IP addresses) from the JSON, the report and the text
    #[arg(long)]
    pub redact: bool,

    /// No progress line, only the verdict
    #[arg(short = 'q', long)]
    pub quiet: bool,

    /// Full-screen terminal view of the measurement (as `cyclic --live`)
    #[arg(long)]
    pub live: bool,

    /// Serve the measurement's live metrics and page on ADDR (as `cyclic --listen`)
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
}
