//! The recorder: turns a stream of latency samples into the distributions the
//! result document holds — an HDR histogram with fixed bounds, exact running
//! statistics, a bounded timeline, the worst-N spikes and the overrun count.
//!
//! Nothing here runs on the real-time thread: the aggregator thread drains the
//! sample rings and feeds a [`SeriesRecorder`] per series. All allocation happens
//! when a recorder is created (the histogram's counts array, the spike heap and
//! the timeline's capacity), so recording itself does not allocate.

pub mod blocks;
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

use crate::result::{Series, SeriesCounters};
use crate::sample::Sample;

/// Everything kept for one series (one thread, or the union of all threads).
#[derive(Debug, Clone)]
pub struct SeriesRecorder {
    pub hist: LatencyHistogram,
    pub stats: RunningStats,
    pub timeline: TimelineBuilder,
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
        }
    }

    /// Records one sample.
    #[inline]
    pub fn record(&mut self, s: &Sample) {
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
        if s.overruns > 0 {
            self.overruns += u64::from(s.overruns);
            self.overrun_samples += 1;
        }
        if let Some(t) = self.threshold_ns {
            if lat > t {
                self.above_threshold += 1;
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
