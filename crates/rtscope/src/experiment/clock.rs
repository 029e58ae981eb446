//! `rtscope clock`: what reading each time source costs.
//!
//! The main thread opens every source (reporting the unavailable ones),
//! calibrates the counters against CLOCK_MONOTONIC_RAW and runs the cross-CPU
//! warp test. One measurement thread, with the requested real-time setup and
//! pinned to one CPU, then reads the sources:
//!
//! - `consecutive`: N back-to-back reads per source into a pre-touched buffer
//!   (generic loop per counter type, read inlined) -> N-1 deltas;
//! - `sparse` / `alternating`: sleep, then two back-to-back reads of every
//!   source (the order rotated at each wake-up so no source is always first),
//!   the gaps being one interval or alternating between several.
//!
//! Each source's deltas become one series (`<source> <mode>`) in the result
//! document; calibration and warp results go into `plan.sources`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{anyhow, Result};
use serde::Serialize;
use serde_json::json;

use rtscope_core::clock::measure::{
    deltas_into, run_sparse, series_from_deltas, source_consecutive, source_pair, summarize,
    touched_buffer, worst, SparseOutcome, SystemSleeper,
};
use rtscope_core::clock::{
    calibrate, delta, warp, Calibration, Scale, Source, SourceId, SourceInfo,
};
use rtscope_core::result::{EndReason, Series};
use rtscope_core::rt::ThreadState;
use rtscope_core::sys;
use rtscope_core::units::{format_cpu_list, format_ns, online_cpus};

use super::run::{self, Finished, RunRequest};
use crate::error::{usage, EXIT_OK};
use crate::output::progress::Progress;
use crate::output::say;
use crate::output::summary::render;

/// How the sources are read (the doc lines are the CLI's help for each value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// N back-to-back reads: the read cost, warm
    Consecutive,
    /// two back-to-back reads every interval (--every): the cold path
    Sparse,
    /// like sparse, the gaps alternating between the --every values: colder still
    Alternating,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Consecutive => "consecutive",
            Mode::Sparse => "sparse",
            Mode::Alternating => "alternating",
        }
    }
}

/// Every setting of a clock run (goes into the result document).
#[derive(Debug, Clone, Serialize)]
pub struct ClockPlan {
    /// The real-time choice, the loads and the outputs (`run.rs`).
    #[serde(flatten)]
    pub run: RunRequest,
    pub mode: Mode,
    /// Consecutive: reads per source.
    pub reads: u64,
    /// Sparse modes: the gaps, ns.
    pub every_ns: Vec<u64>,
    /// Sparse modes: wake-ups.
    pub pairs: usize,
    /// Sources asked for (empty: all).
    pub requested_sources: Vec<String>,
    pub calibration_window_ns: u64,
    pub warp_window_ns: u64,
    pub cpu: usize,
}

/// What a clock run is asked to do: plain settings, filled in by `cli.rs` (or
/// by code), validated by [`plan`].
#[derive(Debug, Clone)]
pub struct ClockOptions {
    pub mode: Mode,
    /// Consecutive: reads per source.
    pub reads: u64,
    /// Sparse modes: the gaps, ns (empty: the mode's default).
    pub every_ns: Vec<u64>,
    /// Sparse modes: wake-ups.
    pub pairs: usize,
    /// Source names (empty: all).
    pub sources: Vec<String>,
    pub calibrate_ns: u64,
    pub warp_ns: u64,
    /// `None`: the last online CPU.
    pub cpu: Option<usize>,
    /// The real-time choice, the loads and the outputs (`run.rs`).
    pub run: RunRequest,
}

/// Turns options into a validated plan (bad input: a usage error, exit 2).
pub fn plan(a: &ClockOptions) -> Result<ClockPlan> {
    let mode = a.mode;
    let every_ns = match (mode, a.every_ns.len()) {
        (Mode::Consecutive, 0) => vec![],
        (Mode::Consecutive, _) => {
            return Err(usage(
                "--every applies to --mode sparse and --mode alternating",
            ))
        }
        (Mode::Sparse, 0) => vec![1_000_000_000],
        (Mode::Sparse, 1) => a.every_ns.clone(),
        (Mode::Sparse, _) => {
            return Err(usage(
                "--mode sparse takes one --every interval (use --mode alternating for several)",
            ))
        }
        (Mode::Alternating, 0) => vec![1_000_000_000, 5_000_000_000],
        (Mode::Alternating, 1) => {
            return Err(usage(
                "--mode alternating needs at least two --every values, e.g. --every 1s,5s",
            ))
        }
        (Mode::Alternating, _) => a.every_ns.clone(),
    };
    for &e in &every_ns {
        crate::limits::check_period("--every", e)?;
    }
    let k = match a.sources.len() {
        0 => SourceId::ALL.len(),
        n => n,
    } as u64;
    // Consecutive: readings and deltas, 8 B each per read; sparse: a delta per
    // source and a wake-up time per pair.
    crate::limits::check_count("-n/--reads", a.reads, 16)?;
    crate::limits::check_count("--pairs", a.pairs as u64, 8 * (k + 1))?;
    let cpu = resolve_cpu(a.cpu)?;
    a.run.check(&[])?;
    Ok(ClockPlan {
        run: a.run.clone(),
        mode,
        reads: a.reads,
        every_ns,
        pairs: a.pairs,
        requested_sources: a.sources.clone(),
        calibration_window_ns: a.calibrate_ns,
        warp_window_ns: a.warp_ns,
        cpu,
    })
}

/// `--cpu`, checked against the online CPUs (default: the last one).
pub fn resolve_cpu(cpu: Option<usize>) -> Result<usize> {
    let online = online_cpus();
    match cpu {
        Some(c) if online.contains(&c) => Ok(c),
        Some(c) => Err(usage(format!(
            "--cpu: CPU {c} is not online (online CPUs: {})",
            format_cpu_list(&online)
        ))),
        None => Ok(online.last().copied().unwrap_or(0)),
    }
}

/// The sources named on the command line (deduplicated, in the order of
/// [`SourceId::ALL`]), or all of them.
pub fn requested_ids(names: &[String]) -> Vec<SourceId> {
    SourceId::ALL
        .into_iter()
        .filter(|id| names.is_empty() || names.iter().any(|n| n == id.name()))
        .collect()
}

/// A source ready to measure: its id, its scale and what the report says about it.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub id: SourceId,
    pub scale: Scale,
}

/// The counter hardware behind a source: sources that read the same counter
/// share one calibration.
fn counter_family(id: SourceId) -> SourceId {
    match id {
        SourceId::Rdtscp | SourceId::LfenceTsc => SourceId::Tsc,
        other => other,
    }
}

/// Opens the requested sources, calibrates the counters (once per counter
/// hardware) and, if `warp_ns > 0`, runs the warp test on `warp_cpus`.
/// Returns the usable sources and the report entry of every requested one.
pub fn prepare_sources(
    ids: &[SourceId],
    calibration_ns: u64,
    warp_ns: u64,
    warp_cpus: &[usize],
    stop: &AtomicBool,
    quiet: bool,
) -> (Vec<Prepared>, Vec<SourceInfo>) {
    let mut ready = Vec::new();
    let mut infos = Vec::new();
    let mut cals: Vec<(SourceId, Calibration)> = Vec::new();
    for &id in ids {
        let src = match Source::open(id) {
            Ok(s) => s,
            Err(u) => {
                infos.push(SourceInfo::unavailable(&u, id));
                continue;
            }
        };
        let (scale, cal) = if id.is_counter() && !stop.load(Ordering::Relaxed) {
            let fam = counter_family(id);
            let cal = match cals.iter().find(|(f, _)| *f == fam) {
                Some((_, c)) => c.clone(),
                None => {
                    if !quiet {
                        eprintln!(
                            "calibrating {} against monotonic-raw over {} ...",
                            fam.name(),
                            format_ns(calibration_ns)
                        );
                    }
                    let c = calibrate::calibrate_source_until(&src, calibration_ns, stop);
                    cals.push((fam, c.clone()));
                    c
                }
            };
            (Scale::from_hz(cal.hz), Some(cal))
        } else {
            (Scale::ns(), None)
        };
        let mut info = SourceInfo::available(&src, scale, cal);
        if warp_ns > 0 && !stop.load(Ordering::Relaxed) {
            info.warp = Some(warp::warp_source_until(
                &src, scale, warp_cpus, warp_ns, stop,
            ));
        }
        infos.push(info);
        ready.push(Prepared { id, scale });
    }
    (ready, infos)
}

/// What the measurement thread hands back.
struct ThreadOut {
    state: ThreadState,
    measured: Vec<Series>,
    sparse: Option<SparseOutcome>,
    interrupted: bool,
}

fn label(id: SourceId, mode: Mode) -> String {
    format!("{} {}", id.name(), mode.name())
}

fn base_series(
    id: SourceId,
    mode: Mode,
    deltas: &mut [i64],
    spikes: &[(usize, i64, u64)],
    scale: &Scale,
) -> Series {
    let summary = summarize(deltas, scale);
    let mut s = series_from_deltas(&label(id, mode), deltas, scale, &summary, spikes);
    let a = &mut s.attributes;
    a.insert("source".into(), json!(id.name()));
    a.insert("mode".into(), json!(mode.name()));
    a.insert("monotonic".into(), json!(id.monotonic()));
    a.insert("unit".into(), json!(id.unit()));
    a.insert("width_bits".into(), json!(id.width_bits()));
    if id.is_counter() {
        a.insert("frequency_hz".into(), json!(scale.hz));
        a.insert("resolution_ns".into(), json!(scale.ns_per_tick()));
    } else if let Some(r) = id.clock_id().and_then(|c| sys::clock_res_ns(c).ok()) {
        let r = if id == SourceId::Gettimeofday {
            1000
        } else {
            r
        };
        a.insert("resolution_ns".into(), json!(r));
    }
    s
}

fn measure_consecutive(plan: &ClockPlan, sources: &[Prepared], stop: &AtomicBool) -> Vec<Series> {
    let n = plan.reads as usize;
    let mut ts = touched_buffer(n);
    let mut deltas: Vec<i64> = Vec::with_capacity(n);
    let mut out = Vec::new();
    for p in sources {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let Ok(src) = Source::open(p.id) else {
            continue;
        };
        // Warm up: code, vDSO data and branch predictors.
        let warm = n.min(10_000);
        source_consecutive(&src, &mut ts[..warm]);
        let r0 = sys::clock_ns(libc::CLOCK_MONOTONIC_RAW);
        source_consecutive(&src, &mut ts);
        let r1 = sys::clock_ns(libc::CLOCK_MONOTONIC_RAW);
        let w = p.id.width_bits();
        deltas_into(&ts, w, &mut deltas);
        let spikes: Vec<(usize, i64, u64)> = worst(&deltas, 10)
            .into_iter()
            .map(|(i, d)| (i, d, p.scale.to_ns(delta(ts[0], ts[i], w).max(0) as u64)))
            .collect();
        let mut series = base_series(p.id, Mode::Consecutive, &mut deltas, &spikes, &p.scale);
        let ref_cost = (r1 - r0) as f64 / (n - 1) as f64;
        series
            .attributes
            .insert("cost_per_read_ns".into(), json!(ref_cost));
        series.attributes.insert("reads".into(), json!(n));
        out.push(series);
    }
    out
}

fn measure_sparse(
    plan: &ClockPlan,
    sources: &[Prepared],
    stop: &AtomicBool,
) -> (Vec<Series>, SparseOutcome) {
    let opened: Vec<(Prepared, Source)> = sources
        .iter()
        .filter_map(|p| Source::open(p.id).ok().map(|s| (p.clone(), s)))
        .collect();
    let k = opened.len();
    let pairs = plan.pairs;
    // deltas[source * pairs + pair], allocated and touched up front.
    let mut deltas: Vec<i64> = vec![0; k * pairs];
    for d in deltas.iter_mut() {
        *d = i64::MIN;
    }
    let mut wake_ns: Vec<u64> = vec![0; pairs];
    let progress = Progress::new("clock", pairs as u64, plan.run.outputs.quiet);
    let gaps = &plan.every_ns;
    let t0 = Instant::now();
    let start = sys::clock_ns(libc::CLOCK_MONOTONIC);
    let mut sleeper = SystemSleeper { stop };
    let outcome = run_sparse(&mut sleeper, &plan.every_ns, pairs, stop, |i, deadline| {
        for j in 0..k {
            let s = (i + j) % k;
            let (a, b) = source_pair(&opened[s].1);
            deltas[s * pairs + i] = delta(a, b, opened[s].0.id.width_bits());
        }
        wake_ns[i] = deadline.saturating_sub(start);
        let done = i + 1;
        progress.set(done as u64, || {
            let left_ns: u64 = (done..pairs).map(|i| gaps[i % gaps.len()]).sum();
            format!(
                "pair {done}/{pairs}, {} elapsed, about {} left",
                format_ns(t0.elapsed().as_nanos() as u64),
                format_ns(left_ns)
            )
        });
    });
    progress.finish();
    let done = outcome.pairs;
    let mode = plan.mode;
    let mut out = Vec::new();
    for (s, (p, _)) in opened.iter().enumerate() {
        let d = &mut deltas[s * pairs..s * pairs + done];
        let spikes: Vec<(usize, i64, u64)> = worst(d, 10)
            .into_iter()
            .map(|(i, v)| (i, v, wake_ns[i]))
            .collect();
        let mut series = base_series(p.id, mode, d, &spikes, &p.scale);
        series.attributes.insert("pairs".into(), json!(done));
        series
            .attributes
            .insert("every_ns".into(), json!(plan.every_ns));
        out.push(series);
    }
    (out, outcome)
}

/// `rtscope clock --list`: the sources, their availability and why.
pub fn list() -> Result<i32> {
    say(&list_table());
    Ok(EXIT_OK)
}

/// Runs the experiment from the command line.
pub fn run(a: &ClockOptions) -> Result<i32> {
    let plan = plan(a)?;
    let f = super::repeat::finished(&plan.run.outputs, || execute(&plan))?;
    let mut summary = crate::output::clock::report(&f.doc, &f.shown);
    summary.push_str(&super::repeat::note(&f.doc, plan.run.outputs.repeat));
    Ok(run::deliver(&f.doc, &plan.run.outputs, vec![], &summary))
}

/// Measures and builds the result document.
pub fn execute(plan: &ClockPlan) -> Result<Finished> {
    let ids = requested_ids(&plan.requested_sources);
    let run = run::begin(&plan.run.settings(), &header(plan, ids.len()))?;
    let (ready, infos) = prepare_sources(
        &ids,
        plan.calibration_window_ns,
        plan.warp_window_ns,
        &online_cpus(),
        run.stop(),
        plan.run.outputs.quiet,
    );
    if ready.is_empty() {
        let why: Vec<String> = infos
            .iter()
            .map(|i| {
                format!(
                    "{}: {}",
                    i.name,
                    i.unavailable_reason.as_deref().unwrap_or("?")
                )
            })
            .collect();
        return Err(anyhow!(
            "none of the requested sources is available here ({})",
            why.join("; ")
        ));
    }
    let setup = plan.run.rt.thread_setup(vec![plan.cpu], vec![]);
    let stop: &AtomicBool = run.stop();
    let out: Result<ThreadOut, String> = std::thread::scope(|s| {
        let h = std::thread::Builder::new()
            .name("rtscope-clock".into())
            .spawn_scoped(s, || -> Result<ThreadOut, String> {
                let state = setup.apply().map_err(|e| e.to_string())?;
                let (measured, sparse) = match plan.mode {
                    Mode::Consecutive => (measure_consecutive(plan, &ready, stop), None),
                    _ => {
                        let (m, o) = measure_sparse(plan, &ready, stop);
                        (m, Some(o))
                    }
                };
                Ok(ThreadOut {
                    state,
                    measured,
                    sparse,
                    interrupted: stop.load(Ordering::Relaxed),
                })
            });
        // SIGINT/SIGTERM go to the measurement thread, whose sleeps they interrupt.
        let _ = sys::block_signals(&run::STOP_SIGNALS);
        match h {
            Ok(h) => h
                .join()
                .unwrap_or_else(|_| Err("the measurement thread panicked".into())),
            Err(e) => Err(format!("cannot start the measurement thread: {e}")),
        }
    });
    let out = out.map_err(|e| anyhow!(e))?;
    let mut warnings = Vec::new();
    if let Some(o) = out.sparse {
        if o.late > 0 {
            warnings.push(format!(
                "{} wake-ups came after the following deadline (the schedule re-anchored)",
                o.late
            ));
        }
    }
    for i in &infos {
        if let Some(w) = &i.warp {
            if w.backwards_steps > 0 {
                warnings.push(format!(
                    "{}: went backwards across CPUs {} times (largest step {:.1} ns)",
                    i.name, w.backwards_steps, w.max_backwards_ns
                ));
            }
        }
        if let Some(c) = &i.calibration {
            if let Some(inv) = c.invariant {
                if !inv.invariant() {
                    warnings.push(format!(
                        "{}: the TSC is not invariant (constant_tsc/nonstop_tsc missing): its rate can change",
                        i.name
                    ));
                }
            }
        }
    }
    let interrupted = out.interrupted || out.sparse.is_some_and(|o| o.interrupted);
    let plan_doc = Documented {
        plan,
        sources: &infos,
        thread: &out.state,
        sparse: out.sparse,
    };
    let end = if interrupted {
        EndReason::Interrupted
    } else {
        EndReason::Loops
    };
    Ok(run.finish("clock", &plan_doc, out.measured, end, warnings))
}

/// The plan as the document records it: with the sources as found, the
/// measurement thread as set up and the sparse modes' outcome.
#[derive(Serialize)]
struct Documented<'a> {
    #[serde(flatten)]
    plan: &'a ClockPlan,
    sources: &'a [SourceInfo],
    thread: &'a ThreadState,
    #[serde(skip_serializing_if = "Option::is_none")]
    sparse: Option<SparseOutcome>,
}

fn header(plan: &ClockPlan, n: usize) -> String {
    let what = match plan.mode {
        Mode::Consecutive => format!("{} back-to-back reads per source", plan.reads),
        Mode::Sparse => format!(
            "{} pairs of reads, one every {}",
            plan.pairs,
            format_ns(plan.every_ns[0])
        ),
        Mode::Alternating => format!(
            "{} pairs of reads, gaps alternating {}",
            plan.pairs,
            plan.every_ns
                .iter()
                .map(|&g| format_ns(g))
                .collect::<Vec<_>>()
                .join("/")
        ),
    };
    format!(
        "rtscope clock: mode {}, {what}, {n} source{} asked, CPU {}, SCHED_{} {}",
        plan.mode.name(),
        if n == 1 { "" } else { "s" },
        plan.cpu,
        plan.run.rt.policy.name().to_uppercase(),
        plan.run.rt.priority
    )
}

/// `rtscope clock --list`.
fn list_table() -> String {
    let mut rows = vec![vec![
        "source".to_string(),
        "available".into(),
        "monotonic".into(),
        "resolution".into(),
    ]];
    let mut what = vec!["".to_string()];
    for id in SourceId::ALL {
        let mono = if id.monotonic() { "yes" } else { "no" }.to_string();
        match Source::open(id) {
            Ok(src) => {
                let res = match src.kernel_resolution_ns() {
                    Some(r) => format_ns(r),
                    None => match src.declared_frequencies().first() {
                        Some(f) => format!("1 tick ({:.3} MHz declared)", f.hz / 1e6),
                        None => "1 tick".into(),
                    },
                };
                rows.push(vec![id.name().into(), "yes".into(), mono, res]);
                what.push(id.description().into());
            }
            Err(u) => {
                rows.push(vec![id.name().into(), "no".into(), mono, "-".into()]);
                what.push(u.reason);
            }
        }
    }
    render(&rows)
        .lines()
        .zip(what)
        .map(|(l, w)| format!("{l}  {w}\n"))
        .collect()
}
