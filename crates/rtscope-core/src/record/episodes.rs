//! Episodes of a threshold's exceedances, the unit a tail comparison
//! counts.
//!
//! Values above a threshold come in bursts: one host stall, one interrupt
//! storm, makes many late wake-ups in a row. Counted one by one they are not
//! independent events, and an interval that takes them for a Poisson count
//! is far too narrow (two runs of the same command then differ "clearly").
//! An **episode** is a time block with at least one value above the
//! threshold: exceedances closer together than a block are one episode, and
//! the number of episodes in a run is a count of what is (nearly)
//! independent. The blocks are the per-block histograms every series records
//! ([`super::blocks`], 100 ms to start with); runs of different lengths are
//! first brought to the same block length ([`common_block_ns`]).

use super::blocks::{self, bucket_range, Block};
use crate::result::BlockHistograms;

/// One series' exceedances of a threshold, block by block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Episodes {
    /// The block length, ns.
    pub block_ns: u64,
    /// Values above the threshold in each block that has samples (blocks
    /// without samples are left out: nothing was measured there).
    pub per_block: Vec<u64>,
}

impl Episodes {
    /// Blocks with at least one value above the threshold.
    pub fn count(&self) -> u64 {
        self.per_block.iter().filter(|&&n| n > 0).count() as u64
    }

    /// The measuring time the blocks cover, ns.
    pub fn measured_ns(&self) -> u64 {
        (self.per_block.len() as u64).saturating_mul(self.block_ns)
    }

    /// Each block as 1 (an episode) or 0.
    pub fn indicators(&self) -> Vec<u64> {
        self.per_block.iter().map(|&n| u64::from(n > 0)).collect()
    }
}

/// The block length at which several series' blocks can be compared: the
/// longest among them (each is 100 ms times a power of two); `None` when one
/// has no blocks.
pub fn common_block_ns<'a>(
    all: impl IntoIterator<Item = Option<&'a BlockHistograms>>,
) -> Option<u64> {
    let mut longest = 0;
    for h in all {
        longest = longest.max(h?.block_ns);
    }
    (longest > 0).then_some(longest)
}

/// Values above `threshold_ns` in one block (buckets that start above it,
/// at the blocks' resolution of 1/32 of a power of two).
pub fn above(b: &Block, threshold_ns: u64) -> u64 {
    b.iter()
        .filter(|(k, _)| bucket_range(*k).0 > threshold_ns)
        .map(|e| e.1)
        .sum()
}

/// The episodes of `h` above `threshold_ns` in blocks of `block_ns`; `None`
/// when the blocks cannot be read or brought to that length.
pub fn of(h: &BlockHistograms, threshold_ns: u64, block_ns: u64) -> Option<Episodes> {
    let b = blocks::coarsen(blocks::decode(h)?, h.block_ns, block_ns)?;
    Some(Episodes {
        block_ns,
        per_block: b
            .iter()
            .filter(|b| b.iter().any(|e| e.1 > 0))
            .map(|b| above(b, threshold_ns))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::blocks::{bucket_of, encode, DEFAULT_BLOCK_NS};

    fn hist(block_ns: u64, blocks: &[Block]) -> BlockHistograms {
        BlockHistograms {
            block_ns,
            sub_buckets: blocks::BLOCK_SUB_BUCKETS,
            blocks: blocks.iter().map(encode).collect(),
        }
    }

    #[test]
    fn a_burst_is_one_episode() {
        let (low, high) = (bucket_of(20_000), bucket_of(900_000));
        // 5 blocks: a burst of 40 in one, 1 in another, an empty block.
        let h = hist(
            DEFAULT_BLOCK_NS,
            &[
                vec![(low, 100)],
                vec![(low, 60), (high, 40)],
                vec![],
                vec![(low, 99), (high, 1)],
                vec![(low, 100)],
            ],
        );
        let e = of(&h, 500_000, DEFAULT_BLOCK_NS).unwrap();
        assert_eq!(e.per_block, vec![0, 40, 1, 0]);
        assert_eq!(e.count(), 2);
        assert_eq!(e.indicators(), vec![0, 1, 1, 0]);
        assert_eq!(e.measured_ns(), 4 * DEFAULT_BLOCK_NS);
        // At twice the length: blocks merged in pairs (the last alone).
        let e2 = of(&h, 500_000, 2 * DEFAULT_BLOCK_NS).unwrap();
        assert_eq!(e2.per_block, vec![40, 1, 0]);
        assert_eq!(e2.count(), 2);
        // Not a power-of-two multiple, or shorter: refused.
        assert_eq!(of(&h, 500_000, 3 * DEFAULT_BLOCK_NS), None);
        assert_eq!(of(&h, 500_000, DEFAULT_BLOCK_NS / 2), None);
    }

    #[test]
    fn the_common_length_is_the_longest() {
        let a = hist(DEFAULT_BLOCK_NS, &[]);
        let b = hist(4 * DEFAULT_BLOCK_NS, &[]);
        assert_eq!(
            common_block_ns([Some(&a), Some(&b)]),
            Some(4 * DEFAULT_BLOCK_NS)
        );
        assert_eq!(common_block_ns([Some(&a), None]), None);
        assert_eq!(common_block_ns([]), None);
    }
}
