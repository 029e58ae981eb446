//! Hardware latency: the stalls no kernel setting removes (SMIs, firmware,
//! power management, a hypervisor taking the CPU away), measured the way
//! rt-tests' `hwlatdetect` does, through the kernel's `hwlat` tracer.
//!
//! The tracer's kernel thread spins on one CPU with interrupts off for
//! `hwlat_detector/width` of every `hwlat_detector/window`, reading the clock
//! back to back: a gap between two readings (`inner`), or between the end of
//! one loop turn and the start of the next (`outer`), can only be the
//! machine's, and one sample per window whose largest gap is above
//! `tracing_thresh` goes into the trace with the NMIs that came in it.
//!
//! - [`parse_line`] reads one line of the trace, in every format the kernel
//!   has printed it in (see its tests);
//! - [`tracer`]: the top-level tracer taken for the run, every setting it
//!   changes restored on every way out;
//! - [`smi`]: the CPU's own SMI counter (`MSR_SMI_COUNT`);
//! - [`UserSpaceLock`]: one user-space run at a time, as the tracer allows
//!   one run at a time.

pub mod pool;
pub mod smi;
pub mod tracer;
mod user_lock;

pub use user_lock::{UserSpaceLock, USER_LOCK_ENV};

use serde::Serialize;

/// One sample of the hwlat tracer, as its trace line gives it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Sample {
    /// The tracer's sequence number (`#N`).
    pub seq: u64,
    /// The largest gap between two back-to-back clock readings, ns (the
    /// kernel prints µs).
    pub inner_ns: u64,
    /// The largest gap between two turns of the sampling loop, ns.
    pub outer_ns: u64,
    /// When the sample was taken, CLOCK_REALTIME ns (`ts:`).
    pub ts_ns: u64,
    /// How many times in the window a gap was above the threshold (`count:`,
    /// which newer kernels print, 6.1 among them); `None` where the kernel
    /// does not say.
    pub count: Option<u64>,
    /// NMIs that came during the window's sampling (`nmi-count:`; the kernel
    /// prints the NMI fields only when there were some, so a line without
    /// them counts 0).
    pub nmi_count: u64,
    /// Their total time, ns (`nmi-total:`, printed in µs). `None` where NMIs
    /// came and the kernel did not time them: with a generic sched_clock
    /// (arm64, arm), which is not NMI-safe, it prints the count alone.
    pub nmi_total_ns: Option<u64>,
}

impl Sample {
    /// The sample's latency: the larger of inner and outer.
    pub fn latency_ns(&self) -> u64 {
        self.inner_ns.max(self.outer_ns)
    }
}

/// What a line of the hwlat trace holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// A sample line.
    Sample(Sample),
    /// `CPU:N [LOST M EVENTS]`: the buffer overflowed (M events lost).
    Lost(u64),
    /// A header, a blank line, another event.
    Other,
}

/// µs as the kernel prints them, to ns (saturating).
fn us(v: &str) -> Option<u64> {
    v.parse::<u64>().ok().map(|u| u.saturating_mul(1000))
}

/// `SEC.NSEC` (nine digits of ns, or fewer: read as a decimal fraction) to ns.
fn seconds(v: &str) -> Option<u64> {
    let (s, frac) = v.split_once('.').unwrap_or((v, ""));
    let s: u64 = s.parse().ok()?;
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut ns: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    for _ in frac.len()..9 {
        ns *= 10;
    }
    s.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// Reads one line of the hwlat tracer's output (`trace`, `trace_pipe` or a
/// per-CPU `trace_pipe`). The sample is recognised by its text alone (after
/// whatever prefix the trace options put before it):
///
/// ```text
/// #1     inner/outer(us):   12/15    ts:1480018163.487372830                          (the first format)
/// #3     inner/outer(us): 108190/14203 ts:1795648608.452362880 count:219 nmi-total:10297 nmi-count:3   (with count: 6.1)
/// #7     inner/outer(us):   20/8     ts:1700000000.000000001 count:1 nmi-count:2   (generic sched_clock: no nmi-total)
/// ```
pub fn parse_line(line: &str) -> Line {
    let line = line.trim_end();
    if let Some(rest) = line.trim_start().strip_prefix("CPU:") {
        if let Some(n) = rest
            .split_once("[LOST ")
            .and_then(|(_, r)| r.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
        {
            return Line::Lost(n);
        }
    }
    let Some((before, after)) = line.split_once("inner/outer(us):") else {
        return Line::Other;
    };
    // The sequence number is the last word before the marker: `#N`.
    let Some(seq) = before
        .split_whitespace()
        .last()
        .and_then(|w| w.strip_prefix('#'))
        .and_then(|n| n.parse::<u64>().ok())
    else {
        return Line::Other;
    };
    let mut words = after.split_whitespace();
    let Some((inner, outer)) = words
        .next()
        .and_then(|w| w.split_once('/'))
        .and_then(|(i, o)| Some((us(i)?, us(o)?)))
    else {
        return Line::Other;
    };
    let mut s = Sample {
        seq,
        inner_ns: inner,
        outer_ns: outer,
        ..Default::default()
    };
    let mut ts = None;
    let mut nmi_total = None;
    for w in words {
        let Some((k, v)) = w.split_once(':') else {
            continue;
        };
        match k {
            "ts" => ts = seconds(v),
            "count" => s.count = v.parse().ok(),
            "nmi-total" => nmi_total = us(v),
            "nmi-count" => s.nmi_count = v.parse().unwrap_or(0),
            _ => {}
        }
    }
    let Some(ts) = ts else {
        return Line::Other;
    };
    s.ts_ns = ts;
    s.nmi_total_ns = if s.nmi_count == 0 {
        Some(nmi_total.unwrap_or(0))
    } else {
        nmi_total
    };
    Line::Sample(s)
}

/// Splits what a pipe gave into whole lines: `pending` holds a line cut by
/// the end of a read until its rest comes. Calls `f` for each whole line.
pub fn split_lines(pending: &mut String, chunk: &str, mut f: impl FnMut(&str)) {
    pending.push_str(chunk);
    let mut start = 0;
    while let Some(i) = pending[start..].find('\n') {
        f(&pending[start..start + i]);
        start += i + 1;
    }
    pending.drain(..start);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of the 6.1 PREEMPT_RT x86-64 guest of the kernel lab (TCG), from
    /// its `trace` file: the host stopped qemu for 100 ms twice and sent five
    /// NMIs through QMP during the run.
    const LAB_6_1: &str = "\
# tracer: hwlat
#
# entries-in-buffer/entries-written: 10/10   #P:2
#
#           TASK-PID     CPU#  |||||||  TIMESTAMP  FUNCTION
#              | |         |   |||||||      |         |
           <...>-167     [001] dn.....     5.652892: #1     inner/outer(us): 2967/8276  ts:1795648606.299571570 count:846
           <...>-167     [001] dn.....     7.768887: #3     inner/outer(us): 108190/14203 ts:1795648608.452362880 count:219 nmi-total:10297 nmi-count:3
           <...>-167     [001] d......     7.944639: #4     inner/outer(us): 109772/32116 ts:1795648609.526552000 count:342 nmi-total:361 nmi-count:2
           <...>-167     [001] d......    14.028686: #10    inner/outer(us): 16536/12175 ts:1795648615.608047610 count:196
";

    fn samples(text: &str) -> Vec<Sample> {
        text.lines()
            .filter_map(|l| match parse_line(l) {
                Line::Sample(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_6_1_lines_of_the_lab() {
        let s = samples(LAB_6_1);
        assert_eq!(s.len(), 4);
        assert_eq!(
            s[0],
            Sample {
                seq: 1,
                inner_ns: 2_967_000,
                outer_ns: 8_276_000,
                ts_ns: 1_795_648_606_299_571_570,
                count: Some(846),
                nmi_count: 0,
                nmi_total_ns: Some(0),
            }
        );
        assert_eq!(s[0].latency_ns(), 8_276_000);
        assert_eq!(
            s[1],
            Sample {
                seq: 3,
                inner_ns: 108_190_000,
                outer_ns: 14_203_000,
                ts_ns: 1_795_648_608_452_362_880,
                count: Some(219),
                nmi_count: 3,
                nmi_total_ns: Some(10_297_000),
            }
        );
        assert_eq!(s[1].latency_ns(), 108_190_000);
        assert_eq!((s[2].nmi_count, s[2].nmi_total_ns), (2, Some(361_000)));
        assert_eq!(s[3].seq, 10);
    }

    #[test]
    fn the_first_format_without_count() {
        // The tracer's first format (4.9): `#%-5u inner/outer(us): %4llu/%-5llu ts:%ld.%09ld`,
        // then the NMI fields when there were NMIs.
        let l = "          <idle>-0     [002] d...  1062.131564: #1     inner/outer(us):   12/15    ts:1480018163.487372830";
        assert_eq!(
            parse_line(l),
            Line::Sample(Sample {
                seq: 1,
                inner_ns: 12_000,
                outer_ns: 15_000,
                ts_ns: 1_480_018_163_487_372_830,
                count: None,
                nmi_count: 0,
                nmi_total_ns: Some(0),
            })
        );
        let l = "kworker-9 [000] d... 1.0: #22    inner/outer(us):    0/31    ts:1480018163.000000005 nmi-total:4 nmi-count:1";
        let Line::Sample(s) = parse_line(l) else {
            panic!("not read")
        };
        assert_eq!((s.seq, s.outer_ns, s.count), (22, 31_000, None));
        assert_eq!((s.nmi_count, s.nmi_total_ns), (1, Some(4_000)));
        assert_eq!(s.ts_ns, 1_480_018_163_000_000_005);
    }

    #[test]
    fn nmis_without_their_time_on_a_generic_sched_clock() {
        // arm64 and arm: the count alone; the time is unknown, not 0.
        let l = "<...>-80 [001] d..h1.. 12.5: #7     inner/outer(us):   20/8     ts:1700000000.000000001 count:1 nmi-count:2";
        let Line::Sample(s) = parse_line(l) else {
            panic!("not read")
        };
        assert_eq!((s.nmi_count, s.nmi_total_ns), (2, None));
        assert_eq!(s.latency_ns(), 20_000);
    }

    #[test]
    fn a_line_without_the_trace_prefix_and_in_latency_format() {
        // trace_pipe with every context option off, and the latency format.
        for l in [
            "#5 inner/outer(us): 3/4 ts:10.5 count:2",
            "  <...>-167     1d.....    0us : #5     inner/outer(us):    3/4     ts:10.500000000 count:2",
        ] {
            let Line::Sample(s) = parse_line(l) else {
                panic!("not read: {l}")
            };
            assert_eq!(
                (s.seq, s.inner_ns, s.outer_ns, s.ts_ns, s.count),
                (5, 3_000, 4_000, 10_500_000_000, Some(2)),
                "{l}"
            );
        }
    }

    #[test]
    fn fields_are_read_by_name_in_any_order_and_new_ones_pass() {
        // A later kernel may add fields or move them: read by their names.
        let l =
            "#9 inner/outer(us): 7/70 nmi-count:2 future:3 count:4 nmi-total:11 ts:5.000000001 x";
        assert_eq!(
            parse_line(l),
            Line::Sample(Sample {
                seq: 9,
                inner_ns: 7_000,
                outer_ns: 70_000,
                ts_ns: 5_000_000_001,
                count: Some(4),
                nmi_count: 2,
                nmi_total_ns: Some(11_000),
            })
        );
    }

    #[test]
    fn lost_events_and_other_lines() {
        assert_eq!(parse_line("CPU:1 [LOST 17 EVENTS]"), Line::Lost(17));
        assert_eq!(parse_line("CPU:1 [LOST] EVENTS"), Line::Other);
        for l in [
            "",
            "# tracer: hwlat",
            "  <idle>-0 [001] d.h. 5.0: irq_handler_entry: irq=4 name=ttyS0",
            // A damaged sample: no sequence number, no ts, a bad pair.
            "inner/outer(us): 1/2 ts:1.0",
            "#1 inner/outer(us): 1/2",
            "#1 inner/outer(us): 1-2 ts:1.0",
            "#1 inner/outer(us): x/2 ts:1.0",
            "#1 inner/outer(us): 1/2 ts:1.0000000001",
            "#1 inner/outer(us): 1/2 ts:1.00a",
            "#x inner/outer(us): 1/2 ts:1.0",
        ] {
            assert_eq!(parse_line(l), Line::Other, "{l:?}");
        }
    }

    #[test]
    fn seconds_and_microseconds() {
        assert_eq!(seconds("0.000000001"), Some(1));
        assert_eq!(seconds("2.5"), Some(2_500_000_000));
        assert_eq!(seconds("7"), Some(7_000_000_000));
        assert_eq!(seconds("3."), Some(3_000_000_000));
        assert_eq!(seconds("18446744074.0"), None);
        assert_eq!(us("18446744073709552"), Some(u64::MAX));
        assert_eq!(us("12"), Some(12_000));
        assert_eq!(us("-1"), None);
    }

    #[test]
    fn lines_cut_by_reads_are_joined() {
        let mut pending = String::new();
        let mut got = Vec::new();
        split_lines(&mut pending, "#1 inner/out", |l| got.push(l.to_string()));
        assert!(got.is_empty());
        split_lines(&mut pending, "er(us): 1/2 ts:1.0\n#2 a\n#3", |l| {
            got.push(l.to_string())
        });
        assert_eq!(got, ["#1 inner/outer(us): 1/2 ts:1.0", "#2 a"]);
        assert_eq!(pending, "#3");
        split_lines(&mut pending, "\n", |l| got.push(l.to_string()));
        assert_eq!(got.len(), 3);
        assert!(pending.is_empty());
    }
}
