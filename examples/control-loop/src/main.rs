//! A 1 ms control loop that checks its own cycle with `PeriodProbe` and times
//! its work with `Stopwatch`, then writes a result document.
//!
//! ```text
//! cargo run --release -p control-loop -- [CYCLES] [loop.json]
//! ```
//!
//! Run it as root (or with CAP_SYS_NICE) to get SCHED_FIFO; otherwise it runs
//! as a normal thread and says so.

use std::path::PathBuf;

use rtscope_core::clock::{PeriodProbe, Stopwatch};
use rtscope_core::cyclic::{Clock, PosixClock};
use rtscope_core::rt::{Policy, ThreadSetup};
use rtscope_core::timer::{Compensation, PreciseSleep, SleepTuning, SystemWait, WaitApi};

const PERIOD_NS: u64 = 1_000_000;

fn main() {
    let mut args = std::env::args().skip(1);
    let cycles: u64 = match args.next().map(|s| s.parse()) {
        None => 2000,
        Some(Ok(n)) if n >= 2 => n,
        _ => {
            eprintln!("usage: control_loop [CYCLES >= 2] [RESULT.json]");
            std::process::exit(2);
        }
    };
    let out: Option<PathBuf> = args.next().map(PathBuf::from);

    let setup = ThreadSetup {
        policy: Policy::Fifo,
        priority: 80,
        cpus: vec![],
        timer_slack_ns: Some(1),
        prefault_stack: 64 * 1024,
        block_signals: vec![],
    };
    if let Err(e) = setup.apply() {
        eprintln!("note: running without SCHED_FIFO ({e})");
    }

    // Both pick the best source of this machine and calibrate it (100 ms).
    let sw = Stopwatch::new().expect("no usable time source");
    let mut probe = PeriodProbe::new(PERIOD_NS).expect("no usable time source");
    println!(
        "stopwatch on {} (read cost {:.1} ns, subtracted)",
        sw.source_name(),
        sw.read_cost_ns()
    );

    let mut state = 1u64;
    let mut work_max_ns = 0;
    // clock_nanosleep(TIMER_ABSTIME) to each deadline, uncompensated
    // (Compensation::Adaptive would wake early and spin the rest).
    let clock = PosixClock(libc::CLOCK_MONOTONIC);
    let wait = SystemWait::open(WaitApi::ClockNanosleep).expect("clock_nanosleep");
    let mut sleep = PreciseSleep::new(wait, clock, Compensation::None, SleepTuning::default());
    let mut next = clock.now() + PERIOD_NS;
    for _ in 0..cycles {
        sleep.sleep_until(next).expect("clock_nanosleep");
        probe.tick(); // first thing after the wake-up
        let t = sw.start();
        for _ in 0..2000 {
            // The "control law": a little arithmetic.
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
        }
        work_max_ns = work_max_ns.max(sw.elapsed_ns(t));
        next += PERIOD_NS;
    }
    std::hint::black_box(state);

    let s = probe.summary();
    println!(
        "{} periods of {} ns: mean {:.1} ns (error {:+.1} ns), jitter {:+.1} .. {:+.1} ns, stddev {:.1} ns, |jitter| p99 {} ns",
        s.periods,
        s.requested_ns,
        s.mean_period_ns,
        s.error_ns,
        s.jitter_min_ns,
        s.jitter_max_ns,
        s.jitter_stddev_ns,
        s.abs_jitter_p99_ns
    );
    println!("longest control-law computation: {work_max_ns} ns");
    if let Some(p) = out {
        match probe.write_json(&p) {
            Ok(()) => println!("result: {}", p.display()),
            Err(e) => {
                eprintln!("error: {}: {e}", p.display());
                std::process::exit(1);
            }
        }
    }
}
