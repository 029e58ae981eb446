//! Timer benchmarks.
//!
//! 1. `TimerQueue` insert / cancel / expire cost against the number of live
//!    timers (criterion): it must grow like log n, not n.
//! 2. `PreciseSleep` against the `spin_sleep` crate on the same deadlines:
//!    error percentiles and the CPU spent spinning (a table on stdout; these
//!    are error distributions, not run times, so criterion does not time them).
//!    Goal: a lower p99 error than spin_sleep at no more spin CPU.
//!
//! `cargo bench -p rtscope-core --bench timer` (run as root for SCHED_FIFO;
//! `TIMER_BENCH_WAKES=N` sets the wakes per delay, default 500).

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion};

use rtscope_core::cyclic::PosixClock;
use rtscope_core::sys;
use rtscope_core::timer::service::TimerQueue;
use rtscope_core::timer::{Compensation, PreciseSleep, SleepTuning, SystemWait, WaitApi};

fn queue(c: &mut Criterion) {
    let mut g = c.benchmark_group("timer_queue");
    for n in [16usize, 1_024, 65_536] {
        // A queue of n timers with pseudo-random deadlines.
        let mut q = TimerQueue::with_capacity(n + 1);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            q.insert(1_000_000 + x % 1_000_000_000, 0, i as u64);
        }
        g.bench_with_input(BenchmarkId::new("insert+cancel", n), &n, |b, _| {
            let mut d = 0u64;
            b.iter(|| {
                d = (d + 7_919) % 1_000_000_000;
                let id = q.insert(black_box(1_000_000 + d), 0, 0);
                black_box(q.cancel(id))
            })
        });
        g.bench_with_input(BenchmarkId::new("insert+expire", n), &n, |b, _| {
            b.iter(|| {
                // Earlier than every other timer: the pop takes it back out.
                q.insert(black_box(10), 0, 0);
                black_box(q.pop_due(10))
            })
        });
    }
    g.finish();
}

fn now() -> u64 {
    sys::clock_ns(libc::CLOCK_MONOTONIC)
}

struct Row {
    name: &'static str,
    errors: Vec<i64>,
    spin_ns: u64,
    asleep_ns: u64,
}

fn print(rows: &mut [Row]) {
    println!("\nerror = actual - requested, µs; spin = CPU spinning / time asleep");
    println!(
        "{:<28} {:>8} {:>8} {:>8} {:>9} {:>7}",
        "sleeper", "p50", "p99", "max", "mean|e|", "spin"
    );
    for r in rows {
        r.errors.sort_unstable();
        let n = r.errors.len();
        let mean = r.errors.iter().map(|e| e.abs()).sum::<i64>() as f64 / n as f64;
        println!(
            "{:<28} {:>8.1} {:>8.1} {:>8.1} {:>9.1} {:>6.1}%",
            r.name,
            r.errors[n / 2] as f64 / 1e3,
            r.errors[n * 99 / 100] as f64 / 1e3,
            r.errors[n - 1] as f64 / 1e3,
            mean / 1e3,
            r.spin_ns as f64 * 100.0 / r.asleep_ns as f64
        );
    }
}

fn sleep_vs_spin_sleep() {
    let wakes: usize = std::env::var("TIMER_BENCH_WAKES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let delays = [320_000u64, 1_000_000, 5_000_000];
    let _ = rtscope_core::rt::ThreadSetup {
        policy: rtscope_core::rt::Policy::Fifo,
        priority: 80,
        cpus: vec![],
        timer_slack_ns: Some(1),
        prefault_stack: 0,
        block_signals: vec![],
    }
    .apply();
    let mut rows = Vec::new();
    // spin_sleep: its default native accuracy (a fixed spin margin).
    let sleeper = spin_sleep::SpinSleeper::default();
    let mut r = Row {
        name: "spin_sleep (default)",
        errors: vec![],
        spin_ns: 0,
        asleep_ns: 0,
    };
    for _ in 0..wakes {
        for &d in &delays {
            let t0 = now();
            let c0 = sys::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
            sleeper.sleep(Duration::from_nanos(d));
            let t1 = now();
            let c1 = sys::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
            r.errors.push(t1 as i64 - (t0 + d) as i64);
            r.spin_ns += c1 - c0;
            r.asleep_ns += d;
        }
    }
    rows.push(r);
    for (name, comp) in [
        ("PreciseSleep none", Compensation::None),
        ("PreciseSleep adaptive", Compensation::Adaptive),
        ("PreciseSleep hybrid", Compensation::Hybrid),
    ] {
        let wait = SystemWait::open(WaitApi::ClockNanosleep).expect("wait");
        let mut s = PreciseSleep::new(
            wait,
            PosixClock(libc::CLOCK_MONOTONIC),
            comp,
            SleepTuning::default(),
        );
        let mut r = Row {
            name,
            errors: vec![],
            spin_ns: 0,
            asleep_ns: 0,
        };
        for _ in 0..wakes {
            for &d in &delays {
                let t0 = now();
                let c0 = sys::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
                let w = s.sleep_until(t0 + d).expect("sleep");
                let c1 = sys::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
                r.errors.push(w.error_ns());
                // CPU time, as for spin_sleep (the spin plus the calls).
                r.spin_ns += c1 - c0;
                r.asleep_ns += d;
            }
        }
        rows.push(r);
    }
    print(&mut rows);
}

fn main() {
    let mut c = Criterion::default()
        .configure_from_args()
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));
    queue(&mut c);
    c.final_summary();
    if std::env::args().all(|a| a != "--list") {
        sleep_vs_spin_sleep();
    }
}
