//! Progress of long work, one facility for every experiment: an indicatif bar
//! on stderr when stderr is a terminal, a plain line every 10 s (and one per
//! finished step) otherwise, nothing with `-q`.
//!
//! Positions are in the caller's unit (cells' estimated milliseconds for
//! `matrix`, wake-ups for `clock --mode sparse`). Within a long step the bar
//! can move by time up to the step's estimate ([`Progress::step`]), so a
//! matrix cell of a minute does not look stuck.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rtscope_core::units::format_ns;

/// How often a bar is redrawn at most, and a plain line printed.
const TTY_EVERY: Duration = Duration::from_millis(200);
const PLAIN_EVERY: Duration = Duration::from_secs(10);

/// (position at the step's start, when the step started, the step's estimate)
type StepState = Arc<Mutex<(u64, Instant, u64)>>;

pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    quiet: bool,
    what: String,
    total: u64,
    started: Instant,
    last: Mutex<Option<Instant>>,
    step: StepState,
    /// Plain mode: a line at the start of each step.
    plain_steps: bool,
    done: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl Progress {
    /// Progress of `what` towards `total`; silent when `quiet`.
    pub fn new(what: &str, total: u64, quiet: bool) -> Self {
        let tty = !quiet && std::io::stderr().is_terminal();
        let step: StepState = Arc::new(Mutex::new((0, Instant::now(), 0)));
        let done = Arc::new(AtomicBool::new(false));
        let bar = tty.then(|| {
            let b = indicatif::ProgressBar::new(total.max(1));
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% ETA {eta} {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        });
        // Moves the bar within a step, by time, up to the step's estimate.
        let ticker = bar.clone().map(|b| {
            let (step, done) = (step.clone(), done.clone());
            std::thread::Builder::new()
                .name("rtscope-progress".into())
                .spawn(move || {
                    while !done.load(Ordering::Relaxed) {
                        match step.lock() {
                            // Only a step with an estimate moves by time.
                            Ok(s) if s.2 > 0 => {
                                let within = (s.1.elapsed().as_millis() as u64).min(s.2);
                                b.set_position(s.0 + within);
                            }
                            _ => {}
                        }
                        b.tick();
                        std::thread::sleep(TTY_EVERY);
                    }
                })
                .ok()
        });
        Progress {
            bar,
            quiet,
            what: what.to_string(),
            total,
            started: Instant::now(),
            last: Mutex::new(None),
            step,
            plain_steps: true,
            done,
            ticker: ticker.flatten(),
        }
    }

    /// Plain mode (not a terminal): no line when a step starts (for many
    /// short steps; [`Progress::set`] still prints every 10 s).
    pub fn without_plain_steps(mut self) -> Self {
        self.plain_steps = false;
        self
    }

    /// Now at `pos`; `msg()` says where (called only when something is drawn:
    /// at most every 200 ms on a terminal, every 10 s or at the end otherwise).
    pub fn set(&self, pos: u64, msg: impl FnOnce() -> String) {
        if self.quiet {
            return;
        }
        let every = if self.bar.is_some() {
            TTY_EVERY
        } else {
            PLAIN_EVERY
        };
        {
            let Ok(mut last) = self.last.lock() else {
                return;
            };
            let due = last.is_none_or(|l| l.elapsed() >= every);
            if !due && pos < self.total {
                return;
            }
            let first = last.is_none();
            *last = Some(Instant::now());
            if self.bar.is_none() && first && pos < self.total {
                // The first plain line only after the first interval.
                return;
            }
        }
        match &self.bar {
            Some(b) => {
                b.set_position(pos);
                b.set_message(msg());
            }
            None => eprintln!("{}: {}{}", self.what, msg(), self.eta(pos)),
        }
    }

    /// A step starts at `pos` and should take about `estimate` (in the
    /// position's unit, which is then milliseconds); `msg` names it.
    pub fn step(&self, pos: u64, estimate: u64, msg: &str) {
        self.at(pos, estimate);
        match &self.bar {
            Some(b) => b.set_message(msg.to_string()),
            None if !self.quiet && self.plain_steps => eprintln!("{}: {msg} ...", self.what),
            None => {}
        }
    }

    /// A line that stays (above the bar on a terminal); `pos` is where the
    /// work is now. Plain lines carry an ETA.
    pub fn line(&self, text: &str, pos: u64) {
        self.at(pos, 0);
        match &self.bar {
            Some(b) => {
                b.set_position(pos);
                b.println(text);
            }
            None if !self.quiet => eprintln!("{text}{}", self.eta(pos)),
            None => {}
        }
    }

    /// Removes the bar (the lines printed with [`Progress::line`] stay).
    pub fn finish(mut self) {
        self.stop_ticker();
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }

    fn at(&self, pos: u64, estimate: u64) {
        if let Ok(mut s) = self.step.lock() {
            *s = (pos, Instant::now(), estimate);
        }
    }

    fn stop_ticker(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }

    /// " (ETA 3.2 s)" from the pace so far; empty before any progress or at the end.
    fn eta(&self, pos: u64) -> String {
        if pos == 0 || pos >= self.total {
            return String::new();
        }
        let el = self.started.elapsed().as_secs_f64();
        let left = (self.total - pos) as f64 / pos as f64 * el;
        format!(" (ETA {})", format_ns((left * 1e9) as u64))
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop_ticker();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_follows_the_pace_and_is_empty_at_the_ends() {
        let mut p = Progress::new("test", 100, true);
        p.started = Instant::now() - Duration::from_secs(10);
        assert_eq!(p.eta(0), "");
        assert_eq!(p.eta(100), "");
        // 25 of 100 in 10 s: 30 s left.
        let e = p.eta(25);
        assert!(e.starts_with(" (ETA 30"), "{e}");
    }

    #[test]
    fn quiet_progress_never_asks_for_a_message() {
        let p = Progress::new("test", 10, true);
        p.set(10, || panic!("asked for a message while quiet"));
        assert!(p.bar.is_none());
        p.finish();
    }
}
