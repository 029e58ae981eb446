//! `rtscope noise`.

use super::*;

#[derive(Debug, Clone, Args)]
pub struct NoiseArgs {
    /// CPUs to measure, one busy thread each, e.g. 1 or 2-3 (default: the last online CPU).
    #[arg(short = 'a', long = "cpus", value_name = "LIST", value_parser = cpu_list)]
    pub cpus: Option<CpuList>,

    /// How long to measure (s, m, h; a bare number is seconds; at most 365d).
    #[arg(short = 'D', long, value_name = "DURATION", default_value = "10s",
          value_parser = run_duration)]
    pub duration: u64,

    /// Record every loop iteration at least this long as a gap (a bare number is microseconds;
    /// at most 1h).
    #[arg(short = 'T', long, value_name = "DURATION", default_value = "1us",
          value_parser = wait_us)]
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

    /// Calibrate the counter against CLOCK_MONOTONIC_RAW over this window (a bare number is
    /// seconds; at most 10m).
    #[arg(long, value_name = "DURATION", default_value = "200ms", value_parser = calibration_window)]
    pub calibrate: u64,

    /// Keep the N longest gaps per CPU (with their causes under --trace).
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub spikes: usize,

    #[command(flatten)]
    pub run: RunArgs,
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
            run: self.run.request()?,
        })
    }
}
