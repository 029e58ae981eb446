//! cyclictest's own output layouts (rt-tests 2.x), for `rtscope cyclictest`:
//! the status lines, the block the live display redraws, and the `--json`
//! document. Fed plain data (thread figures, a result document's system
//! snapshot): nothing here measures.
//!
//! ```text
//! # /dev/cpu_dma_latency set to 0us
//! policy: fifo: loadavg: 8.05 5.12 3.32 10/124 19609
//!
//! T: 0 (19608) P:95 I:1000 C:   1960 Min:     12 Act:   15 Avg:   38 Max:    6119
//! ```
//!
//! Values are whole microseconds, truncated as cyclictest truncates them
//! (`-N`: nanoseconds, with cyclictest's wider columns). The `-h` histogram
//! text is [`super::histogram::cyclictest_text`].

use std::fmt::Write;

use super::live::ThreadStatus;

/// How `rtscope cyclictest` prints, as its cyclictest options ask.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Style {
    /// `-q`: no live display; the status lines once at the end (not with `-h`).
    pub quiet: bool,
    /// `-N`: nanoseconds instead of microseconds.
    pub nsecs: bool,
    /// `-M`: redraw only when a thread's maximum grew.
    pub refresh_on_max: bool,
    /// `-h`/`-H`: a histogram is printed at the end (then `-q` prints no status lines).
    pub histogram: bool,
    /// `-H`: the histogram has a summary column.
    pub histofall: bool,
    /// The policy as cyclictest's `policy:` line names it: `fifo`, `rr`, or
    /// `other/other`, `batch/other` where the threads run without a
    /// real-time priority.
    pub policy: String,
}

/// The line cyclictest prints when it holds `/dev/cpu_dma_latency` at 0.
pub const DMA_LINE: &str = "# /dev/cpu_dma_latency set to 0us\n";

/// ns in cyclictest's unit: whole µs truncated toward zero (C's integer
/// division), or ns with `-N`.
pub fn unit(ns: i64, nsecs: bool) -> i64 {
    if nsecs {
        ns
    } else {
        ns / 1000
    }
}

/// One thread's status line, cyclictest's `print_stat` layout.
pub fn status_line(t: &ThreadStatus, nsecs: bool) -> String {
    let (min, act, avg, max) = if t.count == 0 {
        (0, 0, 0, 0)
    } else {
        let avg = if nsecs {
            t.mean_ns as i64
        } else {
            (t.mean_ns / 1000.0) as i64
        };
        (
            unit(t.min_ns, nsecs),
            unit(t.act_ns, nsecs),
            avg,
            unit(t.max_ns, nsecs),
        )
    };
    let head = format!(
        "T:{:>2} ({:>5}) P:{:>2} I:{} C:{:>7} Min:{:>7}",
        t.index,
        t.tid,
        t.priority,
        t.period_ns / 1000,
        t.count,
        min
    );
    if nsecs {
        format!("{head} Act:{act:>8} Avg:{avg:>8} Max:{max:>8}")
    } else {
        format!("{head} Act:{act:>5} Avg:{avg:>5} Max:{max:>8}")
    }
}

/// The status lines of every thread, each ending in a newline.
pub fn status_lines(rows: &[ThreadStatus], nsecs: bool) -> String {
    rows.iter().map(|t| status_line(t, nsecs) + "\n").collect()
}

/// The block the live display redraws: the `policy:` line with the load
/// average (`/proc/loadavg` as read), an empty line, the status lines.
/// `redraw`: the cursor first goes back up over the previous block, as
/// cyclictest does (`ESC[nA`, n = threads + 2), also when stdout is not a
/// terminal.
pub fn block(style: &Style, loadavg: &str, rows: &[ThreadStatus], redraw: bool) -> String {
    let mut out = String::new();
    if redraw {
        let _ = write!(out, "\x1b[{}A", rows.len() + 2);
    }
    let _ = write!(
        out,
        "policy: {}: loadavg: {}          \n\n",
        style.policy,
        loadavg.trim_end_matches('\n')
    );
    out.push_str(&status_lines(rows, style.nsecs));
    out
}

/// One thread of cyclictest's `--json` document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JsonThread {
    /// `(bin, count)` of the histogram's non-zero bins, in bin order (empty without `-h`).
    pub histogram: Vec<(u64, u64)>,
    pub cycles: u64,
    /// In cyclictest's unit ([`unit`]).
    pub min: i64,
    pub max: i64,
    pub avg: f64,
    /// The CPU it was pinned to, -1 when not pinned.
    pub cpu: i64,
}

/// What cyclictest's `--json` document holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JsonRun {
    pub cmdline: String,
    /// `rt_test_version:` (here: the rtscope version that wrote it).
    pub version: String,
    /// `%a, %d %b %Y %T %z` ([`rfc2822`]).
    pub start_time: String,
    pub end_time: String,
    pub return_code: i32,
    pub nodename: String,
    pub release: String,
    pub kernel_version: String,
    pub machine: String,
    pub realtime: bool,
    pub nsecs: bool,
    pub threads: Vec<JsonThread>,
}

/// A JSON string literal (cyclictest writes its strings unescaped; here a
/// quote or a control character in a command line stays valid JSON).
fn js(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// cyclictest's `--json` document, in its layout (`rt_write_json` and
/// `write_stats` of rt-tests 2.x), keys with their trailing colons included.
pub fn json_text(r: &JsonRun) -> String {
    let mut o = String::new();
    o.push_str("{\n  \"file_version\": 1,\n");
    let _ = writeln!(o, "  \"cmdline:\": {},", js(&r.cmdline));
    let _ = writeln!(o, "  \"rt_test_version:\": {},", js(&r.version));
    let _ = writeln!(o, "  \"start_time\": {},", js(&r.start_time));
    let _ = writeln!(o, "  \"end_time\": {},", js(&r.end_time));
    let _ = writeln!(o, "  \"return_code\": {},", r.return_code);
    o.push_str("  \"sysinfo\": {\n    \"sysname\": \"Linux\",\n");
    let _ = writeln!(o, "    \"nodename\": {},", js(&r.nodename));
    let _ = writeln!(o, "    \"release\": {},", js(&r.release));
    let _ = writeln!(o, "    \"version\": {},", js(&r.kernel_version));
    let _ = writeln!(o, "    \"machine\": {},", js(&r.machine));
    let _ = writeln!(o, "    \"realtime\": {}", u8::from(r.realtime));
    o.push_str("  },\n");
    let _ = writeln!(o, "  \"num_threads\": {},", r.threads.len());
    let _ = writeln!(o, "  \"resolution_in_ns\": {},", u8::from(r.nsecs));
    o.push_str("  \"thread\": {\n");
    for (i, t) in r.threads.iter().enumerate() {
        let _ = writeln!(o, "    \"{i}\": {{");
        o.push_str("      \"histogram\": {");
        for (j, (bin, count)) in t.histogram.iter().enumerate() {
            o.push_str(if j == 0 { "\n" } else { ",\n" });
            let _ = write!(o, "        \"{bin}\": {count}");
        }
        if !t.histogram.is_empty() {
            o.push('\n');
        }
        o.push_str("      },\n");
        let _ = writeln!(o, "      \"cycles\": {},", t.cycles);
        let _ = writeln!(o, "      \"min\": {},", t.min);
        let _ = writeln!(o, "      \"max\": {},", t.max);
        let avg = if t.avg.is_finite() { t.avg } else { 0.0 };
        let _ = writeln!(o, "      \"avg\": {avg:.2},");
        let _ = writeln!(o, "      \"cpu\": {},", t.cpu);
        o.push_str("      \"node\": -1\n");
        let _ = writeln!(
            o,
            "    }}{}",
            if i + 1 == r.threads.len() { "" } else { "," }
        );
    }
    o.push_str("  }\n}\n");
    o
}

/// Seconds since the epoch as cyclictest's `%a, %d %b %Y %T %z` (UTC:
/// `Wed, 25 Nov 2026 23:10:49 +0000`).
pub fn rfc2822(epoch_s: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = epoch_s.div_euclid(86_400);
    let secs = epoch_s.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} +0000",
        DAYS[days.rem_euclid(7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(count: u64) -> ThreadStatus {
        ThreadStatus {
            index: 0,
            tid: 19608,
            priority: 95,
            period_ns: 1_000_000,
            count,
            min_ns: 12_999,
            act_ns: 15_500,
            mean_ns: 38_990.0,
            max_ns: 6_119_001,
            overruns: 4,
        }
    }

    /// The lines of a real cyclictest 2.40 run, character for character.
    #[test]
    fn status_lines_are_cyclictests() {
        assert_eq!(
            status_line(&status(1960), false),
            "T: 0 (19608) P:95 I:1000 C:   1960 Min:     12 Act:   15 Avg:   38 Max:    6119"
        );
        let mut t = status(5);
        (t.min_ns, t.act_ns, t.mean_ns, t.max_ns) = (66_486, 67_022, 71_095.7, 79_131);
        (t.tid, t.priority, t.index, t.period_ns) = (20855, 0, 1, 1_500_000);
        assert_eq!(
            status_line(&t, true),
            "T: 1 (20855) P: 0 I:1500 C:      5 Min:  66486 Act:   67022 Avg:   71095 Max:   79131"
        );
        // A thread that has not woken yet.
        assert_eq!(
            status_line(&status(0), false),
            "T: 0 (19608) P:95 I:1000 C:      0 Min:      0 Act:    0 Avg:    0 Max:       0"
        );
        assert_eq!(
            status_lines(&[status(3), status(4)], false).lines().count(),
            2
        );
    }

    #[test]
    fn units_truncate_toward_zero() {
        assert_eq!(unit(1999, false), 1);
        assert_eq!(unit(-1999, false), -1);
        assert_eq!(unit(1999, true), 1999);
        assert_eq!(unit(999, false), 0);
        assert_eq!(unit(1000, false), 1);
    }

    #[test]
    fn the_block_goes_back_up_over_the_last_one() {
        let style = Style {
            policy: "fifo".into(),
            ..Style::default()
        };
        let rows = [status(1), status(2)];
        let first = block(&style, "8.05 5.12 3.32 10/124 19609\n", &rows, false);
        assert!(first
            .starts_with("policy: fifo: loadavg: 8.05 5.12 3.32 10/124 19609          \n\nT: 0 ("));
        assert_eq!(first.lines().count(), 4);
        let again = block(&style, "1 2 3 4/5 6", &rows, true);
        assert!(again.starts_with("\x1b[4Apolicy: fifo: loadavg: 1 2 3 4/5 6 "));
    }

    #[test]
    fn json_is_cyclictests_layout_and_valid_json() {
        let mut r = JsonRun {
            cmdline: "rtscope cyclictest -q \"x\" --json=a.json".into(),
            version: "rtscope 0.1.0".into(),
            start_time: rfc2822(1_795_648_249),
            end_time: rfc2822(1_795_648_251),
            nodename: "vm".into(),
            release: "6.18".into(),
            kernel_version: "#1 SMP PREEMPT_DYNAMIC".into(),
            machine: "x86_64".into(),
            threads: vec![
                JsonThread {
                    histogram: vec![(12, 3), (13, 22)],
                    cycles: 25,
                    min: 12,
                    max: 13,
                    avg: 12.88,
                    cpu: 0,
                },
                JsonThread {
                    cpu: -1,
                    avg: f64::NAN,
                    ..JsonThread::default()
                },
            ],
            ..JsonRun::default()
        };
        let t = json_text(&r);
        assert!(t.contains("  \"rt_test_version:\": \"rtscope 0.1.0\",\n"));
        assert!(t.contains("  \"start_time\": \"Wed, 25 Nov 2026 23:10:49 +0000\",\n"));
        assert!(t.contains(
            "    \"0\": {\n      \"histogram\": {\n        \"12\": 3,\n        \"13\": 22\n      },\n      \"cycles\": 25,\n"
        ));
        assert!(t.contains("      \"histogram\": {      },\n"));
        assert!(
            t.contains("      \"avg\": 12.88,\n      \"cpu\": 0,\n      \"node\": -1\n    },\n")
        );
        assert!(t.contains(
            "      \"avg\": 0.00,\n      \"cpu\": -1,\n      \"node\": -1\n    }\n  }\n}\n"
        ));
        let v: serde_json::Value = serde_json::from_str(&t).unwrap();
        assert_eq!(v["cmdline:"], "rtscope cyclictest -q \"x\" --json=a.json");
        assert_eq!(v["num_threads"], 2);
        assert_eq!(v["resolution_in_ns"], 0);
        assert_eq!(v["sysinfo"]["realtime"], 0);
        assert_eq!(v["thread"]["0"]["histogram"]["13"], 22);
        r.nsecs = true;
        r.realtime = true;
        r.return_code = 1;
        let v: serde_json::Value = serde_json::from_str(&json_text(&r)).unwrap();
        assert_eq!(v["resolution_in_ns"], 1);
        assert_eq!(v["sysinfo"]["realtime"], 1);
        assert_eq!(v["return_code"], 1);
    }

    #[test]
    fn dates_are_cyclictests() {
        assert_eq!(rfc2822(0), "Thu, 01 Jan 1970 00:00:00 +0000");
        assert_eq!(rfc2822(1_795_427_186), "Mon, 23 Nov 2026 09:46:26 +0000");
        // A leap day, and the round trip through the importer's parser.
        assert_eq!(rfc2822(951_782_400), "Tue, 29 Feb 2000 00:00:00 +0000");
        for t in [0, 951_782_400, 1_795_427_186, 4_102_444_799] {
            assert_eq!(
                crate::import::cyclictest::parse_rfc2822(&rfc2822(t)),
                Some(t)
            );
        }
        assert_eq!(rfc2822(86_399), "Thu, 01 Jan 1970 23:59:59 +0000");
        assert_eq!(rfc2822(86_400 * 365), "Fri, 01 Jan 1971 00:00:00 +0000");
    }
}
