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
use rtscope_core::clock::probe::PeriodSummary;
use rtscope_core::clock::{delta, Counter, PeriodStats, Source, SourceInfo};
use rtscope_core::result::{now_rfc3339, EndReason, ResultDocument, Series, Tool, SCHEMA_VERSION};
use rtscope_core::rt::ThreadSetup;
use rtscope_core::sys;
use rtscope_core::system::SystemSnapshot;
use rtscope_core::units::format_ns;

use super::clock::{prepare_sources, requested_ids, resolve_cpu, Prepared};
use super::{check_output, command_line, resolve_rt, RtChoice, RunEnv};
use crate::cli::PeriodArgs;
use crate::output::summary::render;

/// Every setting of a period run (goes into the result document).
#[derive(Debug, Clone, Serialize)]
pub struct PeriodPlan {
    /// Background loads (`--load`) and their CPUs (`--load-cpus`).
    pub loads: Vec<crate::load::LoadSpec>,
    pub load_cpus: Option<Vec<usize>>,
    pub periods_ns: Vec<u64>,
    pub cycles: u64,
    pub requested_sources: Vec<String>,
    pub calibration_window_ns: u64,
    pub cpu: usize,
    pub rt: RtChoice,
    pub clock: &'static str,
    pub wake: &'static str,
    pub json: Option<std::path::PathBuf>,
    pub report: Option<std::path::PathBuf>,
    #[serde(skip)]
    pub quiet: bool,
}

/// Turns arguments into a validated plan.
pub fn plan(a: &PeriodArgs) -> Result<PeriodPlan> {
    let cpu = resolve_cpu(a.cpu)?;
    let rt = resolve_rt(&a.rt)?;
    if let Some(p) = &a.out.json {
        check_output("--json", p)?;
    }
    if let Some(p) = &a.out.report {
        check_output("--report", p)?;
    }
    let mut periods = a.period.clone();
    periods.dedup();
    for &p in &periods {
        crate::limits::check_period("-i/--period", p)?;
    }
    let k = match a.sources.len() {
        0 => rtscope_core::clock::SourceId::ALL.len(),
        n => n,
    } as u64;
    crate::limits::check_count("-l/--cycles", a.cycles, 8 * k * periods.len() as u64)?;
    crate::load::LoadSet::check(&a.loads.load, a.loads.load_cpus.as_deref())?;
    Ok(PeriodPlan {
        loads: a.loads.load.clone(),
        load_cpus: a.loads.load_cpus.clone(),
        periods_ns: periods,
        cycles: a.cycles,
        requested_sources: a.sources.clone(),
        calibration_window_ns: a.calibrate,
        cpu,
        rt,
        clock: "monotonic",
        wake: "absolute",
        json: a.out.json.clone(),
        report: a.out.report.clone(),
        quiet: a.out.quiet,
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
pub fn run(a: PeriodArgs) -> Result<i32> {
    let plan = plan(&a)?;
    let (doc, shown) = execute(&plan)?;
    Ok(super::finish_run(
        &doc,
        &report(&doc, &shown),
        plan.json.as_deref(),
        plan.report.as_deref(),
    ))
}

/// Measures and builds the result document.
/// Also returns the warnings already printed when the run started.
pub fn execute(plan: &PeriodPlan) -> Result<(ResultDocument, Vec<String>)> {
    let system = SystemSnapshot::capture();
    let env = RunEnv::setup(plan.rt.default_system)?;
    // Background loads (crate::load): started and ramped up before measuring,
    // stopped and reaped (also on errors, by their guard) after.
    let loads =
        crate::load::LoadSet::start_for_run(&plan.loads, plan.load_cpus.as_deref(), plan.quiet)?;
    let started_at = now_rfc3339();
    let start_clock = sys::clock_ns(libc::CLOCK_MONOTONIC);
    let ids = requested_ids(&plan.requested_sources);
    if !plan.quiet {
        eprintln!(
            "rtscope period: periods {}, {} cycles each, {} source{} asked, CPU {}, SCHED_{} {}, absolute sleeps on CLOCK_MONOTONIC",
            plan.periods_ns.iter().map(|&p| format_ns(p)).collect::<Vec<_>>().join(","),
            plan.cycles,
            ids.len(),
            if ids.len() == 1 { "" } else { "s" },
            plan.cpu,
            plan.rt.policy.name().to_uppercase(),
            plan.rt.priority
        );
        for w in system.warnings().iter().chain(env.notes.iter()) {
            eprintln!("warning: {w}");
        }
    }
    let shown: Vec<String> = if plan.quiet {
        vec![]
    } else {
        system
            .warnings()
            .into_iter()
            .chain(env.notes.iter().cloned())
            .collect()
    };
    let (ready, infos) = prepare_sources(
        &ids,
        plan.calibration_window_ns,
        0,
        &[],
        &env.stop,
        plan.quiet,
    );
    if ready.is_empty() {
        return Err(anyhow!("none of the requested sources is available here"));
    }
    let setup = ThreadSetup {
        policy: plan.rt.policy,
        priority: plan.rt.priority,
        cpus: vec![plan.cpu],
        timer_slack_ns: (!plan.rt.default_system).then_some(1),
        prefault_stack: 128 * 1024,
        block_signals: vec![libc::SIGINT, libc::SIGTERM],
    };
    let stop: &AtomicBool = &env.stop;
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
    let now = sys::clock_ns(libc::CLOCK_MONOTONIC);

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
    let mut warnings = super::run_warnings(&system, &env, &plan.rt);
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
    let mut plan_json = serde_json::to_value(plan).unwrap_or_default();
    if let Some(o) = plan_json.as_object_mut() {
        let infos: Vec<&SourceInfo> = infos.iter().collect();
        o.insert("sources".into(), json!(infos));
        o.insert("thread".into(), json!(state));
        o.insert("mlocked".into(), json!(env.mlocked));
        o.insert("cpu_dma_latency_held".into(), json!(env.dma_latency_held));
    }
    let load_reports = loads.stop();
    let mut doc = ResultDocument {
        schema_version: SCHEMA_VERSION,
        tool: Tool::default(),
        experiment: "period".into(),
        command_line: command_line(),
        started_at,
        ended_at: now_rfc3339(),
        start_clock_ns: start_clock,
        duration_ns: now.saturating_sub(start_clock),
        end_reason: if interrupted {
            EndReason::Interrupted
        } else {
            EndReason::Loops
        },
        plan: plan_json,
        system,
        series,
        loads: vec![],
        break_event: None,
        threshold: None,
        warnings,
    };
    crate::load::attach(&mut doc, &load_reports);
    Ok((doc, shown))
}

/// The per-source, per-period table of a period document (also for documents
/// written by `PeriodProbe`).
pub fn report(doc: &ResultDocument, already_shown: &[String]) -> String {
    let mut rows = vec![vec![
        "source".to_string(),
        "period".into(),
        "periods".into(),
        "mean".into(),
        "error".into(),
        "jitter min".into(),
        "jitter max".into(),
        "stddev".into(),
        "|jitter| p99".into(),
    ]];
    for s in &doc.series {
        let sum: PeriodSummary = s
            .attributes
            .get("period")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        rows.push(vec![
            s.attributes
                .get("source")
                .and_then(|v| v.as_str())
                .unwrap_or(&s.label)
                .to_string(),
            format_ns(sum.requested_ns),
            sum.periods.to_string(),
            format!("{:.1}", sum.mean_period_ns),
            format!("{:+.1}", sum.error_ns),
            format!("{:+.1}", sum.jitter_min_ns),
            format!("{:+.1}", sum.jitter_max_ns),
            format!("{:.1}", sum.jitter_stddev_ns),
            sum.abs_jitter_p99_ns.to_string(),
        ]);
    }
    let mut out = String::from("\nobserved loop period, ns (error = mean - requested):\n");
    out.push_str(&render(&rows));
    for w in doc.warnings.iter().filter(|w| !already_shown.contains(w)) {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}
