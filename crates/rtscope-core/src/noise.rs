//! OS noise, measured oslat's way: a thread reads a counter in a tight loop;
//! whenever two consecutive readings are further apart than a threshold,
//! something else ran on the CPU (an interrupt, a softirq, another thread,
//! an NMI, the hypervisor) and the gap is recorded.
//!
//! The loop ([`busy_loop`]) does no allocation, takes no lock and makes no
//! system call: read, subtract, compare, and for a gap push `(start, length)`
//! in counter ticks into a preallocated wait-free ring (a full ring counts
//! the gap as dropped). Every 1024 iterations it publishes its current
//! reading (a relaxed store) so the aggregator knows up to when it has seen
//! every gap, and looks at the stop flag.
//!
//! Ticks become CLOCK_MONOTONIC ns through a [`TickMap`]: pairs of (counter,
//! CLOCK_MONOTONIC) readings taken by the aggregator during the run, so that
//! gaps line up with kernel trace events stamped with the `mono` trace clock.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub mod throttle;

use crate::clock::{with_counter, Counter, Scale, Source};

/// One gap: the reading before it and its length, in counter ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gap {
    /// The counter reading before the gap.
    pub start: u64,
    /// The gap's length, ticks.
    pub ticks: u64,
}

/// What the loop reports when it ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoopTotals {
    /// First and last readings.
    pub first: u64,
    /// The last reading.
    pub last: u64,
    /// Loop iterations (one counter read each).
    pub iterations: u64,
    /// The shortest iteration: the loop's own cost, in ticks.
    pub min_ticks: u64,
    /// Gaps at or above the threshold, and their summed length.
    pub gaps: u64,
    /// Their summed length, ticks.
    pub gap_ticks: u64,
    /// The longest single iteration.
    pub max_ticks: u64,
    /// Gaps that did not fit in the ring (counted in the totals above).
    pub dropped: u64,
}

/// The producer end of a gap ring.
pub type GapProducer = rtrb::Producer<Gap>;
/// The consumer end of a gap ring.
pub type GapConsumer = rtrb::Consumer<Gap>;

/// A gap ring of `capacity`, touched so that its memory is resident.
pub fn gap_ring(capacity: usize) -> (GapProducer, GapConsumer) {
    let (mut p, mut c) = rtrb::RingBuffer::new(capacity.max(16));
    let mut n = 0;
    while p.push(Gap::default()).is_ok() {
        n += 1;
    }
    if let Ok(ch) = c.read_chunk(n) {
        ch.commit_all();
    }
    (p, c)
}

/// The busy loop on counter `c` (`width_bits` wide): runs until `stop` is
/// raised or `duration_ticks` have passed, pushing every iteration of at
/// least `threshold_ticks` into `out`. `progress` receives the current
/// reading every 1024 iterations.
#[inline(never)]
pub fn busy_loop<C: Counter>(
    c: &C,
    width_bits: u32,
    threshold_ticks: u64,
    duration_ticks: u64,
    stop: &AtomicBool,
    progress: &AtomicU64,
    out: &mut GapProducer,
) -> LoopTotals {
    let mask = if width_bits >= 64 {
        u64::MAX
    } else {
        (1u64 << width_bits) - 1
    };
    let first = c.read();
    progress.store(first, Ordering::Relaxed);
    let mut prev = first;
    let mut t = LoopTotals {
        first,
        min_ticks: u64::MAX,
        ..Default::default()
    };
    loop {
        let now = c.read();
        let d = now.wrapping_sub(prev) & mask;
        t.iterations += 1;
        if d < t.min_ticks {
            t.min_ticks = d;
        }
        if d >= threshold_ticks {
            t.gaps += 1;
            t.gap_ticks += d;
            if d > t.max_ticks {
                t.max_ticks = d;
            }
            if out
                .push(Gap {
                    start: prev,
                    ticks: d,
                })
                .is_err()
            {
                t.dropped += 1;
            }
        } else if d > t.max_ticks {
            t.max_ticks = d;
        }
        prev = now;
        if t.iterations & 1023 == 0 {
            progress.store(now, Ordering::Release);
            if stop.load(Ordering::Relaxed) || (now.wrapping_sub(first) & mask) >= duration_ticks {
                break;
            }
        }
    }
    t.last = prev;
    progress.store(prev, Ordering::Release);
    if t.min_ticks == u64::MAX {
        t.min_ticks = 0;
    }
    t
}

/// [`busy_loop`] on an opened [`Source`], compiled once per counter type.
pub fn busy_loop_on(
    src: &Source,
    threshold_ticks: u64,
    duration_ticks: u64,
    stop: &AtomicBool,
    progress: &AtomicU64,
    out: &mut GapProducer,
) -> LoopTotals {
    let w = src.id().width_bits();
    with_counter!(src, c => busy_loop(c, w, threshold_ticks, duration_ticks, stop, progress, out))
}

/// Counter ticks to CLOCK_MONOTONIC ns, from (ticks, ns) pairs read during
/// the run: piecewise-linear between pairs, the calibrated scale outside.
#[derive(Debug, Clone)]
pub struct TickMap {
    scale: Scale,
    width_bits: u32,
    pairs: Vec<(u64, u64)>,
}

impl TickMap {
    /// A map from ticks to ns through `scale`, for a counter of `width_bits` bits.
    pub fn new(scale: Scale, width_bits: u32) -> Self {
        TickMap {
            scale,
            width_bits,
            pairs: Vec::new(),
        }
    }

    /// Adds a pair (they must come in time order).
    pub fn push(&mut self, ticks: u64, mono_ns: u64) {
        self.pairs.push((ticks, mono_ns));
    }

    /// Reads `src` and CLOCK_MONOTONIC back to back (the tighter of three
    /// tries, counter read on both sides) and adds the pair.
    pub fn sample(&mut self, src: &Source) {
        self.sample_with(
            || src.read(),
            || crate::sys::clock_ns(libc::CLOCK_MONOTONIC),
        );
    }

    /// [`sample`](Self::sample) with the counter read by `read` and
    /// CLOCK_MONOTONIC by `mono` (simulated clocks in the tests).
    fn sample_with(&mut self, mut read: impl FnMut() -> u64, mut mono: impl FnMut() -> u64) {
        let mut best: Option<(u64, u64, u64)> = None;
        for _ in 0..3 {
            let a = read();
            let m = mono();
            let b = read();
            let w = crate::clock::delta(a, b, self.width_bits).max(0) as u64;
            if best.is_none_or(|(bw, _, _)| w < bw) {
                best = Some((w, a.wrapping_add(w / 2), m));
            }
        }
        if let Some((_, t, m)) = best {
            self.push(t, m);
        }
    }

    /// The number of pairs.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// No pair recorded yet.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// A length in ticks as ns.
    pub fn len_ns(&self, ticks: u64) -> u64 {
        if self.pairs.len() >= 2 {
            let (t0, m0) = self.pairs[0];
            let (t1, m1) = self.pairs[self.pairs.len() - 1];
            let dt = crate::clock::delta(t0, t1, self.width_bits);
            if dt > 0 && m1 > m0 {
                return ((ticks as u128 * (m1 - m0) as u128) / dt as u128) as u64;
            }
        }
        self.scale.to_ns(ticks)
    }

    /// A reading as CLOCK_MONOTONIC ns.
    pub fn to_mono(&self, ticks: u64) -> u64 {
        let p = &self.pairs;
        if p.is_empty() {
            return self.scale.to_ns(ticks);
        }
        // Signed, so that on a counter narrower than 64 bits a reading before
        // a pair is behind it (not nearly 2^width ticks ahead).
        let d = |a: u64, b: u64| crate::clock::warp::signed_delta(a, b, self.width_bits);
        // The last pair at or before `ticks` (pairs are in time order).
        let i = p.partition_point(|&(t, _)| d(t, ticks) >= 0);
        let (lo, hi) = match i {
            0 => (p[0], p.get(1).copied()),
            i if i >= p.len() => (p[p.len() - 1], None),
            i => (p[i - 1], Some(p[i])),
        };
        let off = d(lo.0, ticks);
        let ns = match hi {
            Some(h) if d(lo.0, h.0) > 0 && off >= 0 => {
                let span_t = d(lo.0, h.0) as i128;
                let span_m = h.1 as i128 - lo.1 as i128;
                (off as i128 * span_m / span_t) as i64
            }
            _ => {
                if off >= 0 {
                    self.len_ns(off as u64) as i64
                } else {
                    -(self.len_ns(off.unsigned_abs()) as i64)
                }
            }
        };
        (lo.1 as i64 + ns).max(0) as u64
    }
}

/// oslat's histogram: every loop iteration in 1 µs buckets, bucket `us`
/// holding iterations of `[us-1, us)` µs; the last bucket also holds longer
/// ones. Built from the gap lengths (all iterations below the threshold
/// count in bucket 1), so it needs a threshold of at most 1 µs.
pub fn oslat_buckets(iterations: u64, gaps_ns: &[u64], buckets: usize) -> Vec<u64> {
    let mut b = vec![0u64; buckets.max(1)];
    let n = b.len();
    for &g in gaps_ns {
        let us = (g / 1000) as usize; // oslat: index = delta / counter_mhz
        b[us.min(n - 1)] += 1;
    }
    b[0] += iterations.saturating_sub(gaps_ns.len() as u64);
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A counter that returns scripted readings.
    struct Script {
        vals: Vec<u64>,
        i: Cell<usize>,
        stop_at: usize,
    }
    impl Counter for Script {
        fn read(&self) -> u64 {
            let i = self.i.get();
            self.i.set(i + 1);
            if i >= self.stop_at {
                // Past the script: jump far ahead so the duration ends the loop.
                return self.vals[self.vals.len() - 1] + 1_000_000 + 10 * i as u64;
            }
            self.vals[i.min(self.vals.len() - 1)]
        }
    }

    #[test]
    fn gaps_above_threshold_are_recorded() {
        // Readings 10 ticks apart, with a 500-tick and a 100-tick jump.
        let mut vals = Vec::new();
        let mut t = 1000u64;
        for i in 0..3000 {
            t += match i {
                100 => 500,
                2000 => 100,
                _ => 10,
            };
            vals.push(t);
        }
        let n = vals.len();
        let c = Script {
            vals,
            i: Cell::new(0),
            stop_at: n,
        };
        let (mut p, mut cons) = gap_ring(64);
        let stop = AtomicBool::new(false);
        let prog = AtomicU64::new(0);
        let t = busy_loop(&c, 64, 100, 900_000, &stop, &prog, &mut p);
        let mut gaps = Vec::new();
        while let Ok(g) = cons.pop() {
            gaps.push(g);
        }
        // The two jumps, then the final jump past the script that ends the loop.
        assert_eq!(gaps[0].ticks, 500);
        assert_eq!(gaps[1].ticks, 100);
        assert_eq!(gaps[0].start, 1000 + 100 * 10);
        assert_eq!(t.min_ticks, 10);
        assert_eq!(t.gaps, gaps.len() as u64);
        assert_eq!(t.dropped, 0);
        assert!(t.iterations >= 3000);
        assert_eq!(prog.load(Ordering::Relaxed), t.last);
    }

    #[test]
    fn full_ring_drops_and_counts() {
        let vals: Vec<u64> = (0..5000u64).map(|i| i * 1000).collect();
        let c = Script {
            vals,
            i: Cell::new(0),
            stop_at: 5000,
        };
        let (mut p, _cons) = gap_ring(16);
        let t = busy_loop(
            &c,
            64,
            1000,
            10_000_000,
            &AtomicBool::new(false),
            &AtomicU64::new(0),
            &mut p,
        );
        assert!(t.dropped > 0);
        assert_eq!(t.gaps, t.dropped + 16);
    }

    #[test]
    fn stop_flag_ends_the_loop() {
        let c = crate::clock::Source::open(crate::clock::SourceId::Monotonic).unwrap();
        let (mut p, _c) = gap_ring(1024);
        let stop = AtomicBool::new(true);
        let t = busy_loop_on(&c, u64::MAX, u64::MAX, &stop, &AtomicU64::new(0), &mut p);
        assert_eq!(t.iterations, 1024);
    }

    #[test]
    fn tick_map_interpolates() {
        // 2 ticks per ns, monotonic offset 1_000_000.
        let mut m = TickMap::new(Scale::from_hz(2e9), 64);
        m.push(0, 1_000_000);
        m.push(2_000_000, 2_000_000);
        m.push(4_000_000, 3_000_000);
        assert_eq!(m.to_mono(1_000_000), 1_500_000);
        assert_eq!(m.to_mono(3_000_000), 2_500_000);
        // Outside the pairs: the end-to-end rate.
        assert_eq!(m.to_mono(6_000_000), 4_000_000);
        assert_eq!(m.len_ns(2000), 1000);
        // Without pairs: the scale.
        let e = TickMap::new(Scale::from_hz(2e9), 64);
        assert_eq!(e.len_ns(2000), 1000);
    }

    #[test]
    fn oslat_bucket_layout() {
        let b = oslat_buckets(100, &[1000, 1999, 2500, 40_000], 32);
        assert_eq!(b[0], 96);
        assert_eq!(b[1], 2);
        assert_eq!(b[2], 1);
        assert_eq!(b[31], 1);
        assert_eq!(b.iter().sum::<u64>(), 100);
    }

    /// A counter whose readings are `vals[0]`, `vals[1]`, ...; reading past
    /// the end fails the test (a loop that does not end when it should).
    struct Readings {
        vals: Vec<u64>,
        i: Cell<usize>,
    }
    impl Counter for Readings {
        fn read(&self) -> u64 {
            let i = self.i.get();
            self.i.set(i + 1);
            assert!(i < self.vals.len(), "the loop read past its script");
            self.vals[i]
        }
    }

    /// Readings from `first` on, reading `k` `step(k)` ticks after reading
    /// `k - 1`, cut to `width_bits` as a counter of that width does.
    fn readings(first: u64, width_bits: u32, n: usize, step: impl Fn(usize) -> u64) -> Readings {
        let mask = if width_bits >= 64 {
            u64::MAX
        } else {
            (1u64 << width_bits) - 1
        };
        let mut vals = vec![first];
        let mut t = first;
        for k in 1..n {
            t = t.wrapping_add(step(k)) & mask;
            vals.push(t);
        }
        Readings {
            vals,
            i: Cell::new(0),
        }
    }

    #[test]
    fn totals_of_a_scripted_run() {
        // Steps of 10 ticks; gaps (threshold 100) of 150, 500 and exactly 100
        // at iterations 100, 300 and 700; a 37-tick step at 900.
        let c = readings(1000, 64, 4096, |k| match k {
            100 => 150,
            300 => 500,
            700 => 100,
            900 => 37,
            _ => 10,
        });
        let (mut p, mut cons) = gap_ring(64);
        let prog = AtomicU64::new(0);
        // After 1024 iterations 10 987 ticks have passed: the 10 000-tick run ends.
        let t = busy_loop(&c, 64, 100, 10_000, &AtomicBool::new(false), &prog, &mut p);
        assert_eq!(
            t,
            LoopTotals {
                first: 1000,
                last: 1000 + 1020 * 10 + 150 + 500 + 100 + 37,
                iterations: 1024,
                min_ticks: 10,
                gaps: 3,
                gap_ticks: 150 + 500 + 100,
                max_ticks: 500,
                dropped: 0,
            }
        );
        assert_eq!(prog.load(Ordering::Relaxed), t.last);
        let gaps: Vec<Gap> = std::iter::from_fn(|| cons.pop().ok()).collect();
        assert_eq!(
            gaps,
            [
                Gap {
                    start: 1000 + 99 * 10,
                    ticks: 150
                },
                Gap {
                    start: 1000 + 298 * 10 + 150,
                    ticks: 500
                },
                Gap {
                    start: 1000 + 697 * 10 + 150 + 500,
                    ticks: 100
                },
            ]
        );
    }

    #[test]
    fn a_narrow_counter_wraps_without_a_gap() {
        // A 32-bit counter 5000 ticks below its wrap, steps of 10 (one of 37):
        // the wrap is an ordinary step, and the 20 000-tick run ends after
        // 2048 iterations (20 507 ticks), on the far side of the wrap.
        let c = readings((1u64 << 32) - 5000, 32, 8192, |k| {
            if k == 1500 {
                37
            } else {
                10
            }
        });
        let (mut p, mut cons) = gap_ring(64);
        let prog = AtomicU64::new(0);
        let t = busy_loop(&c, 32, 100, 20_000, &AtomicBool::new(false), &prog, &mut p);
        assert_eq!(
            t,
            LoopTotals {
                first: (1u64 << 32) - 5000,
                last: 2047 * 10 + 37 - 5000,
                iterations: 2048,
                min_ticks: 10,
                gaps: 0,
                gap_ticks: 0,
                max_ticks: 37,
                dropped: 0,
            }
        );
        assert_eq!(prog.load(Ordering::Relaxed), t.last);
        assert!(cons.pop().is_err());
    }

    #[test]
    fn tick_map_len_and_is_empty() {
        let mut m = TickMap::new(Scale::ns(), 64);
        assert!(m.is_empty());
        assert_eq!(m.len(), 0);
        m.push(10, 100);
        assert!(!m.is_empty());
        assert_eq!(m.len(), 1);
        m.push(20, 110);
        assert_eq!(m.len(), 2);
    }

    /// Pairs 0.5 ns a tick from 1000 to 3000, 3 ns a tick from 3000 to 4000
    /// (4/3 ns a tick end to end); the scale says 1 ns a tick.
    fn bent_map() -> TickMap {
        let mut m = TickMap::new(Scale::from_hz(1e9), 64);
        m.push(1000, 50_000);
        m.push(3000, 51_000);
        m.push(4000, 54_000);
        m
    }

    #[test]
    fn len_ns_uses_the_end_to_end_rate_of_the_pairs() {
        let m = bent_map();
        assert_eq!(m.len_ns(3000), 4000);
        assert_eq!(m.len_ns(300), 400);
        // One pair has no rate: the scale.
        let mut one = TickMap::new(Scale::from_hz(1e9), 64);
        one.push(1000, 50_000);
        assert_eq!(one.len_ns(3000), 3000);
    }

    #[test]
    fn len_ns_falls_back_to_the_scale_without_a_rate() {
        // The counter did not advance between the pairs.
        let mut m = TickMap::new(Scale::from_hz(1e9), 64);
        m.push(1000, 50_000);
        m.push(1000, 50_010);
        assert_eq!(m.len_ns(3000), 3000);
        // CLOCK_MONOTONIC did not advance.
        let mut m = TickMap::new(Scale::from_hz(1e9), 64);
        m.push(1000, 50_000);
        m.push(2000, 50_000);
        assert_eq!(m.len_ns(3000), 3000);
    }

    #[test]
    fn to_mono_is_piecewise_between_pairs() {
        let m = bent_map();
        // On each pair.
        assert_eq!(m.to_mono(1000), 50_000);
        assert_eq!(m.to_mono(3000), 51_000);
        assert_eq!(m.to_mono(4000), 54_000);
        // Between pairs: each segment's own rate.
        assert_eq!(m.to_mono(2000), 50_500);
        assert_eq!(m.to_mono(3500), 52_500);
        // Outside the pairs: the end-to-end rate (4/3 ns a tick).
        assert_eq!(m.to_mono(400), 50_000 - 800);
        assert_eq!(m.to_mono(4300), 54_000 + 400);
        // Without pairs: the scale.
        assert_eq!(TickMap::new(Scale::from_hz(1e9), 64).to_mono(4300), 4300);
    }

    #[test]
    fn to_mono_on_a_narrow_counter_across_its_wrap() {
        // A 32-bit counter that wraps between the first two pairs: 0.5 ns a
        // tick, then 3 ns a tick, as in `bent_map`, shifted 2000 ticks below
        // the wrap.
        let base = (1u64 << 32) - 2000;
        let at = |t: u64| (base + t) & 0xFFFF_FFFF;
        let mut m = TickMap::new(Scale::from_hz(1e9), 32);
        m.push(at(1000), 50_000);
        m.push(at(3000), 51_000);
        m.push(at(4000), 54_000);
        assert_eq!(m.len_ns(3000), 4000);
        assert_eq!(m.to_mono(at(1000)), 50_000);
        assert_eq!(m.to_mono(at(2000)), 50_500);
        assert_eq!(m.to_mono(at(3500)), 52_500);
        assert_eq!(m.to_mono(at(400)), 50_000 - 800);
        assert_eq!(m.to_mono(at(4300)), 54_000 + 400);
    }

    #[test]
    fn sample_keeps_the_tightest_of_three_tries() {
        // Tries of 20, 10 and 30 ticks around the CLOCK_MONOTONIC reading:
        // the second is kept, stamped at its middle.
        let reads = [100u64, 120, 200, 210, 300, 330];
        let monos = [1000u64, 2000, 3000];
        let (mut r, mut n) = (reads.iter().copied(), monos.iter().copied());
        let mut m = TickMap::new(Scale::ns(), 64);
        m.sample_with(|| r.next().unwrap(), || n.next().unwrap());
        assert_eq!(m.pairs, [(205, 2000)]);
        assert!(r.next().is_none() && n.next().is_none());
    }

    #[test]
    fn sample_adds_a_pair_from_the_source() {
        // The monotonic source reads CLOCK_MONOTONIC itself, so both halves
        // of the pair lie between readings taken before and after.
        let src = crate::clock::Source::open(crate::clock::SourceId::Monotonic).unwrap();
        let mut m = TickMap::new(Scale::ns(), 64);
        let before = crate::sys::clock_ns(libc::CLOCK_MONOTONIC);
        m.sample(&src);
        let after = crate::sys::clock_ns(libc::CLOCK_MONOTONIC);
        assert_eq!(m.len(), 1);
        let (t, mono) = m.pairs[0];
        assert!((before..=after).contains(&t), "{before} {t} {after}");
        assert!((before..=after).contains(&mono), "{before} {mono} {after}");
    }
}
