//! `rtscope hwlat`.

use super::*;

#[derive(Debug, Clone, Args)]
pub struct HwlatArgs {
    /// CPUs to measure, e.g. 1 or 2-3 (default: every online CPU).
    #[arg(short = 'a', long = "cpus", visible_alias = "cpu-list", value_name = "LIST",
          value_parser = cpu_list)]
    pub cpus: Option<CpuList>,

    /// How long to measure (s, m, h; a bare number is seconds; at most 365d).
    #[arg(short = 'D', long, value_name = "DURATION", default_value = "10s",
          value_parser = run_duration)]
    pub duration: u64,

    /// The tracer takes one sample per window [default: 1s] (a bare number is microseconds;
    /// at most 1h).
    #[arg(long, value_name = "DURATION", value_parser = wait_us)]
    pub window: Option<u64>,

    /// The part of each window the CPU sampled spins with interrupts off [default: 500ms];
    /// below --window (a bare number is microseconds).
    #[arg(long, value_name = "DURATION", value_parser = wait_us)]
    pub width: Option<u64>,

    /// A sample is a window whose largest gap is above this (a bare number is microseconds;
    /// at most 1h).
    #[arg(short = 'T', long, value_name = "DURATION", default_value = "10us",
          value_parser = wait_us)]
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

    /// User space: calibrate the counter over this window [default: 200ms] (a bare number is
    /// seconds; at most 10m).
    #[arg(long, value_name = "DURATION", value_parser = calibration_window)]
    pub calibrate: Option<u64>,

    /// User space: the per-CPU buffer of the kernel events, KiB [default: 4096].
    #[arg(long = "trace-buffer", value_name = "KIB",
          value_parser = clap::value_parser!(u32).range(64..=1_048_576))]
    pub trace_buffer_kb: Option<u32>,

    /// Keep the N largest samples per CPU.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub spikes: usize,

    #[command(flatten)]
    pub run: RunArgs,

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
            run: self.run.request_with(|o| Outputs {
                live: self.live.options(),
                ..o
            })?,
            given,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::experiment::hwlat::{HwlatOptions, Method, Mode};

    #[test]
    fn the_command_line() {
        use clap::Parser;
        let cli = super::super::Cli::try_parse_from([
            "rtscope",
            "hwlat",
            "-D",
            "30s",
            "--width",
            "950ms",
            "--window",
            "1s",
            "-T",
            "20",
            "--cpu-list",
            "0",
            "--mode",
            "per-cpu",
            "--listen",
            "127.0.0.1:0",
        ])
        .unwrap();
        let super::super::Command::Hwlat(a) = cli.command else {
            panic!("not hwlat")
        };
        let o = a.options().unwrap();
        assert_eq!(o.cpus, Some(vec![0]));
        assert_eq!(
            (o.duration_ns, o.width_ns, o.window_ns),
            (30_000_000_000, 950_000_000, 1_000_000_000)
        );
        assert_eq!(o.threshold_ns, 20_000, "a bare number is µs");
        assert_eq!((o.mode, o.method), (Some(Mode::PerCpu), Method::Auto));
        assert_eq!(o.given, ["--window", "--width", "--mode"]);
        assert_eq!(o.run.outputs.live.listen.as_deref(), Some("127.0.0.1:0"));
        let cli = super::super::Cli::try_parse_from([
            "rtscope",
            "hwlat",
            "--method",
            "user-space",
            "-s",
            "monotonic",
        ])
        .unwrap();
        let super::super::Command::Hwlat(a) = cli.command else {
            panic!("not hwlat")
        };
        let o = a.options().unwrap();
        let d = HwlatOptions::default();
        assert_eq!(
            (o.window_ns, o.width_ns, o.threshold_ns),
            (d.window_ns, d.width_ns, d.threshold_ns)
        );
        assert_eq!(o.given, ["--source"]);
        assert_eq!(o.method, Method::UserSpace);
    }
}
