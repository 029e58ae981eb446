//! The live status while a run goes on.
//!
//! On a terminal (stderr): one line per thread in cyclictest's layout, rewritten
//! in place a few times a second, µs with one decimal, plus overruns. Not a
//! terminal: no escape codes, a plain block every 10 s. `-q`: nothing.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use super::us1;
use crate::experiment::cyclic::{Aggregate, CyclicPlan};

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

    /// Redraws if it is time to.
    pub fn update(&mut self, agg: &Aggregate, plan: &CyclicPlan, elapsed: Duration) {
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
        let lines = thread_lines(agg, plan);
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

/// cyclictest-style status lines, one per thread.
pub fn thread_lines(agg: &Aggregate, plan: &CyclicPlan) -> Vec<String> {
    agg.threads
        .iter()
        .map(|t| {
            let st = &t.rec.stats;
            let n = st.count();
            let act = t.last.map_or(0, |s| s.latency_ns);
            format!(
                "T:{:>2} ({:>7}) P:{:>2} I:{:<6} C:{:>9} Min:{:>8} Act:{:>8} Avg:{:>8} Max:{:>9} Ovr:{:>6}",
                t.plan.index,
                t.state.as_ref().map_or(0, |s| s.tid),
                plan.rt.priority,
                t.plan.period_ns / 1000,
                n,
                if n > 0 { us1(st.min() as f64) } else { "-".into() },
                if n > 0 { us1(act as f64) } else { "-".into() },
                if n > 0 { us1(st.mean()) } else { "-".into() },
                if n > 0 { us1(st.max() as f64) } else { "-".into() },
                t.rec.overruns,
            )
        })
        .collect()
}
