//! The live status while a run goes on.
//!
//! On a terminal (stderr): one line per thread in cyclictest's layout, rewritten
//! in place a few times a second, µs with one decimal, plus overruns. Not a
//! terminal: no escape codes, a plain block every 10 s. `-q`: nothing.
//!
//! `rtscope cyclictest` ([`Live::cyclictest`]): cyclictest's own display on
//! stdout instead (see [`super::cyclictest`]): the `cpu_dma_latency` line,
//! then the `policy:` line and a status line per thread, redrawn in place
//! ten times a second (with `-M` only when a maximum grew) and once more at
//! the end; `-q`: only the `cpu_dma_latency` line.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use super::us1;

pub struct Live {
    quiet: bool,
    tty: bool,
    lines: usize,
    last: Option<Instant>,
    /// `rtscope cyclictest`: cyclictest's display, and each thread's
    /// maximum when it was last drawn (for `-M`).
    cyclictest: Option<(super::cyclictest::Style, Vec<i64>)>,
}

impl Live {
    pub fn new(quiet: bool) -> Self {
        Live {
            quiet,
            tty: std::io::stderr().is_terminal(),
            lines: 0,
            last: None,
            cyclictest: None,
        }
    }

    /// cyclictest's display on stdout; prints cyclictest's `cpu_dma_latency`
    /// line at once when `dma_held` (also with `-q`, as cyclictest does).
    pub fn cyclictest(style: super::cyclictest::Style, dma_held: bool) -> Self {
        if dma_held {
            super::say(super::cyclictest::DMA_LINE);
        }
        Live {
            quiet: style.quiet,
            tty: false,
            lines: 0,
            last: None,
            cyclictest: Some((style, vec![])),
        }
    }

    fn every(&self) -> Duration {
        if self.cyclictest.is_some() {
            Duration::from_millis(100)
        } else if self.tty {
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
        if self.cyclictest.is_some() {
            self.last = Some(Instant::now());
            self.draw_cyclictest(&rows(), false);
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

    /// Leaves the last live lines on screen; cyclictest's display draws its
    /// block once more with the final figures (not with `-q`).
    pub fn finish(&mut self, rows: impl FnOnce() -> Vec<ThreadStatus>) {
        if self.cyclictest.is_some() && !self.quiet {
            self.draw_cyclictest(&rows(), true);
        }
    }

    /// Draws cyclictest's block on stdout; with `-M` only when a maximum
    /// grew since the last one drawn (or `always`).
    fn draw_cyclictest(&mut self, rows: &[ThreadStatus], always: bool) {
        let Some((style, maxima)) = self.cyclictest.as_mut() else {
            return;
        };
        let now: Vec<i64> = rows.iter().map(|r| r.max_ns).collect();
        if !should_draw(style.refresh_on_max, always, self.lines > 0, maxima, &now) {
            return;
        }
        let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let text = super::cyclictest::block(style, &loadavg, rows, self.lines > 0);
        *maxima = now;
        self.lines = rows.len() + 2;
        super::say(&text);
    }
}

/// Whether cyclictest's display draws now: always the first time and at
/// the end (`always`); with `-M` otherwise only when a maximum grew.
fn should_draw(
    refresh_on_max: bool,
    always: bool,
    drawn: bool,
    before: &[i64],
    now: &[i64],
) -> bool {
    !refresh_on_max || always || !drawn || grew(before, now)
}

/// Whether any thread's maximum is above the one drawn before.
fn grew(before: &[i64], now: &[i64]) -> bool {
    now.iter()
        .enumerate()
        .any(|(i, m)| before.get(i).is_none_or(|b| m > b))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_maximum_grows_only_above_the_one_drawn() {
        assert!(!grew(&[5, 7], &[5, 7]));
        assert!(grew(&[5, 7], &[5, 8]));
        assert!(grew(&[5, 7], &[6, 7]));
        assert!(!grew(&[5, 7], &[4, 6]));
        // A thread not drawn before.
        assert!(grew(&[5], &[5, 0]));
        assert!(!grew(&[], &[]));
    }

    #[test]
    fn refresh_on_max_draws_only_when_a_maximum_grew() {
        let (same, more) = ([5, 7], [5, 9]);
        // Without -M: every time.
        assert!(should_draw(false, false, true, &same, &same));
        // -M: the first time, at the end, and when a maximum grew.
        assert!(should_draw(true, false, false, &same, &same));
        assert!(should_draw(true, true, true, &same, &same));
        assert!(should_draw(true, false, true, &same, &more));
        assert!(!should_draw(true, false, true, &same, &same));
    }
}
