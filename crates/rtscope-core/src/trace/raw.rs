//! Ring-buffer pages as `per_cpu/cpuN/trace_pipe_raw` returns them: a page
//! header (absolute timestamp, commit size with the lost-events flags), then
//! events, each a 32-bit header (5-bit type/length, 27-bit time delta) and
//! its record. The same layout libtraceevent's kbuffer reads.

use super::format::{read_uint, PageLayout};

/// Records were lost before this page.
const RB_MISSED_EVENTS: u64 = 1 << 31;
/// The number lost is stored after the page's data.
const RB_MISSED_STORED: u64 = 1 << 30;

/// One record of a page, with its absolute timestamp (trace clock ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRecord<'a> {
    /// Trace-clock time, ns.
    pub ts: u64,
    /// The record's payload (the event's fields).
    pub data: &'a [u8],
}

/// What a page said besides its records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageInfo {
    /// Events were lost before this page.
    pub missed: bool,
    /// How many, when the kernel stored the count.
    pub missed_count: Option<u64>,
    /// Bytes of event data in the page.
    pub size: usize,
}

/// The page's absolute start time (trace clock ns).
pub fn page_timestamp(page: &[u8]) -> u64 {
    read_uint(page, 0, 8)
}

/// Calls `f` for every record of `page`; returns the page's info.
pub fn parse_page<'a>(
    page: &'a [u8],
    l: &PageLayout,
    mut f: impl FnMut(RawRecord<'a>),
) -> PageInfo {
    let mut ts = read_uint(page, 0, 8);
    let commit = read_uint(page, l.commit_offset, l.commit_size);
    let size = (commit & !(RB_MISSED_EVENTS | RB_MISSED_STORED) & 0xffff_ffff) as usize;
    let data_end = (l.data_offset + size).min(page.len());
    let mut info = PageInfo {
        missed: commit & RB_MISSED_EVENTS != 0,
        missed_count: None,
        size,
    };
    if commit & RB_MISSED_STORED != 0 {
        info.missed_count = Some(read_uint(page, data_end, l.commit_size));
    }
    let mut p = l.data_offset;
    while p + 4 <= data_end {
        let h = read_uint(page, p, 4) as u32;
        let type_len = h & 0x1f;
        let delta = u64::from(h >> 5);
        match type_len {
            29 => {
                // Padding: the rest of the page, or a discarded record.
                if delta == 0 {
                    break;
                }
                let len = read_uint(page, p + 4, 4) as usize;
                p += 4 + len.max(4);
            }
            30 => {
                ts += delta | (read_uint(page, p + 4, 4) << 27);
                p += 8;
            }
            31 => {
                let abs = delta | (read_uint(page, p + 4, 4) << 27);
                ts = abs | (ts & !((1u64 << 59) - 1));
                p += 8;
            }
            0 => {
                let len = read_uint(page, p + 4, 4) as usize;
                let dlen = len.saturating_sub(4);
                ts += delta;
                let start = p + 8;
                let end = start + dlen;
                // A record the page's data ends inside of (its length word
                // included) is not delivered: the page is read up to it (seen
                // on a 32-bit ARM PREEMPT_RT kernel, where it was a panic).
                if len == 0 || end > data_end {
                    break;
                }
                f(RawRecord {
                    ts,
                    data: &page[start..end],
                });
                p = start + ((dlen + 3) & !3);
            }
            n => {
                ts += delta;
                let start = p + 4;
                let end = start + 4 * n as usize;
                if end > data_end {
                    break;
                }
                f(RawRecord {
                    ts,
                    data: &page[start..end],
                });
                p = start + 4 * n as usize;
            }
        }
    }
    info
}

/// Builds pages for tests: records with given deltas.
#[cfg(test)]
pub(crate) mod build {
    pub struct Page {
        pub bytes: Vec<u8>,
    }

    impl Page {
        pub fn new(ts: u64) -> Self {
            let mut bytes = vec![0u8; 16];
            bytes[0..8].copy_from_slice(&ts.to_le_bytes());
            Page { bytes }
        }

        /// A record `delta` ns after the previous one (extends the time when needed).
        pub fn record(&mut self, delta: u64, data: &[u8]) {
            let mut delta = delta;
            if delta >= 1 << 27 {
                let h = 30u32 | (((delta & ((1 << 27) - 1)) as u32) << 5);
                self.bytes.extend_from_slice(&h.to_le_bytes());
                self.bytes
                    .extend_from_slice(&((delta >> 27) as u32).to_le_bytes());
                delta = 0;
            }
            let mut d = data.to_vec();
            while d.len() % 4 != 0 {
                d.push(0);
            }
            if d.len() <= 28 * 4 {
                let h = (d.len() / 4) as u32 | ((delta as u32) << 5);
                self.bytes.extend_from_slice(&h.to_le_bytes());
            } else {
                let h = (delta as u32) << 5;
                self.bytes.extend_from_slice(&h.to_le_bytes());
                self.bytes
                    .extend_from_slice(&((d.len() + 4) as u32).to_le_bytes());
            }
            self.bytes.extend_from_slice(&d);
        }

        pub fn finish(mut self, missed: bool) -> Vec<u8> {
            let size = (self.bytes.len() - 16) as u64 | if missed { 1 << 31 } else { 0 };
            self.bytes[8..16].copy_from_slice(&size.to_le_bytes());
            self.bytes.resize(4096, 0);
            self.bytes
        }
    }
}

#[cfg(test)]
mod tests {
    use super::build::Page;
    use super::*;

    #[test]
    fn records_and_timestamps() {
        let mut p = Page::new(1_000_000);
        p.record(5, &[1, 0, 0, 0]);
        p.record(200_000_000, &[2; 12]); // needs a time extend
        p.record(7, &[3; 200]); // a long record (type_len 0)
        p.record(1, &[4; 8]);
        let page = p.finish(true);
        let mut got = Vec::new();
        let info = parse_page(&page, &PageLayout::default(), |r| {
            got.push((r.ts, r.data[0], r.data.len()))
        });
        assert!(info.missed);
        assert_eq!(
            got,
            vec![
                (1_000_005, 1, 4),
                (201_000_005, 2, 12),
                (201_000_012, 3, 200),
                (201_000_013, 4, 8)
            ]
        );
    }

    /// Padding, a discarded record, a time extend and an absolute timestamp,
    /// written word by word as the kernel lays them out.
    #[test]
    fn padding_extends_and_absolute_timestamps() {
        let ts0 = (1u64 << 60) + 1_000;
        let mut b: Vec<u8> = Vec::new();
        b.extend_from_slice(&ts0.to_le_bytes());
        b.extend_from_slice(&[0; 8]); // commit, filled in below
        let w = |b: &mut Vec<u8>, x: u32| b.extend_from_slice(&x.to_le_bytes());
        // A discarded record: type 29 with a delta, then its length (which
        // counts itself) and its bytes.
        w(&mut b, 29 | (5 << 5));
        w(&mut b, 12);
        w(&mut b, 0xdead);
        w(&mut b, 0xbeef);
        // A 4-byte record 10 ns after the page start.
        w(&mut b, 1 | (10 << 5));
        w(&mut b, 1);
        // A time extend: 3 + (2 << 27) ns.
        w(&mut b, 30 | (3 << 5));
        w(&mut b, 2);
        w(&mut b, 1);
        w(&mut b, 2);
        // An absolute timestamp of 59 bits: 7 + (5 << 27); the bits above
        // 59 stay the page's.
        w(&mut b, 31 | (7 << 5));
        w(&mut b, 5);
        w(&mut b, 1 | (1 << 5));
        w(&mut b, 3);
        // Padding to the end of the page: nothing after it is read.
        w(&mut b, 29);
        w(&mut b, 1 | (1 << 5));
        w(&mut b, 4);
        let size = (b.len() - 16) as u64;
        b[8..16].copy_from_slice(&size.to_le_bytes());
        b.resize(4096, 0);
        let mut got = Vec::new();
        parse_page(&b, &PageLayout::default(), |r| got.push((r.ts, r.data[0])));
        let high = 1u64 << 60;
        assert_eq!(
            got,
            [
                (ts0 + 10, 1),
                (ts0 + 10 + 3 + (2 << 27), 2),
                (high + 7 + (5 << 27) + 1, 3),
            ]
        );
    }

    /// A page whose data ends inside its last record (the record's header
    /// fits, its length word or its data do not): the records before it are
    /// read, the cut one is not, and nothing is read past the data.
    #[test]
    fn a_record_cut_by_the_data_end_is_not_read() {
        let l = PageLayout::default();
        for (cut_by, tail, read) in [
            // A long record (type_len 0) whose length word is past the end.
            (4, vec![0u32, 200], 1),
            // A long record whose data runs past the end.
            (4, vec![0u32, 40, 7, 7], 1),
            // A short record (type_len 3, 12 bytes) with 8 bytes of its data in.
            (4, vec![3u32, 9, 9, 9], 1),
            // The same, exactly complete: read.
            (0, vec![3u32, 9, 9, 9], 2),
            // A long record exactly complete (its 12 bytes end the data): read.
            (0, vec![0u32, 16, 9, 9, 9], 2),
            // A long record of length 0 ends the page, whatever follows.
            (0, vec![0u32, 0, 3, 9, 9, 9], 1),
        ] {
            let mut p = Page::new(100);
            p.record(1, &[5, 0, 0, 0]);
            for w in &tail {
                p.bytes.extend_from_slice(&w.to_le_bytes());
            }
            let size = (p.bytes.len() - 16 - cut_by) as u64;
            let mut page = p.bytes.clone();
            page[8..16].copy_from_slice(&size.to_le_bytes());
            // What lies past the data (stale bytes of an earlier page) is junk.
            page.resize(4096, 0xff);
            let mut got = Vec::new();
            let info = parse_page(&page, &l, |r| got.push((r.data[0], r.data.len())));
            assert_eq!(info.size as u64, size);
            assert_eq!(got, [(5, 4), (9, 12)][..read], "{tail:?}");
        }
        // A page whose header is all there is, on a 4-byte page: nothing.
        assert_eq!(parse_page(&[0u8; 4], &l, |_| panic!("no record")).size, 0);
    }

    #[test]
    fn lost_events_flags_and_stored_count() {
        let l = PageLayout::default();
        // Nothing lost.
        let mut p = Page::new(5_000);
        p.record(1, &[1, 0, 0, 0]);
        let page = p.finish(false);
        assert_eq!(page_timestamp(&page), 5_000);
        let info = parse_page(&page, &l, |_| {});
        assert_eq!(
            info,
            PageInfo {
                missed: false,
                missed_count: None,
                size: 8
            }
        );
        // Lost, with the count stored after the data.
        let mut p = Page::new(7_000);
        p.record(1, &[1, 0, 0, 0]);
        let mut page = p.finish(true);
        let commit = 8u64 | RB_MISSED_EVENTS | RB_MISSED_STORED;
        page[8..16].copy_from_slice(&commit.to_le_bytes());
        page[24..32].copy_from_slice(&1234u64.to_le_bytes());
        let mut n = 0;
        let info = parse_page(&page, &l, |_| n += 1);
        assert_eq!(
            (n, info.missed, info.missed_count, info.size),
            (1, true, Some(1234), 8)
        );
    }
}
