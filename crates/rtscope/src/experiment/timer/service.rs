//! `rtscope timer --service`: the study's software timer service on Linux.
//!
//! An application thread (priority − 1) asks for `--timers` one-shot virtual
//! timers per round, their delays cycling through `--delays`, then blocks on
//! a futex; the service thread ([`TimerService`], at `--priority`, same CPU)
//! waits on one timerfd and, per expiry, stamps the timer and wakes the
//! application. Per expiry: set-up (request → kernel timer armed), event
//! handling (kernel timer's target → callback start), return (callback →
//! the application resumes) and the error (application resumes −
//! deadline). Static compensation subtracts the median of the three
//! uncompensated stages after the deadline (handling and return) from every
//! arming, as the study does; the uncompensated cell is that calibration.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, Result};
use serde_json::json;

use rtscope_core::record::SeriesRecorder;
use rtscope_core::result::Series;
use rtscope_core::rt::ThreadState;
use rtscope_core::sample::Sample;
use rtscope_core::sys;
use rtscope_core::timer::calibrate::{median, Calibration};
use rtscope_core::timer::service::{Design, Fired, TimerService};
use rtscope_core::timer::Compensation;
use rtscope_core::units::format_ns;

use super::{pct, ServiceDesign, TimerPlan};
use crate::output::timer::ServiceCell;

/// One expiry as the application saw it.
#[derive(Debug, Clone, Copy, Default)]
struct Rec {
    deadline: u64,
    setup: u64,
    handling: u64,
    ret: u64,
    resume: u64,
}

/// The stamps the handler leaves for the application, per timer of a round.
struct Board {
    fired: AtomicU32,
    order: Vec<AtomicU64>,
    stamps: Vec<[AtomicU64; 5]>,
}

fn now() -> u64 {
    sys::clock_ns(libc::CLOCK_MONOTONIC)
}

/// One design × compensation: `rounds` rounds of `n` timers.
fn cell(
    plan: &TimerPlan,
    design: Design,
    offset: u64,
    rounds: u64,
    stop: &AtomicBool,
) -> Result<(Vec<Rec>, u64), String> {
    let svc_plan = plan.service.as_ref().expect("service plan");
    let n = svc_plan.timers;
    let board = Arc::new(Board {
        fired: AtomicU32::new(0),
        order: (0..n).map(|_| AtomicU64::new(0)).collect(),
        stamps: (0..n).map(|_| Default::default()).collect(),
    });
    let b = board.clone();
    let setup = plan
        .choice(plan.policies[0])
        .thread_setup(vec![plan.cpu], super::run::STOP_SIGNALS.to_vec());
    let svc = TimerService::spawn(
        design,
        offset,
        n,
        move || {
            let _ = setup.apply();
        },
        move |f: &Fired| {
            let i = f.token as usize;
            let s = &b.stamps[i];
            s[0].store(f.deadline, Ordering::Relaxed);
            s[1].store(f.armed.saturating_sub(f.requested), Ordering::Relaxed);
            s[2].store(f.callback.saturating_sub(f.hw_target), Ordering::Relaxed);
            s[3].store(f.callback, Ordering::Relaxed);
            let k = b.fired.load(Ordering::Relaxed) as usize;
            b.order[k].store(i as u64, Ordering::Relaxed);
            b.fired.store(k as u32 + 1, Ordering::Release);
            let _ = sys::futex_wake(&b.fired, 1);
        },
    )
    .map_err(|e| format!("cannot start the timer service: {e}"))?;
    let mut recs: Vec<Rec> = Vec::with_capacity(rounds as usize * n);
    let delays = &plan.delays_ns;
    'rounds: for r in 0..rounds {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        board.fired.store(0, Ordering::Release);
        let t0 = now();
        for i in 0..n {
            let d = delays[(i + r as usize) % delays.len()];
            svc.add(t0 + d, 0, i as u64)
                .map_err(|e| format!("cannot arm the timer: {e}"))?;
        }
        let mut seen = 0usize;
        while seen < n {
            let c = board.fired.load(Ordering::Acquire) as usize;
            if c == seen {
                if stop.load(Ordering::Relaxed) {
                    break 'rounds;
                }
                let _ = sys::futex_wait(&board.fired, c as u32);
                continue;
            }
            let resume = now();
            for k in seen..c {
                let i = board.order[k].load(Ordering::Relaxed) as usize;
                let s = &board.stamps[i];
                let cb = s[3].load(Ordering::Relaxed);
                recs.push(Rec {
                    deadline: s[0].load(Ordering::Relaxed),
                    setup: s[1].load(Ordering::Relaxed),
                    handling: s[2].load(Ordering::Relaxed),
                    ret: resume.saturating_sub(cb),
                    resume,
                });
            }
            seen = c;
        }
    }
    let hw = svc.shutdown().map_err(|e| format!("timer service: {e}"))?;
    Ok((recs, hw))
}

/// Runs every design × compensation on an application thread.
pub fn run_service(
    plan: &TimerPlan,
    _cal: &mut Calibration,
    stop: &AtomicBool,
    origin: u64,
) -> Result<(ThreadState, Vec<Series>)> {
    let sp = plan.service.as_ref().expect("service plan");
    let rounds = plan.wakes.div_ceil(sp.timers as u64).max(1);
    let mut app = plan.choice(plan.policies[0]);
    if app.policy.is_rt() {
        app.priority = (app.priority - 1).max(1);
    }
    let mut comps = plan.compensations.clone();
    // The uncompensated cell is the static compensation's calibration: first.
    comps.sort_by_key(|c| *c != Compensation::None);
    let (state, cells) = super::on_rt_thread(app, plan.cpu, stop, || {
        let mut out = Vec::new();
        for &d in &sp.designs {
            let design = match d {
                ServiceDesign::Hopping => Design::Hopping,
                ServiceDesign::Polling => Design::Polling {
                    tick_ns: sp.tick_ns,
                },
            };
            let mut offset_for_static = None;
            for &c in &comps {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let offset = match c {
                    Compensation::None => 0,
                    _ => match offset_for_static {
                        Some(o) => o,
                        None => {
                            let (recs, _) = cell(plan, design, 0, rounds.min(20), stop)?;
                            stage_offset(&recs)
                        }
                    },
                };
                let (recs, hw) = cell(plan, design, offset, rounds, stop)?;
                if c == Compensation::None {
                    offset_for_static = Some(stage_offset(&recs));
                }
                out.push((d, c, offset, recs, hw));
            }
        }
        Ok(out)
    })
    .map_err(|e| anyhow!(e))?;
    let mut series = Vec::new();
    for (d, c, offset, recs, hw) in cells {
        if recs.is_empty() {
            continue;
        }
        let design = match d {
            ServiceDesign::Hopping => "hopping",
            ServiceDesign::Polling => "polling",
        };
        let mut rec = SeriesRecorder::new(origin, 8, None);
        let mut errs = Vec::with_capacity(recs.len());
        for (i, r) in recs.iter().enumerate() {
            let e = r.resume as i64 - r.deadline as i64;
            errs.push(e);
            rec.record(&Sample {
                seq: i as u64,
                t_ns: r.resume,
                latency_ns: e,
                overruns: 0,
                cpu: plan.cpu as u32,
            });
        }
        let st = |f: fn(&Rec) -> u64| {
            let mut v: Vec<i64> = recs.iter().map(|r| f(r) as i64).collect();
            v.sort_unstable();
            (pct(&v, 0.5) as u64, pct(&v, 0.99) as u64)
        };
        let (s50, s99) = st(|r| r.setup);
        let (h50, h99) = st(|r| r.handling);
        let (r50, r99) = st(|r| r.ret);
        errs.sort_unstable();
        let cellv = ServiceCell {
            design: design.into(),
            compensation: c.name().into(),
            timers: sp.timers,
            tick_ns: sp.tick_ns,
            expiries: recs.len() as u64,
            setup_p50_ns: s50,
            setup_p99_ns: s99,
            handling_p50_ns: h50,
            handling_p99_ns: h99,
            return_p50_ns: r50,
            return_p99_ns: r99,
            error_p50_ns: pct(&errs, 0.5),
            error_p99_ns: pct(&errs, 0.99),
            error_max_ns: errs[errs.len() - 1],
            abs_error_mean_ns: errs.iter().map(|e| e.abs() as f64).sum::<f64>() / errs.len() as f64,
            hardware_expiries: hw,
        };
        let label = if d == ServiceDesign::Polling {
            format!("service {design} {} {}", format_ns(sp.tick_ns), c.name())
        } else {
            format!("service {design} {}", c.name())
        };
        let mut s = rec.to_series(&label, 0);
        s.attributes.insert("design".into(), json!(design));
        s.attributes.insert("compensation".into(), json!(c.name()));
        s.attributes.insert("offset_ns".into(), json!(offset));
        s.attributes.insert(
            "service".into(),
            serde_json::to_value(&cellv).unwrap_or_default(),
        );
        series.push(s);
    }
    Ok((state, series))
}

/// The static offset: the median of handling + return (the stages after the
/// deadline) of an uncompensated cell.
fn stage_offset(recs: &[Rec]) -> u64 {
    let mut h: Vec<u64> = recs.iter().map(|r| r.handling).collect();
    let mut r: Vec<u64> = recs.iter().map(|r| r.ret).collect();
    median(&mut h) + median(&mut r)
}
