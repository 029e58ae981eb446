//! The beacon: a periodic chain re-armed relative to the last wake, on an
//! absolute grid, or compensated (the study's Table 2).

use super::*;

/// How a beacon chain is re-armed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BeaconMode {
    /// `clock_nanosleep` of one interval from each wake (the naive way).
    Relative,
    /// `pselect` of one interval from each wake, as SCHED_OTHER: the kernel
    /// gives a select/poll timeout of a normal task a slack of 0.1 % of its
    /// length (at most 100 ms), so the error grows with the interval.
    RelativeSelect,
    /// `clock_nanosleep(TIMER_ABSTIME)` on the grid start + c × interval.
    Absolute,
    /// The grid through [`PreciseSleep`] with a compensation.
    Compensated(Compensation),
}

impl BeaconMode {
    fn name(self) -> &'static str {
        match self {
            BeaconMode::Relative => "relative",
            BeaconMode::RelativeSelect => "relative-select",
            BeaconMode::Absolute => "absolute",
            BeaconMode::Compensated(c) => c.name(),
        }
    }
}

/// One chain: its start and the time of every beacon after it.
pub(super) struct Chain {
    order: u32,
    start: u64,
    times: Vec<u64>,
    spin_ns: u64,
}

/// Runs one mode's chains, for every order in turn.
pub(super) fn beacon_mode(
    plan: &TimerPlan,
    mode: BeaconMode,
    phase_ns: u64,
    offset: u64,
    stop: &AtomicBool,
) -> Result<Vec<Chain>, String> {
    let b = plan.beacon.as_ref().expect("beacon plan");
    let tuning = SleepTuning {
        static_offset_ns: offset,
        ..plan.tuning
    };
    let comp = match mode {
        BeaconMode::Compensated(c) => c,
        _ => Compensation::None,
    };
    let mut ps = PreciseSleep::new(
        StopWait {
            inner: SystemWait::ClockNanosleep,
            stop,
        },
        CLOCK,
        comp,
        tuning,
    );
    let mut chains = Vec::new();
    for &order in &b.orders {
        let interval = BEACON_BASE_NS << order;
        let mut times = Vec::with_capacity(b.cycles as usize);
        let start = sys::clock_ns(libc::CLOCK_MONOTONIC) + 20_000_000 + phase_ns;
        let mut spin = 0;
        // Every chain starts on an absolute wake at `start`.
        let r = (|| -> io::Result<()> {
            ps.sleep_until(start)?;
            for c in 1..=b.cycles {
                let t = match mode {
                    BeaconMode::RelativeSelect => {
                        let now = sys::clock_ns(libc::CLOCK_MONOTONIC);
                        StopWait {
                            inner: SystemWait::Select,
                            stop,
                        }
                        .wait_until(now + interval, now)?;
                        sys::clock_ns(libc::CLOCK_MONOTONIC)
                    }
                    BeaconMode::Relative => {
                        if !sys::sleep_for_interruptible(libc::CLOCK_MONOTONIC, interval)?
                            || stop.load(Ordering::Relaxed)
                        {
                            return Err(io::ErrorKind::Interrupted.into());
                        }
                        sys::clock_ns(libc::CLOCK_MONOTONIC)
                    }
                    _ => {
                        let w = ps.sleep_until(start + c * interval)?;
                        spin += w.spin_ns;
                        w.actual_ns
                    }
                };
                times.push(t);
            }
            Ok(())
        })();
        match r {
            Ok(()) => {}
            Err(e) if is_stop(&e) => {
                chains.push(Chain {
                    order,
                    start,
                    times,
                    spin_ns: spin,
                });
                break;
            }
            Err(e) => return Err(format!("beacon {}: {e}", mode.name())),
        }
        chains.push(Chain {
            order,
            start,
            times,
            spin_ns: spin,
        });
    }
    Ok(chains)
}

pub(super) fn beacon(
    plan: &TimerPlan,
    cal: &mut Calibration,
    stop: &AtomicBool,
) -> Result<(Vec<ThreadState>, Vec<Series>)> {
    let policy = plan.policies[0];
    let choice = plan.choice(policy);
    let mut modes = vec![
        BeaconMode::Relative,
        BeaconMode::RelativeSelect,
        BeaconMode::Absolute,
    ];
    for c in &plan.compensations {
        if *c != Compensation::None {
            modes.push(BeaconMode::Compensated(*c));
        }
    }
    // Calibrate clock_nanosleep first (on a thread set up like the chains').
    if plan.wants_calibration() && cal.offset(WaitApi::ClockNanosleep, policy.name()).is_none() {
        let (_, e) = on_rt_thread(choice, plan.cpu, stop, || {
            let mut w = StopWait {
                inner: SystemWait::ClockNanosleep,
                stop,
            };
            calibrate_one(&mut w, WaitApi::ClockNanosleep, policy, plan, stop)
                .map_err(|e| format!("calibration failed: {e}"))
        })
        .map_err(|e| anyhow!(e))?;
        cal.insert(e);
    }
    let offset = offset_for(cal, WaitApi::ClockNanosleep, policy);
    // One thread per mode, all at once, phases 3 ms apart so that their
    // wakes do not meet.
    let results: Vec<Result<(ThreadState, Vec<Chain>), String>> = std::thread::scope(|s| {
        let hs: Vec<_> = modes
            .iter()
            .enumerate()
            .map(|(i, &m)| {
                // The select chain shows the normal task's timeout slack.
                let choice = if m == BeaconMode::RelativeSelect {
                    plan.choice(Policy::Other)
                } else {
                    choice
                };
                s.spawn(move || {
                    on_rt_thread(choice, plan.cpu, stop, || {
                        beacon_mode(plan, m, i as u64 * 3_000_000, offset, stop)
                    })
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a beacon thread panicked".into()))
            })
            .collect()
    });
    let mut threads = Vec::new();
    let mut series = Vec::new();
    for (m, r) in modes.iter().zip(results) {
        let (st, chains) = r.map_err(|e| anyhow!(e))?;
        threads.push(st);
        for ch in chains {
            if ch.times.is_empty() {
                continue;
            }
            series.push(beacon_series(plan, *m, &ch));
        }
    }
    // Table order: by order, then mode.
    series.sort_by_key(|s| {
        s.attributes
            .get("beacon")
            .and_then(|b| b.get("order"))
            .and_then(|o| o.as_u64())
            .unwrap_or(0)
    });
    Ok((threads, series))
}

pub(super) fn beacon_series(plan: &TimerPlan, mode: BeaconMode, ch: &Chain) -> Series {
    let interval = BEACON_BASE_NS << ch.order;
    let mut rec = SeriesRecorder::new(ch.start, 8, None);
    let mut prev = ch.start as i64;
    let mut devs = Vec::with_capacity(ch.times.len());
    for (i, &t) in ch.times.iter().enumerate() {
        let grid = ch.start + (i as u64 + 1) * interval;
        rec.record(&Sample {
            seq: i as u64,
            t_ns: t,
            latency_ns: t as i64 - grid as i64,
            overruns: 0,
            cpu: plan.cpu as u32,
        });
        devs.push(t as i64 - prev - interval as i64);
        prev = t as i64;
    }
    // The first interval starts at the requested start, not the (late) first wake.
    let n = ch.times.len();
    let last = ch.times[n - 1] as i64;
    let cell = BeaconCell {
        order: ch.order,
        interval_ns: interval,
        mode: mode.name().into(),
        cycles: n as u64,
        mean_deviation_ns: devs.iter().map(|d| d.abs() as f64).sum::<f64>() / n as f64,
        max_deviation_ns: devs.iter().map(|d| d.abs()).max().unwrap_or(0),
        drift_ns: last - (ch.start + n as u64 * interval) as i64,
        spin_total_ns: ch.spin_ns,
    };
    let mut s = rec.to_series(&format!("beacon BO{} {}", ch.order, mode.name()), 0);
    s.attributes.insert("order".into(), json!(ch.order));
    s.attributes.insert("mode".into(), json!(mode.name()));
    s.attributes.insert("interval_ns".into(), json!(interval));
    s.attributes.insert(
        "beacon".into(),
        serde_json::to_value(&cell).unwrap_or_default(),
    );
    s
}
