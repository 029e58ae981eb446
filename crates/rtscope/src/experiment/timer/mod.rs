//! `rtscope timer`: how late each wait API wakes for a requested delay, and
//! what compensating for it buys (the study's Table 1); a periodic beacon chain
//! re-armed relative to the last wake, on an absolute grid, or compensated
//! (Table 2); and a software timer service's stages (`--service`).
//!
//! Sweep: one measurement thread per policy; for each API and compensation it
//! runs `--wakes` rounds over the requested delays, interleaved; right before
//! an API's first compensated cell it calibrates (unless `--calibration` was
//! loaded; see [`calibrate::measure`]). The rounds are interleaved
//! (so slow changes of the machine hit every delay alike). A wake is: read
//! the clock, sleep to now + delay with [`PreciseSleep`], store the [`Wake`]
//! in a buffer allocated before the loop. Each API × compensation × policy ×
//! delay becomes one series (error = actual − requested, ns).

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use anyhow::{anyhow, Result};
use serde::Serialize;
use serde_json::json;

use rtscope_core::cyclic::PosixClock;
use rtscope_core::record::SeriesRecorder;
use rtscope_core::result::{EndReason, Series};
use rtscope_core::rt::{Policy, ThreadState};
use rtscope_core::sample::Sample;
use rtscope_core::sys;
use rtscope_core::timer::calibrate::{self, Calibration, CalibrationEntry};
use rtscope_core::timer::{
    Compensation, OneShotWait, PreciseSleep, SleepTuning, SystemWait, WaitApi, Wake,
};
use rtscope_core::units::format_ns;

use super::run::{self, Finished, RtChoice, RunRequest};
use crate::error::usage;
use crate::output::progress::Progress;
use crate::output::timer::{BeaconCell, TimerCell};

mod beacon;
mod service;
mod sweep;

use sweep::{sweep_cell_ms, sweep_duration_ns, sweep_policy, sweep_series};

/// The beacon interval of order 0 (IEEE 802.15.4): 15.36 ms.
pub const BEACON_BASE_NS: u64 = 15_360_000;

/// The largest beacon order (251.66 s).
pub const MAX_ORDER: u32 = 14;

/// The longest delay a sweep accepts.
pub const MAX_DELAY_NS: u64 = 1_000_000_000;

/// Wakes of each cell before recording (the adaptive estimators settle).
pub const WARMUP_ROUNDS: u64 = 5;

/// What the run does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerMode {
    Sweep,
    Beacon,
    Service,
}

/// The service designs (`--service`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceDesign {
    Polling,
    Hopping,
}

/// The defaults of the options that only some modes use (the command line
/// leaves them unset, so that a mode can refuse one it would ignore).
pub mod defaults {
    pub const WAKES: u64 = 200;
    pub const CALIBRATION_WAKES: usize = 100;
    pub const ADAPTIVE_K: f64 = 1.0;
    pub const HYBRID_QUANTILE: f64 = 0.99;
    pub const MAX_SPIN_NS: u64 = 1_000_000;
    pub const ORDERS: (u32, u32) = (0, 8);
    pub const CYCLES: u64 = 10;
    pub const TIMERS: usize = 16;
    pub const TICK_NS: u64 = 100_000;
}

/// Plain options, as the command line gives them.
#[derive(Debug, Clone)]
pub struct TimerOptions {
    /// The mode-specific options the user gave (by flag, e.g. `--delays`);
    /// the others hold their defaults.
    pub given: Vec<&'static str>,
    pub delays_ns: Vec<u64>,
    pub apis: Vec<String>,
    pub compensations: Option<Vec<Compensation>>,
    /// The policies the sweep compares, at `priority` (with `run.rt.no_rt`:
    /// all SCHED_OTHER); `run.rt` is the most demanding ([`sweep_rt`]).
    pub policies: Vec<Policy>,
    pub priority: u8,
    pub wakes: u64,
    pub cpu: Option<usize>,
    pub calibration: Option<PathBuf>,
    pub save_calibration: Option<PathBuf>,
    pub no_calibrate: bool,
    pub calibration_wakes: usize,
    pub adaptive_k: f64,
    pub hybrid_quantile: f64,
    pub max_spin_ns: u64,
    pub beacon: bool,
    pub orders: (u32, u32),
    pub cycles: u64,
    pub service: Vec<String>,
    pub timers: usize,
    pub tick_ns: u64,
    /// The real-time choice, the loads and the outputs (`run.rs`).
    pub run: RunRequest,
}

/// The beacon part of a plan.
#[derive(Debug, Clone, Serialize)]
pub struct BeaconPlan {
    pub orders: Vec<u32>,
    pub cycles: u64,
    pub base_interval_ns: u64,
    /// relative, absolute, then the compensations of an absolute grid.
    pub modes: Vec<String>,
    pub expected_duration_ns: u64,
}

/// The service part of a plan.
#[derive(Debug, Clone, Serialize)]
pub struct ServicePlan {
    pub designs: Vec<ServiceDesign>,
    pub timers: usize,
    pub tick_ns: u64,
}

/// Every setting of a timer run (goes into the result document).
#[derive(Debug, Clone, Serialize)]
pub struct TimerPlan {
    pub mode: TimerMode,
    pub delays_ns: Vec<u64>,
    pub apis: Vec<WaitApi>,
    pub compensations: Vec<Compensation>,
    pub policies: Vec<Policy>,
    pub priority: i32,
    pub wakes: u64,
    pub warmup_rounds: u64,
    pub cpu: usize,
    /// The real-time choice, the loads and the outputs (`run.rs`); its
    /// `rt` is what the harness checks and records (the most demanding
    /// policy asked).
    #[serde(flatten)]
    pub run: RunRequest,
    pub tuning: SleepTuning,
    pub calibration_delays_ns: Vec<u64>,
    pub calibration_wakes: usize,
    /// `--calibration FILE`: loaded instead of measured.
    pub calibration_file: Option<PathBuf>,
    pub save_calibration: Option<PathBuf>,
    #[serde(skip)]
    pub loaded_calibration: Option<Calibration>,
    pub beacon: Option<BeaconPlan>,
    pub service: Option<ServicePlan>,
}

impl TimerPlan {
    /// The RT choice of one policy.
    pub(crate) fn choice(&self, p: Policy) -> RtChoice {
        RtChoice {
            policy: p,
            priority: if p.is_rt() { self.priority } else { 0 },
            ..self.run.rt
        }
    }

    /// Whether any cell needs a calibrated offset (static), or can start
    /// from one (adaptive, hybrid).
    fn wants_calibration(&self) -> bool {
        self.compensations.iter().any(|c| *c != Compensation::None)
    }
}

/// The first option given that `mode` (with these compensations) would
/// ignore, as the error that refuses it: a run must not silently drop what
/// the user asked for (`--beacon --service polling`, `--adaptive-k` without
/// adaptive compensation).
fn ignored_option(o: &TimerOptions, mode: TimerMode, comps: &[Compensation]) -> Option<String> {
    if o.beacon && !o.service.is_empty() {
        return Some("--beacon and --service are two modes: run them one at a time".into());
    }
    let mode_name = match mode {
        TimerMode::Sweep => "the delay sweep",
        TimerMode::Beacon => "--beacon",
        TimerMode::Service => "--service",
    };
    if mode != TimerMode::Sweep && o.policies.len() > 1 {
        return Some(format!(
            "--policy: {mode_name} measures under one policy, not {}",
            o.policies.len()
        ));
    }
    let adaptive = comps.contains(&Compensation::Adaptive);
    let hybrid = comps.contains(&Compensation::Hybrid);
    let measured_calibration = comps.iter().any(|c| *c != Compensation::None)
        && o.calibration.is_none()
        && !o.no_calibrate;
    for &flag in &o.given {
        let why = match (flag, mode) {
            ("--delays" | "--api" | "-l/--wakes", TimerMode::Beacon) => Some(format!(
                "not used by {mode_name}, whose chains run clock_nanosleep at 15.36 ms × 2^BO (see --orders, --cycles)"
            )),
            ("--api", TimerMode::Service) => Some(format!(
                "not used by {mode_name}, which arms its own timers (see --timers, --tick)"
            )),
            ("--orders" | "--cycles", m) if m != TimerMode::Beacon => {
                Some(format!("is for --beacon, not {mode_name}"))
            }
            ("--timers" | "--tick", m) if m != TimerMode::Service => {
                Some(format!("is for --service, not {mode_name}"))
            }
            ("--adaptive-k", _) if !adaptive => {
                Some("is for --compensate adaptive, which this run does not use".into())
            }
            ("--hybrid-quantile", _) if !hybrid => {
                Some("is for --compensate hybrid, which this run does not use".into())
            }
            ("--max-spin", _) if !adaptive && !hybrid => Some(
                "is for --compensate adaptive or hybrid, which this run does not use".into(),
            ),
            ("--calibration-wakes", _) if !measured_calibration => Some(
                if comps.iter().all(|c| *c == Compensation::None) {
                    "nothing is calibrated when every compensation is none"
                } else {
                    "no calibration is measured (--calibration FILE or --no-calibrate)"
                }
                .into(),
            ),
            _ => None,
        };
        if let Some(why) = why {
            return Some(format!("{flag}: {why}"));
        }
    }
    None
}

fn parse_apis(list: &[String]) -> Result<Vec<WaitApi>> {
    let mut out = Vec::new();
    for s in list {
        if s == "all" {
            for a in WaitApi::ALL {
                if !out.contains(a) {
                    out.push(*a);
                }
            }
            continue;
        }
        let a: WaitApi = s
            .parse()
            .map_err(|e: rtscope_core::named::UnknownName| usage(format!("--api: {e}, or all")))?;
        if !out.contains(&a) {
            out.push(a);
        }
    }
    Ok(out)
}

/// The policies a sweep runs (`--no-rt`: SCHED_OTHER; each once) and the
/// real-time choice the harness checks and records: the first real-time
/// policy, else the first. SCHED_DEADLINE is refused (cyclic's alone).
pub fn sweep(
    policies: &[Policy],
    priority: u8,
    no_rt: bool,
    default_system: bool,
) -> Result<(Vec<Policy>, RtChoice)> {
    let mut out = Vec::new();
    for p in policies {
        if *p == Policy::Deadline {
            // Refused: cyclic's alone, and with --no-rt a contradiction.
            RtChoice::new(*p, priority, no_rt, default_system)?;
        }
        let p = if no_rt { Policy::Other } else { *p };
        if !out.contains(&p) {
            out.push(p);
        }
    }
    let first = *out
        .first()
        .ok_or_else(|| usage("--policy: give at least one policy"))?;
    let rt_policy = out.iter().copied().find(|p| p.is_rt()).unwrap_or(first);
    let rt = RtChoice::new(rt_policy, priority, no_rt, default_system)?;
    Ok((out, rt))
}

/// The harness's real-time choice of a sweep ([`sweep`]).
pub fn sweep_rt(
    policies: &[Policy],
    priority: u8,
    no_rt: bool,
    default_system: bool,
) -> Result<RtChoice> {
    sweep(policies, priority, no_rt, default_system).map(|s| s.1)
}

/// Turns options into a validated plan.
pub fn plan(o: &TimerOptions) -> Result<TimerPlan> {
    let cpu = super::clock::resolve_cpu(o.cpu)?;
    o.run
        .check(&[("--save-calibration", o.save_calibration.as_deref())])?;
    let res = sys::clock_res_ns(libc::CLOCK_MONOTONIC).unwrap_or(1);
    let mut delays = o.delays_ns.clone();
    delays.dedup();
    for &d in &delays {
        if d < res {
            return Err(usage(format!(
                "--delays {}: below the resolution of CLOCK_MONOTONIC ({})",
                format_ns(d),
                format_ns(res)
            )));
        }
        if d > MAX_DELAY_NS {
            return Err(usage(format!(
                "--delays {}: at most {} (a longer delay measures nothing a shorter one does not; use --beacon for long intervals)",
                format_ns(d),
                format_ns(MAX_DELAY_NS)
            )));
        }
    }
    let apis = parse_apis(&o.apis)?;
    if apis.is_empty() {
        return Err(usage("--api: give at least one wait API (or all)"));
    }
    let (policies, rt) = sweep(
        &o.policies,
        o.priority,
        o.run.rt.no_rt,
        o.run.rt.default_system,
    )?;
    if !(0.0..=10.0).contains(&o.adaptive_k) {
        return Err(usage(format!(
            "--adaptive-k {}: use 0-10 (the margin is mean + k·σ of the lateness)",
            o.adaptive_k
        )));
    }
    if !(0.5..1.0).contains(&o.hybrid_quantile) {
        return Err(usage(format!(
            "--hybrid-quantile {}: use 0.5 to below 1 (e.g. 0.99)",
            o.hybrid_quantile
        )));
    }
    crate::limits::check_period("--max-spin", o.max_spin_ns)?;
    let mode = if o.beacon {
        TimerMode::Beacon
    } else if !o.service.is_empty() {
        TimerMode::Service
    } else {
        TimerMode::Sweep
    };
    let compensations = match (&o.compensations, mode) {
        (Some(c), _) => {
            let mut v = c.clone();
            v.dedup();
            v
        }
        (None, TimerMode::Beacon) => vec![
            Compensation::None,
            Compensation::Static,
            Compensation::Adaptive,
        ],
        (None, _) => vec![Compensation::None],
    };
    if let Some(e) = ignored_option(o, mode, &compensations) {
        return Err(usage(e));
    }
    let needs_static = compensations.contains(&Compensation::Static);
    let loaded = match &o.calibration {
        Some(p) => Some(Calibration::load(p).map_err(usage)?),
        None => None,
    };
    if needs_static && o.no_calibrate && loaded.is_none() {
        return Err(usage(
            "--compensate static needs a calibration: drop --no-calibrate or give --calibration FILE",
        ));
    }
    if let Some(cal) = &loaded {
        if needs_static {
            let beacon_apis = [WaitApi::ClockNanosleep];
            let apis_needed: &[WaitApi] = if o.beacon { &beacon_apis } else { &apis };
            for a in apis_needed {
                for p in &policies {
                    if cal.offset(*a, p.name()).is_none() {
                        return Err(usage(format!(
                            "--calibration {}: no entry for {a} under {p}; calibrate it (drop --calibration) or --compensate without static",
                            o.calibration.as_deref().unwrap_or(std::path::Path::new("")).display()
                        )));
                    }
                }
            }
        }
    }
    if o.save_calibration.is_some() && !compensations.iter().any(|c| *c != Compensation::None) {
        return Err(usage(
            "--save-calibration: nothing is calibrated when every compensation is none",
        ));
    }
    if o.calibration_wakes == 0 {
        return Err(usage("--calibration-wakes: must be at least 1"));
    }
    let beacon = if o.beacon {
        let (a, b) = o.orders;
        if a > b || b > MAX_ORDER {
            return Err(usage(format!(
                "--orders {a}..{b}: give A..B with 0 <= A <= B <= {MAX_ORDER}"
            )));
        }
        let orders: Vec<u32> = (a..=b).collect();
        let mut modes = vec![
            "relative".to_string(),
            "relative-select".to_string(),
            "absolute".to_string(),
        ];
        for c in &compensations {
            if *c != Compensation::None {
                modes.push(c.name().to_string());
            }
        }
        let expected = orders
            .iter()
            .map(|bo| (BEACON_BASE_NS << bo) * o.cycles + 30_000_000)
            .sum::<u64>();
        Some(BeaconPlan {
            orders,
            cycles: o.cycles,
            base_interval_ns: BEACON_BASE_NS,
            modes,
            expected_duration_ns: expected,
        })
    } else {
        None
    };
    let service = if mode == TimerMode::Service {
        let mut designs = Vec::new();
        for s in &o.service {
            let d = match s.as_str() {
                "polling" => ServiceDesign::Polling,
                "hopping" => ServiceDesign::Hopping,
                _ => {
                    return Err(usage(format!(
                        "--service: unknown design '{s}' (one of: polling, hopping)"
                    )))
                }
            };
            if !designs.contains(&d) {
                designs.push(d);
            }
        }
        if o.timers == 0 || o.timers > 100_000 {
            return Err(usage(format!("--timers {}: use 1-100000", o.timers)));
        }
        if o.tick_ns < 10_000 || o.tick_ns > MAX_DELAY_NS {
            return Err(usage(format!(
                "--tick {}: use 10us-1s (a shorter tick is a busy loop)",
                format_ns(o.tick_ns)
            )));
        }
        if let Some(c) = compensations
            .iter()
            .find(|c| matches!(c, Compensation::Adaptive | Compensation::Hybrid))
        {
            return Err(usage(format!(
                "--service takes --compensate none,static (per-stage static offsets), not {c}"
            )));
        }
        Some(ServicePlan {
            designs,
            timers: o.timers,
            tick_ns: o.tick_ns,
        })
    } else {
        None
    };
    let cells = (apis.len() * compensations.len() * policies.len() * delays.len()) as u64;
    crate::limits::check_count("-l/--wakes", o.wakes, 32 * cells.max(1))?;
    let tuning = SleepTuning {
        adaptive_k: o.adaptive_k,
        hybrid_quantile: o.hybrid_quantile,
        max_margin_ns: o.max_spin_ns,
        ..SleepTuning::default()
    };
    Ok(TimerPlan {
        mode,
        delays_ns: delays,
        apis,
        compensations,
        policies,
        priority: i32::from(o.priority),
        wakes: o.wakes,
        warmup_rounds: WARMUP_ROUNDS,
        cpu,
        run: RunRequest {
            rt,
            ..o.run.clone()
        },
        tuning,
        calibration_delays_ns: calibrate::DEFAULT_CALIBRATION_DELAYS_NS.to_vec(),
        calibration_wakes: o.calibration_wakes,
        calibration_file: o.calibration.clone(),
        save_calibration: o.save_calibration.clone(),
        loaded_calibration: loaded,
        beacon,
        service,
    })
}

/// A wait that gives up (`Interrupted`) once the stop flag is raised, so a
/// stopped run does not sleep on (a signal from `rt::wake_thread` ends the
/// wait itself).
struct StopWait<'a, W> {
    inner: W,
    stop: &'a AtomicBool,
}

impl<W: OneShotWait> OneShotWait for StopWait<'_, W> {
    #[inline]
    fn wait_until(&mut self, target_ns: u64, now_ns: u64) -> io::Result<()> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(io::ErrorKind::Interrupted.into());
        }
        self.inner.wait_until(target_ns, now_ns)?;
        if self.stop.load(Ordering::Relaxed) {
            return Err(io::ErrorKind::Interrupted.into());
        }
        Ok(())
    }
}

/// The clock every wait is measured on.
const CLOCK: PosixClock = PosixClock(libc::CLOCK_MONOTONIC);

fn is_stop(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Interrupted
}

/// The offset static compensation subtracts for `api` under `policy`.
fn offset_for(cal: &Calibration, api: WaitApi, policy: Policy) -> u64 {
    cal.offset(api, policy.name()).unwrap_or(0)
}

/// Calibrates `wait` for `api` under `policy` (uncompensated lateness).
fn calibrate_one<W: OneShotWait>(
    wait: &mut W,
    api: WaitApi,
    policy: Policy,
    plan: &TimerPlan,
    stop: &AtomicBool,
) -> io::Result<CalibrationEntry> {
    let m = calibrate::measure(
        wait,
        &CLOCK,
        &plan.calibration_delays_ns,
        plan.calibration_wakes,
        &|| stop.load(Ordering::Relaxed),
    )?;
    Ok(CalibrationEntry {
        api,
        policy: policy.name().to_string(),
        delays_ns: plan.calibration_delays_ns.clone(),
        medians_ns: m.medians_ns,
        offset_ns: m.offset_ns,
        residual_ns: m.residual_ns,
        wakes_per_delay: plan.calibration_wakes,
    })
}

/// Runs the experiment from the command line.
pub fn run(o: &TimerOptions) -> Result<i32> {
    let plan = plan(o)?;
    let f = super::repeat::finished(&plan.run.outputs, || execute(&plan))?;
    let mut summary = crate::output::timer::report(&f.doc, &f.shown);
    summary.push_str(&super::repeat::note(&f.doc, plan.run.outputs.repeat));
    let mut extra = Vec::new();
    if let Some(p) = &plan.save_calibration {
        let cal: Calibration = f
            .doc
            .plan
            .get("calibration")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        extra.push(run::ExtraFile {
            what: "calibration",
            flag: "--save-calibration",
            path: p.clone(),
            write: Box::new(move |path| cal.save(path)),
        });
    }
    Ok(run::deliver(&f.doc, &plan.run.outputs, extra, &summary))
}

/// The plan as the document records it: with the calibration used and the
/// measurement threads as set up.
#[derive(Serialize)]
struct Documented<'a> {
    #[serde(flatten)]
    plan: &'a TimerPlan,
    calibration: &'a Calibration,
    threads: &'a [ThreadState],
}

/// Runs `body` on a measurement thread set up for `choice` on `cpu`; a stop
/// interrupts its waits.
pub(crate) fn on_rt_thread<T: Send>(
    choice: RtChoice,
    cpu: usize,
    stop: &AtomicBool,
    body: impl FnOnce() -> Result<T, String> + Send,
) -> Result<(ThreadState, T), String> {
    let setup = choice.thread_setup(vec![cpu], run::STOP_SIGNALS.to_vec());
    let tid = &AtomicI32::new(0);
    std::thread::scope(|s| {
        let h = std::thread::Builder::new()
            .name("rtscope-timer".into())
            .spawn_scoped(s, move || -> Result<(ThreadState, T), String> {
                let state = setup.apply().map_err(|e| e.to_string())?;
                let me = rtscope_core::rt::accept_wake()
                    .map_err(|e| format!("cannot make the wait interruptible: {e}"))?;
                tid.store(me, Ordering::Relaxed);
                Ok((state, body()?))
            });
        match h {
            Ok(h) => {
                while !h.is_finished() && !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                rtscope_core::rt::wake_until_ended(&[tid.load(Ordering::Relaxed)], |_| {
                    !h.is_finished()
                });
                h.join()
                    .unwrap_or_else(|_| Err("the measurement thread panicked".into()))
            }
            Err(e) => Err(format!("cannot start the measurement thread: {e}")),
        }
    })
}

fn header(plan: &TimerPlan) -> String {
    let pols = plan
        .policies
        .iter()
        .map(|p| format!("SCHED_{}", p.name().to_uppercase()))
        .collect::<Vec<_>>()
        .join(",");
    let comps = plan
        .compensations
        .iter()
        .map(|c| c.name())
        .collect::<Vec<_>>()
        .join(",");
    match plan.mode {
        TimerMode::Sweep => format!(
            "rtscope timer: {} delays {}..{}, {} API{} ({}), compensation {comps}, {pols}, {} wakes each, CPU {}; expected duration about {}",
            plan.delays_ns.len(),
            format_ns(*plan.delays_ns.iter().min().unwrap_or(&0)),
            format_ns(*plan.delays_ns.iter().max().unwrap_or(&0)),
            plan.apis.len(),
            if plan.apis.len() == 1 { "" } else { "s" },
            plan.apis.iter().map(|a| a.name()).collect::<Vec<_>>().join(","),
            plan.wakes,
            plan.cpu,
            format_ns(sweep_duration_ns(plan) / 1_000_000_000 * 1_000_000_000 + 1_000_000_000)
        ),
        TimerMode::Beacon => {
            let b = plan.beacon.as_ref().expect("beacon plan");
            format!(
                "rtscope timer --beacon: orders {}..{} (15.36 ms × 2^BO), {} cycles each, modes {}, {}, CPU {}; expected duration about {}",
                b.orders[0],
                b.orders[b.orders.len() - 1],
                b.cycles,
                b.modes.join(","),
                pols,
                plan.cpu,
                format_ns(b.expected_duration_ns / 1_000_000_000 * 1_000_000_000 + 1_000_000_000)
            )
        }
        TimerMode::Service => {
            let s = plan.service.as_ref().expect("service plan");
            format!(
                "rtscope timer --service: {} virtual timers on one timer, designs {}, tick {}, delays {}, compensation {comps}, {pols}, CPU {}",
                s.timers,
                s.designs
                    .iter()
                    .map(|d| match d {
                        ServiceDesign::Polling => "polling",
                        ServiceDesign::Hopping => "hopping",
                    })
                    .collect::<Vec<_>>()
                    .join(","),
                format_ns(s.tick_ns),
                plan.delays_ns.iter().map(|d| format_ns(*d)).collect::<Vec<_>>().join(","),
                plan.cpu
            )
        }
    }
}

/// Where static compensation by `cal` waits not at all: the calibrated
/// lateness at a requested delay is that delay or more (every wake there
/// comes early). One line per API and policy, naming the delays.
fn static_overshoot(plan: &TimerPlan, cal: &Calibration) -> Vec<String> {
    if plan.mode != TimerMode::Sweep || !plan.compensations.contains(&Compensation::Static) {
        return Vec::new();
    }
    let mut lines = Vec::new();
    for api in &plan.apis {
        for p in &plan.policies {
            let over: Vec<String> = plan
                .delays_ns
                .iter()
                .filter_map(|&d| {
                    let o = cal.offset_at(*api, p.name(), d)?;
                    (o >= d).then(|| format!("{} at {}", format_ns(o), format_ns(d)))
                })
                .collect();
            if !over.is_empty() {
                lines.push(format!(
                    "{api} under {}: the calibrated lateness is the delay or more ({}): static compensation does not wait there, and every wake comes early (a calibration from another machine or load, or delays below this machine's timer lateness)",
                    p.name(),
                    over.join(", ")
                ));
            }
        }
    }
    lines
}

/// Measures and builds the result document.
pub fn execute(plan: &TimerPlan) -> Result<Finished> {
    // Said before the run for a calibration given (after it, in the
    // document, for any).
    if let Some(cal) = &plan.loaded_calibration {
        if !plan.run.outputs.quiet {
            for l in static_overshoot(plan, cal) {
                eprintln!("warning: --calibration: {l}");
            }
        }
    }
    let run = run::begin(&plan.run.settings(), &header(plan))?;
    if let Some(b) = &plan.beacon {
        if b.expected_duration_ns > 300_000_000_000 && !plan.run.outputs.quiet {
            eprintln!(
                "warning: this beacon run takes about {} (orders up to {}); Ctrl-C stops it and writes what was measured",
                format_ns(b.expected_duration_ns / 1_000_000_000 * 1_000_000_000),
                b.orders[b.orders.len() - 1]
            );
        }
    }
    let stop: &AtomicBool = run.stop();
    let origin = sys::clock_ns(libc::CLOCK_MONOTONIC);
    // Progress in ms of expected wait time (a bar on a terminal only).
    let total_ms = match (&plan.mode, &plan.beacon) {
        (TimerMode::Beacon, Some(b)) => b.expected_duration_ns / 1_000_000,
        (TimerMode::Sweep, _) => {
            sweep_cell_ms(plan)
                * (plan.policies.len() * plan.apis.len() * plan.compensations.len()) as u64
        }
        _ => 0,
    };
    let progress = Progress::new("timer", total_ms, plan.run.outputs.quiet).without_plain_steps();
    let mut done_ms = 0u64;
    let mut cal = plan.loaded_calibration.clone().unwrap_or_default();
    let mut threads = Vec::new();
    let mut series = Vec::new();
    let mut warnings = Vec::new();
    match plan.mode {
        TimerMode::Sweep => {
            for &p in &plan.policies {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let cal_ref = &mut cal;
                let at = (&progress, &mut done_ms);
                let (state, cells) = on_rt_thread(plan.choice(p), plan.cpu, stop, move || {
                    sweep_policy(plan, p, cal_ref, stop, at)
                })
                .map_err(|e| anyhow!(e))?;
                threads.push(state);
                for c in &cells {
                    series.extend(sweep_series(plan, c, origin));
                }
            }
            let early_static = series.iter().any(|s| {
                s.attributes
                    .get("timer")
                    .and_then(|t| t.get("compensation"))
                    .is_some_and(|c| c == "static")
            });
            warnings.extend(static_overshoot(plan, &cal));
            if early_static {
                warnings.push("static compensation does not spin: a wake faster than the calibrated offset comes early (negative error; the histogram counts it as 0, the table's percentiles are exact)".into());
            }
        }
        TimerMode::Beacon => {
            progress.step(0, total_ms, "beacon chains");
            let (st, s) = beacon::beacon(plan, &mut cal, stop)?;
            threads.extend(st);
            series = s;
        }
        TimerMode::Service => {
            let (st, s) = service::run_service(plan, &mut cal, stop, origin)?;
            threads.push(st);
            series = s;
        }
    }
    progress.finish();
    let end = if stop.load(Ordering::Relaxed) {
        warnings.push("stopped before the end: the cells not reached are missing".into());
        EndReason::Interrupted
    } else {
        EndReason::Loops
    };
    let doc_plan = Documented {
        plan,
        calibration: &cal,
        threads: &threads,
    };
    Ok(run.finish("timer", &doc_plan, series, end, warnings))
}

/// Exact percentile of sorted values.
pub(crate) fn pct(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// The median of the errors' absolute values (the same rank as [`pct`]).
pub(crate) fn abs_median(errs: &[i64]) -> u64 {
    let mut abs: Vec<u64> = errs.iter().map(|e| e.unsigned_abs()).collect();
    abs.sort_unstable();
    match abs.len() {
        0 => 0,
        n => abs[n.div_ceil(2) - 1],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SCHED_DEADLINE in the list of policies is refused, alone or not (the
    /// first real-time policy alone would not be asked about it).
    #[test]
    fn deadline_is_refused_in_the_policies() {
        for policies in [vec![Policy::Deadline], vec![Policy::Fifo, Policy::Deadline]] {
            let mut o = opts();
            o.policies = policies;
            let e = plan(&o).unwrap_err();
            assert_eq!(e.to_string(), super::super::run::DEADLINE_ONLY_CYCLIC);
            assert_eq!(crate::error::exit_code(&e), 2);
        }
        // With --no-rt, deadline is a contradiction (it ran SCHED_OTHER
        // silently,).
        let mut o = opts();
        o.policies = vec![Policy::Deadline];
        o.run.rt.no_rt = true;
        let e = plan(&o).unwrap_err();
        assert!(e.to_string().contains("contradict each other"), "{e}");
        assert_eq!(crate::error::exit_code(&e), 2);
    }

    /// The sweep runs each policy once, in the order given; the harness
    /// checks the first real-time one (else the first); `--no-rt` makes
    /// every policy SCHED_OTHER.
    #[test]
    fn the_sweep_and_its_harness_choice() {
        use Policy::*;
        let (p, rt) = sweep(&[Other, Rr, Other, Fifo], 80, false, true).unwrap();
        assert_eq!(p, [Other, Rr, Fifo]);
        assert_eq!((rt.policy, rt.priority, rt.default_system), (Rr, 80, true));
        let (p, rt) = sweep(&[Batch, Other], 80, false, false).unwrap();
        assert_eq!((p, rt.policy, rt.priority), (vec![Batch, Other], Batch, 0));
        let (p, rt) = sweep(&[Fifo, Rr], 80, true, false).unwrap();
        assert_eq!((p, rt.policy, rt.no_rt), (vec![Other], Other, true));
        assert_eq!(sweep_rt(&[Fifo], 7, false, false).unwrap().priority, 7);
        let e = sweep(&[], 80, false, false).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(sweep(&[Fifo], 0, false, false).is_err());
        // The plan records the harness's choice of the sweep, not the
        // options' own, and each policy's choice keeps the priority.
        let mut o = opts();
        o.policies = vec![Other, Rr];
        o.priority = 7;
        let p = plan(&o).unwrap();
        assert_eq!((p.run.rt.policy, p.run.rt.priority), (Rr, 7));
        assert_eq!(p.choice(Fifo).priority, 7);
        assert_eq!(p.choice(Other).priority, 0);
    }

    pub(crate) fn opts() -> TimerOptions {
        TimerOptions {
            given: vec![],
            delays_ns: vec![320_000, 1_000_000],
            apis: vec!["all".into()],
            compensations: None,
            policies: vec![Policy::Fifo],
            priority: 95,
            wakes: 10,
            cpu: None,
            calibration: None,
            save_calibration: None,
            no_calibrate: false,
            calibration_wakes: 10,
            adaptive_k: 1.0,
            hybrid_quantile: 0.99,
            max_spin_ns: 1_000_000,
            beacon: false,
            orders: (0, 8),
            cycles: 10,
            service: vec![],
            timers: 16,
            tick_ns: 100_000,
            run: RunRequest::default(),
        }
    }

    #[test]
    fn options_a_mode_ignores_are_refused() {
        use Compensation::*;
        let check = |f: &dyn Fn(&mut TimerOptions), mode, comps: &[Compensation]| {
            let mut o = opts();
            f(&mut o);
            ignored_option(&o, mode, comps)
        };
        let given = |flags: &[&'static str]| {
            let flags = flags.to_vec();
            move |o: &mut TimerOptions| o.given = flags.clone()
        };
        let (sweep, beacon, service) = (TimerMode::Sweep, TimerMode::Beacon, TimerMode::Service);
        // What each mode uses is accepted.
        for (flags, mode, comps) in [
            (&["--delays", "--api", "-l/--wakes"][..], sweep, &[None][..]),
            (&["--orders", "--cycles"], beacon, &[None]),
            (
                &["--timers", "--tick", "--delays", "-l/--wakes"],
                service,
                &[None],
            ),
            (&["--adaptive-k", "--max-spin"], sweep, &[None, Adaptive]),
            (&["--hybrid-quantile", "--max-spin"], beacon, &[Hybrid]),
            (&["--calibration-wakes"], sweep, &[Static]),
        ] {
            assert_eq!(check(&given(flags), mode, comps), Option::None, "{flags:?}");
        }
        let refused = |f: &dyn Fn(&mut TimerOptions), mode, comps: &[Compensation]| {
            check(f, mode, comps).expect("refused")
        };
        assert_eq!(
            refused(&given(&["--delays"]), beacon, &[None]),
            "--delays: not used by --beacon, whose chains run clock_nanosleep at 15.36 ms × 2^BO (see --orders, --cycles)"
        );
        assert!(refused(&given(&["-l/--wakes"]), beacon, &[None])
            .starts_with("-l/--wakes: not used by --beacon"));
        assert!(
            refused(&given(&["--api"]), beacon, &[None]).starts_with("--api: not used by --beacon")
        );
        assert_eq!(
            refused(&given(&["--api"]), service, &[None]),
            "--api: not used by --service, which arms its own timers (see --timers, --tick)"
        );
        assert_eq!(
            refused(&given(&["--orders"]), sweep, &[None]),
            "--orders: is for --beacon, not the delay sweep"
        );
        assert_eq!(
            refused(&given(&["--cycles"]), service, &[None]),
            "--cycles: is for --beacon, not --service"
        );
        assert_eq!(
            refused(&given(&["--tick"]), beacon, &[None]),
            "--tick: is for --service, not --beacon"
        );
        assert_eq!(
            refused(&given(&["--timers"]), sweep, &[None]),
            "--timers: is for --service, not the delay sweep"
        );
        assert_eq!(
            refused(&given(&["--adaptive-k"]), sweep, &[None, Hybrid]),
            "--adaptive-k: is for --compensate adaptive, which this run does not use"
        );
        assert!(refused(&given(&["--hybrid-quantile"]), sweep, &[Adaptive])
            .starts_with("--hybrid-quantile: is for --compensate hybrid"));
        assert!(refused(&given(&["--max-spin"]), sweep, &[None, Static])
            .starts_with("--max-spin: is for --compensate adaptive or hybrid"));
        assert_eq!(
            refused(&given(&["--calibration-wakes"]), sweep, &[None]),
            "--calibration-wakes: nothing is calibrated when every compensation is none"
        );
        let no_cal = "--calibration-wakes: no calibration is measured (--calibration FILE or --no-calibrate)";
        assert_eq!(
            refused(
                &|o| {
                    o.given = vec!["--calibration-wakes"];
                    o.no_calibrate = true
                },
                sweep,
                &[Adaptive]
            ),
            no_cal
        );
        assert_eq!(
            refused(
                &|o| {
                    o.given = vec!["--calibration-wakes"];
                    o.calibration = Some("c.json".into())
                },
                sweep,
                &[Static]
            ),
            no_cal
        );
        // Two modes at once, and several policies where one is measured.
        assert_eq!(
            refused(
                &|o| {
                    o.beacon = true;
                    o.service = vec!["polling".into()]
                },
                beacon,
                &[None]
            ),
            "--beacon and --service are two modes: run them one at a time"
        );
        let two = |o: &mut TimerOptions| o.policies = vec![Policy::Fifo, Policy::Other];
        assert_eq!(
            refused(&two, beacon, &[None]),
            "--policy: --beacon measures under one policy, not 2"
        );
        assert_eq!(
            refused(&two, service, &[None]),
            "--policy: --service measures under one policy, not 2"
        );
        assert_eq!(check(&two, sweep, &[None]), Option::None);
        // Through plan(): a usage error.
        let mut o = opts();
        o.beacon = true;
        o.given = vec!["--delays"];
        assert_eq!(crate::error::exit_code(&plan(&o).unwrap_err()), 2);
    }

    #[test]
    fn all_expands_and_duplicates_go() {
        let mut o = opts();
        o.apis = vec!["timerfd".into(), "all".into(), "timerfd".into()];
        let p = plan(&o).unwrap();
        assert_eq!(p.apis.len(), WaitApi::ALL.len());
        assert_eq!(p.apis[0], WaitApi::Timerfd);
    }

    #[test]
    fn bad_input_is_a_usage_error() {
        let bad = |f: &dyn Fn(&mut TimerOptions)| {
            let mut o = opts();
            f(&mut o);
            let e = plan(&o).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "{e}");
            e.to_string()
        };
        assert!(bad(&|o| o.apis = vec!["sleepy".into()]).contains("unknown wait API 'sleepy'"));
        assert!(bad(&|o| o.delays_ns = vec![2_000_000_000]).contains("at most 1s"));
        assert!(bad(&|o| o.delays_ns = vec![0]).contains("below the resolution"));
        assert!(bad(&|o| {
            o.compensations = Some(vec![Compensation::Static]);
            o.no_calibrate = true;
        })
        .contains("needs a calibration"));
        assert!(bad(&|o| {
            o.beacon = true;
            o.orders = (3, 15);
        })
        .contains("--orders 3..15"));
        assert!(bad(&|o| o.hybrid_quantile = 1.0).contains("--hybrid-quantile"));
        assert!(bad(&|o| o.service = vec!["wheel".into()]).contains("unknown design 'wheel'"));
        assert!(bad(&|o| {
            o.service = vec!["polling".into()];
            o.tick_ns = 1000;
        })
        .contains("--tick"));
    }

    #[test]
    fn beacon_defaults_and_duration() {
        let mut o = opts();
        o.beacon = true;
        let p = plan(&o).unwrap();
        let b = p.beacon.unwrap();
        assert_eq!(b.orders, (0..=8).collect::<Vec<_>>());
        assert_eq!(
            b.modes,
            [
                "relative",
                "relative-select",
                "absolute",
                "static",
                "adaptive"
            ]
        );
        // 10 cycles × 511 × 15.36 ms + set-up: about 79 s.
        assert!((78_000_000_000..82_000_000_000).contains(&b.expected_duration_ns));
    }

    #[test]
    fn percentiles_are_exact_ranks() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(pct(&v, 0.5), 50);
        assert_eq!(pct(&v, 0.99), 99);
        assert_eq!(pct(&v, 1.0), 100);
        assert_eq!(pct(&[], 0.5), 0);
    }

    /// The median |error|: early wakes count by their size; one stall does
    /// not move it; the lower middle of an even count, as `pct` takes it.
    #[test]
    fn the_median_of_the_absolute_errors() {
        assert_eq!(abs_median(&[-9, 1, 2, 3, 300_000_000]), 3);
        assert_eq!(abs_median(&[-9, -8, 1]), 8);
        assert_eq!(abs_median(&[5, -1, 4, 2]), 2);
        assert_eq!(abs_median(&[7]), 7);
        assert_eq!(abs_median(&[i64::MIN]), 1 << 63);
        assert_eq!(abs_median(&[]), 0);
    }
}
