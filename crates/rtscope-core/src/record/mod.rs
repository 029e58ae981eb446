//! The recorder: turns a stream of latency samples into the distributions the
//! result document holds — an HDR histogram with fixed bounds, exact running
//! statistics, a bounded timeline, the worst-N spikes and the overrun count.
//!
//! Nothing here runs on the real-time thread: the aggregator thread drains the
//! sample rings and feeds a [`SeriesRecorder`] per series. All allocation happens
//! when a recorder is created (the histogram's counts array, the spike heap and
//! the timeline's capacity), so recording itself does not allocate.
//!
//! A periodic series ([`SeriesRecorder::over_intended_periods`]) also keeps its
//! distribution over the *intended* periods: each period a late wake-up
//! skipped is counted at the lateness it had when the wake-up came (see
//! [`LatencyHistogram::record_missed`] and `docs/cyclic.md`), so that a thread
//! that stalled reports worse figures, not merely fewer samples.

pub mod blocks;
pub mod dispersion;
pub mod episodes;
mod histogram;
mod spikes;
mod stats;
mod timeline;

pub use blocks::BlockRecorder;
pub use histogram::{
    LatencyHistogram, MicrosecondBins, HIST_HIGHEST_NS, HIST_LOWEST_NS, HIST_SIGFIG,
};
pub use spikes::SpikeKeeper;
pub use stats::RunningStats;
pub use timeline::TimelineBuilder;

use crate::result::{Corrected, Series, SeriesCounters};
use crate::sample::Sample;

/// Everything kept for one series (one thread, or the union of all threads).
#[derive(Debug, Clone)]
pub struct SeriesRecorder {
    /// The latency histogram (HDR, exact to 0.1 %).
    pub hist: LatencyHistogram,
    /// Count, min, max, mean and standard deviation.
    pub stats: RunningStats,
    /// Max and mean per time bucket, for the plots.
    pub timeline: TimelineBuilder,
    /// The largest samples, with their times.
    pub spikes: SpikeKeeper,
    /// Per-block histograms (100 ms blocks, bounded).
    pub blocks: BlockRecorder,
    /// Periods skipped because a wake-up came after the following deadline.
    pub overruns: u64,
    /// Samples whose wake-up skipped at least one period.
    pub overrun_samples: u64,
    /// Samples with a negative latency (a clock step on CLOCK_REALTIME), recorded as 0.
    pub negative: u64,
    /// Samples above a threshold (`--fail-above`), if one is set.
    pub above_threshold: u64,
    threshold_ns: Option<u64>,
    /// The distribution over the intended periods, when asked for.
    pub corrected: Option<CorrectedRecorder>,
    /// The run's end ([`ending_at`](Self::ending_at)): deadlines at or after
    /// it were never due.
    end_ns: Option<u64>,
}

/// What a periodic series adds over its intended periods: for each late
/// wake-up, the periods it skipped, at the lateness they had when it came
/// (in the blocks of their own deadlines). The wake-ups themselves are the
/// recorder's own figures; the two are merged when the series is exported,
/// so a wake-up on time costs nothing more here.
#[derive(Debug, Clone)]
pub struct CorrectedRecorder {
    /// The histogram of the skipped periods.
    pub hist: LatencyHistogram,
    /// Their statistics.
    pub stats: RunningStats,
    /// Their per-block histograms.
    pub blocks: BlockRecorder,
    /// Skipped periods above the threshold, if one is set.
    pub above_threshold: u64,
    /// The period of the series' samples (0: given with each sample).
    period_ns: u64,
}

/// Of the periods a wake-up `latency` late skipped (`missed`, `period`
/// apart), how many were more than `threshold` late: those `k` in
/// `1..=missed` with `latency - k * period > threshold`.
fn missed_above(latency: u64, period: u64, missed: u64, threshold: u64) -> u64 {
    if period == 0 || latency <= threshold {
        return 0;
    }
    missed.min((latency - threshold - 1) / period)
}

impl SeriesRecorder {
    /// A recorder whose timeline is relative to `origin_ns` (the run's start on
    /// the measurement clock), keeping `spikes` worst samples.
    pub fn new(origin_ns: u64, spikes: usize, threshold_ns: Option<u64>) -> Self {
        SeriesRecorder {
            hist: LatencyHistogram::new(),
            stats: RunningStats::default(),
            timeline: TimelineBuilder::new(origin_ns, 1_000_000_000, timeline::DEFAULT_MAX_POINTS),
            spikes: SpikeKeeper::new(spikes),
            blocks: BlockRecorder::new(
                origin_ns,
                blocks::DEFAULT_BLOCK_NS,
                blocks::DEFAULT_MAX_BLOCKS,
            ),
            overruns: 0,
            overrun_samples: 0,
            negative: 0,
            above_threshold: 0,
            threshold_ns,
            corrected: None,
            end_ns: None,
        }
    }

    /// The run ends at `end_ns` (absolute, on the samples' clock; `None`:
    /// no end time): its loops wait for no deadline at or after it, so a
    /// wake-up that came after the end skipped only the periods due before
    /// it. The periods it skipped beyond the end are neither counted in
    /// `overruns` nor filled in over the intended periods (they need the
    /// period: [`record_in`](Self::record_in)'s, or the recorder's own).
    pub fn ending_at(mut self, end_ns: Option<u64>) -> Self {
        self.end_ns = end_ns;
        self
    }

    /// Of the periods `s` skipped (`s.overruns`, `period_ns` apart after
    /// its due time), those due before the end.
    fn skipped_before_end(&self, s: &Sample, lat: u64, period_ns: u64) -> u64 {
        let n = u64::from(s.overruns);
        match self.end_ns {
            Some(end) if period_ns > 0 => {
                let due = s.t_ns.saturating_sub(lat);
                n.min(end.saturating_sub(due).saturating_sub(1) / period_ns)
            }
            _ => n,
        }
    }

    /// Keeps the distribution over the intended periods too, for samples
    /// of a loop with period `period_ns` ([`record`](Self::record)), or of
    /// loops whose period comes with each sample ([`record_in`](Self::record_in),
    /// `period_ns` 0: the union of threads of different periods).
    pub fn over_intended_periods(mut self, period_ns: u64) -> Self {
        self.corrected = Some(CorrectedRecorder {
            hist: LatencyHistogram::new(),
            stats: RunningStats::default(),
            blocks: BlockRecorder::new(
                self.blocks.origin_ns(),
                blocks::DEFAULT_BLOCK_NS,
                blocks::DEFAULT_MAX_BLOCKS,
            ),
            above_threshold: 0,
            period_ns,
        });
        self
    }

    /// Records one sample (of a loop with the recorder's own period, if it
    /// keeps the distribution over the intended periods).
    #[inline]
    pub fn record(&mut self, s: &Sample) {
        let period = self.corrected.as_ref().map_or(0, |c| c.period_ns);
        self.record_in(s, period);
    }

    /// Records one sample of a loop with period `period_ns`: its skipped
    /// periods (`s.overruns`) join the distribution over the intended
    /// periods, if the recorder keeps one.
    #[inline]
    pub fn record_in(&mut self, s: &Sample, period_ns: u64) {
        let lat = if s.latency_ns < 0 {
            self.negative += 1;
            0
        } else {
            s.latency_ns as u64
        };
        self.hist.record(lat);
        self.stats.push(s.latency_ns);
        self.timeline.push(s.t_ns, lat);
        self.blocks.push(s.t_ns, lat);
        self.spikes.offer(s);
        let skipped = self.skipped_before_end(s, lat, period_ns);
        if skipped > 0 {
            self.overruns += skipped;
            self.overrun_samples += 1;
        }
        if let Some(t) = self.threshold_ns {
            if lat > t {
                self.above_threshold += 1;
            }
        }
        if let Some(c) = self.corrected.as_mut() {
            if skipped > 0 && period_ns > 0 {
                let missed = skipped.min(lat / period_ns);
                c.hist.record_missed(lat, period_ns, missed);
                // The smallest lateness first: latency - missed * period.
                c.stats
                    .push_progression((lat - missed * period_ns) as i64, period_ns, missed);
                c.blocks
                    .push_missed(s.t_ns.saturating_sub(lat), lat, period_ns, missed);
                if let Some(t) = self.threshold_ns {
                    c.above_threshold += missed_above(lat, period_ns, missed, t);
                }
            }
        }
    }

    /// Number of samples recorded.
    pub fn count(&self) -> u64 {
        self.stats.count()
    }

    /// The series as it goes into the result document.
    pub fn to_series(&self, label: &str, dropped: u64) -> Series {
        Series {
            label: label.to_string(),
            attributes: Default::default(),
            stats: self.stats.summary(&self.hist),
            counters: SeriesCounters {
                overruns: self.overruns,
                overrun_samples: self.overrun_samples,
                dropped,
                negative: self.negative,
                above_threshold: self.threshold_ns.map(|_| self.above_threshold),
            },
            histogram: self.hist.export(),
            timeline: self.timeline.export(),
            spikes: self.spikes.sorted(),
            blocks: Some(self.blocks.export()),
            repetitions: vec![],
            corrected: self.corrected.as_ref().map(|c| {
                // The wake-ups and the periods they skipped, together.
                let mut hist = self.hist.clone();
                hist.add(&c.hist);
                Corrected {
                    stats: self.stats.merged(&c.stats).summary(&hist),
                    histogram: hist.export(),
                    blocks: Some(self.blocks.merged(&c.blocks).export()),
                    above_threshold: self
                        .threshold_ns
                        .map(|_| self.above_threshold + c.above_threshold),
                }
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(seq: u64, t: u64, lat: i64, ovr: u32) -> Sample {
        Sample {
            seq,
            t_ns: t,
            latency_ns: lat,
            overruns: ovr,
            cpu: 0,
        }
    }

    #[test]
    fn counts_overruns_and_negatives() {
        let mut r = SeriesRecorder::new(0, 4, Some(100));
        r.record(&s(0, 10, 50, 0));
        r.record(&s(1, 20, 5000, 3));
        r.record(&s(2, 30, -7, 0));
        r.record(&s(3, 40, 150, 1));
        let ser = r.to_series("t", 2);
        assert_eq!(ser.counters.overruns, 4);
        assert_eq!(ser.counters.overrun_samples, 2);
        assert_eq!(ser.counters.negative, 1);
        assert_eq!(ser.counters.dropped, 2);
        assert_eq!(ser.counters.above_threshold, Some(2));
        assert_eq!(ser.stats.count, 4);
        assert_eq!(ser.stats.min_ns, -7);
        assert_eq!(ser.stats.max_ns, 5000);
        assert_eq!(ser.spikes[0].latency_ns, 5000);
        assert_eq!(ser.histogram.buckets.iter().map(|b| b[1]).sum::<u64>(), 4);
        let blocks = blocks::decode(ser.blocks.as_ref().unwrap()).unwrap();
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].iter().map(|b| b.1).sum::<u64>(), 4);
    }

    /// Over the intended periods: each skipped period at `latency - k *
    /// period`, in the block of its own deadline; the count is samples +
    /// overruns; the threshold counts periods; without a period nothing
    /// is filled in; a recorder not asked keeps nothing of the kind.
    #[test]
    fn intended_periods_count_the_skipped_ones_at_their_lateness() {
        let mut r = SeriesRecorder::new(0, 4, Some(1_000)).over_intended_periods(1_000);
        r.record(&s(0, 1_000, 200, 0));
        // Due at 2_000, woke at 6_500: deadlines 3_000..6_000 skipped.
        r.record(&s(1, 6_500, 4_500, 4));
        // Negative (a clock step): recorded as 0, nothing skipped.
        r.record(&s(2, 7_000, -5, 0));
        let ser = r.to_series("t", 0);
        let c = ser.corrected.clone().unwrap();
        assert_eq!(c.stats.count, 7);
        assert_eq!(ser.stats.count, 3);
        assert_eq!((c.stats.min_ns, c.stats.max_ns), (-5, 4_500));
        let want = (200 + 4_500 + 3_500 + 2_500 + 1_500 + 500 - 5) as f64 / 7.0;
        assert!((c.stats.mean_ns - want).abs() < 1e-9, "{}", c.stats.mean_ns);
        let values: Vec<[u64; 2]> = c.histogram.buckets.clone();
        assert_eq!(
            values,
            [
                [0, 1],
                [200, 1],
                [500, 1],
                [1_500, 1],
                [2_500, 1],
                [3_500, 1],
                [4_500, 1]
            ]
        );
        // 4500, 3500, 2500, 1500 are above 1000; of the wake-ups only 4500.
        assert_eq!(c.above_threshold, Some(4));
        assert_eq!(ser.counters.above_threshold, Some(1));
        assert_eq!(c.stats.p50_ns, 1_500);
        assert_eq!(ser.stats.p50_ns, 200);
        let blocks = blocks::decode(c.blocks.as_ref().unwrap()).unwrap();
        assert_eq!(blocks.iter().flatten().map(|b| b.1).sum::<u64>(), 7);
        // Another period for the same sample: what record_in is given.
        let mut u = SeriesRecorder::new(0, 4, None).over_intended_periods(0);
        u.record_in(&s(1, 6_500, 4_500, 4), 2_000);
        u.record(&s(2, 9_000, 9_000, 9));
        let c = u.to_series("all", 0).corrected.unwrap();
        assert_eq!(c.stats.count, 4, "4500, 2500, 500 and 9000 (no period)");
        assert_eq!(c.above_threshold, None);
        // Not asked for: nothing.
        let mut n = SeriesRecorder::new(0, 4, None);
        n.record(&s(1, 6_500, 4_500, 4));
        assert!(n.to_series("t", 0).corrected.is_none());
    }

    /// A wake-up after the run's end skipped only the periods due before
    /// it: due at 1000, 4500 late, period 1000, end at 3500: the deadlines
    /// 2000 and 3000 were due (3500 lateness 2500 and 1500), 4000 and 5000
    /// were not. Counters and the intended periods agree.
    #[test]
    fn periods_past_the_end_were_never_due() {
        let late = |end: Option<u64>, period: Option<u64>| {
            let mut r = SeriesRecorder::new(0, 4, None).ending_at(end);
            if let Some(p) = period {
                r = r.over_intended_periods(p);
            }
            r.record(&s(0, 5_500, 4_500, 4));
            r.to_series("t", 0)
        };
        let ser = late(Some(3_500), Some(1_000));
        assert_eq!(ser.counters.overruns, 2);
        assert_eq!(ser.counters.overrun_samples, 1);
        let c = ser.corrected.unwrap();
        assert_eq!(c.stats.count, 3);
        assert_eq!(c.histogram.buckets, [[2_500, 1], [3_500, 1], [4_500, 1]]);
        // A deadline at the end is not due; one just before it is.
        assert_eq!(late(Some(3_000), Some(1_000)).counters.overruns, 1);
        assert_eq!(late(Some(3_001), Some(1_000)).counters.overruns, 2);
        // The end before the due time itself: nothing skipped within the run.
        let ser = late(Some(500), Some(1_000));
        assert_eq!(
            (ser.counters.overruns, ser.counters.overrun_samples),
            (0, 0)
        );
        assert_eq!(ser.corrected.unwrap().stats.count, 1);
        // No end, or no period to place the deadlines: all of them.
        assert_eq!(late(None, Some(1_000)).counters.overruns, 4);
        assert_eq!(late(Some(3_500), None).counters.overruns, 4);
        // The union: the period comes with the sample.
        let mut u = SeriesRecorder::new(0, 4, None)
            .ending_at(Some(3_500))
            .over_intended_periods(0);
        u.record_in(&s(0, 5_500, 4_500, 4), 1_000);
        assert_eq!(u.to_series("all", 0).counters.overruns, 2);
    }

    /// The skipped periods' blocks start where the wake-ups' do (the
    /// recorder's origin, here 5 s on the clock): a 250 ms stall just after
    /// the start fills the first three blocks, as the wake-ups' own would.
    #[test]
    fn skipped_periods_share_the_blocks_origin() {
        let origin = 5_000_000_000;
        let mut r = SeriesRecorder::new(origin, 4, None).over_intended_periods(1_000_000);
        r.record(&s(0, origin + 1_000_000, 10_000, 0));
        // Due at origin + 2 ms, woke 250 ms later: 250 periods skipped.
        r.record(&s(1, origin + 252_000_000, 250_000_000, 250));
        let c = r.to_series("t", 0).corrected.unwrap();
        let b = blocks::decode(c.blocks.as_ref().unwrap()).unwrap();
        assert_eq!(b.len(), 3, "blocks of 100 ms from the origin");
        let per: Vec<u64> = b.iter().map(|x| x.iter().map(|e| e.1).sum()).collect();
        // Deadlines 3..=99 ms (+ the first wake-up), 100..=199, 200..=252 (+ the late one).
        assert_eq!(per, [98, 100, 54]);
    }

    #[test]
    fn skipped_periods_above_a_threshold() {
        // 4500 late at 1000: 3500, 2500, 1500, 500.
        assert_eq!(missed_above(4_500, 1_000, 4, 1_000), 3);
        assert_eq!(missed_above(4_500, 1_000, 4, 1_500), 2);
        assert_eq!(missed_above(4_500, 1_000, 4, 1_499), 3);
        assert_eq!(missed_above(4_500, 1_000, 4, 0), 4);
        assert_eq!(missed_above(4_500, 1_000, 2, 0), 2);
        assert_eq!(missed_above(4_500, 1_000, 4, 4_500), 0);
        assert_eq!(missed_above(4_500, 1_000, 4, 4_499), 0);
        assert_eq!(missed_above(4_500, 1_000, 4, 3_499), 1);
        assert_eq!(missed_above(4_500, 0, 4, 10), 0);
    }

    #[test]
    fn threshold_counts_only_samples_above_it() {
        let mut r = SeriesRecorder::new(0, 4, Some(100));
        for (i, lat) in [99, 100, 101, -5, 0].into_iter().enumerate() {
            r.record(&s(i as u64, i as u64, lat, 0));
        }
        // 100 is at the threshold, not above it; 0 is not negative.
        let ser = r.to_series("t", 0);
        assert_eq!(ser.counters.above_threshold, Some(1));
        assert_eq!(ser.counters.negative, 1);
        assert_eq!(r.count(), 5);
        let mut r = SeriesRecorder::new(0, 4, None);
        r.record(&s(0, 0, 1_000_000, 0));
        assert_eq!(r.to_series("t", 0).counters.above_threshold, None);
    }
}
