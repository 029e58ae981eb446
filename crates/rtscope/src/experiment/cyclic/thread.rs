//! A measurement thread: its job, its loop (the hot path: wait, read the
//! clock, push the sample), and the recorders its samples go to.

use super::*;

/// What a measurement thread needs.
pub(super) struct ThreadJob {
    pub(super) setup: ThreadSetup,
    pub(super) period_ns: u64,
    pub(super) wake: WakeMethod,
    pub(super) clock: ClockId,
    pub(super) loops: Option<u64>,
    /// The run's duration: the thread ends by itself this long after the start.
    pub(super) duration_ns: Option<u64>,
    pub(super) warmup: u64,
    pub(super) break_above_ns: Option<u64>,
    pub(super) sink: RingSink,
    pub(super) stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub(super) ready: mpsc::Sender<(usize, Result<ReadyThread, String>)>,
    pub(super) start: mpsc::Receiver<Option<u64>>,
    pub(super) index: usize,
    /// With `--policy deadline`: the thread's parameters and counters.
    pub(super) deadline: Option<(DeadlineParams, std::sync::Arc<GridCounters>)>,
}

pub(super) fn measure_thread(mut job: ThreadJob) -> Option<LoopEnd> {
    // Opened by this thread: /proc/thread-self is the opener's.
    let sched = job.deadline.as_ref().and_then(|_| SchedFile::open());
    let state = job
        .setup
        .apply()
        .map_err(|e| e.to_string())
        .and_then(|st| match &job.deadline {
            Some((p, _)) => enter_deadline(st, p, sched.as_ref()),
            None => Ok((st, None)),
        })
        .and_then(|st| {
            rtscope_core::rt::accept_wake()
                .map(|_| st)
                .map_err(|e| format!("cannot make the wait interruptible: {e}"))
        });
    let calibration = state
        .as_ref()
        .ok()
        .and_then(|(_, d)| d.and_then(|d| d.calibration));
    let ok = state.is_ok();
    let _ = job.ready.send((job.index, state));
    if !ok {
        return None;
    }
    let start = job.start.recv().ok().flatten()?;
    let cfg = LoopConfig {
        period_ns: job.period_ns,
        start_ns: start,
        start_margin_ns: START_MARGIN_NS,
        warmup: job.warmup,
        loops: job.loops,
        end_ns: end_time(start, job.duration_ns),
        break_above_ns: job.break_above_ns,
        fixed_cpu: match job.setup.cpus.as_slice() {
            [c] => Some(*c as u32),
            _ => None,
        },
    };
    let clock = PosixClock(job.clock);
    let (sink, stop) = (&mut job.sink, &*job.stop);
    if let Some((params, counters)) = &job.deadline {
        // Measured on the raw clock (see rtscope_core::deadline), times
        // moved to the run's clock.
        let offset_ns = DEADLINE_CLOCK.now() as i64 - clock.now() as i64;
        let end = run_deadline_loop(
            &mut SchedDeadline {
                clock: job.clock,
                sched,
            },
            &DEADLINE_CLOCK,
            sink,
            &cfg,
            &DeadlineConfig {
                deadline_ns: params.deadline_ns,
                offset_ns,
                calibration,
            },
            counters,
            stop,
        );
        // Back to a normal thread, so that nothing after the loop waits
        // for a period.
        let _ = sys::set_scheduler(libc::SCHED_OTHER, 0);
        return Some(end);
    }
    Some(match job.wake {
        WakeMethod::Absolute => run_loop(
            &mut AbsoluteSleep { clock: job.clock },
            &clock,
            sink,
            &cfg,
            stop,
        ),
        WakeMethod::Relative => run_loop(
            &mut RelativeSleep::new(job.clock, job.period_ns, false),
            &clock,
            sink,
            &cfg,
            stop,
        ),
        WakeMethod::Nanosleep => run_loop(
            &mut RelativeSleep::new(job.clock, job.period_ns, true),
            &clock,
            sink,
            &cfg,
            stop,
        ),
        WakeMethod::Timerfd => run_loop(
            &mut TimerfdWait::new(job.clock, job.period_ns),
            &clock,
            sink,
            &cfg,
            stop,
        ),
        WakeMethod::PosixTimer => run_loop(
            &mut PosixTimerWait::new(job.clock, job.period_ns),
            &clock,
            sink,
            &cfg,
            stop,
        ),
    })
}

/// A thread's recorder: its samples, and its intended periods (the missed
/// ones counted at their lateness, see `SeriesRecorder::over_intended_periods`).
/// Periods due at or after the run's end (`end_ns`: the threads' common
/// end time, [`end_time`]) were never due: a wake-up past the end skipped
/// only those before it.
pub(super) fn thread_recorder(
    tp: &ThreadPlan,
    origin: u64,
    end_ns: Option<u64>,
    spikes: usize,
    threshold: Option<u64>,
) -> SeriesRecorder {
    SeriesRecorder::new(origin, spikes, threshold)
        .ending_at(end_ns)
        .over_intended_periods(tp.period_ns)
}

/// The union's recorder (`all`): the threads' periods may differ, so each
/// sample is recorded with its own thread's period.
pub(super) fn union_recorder(
    origin: u64,
    end_ns: Option<u64>,
    spikes: usize,
    threshold: Option<u64>,
) -> SeriesRecorder {
    SeriesRecorder::new(origin, spikes, threshold)
        .ending_at(end_ns)
        .over_intended_periods(0)
}

/// What a measurement thread sets up. `rtscope cyclictest` leaves the timer
/// slack alone, as cyclictest does (50 µs by default, which SCHED_OTHER
/// threads wait with; real-time threads have none).
pub(super) fn thread_setup(plan: &CyclicPlan, tp: &ThreadPlan, block: Vec<i32>) -> ThreadSetup {
    let mut setup = plan.run.rt.thread_setup(tp.cpus.clone(), block);
    if plan.cyclictest.is_some() {
        setup.timer_slack_ns = None;
    }
    setup
}

/// A thread's 1 µs bins, when a histogram is asked for: up to
/// `--histogram-max`; the first 20 overflows' sample numbers are kept (as
/// many as there are bins for `rtscope cyclictest`, as cyclictest keeps).
pub(super) fn us_bins(plan: &CyclicPlan) -> Option<MicrosecondBins> {
    let n = (plan.histogram_max_ns / 1000) as usize;
    match &plan.cyclictest {
        Some(c) if c.histogram => Some(MicrosecondBins::new(n, n)),
        _ => plan.histogram.as_ref().map(|_| MicrosecondBins::new(n, 20)),
    }
}
