//! The periodic wake-up measurement loop (what cyclictest measures), generic over
//! the wait method and the clock so that tests can drive it with a simulated
//! clock while the real path has no dynamic dispatch.
//!
//! One iteration is: wait, read the clock, subtract, push. When a wake-up comes
//! after the *following* deadline, the skipped deadlines are counted as overruns
//! and the schedule re-anchors on the period grid (cyclictest skips them
//! silently).

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};

use crate::sample::{Sample, SampleSink};
use crate::sys::{self, ClockId};

/// A clock the loop reads after each wake-up.
pub trait Clock {
    /// Current time in ns.
    fn now(&self) -> u64;
}

/// A POSIX clock read through `clock_gettime` (vDSO).
#[derive(Debug, Clone, Copy)]
pub struct PosixClock(pub ClockId);

impl Clock for PosixClock {
    #[inline]
    fn now(&self) -> u64 {
        sys::clock_ns(self.0)
    }
}

/// How a measurement thread waits for its next activation.
pub trait Waiter {
    /// Waits for the activation due at `deadline` (absolute, ns) and returns
    /// the time this activation was intended for. Absolute sleepers return
    /// `deadline`; relative sleepers return "time before the sleep + period";
    /// kernel timers return the expiration they were woken for.
    fn wait(&mut self, deadline: u64) -> io::Result<u64>;
}

/// The wake methods rtscope offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WakeMethod {
    /// `clock_nanosleep(TIMER_ABSTIME)` to the next deadline (default).
    Absolute,
    /// `clock_nanosleep` of one period, relative (the schedule drifts by each wake-up's latency).
    Relative,
    /// `nanosleep` of one period.
    Nanosleep,
    /// A periodic `timerfd`, blocking `read`.
    Timerfd,
    /// A periodic POSIX timer signalling the thread, `sigwaitinfo`.
    PosixTimer,
}

crate::named_enum!(WakeMethod, "wake method", {
    WakeMethod::Absolute => "absolute",
    WakeMethod::Relative => "relative",
    WakeMethod::Nanosleep => "nanosleep",
    WakeMethod::Timerfd => "timerfd",
    WakeMethod::PosixTimer => "posix-timer",
});

/// `clock_nanosleep(TIMER_ABSTIME)`.
pub struct AbsoluteSleep {
    pub clock: ClockId,
}

impl Waiter for AbsoluteSleep {
    #[inline]
    fn wait(&mut self, deadline: u64) -> io::Result<u64> {
        sys::sleep_until(self.clock, deadline)?;
        Ok(deadline)
    }
}

/// Relative `clock_nanosleep` or `nanosleep` of one period.
pub struct RelativeSleep {
    pub clock: ClockId,
    pub period_ns: u64,
    /// Use `nanosleep(2)` instead of `clock_nanosleep`.
    pub nanosleep: bool,
    /// The first activation is still absolute (the common start time).
    started: bool,
}

impl RelativeSleep {
    pub fn new(clock: ClockId, period_ns: u64, nanosleep: bool) -> Self {
        RelativeSleep {
            clock,
            period_ns,
            nanosleep,
            started: false,
        }
    }
}

impl Waiter for RelativeSleep {
    #[inline]
    fn wait(&mut self, deadline: u64) -> io::Result<u64> {
        if !self.started {
            self.started = true;
            sys::sleep_until(self.clock, deadline)?;
            return Ok(deadline);
        }
        let before = sys::clock_ns(self.clock);
        if self.nanosleep {
            sys::nanosleep(self.period_ns)?;
        } else {
            sys::sleep_for(self.clock, self.period_ns)?;
        }
        Ok(before + self.period_ns)
    }
}

/// Keeps track of a kernel timer's expirations on its period grid.
struct Grid {
    next: u64,
    period: u64,
}

impl Grid {
    /// `n` expirations were consumed by one wake-up: returns the first of them
    /// (the one the wake-up was intended for) and advances past the rest.
    #[inline]
    fn consume(&mut self, n: u64) -> u64 {
        let intended = self.next;
        self.next += n.max(1) * self.period;
        intended
    }
}

/// A periodic timerfd; `read` blocks until it expires.
pub struct TimerfdWait {
    fd: OwnedFd,
    grid: Grid,
}

impl TimerfdWait {
    /// Arms a timerfd on `clock`, first expiring at `first_ns`.
    pub fn new(clock: ClockId, first_ns: u64, period_ns: u64) -> io::Result<Self> {
        Ok(TimerfdWait {
            fd: sys::timerfd_periodic(clock, first_ns, period_ns)?,
            grid: Grid {
                next: first_ns,
                period: period_ns,
            },
        })
    }
}

impl Waiter for TimerfdWait {
    #[inline]
    fn wait(&mut self, _deadline: u64) -> io::Result<u64> {
        let n = sys::timerfd_wait(&self.fd)?;
        Ok(self.grid.consume(n))
    }
}

/// A periodic POSIX timer that signals this thread; `sigwaitinfo` waits for it.
pub struct PosixTimerWait {
    _timer: sys::ThreadTimer,
    set: libc::sigset_t,
    grid: Grid,
}

/// The signal POSIX-timer threads wait for (blocked in every measurement thread).
pub fn timer_signal() -> i32 {
    libc::SIGRTMIN() + 1
}

impl PosixTimerWait {
    /// Creates the timer for the calling thread; `timer_signal()` must be blocked.
    pub fn new(clock: ClockId, first_ns: u64, period_ns: u64) -> io::Result<Self> {
        let sig = timer_signal();
        Ok(PosixTimerWait {
            _timer: sys::ThreadTimer::periodic(clock, sig, sys::gettid(), first_ns, period_ns)?,
            set: sys::sigset_of(&[sig]),
            grid: Grid {
                next: first_ns,
                period: period_ns,
            },
        })
    }
}

impl Waiter for PosixTimerWait {
    #[inline]
    fn wait(&mut self, _deadline: u64) -> io::Result<u64> {
        let overrun = sys::sigwait_one(&self.set)?;
        Ok(self.grid.consume(1 + u64::from(overrun)))
    }
}

/// What one measurement loop does.
#[derive(Debug, Clone)]
pub struct LoopConfig {
    pub period_ns: u64,
    /// The first activation, absolute on the loop's clock.
    pub first_deadline_ns: u64,
    /// Stop after this many samples.
    pub loops: Option<u64>,
    /// Stop everything at the first sample above this latency.
    pub break_above_ns: Option<u64>,
    /// The CPU to record in samples when the thread is pinned to one CPU;
    /// otherwise the CPU is read after each wake-up.
    pub fixed_cpu: Option<u32>,
}

/// Why a measurement loop returned.
#[derive(Debug)]
pub enum LoopEnd {
    /// It took its `loops` samples.
    Loops,
    /// The shared stop flag was raised.
    Stopped,
    /// A sample exceeded `break_above_ns`; the stop flag was raised.
    Break {
        seq: u64,
        t_ns: u64,
        latency_ns: i64,
    },
    /// The wait failed.
    Error(io::Error),
}

/// Runs the measurement loop until `loops` samples, the stop flag, a break, or
/// an error. The hot path does: wait, read the clock, subtract, push — no
/// allocation, no lock, no syscall besides the wait and the clock read.
pub fn run_loop<W: Waiter, C: Clock, S: SampleSink>(
    waiter: &mut W,
    clock: &C,
    sink: &mut S,
    cfg: &LoopConfig,
    stop: &AtomicBool,
) -> LoopEnd {
    let period = cfg.period_ns.max(1);
    let loops = cfg.loops.unwrap_or(u64::MAX);
    let break_above = cfg.break_above_ns.map_or(i64::MAX, |b| b as i64);
    let mut deadline = cfg.first_deadline_ns;
    let mut seq = 0u64;
    while seq < loops {
        if stop.load(Ordering::Relaxed) {
            return LoopEnd::Stopped;
        }
        let intended = match waiter.wait(deadline) {
            Ok(t) => t,
            Err(e) => return LoopEnd::Error(e),
        };
        let now = clock.now();
        let latency = now.wrapping_sub(intended) as i64;
        let missed = if latency >= period as i64 {
            latency as u64 / period
        } else {
            0
        };
        deadline = intended + (missed + 1) * period;
        let cpu = match cfg.fixed_cpu {
            Some(c) => c,
            None => sys::current_cpu() as u32,
        };
        sink.push(Sample {
            seq,
            t_ns: now,
            latency_ns: latency,
            overruns: missed.min(u64::from(u32::MAX)) as u32,
            cpu,
        });
        if latency > break_above {
            stop.store(true, Ordering::Relaxed);
            return LoopEnd::Break {
                seq,
                t_ns: now,
                latency_ns: latency,
            };
        }
        seq += 1;
    }
    LoopEnd::Loops
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A simulated clock and absolute sleeper: each wait "sleeps" to its
    /// deadline plus the next scripted latency.
    struct Sim<'a> {
        now: &'a Cell<u64>,
        script: Vec<u64>,
        i: usize,
        waits: Vec<u64>,
    }

    impl Waiter for Sim<'_> {
        fn wait(&mut self, deadline: u64) -> io::Result<u64> {
            self.waits.push(deadline);
            let lat = self.script[self.i % self.script.len()];
            self.i += 1;
            self.now.set(deadline.max(self.now.get()) + lat);
            Ok(deadline)
        }
    }

    struct SimClock<'a>(&'a Cell<u64>);
    impl Clock for SimClock<'_> {
        fn now(&self) -> u64 {
            self.0.get()
        }
    }

    fn cfg(loops: u64) -> LoopConfig {
        LoopConfig {
            period_ns: 1000,
            first_deadline_ns: 10_000,
            loops: Some(loops),
            break_above_ns: None,
            fixed_cpu: Some(0),
        }
    }

    #[test]
    fn on_time_wakeups_follow_the_grid() {
        let now = Cell::new(0);
        let mut w = Sim {
            now: &now,
            script: vec![10, 20, 30],
            i: 0,
            waits: vec![],
        };
        let mut out = Vec::new();
        let end = run_loop(
            &mut w,
            &SimClock(&now),
            &mut out,
            &cfg(3),
            &AtomicBool::new(false),
        );
        assert!(matches!(end, LoopEnd::Loops));
        assert_eq!(w.waits, vec![10_000, 11_000, 12_000]);
        assert_eq!(
            out.iter().map(|s| s.latency_ns).collect::<Vec<_>>(),
            vec![10, 20, 30]
        );
        assert!(out.iter().all(|s| s.overruns == 0));
        assert_eq!(out[2].t_ns, 12_030);
    }

    #[test]
    fn late_wakeup_counts_skipped_periods_and_reanchors() {
        let now = Cell::new(0);
        // Second wake-up is 2.5 periods late: deadlines 12_000 and 13_000 are skipped.
        let mut w = Sim {
            now: &now,
            script: vec![5, 2500, 5, 5],
            i: 0,
            waits: vec![],
        };
        let mut out = Vec::new();
        run_loop(
            &mut w,
            &SimClock(&now),
            &mut out,
            &cfg(4),
            &AtomicBool::new(false),
        );
        assert_eq!(w.waits, vec![10_000, 11_000, 14_000, 15_000]);
        assert_eq!(out[1].latency_ns, 2500);
        assert_eq!(out[1].overruns, 2);
        assert_eq!(out.iter().map(|s| s.overruns).sum::<u32>(), 2);
        // Exactly one period late: the following deadline was missed too.
        let now = Cell::new(0);
        let mut w = Sim {
            now: &now,
            script: vec![1000, 0],
            i: 0,
            waits: vec![],
        };
        let mut out = Vec::new();
        run_loop(
            &mut w,
            &SimClock(&now),
            &mut out,
            &cfg(2),
            &AtomicBool::new(false),
        );
        assert_eq!(out[0].overruns, 1);
        assert_eq!(w.waits, vec![10_000, 12_000]);
    }

    #[test]
    fn break_above_stops_and_raises_flag() {
        let now = Cell::new(0);
        let mut w = Sim {
            now: &now,
            script: vec![10, 10, 900, 10],
            i: 0,
            waits: vec![],
        };
        let mut c = cfg(100);
        c.break_above_ns = Some(500);
        let stop = AtomicBool::new(false);
        let mut out = Vec::new();
        let end = run_loop(&mut w, &SimClock(&now), &mut out, &c, &stop);
        match end {
            LoopEnd::Break {
                seq, latency_ns, ..
            } => {
                assert_eq!(seq, 2);
                assert_eq!(latency_ns, 900);
            }
            other => panic!("{other:?}"),
        }
        assert!(stop.load(Ordering::Relaxed));
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn stop_flag_ends_loop() {
        let now = Cell::new(0);
        let mut w = Sim {
            now: &now,
            script: vec![1],
            i: 0,
            waits: vec![],
        };
        let mut out = Vec::new();
        let end = run_loop(
            &mut w,
            &SimClock(&now),
            &mut out,
            &cfg(10),
            &AtomicBool::new(true),
        );
        assert!(matches!(end, LoopEnd::Stopped));
        assert!(out.is_empty());
    }

    #[test]
    fn kernel_timer_grid_consumes_expirations() {
        let mut g = Grid {
            next: 100,
            period: 10,
        };
        assert_eq!(g.consume(1), 100);
        assert_eq!(g.consume(3), 110);
        assert_eq!(g.consume(1), 140);
    }

    #[test]
    fn real_absolute_sleep_is_never_early() {
        let clock = PosixClock(libc::CLOCK_MONOTONIC);
        let mut w = AbsoluteSleep {
            clock: libc::CLOCK_MONOTONIC,
        };
        let mut c = cfg(20);
        c.period_ns = 200_000;
        c.first_deadline_ns = clock.now() + 200_000;
        let mut out = Vec::new();
        run_loop(&mut w, &clock, &mut out, &c, &AtomicBool::new(false));
        assert_eq!(out.len(), 20);
        assert!(out.iter().all(|s| s.latency_ns >= 0));
    }

    #[test]
    fn real_timerfd_and_relative_work() {
        let clock = PosixClock(libc::CLOCK_MONOTONIC);
        let mut c = cfg(10);
        c.period_ns = 200_000;
        c.first_deadline_ns = clock.now() + 200_000;
        let mut w =
            TimerfdWait::new(libc::CLOCK_MONOTONIC, c.first_deadline_ns, c.period_ns).unwrap();
        let mut out = Vec::new();
        run_loop(&mut w, &clock, &mut out, &c, &AtomicBool::new(false));
        assert_eq!(out.len(), 10);
        assert!(out.iter().all(|s| s.latency_ns >= 0));
        c.first_deadline_ns = clock.now() + 200_000;
        let mut w = RelativeSleep::new(libc::CLOCK_MONOTONIC, c.period_ns, true);
        let mut out = Vec::new();
        run_loop(&mut w, &clock, &mut out, &c, &AtomicBool::new(false));
        assert_eq!(out.len(), 10);
        assert!(out.iter().all(|s| s.latency_ns >= 0));
    }
}
