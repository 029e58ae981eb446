//! The figures of the last [`WINDOW_S`] seconds of a live run, per series,
//! for the `rtscope_window_*` gauges of `/metrics`.
//!
//! A gauge that held only the last snapshot interval (half a second) showed
//! a scraper a tenth of the time at a 5 s scrape interval: a spike between
//! two scrapes was never seen. The window slides in snapshot steps (0.5 s)
//! and spans 60 s, so every scrape made at most 60 s after the previous one
//! sees every sample since that scrape (each spike at least once, possibly
//! in several scrapes). Nothing is reset by a scrape, so any number of
//! scrapers (two Prometheus servers of a pair) read the same figures.
//!
//! The window is the server's: it is built from the snapshots of the HTTP
//! feed, each carrying its interval's non-empty log buckets (the aggregator's,
//! 3 % wide), added to a merged histogram per series as they come and taken
//! out as they leave the window. Memory is bounded: one histogram of
//! [`INTERVAL_BUCKETS`](super::INTERVAL_BUCKETS) counters per series, and at
//! most [`MAX_INTERVALS`] intervals' non-empty buckets.

use std::collections::VecDeque;

use super::{bucket_quantile, Snapshot, INTERVAL_BUCKETS};

/// The span of the window, seconds.
pub const WINDOW_S: f64 = 60.0;

/// The most intervals the window keeps, whatever their length (120 at the
/// HTTP feed's 0.5 s; the final snapshot may come sooner).
pub const MAX_INTERVALS: usize = 240;

/// An interval's non-empty log buckets, `(bucket, count)`.
type Buckets = Vec<(u16, u32)>;

/// One snapshot interval: when it ended, and per series its max and its
/// non-empty buckets.
#[derive(Debug)]
struct Interval {
    t: f64,
    series: Vec<(Option<i64>, Buckets)>,
}

/// The window's figures of one series.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct WindowFigures {
    /// Samples in the window.
    pub count: u64,
    pub max_ns: Option<i64>,
    pub p99_ns: Option<u64>,
}

/// The last [`WINDOW_S`] seconds of every series of a feed.
#[derive(Debug)]
pub struct Window {
    span_s: f64,
    intervals: VecDeque<Interval>,
    /// Per series: the merged counts of the intervals in the window.
    counts: Vec<Vec<u64>>,
    totals: Vec<u64>,
}

impl Default for Window {
    fn default() -> Self {
        Window::new(WINDOW_S)
    }
}

impl Window {
    /// An empty window of `span_s` seconds.
    pub fn new(span_s: f64) -> Self {
        Window {
            span_s,
            intervals: VecDeque::new(),
            counts: vec![],
            totals: vec![],
        }
    }

    /// Takes in a snapshot's interval (its buckets, its max), and lets go of
    /// the intervals that ended `span_s` or more before it.
    pub fn push(&mut self, s: &Snapshot) {
        if self.counts.len() != s.series.len() {
            // A feed's series never change; start over if they did.
            self.intervals.clear();
            self.counts = vec![vec![0; INTERVAL_BUCKETS]; s.series.len()];
            self.totals = vec![0; s.series.len()];
        }
        let mut iv = Interval {
            t: s.elapsed_s,
            series: Vec::with_capacity(s.series.len()),
        };
        for (i, x) in s.series.iter().enumerate() {
            for &(b, n) in &x.interval.buckets {
                self.counts[i][usize::from(b)] += u64::from(n);
                self.totals[i] += u64::from(n);
            }
            iv.series
                .push((x.interval.max_ns, x.interval.buckets.clone()));
        }
        self.intervals.push_back(iv);
        while let Some(first) = self.intervals.front() {
            if first.t > s.elapsed_s - self.span_s && self.intervals.len() <= MAX_INTERVALS {
                break;
            }
            let Some(old) = self.intervals.pop_front() else {
                break;
            };
            for (i, (_, buckets)) in old.series.iter().enumerate() {
                for &(b, n) in buckets {
                    self.counts[i][usize::from(b)] -= u64::from(n);
                    self.totals[i] -= u64::from(n);
                }
            }
        }
    }

    /// Intervals in the window now.
    #[cfg(test)]
    pub fn intervals(&self) -> usize {
        self.intervals.len()
    }

    /// The figures of series `i` over the window (zero and `None`s when it
    /// had no sample there).
    pub fn figures(&self, i: usize) -> WindowFigures {
        let max = self
            .intervals
            .iter()
            .filter_map(|iv| iv.series.get(i).and_then(|x| x.0))
            .max();
        let count = self.totals.get(i).copied().unwrap_or(0);
        let p99 = match (max, self.counts.get(i)) {
            (Some(m), Some(c)) if count > 0 => Some(bucket_quantile(
                c.iter()
                    .enumerate()
                    .filter(|x| *x.1 > 0)
                    .map(|(b, n)| (b as u16, *n)),
                count,
                0.99,
                m.max(0) as u64,
            )),
            _ => None,
        };
        WindowFigures {
            count,
            max_ns: max,
            p99_ns: p99,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::{IntervalFigures, RunInfo, SeriesSnapshot};
    use rtscope_core::record::blocks::bucket_of;
    use std::sync::Arc;

    fn series(label: &str, values: &[i64]) -> SeriesSnapshot {
        let mut buckets: Vec<(u16, u32)> = vec![];
        for &v in values {
            let b = bucket_of(v.max(0) as u64);
            match buckets.iter_mut().find(|x| x.0 == b) {
                Some(x) => x.1 += 1,
                None => buckets.push((b, 1)),
            }
        }
        buckets.sort_unstable();
        SeriesSnapshot {
            label: label.into(),
            count: 0,
            min_ns: None,
            mean_ns: None,
            p50_ns: None,
            p99_ns: None,
            p999_ns: None,
            max_ns: None,
            overruns: 0,
            dropped: 0,
            act_ns: None,
            late: 0,
            negative: 0,
            corrected: false,
            interval: IntervalFigures {
                count: values.len() as u64,
                max_ns: values.iter().copied().max(),
                buckets,
                ..Default::default()
            },
            buckets: vec![],
            sum_ns: 0.0,
        }
    }

    fn snap(t: f64, series: Vec<SeriesSnapshot>) -> Snapshot {
        Snapshot {
            seq: 1,
            state: "running",
            elapsed_s: t,
            interval_s: 0.5,
            run: Arc::new(RunInfo {
                experiment: "cyclic".into(),
                host: "h".into(),
                kernel: "k".into(),
                preemption: "p".into(),
                plan: "p".into(),
                started_at: "t".into(),
            }),
            series,
            loads: vec![],
            warnings: vec![],
            snapshots_dropped: 0,
        }
    }

    #[test]
    fn the_max_is_held_for_the_span_and_then_let_go() {
        let mut w = Window::new(10.0);
        w.push(&snap(1.0, vec![series("a", &[5_000, 900_000])]));
        w.push(&snap(2.0, vec![series("a", &[7_000])]));
        let f = w.figures(0);
        assert_eq!(f.count, 3);
        assert_eq!(f.max_ns, Some(900_000));
        // 10.999 s: the interval that ended at 1 s is 9.999 s old, kept.
        w.push(&snap(10.999, vec![series("a", &[])]));
        assert_eq!(w.figures(0).max_ns, Some(900_000));
        assert_eq!(w.intervals(), 3);
        // 11 s: exactly the span old, gone (the window is (t - span, t]).
        w.push(&snap(11.0, vec![series("a", &[])]));
        let f = w.figures(0);
        assert_eq!(f.max_ns, Some(7_000));
        assert_eq!(f.count, 1);
        assert_eq!(w.intervals(), 3);
        w.push(&snap(30.0, vec![series("a", &[])]));
        assert_eq!(w.figures(0), WindowFigures::default());
        assert_eq!(w.intervals(), 1);
        assert!(w.counts[0].iter().all(|&c| c == 0));
    }

    #[test]
    fn p99_is_of_the_merged_intervals_and_within_a_bucket() {
        let mut w = Window::new(60.0);
        // 990 samples at 10 us over three intervals, 10 at 1 ms: the p99 is
        // the 990th value, 10 us (its bucket's upper end).
        for (t, n) in [(0.5, 300), (1.0, 300), (1.5, 390)] {
            w.push(&snap(t, vec![series("a", &vec![10_000; n])]));
        }
        w.push(&snap(2.0, vec![series("a", &[1_000_000; 10])]));
        let f = w.figures(0);
        assert_eq!(f.count, 1000);
        let p99 = f.p99_ns.unwrap();
        assert!((10_000..=10_000 * 103 / 100).contains(&p99), "{p99}");
        // One more slow sample: the p99 moves to the slow samples.
        w.push(&snap(2.5, vec![series("a", &[1_000_000])]));
        let p99 = w.figures(0).p99_ns.unwrap();
        assert!((990_000..=1_000_000).contains(&p99), "{p99}");
        // Never above the max.
        assert_eq!(w.figures(0).max_ns, Some(1_000_000));
    }

    #[test]
    fn series_are_kept_apart_and_a_new_shape_starts_over() {
        let mut w = Window::new(60.0);
        w.push(&snap(
            1.0,
            vec![series("a", &[1_000]), series("b", &[2_000, 3_000])],
        ));
        assert_eq!(w.figures(0).count, 1);
        assert_eq!(w.figures(1).count, 2);
        assert_eq!(w.figures(1).max_ns, Some(3_000));
        assert_eq!(w.figures(2), WindowFigures::default());
        w.push(&snap(2.0, vec![series("a", &[4_000])]));
        assert_eq!(w.intervals(), 1);
        assert_eq!(w.figures(0).count, 1);
        assert_eq!(w.figures(0).max_ns, Some(4_000));
    }

    #[test]
    fn a_max_without_buckets_has_no_p99() {
        // Snapshots of a feed that keeps no buckets: the max is known, the
        // p99 is not.
        let mut w = Window::new(60.0);
        let mut x = series("a", &[5_000]);
        x.interval.buckets.clear();
        w.push(&snap(1.0, vec![x]));
        let f = w.figures(0);
        assert_eq!((f.count, f.max_ns, f.p99_ns), (0, Some(5_000), None));
    }

    #[test]
    fn the_number_of_intervals_is_bounded() {
        let mut w = Window::new(1e9);
        for i in 0..(MAX_INTERVALS + 10) {
            w.push(&snap(i as f64, vec![series("a", &[1_000])]));
        }
        assert_eq!(w.intervals(), MAX_INTERVALS);
        assert_eq!(w.figures(0).count, MAX_INTERVALS as u64);
    }
}
