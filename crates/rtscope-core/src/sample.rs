//! The sample type and the single-producer single-consumer rings that carry
//! samples from real-time threads to the aggregator.
//!
//! Each measurement thread owns the producer side of one [`rtrb`] ring. Pushing
//! is wait-free: a full ring drops the sample and counts it, it never blocks the
//! real-time thread.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One measurement: a wake-up (or handoff, or clock read) and how late it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(C)]
pub struct Sample {
    /// Sequence number within its thread (0-based, counts dropped samples too).
    pub seq: u64,
    /// When it was taken, in ns on the measurement clock.
    pub t_ns: u64,
    /// The latency in ns (signed: a clock step on CLOCK_REALTIME can make it negative).
    pub latency_ns: i64,
    /// Periods skipped before this wake-up (0 when on time).
    pub overruns: u32,
    /// The CPU the sample was taken on.
    pub cpu: u32,
}

/// Where a measurement loop puts its samples. The real sink is a ring
/// producer; tests use a `Vec`.
pub trait SampleSink {
    /// Hands over one sample; must not block.
    fn push(&mut self, s: Sample);
}

impl SampleSink for Vec<Sample> {
    fn push(&mut self, s: Sample) {
        Vec::push(self, s);
    }
}

/// Producer half of a sample ring, with a shared dropped-sample counter.
pub struct RingSink {
    producer: rtrb::Producer<Sample>,
    dropped: Arc<AtomicU64>,
    local_dropped: u64,
}

impl SampleSink for RingSink {
    #[inline]
    fn push(&mut self, s: Sample) {
        if self.producer.push(s).is_err() {
            self.local_dropped += 1;
            // A relaxed store of a thread-local count: no lock, no read-modify-write.
            self.dropped.store(self.local_dropped, Ordering::Relaxed);
        }
    }
}

/// Consumer half of a sample ring.
pub struct RingSource {
    consumer: rtrb::Consumer<Sample>,
    dropped: Arc<AtomicU64>,
}

impl RingSource {
    /// Calls `f` for every sample available now; returns how many were drained.
    pub fn drain(&mut self, mut f: impl FnMut(&Sample)) -> usize {
        let n = self.consumer.slots();
        if n == 0 {
            return 0;
        }
        match self.consumer.read_chunk(n) {
            Ok(chunk) => {
                let (a, b) = chunk.as_slices();
                a.iter().chain(b.iter()).for_each(&mut f);
                chunk.commit_all();
                n
            }
            Err(_) => 0,
        }
    }

    /// Samples dropped so far because the ring was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Creates a ring of `capacity` samples. The ring's memory is touched here so
/// that it is resident (and locked, under `mlockall`) before measuring starts.
pub fn ring(capacity: usize) -> (RingSink, RingSource) {
    let (mut producer, consumer) = rtrb::RingBuffer::new(capacity.max(16));
    // Pre-fault: fill and empty the ring once.
    let mut consumer = consumer;
    let mut filled = 0;
    while producer.push(Sample::default()).is_ok() {
        filled += 1;
    }
    if let Ok(c) = consumer.read_chunk(filled) {
        c.commit_all();
    }
    let dropped = Arc::new(AtomicU64::new(0));
    (
        RingSink {
            producer,
            dropped: dropped.clone(),
            local_dropped: 0,
        },
        RingSource { consumer, dropped },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_ring_drops_and_counts() {
        let (mut tx, mut rx) = ring(16);
        for i in 0..20 {
            tx.push(Sample {
                seq: i,
                ..Default::default()
            });
        }
        assert_eq!(rx.dropped(), 4);
        let mut seen = Vec::new();
        assert_eq!(rx.drain(|s| seen.push(s.seq)), 16);
        assert_eq!(seen, (0..16).collect::<Vec<_>>());
        tx.push(Sample::default());
        assert_eq!(rx.drain(|_| {}), 1);
        assert_eq!(rx.drain(|_| {}), 0);
    }

    #[test]
    fn a_vec_is_a_sink_and_the_ring_wraps() {
        let mut v: Vec<Sample> = Vec::new();
        SampleSink::push(
            &mut v,
            Sample {
                seq: 7,
                ..Default::default()
            },
        );
        assert_eq!(v.iter().map(|s| s.seq).collect::<Vec<_>>(), [7]);
        // Drained in two pieces across the ring's end, in order.
        let (mut tx, mut rx) = ring(16);
        for i in 0..10 {
            tx.push(Sample {
                seq: i,
                ..Default::default()
            });
        }
        assert_eq!(rx.drain(|_| {}), 10);
        for i in 10..26 {
            tx.push(Sample {
                seq: i,
                ..Default::default()
            });
        }
        let mut seen = Vec::new();
        assert_eq!(rx.drain(|s| seen.push(s.seq)), 16);
        assert_eq!(seen, (10..26).collect::<Vec<_>>());
        assert_eq!(rx.dropped(), 0);
    }
}
