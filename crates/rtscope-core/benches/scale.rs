//! Scale: can one aggregator keep up with a 256-CPU qualification?
//!
//! `cargo bench -p rtscope-core --bench scale [-- CPUS RATE_HZ SECONDS]`
//! (default 256 CPUs at 10 kHz for 2 simulated seconds; `bench/trace-scale.sh`
//! runs it).
//!
//! Simulates one measurement thread per CPU, each waking at RATE_HZ, and feeds
//! its samples and its kernel events (hrtimer_start, hrtimer_expire_entry,
//! sched_waking, sched_switch, sys_exit: the five events `cyclic --trace`
//! records per wake-up) through the code `cyclic --trace`'s aggregator runs
//! per sample, in 10 ms polls as it drains its rings:
//!
//! - aggregation: each thread's recorder (`SeriesRecorder::record`, over
//!   the intended periods) and the union's (`record_in`), as
//!   `Aggregate::drain` does;
//! - join: the sample offered to its thread's `Joiner`; the poll's events
//!   (read per CPU, so out of time order) sorted, fed to the `WakeTracker`,
//!   its wake-ups offered to the `Joiner`s, each pair split by the
//!   `StageRecorder`, the joiners expired at the horizon, as `Tracer::pump`
//!   does.
//!
//! Not included: reading and decoding the ring buffer pages (the kernel's
//! side and `Instance::read`), the live views and `--raw`. Generating the
//! synthetic samples and events is not timed. The thread CPU time of each
//! part is measured; the cost per sample and the headroom (how many times
//! the simulated load one core can absorb) are printed.

use std::time::Instant;

use rtscope_core::record::SeriesRecorder;
use rtscope_core::sample::Sample;
use rtscope_core::trace::stages::{intended, Joiner, StageRecorder, WakeTracker};
use rtscope_core::trace::{Event, Kind};

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec for the kernel to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A cheap deterministic jitter source (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let cpus = args.first().copied().unwrap_or(256) as usize;
    let rate = args.get(1).copied().unwrap_or(10_000);
    let seconds = args.get(2).copied().unwrap_or(2);
    let period = 1_000_000_000 / rate.max(1);
    assert!(
        period > 20_000,
        "at most 50 kHz (a wait's events span 15 µs)"
    );
    let poll = 10_000_000u64;
    let origin = 1_000_000_000u64;
    let tids: Vec<i32> = (0..cpus as i32).map(|c| 10_000 + c).collect();

    let mut recs: Vec<SeriesRecorder> = (0..cpus)
        .map(|_| {
            SeriesRecorder::new(origin, 32, None)
                .ending_at(None)
                .over_intended_periods(period)
        })
        .collect();
    let mut all = SeriesRecorder::new(origin, 32, None)
        .ending_at(None)
        .over_intended_periods(0);
    let mut tracker = WakeTracker::new(&tids);
    let mut joiners: Vec<Joiner> = (0..cpus).map(|_| Joiner::default()).collect();
    let mut stages = StageRecorder::new(origin, 32);
    let by_tid: std::collections::HashMap<i32, usize> =
        tids.iter().enumerate().map(|(i, t)| (*t, i)).collect();

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut samples: Vec<(usize, Sample)> = Vec::new();
    let mut batch: Vec<Event> = Vec::new();
    let mut pending: Vec<Event> = Vec::new();
    let (mut t_agg, mut t_join_s, mut t_trace) = (0u64, 0u64, 0u64);
    let (mut t_sort, mut t_track) = (0u64, 0u64);
    let (mut n_samples, mut n_events) = (0u64, 0u64);
    let mut newest_intended = 0u64;
    let wall = Instant::now();
    let polls = seconds * 1_000_000_000 / poll;
    for p in 0..polls {
        // Generated, not timed: this poll's samples and events, per CPU.
        let (from, to) = (origin + p * poll, origin + (p + 1) * poll);
        samples.clear();
        for (c, &tid) in tids.iter().enumerate() {
            let mut e = from + period - from % period + (c as u64 * 997) % period;
            while e < to {
                let seq = (e - origin) / period;
                let irq = 1_000 + rng.next() % 4_000;
                let wake = irq + 500 + rng.next() % 1_000;
                let sw = wake + 1_000 + rng.next() % 3_000;
                let exit = sw + 800;
                let lat = exit + 300 + rng.next() % 500;
                let hrtimer = 0xffff_8000_0000_0000 + tid as u64 * 0x100;
                let cpu = c as u32;
                let ev = |ts: u64, pid: i32, kind: Kind| Event { ts, cpu, pid, kind };
                pending.extend([
                    ev(
                        // Armed after the previous wait's exit (at most
                        // 11.3 µs after its expiry).
                        e - period + 15_000,
                        tid,
                        Kind::HrtimerStart {
                            hrtimer,
                            function: 0xffff_ffff_8100_0000,
                            expires: e,
                            softexpires: e,
                        },
                    ),
                    ev(
                        e + irq + 100,
                        0,
                        Kind::HrtimerEntry {
                            hrtimer,
                            function: 0xffff_ffff_8100_0000,
                            now: e + irq,
                        },
                    ),
                    ev(
                        e + wake,
                        0,
                        Kind::Waking {
                            pid: tid,
                            target_cpu: cpu as i32,
                        },
                    ),
                    ev(
                        e + sw,
                        0,
                        Kind::Switch {
                            prev_pid: 0,
                            next_pid: tid,
                            prev_runnable: false,
                            prev_prio: 120,
                            next_prio: 0,
                        },
                    ),
                    ev(e + exit, tid, Kind::SysExit { nr: 230 }),
                ]);
                samples.push((
                    c,
                    Sample {
                        seq,
                        t_ns: e + lat,
                        latency_ns: lat as i64,
                        overruns: 0,
                        cpu,
                    },
                ));
                e += period;
            }
        }
        // Events stamped by the poll's start are read now; the rest next time.
        let (now, later): (Vec<Event>, Vec<Event>) = pending.drain(..).partition(|x| x.ts <= to);
        batch.extend(now);
        pending = later;

        // Aggregation (Aggregate::drain without the live views and --raw).
        let t0 = thread_cpu_ns();
        for (c, s) in &samples {
            recs[*c].record(s);
            all.record_in(s, period);
        }
        let t1 = thread_cpu_ns();
        // The samples offered to the join (Tracer::sample).
        for (c, s) in &samples {
            newest_intended = newest_intended.max(intended(s));
            if let Some((s, w)) = joiners[*c].sample(s) {
                tracker.confirm(&w);
                stages.record("thread", &s, &w);
            }
        }
        let t2 = thread_cpu_ns();
        // The events (Tracer::pump_until).
        tracker.losses(&batch, from);
        batch.sort_by_key(|x| x.ts);
        let ready = batch.partition_point(|x| x.ts <= to);
        let ts0 = thread_cpu_ns();
        for x in &batch[..ready] {
            tracker.event(x);
        }
        let ts1 = thread_cpu_ns();
        t_sort += ts0 - t2;
        t_track += ts1 - ts0;
        n_events += ready as u64;
        batch.drain(..ready);
        for w in tracker.take() {
            let Some(&i) = by_tid.get(&w.tid) else {
                continue;
            };
            if let Some((s, w)) = joiners[i].wake(&w) {
                tracker.confirm(&w);
                stages.record("thread", &s, &w);
            }
        }
        let horizon = newest_intended.saturating_sub(2_000_000_000);
        for j in &mut joiners {
            j.expire(horizon);
        }
        let t3 = thread_cpu_ns();
        t_agg += t1 - t0;
        t_join_s += t2 - t1;
        t_trace += t3 - t2;
        n_samples += samples.len() as u64;
    }
    let total = t_agg + t_join_s + t_trace;
    let per = |t: u64| t as f64 / n_samples as f64;
    let load_s = (cpus as u64 * rate) as f64;
    let core_share = per(total) * load_s / 1e9;
    println!(
        "scale: {cpus} CPUs x {rate} Hz = {:.2} M samples/s, {seconds} s simulated: {n_samples} samples, {n_events} events, {:.1} s wall",
        load_s / 1e6,
        wall.elapsed().as_secs_f64()
    );
    println!("  aggregation  {:7.1} ns/sample", per(t_agg));
    println!(
        "  join         {:7.1} ns/sample ({:.1} samples, {:.1} events: {:.1} ns/event)",
        per(t_join_s + t_trace),
        per(t_join_s),
        per(t_trace),
        t_trace as f64 / n_events.max(1) as f64
    );
    println!(
        "    of which: sorting a poll's events {:.1}, WakeTracker::event {:.1}, wake-ups to the joiners, stages and expiry {:.1} ns/sample",
        per(t_sort),
        per(t_track),
        per(t_trace - t_sort - t_track)
    );
    println!(
        "  total        {:7.1} ns/sample: {:.1} % of one core at this load, headroom {:.1}x",
        per(total),
        core_share * 100.0,
        1.0 / core_share
    );
    println!(
        "  joined {} of {n_samples} samples (the rest wait for events after the end), {} incomplete",
        stages.joined, stages.incomplete
    );
}
