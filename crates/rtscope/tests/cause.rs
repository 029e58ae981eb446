//! Named causes, proven on causes injected on purpose: a thread of this test
//! disturbs the measured CPU in a known way while `rtscope cyclic
//! --trace-outliers` runs there, records when it did, and the test counts
//! how the outliers inside those times were named (never a latency bound):
//! at least 95 % with the right cause, none with a confident wrong one.
//!
//! - a SCHED_FIFO 99 task spinning 2 ms every 100 ms → that task, by name
//!   and priority, outranking the thread;
//! - a SCHED_FIFO 1 task spinning past `sched_rt_runtime_us` → RT throttling.
//!
//! Each run looks only at its own document (its own trace instance).

mod common;

use common::Run;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The traced tests look at tracefs instances: one at a time.
static TRACING: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    TRACING.lock().unwrap_or_else(|e| e.into_inner())
}

fn last_cpu() -> usize {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    online
        .trim()
        .rsplit([',', '-'])
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Whether this process may run SCHED_FIFO threads (root, or RLIMIT_RTPRIO).
fn can_fifo() -> bool {
    std::thread::spawn(|| fifo_here(1)).join().unwrap_or(false)
}

/// Makes the calling thread SCHED_FIFO `prio`.
fn fifo_here(prio: i32) -> bool {
    rtscope_core::sys::set_scheduler(libc::SCHED_FIFO, prio).is_ok()
}

/// Pins the calling thread to `cpu`.
fn pin_here(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is an empty set; pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0
        );
    }
}

/// A disturbance of one CPU by a thread of this test: the windows (CLOCK_MONOTONIC
/// ns) in which it held the CPU or was set aside.
struct Injector {
    stop: Arc<AtomicBool>,
    windows: Arc<Mutex<Vec<(u64, u64)>>>,
    thread: Option<JoinHandle<()>>,
}

impl Injector {
    /// A thread named `name`, SCHED_FIFO `prio` on `cpu`, running `body`
    /// (given the stop flag and the windows to record) until stopped.
    fn start(
        name: &str,
        cpu: usize,
        prio: i32,
        body: impl FnOnce(&AtomicBool, &Mutex<Vec<(u64, u64)>>) + Send + 'static,
    ) -> Injector {
        let stop = Arc::new(AtomicBool::new(false));
        let windows = Arc::new(Mutex::new(Vec::new()));
        let (s, w) = (stop.clone(), windows.clone());
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                pin_here(cpu);
                assert!(fifo_here(prio), "SCHED_FIFO {prio}");
                body(&s, &w);
            })
            .unwrap();
        Injector {
            stop,
            windows,
            thread: Some(thread),
        }
    }

    /// Stops the thread; the windows it recorded.
    fn finish(mut self) -> Vec<(u64, u64)> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        self.windows.lock().unwrap().clone()
    }
}

impl Drop for Injector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Spins `spin` every `every` until stopped, recording each spin.
fn hog(spin: Duration, every: Duration) -> impl FnOnce(&AtomicBool, &Mutex<Vec<(u64, u64)>>) {
    move |stop, windows| {
        let (spin, every) = (spin.as_nanos() as u64, every.as_nanos() as u64);
        let mut next = mono_ns() + every;
        while !stop.load(Ordering::Relaxed) {
            while mono_ns() < next {
                std::thread::sleep(Duration::from_nanos((next - mono_ns()).min(10_000_000)));
            }
            let t0 = mono_ns();
            while mono_ns() < t0 + spin {}
            windows.lock().unwrap().push((t0, mono_ns()));
            next += every;
        }
    }
}

/// Spins without a break for `total`, recording each stretch of at least
/// `min_gap` in which it did not run (it was set aside).
fn spinner(
    total: Duration,
    min_gap: Duration,
) -> impl FnOnce(&AtomicBool, &Mutex<Vec<(u64, u64)>>) {
    move |stop, windows| {
        let end = mono_ns() + total.as_nanos() as u64;
        let gap = min_gap.as_nanos() as u64;
        let mut last = mono_ns();
        while !stop.load(Ordering::Relaxed) && last < end {
            let now = mono_ns();
            if now - last >= gap {
                windows.lock().unwrap().push((last, now));
            }
            last = now;
        }
    }
}

/// The outliers of `doc` whose lateness (from the intended wake time to the
/// wake-up) overlaps a window. Not "whose intended time lies in a window":
/// the hog's spin starts when its own timer has woken it, and where the two
/// grids line up (its 100 ms on the thread's 1 ms) the thread's expiry comes
/// a few µs before the spin's first instant, in every spin of the run: none
/// counted, although each of those wake-ups waited out the spin.
fn injected<'a>(doc: &'a Value, windows: &[(u64, u64)]) -> Vec<&'a Value> {
    let t = &doc["trace"];
    t["outliers"]
        .as_array()
        .map(|v| v.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|o| {
            let woke = o["t_ns"].as_u64().unwrap();
            let intended = woke - o["latency_ns"].as_u64().unwrap();
            windows.iter().any(|w| intended < w.1 && woke > w.0)
        })
        .collect()
}

/// (right, wrong, unknown) of `outliers` by `right`.
fn count(outliers: &[&Value], right: impl Fn(&Value) -> bool) -> (usize, usize, usize) {
    let mut c = (0, 0, 0);
    for o in outliers {
        if right(&o["cause"]) {
            c.0 += 1;
        } else if o["cause"]["kind"] == "unknown" {
            c.2 += 1;
        } else {
            c.1 += 1;
        }
    }
    c
}

fn cyclic(cpu: usize, secs: u32, threshold: &str) -> Value {
    let out = Run::new([
        "cyclic",
        "-a",
        &cpu.to_string(),
        "-D",
        &format!("{secs}s"),
        "-q",
        "--trace-outliers",
        threshold,
    ])
    .json()
    .exits(0);
    out.document()
}

#[test]
fn a_higher_priority_task_is_named_by_name_and_priority() {
    let _one = one_at_a_time();
    if !can_fifo() {
        eprintln!("skipped: SCHED_FIFO not permitted");
        return;
    }
    let cpu = last_cpu();
    let inj = Injector::start(
        "rtscope-hog",
        cpu,
        99,
        hog(Duration::from_millis(2), Duration::from_millis(100)),
    );
    let doc = cyclic(cpu, 4, "500us");
    let windows = inj.finish();
    assert!(windows.len() >= 20, "{} spins", windows.len());
    let t = &doc["trace"];
    let causes = &t["causes"];
    assert_eq!(causes["outliers"], t["outliers"].as_array().unwrap().len());
    let inj = injected(&doc, &windows);
    let (right, wrong, unknown) = count(&inj, |c| {
        c["kind"] == "task_held_cpu"
            && c["comm"] == "rtscope-hog"
            && c["prio"] == 99
            && c["policy"] == "fifo/rr"
            && c["outranked"] == true
    });
    eprintln!(
        "hog: {} injected outliers: {right} right, {wrong} wrong, {unknown} unknown",
        inj.len()
    );
    // About 40 spins in 4 s, each meeting a wake-up or two (the hog also
    // spins while rtscope starts and ends).
    let first: Vec<String> = t["outliers"]
        .as_array()
        .unwrap()
        .iter()
        .take(3)
        .map(|o| format!("t {} lat {} seq {}", o["t_ns"], o["latency_ns"], o["seq"]))
        .collect();
    assert!(
        inj.len() >= 10,
        "{} injected outliers; {} spins from {:?} to {:?}; first outliers {first:?}; started_at {} start_clock_ns {}; causes {:#}; warnings {:#}",
        inj.len(),
        windows.len(),
        windows.first(),
        windows.last(),
        doc["started_at"],
        doc["start_clock_ns"],
        causes,
        doc["warnings"]
    );
    assert!(
        right * 100 >= inj.len() * 95,
        "{right} of {}: {inj:#?}",
        inj.len()
    );
    assert_eq!(wrong, 0, "{inj:#?}");
    // The hog is the table's main cause.
    assert_eq!(causes["rows"][0]["cause"]["comm"], "rtscope-hog");
}

#[test]
fn a_throttled_rt_class_is_rt_throttling() {
    let _one = one_at_a_time();
    if !can_fifo() {
        eprintln!("skipped: SCHED_FIFO not permitted");
        return;
    }
    let runtime: i64 = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(-1);
    if runtime < 0 {
        eprintln!("skipped: RT throttling is off (sched_rt_runtime_us -1)");
        return;
    }
    let cpu = last_cpu();
    // FIFO 1 (below the measuring thread's 95) spins until the run ends:
    // the RT class is throttled at the end of each 1 s period (50 ms by default);
    // a stretch of 20 ms without the spinner is that, not the measuring
    // thread (µs) nor the usual host noise.
    let inj = Injector::start(
        "rtscope-spin",
        cpu,
        1,
        spinner(Duration::from_secs(60), Duration::from_millis(20)),
    );
    let doc = cyclic(cpu, 4, "5ms");
    let windows = inj.finish();
    assert!(!windows.is_empty(), "the spinner was never set aside");
    let inj = injected(&doc, &windows);
    let (right, wrong, unknown) = count(&inj, |c| c["kind"] == "rt_throttling");
    eprintln!(
        "throttling: {} windows, {} injected outliers: {right} right, {wrong} wrong, {unknown} unknown",
        windows.len(),
        inj.len()
    );
    assert!(!inj.is_empty(), "{:#?}", doc["trace"]["outliers"]);
    assert!(
        right * 100 >= inj.len() * 95,
        "{right} of {}: {inj:#?}",
        inj.len()
    );
    assert_eq!(wrong, 0, "{inj:#?}");
}
