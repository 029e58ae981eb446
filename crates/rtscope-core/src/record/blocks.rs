//! Per-block histograms: the run cut into consecutive time blocks (100 ms to
//! start with), each with a compact log-bucketed histogram of its latencies,
//! so that a comparison can resample whole blocks (a block bootstrap) and
//! keep the dependence between neighbouring samples.
//!
//! Buckets: 32 per power of two (HDR style: the leading bit and the next five
//! bits of the value, linear within the octave), so a bucket is 1.6 % to
//! 3.1 % wide; values below 32 ns have a bucket each. Indices fit a `u16`
//! (the largest is 1919 for `u64::MAX`).
//!
//! Memory stays bounded: when a sample falls beyond `max_blocks`, neighbouring
//! blocks are merged in pairs and the block length doubles (100 ms, 200 ms,
//! 400 ms, ...), as the timeline does. Each block keeps only its non-empty
//! buckets, sorted, so a block costs about 16 bytes per distinct bucket.
//! Samples may arrive slightly out of time order (threads are drained one
//! after the other): they are added to the block their time belongs to.
//!
//! Everything here runs on the aggregator thread, never on the real-time one.

use crate::result::BlockHistograms;

/// Sub-buckets per power of two.
pub const BLOCK_SUB_BUCKETS: u32 = 32;
const SUB_BITS: u32 = 5;
/// The first block length, ns (100 ms).
pub const DEFAULT_BLOCK_NS: u64 = 100_000_000;
/// Blocks kept before neighbours are merged (51 s at 100 ms; a 1-hour run
/// keeps 450 blocks of 8 s).
pub const DEFAULT_MAX_BLOCKS: usize = 512;

/// The bucket index of a value (ns).
#[inline]
pub fn bucket_of(v: u64) -> u16 {
    if v < u64::from(BLOCK_SUB_BUCKETS) {
        return v as u16;
    }
    let e = 63 - v.leading_zeros(); // >= 5
    let sub = (v >> (e - SUB_BITS)) & u64::from(BLOCK_SUB_BUCKETS - 1);
    ((e - SUB_BITS + 1) * BLOCK_SUB_BUCKETS + sub as u32) as u16
}

/// The lowest value of bucket `i` and its width (values `low..low + width`).
pub fn bucket_range(i: u16) -> (u64, u64) {
    let i = u32::from(i);
    if i < BLOCK_SUB_BUCKETS {
        return (u64::from(i), 1);
    }
    let e = i / BLOCK_SUB_BUCKETS + SUB_BITS - 1;
    let sub = u64::from(i % BLOCK_SUB_BUCKETS);
    let shift = e - SUB_BITS;
    ((u64::from(BLOCK_SUB_BUCKETS) + sub) << shift, 1u64 << shift)
}

/// One block's non-empty buckets, sorted by index: `(bucket, count)`.
pub type Block = Vec<(u16, u64)>;

fn add_to(block: &mut Block, bucket: u16, n: u64) {
    match block.binary_search_by_key(&bucket, |e| e.0) {
        Ok(i) => block[i].1 += n,
        Err(i) => block.insert(i, (bucket, n)),
    }
}

fn merge(a: &Block, b: &Block) -> Block {
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                out.push((x.0, x.1 + y.1));
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x.0 < y.0 => {
                out.push(*x);
                i += 1;
            }
            (Some(x), None) => {
                out.push(*x);
                i += 1;
            }
            (_, Some(y)) => {
                out.push(*y);
                j += 1;
            }
            (None, None) => unreachable!(),
        }
    }
    out
}

/// Neighbouring blocks merged in pairs (blocks twice as long); an odd last
/// block stays as it is.
fn halve(blocks: &[Block]) -> Vec<Block> {
    blocks
        .chunks(2)
        .map(|c| match c {
            [a, b] => merge(a, b),
            [a] => a.clone(),
            _ => unreachable!("chunks(2) yields one or two blocks"),
        })
        .collect()
}

/// `blocks` of `from_ns` each brought to blocks of `to_ns` (merged in pairs
/// until they are that long; `to_ns` is `from_ns` times a power of two, as
/// every recorder's lengths are). `None` when `to_ns` is shorter than
/// `from_ns` or not reached that way.
pub fn coarsen(mut blocks: Vec<Block>, from_ns: u64, to_ns: u64) -> Option<Vec<Block>> {
    let mut len = from_ns;
    if len == 0 {
        return None;
    }
    while len < to_ns {
        blocks = halve(&blocks);
        len = len.checked_mul(2)?;
    }
    (len == to_ns).then_some(blocks)
}

/// Builds the [`BlockHistograms`] of a series from (time, latency) pairs.
#[derive(Debug, Clone)]
pub struct BlockRecorder {
    origin_ns: u64,
    block_ns: u64,
    max_blocks: usize,
    blocks: Vec<Block>,
}

impl BlockRecorder {
    /// Blocks of `block_ns` from `origin_ns`, at most `max_blocks` of them.
    pub fn new(origin_ns: u64, block_ns: u64, max_blocks: usize) -> Self {
        BlockRecorder {
            origin_ns,
            block_ns: block_ns.max(1),
            max_blocks: max_blocks.max(2),
            blocks: Vec::new(),
        }
    }

    /// Adds a latency observed at absolute time `t_ns`.
    #[inline]
    pub fn push(&mut self, t_ns: u64, latency_ns: u64) {
        let idx = self.block_index(t_ns);
        add_to(&mut self.blocks[idx], bucket_of(latency_ns), 1);
    }

    /// The index of the block that holds time `t_ns`, coarsening first when
    /// it lies beyond the blocks kept; the block exists on return.
    fn block_index(&mut self, t_ns: u64) -> usize {
        let rel = t_ns.saturating_sub(self.origin_ns);
        let mut idx = (rel / self.block_ns) as usize;
        while idx >= self.max_blocks {
            self.coarsen();
            idx = (rel / self.block_ns) as usize;
        }
        if idx >= self.blocks.len() {
            self.blocks.resize_with(idx + 1, Vec::new);
        }
        idx
    }

    /// Adds the periods a late wake-up skipped, each in the block of its
    /// own deadline: the wake-up was due at `intended_ns` and came `latency`
    /// later; the `missed` deadlines after it (`period` apart, never more
    /// than `latency / period`) had the lateness `latency - k * period` at
    /// `intended_ns + k * period`. One step per block and bucket they fall
    /// in, not one per period.
    pub fn push_missed(&mut self, intended_ns: u64, latency: u64, period: u64, missed: u64) {
        if period == 0 {
            return;
        }
        let mut left = missed.min(latency / period);
        let mut k = 1u64;
        while left > 0 {
            let t = intended_ns.saturating_add(k * period);
            let v = latency - k * period;
            let idx = self.block_index(t);
            // Deadlines left in this block, and values left in v's bucket
            // (they fall as k grows).
            let block_end = self.origin_ns + (idx as u64 + 1) * self.block_ns;
            let in_block = (block_end.saturating_sub(t) - 1) / period + 1;
            let bucket = bucket_of(v);
            let in_bucket = (v - bucket_range(bucket).0) / period + 1;
            let n = left.min(in_block).min(in_bucket);
            add_to(&mut self.blocks[idx], bucket, n);
            left -= n;
            k += n;
        }
    }

    fn coarsen(&mut self) {
        self.blocks = halve(&self.blocks);
        self.block_ns *= 2;
    }

    /// Both recorders' blocks together (the same origin): the one with the
    /// shorter blocks is coarsened to the other's length first.
    pub fn merged(&self, other: &BlockRecorder) -> BlockRecorder {
        let (mut a, mut b) = (self.clone(), other.clone());
        while a.block_ns < b.block_ns {
            a.coarsen();
        }
        while b.block_ns < a.block_ns {
            b.coarsen();
        }
        if b.blocks.len() > a.blocks.len() {
            std::mem::swap(&mut a, &mut b);
        }
        for (x, y) in a.blocks.iter_mut().zip(&b.blocks) {
            *x = merge(x, y);
        }
        a
    }

    /// The time the first block starts at, ns.
    pub fn origin_ns(&self) -> u64 {
        self.origin_ns
    }

    /// Current block length, ns.
    pub fn block_ns(&self) -> u64 {
        self.block_ns
    }

    /// The blocks as they go into the result document.
    pub fn export(&self) -> BlockHistograms {
        BlockHistograms {
            block_ns: self.block_ns,
            sub_buckets: BLOCK_SUB_BUCKETS,
            blocks: self.blocks.iter().map(encode).collect(),
        }
    }
}

/// A block as text: `bucket:count` pairs separated by spaces.
pub fn encode(b: &Block) -> String {
    let mut s = String::with_capacity(b.len() * 8);
    for (i, (k, n)) in b.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&k.to_string());
        s.push(':');
        s.push_str(&n.to_string());
    }
    s
}

/// The blocks of a document, decoded; `None` when the encoding is not one
/// this version reads (another sub-bucket count, a malformed entry).
pub fn decode(h: &BlockHistograms) -> Option<Vec<Block>> {
    if h.sub_buckets != BLOCK_SUB_BUCKETS || h.block_ns == 0 {
        return None;
    }
    h.blocks
        .iter()
        .map(|s| {
            let mut b: Block = Vec::new();
            for pair in s.split_ascii_whitespace() {
                let (k, n) = pair.split_once(':')?;
                let k: u16 = k.parse().ok()?;
                let n: u64 = n.parse().ok()?;
                if k > bucket_of(u64::MAX) {
                    return None;
                }
                add_to(&mut b, k, n);
            }
            Some(b)
        })
        .collect()
}

/// Concatenates the blocks of several series (repetitions of a run), each
/// first coarsened to the longest block length among them.
pub fn concat(parts: &[&BlockHistograms]) -> Option<BlockHistograms> {
    let block_ns = parts.iter().map(|p| p.block_ns).max()?;
    let mut blocks = Vec::new();
    for p in parts {
        let mut b = decode(p)?;
        let mut len = p.block_ns;
        while len < block_ns {
            b = halve(&b);
            len *= 2;
        }
        blocks.extend(b.iter().map(encode));
    }
    Some(BlockHistograms {
        block_ns,
        sub_buckets: BLOCK_SUB_BUCKETS,
        blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_narrow() {
        let mut prev_end = 0u64;
        for i in 0..=bucket_of(u64::MAX) {
            let (lo, w) = bucket_range(i);
            assert_eq!(lo, prev_end, "bucket {i}");
            prev_end = lo.wrapping_add(w);
            if lo >= 32 {
                assert!(w as f64 / lo as f64 <= 1.0 / 32.0 + 1e-12, "bucket {i}");
            }
        }
        for v in [
            0u64,
            1,
            31,
            32,
            33,
            63,
            64,
            65,
            1000,
            24_123,
            1 << 40,
            u64::MAX,
        ] {
            let (lo, w) = bucket_range(bucket_of(v));
            assert!(lo <= v && v - lo < w, "{v}: {lo}+{w}");
        }
        assert_eq!(bucket_of(u64::MAX), 1919);
    }

    #[test]
    fn merging_interleaves_and_sums_shared_buckets() {
        let a: Block = vec![(1, 1), (3, 2), (5, 1)];
        let b: Block = vec![(2, 4), (3, 1), (6, 1), (9, 2)];
        let want: Block = vec![(1, 1), (2, 4), (3, 3), (5, 1), (6, 1), (9, 2)];
        assert_eq!(merge(&a, &b), want);
        assert_eq!(merge(&b, &a), want);
        assert_eq!(merge(&a, &Vec::new()), a);
    }

    #[test]
    fn halving_keeps_an_odd_last_block() {
        let blocks: Vec<Block> = vec![vec![(1, 1)], vec![(1, 2), (4, 1)], vec![(7, 3)]];
        let want: Vec<Block> = vec![vec![(1, 3), (4, 1)], vec![(7, 3)]];
        assert_eq!(halve(&blocks), want);
    }

    #[test]
    fn encoding_is_exact_and_the_last_bucket_reads_back() {
        assert_eq!(encode(&vec![(1, 2), (30, 4)]), "1:2 30:4");
        assert_eq!(encode(&Vec::new()), "");
        let top = bucket_of(u64::MAX);
        let h = |s: &str| BlockHistograms {
            block_ns: 100,
            sub_buckets: BLOCK_SUB_BUCKETS,
            blocks: vec![s.to_string()],
        };
        assert_eq!(decode(&h(&format!("{top}:1"))), Some(vec![vec![(top, 1)]]));
        assert_eq!(decode(&h(&format!("{}:1", top + 1))), None);
    }

    #[test]
    fn blocks_by_time_out_of_order_and_bounded() {
        let mut r = BlockRecorder::new(1_000, 100, 4);
        r.push(1_000 + 150, 50);
        r.push(1_000 + 10, 50);
        r.push(1_000 + 20, 51);
        r.push(1_000 + 20, 5000);
        let e = r.export();
        assert_eq!(e.block_ns, 100);
        let d = decode(&e).unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d[0], vec![(50, 1), (51, 1), (bucket_of(5000), 1)]);
        assert_eq!(d[1], vec![(50, 1)]);
        // Past 4 blocks: merged in pairs, length doubles, counts kept.
        r.push(1_000 + 450, 50);
        assert_eq!(r.block_ns(), 200);
        let d = decode(&r.export()).unwrap();
        assert_eq!(d.len(), 3);
        assert_eq!(d[0], vec![(50, 2), (51, 1), (bucket_of(5000), 1)]);
        assert_eq!(d[2], vec![(50, 1)]);
        let total: u64 = d.iter().flatten().map(|e| e.1).sum();
        assert_eq!(total, 5);
    }

    /// Missed periods land in the blocks of their deadlines and the
    /// buckets of their lateness, as pushing them one by one puts them.
    #[test]
    fn missed_periods_as_pushed_one_by_one() {
        // (origin, block, max blocks, intended, latency, period, missed)
        let cases: [(u64, u64, usize, u64, u64, u64, u64); 7] = [
            (1_000, 100, 64, 1_050, 2_500, 10, 250),
            (0, 100, 4, 30, 1_000, 7, 142),
            (0, 1_000_000, 512, 5_000, 3_000_000, 1_000, 3_000),
            (0, 100, 64, 0, 99, 100, 3),
            (0, 100, 64, 40, 100, 100, 1),
            (0, 100, 64, 40, 250, 60, 9),
            (500, 50, 8, 400, 333, 1, 333),
        ];
        for (origin, block, max, intended, lat, period, missed) in cases {
            let mut fast = BlockRecorder::new(origin, block, max);
            let mut slow = BlockRecorder::new(origin, block, max);
            fast.push_missed(intended, lat, period, missed);
            let mut k = 1;
            while k <= missed && k * period <= lat {
                slow.push(intended + k * period, lat - k * period);
                k += 1;
            }
            let (f, s) = (fast.export(), slow.export());
            assert_eq!(f, s, "{intended} {lat} {period} {missed}");
            let n: u64 = decode(&f).unwrap().iter().flatten().map(|e| e.1).sum();
            assert_eq!(n, k - 1);
        }
        let mut r = BlockRecorder::new(0, 100, 8);
        r.push_missed(0, 5_000, 0, 3);
        assert!(
            r.export().blocks.is_empty(),
            "a period of 0 fills in nothing"
        );
    }

    /// Merged recorders hold every value of both, coarsened to the longer
    /// block; merging with an empty one keeps the other as it is.
    #[test]
    fn merged_recorders_hold_both() {
        let mut a = BlockRecorder::new(0, 10, 4);
        let mut b = BlockRecorder::new(0, 10, 4);
        a.push(5, 100);
        a.push(15, 100);
        b.push(5, 100);
        b.push(25, 7);
        // b's last push coarsens it: blocks of 20.
        b.push(75, 7);
        assert_eq!(b.block_ns(), 20);
        for m in [a.merged(&b), b.merged(&a)] {
            assert_eq!(m.block_ns(), 20);
            let d = decode(&m.export()).unwrap();
            assert_eq!(d[0], vec![(bucket_of(100), 3)]);
            assert_eq!(d[1], vec![(7, 1)]);
            assert_eq!(d[3], vec![(7, 1)]);
            assert_eq!(d.iter().flatten().map(|e| e.1).sum::<u64>(), 5);
        }
        let empty = BlockRecorder::new(0, 10, 4);
        assert_eq!(a.merged(&empty).export(), a.export());
        assert_eq!(empty.merged(&a).export(), a.export());
    }

    #[test]
    fn decode_refuses_what_it_cannot_read() {
        let mut h = BlockRecorder::new(0, 10, 8).export();
        h.blocks = vec!["3:4 7:1".into(), String::new()];
        assert_eq!(decode(&h).unwrap(), vec![vec![(3, 4), (7, 1)], vec![]]);
        h.blocks = vec!["3-4".into()];
        assert!(decode(&h).is_none());
        h.blocks = vec!["9999:1".into()];
        assert!(decode(&h).is_none());
        h.blocks = vec![];
        h.sub_buckets = 16;
        assert!(decode(&h).is_none());
    }

    #[test]
    fn concat_coarsens_to_the_longest_block() {
        let mut a = BlockRecorder::new(0, 10, 64);
        let mut b = BlockRecorder::new(0, 20, 64);
        for t in 0..40 {
            a.push(t, 100);
            b.push(t, 200);
        }
        let c = concat(&[&a.export(), &b.export()]).unwrap();
        assert_eq!(c.block_ns, 20);
        let d = decode(&c).unwrap();
        assert_eq!(d.len(), 4);
        assert!(d.iter().all(|x| x.iter().map(|e| e.1).sum::<u64>() == 20));
    }
}
