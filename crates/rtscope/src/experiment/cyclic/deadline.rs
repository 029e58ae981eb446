//! `--policy deadline`: the options a deadline run cannot honour, each
//! thread's SCHED_DEADLINE parameters checked as admission control would, and
//! a measurement thread's entry into the policy.

use super::*;

/// Refuses what a deadline run cannot honour, and the deadline options
/// without `--policy deadline`.
pub(super) fn check_deadline_options(a: &CyclicOptions) -> Result<()> {
    if a.run.rt.policy != Policy::Deadline {
        return match (a.deadline.runtime_ns, a.deadline.deadline_ns) {
            (Some(_), _) => Err(usage("--dl-runtime is for --policy deadline")),
            (None, Some(_)) => Err(usage("--dl-deadline is for --policy deadline")),
            (None, None) => Ok(()),
        };
    }
    if a.cpus.is_some() {
        return Err(usage(
            "--cpus: a deadline task cannot be pinned (the kernel admits it only where it may run \
             on every CPU of its root domain, and refuses a narrower affinity with EBUSY): leave \
             --cpus out and the scheduler places the threads, or make those CPUs an exclusive \
             cpuset partition and run rtscope inside it",
        ));
    }
    if a.wake != WakeMethod::Absolute {
        return Err(usage(format!(
            "--wake {}: a deadline thread waits on no timer of its own (the scheduler releases it \
             each period, sched_yield ends its job): leave --wake out",
            a.wake
        )));
    }
    if a.clock != MeasureClock::Monotonic {
        return Err(usage(format!(
            "--clock {}: a deadline run measures on CLOCK_MONOTONIC_RAW, as the scheduler's \
             periods do not follow the wall clock: leave --clock out",
            a.clock
        )));
    }
    if a.trace != crate::experiment::cyclic_trace::TraceMode::Off || a.trace_outliers_ns.is_some() {
        return Err(usage(
            "--trace: the stages are a timer's (expiry, wake-up), and a deadline task is released \
             by the scheduler's replenishment: trace a fifo run instead",
        ));
    }
    Ok(())
}

/// Each thread's SCHED_DEADLINE parameters: the asked runtime and deadline
/// or their defaults, its period; checked as the kernel would, and together
/// against the share of the CPUs deadline tasks may reserve (`limit`, on
/// `cpus` CPUs).
pub(super) fn deadline_params(
    ask: &DeadlineAsk,
    periods: &[u64],
    cpus: usize,
    limits: &PeriodLimits,
    limit: Option<BandwidthLimit>,
) -> Result<Vec<DeadlineParams>> {
    let mut out = Vec::with_capacity(periods.len());
    for &period_ns in periods {
        let deadline_ns = ask.deadline_ns.unwrap_or(period_ns);
        let p = DeadlineParams {
            runtime_ns: ask.runtime_ns.unwrap_or_else(|| {
                DeadlineParams::default_runtime(deadline_ns, periods.len(), cpus)
            }),
            deadline_ns,
            period_ns,
        };
        if let Err(e) = p.check(limits) {
            let rule = "SCHED_DEADLINE needs runtime <= deadline <= period";
            return Err(usage(match e {
                ParamError::RuntimeTooShort => {
                    format!("--dl-runtime {}: {e}", format_ns(p.runtime_ns))
                }
                ParamError::RuntimeAboveDeadline => format!(
                    "--dl-runtime {} is longer than the deadline {}: {rule}",
                    format_ns(p.runtime_ns),
                    format_ns(p.deadline_ns)
                ),
                ParamError::DeadlineAbovePeriod => format!(
                    "--dl-deadline {} is longer than the period {}: {rule}",
                    format_ns(p.deadline_ns),
                    format_ns(p.period_ns)
                ),
                ParamError::PeriodTooShort(_) | ParamError::PeriodTooLong(_) => format!(
                    "--period {}: with --policy deadline {e}",
                    format_ns(p.period_ns)
                ),
            }));
        }
        out.push(p);
    }
    if let Some(l) = limit.filter(|l| !l.admits(&out, cpus)) {
        let total: f64 = out.iter().map(DeadlineParams::percent).sum();
        let server = l.reserved.map_or(String::new(), |r| {
            format!(
                ", less the fair-class server's {:.0}% of each{}",
                r.percent(),
                if r.assumed {
                    " (the kernel's default: /sys/kernel/debug/sched/fair_server is not readable)"
                } else {
                    ""
                }
            )
        });
        return Err(usage(format!(
            "the {} deadline threads would reserve {total:.1}% of a CPU, more than the {:.0}% \
             deadline tasks may have on {cpus} CPUs ({:.0}% of each, kernel.sched_rt_runtime_us\
             {server}): lower --dl-runtime, lengthen the period or run fewer threads (-t)",
            out.len(),
            l.free_percent() * cpus as f64,
            l.percent()
        )));
    }
    Ok(out)
}

/// What a deadline thread's set-up gives: the parameters the kernel holds,
/// and its clock against the measuring clock where it can be read.
#[derive(Debug, Clone, Copy)]
pub(super) struct DeadlineReady {
    pub(super) granted: DeadlineParams,
    pub(super) calibration: Option<Calibration>,
}

/// A thread ready to measure: what is in force, and with `--policy
/// deadline` what the kernel holds.
pub(super) type ReadyThread = (ThreadState, Option<DeadlineReady>);

/// The clock a deadline thread measures on (see [`rtscope_core::deadline`]).
pub(super) const DEADLINE_CLOCK: PosixClock = PosixClock(libc::CLOCK_MONOTONIC_RAW);

/// A deadline thread's set-up, after the rest of it: it becomes a deadline
/// task, and stays one to the end (a thread that left SCHED_DEADLINE while
/// throttled and came back was seen stuck for good: it never does), so that
/// the kernel admits the run's threads together and a refusal, explained,
/// comes before anything is measured. `sched` is its own
/// `/proc/thread-self/sched`.
pub(super) fn enter_deadline(
    mut st: ThreadState,
    p: &DeadlineParams,
    sched: Option<&SchedFile>,
) -> Result<ReadyThread, String> {
    let (granted, calibration) = p
        .apply_calibrated(&DEADLINE_CLOCK, sched)
        .map_err(|e| e.to_string())?;
    st.policy = Policy::Deadline.name().to_string();
    st.priority = 0;
    Ok((
        st,
        Some(DeadlineReady {
            granted,
            calibration,
        }),
    ))
}
