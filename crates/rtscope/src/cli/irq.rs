//! `rtscope irq`.

use super::*;

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

    /// Run for this long (ns, us, ms, s, m, h; a bare number is seconds; at most 365d).
    #[arg(short = 'D', long, value_name = "DURATION", value_parser = run_duration)]
    pub duration: Option<u64>,

    /// Keep the N worst samples.
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub spikes: usize,

    /// timer: split every sample into stages with kernel trace events
    /// (default auto: where tracing is possible).
    #[arg(long, value_name = "on|auto", num_args = 0..=1, require_equals = true,
          default_missing_value = "on", value_enum)]
    pub trace: Option<crate::experiment::cyclic_trace::TraceMode>,

    /// timer: keep what ran on the CPU around samples above DURATION (at most 1h).
    #[arg(long, value_name = "DURATION", value_parser = wait_us)]
    pub trace_outliers: Option<u64>,

    #[command(flatten)]
    pub run: RunArgs,
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
            run: self.run.request()?,
            trace: match (self.trace, self.trace_outliers, self.source.source) {
                (Some(m), _, _) => m,
                (None, Some(_), _) => TraceMode::On,
                (None, None, IrqSource::Timer) => TraceMode::Auto,
                (None, None, IrqSource::Net | IrqSource::Rtc | IrqSource::Gpio) => TraceMode::Off,
            },
            trace_outliers_ns: self.trace_outliers,
            rtc_device: self.rtc_device.clone(),
            gpio: self.source.gpio.clone(),
            edge: self.edge,
            event_clock: self.event_clock,
            drive: self.drive,
        })
    }
}
