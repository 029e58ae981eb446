//! cyclictest's `-h` histogram text format, so that existing plotting scripts
//! (OSADL's among them) read rtscope's histograms unchanged.
//!
//! ```text
//! # Histogram
//! 000000 000000<TAB>000000
//! ...
//! # Total: 000001000 000001000
//! # Min Latencies: 00003 00003
//! # Avg Latencies: 00004 00004
//! # Max Latencies: 00012 00015
//! # Histogram Overflows: 00000 00000
//! # Histogram Overflow at cycle number:
//! # Thread 0:
//! ```
//!
//! The first thread's column follows a space, every further one a tab.
//! cyclictest's `-H` adds a summary column (every thread's count of the
//! bin) when there are several threads, and a sum to the `Total`, `Max`
//! and `Overflows` lines ([`cyclictest_text_with`]).

use std::fmt::Write;

use rtscope_core::record::{MicrosecondBins, RunningStats};

/// The histogram text: one column per thread (its 1 µs bins and its exact
/// min/mean/max), in cyclictest's layout.
pub fn cyclictest_text(cols: &[(&MicrosecondBins, &RunningStats)], dma_held: bool) -> String {
    cyclictest_text_with(cols, dma_held, false)
}

/// [`cyclictest_text`], with `-H`'s summary column when `sum_column` (and
/// there is more than one thread, as cyclictest does it).
pub fn cyclictest_text_with(
    cols: &[(&MicrosecondBins, &RunningStats)],
    dma_held: bool,
    sum_column: bool,
) -> String {
    let sum_column = sum_column && cols.len() > 1;
    let mut out = String::new();
    if dma_held {
        out.push_str("# /dev/cpu_dma_latency set to 0us\n");
    }
    out.push_str("# Histogram\n");
    let bins = cols.first().map_or(0, |c| c.0.bins.len());
    for i in 0..bins {
        let _ = write!(out, "{i:06}");
        for (j, (b, _)) in cols.iter().enumerate() {
            let sep = if j == 0 { ' ' } else { '\t' };
            let _ = write!(out, "{sep}{:06}", b.bins[i]);
        }
        if sum_column {
            let _ = write!(
                out,
                "\t{:06}",
                cols.iter().map(|(b, _)| b.bins[i]).sum::<u64>()
            );
        }
        out.push('\n');
    }
    let line = |out: &mut String, name: &str, f: &dyn Fn(usize) -> String| {
        out.push_str(name);
        for j in 0..cols.len() {
            out.push(' ');
            out.push_str(&f(j));
        }
        out.push('\n');
    };
    // The summary column's value at the end of a line.
    let with_sum = |out: &mut String, v: String| {
        if sum_column {
            out.pop();
            out.push(' ');
            out.push_str(&v);
            out.push('\n');
        }
    };
    line(&mut out, "# Total:", &|j| {
        format!("{:09}", cols[j].0.bins.iter().sum::<u64>())
    });
    let total: u64 = cols.iter().flat_map(|(b, _)| b.bins.iter()).sum();
    with_sum(&mut out, format!("{total:09}"));
    let us = |ns: i64| (ns.max(0) / 1000) as u64;
    line(&mut out, "# Min Latencies:", &|j| {
        format!("{:05}", us(cols[j].1.min()))
    });
    line(&mut out, "# Avg Latencies:", &|j| {
        format!("{:05}", (cols[j].1.mean().max(0.0) / 1000.0) as u64)
    });
    line(&mut out, "# Max Latencies:", &|j| {
        format!("{:05}", us(cols[j].1.max()))
    });
    let maxmax = cols.iter().map(|(_, s)| us(s.max())).max().unwrap_or(0);
    with_sum(&mut out, format!("{maxmax:05}"));
    line(&mut out, "# Histogram Overflows:", &|j| {
        format!("{:05}", cols[j].0.overflows)
    });
    let overflows: u64 = cols.iter().map(|(b, _)| b.overflows).sum();
    with_sum(&mut out, format!("{overflows:05}"));
    out.push_str("# Histogram Overflow at cycle number:\n");
    for (j, (b, _)) in cols.iter().enumerate() {
        let _ = write!(out, "# Thread {j}:");
        for s in &b.overflow_seqs {
            let _ = write!(out, " {s:05}");
        }
        let more = b.overflows.saturating_sub(b.overflow_seqs.len() as u64);
        if more > 0 {
            let _ = write!(out, " # {more:05} others");
        }
        out.push('\n');
    }
    // cyclictest ends its histogram with an empty line.
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::record::{MicrosecondBins, RunningStats};

    #[test]
    fn matches_cyclictest_layout() {
        let mut b0 = MicrosecondBins::new(3, 2);
        let mut s0 = RunningStats::default();
        let mut b1 = MicrosecondBins::new(3, 2);
        let mut s1 = RunningStats::default();
        for (i, v) in [1500i64, 2500, 2600, 9000, 9100, 9200].iter().enumerate() {
            b0.record(*v, i as u64);
            s0.push(*v);
        }
        for v in [100i64, 200] {
            b1.record(v, 0);
            s1.push(v);
        }
        let t = cyclictest_text(&[(&b0, &s0), (&b1, &s1)], true);
        let want = "# /dev/cpu_dma_latency set to 0us
# Histogram
000000 000000\t000002
000001 000001\t000000
000002 000002\t000000
# Total: 000000003 000000002
# Min Latencies: 00001 00000
# Avg Latencies: 00005 00000
# Max Latencies: 00009 00000
# Histogram Overflows: 00003 00000
# Histogram Overflow at cycle number:
# Thread 0: 00003 00004 # 00001 others
# Thread 1:

";
        assert_eq!(t, want);
        assert_eq!(
            cyclictest_text_with(&[(&b0, &s0), (&b1, &s1)], true, false),
            want
        );
        // -H: the summary column, and sums on Total, Max and Overflows
        // (not on Min and Avg), as cyclictest 2.40 prints them.
        let h = cyclictest_text_with(&[(&b0, &s0), (&b1, &s1)], false, true);
        let want_h = "# Histogram
000000 000000\t000002\t000002
000001 000001\t000000\t000001
000002 000002\t000000\t000002
# Total: 000000003 000000002 000000005
# Min Latencies: 00001 00000
# Avg Latencies: 00005 00000
# Max Latencies: 00009 00000 00009
# Histogram Overflows: 00003 00000 00003
# Histogram Overflow at cycle number:
# Thread 0: 00003 00004 # 00001 others
# Thread 1:

";
        assert_eq!(h, want_h);
        // One thread: no summary column.
        assert_eq!(
            cyclictest_text_with(&[(&b1, &s1)], false, true),
            cyclictest_text(&[(&b1, &s1)], false)
        );
    }
}
