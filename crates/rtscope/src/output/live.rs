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
    /// Where cyclictest's display goes (stdout).
    out: Box<dyn FnMut(&str)>,
}

impl Live {
    pub fn new(quiet: bool) -> Self {
        Live {
            quiet,
            tty: std::io::stderr().is_terminal(),
            lines: 0,
            last: None,
            cyclictest: None,
            out: Box::new(super::say),
        }
    }

    /// cyclictest's display on stdout; prints cyclictest's `cpu_dma_latency`
    /// line at once when `dma_held` (also with `-q`, as cyclictest does).
    pub fn cyclictest(style: super::cyclictest::Style, dma_held: bool) -> Self {
        Self::cyclictest_to(style, dma_held, Box::new(super::say))
    }

    /// [`Live::cyclictest`], written to `out`.
    fn cyclictest_to(
        style: super::cyclictest::Style,
        dma_held: bool,
        mut out: Box<dyn FnMut(&str)>,
    ) -> Self {
        if dma_held {
            out(super::cyclictest::DMA_LINE);
        }
        Live {
            quiet: style.quiet,
            tty: false,
            lines: 0,
            last: None,
            cyclictest: Some((style, vec![])),
            out,
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
        (self.out)(&text);
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

    use super::super::cyclictest::Style;
    use std::cell::RefCell;
    use std::rc::Rc;

    fn row(i: usize, max_ns: i64) -> ThreadStatus {
        ThreadStatus {
            index: i,
            count: 1,
            max_ns,
            ..ThreadStatus::default()
        }
    }

    fn live(style: Style, dma: bool) -> (Live, Rc<RefCell<String>>) {
        let text = Rc::new(RefCell::new(String::new()));
        let t = text.clone();
        let l = Live::cyclictest_to(style, dma, Box::new(move |s| t.borrow_mut().push_str(s)));
        (l, text)
    }

    /// cyclictest's display: the cpu_dma_latency line at once, a block at
    /// most every 100 ms, each later one going back up over the last
    /// (threads + 2 lines), the final figures at the end.
    #[test]
    fn cyclictests_display_draws_blocks_and_goes_back_up() {
        let style = Style {
            policy: "fifo".into(),
            ..Style::default()
        };
        let (mut l, text) = live(style.clone(), true);
        assert_eq!(*text.borrow(), super::super::cyclictest::DMA_LINE);
        text.borrow_mut().clear();
        let rows = vec![row(0, 5000), row(1, 7000), row(2, 1000)];
        l.update(|| rows.clone(), Duration::ZERO);
        let first = text.borrow().clone();
        assert!(first.starts_with("policy: fifo: loadavg: "), "{first}");
        assert_eq!(first.lines().count(), 5);
        // At once again: not yet.
        l.update(|| rows.clone(), Duration::ZERO);
        assert_eq!(*text.borrow(), first);
        l.finish(|| rows.clone());
        let all = text.borrow().clone();
        assert!(
            all[first.len()..].starts_with("\x1b[5Apolicy: fifo: "),
            "{all:?}"
        );
        assert_eq!(all.matches("T: 0").count(), 2);
        // Without the dma line where it is not held.
        let (_, text) = live(style, false);
        assert!(text.borrow().is_empty());
    }

    #[test]
    fn the_quiet_display_prints_only_the_dma_line() {
        let style = Style {
            quiet: true,
            ..Style::default()
        };
        let (mut l, text) = live(style, true);
        l.update(|| vec![row(0, 1)], Duration::ZERO);
        l.finish(|| vec![row(0, 1)]);
        assert_eq!(*text.borrow(), super::super::cyclictest::DMA_LINE);
    }

    #[test]
    fn refresh_on_max_redraws_when_a_maximum_grew() {
        let style = Style {
            refresh_on_max: true,
            ..Style::default()
        };
        let (mut l, text) = live(style, false);
        l.draw_cyclictest(&[row(0, 5)], false);
        let n = text.borrow().len();
        assert!(n > 0);
        l.draw_cyclictest(&[row(0, 5)], false);
        assert_eq!(text.borrow().len(), n);
        l.draw_cyclictest(&[row(0, 6)], false);
        assert!(text.borrow().len() > n);
        let n = text.borrow().len();
        l.finish(|| vec![row(0, 6)]);
        assert!(text.borrow().len() > n);
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
