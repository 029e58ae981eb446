//! `rtscope cyclic` and `rtscope cyclictest`.

use super::*;

#[derive(Debug, Clone, Args)]
pub struct CyclictestArgs {
    /// cyclictest's options as cyclictest takes them (-h is its histogram; --help lists them).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        num_args = 0..,
        value_name = "CYCLICTEST OPTIONS"
    )]
    pub args: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct CyclicArgs {
    /// Number of measurement threads (default: one per CPU of --cpus, or per online CPU).
    #[arg(short = 't', long, value_parser = positive_usize)]
    pub threads: Option<usize>,

    /// CPUs to run measurement threads on, e.g. 0-3,6 (default: every online CPU).
    #[arg(short = 'a', long = "cpus", value_name = "LIST", value_parser = cpu_list)]
    pub cpus: Option<CpuList>,

    /// Period (ns, us, ms, s; a bare number is microseconds; at least 1us, at most 1h).
    #[arg(short = 'i', long, value_name = "DURATION", default_value = "1ms",
          value_parser = period_us, allow_hyphen_values = true)]
    pub period: u64,

    /// Added to the period of each further thread (thread n: period + n * distance; at most 1h).
    #[arg(long, value_name = "DURATION", default_value = "0", value_parser = wait_us_or_0,
          allow_hyphen_values = true)]
    pub distance: u64,

    /// Stop after this many wake-ups per thread.
    #[arg(short = 'l', long, value_parser = positive_u64)]
    pub loops: Option<u64>,

    /// Stop after this long (s, m, h, d; a bare number is seconds; at most 365d).
    #[arg(short = 'D', long, value_name = "DURATION", value_parser = run_duration,
          allow_hyphen_values = true)]
    pub duration: Option<u64>,

    /// First wake-up at now + this delay (at most 1h).
    #[arg(long, value_name = "DURATION", default_value = "1ms", value_parser = wait_us_or_0)]
    pub start_delay: u64,

    /// Drop the first N wake-ups of each thread (they count towards --loops).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub warmup: u64,

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

    /// With --policy deadline: CPU time each thread reserves per period (a bare
    /// number is microseconds; at most 1h) [default: 60% of the deadline, as cyclicdeadline].
    #[arg(long, value_name = "DURATION", value_parser = wait_us)]
    pub dl_runtime: Option<u64>,

    /// With --policy deadline: the relative deadline, at most the period (a bare
    /// number is microseconds; at most 1h) [default: the period].
    #[arg(long, value_name = "DURATION", value_parser = wait_us)]
    pub dl_deadline: Option<u64>,

    /// Keep the N worst samples with their timestamps.
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub spikes: usize,

    /// Write every sample as CSV (thread,cpu,seq,t_ns,latency_ns) to FILE.
    #[arg(long, value_name = "FILE")]
    pub raw: Option<PathBuf>,

    /// Write a cyclictest-format histogram (1 us bins, one column per thread) to FILE.
    #[arg(long, value_name = "FILE")]
    pub histogram: Option<PathBuf>,

    /// Range of the --histogram file (a bare number is microseconds; at most 1h).
    #[arg(long, value_name = "DURATION", default_value = "400us", value_parser = wait_us)]
    pub histogram_max: u64,

    /// Stop at the first sample above DURATION and record where it happened (at most 1h).
    #[arg(long, value_name = "DURATION", value_parser = wait_us)]
    pub break_above: Option<u64>,

    /// Run to the end, then exit with code 3 if any sample was above DURATION
    /// (the gate --fail-if 'all:max>DURATION', with its own fail line; at most 1h).
    #[arg(long, value_name = "DURATION", value_parser = wait_us)]
    pub fail_above: Option<u64>,

    /// Make N independent runs, one after the other, and pool them (each kept as a
    /// repetition, so that `compare` can use the spread between runs). At most 1000.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = repeat_count)]
    pub repeat: usize,

    /// Split every sample into stages (timer IRQ, wake-up, scheduling, return to
    /// user) with kernel trace events in a private tracefs instance, and check
    /// each sample against the kernel's bound; `--trace=auto` runs untraced
    /// where tracing is not possible.
    #[arg(long, value_name = "on|auto", num_args = 0..=1, require_equals = true,
          default_missing_value = "on", value_enum)]
    pub trace: Option<crate::experiment::cyclic_trace::TraceMode>,

    /// With tracing, keep what ran on the CPUs (IRQs, softirqs, tasks) from the
    /// arming of the timer to the wake-up for the worst samples above DURATION
    /// (up to --spikes; at most 1h); implies --trace.
    #[arg(long, value_name = "DURATION", value_parser = wait_us)]
    pub trace_outliers: Option<u64>,

    /// With --trace-outliers, also trace where interrupts are turned off and
    /// on (the `preemptirq` events of kernels built with
    /// CONFIG_PREEMPTIRQ_TRACEPOINTS, as the irqsoff tracer selects), so that
    /// interrupts off in the kernel are named as a cause; an event on every
    /// change: raise --trace-buffer. Where the kernel lacks them, a note says so.
    #[arg(long, requires = "trace_outliers")]
    pub trace_irqs_off: bool,

    /// Per-CPU trace buffer with --trace, KiB.
    #[arg(long = "trace-buffer", value_name = "KIB", default_value_t = 4096,
          value_parser = clap::value_parser!(u32).range(64..=1_048_576))]
    pub trace_buffer_kb: u32,

    #[command(flatten)]
    pub out: OutputArgs,

    #[command(flatten)]
    pub live: LiveArgs,

    #[command(flatten)]
    pub loads: LoadArgs,
}

impl CyclicArgs {
    /// The options these arguments ask for.
    pub fn options(&self) -> anyhow::Result<CyclicOptions> {
        Ok(CyclicOptions {
            threads: self.threads,
            cpus: self.cpus.clone(),
            period_ns: self.period,
            distance_ns: self.distance,
            loops: self.loops,
            duration_ns: self.duration,
            start_delay_ns: self.start_delay,
            warmup: self.warmup,
            clock: self.clock,
            wake: self.wake,
            run: self.loads.request(
                self.rt.choice_with_deadline()?,
                Outputs {
                    json: self.out.json.clone(),
                    report: self.out.report.clone(),
                    quiet: self.out.quiet,
                    repeat: self.repeat,
                    live: self.live.options(),
                    gates: self.out.gate.options(),
                },
            ),
            deadline: crate::experiment::cyclic::DeadlineAsk {
                runtime_ns: self.dl_runtime,
                deadline_ns: self.dl_deadline,
            },
            spikes: self.spikes,
            raw: self.raw.clone(),
            histogram: self.histogram.clone(),
            histogram_max_ns: self.histogram_max,
            break_above_ns: self.break_above,
            fail_above_ns: self.fail_above,
            checkpoint_ns: self.out.checkpoint,
            trace: match (self.trace, self.trace_outliers) {
                (Some(m), _) => m,
                (None, Some(_)) => crate::experiment::cyclic_trace::TraceMode::On,
                (None, None) => crate::experiment::cyclic_trace::TraceMode::Off,
            },
            trace_outliers_ns: self.trace_outliers,
            trace_buffer_kb: self.trace_buffer_kb,
            trace_irqs_off: self.trace_irqs_off,
            cyclictest: None,
        })
    }
}
