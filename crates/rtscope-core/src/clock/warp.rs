//! Cross-CPU consistency: the "warp" test the kernel runs on the TSC at boot
//! (`check_tsc_warp`), for any source.
//!
//! Two threads, pinned to two CPUs, take turns under a spinlock: each reads
//! the last value written by either thread, reads the source, and writes its
//! reading back. Under the lock the readings are totally ordered in time, so a
//! reading smaller than the previous one is a backwards step: the counters of
//! the two CPUs disagree (or the source is not ordered with the lock, as a
//! plain `rdtsc` is not). The largest step seen is reported.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;

use serde::{Deserialize, Serialize};

use super::{Counter, Scale, Source};
use crate::sys;

/// The outcome of the warp test for one source.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct WarpResult {
    /// CPU pairs tested (the first CPU against each other one).
    pub pairs: Vec<[usize; 2]>,
    /// Test time per pair, ns.
    pub window_ns: u64,
    /// Locked readings taken, all pairs together.
    pub iterations: u64,
    /// Readings smaller than the one before them.
    pub backwards_steps: u64,
    /// Largest backwards step, in the source's counts.
    pub max_backwards_ticks: u64,
    /// The same in ns.
    pub max_backwards_ns: f64,
    /// Why the test was not run (one CPU, a per-thread counter, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Pinning failures and the like.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// The difference of two readings as a signed value: a step back on a counter
/// narrower than 64 bits shows up as a difference above half the range.
#[inline]
pub fn signed_delta(earlier: u64, later: u64, width_bits: u32) -> i64 {
    if width_bits >= 64 {
        return later.wrapping_sub(earlier) as i64;
    }
    let m = 1u64 << width_bits;
    let d = later.wrapping_sub(earlier) & (m - 1);
    if d >= m / 2 {
        d as i64 - m as i64
    } else {
        d as i64
    }
}

/// Result of one pair.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PairOutcome {
    /// Reads compared.
    pub iterations: u64,
    /// Reads that were behind the other CPU's last one.
    pub backwards_steps: u64,
    /// The largest such step back, in counts.
    pub max_backwards_ticks: u64,
}

/// Runs the test between two threads, pinned to `cpus` if given, for
/// `window_ns` of CLOCK_MONOTONIC. `make(i)` gives thread `i` (0 or 1) its counter.
pub fn warp_pair<C, F>(
    make: F,
    width_bits: u32,
    cpus: Option<[usize; 2]>,
    window_ns: u64,
) -> Result<PairOutcome, String>
where
    C: Counter,
    F: Fn(usize) -> C + Sync,
{
    warp_pair_until(make, width_bits, cpus, window_ns, &AtomicBool::new(false))
}

/// [`warp_pair`], ended early when `stop` is raised.
pub fn warp_pair_until<C, F>(
    make: F,
    width_bits: u32,
    cpus: Option<[usize; 2]>,
    window_ns: u64,
    stop: &AtomicBool,
) -> Result<PairOutcome, String>
where
    C: Counter,
    F: Fn(usize) -> C + Sync,
{
    let lock = AtomicBool::new(false);
    let last = AtomicU64::new(0);
    let primed = AtomicBool::new(false);
    let steps = AtomicU64::new(0);
    let worst = AtomicU64::new(0);
    let iterations = AtomicU64::new(0);
    let barrier = Barrier::new(2);
    let deadline = AtomicU64::new(0);
    let errors: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let (lock, last, primed, steps, worst, iterations, barrier, deadline, make) = (
                    &lock,
                    &last,
                    &primed,
                    &steps,
                    &worst,
                    &iterations,
                    &barrier,
                    &deadline,
                    &make,
                );
                s.spawn(move || -> Option<String> {
                    let pin_err = cpus
                        .and_then(|c| sys::set_affinity(&[c[i]]).err())
                        .map(|e| format!("cannot pin to CPU {}: {e}", cpus.unwrap_or_default()[i]));
                    let c = make(i);
                    if i == 0 {
                        deadline.store(
                            sys::clock_ns(libc::CLOCK_MONOTONIC) + window_ns,
                            Ordering::Relaxed,
                        );
                    }
                    barrier.wait();
                    let end = deadline.load(Ordering::Relaxed);
                    let mut n: u64 = 0;
                    loop {
                        while lock
                            .compare_exchange_weak(
                                false,
                                true,
                                Ordering::Acquire,
                                Ordering::Relaxed,
                            )
                            .is_err()
                        {
                            std::hint::spin_loop();
                        }
                        let prev = last.load(Ordering::Relaxed);
                        let had = primed.load(Ordering::Relaxed);
                        let now = c.read();
                        last.store(now, Ordering::Relaxed);
                        primed.store(true, Ordering::Relaxed);
                        lock.store(false, Ordering::Release);
                        n += 1;
                        if had {
                            let d = signed_delta(prev, now, width_bits);
                            if d < 0 {
                                steps.fetch_add(1, Ordering::Relaxed);
                                worst.fetch_max(d.unsigned_abs(), Ordering::Relaxed);
                            }
                        }
                        if n % 256 == 0
                            && (sys::clock_ns(libc::CLOCK_MONOTONIC) >= end
                                || stop.load(Ordering::Relaxed))
                        {
                            break;
                        }
                    }
                    iterations.fetch_add(n, Ordering::Relaxed);
                    pin_err
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().unwrap_or(Some("warp thread panicked".into())))
            .collect()
    });
    if let Some(e) = errors.into_iter().next() {
        return Err(e);
    }
    Ok(PairOutcome {
        iterations: iterations.load(Ordering::Relaxed),
        backwards_steps: steps.load(Ordering::Relaxed),
        max_backwards_ticks: worst.load(Ordering::Relaxed),
    })
}

/// Runs the warp test for an opened source between `cpus[0]` and each other
/// CPU of `cpus`, `window_ns` per pair.
pub fn warp_source(src: &Source, scale: Scale, cpus: &[usize], window_ns: u64) -> WarpResult {
    warp_source_until(src, scale, cpus, window_ns, &AtomicBool::new(false))
}

/// [`warp_source`], ended early when `stop` is raised (no further pair is
/// started, the one in progress ends within a few hundred reads).
pub fn warp_source_until(
    src: &Source,
    scale: Scale,
    cpus: &[usize],
    window_ns: u64,
    stop: &AtomicBool,
) -> WarpResult {
    let id = src.id();
    warp_counter_until(
        src,
        id.is_global(),
        id.width_bits(),
        scale,
        cpus,
        window_ns,
        stop,
    )
}

/// [`warp_source`] for any counter shared by the two threads of each pair:
/// `global` says whether its readings on different CPUs are comparable.
pub fn warp_counter<C: Counter + Sync>(
    counter: &C,
    global: bool,
    width_bits: u32,
    scale: Scale,
    cpus: &[usize],
    window_ns: u64,
) -> WarpResult {
    warp_counter_until(
        counter,
        global,
        width_bits,
        scale,
        cpus,
        window_ns,
        &AtomicBool::new(false),
    )
}

/// [`warp_counter`], ended early when `stop` is raised.
pub fn warp_counter_until<C: Counter + Sync>(
    counter: &C,
    global: bool,
    width_bits: u32,
    scale: Scale,
    cpus: &[usize],
    window_ns: u64,
    stop: &AtomicBool,
) -> WarpResult {
    let mut r = WarpResult {
        window_ns,
        ..Default::default()
    };
    if !global {
        r.skipped =
            Some("a per-thread counter: readings on different CPUs are not comparable".into());
        return r;
    }
    if cpus.len() < 2 {
        r.skipped = Some("needs at least two CPUs".into());
        return r;
    }
    for &other in &cpus[1..] {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let pair = [cpus[0], other];
        match warp_pair_until(|_| counter, width_bits, Some(pair), window_ns, stop) {
            Ok(o) => {
                r.pairs.push(pair);
                r.iterations += o.iterations;
                r.backwards_steps += o.backwards_steps;
                r.max_backwards_ticks = r.max_backwards_ticks.max(o.max_backwards_ticks);
            }
            Err(e) => r.errors.push(format!("CPUs {}/{}: {e}", pair[0], pair[1])),
        }
    }
    r.max_backwards_ns = scale.to_ns_f64(r.max_backwards_ticks as f64);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SourceId;

    /// A global counter (an atomic incremented on every read) seen by each
    /// thread with its own offset.
    struct Skewed<'a> {
        global: &'a AtomicU64,
        offset: i64,
    }

    impl Counter for Skewed<'_> {
        fn read(&self) -> u64 {
            let v = self.global.fetch_add(1, Ordering::SeqCst) + 1_000_000;
            (v as i64 + self.offset) as u64
        }
    }

    #[test]
    fn consistent_counter_never_steps_back() {
        let g = AtomicU64::new(0);
        let o = warp_pair(
            |_| Skewed {
                global: &g,
                offset: 0,
            },
            64,
            None,
            20_000_000,
        )
        .unwrap();
        assert!(o.iterations > 0);
        assert_eq!(o.backwards_steps, 0);
        assert_eq!(o.max_backwards_ticks, 0);
    }

    #[test]
    fn skewed_counter_is_caught() {
        let g = AtomicU64::new(0);
        // Thread 1's counter lags 5000 counts behind thread 0's. Whenever the two
        // threads alternate, thread 1 reads a value ~5000 below the last one.
        let o = warp_pair(
            |i| Skewed {
                global: &g,
                offset: if i == 1 { -5000 } else { 0 },
            },
            64,
            None,
            50_000_000,
        )
        .unwrap();
        if o.backwards_steps > 0 {
            assert!(o.max_backwards_ticks <= 5000, "{o:?}");
            assert!(o.max_backwards_ticks >= 4000, "{o:?}");
        } else {
            // One thread may have held the lock the whole time on a busy machine;
            // then there was no alternation to observe.
            assert!(o.iterations > 0);
        }
    }

    #[test]
    fn signed_delta_on_narrow_counters() {
        assert_eq!(signed_delta(10, 5, 32), -5);
        assert_eq!(signed_delta(0xFFFF_FFFF, 2, 32), 3);
        assert_eq!(signed_delta(2, 0xFFFF_FFFF, 32), -3);
        assert_eq!(signed_delta(10, 5, 64), -5);
    }

    #[test]
    fn one_cpu_is_skipped() {
        let src = Source::open(SourceId::Monotonic).unwrap();
        let r = warp_source(&src, Scale::ns(), &[0], 1_000_000);
        assert_eq!(r.skipped.as_deref(), Some("needs at least two CPUs"));
        assert_eq!(r.window_ns, 1_000_000);
        assert!(r.pairs.is_empty());
    }

    #[test]
    fn a_per_thread_counter_is_skipped() {
        let g = AtomicU64::new(0);
        let r = warp_counter(&Falling(&g), false, 64, Scale::ns(), &[0, 0], 1_000_000);
        assert!(
            r.skipped.as_deref().unwrap().contains("per-thread"),
            "{r:?}"
        );
        assert_eq!(r.window_ns, 1_000_000);
        assert_eq!(g.load(Ordering::SeqCst), 0, "the counter was read");
    }

    /// A counter that falls by one on every read: every reading after the
    /// first is a step back of one count, whichever thread takes it.
    struct Falling<'a>(&'a AtomicU64);

    impl Counter for Falling<'_> {
        fn read(&self) -> u64 {
            u64::MAX / 2 - self.0.fetch_add(1, Ordering::SeqCst)
        }
    }

    /// A counter that never moves.
    struct Frozen;

    impl Counter for Frozen {
        fn read(&self) -> u64 {
            42
        }
    }

    #[test]
    fn every_step_back_is_counted_and_equal_readings_are_not() {
        let g = AtomicU64::new(0);
        let o = warp_pair(|_| Falling(&g), 64, None, 2_000_000).unwrap();
        assert_eq!(o.iterations, g.load(Ordering::SeqCst));
        assert_eq!(o.backwards_steps, o.iterations - 1, "{o:?}");
        assert_eq!(o.max_backwards_ticks, 1);
        let o = warp_pair(|_| Frozen, 64, None, 2_000_000).unwrap();
        assert!(o.iterations >= 2, "{o:?}");
        assert_eq!(o.backwards_steps, 0, "{o:?}");
        assert_eq!(o.max_backwards_ticks, 0);
    }

    #[test]
    fn a_pair_runs_for_its_whole_window() {
        let window = 30_000_000;
        let t0 = sys::clock_ns(libc::CLOCK_MONOTONIC);
        let o = warp_pair(|_| Frozen, 64, None, window).unwrap();
        let took = sys::clock_ns(libc::CLOCK_MONOTONIC) - t0;
        assert!(took >= window, "{took} ns < {window} ns");
        assert!(o.iterations >= 512, "{o:?}");
    }

    #[test]
    fn the_first_cpu_is_paired_with_each_other_one_and_the_pairs_add_up() {
        // Both threads of each pair pinned to CPU 0, which every machine has.
        let g = AtomicU64::new(0);
        let scale = Scale::from_hz(2e9);
        let r = warp_counter(&Falling(&g), true, 64, scale, &[0, 0, 0], 1_000_000);
        assert_eq!(r.skipped, None);
        assert!(r.errors.is_empty(), "{r:?}");
        assert_eq!(r.pairs, vec![[0, 0], [0, 0]]);
        assert_eq!(r.window_ns, 1_000_000);
        // One reading of each pair (its first) has no reading before it.
        assert_eq!(r.iterations, g.load(Ordering::SeqCst));
        assert_eq!(r.backwards_steps, r.iterations - 2, "{r:?}");
        assert_eq!(r.max_backwards_ticks, 1);
        assert_eq!(r.max_backwards_ns, 0.5);
        // Two CPUs are one pair.
        let r = warp_counter(&Frozen, true, 64, scale, &[0, 0], 1_000_000);
        assert_eq!((r.skipped, r.pairs), (None, vec![[0, 0]]));
    }
}
