//! `rtscope period`: a periodic loop (absolute sleeps on CLOCK_MONOTONIC,
//! SCHED_FIFO by default) timestamps every cycle with each selected source and
//! reports, per source and period, the mean observed period, its error against
//! the requested period and the jitter distribution.
//!
//! The sources are read right after each wake-up, the order rotated by one
//! every cycle so that no source is always first. The timestamps go into a
//! buffer allocated and touched before the loop; the periods are computed
//! after it ([`PeriodStats`]), in the sources' own counts and then in ns.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use anyhow::{anyhow, Result};
use serde::Serialize;
use serde_json::json;

use rtscope_core::clock::measure::touched_buffer;
use rtscope_core::clock::{delta, Counter, PeriodStats, Source, SourceInfo};
use rtscope_core::result::{EndReason, Series};
use rtscope_core::sys;
use rtscope_core::units::format_ns;

use super::clock::{prepare_sources, requested_ids, resolve_cpu, Prepared};
use super::run::{self, Finished, RunRequest};

/// Every setting of a period run (goes into the result document).
#[derive(Debug, Clone, Serialize)]
pub struct PeriodPlan {
    /// The real-time choice, the loads and the outputs (`run.rs`).
    #[serde(flatten)]
    pub run: RunRequest,
    pub periods_ns: Vec<u64>,
    pub cycles: u64,
    pub requested_sources: Vec<String>,
    pub calibration_window_ns: u64,
    pub cpu: usize,
    pub clock: &'static str,
    pub wake: &'static str,
}

/// What a period run is asked to do: plain settings, filled in by `cli.rs`
/// (or by code), validated by [`plan`].
#[derive(Debug, Clone)]
pub struct PeriodOptions {
    pub periods_ns: Vec<u64>,
    pub cycles: u64,
    /// Source names (empty: all).
    pub sources: Vec<String>,
    pub calibrate_ns: u64,
    /// `None`: the last online CPU.
    pub cpu: Option<usize>,
    /// The real-time choice, the loads and the outputs (`run.rs`).
    pub run: RunRequest,
}

/// Turns options into a validated plan (bad input: a usage error, exit 2).
pub fn plan(a: &PeriodOptions) -> Result<PeriodPlan> {
    let cpu = resolve_cpu(a.cpu)?;
    a.run.check(&[])?;
    let mut periods = a.periods_ns.clone();
    periods.dedup();
    for &p in &periods {
        crate::limits::check_period("-i/--period", p)?;
    }
    let k = match a.sources.len() {
        0 => rtscope_core::clock::SourceId::ALL.len(),
        n => n,
    } as u64;
    crate::limits::check_count("-l/--cycles", a.cycles, 8 * k * periods.len() as u64)?;
    Ok(PeriodPlan {
        run: a.run.clone(),
        periods_ns: periods,
        cycles: a.cycles,
        requested_sources: a.sources.clone(),
        calibration_window_ns: a.calibrate_ns,
        cpu,
        clock: "monotonic",
        wake: "absolute",
    })
}

/// The timestamps of one period's run: `ts[cycle * k + source]`.
struct Run {
    period_ns: u64,
    cycles: usize,
    ts: Vec<u64>,
    overruns: u64,
}

/// The loop itself: sleep to the absolute deadline, read every source
/// (rotated), advance. Returns the number of complete cycles and of late
/// wake-ups (after the following deadline).
fn periodic_loop(
    sources: &[Source],
    period_ns: u64,
    ts: &mut [u64],
    stop: &AtomicBool,
) -> Result<(usize, u64), String> {
    let k = sources.len();
    let cycles = ts.len() / k;
    let mut next = sys::clock_ns(libc::CLOCK_MONOTONIC) + period_ns.max(1_000_000);
    let mut overruns = 0;
    for c in 0..cycles {
        if stop.load(Ordering::Relaxed) {
            return Ok((c, overruns));
        }
        // Interrupted (rt::wake_thread): stop if asked to, else sleep on.
        while !sys::sleep_until_interruptible(libc::CLOCK_MONOTONIC, next)
            .map_err(|e| e.to_string())?
        {
            if stop.load(Ordering::Relaxed) {
                return Ok((c, overruns));
            }
        }
        let row = &mut ts[c * k..(c + 1) * k];
        for j in 0..k {
            let s = (c + j) % k;
            row[s] = sources[s].read();
        }
        // A strict grid: after a late wake-up the loop catches up (the next
        // sleeps return at once), as an absolute-time control loop does, so the
        // mean period over the run stays comparable between sources and runs.
        next += period_ns;
        if sys::clock_ns(libc::CLOCK_MONOTONIC) > next {
            overruns += 1;
        }
    }
    Ok((cycles, overruns))
}

/// Runs the experiment from the command line.
pub fn run(a: &PeriodOptions) -> Result<i32> {
    let plan = plan(a)?;
    let f = super::repeat::finished(&plan.run.outputs, || execute(&plan))?;
    let mut summary = crate::output::period::report(&f.doc, &f.shown);
    summary.push_str(&super::repeat::note(&f.doc, plan.run.outputs.repeat));
    Ok(run::deliver(&f.doc, &plan.run.outputs, vec![], &summary))
}

/// Measures and builds the result document.
pub fn execute(plan: &PeriodPlan) -> Result<Finished> {
    let ids = requested_ids(&plan.requested_sources);
    let header = format!(
        "rtscope period: periods {}, {} cycles each, {} source{} asked, CPU {}, SCHED_{} {}, absolute sleeps on CLOCK_MONOTONIC",
        plan.periods_ns.iter().map(|&p| format_ns(p)).collect::<Vec<_>>().join(","),
        plan.cycles,
        ids.len(),
        if ids.len() == 1 { "" } else { "s" },
        plan.cpu,
        plan.run.rt.policy.name().to_uppercase(),
        plan.run.rt.priority
    );
    let run = run::begin(&plan.run.settings(), &header)?;
    let (ready, infos) = prepare_sources(
        &ids,
        plan.calibration_window_ns,
        0,
        &[],
        run.stop(),
        plan.run.outputs.quiet,
    );
    if ready.is_empty() {
        return Err(anyhow!("none of the requested sources is available here"));
    }
    let setup = plan
        .run
        .rt
        .thread_setup(vec![plan.cpu], run::STOP_SIGNALS.to_vec());
    let stop: &AtomicBool = run.stop();
    let ready_ref: &[Prepared] = &ready;
    let tid = &AtomicI32::new(0);
    let res = std::thread::scope(|s| {
        let h = std::thread::Builder::new()
            .name("rtscope-period".into())
            .spawn_scoped(
                s,
                move || -> Result<(rtscope_core::rt::ThreadState, Vec<Run>), String> {
                    let state = setup.apply().map_err(|e| e.to_string())?;
                    let me = rtscope_core::rt::accept_wake()
                        .map_err(|e| format!("cannot make the wait interruptible: {e}"))?;
                    tid.store(me, Ordering::Relaxed);
                    let sources: Vec<Source> = ready_ref
                        .iter()
                        .map(|p| Source::open(p.id).map_err(|e| e.to_string()))
                        .collect::<Result<_, _>>()?;
                    let k = sources.len();
                    let mut runs = Vec::new();
                    for &period in &plan.periods_ns {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let mut ts = touched_buffer(plan.cycles as usize * k);
                        let (cycles, overruns) = periodic_loop(&sources, period, &mut ts, stop)?;
                        runs.push(Run {
                            period_ns: period,
                            cycles,
                            ts,
                            overruns,
                        });
                    }
                    Ok((state, runs))
                },
            );
        match h {
            Ok(h) => {
                // A stop interrupts the thread's sleep (a long period would hold it).
                while !h.is_finished() && !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                rtscope_core::rt::wake_until_ended(&[tid.load(Ordering::Relaxed)], |_| {
                    !h.is_finished()
                });
                h
            }
            .join()
            .unwrap_or_else(|_| Err("the measurement thread panicked".into())),
            Err(e) => Err(format!("cannot start the measurement thread: {e}")),
        }
    });
    let (state, runs) = res.map_err(|e| anyhow!(e))?;
    let k = ready.len();
    let mut series: Vec<Series> = Vec::new();
    let mut total_overruns = 0;
    for run in &runs {
        total_overruns += run.overruns;
        for (j, p) in ready.iter().enumerate() {
            let w = p.id.width_bits();
            let mut st = PeriodStats::new(run.period_ns, p.scale, 16);
            let first = run.ts[j];
            for c in 1..run.cycles {
                let prev = run.ts[(c - 1) * k + j];
                let cur = run.ts[c * k + j];
                let t = p.scale.to_ns(delta(first, cur, w).max(0) as u64);
                st.push((c - 1) as u64, t, delta(prev, cur, w));
            }
            let mut s = st.to_series(&format!("{} {}", p.id.name(), format_ns(run.period_ns)));
            let a = &mut s.attributes;
            a.insert("source".into(), json!(p.id.name()));
            a.insert("monotonic".into(), json!(p.id.monotonic()));
            a.insert("cycles".into(), json!(run.cycles));
            a.insert("overruns".into(), json!(run.overruns));
            if let Some(info) = infos.iter().find(|i| i.name == p.id.name()) {
                if let Some(r) = info.resolution_ns {
                    a.insert("resolution_ns".into(), json!(r));
                }
            }
            s.counters.overruns = run.overruns;
            series.push(s);
        }
    }
    let mut warnings = Vec::new();
    if total_overruns > 0 {
        warnings.push(format!(
            "{total_overruns} wake-ups came after the following deadline (the loop caught up on its grid)"
        ));
    }
    if k > 1 {
        warnings.push(
            "several sources per cycle: each source's jitter includes the read cost of the sources read before it (the order rotates); use --source NAME for one source alone".into(),
        );
    }
    let interrupted = stop.load(Ordering::Relaxed);
    let infos: Vec<&SourceInfo> = infos.iter().collect();
    let plan_doc = Documented {
        plan,
        sources: infos,
        thread: &state,
    };
    let end = if interrupted {
        EndReason::Interrupted
    } else {
        EndReason::Loops
    };
    Ok(run.finish("period", &plan_doc, series, end, warnings))
}

/// The plan as the document records it: with the sources as found and the
/// measurement thread as set up.
#[derive(Serialize)]
struct Documented<'a> {
    #[serde(flatten)]
    plan: &'a PeriodPlan,
    sources: Vec<&'a SourceInfo>,
    thread: &'a rtscope_core::rt::ThreadState,
}
