//! Latency over time: per-interval count, min, mean and max.
//!
//! The interval starts at 1 s. Memory stays bounded for runs of any length:
//! when the number of points would exceed the cap, neighbouring points are
//! merged in pairs and the interval doubles (1 s, 2 s, 4 s, ...), so a
//! multi-day run keeps at most `max_points` points while short runs keep
//! full 1 s resolution.

use crate::result::{Timeline, TimelinePoint};

/// Default cap on the number of timeline points (two hours at 1 s).
pub const DEFAULT_MAX_POINTS: usize = 7200;

#[derive(Debug, Clone, Copy, Default)]
struct Point {
    count: u64,
    min: u64,
    max: u64,
    sum: u128,
}

impl Point {
    fn merge(&mut self, o: &Point) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *o;
            return;
        }
        self.count += o.count;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.sum += o.sum;
    }
}

/// Builds a [`Timeline`] from (time, latency) pairs.
#[derive(Debug, Clone)]
pub struct TimelineBuilder {
    origin_ns: u64,
    interval_ns: u64,
    max_points: usize,
    points: Vec<Point>,
}

impl TimelineBuilder {
    /// A builder whose first interval starts at `origin_ns`.
    pub fn new(origin_ns: u64, interval_ns: u64, max_points: usize) -> Self {
        let max_points = max_points.max(2);
        TimelineBuilder {
            origin_ns,
            interval_ns: interval_ns.max(1),
            max_points,
            points: Vec::with_capacity(max_points.min(DEFAULT_MAX_POINTS)),
        }
    }

    /// Adds a latency observed at absolute time `t_ns`.
    #[inline]
    pub fn push(&mut self, t_ns: u64, latency_ns: u64) {
        let rel = t_ns.saturating_sub(self.origin_ns);
        let mut idx = (rel / self.interval_ns) as usize;
        while idx >= self.max_points {
            self.coarsen();
            idx = (rel / self.interval_ns) as usize;
        }
        if idx >= self.points.len() {
            self.points.resize(idx + 1, Point::default());
        }
        let p = &mut self.points[idx];
        p.merge(&Point {
            count: 1,
            min: latency_ns,
            max: latency_ns,
            sum: u128::from(latency_ns),
        });
    }

    fn coarsen(&mut self) {
        let merged: Vec<Point> = self
            .points
            .chunks(2)
            .map(|c| {
                let mut p = c[0];
                if let Some(q) = c.get(1) {
                    p.merge(q);
                }
                p
            })
            .collect();
        self.points = merged;
        self.interval_ns *= 2;
    }

    /// Current interval width.
    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// The timeline for the result document (empty intervals included, with count 0).
    pub fn export(&self) -> Timeline {
        Timeline {
            interval_ns: self.interval_ns,
            points: self
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| TimelinePoint {
                    t_ns: i as u64 * self.interval_ns,
                    count: p.count,
                    min_ns: p.min,
                    mean_ns: if p.count == 0 {
                        0.0
                    } else {
                        p.sum as f64 / p.count as f64
                    },
                    max_ns: p.max,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_second_points() {
        let mut t = TimelineBuilder::new(1_000, 1_000_000_000, 100);
        t.push(1_000 + 10, 5);
        t.push(1_000 + 20, 15);
        t.push(1_000 + 2_500_000_000, 7);
        let e = t.export();
        assert_eq!(e.points.len(), 3);
        assert_eq!(e.points[0].count, 2);
        assert_eq!(e.points[0].min_ns, 5);
        assert_eq!(e.points[0].max_ns, 15);
        assert_eq!(e.points[0].mean_ns, 10.0);
        assert_eq!(e.points[1].count, 0);
        assert_eq!(e.points[2].t_ns, 2_000_000_000);
    }

    #[test]
    fn coarsening_keeps_samples_at_their_time() {
        let mut t = TimelineBuilder::new(0, 10, 4);
        for at in (0..=80).step_by(10) {
            t.push(at, at);
        }
        assert_eq!(t.interval_ns(), 40);
        let e = t.export();
        assert_eq!(e.interval_ns, 40);
        let got: Vec<(u64, u64, u64, u64)> = e
            .points
            .iter()
            .map(|p| (p.t_ns, p.count, p.min_ns, p.max_ns))
            .collect();
        assert_eq!(got, vec![(0, 4, 0, 30), (40, 4, 40, 70), (80, 1, 80, 80)]);
    }

    #[test]
    fn stays_bounded_for_long_runs() {
        let mut t = TimelineBuilder::new(0, 1_000_000_000, 10);
        // 3 days at one sample per second.
        for s in 0..(3 * 86_400u64) {
            t.push(s * 1_000_000_000, s % 100);
        }
        let e = t.export();
        assert!(e.points.len() <= 10);
        assert_eq!(e.points.iter().map(|p| p.count).sum::<u64>(), 3 * 86_400);
        assert!(e.interval_ns >= 3 * 86_400 * 1_000_000_000 / 10);
        assert_eq!(e.points.iter().map(|p| p.max_ns).max(), Some(99));
    }
}
