//! Using the timer module from an application: a 1 ms loop on PreciseSleep
//! with adaptive compensation, then three virtual timers on one kernel timer
//! (TimerService, hopping) delivered through a channel.
//!
//! Run: `cargo run -p rtscope-core --example precise_sleep` (as root, or with
//! RLIMIT_RTPRIO, for SCHED_FIFO; it also runs without).

use std::sync::mpsc;
use std::time::Duration;

use rtscope_core::cyclic::PosixClock;
use rtscope_core::rt::{Policy, ThreadSetup};
use rtscope_core::sys;
use rtscope_core::timer::service::{Design, Fired, TimerService};
use rtscope_core::timer::{Compensation, PreciseSleep, SleepTuning, SystemWait, WaitApi};

fn now() -> u64 {
    sys::clock_ns(libc::CLOCK_MONOTONIC)
}

fn main() -> std::io::Result<()> {
    // SCHED_FIFO 80 if allowed; the example goes on without it.
    let rt = ThreadSetup {
        policy: Policy::Fifo,
        priority: 80,
        cpus: vec![],
        timer_slack_ns: Some(1),
        prefault_stack: 64 * 1024,
        block_signals: vec![],
    };
    if let Err(e) = rt.apply() {
        eprintln!("running without real-time priority: {e}");
    }

    // 1. A periodic loop on an absolute grid, compensated.
    for comp in [Compensation::None, Compensation::Adaptive] {
        let wait = SystemWait::open(WaitApi::ClockNanosleep)?;
        let clock = PosixClock(libc::CLOCK_MONOTONIC);
        let mut sleep = PreciseSleep::new(wait, clock, comp, SleepTuning::default());
        let mut errors = Vec::with_capacity(500);
        let mut spin = 0;
        let mut next = now() + 1_000_000;
        for _ in 0..500 {
            let w = sleep.sleep_until(next)?;
            errors.push(w.error_ns());
            spin += w.spin_ns;
            next += 1_000_000;
        }
        errors.sort_unstable();
        let mean_abs = errors.iter().map(|e| e.abs()).sum::<i64>() / errors.len() as i64;
        println!(
            "{comp:>8}: mean |error| {:.1} µs, p99 {:.1} µs, max {:.1} µs, spin {:.2} ms in 0.5 s",
            mean_abs as f64 / 1e3,
            errors[errors.len() * 99 / 100] as f64 / 1e3,
            errors[errors.len() - 1] as f64 / 1e3,
            spin as f64 / 1e6
        );
    }

    // 2. Many virtual timers on one kernel timer; expiries come over a channel.
    let (tx, rx) = mpsc::channel::<Fired>();
    let svc = TimerService::spawn(
        Design::Hopping,
        0,
        16,
        || {},
        move |f: &Fired| {
            let _ = tx.send(*f);
        },
    )?;
    let t0 = now();
    svc.add(t0 + 3_000_000, 0, 3)?;
    let cancelled = svc.add(t0 + 2_000_000, 0, 2)?;
    svc.add(t0 + 1_000_000, 0, 1)?;
    let periodic = svc.add(t0 + 500_000, 1_000_000, 9)?;
    svc.cancel(cancelled);
    for _ in 0..6 {
        let f = rx
            .recv_timeout(Duration::from_secs(1))
            .expect("a timer fires");
        println!(
            "timer {} due +{:.3} ms: late {:.1} µs (set-up {:.1} µs, kernel timer → callback {:.1} µs)",
            f.token,
            (f.deadline - t0) as f64 / 1e6,
            (f.callback - f.deadline) as f64 / 1e3,
            (f.armed - f.requested) as f64 / 1e3,
            (f.callback - f.hw_target) as f64 / 1e3
        );
    }
    svc.cancel(periodic);
    let hw = svc.shutdown()?;
    println!("{hw} kernel timer expiries");
    Ok(())
}
