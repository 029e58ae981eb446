//! The sweep: every wait API × compensation × policy over the requested
//! delays, interleaved rounds on one measurement thread per policy, each
//! compensated API calibrated right before its first cell.

use super::*;

/// The expected length of a sweep, ns.
pub(super) fn sweep_duration_ns(p: &TimerPlan) -> u64 {
    let per_round: u64 = p.delays_ns.iter().map(|d| d + 60_000).sum();
    let cells = (p.apis.len() * p.compensations.len() * p.policies.len()) as u64;
    let cal = if p.wants_calibration() && p.loaded_calibration.is_none() {
        let c: u64 = p.calibration_delays_ns.iter().map(|d| d + 60_000).sum();
        // Warm-up and two passes (calibrate::measure).
        let rounds = calibrate::warmup_rounds(p.calibration_wakes) + 2 * p.calibration_wakes;
        c * rounds as u64 * (p.apis.len() * p.policies.len()) as u64
    } else {
        0
    };
    per_round * (p.wakes + WARMUP_ROUNDS) * cells + cal
}

/// One recorded wake.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Rec {
    t_ns: u64,
    error_ns: i64,
    lateness_ns: i64,
    margin_ns: u64,
    spin_ns: u64,
}

/// The wakes of one cell (API × compensation × policy), per delay.
pub(super) struct CellData {
    api: WaitApi,
    comp: Compensation,
    policy: Policy,
    per_delay: Vec<Vec<Rec>>,
}

/// The measurement thread of one policy (sweep).
pub(super) fn sweep_policy(
    plan: &TimerPlan,
    policy: Policy,
    cal: &mut Calibration,
    stop: &AtomicBool,
    progress: (&Progress, &mut u64),
) -> Result<Vec<CellData>, String> {
    let (progress, done_ms) = progress;
    let cell_ms = sweep_cell_ms(plan);
    let mut out = Vec::new();
    for &api in &plan.apis {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let sys_wait =
            SystemWait::open(api).map_err(|e| format!("{api}: cannot set up the wait: {e}"))?;
        let mut wait = StopWait {
            inner: sys_wait,
            stop,
        };
        for &comp in &plan.compensations {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            // Calibrated right before the first cell that uses it (the
            // lateness drifts by µs within seconds here: every second between
            // calibration and the static cell shows in its median error).
            if comp != Compensation::None && cal.offset(api, policy.name()).is_none() {
                match calibrate_one(&mut wait, api, policy, plan, stop) {
                    Ok(e) => cal.insert(e),
                    Err(e) if is_stop(&e) => break,
                    Err(e) => return Err(format!("{api}: calibration failed: {e}")),
                }
            }
            let tuning = SleepTuning {
                static_offset_ns: offset_for(cal, api, policy),
                ..plan.tuning
            };
            progress.step(
                *done_ms,
                cell_ms,
                &format!("{} {api} {comp}", policy.name()),
            );
            *done_ms += cell_ms;
            let mut ps = PreciseSleep::new(&mut wait, CLOCK, comp, tuning);
            let mut per_delay: Vec<Vec<Rec>> = plan
                .delays_ns
                .iter()
                .map(|_| Vec::with_capacity(plan.wakes as usize))
                .collect();
            // Static compensation subtracts the lateness calibrated at each delay.
            let offsets: Vec<u64> = plan
                .delays_ns
                .iter()
                .map(|&d| {
                    cal.offset_at(api, policy.name(), d)
                        .unwrap_or(tuning.static_offset_ns)
                })
                .collect();
            let res = sweep_cell(
                &mut ps,
                &plan.delays_ns,
                &offsets,
                plan.wakes,
                &mut per_delay,
                stop,
            );
            match res {
                Ok(()) => {}
                Err(e) if is_stop(&e) => {}
                Err(e) => return Err(format!("{api} {comp}: {e}")),
            }
            out.push(CellData {
                api,
                comp,
                policy,
                per_delay,
            });
        }
    }
    Ok(out)
}

/// The hot loop of one cell: warm-up rounds, then `wakes` rounds over the
/// delays. Only the wait, the clock reads and pushes into reserved buffers.
pub(super) fn sweep_cell<W: OneShotWait>(
    ps: &mut PreciseSleep<W, PosixClock>,
    delays: &[u64],
    offsets: &[u64],
    wakes: u64,
    bufs: &mut [Vec<Rec>],
    stop: &AtomicBool,
) -> io::Result<()> {
    for _ in 0..WARMUP_ROUNDS {
        for (&d, &o) in delays.iter().zip(offsets) {
            ps.set_static_offset(o);
            let t0 = sys::clock_ns(libc::CLOCK_MONOTONIC);
            ps.sleep_until(t0 + d)?;
        }
    }
    for _ in 0..wakes {
        for (j, &d) in delays.iter().enumerate() {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            ps.set_static_offset(offsets[j]);
            let t0 = sys::clock_ns(libc::CLOCK_MONOTONIC);
            let w: Wake = ps.sleep_until(t0 + d)?;
            bufs[j].push(Rec {
                t_ns: w.actual_ns,
                error_ns: w.error_ns(),
                lateness_ns: w.lateness_ns(),
                margin_ns: w.requested_ns - w.target_ns,
                spin_ns: w.spin_ns,
            });
        }
    }
    Ok(())
}

/// The expected wait time of one sweep cell (every delay, `wakes` times), ms.
pub(super) fn sweep_cell_ms(plan: &TimerPlan) -> u64 {
    plan.wakes * plan.delays_ns.iter().sum::<u64>() / 1_000_000
}

/// One series per delay of a cell.
pub(super) fn sweep_series(plan: &TimerPlan, c: &CellData, origin: u64) -> Vec<Series> {
    let mut out = Vec::new();
    for (j, recs) in c.per_delay.iter().enumerate() {
        if recs.is_empty() {
            continue;
        }
        let d = plan.delays_ns[j];
        let mut rec = SeriesRecorder::new(origin, 8, None);
        for (i, r) in recs.iter().enumerate() {
            rec.record(&Sample {
                seq: i as u64,
                t_ns: r.t_ns,
                latency_ns: r.error_ns,
                overruns: 0,
                cpu: plan.cpu as u32,
            });
        }
        let mut errs: Vec<i64> = recs.iter().map(|r| r.error_ns).collect();
        errs.sort_unstable();
        let mut late: Vec<i64> = recs.iter().map(|r| r.lateness_ns).collect();
        late.sort_unstable();
        let n = recs.len() as f64;
        let spin: u64 = recs.iter().map(|r| r.spin_ns).sum();
        let asleep = recs.len() as u64 * d;
        let cell = TimerCell {
            api: c.api.name().into(),
            compensation: c.comp.name().into(),
            policy: c.policy.name().into(),
            requested_ns: d,
            wakes: recs.len() as u64,
            error_min_ns: errs[0],
            error_p50_ns: pct(&errs, 0.5),
            error_p99_ns: pct(&errs, 0.99),
            error_max_ns: errs[errs.len() - 1],
            error_mean_ns: errs.iter().map(|&e| e as f64).sum::<f64>() / n,
            abs_error_mean_ns: errs.iter().map(|&e| e.abs() as f64).sum::<f64>() / n,
            abs_error_p50_ns: Some(abs_median(&errs)),
            early: errs.iter().filter(|&&e| e < 0).count() as u64,
            lateness_p50_ns: pct(&late, 0.5),
            lateness_p99_ns: pct(&late, 0.99),
            margin_mean_ns: recs.iter().map(|r| r.margin_ns as f64).sum::<f64>() / n,
            spin_total_ns: spin,
            spin_share: spin as f64 / asleep.max(1) as f64,
        };
        let mut s = rec.to_series(
            &format!("{} {} {} {}", c.api, c.comp, c.policy.name(), format_ns(d)),
            0,
        );
        let a = &mut s.attributes;
        a.insert("api".into(), json!(c.api.name()));
        a.insert("compensation".into(), json!(c.comp.name()));
        a.insert("policy".into(), json!(c.policy.name()));
        a.insert("requested_ns".into(), json!(d));
        a.insert(
            "timer".into(),
            serde_json::to_value(&cell).unwrap_or_default(),
        );
        out.push(s);
    }
    out
}

// ---------------------------------------------------------------------------
// Beacon
