//! `rtscope timer`.

use super::*;

/// `A..B` (inclusive), or one number.
pub(super) fn order_range(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("'{s}' is not an order range: give A..B (e.g. 0..8) or one order");
    let (a, b) = match s.split_once("..") {
        Some((a, b)) => (a, b.trim_start_matches('=')),
        None => (s, s),
    };
    let a = a.trim().parse::<u32>().map_err(|_| bad())?;
    let b = b.trim().parse::<u32>().map_err(|_| bad())?;
    Ok((a, b))
}

pub(super) fn fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("'{s}' is not a number")),
    }
}

/// The study's requests: 320 us to 5 ms.
pub(super) const STUDY_DELAYS: &str =
    "320us,340us,360us,380us,400us,500us,600us,700us,800us,900us,1ms,2ms,5ms";

#[derive(Debug, Clone, Args)]
pub struct TimerArgs {
    /// Requested delays, comma-separated (a bare number is microseconds)
    /// [default: 320us,340us,...,900us,1ms,2ms,5ms: the study's 13]; each at most 1h.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = wait_us)]
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

    /// Adaptive and hybrid: the longest margin, and so the longest spin per wake (at most 1h)
    /// [default: 1ms].
    #[arg(long, value_name = "DURATION", value_parser = wait_us)]
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

    /// Service: the polling design's tick (at most 1h) [default: 100us].
    #[arg(long, value_name = "DURATION", value_parser = wait_us)]
    pub tick: Option<u64>,

    #[command(flatten)]
    pub loads: LoadArgs,

    #[command(flatten)]
    pub out: ResultArgs,
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
            run: self.loads.request(
                crate::experiment::timer::sweep_rt(
                    &self.policy,
                    self.priority,
                    self.no_rt,
                    self.default_system,
                )?,
                Outputs::from(&self.out),
            ),
        })
    }
}
