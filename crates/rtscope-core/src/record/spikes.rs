//! The worst N samples of a run, with their timestamps, kept in a bounded
//! min-heap (capacity allocated once).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::result::Spike;
use crate::sample::Sample;

/// Keeps the `n` samples with the largest latency.
#[derive(Debug, Clone)]
pub struct SpikeKeeper {
    n: usize,
    heap: BinaryHeap<Reverse<(i64, u64, u64, u32)>>,
}

impl SpikeKeeper {
    /// A keeper of at most `n` samples.
    pub fn new(n: usize) -> Self {
        SpikeKeeper {
            n,
            heap: BinaryHeap::with_capacity(n + 1),
        }
    }

    /// Offers a sample; kept if it is among the `n` worst so far.
    #[inline]
    pub fn offer(&mut self, s: &Sample) {
        if self.n == 0 {
            return;
        }
        if self.heap.len() < self.n {
            self.heap
                .push(Reverse((s.latency_ns, s.t_ns, s.seq, s.cpu)));
        } else if let Some(Reverse(min)) = self.heap.peek() {
            if s.latency_ns > min.0 {
                self.heap.pop();
                self.heap
                    .push(Reverse((s.latency_ns, s.t_ns, s.seq, s.cpu)));
            }
        }
    }

    /// The kept samples, worst first.
    pub fn sorted(&self) -> Vec<Spike> {
        let mut v: Vec<Spike> = self
            .heap
            .iter()
            .map(|Reverse((lat, t, seq, cpu))| Spike {
                latency_ns: *lat,
                t_ns: *t,
                seq: *seq,
                cpu: *cpu,
            })
            .collect();
        v.sort_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.t_ns.cmp(&b.t_ns)));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_worst() {
        let mut k = SpikeKeeper::new(3);
        for (i, lat) in [5i64, 1, 9, 3, 7, 2, 8].iter().enumerate() {
            k.offer(&Sample {
                seq: i as u64,
                t_ns: i as u64 * 10,
                latency_ns: *lat,
                overruns: 0,
                cpu: 1,
            });
        }
        let v = k.sorted();
        assert_eq!(
            v.iter().map(|s| s.latency_ns).collect::<Vec<_>>(),
            vec![9, 8, 7]
        );
        assert_eq!(v[0].seq, 2);
        assert!(SpikeKeeper::new(0).sorted().is_empty());
    }

    #[test]
    fn a_tie_keeps_the_earlier_sample() {
        let mut k = SpikeKeeper::new(1);
        for seq in [4u64, 5] {
            k.offer(&Sample {
                seq,
                t_ns: seq * 10,
                latency_ns: 7,
                overruns: 0,
                cpu: 0,
            });
        }
        assert_eq!(k.sorted()[0].seq, 4);
    }
}
