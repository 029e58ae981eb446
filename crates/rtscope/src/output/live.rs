//! The live status while a run goes on.
//!
//! On a terminal (stderr): one line per thread in cyclictest's layout, rewritten
//! in place a few times a second, µs with one decimal, plus overruns. Not a
//! terminal: no escape codes, a plain block every 10 s. `-q`: nothing.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use super::us1;

pub struct Live {
    quiet: bool,
    tty: bool,
    lines: usize,
    last: Option<Instant>,
}

impl Live {
    pub fn new(quiet: bool) -> Self {
        Live {
            quiet,
            tty: std::io::stderr().is_terminal(),
            lines: 0,
            last: None,
        }
    }

    fn every(&self) -> Duration {
        if self.tty {
            Duration::from_millis(250)
        } else {
            Duration::from_secs(10)
        }
    }

    /// Redraws if it is time to; `rows` is only called then.
    pub fn update(&mut self, rows: impl FnOnce() -> Vec<ThreadStatus>, elapsed: Duration) {
        if self.quiet || self.last.is_some_and(|l| l.elapsed() < self.every()) {
            return;
        }
        if self.last.is_none() && !self.tty {
            // First plain block only after the first interval.
            self.last = Some(Instant::now());
            return;
        }
        self.last = Some(Instant::now());
        let mut out = String::new();
        if self.tty && self.lines > 0 {
            out.push_str(&format!("\x1b[{}A", self.lines));
        }
        let lines = thread_lines(&rows());
        if !self.tty {
            out.push_str(&format!("[{:.0} s]\n", elapsed.as_secs_f64()));
        }
        for l in &lines {
            if self.tty {
                out.push_str("\x1b[2K");
            }
            out.push_str(l);
            out.push('\n');
        }
        self.lines = lines.len();
        let mut e = std::io::stderr().lock();
        let _ = e.write_all(out.as_bytes());
        let _ = e.flush();
    }

    /// Leaves the last live lines on screen (nothing else to do).
    pub fn finish(&mut self) {}
}

/// One measurement thread's figures so far.
#[derive(Debug, Clone, Default)]
pub struct ThreadStatus {
    pub index: usize,
    pub tid: i32,
    pub priority: i32,
    pub period_ns: u64,
    pub count: u64,
    pub min_ns: i64,
    /// The latest sample's latency.
    pub act_ns: i64,
    pub mean_ns: f64,
    pub max_ns: i64,
    pub overruns: u64,
}

/// cyclictest-style status lines, one per thread.
pub fn thread_lines(rows: &[ThreadStatus]) -> Vec<String> {
    rows.iter()
        .map(|t| {
            let n = t.count;
            let v = |x: f64| if n > 0 { us1(x) } else { "-".into() };
            format!(
                "T:{:>2} ({:>7}) P:{:>2} I:{:<6} C:{:>9} Min:{:>8} Act:{:>8} Avg:{:>8} Max:{:>9} Ovr:{:>6}",
                t.index,
                t.tid,
                t.priority,
                t.period_ns / 1000,
                n,
                v(t.min_ns as f64),
                v(t.act_ns as f64),
                v(t.mean_ns),
                v(t.max_ns as f64),
                t.overruns,
            )
        })
        .collect()
}
