//! The periodic wake-up measurement loop (what cyclictest measures), generic over
//! the wait method and the clock so that tests can drive it with a simulated
//! clock while the real path has no dynamic dispatch.
//!
//! One iteration is: wait, read the clock, subtract, push. When a wake-up comes
//! after the *following* deadline, the skipped deadlines are counted as overruns
//! and the schedule re-anchors on the period grid (cyclictest skips them
//! silently).
//!
//! The first deadline is chosen by the loop itself, on entry, after all of the
//! thread's set-up: the common start if it is still at least a margin ahead,
//! else the next point of the start's period grid that is (so the first timer
//! is never armed in the past, and threads with equal periods stay in phase).
//!
//! Every wait can be interrupted by [`crate::rt::wake_thread`]: the wait then
//! returns without an activation, the loop looks at its stop flag and ends
//! without recording anything.
//!
//! A run with a duration also ends by itself: the loop is given its end time
//! ([`LoopConfig::end_ns`], absolute on its own clock, [`end_time`]) and stops
//! before a wait whose deadline is at or after it. The deadline comes from the
//! clock reading the loop takes anyway (it is always past that reading), so
//! the check costs no system call, and no wait reaches past the end. The stop
//! flag alone is not enough: it is raised by a thread of normal priority,
//! which never runs while real-time threads that cannot keep up with their
//! period take every CPU (cyclictest's threads check their own end time too).

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
    /// Prepares the first activation, at `first_ns` (absolute, ns): kernel
    /// timers are created and armed here. [`run_loop`] calls it once, right
    /// after choosing the first deadline and before the first [`Waiter::wait`].
    fn start(&mut self, first_ns: u64) -> io::Result<()> {
        let _ = first_ns;
        Ok(())
    }

    /// Waits for the activation due at `deadline` (absolute, ns) and returns
    /// the time this activation was intended for. Absolute sleepers return
    /// `deadline`; relative sleepers return "time before the sleep + period";
    /// kernel timers return the expiration they were woken for. `Ok(None)`:
    /// a signal handler interrupted the wait (see [`crate::rt::wake_thread`])
    /// and there is no activation to measure.
    fn wait(&mut self, deadline: u64) -> io::Result<Option<u64>>;

    /// The periods the last activation skipped, given its `latency` (ns,
    /// at least 0) and the period: by default every deadline that passed
    /// before the clock was read (`latency / period`). Kernel timers count
    /// their expirations themselves: theirs is the expirations the wake-up
    /// consumed beyond the one it was woken for, so that a clock read that
    /// comes after the next expiration does not count that one twice.
    #[inline]
    fn skipped(&self, latency: u64, period: u64) -> u64 {
        latency / period
    }
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
    /// The clock the deadlines are on.
    pub clock: ClockId,
}

impl Waiter for AbsoluteSleep {
    #[inline]
    fn wait(&mut self, deadline: u64) -> io::Result<Option<u64>> {
        Ok(sys::sleep_until_interruptible(self.clock, deadline)?.then_some(deadline))
    }
}

/// Relative `clock_nanosleep` or `nanosleep` of one period.
pub struct RelativeSleep {
    /// The clock slept on.
    pub clock: ClockId,
    /// The period, ns.
    pub period_ns: u64,
    /// Use `nanosleep(2)` instead of `clock_nanosleep`.
    pub nanosleep: bool,
    /// The first activation is still absolute (the common start time).
    started: bool,
}

impl RelativeSleep {
    /// A relative sleeper of `period_ns` on `clock` (`nanosleep`: `nanosleep(2)` instead).
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
    fn wait(&mut self, deadline: u64) -> io::Result<Option<u64>> {
        if !self.started {
            if !sys::sleep_until_interruptible(self.clock, deadline)? {
                return Ok(None);
            }
            self.started = true;
            return Ok(Some(deadline));
        }
        let before = sys::clock_ns(self.clock);
        let slept = if self.nanosleep {
            sys::nanosleep_interruptible(self.period_ns)?
        } else {
            sys::sleep_for_interruptible(self.clock, self.period_ns)?
        };
        Ok(slept.then_some(before + self.period_ns))
    }
}

/// Keeps track of a kernel timer's expirations on its period grid.
struct Grid {
    next: u64,
    period: u64,
    /// Expirations the last wake-up consumed (at least 1).
    last: u64,
}

impl Grid {
    /// `n` expirations were consumed by one wake-up: returns the first of them
    /// (the one the wake-up was intended for) and advances past the rest.
    #[inline]
    fn consume(&mut self, n: u64) -> u64 {
        let intended = self.next;
        self.last = n.max(1);
        self.next += self.last * self.period;
        intended
    }

    /// The periods the last wake-up skipped: the expirations it consumed
    /// beyond the first.
    #[inline]
    fn skipped(&self) -> u64 {
        self.last - 1
    }
}

fn not_started() -> io::Error {
    io::Error::other("timer waited for before it was started")
}

/// A periodic timerfd; `read` blocks until it expires.
pub struct TimerfdWait {
    clock: ClockId,
    fd: Option<OwnedFd>,
    grid: Grid,
}

impl TimerfdWait {
    /// A timerfd on `clock` with period `period_ns`, created and armed by
    /// [`Waiter::start`].
    pub fn new(clock: ClockId, period_ns: u64) -> Self {
        TimerfdWait {
            clock,
            fd: None,
            grid: Grid {
                next: 0,
                period: period_ns,
                last: 1,
            },
        }
    }
}

impl Waiter for TimerfdWait {
    fn start(&mut self, first_ns: u64) -> io::Result<()> {
        self.fd = Some(sys::timerfd_periodic(
            self.clock,
            first_ns,
            self.grid.period,
        )?);
        self.grid.next = first_ns;
        Ok(())
    }

    #[inline]
    fn wait(&mut self, _deadline: u64) -> io::Result<Option<u64>> {
        let fd = self.fd.as_ref().ok_or_else(not_started)?;
        Ok(sys::timerfd_wait_interruptible(fd)?.map(|n| self.grid.consume(n)))
    }

    #[inline]
    fn skipped(&self, _latency: u64, _period: u64) -> u64 {
        self.grid.skipped()
    }
}

/// The kernel side of [`PosixTimerWait`]: arms a periodic timer and waits
/// for its signal. A trait so that the missed-period accounting can be
/// driven with scripted `si_overrun` values.
pub trait TimerSignal {
    /// Arms the timer: first expiry at `first_ns` on `clock`, then every `period_ns`.
    fn arm(&mut self, clock: ClockId, first_ns: u64, period_ns: u64) -> io::Result<()>;
    /// Waits for the next expiry signal: `Some(si_overrun)` (expiries that
    /// came while the signal was pending), or `None` if interrupted.
    fn wait(&mut self) -> io::Result<Option<u32>>;
}

/// A per-thread POSIX timer that sends [`timer_signal`] to the thread that
/// armed it; `sigwaitinfo` waits for it.
pub struct ThreadTimerSignal {
    timer: Option<sys::ThreadTimer>,
    set: libc::sigset_t,
}

impl TimerSignal for ThreadTimerSignal {
    fn arm(&mut self, clock: ClockId, first_ns: u64, period_ns: u64) -> io::Result<()> {
        self.timer = Some(sys::ThreadTimer::periodic(
            clock,
            timer_signal(),
            sys::gettid(),
            first_ns,
            period_ns,
        )?);
        Ok(())
    }

    #[inline]
    fn wait(&mut self) -> io::Result<Option<u32>> {
        if self.timer.is_none() {
            return Err(not_started());
        }
        sys::sigwait_one_interruptible(&self.set)
    }
}

/// A periodic POSIX timer that signals this thread; `sigwaitinfo` waits for it.
pub struct PosixTimerWait<T: TimerSignal = ThreadTimerSignal> {
    clock: ClockId,
    signal: T,
    grid: Grid,
}

/// The signal POSIX-timer threads wait for (blocked in every measurement thread).
pub fn timer_signal() -> i32 {
    libc::SIGRTMIN() + 1
}

impl PosixTimerWait {
    /// A timer on `clock` with period `period_ns` for the thread that calls
    /// [`Waiter::start`] (which creates and arms it); `timer_signal()` must be
    /// blocked in that thread.
    pub fn new(clock: ClockId, period_ns: u64) -> Self {
        PosixTimerWait::with_signal(
            clock,
            period_ns,
            ThreadTimerSignal {
                timer: None,
                set: sys::sigset_of(&[timer_signal()]),
            },
        )
    }
}

impl<T: TimerSignal> PosixTimerWait<T> {
    /// A timer with period `period_ns` whose expiries come from `signal`.
    pub fn with_signal(clock: ClockId, period_ns: u64, signal: T) -> Self {
        PosixTimerWait {
            clock,
            signal,
            grid: Grid {
                next: 0,
                period: period_ns,
                last: 1,
            },
        }
    }
}

impl<T: TimerSignal> Waiter for PosixTimerWait<T> {
    fn start(&mut self, first_ns: u64) -> io::Result<()> {
        self.signal.arm(self.clock, first_ns, self.grid.period)?;
        self.grid.next = first_ns;
        Ok(())
    }

    #[inline]
    fn wait(&mut self, _deadline: u64) -> io::Result<Option<u64>> {
        // One signal stands for itself plus `si_overrun` later expiries.
        Ok(self
            .signal
            .wait()?
            .map(|overrun| self.grid.consume(1 + u64::from(overrun))))
    }

    #[inline]
    fn skipped(&self, _latency: u64, _period: u64) -> u64 {
        self.grid.skipped()
    }
}

/// How far ahead of "now" the loop arms its first deadline at least, by
/// default: time for the wait method's set-up call and the first arming.
pub const START_MARGIN_NS: u64 = 200_000;

/// The first deadline of a loop entered at `now`: `start` if it is at least
/// `margin` ahead, else the first point of `start`'s grid (`start + k *
/// period`) that is.
pub fn first_deadline(start: u64, period: u64, now: u64, margin: u64) -> u64 {
    let earliest = now.saturating_add(margin);
    if start >= earliest {
        return start;
    }
    let k = (earliest - start).div_ceil(period.max(1));
    start.saturating_add(k.saturating_mul(period.max(1)))
}

/// The end time of a loop started at `start_ns` that runs for `duration_ns`
/// (absolute, on the loop's clock; `None`: no duration, the loop ends on its
/// count or its stop flag).
pub fn end_time(start_ns: u64, duration_ns: Option<u64>) -> Option<u64> {
    duration_ns.map(|d| start_ns.saturating_add(d))
}

/// Whether a loop that ends at `end_ns` ([`end_time`]) is over at `t` (a
/// reading of its clock, or a deadline taken from one): `t` is at or after
/// the end. A loop without an end (`None`) is never over.
#[inline]
pub fn reached(end_ns: Option<u64>, t: u64) -> bool {
    end_ns.is_some_and(|end| t >= end)
}

/// What one measurement loop does.
#[derive(Debug, Clone)]
pub struct LoopConfig {
    /// The period, ns.
    pub period_ns: u64,
    /// The common start, absolute on the loop's clock. The first deadline is
    /// [`first_deadline`]`(start_ns, period_ns, now at loop entry, start_margin_ns)`.
    pub start_ns: u64,
    /// The first deadline is at least this far after the loop's entry
    /// ([`START_MARGIN_NS`]).
    pub start_margin_ns: u64,
    /// Wake-ups at the start whose samples are dropped (not pushed, not
    /// checked against `break_above_ns`); they count towards `loops`.
    pub warmup: u64,
    /// Stop after this many wake-ups (warm-up included).
    pub loops: Option<u64>,
    /// Stop at this time (absolute, on the loop's clock; [`end_time`]): the
    /// loop ends instead of waiting for a deadline at or after it.
    pub end_ns: Option<u64>,
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
    /// Its end time came: the next deadline was at or after `end_ns`.
    Duration,
    /// The shared stop flag was raised (seen before a wait, or after a wait
    /// that [`crate::rt::wake_thread`] interrupted).
    Stopped,
    /// A sample exceeded `break_above_ns`; the stop flag was raised.
    Break {
        /// The sample's sequence number.
        seq: u64,
        /// Its wake-up time, ns on the loop's clock.
        t_ns: u64,
        /// Its latency, ns.
        latency_ns: i64,
    },
    /// The wait failed.
    Error(io::Error),
}

/// Runs the measurement loop until `loops` samples, its end time, the stop
/// flag, a break, or an error. The hot path does: wait, read the clock,
/// subtract, push — no allocation, no lock, no syscall besides the wait and
/// the clock read. The end needs nobody else: it is seen before the wait for
/// a deadline at or after it, even when the stop flag is never raised.
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
    let mut deadline = first_deadline(cfg.start_ns, period, clock.now(), cfg.start_margin_ns);
    if let Err(e) = waiter.start(deadline) {
        return LoopEnd::Error(e);
    }
    let mut seq = 0u64;
    while seq < loops {
        if stop.load(Ordering::Relaxed) {
            return LoopEnd::Stopped;
        }
        // The deadline is past the last clock reading: a wake-up that came
        // after the end stops the loop here too.
        if reached(cfg.end_ns, deadline) {
            return LoopEnd::Duration;
        }
        let intended = match waiter.wait(deadline) {
            Ok(Some(t)) => t,
            // Interrupted: no activation; the stop flag is looked at again.
            Ok(None) => continue,
            Err(e) => return LoopEnd::Error(e),
        };
        let now = clock.now();
        let latency = now.wrapping_sub(intended) as i64;
        let missed = if latency >= period as i64 {
            waiter.skipped(latency as u64, period)
        } else {
            0
        };
        deadline = intended + (missed + 1) * period;
        if seq < cfg.warmup {
            seq += 1;
            continue;
        }
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
        /// What `start` was given.
        armed: Vec<u64>,
        /// Wait number `n` is interrupted (returns no activation, time does
        /// not advance); if a flag is given, it is raised first (a stop).
        interrupt: Option<(usize, Option<&'a AtomicBool>)>,
    }

    fn sim(now: &Cell<u64>, script: Vec<u64>) -> Sim<'_> {
        Sim {
            now,
            script,
            i: 0,
            waits: vec![],
            armed: vec![],
            interrupt: None,
        }
    }

    impl Waiter for Sim<'_> {
        fn start(&mut self, first_ns: u64) -> io::Result<()> {
            self.armed.push(first_ns);
            Ok(())
        }

        fn wait(&mut self, deadline: u64) -> io::Result<Option<u64>> {
            let n = self.waits.len();
            self.waits.push(deadline);
            if let Some((at, flag)) = self.interrupt {
                if at == n {
                    if let Some(f) = flag {
                        f.store(true, Ordering::Relaxed);
                    }
                    return Ok(None);
                }
            }
            let lat = self.script[self.i % self.script.len()];
            self.i += 1;
            self.now.set(deadline.max(self.now.get()) + lat);
            Ok(Some(deadline))
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
            start_ns: 10_000,
            start_margin_ns: 0,
            warmup: 0,
            loops: Some(loops),
            end_ns: None,
            break_above_ns: None,
            fixed_cpu: Some(0),
        }
    }

    #[test]
    fn on_time_wakeups_follow_the_grid() {
        let now = Cell::new(0);
        let mut w = sim(&now, vec![10, 20, 30]);
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
        let mut w = sim(&now, vec![5, 2500, 5, 5]);
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
        let mut w = sim(&now, vec![1000, 0]);
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
        // A latency exactly at the threshold does not break; only one above it.
        let mut w = sim(&now, vec![10, 500, 900, 10]);
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
        let mut w = sim(&now, vec![1]);
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

    /// A run whose real-time threads take every CPU: the thread of normal
    /// priority that raises the stop flag never runs, so the loop must end
    /// by itself at its end time, from its own clock readings.
    #[test]
    fn loop_ends_at_its_own_end_time_without_the_stop_flag() {
        // Deadlines 10_000, 11_000, ...; the end at 15_000 is a deadline
        // itself: the wake-up due then is after the run, not waited for.
        let now = Cell::new(0);
        let mut w = sim(&now, vec![10]);
        // A loop count far beyond the end only stops a loop that would not
        // end by itself (which would otherwise hang the test).
        let mut c = cfg(1_000);
        c.end_ns = end_time(10_000, Some(5_000));
        let stop = AtomicBool::new(false);
        let mut out = Vec::new();
        let end = run_loop(&mut w, &SimClock(&now), &mut out, &c, &stop);
        assert!(matches!(end, LoopEnd::Duration), "{end:?}");
        assert!(!stop.load(Ordering::Relaxed));
        assert_eq!(w.waits, vec![10_000, 11_000, 12_000, 13_000, 14_000]);
        assert_eq!(out.len(), 5);
        // One deadline before the end is still waited for.
        let now = Cell::new(0);
        let mut w = sim(&now, vec![10]);
        c.end_ns = Some(15_001);
        let mut out = Vec::new();
        let end = run_loop(&mut w, &SimClock(&now), &mut out, &c, &stop);
        assert!(matches!(end, LoopEnd::Duration), "{end:?}");
        assert_eq!(w.waits.last(), Some(&15_000));
        assert_eq!(out.len(), 6);
    }

    /// Overloaded: every wake-up comes several periods late, the deadlines
    /// skip ahead; the wake-up that comes after the end is the last one.
    #[test]
    fn late_wakeups_past_the_end_end_the_loop() {
        let now = Cell::new(0);
        let mut w = sim(&now, vec![3_500]);
        let mut c = cfg(1_000);
        c.end_ns = Some(20_000);
        let mut out = Vec::new();
        let end = run_loop(
            &mut w,
            &SimClock(&now),
            &mut out,
            &c,
            &AtomicBool::new(false),
        );
        assert!(matches!(end, LoopEnd::Duration), "{end:?}");
        // Woken at 13_500, 17_500, 21_500: the last one after the end is
        // recorded (it was due before it), then no deadline is waited for.
        assert_eq!(w.waits, vec![10_000, 14_000, 18_000]);
        assert_eq!(
            out.iter().map(|s| s.t_ns).collect::<Vec<_>>(),
            vec![13_500, 17_500, 21_500]
        );
        assert!(out.iter().all(|s| s.overruns == 3));
        // The loop count still ends a loop before its end time.
        let now = Cell::new(0);
        let mut w = sim(&now, vec![10]);
        c.loops = Some(2);
        let mut out = Vec::new();
        let end = run_loop(
            &mut w,
            &SimClock(&now),
            &mut out,
            &c,
            &AtomicBool::new(false),
        );
        assert!(matches!(end, LoopEnd::Loops), "{end:?}");
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn end_time_and_reached() {
        assert_eq!(end_time(1_000, Some(250)), Some(1_250));
        assert_eq!(end_time(1_000, None), None);
        assert_eq!(end_time(u64::MAX - 1, Some(5)), Some(u64::MAX));
        assert!(!reached(Some(100), 99));
        assert!(reached(Some(100), 100));
        assert!(reached(Some(100), 101));
        assert!(!reached(None, u64::MAX));
        assert!(!reached(None, 0));
    }

    /// The common start was chosen before the thread's set-up, which took
    /// longer than the start delay: the loop must not arm its first deadline
    /// in the past, but on the start's grid, at least the margin after entry.
    #[test]
    fn first_deadline_is_armed_after_now_at_loop_entry() {
        let now = Cell::new(53_500);
        let mut w = sim(&now, vec![10]);
        let mut c = cfg(3);
        c.start_margin_ns = 2_000;
        let mut out = Vec::new();
        run_loop(
            &mut w,
            &SimClock(&now),
            &mut out,
            &c,
            &AtomicBool::new(false),
        );
        // Entry at 53_500: earliest 55_500, next grid point of 10_000 + k * 1000.
        assert_eq!(w.armed, vec![56_000]);
        assert_eq!(w.waits, vec![56_000, 57_000, 58_000]);
        assert!(w.armed[0] > 53_500 + 2_000 - 1);
        assert_eq!(out.len(), 3);
        assert!(out.iter().all(|s| s.latency_ns == 10 && s.overruns == 0));

        // A start still far enough ahead is kept as it is.
        let now = Cell::new(1_000);
        let mut w = sim(&now, vec![10]);
        run_loop(
            &mut w,
            &SimClock(&now),
            &mut out,
            &c,
            &AtomicBool::new(false),
        );
        assert_eq!(w.armed, vec![10_000]);
        assert_eq!(w.waits[0], 10_000);
    }

    #[test]
    fn first_deadline_stays_on_the_grid() {
        assert_eq!(first_deadline(100, 10, 0, 50), 100);
        assert_eq!(first_deadline(100, 10, 60, 40), 100);
        assert_eq!(first_deadline(100, 10, 61, 40), 110);
        assert_eq!(first_deadline(100, 10, 1_000, 5), 1_010);
        assert_eq!(first_deadline(0, 0, 7, 0), 7);
        assert_eq!(first_deadline(u64::MAX - 5, 10, u64::MAX, 10), u64::MAX);
    }

    #[test]
    fn warmup_samples_are_dropped_and_count_towards_loops() {
        let now = Cell::new(0);
        // The warm-up's second wake-up would break the run and skips a period.
        let mut w = sim(&now, vec![5, 1500, 5, 5, 5, 5]);
        let mut c = cfg(6);
        c.warmup = 2;
        c.break_above_ns = Some(1000);
        let stop = AtomicBool::new(false);
        let mut out = Vec::new();
        let end = run_loop(&mut w, &SimClock(&now), &mut out, &c, &stop);
        assert!(matches!(end, LoopEnd::Loops), "{end:?}");
        assert!(!stop.load(Ordering::Relaxed));
        assert_eq!(out.iter().map(|s| s.seq).collect::<Vec<_>>(), [2, 3, 4, 5]);
        assert!(out.iter().all(|s| s.latency_ns == 5 && s.overruns == 0));
        // The schedule went on through the warm-up (re-anchored after the late one).
        assert_eq!(
            w.waits,
            vec![10_000, 11_000, 13_000, 14_000, 15_000, 16_000]
        );
    }

    #[test]
    fn interrupted_wait_records_nothing() {
        // A stop: the flag is raised, the wait interrupted; no sample for it.
        let now = Cell::new(0);
        let stop = AtomicBool::new(false);
        let mut w = sim(&now, vec![10]);
        w.interrupt = Some((2, Some(&stop)));
        let mut out = Vec::new();
        let end = run_loop(&mut w, &SimClock(&now), &mut out, &cfg(10), &stop);
        assert!(matches!(end, LoopEnd::Stopped), "{end:?}");
        assert_eq!(out.len(), 2);
        // Interrupted without a stop: the same deadline is waited for again.
        let now = Cell::new(0);
        let mut w = sim(&now, vec![10]);
        w.interrupt = Some((1, None));
        let mut out = Vec::new();
        let end = run_loop(
            &mut w,
            &SimClock(&now),
            &mut out,
            &cfg(3),
            &AtomicBool::new(false),
        );
        assert!(matches!(end, LoopEnd::Loops));
        assert_eq!(w.waits, vec![10_000, 11_000, 11_000, 12_000]);
        assert_eq!(out.len(), 3);
        assert!(out.iter().all(|s| s.latency_ns == 10));
    }

    /// Every real wait method, in a thread that accepts the wake signal,
    /// waiting for a deadline 30 s away: raising the stop flag and waking the
    /// thread ends the loop at once, with no sample.
    #[test]
    fn wake_thread_interrupts_every_wait_method() {
        use std::sync::atomic::AtomicI32;
        for method in [
            WakeMethod::Absolute,
            WakeMethod::Relative,
            WakeMethod::Nanosleep,
            WakeMethod::Timerfd,
            WakeMethod::PosixTimer,
        ] {
            let stop = AtomicBool::new(false);
            let tid = AtomicI32::new(0);
            let t0 = std::time::Instant::now();
            let (end, n) = std::thread::scope(|s| {
                let h = s.spawn(|| {
                    sys::block_signals(&[timer_signal()]).unwrap();
                    tid.store(crate::rt::accept_wake().unwrap(), Ordering::SeqCst);
                    let clock = PosixClock(libc::CLOCK_MONOTONIC);
                    let mut c = cfg(5);
                    c.period_ns = 30_000_000_000;
                    // Relative methods: the first (absolute) wait is short, the
                    // second one is the 30 s relative sleep.
                    c.start_ns = clock.now() + 1_000_000;
                    let mut out = Vec::new();
                    let id = libc::CLOCK_MONOTONIC;
                    let end = match method {
                        WakeMethod::Absolute => {
                            c.start_ns += c.period_ns;
                            run_loop(
                                &mut AbsoluteSleep { clock: id },
                                &clock,
                                &mut out,
                                &c,
                                &stop,
                            )
                        }
                        WakeMethod::Relative | WakeMethod::Nanosleep => run_loop(
                            &mut RelativeSleep::new(
                                id,
                                c.period_ns,
                                method == WakeMethod::Nanosleep,
                            ),
                            &clock,
                            &mut out,
                            &c,
                            &stop,
                        ),
                        WakeMethod::Timerfd => {
                            c.start_ns += c.period_ns;
                            run_loop(
                                &mut TimerfdWait::new(id, c.period_ns),
                                &clock,
                                &mut out,
                                &c,
                                &stop,
                            )
                        }
                        WakeMethod::PosixTimer => {
                            c.start_ns += c.period_ns;
                            run_loop(
                                &mut PosixTimerWait::new(id, c.period_ns),
                                &clock,
                                &mut out,
                                &c,
                                &stop,
                            )
                        }
                    };
                    (end, out.len())
                });
                while tid.load(Ordering::SeqCst) == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
                stop.store(true, Ordering::Relaxed);
                crate::rt::wake_until_ended(&[tid.load(Ordering::SeqCst)], |_| !h.is_finished());
                h.join().unwrap()
            });
            assert!(matches!(end, LoopEnd::Stopped), "{method:?}: {end:?}");
            let expect = usize::from(matches!(
                method,
                WakeMethod::Relative | WakeMethod::Nanosleep
            ));
            assert_eq!(n, expect, "{method:?}");
            assert!(
                t0.elapsed().as_secs() < 10,
                "{method:?}: {:?}",
                t0.elapsed()
            );
        }
    }

    /// Every real wait method ends by itself at a real end time, with no
    /// loop count and a stop flag nobody raises.
    #[test]
    fn every_wait_method_ends_at_its_end_time() {
        for method in [
            WakeMethod::Absolute,
            WakeMethod::Relative,
            WakeMethod::Nanosleep,
            WakeMethod::Timerfd,
            WakeMethod::PosixTimer,
        ] {
            let t0 = std::time::Instant::now();
            let (end, n, last) = std::thread::spawn(move || {
                sys::block_signals(&[timer_signal()]).unwrap();
                let id = libc::CLOCK_MONOTONIC;
                let clock = PosixClock(id);
                // A loop count far beyond the end: a backstop, not the end.
                let mut c = cfg(1_000);
                c.period_ns = 1_000_000;
                c.start_ns = clock.now() + 1_000_000;
                c.start_margin_ns = START_MARGIN_NS;
                c.end_ns = end_time(c.start_ns, Some(30_000_000));
                let stop = AtomicBool::new(false);
                let mut out = Vec::new();
                let p = c.period_ns;
                let end = match method {
                    WakeMethod::Absolute => run_loop(
                        &mut AbsoluteSleep { clock: id },
                        &clock,
                        &mut out,
                        &c,
                        &stop,
                    ),
                    WakeMethod::Relative | WakeMethod::Nanosleep => run_loop(
                        &mut RelativeSleep::new(id, p, method == WakeMethod::Nanosleep),
                        &clock,
                        &mut out,
                        &c,
                        &stop,
                    ),
                    WakeMethod::Timerfd => {
                        run_loop(&mut TimerfdWait::new(id, p), &clock, &mut out, &c, &stop)
                    }
                    WakeMethod::PosixTimer => {
                        run_loop(&mut PosixTimerWait::new(id, p), &clock, &mut out, &c, &stop)
                    }
                };
                let ended = clock.now();
                (end, out.len(), ended >= c.end_ns.unwrap() - p)
            })
            .join()
            .unwrap();
            assert!(matches!(end, LoopEnd::Duration), "{method:?}: {end:?}");
            // About 30 wake-ups (fewer on a slow machine; never a bound on latency).
            assert!((1..=31).contains(&n), "{method:?}: {n}");
            // It ran to (within a period of) its end, and no longer than a hang.
            assert!(last, "{method:?}");
            assert!(
                t0.elapsed().as_secs() < 10,
                "{method:?}: {:?}",
                t0.elapsed()
            );
        }
    }

    /// A simulated POSIX timer: wait `i` delivers the signal with the scripted
    /// `si_overrun`, `lat` after the last expiry it stands for.
    struct SimSignal<'a> {
        now: &'a Cell<u64>,
        /// `(si_overrun, latency after the last expiry)` per wait.
        script: Vec<(u32, u64)>,
        i: usize,
        first: u64,
        period: u64,
        /// Expiries delivered so far.
        expiries: u64,
    }

    impl TimerSignal for SimSignal<'_> {
        fn arm(&mut self, _clock: ClockId, first_ns: u64, period_ns: u64) -> io::Result<()> {
            self.first = first_ns;
            self.period = period_ns;
            Ok(())
        }

        fn wait(&mut self) -> io::Result<Option<u32>> {
            let (overrun, lat) = self.script[self.i];
            self.i += 1;
            let last = self.first + (self.expiries + u64::from(overrun)) * self.period;
            self.expiries += 1 + u64::from(overrun);
            self.now.set(last + lat);
            Ok(Some(overrun))
        }
    }

    #[test]
    fn posix_timer_counts_si_overrun_as_missed_periods() {
        let now = Cell::new(0);
        let signal = SimSignal {
            now: &now,
            script: vec![(0, 10), (2, 10), (0, 20), (1, 5), (0, 30)],
            i: 0,
            first: 0,
            period: 0,
            expiries: 0,
        };
        let mut w = PosixTimerWait::with_signal(libc::CLOCK_MONOTONIC, 1000, signal);
        let mut out = Vec::new();
        let end = run_loop(
            &mut w,
            &SimClock(&now),
            &mut out,
            &cfg(5),
            &AtomicBool::new(false),
        );
        assert!(matches!(end, LoopEnd::Loops), "{end:?}");
        // The signal after two overruns is late by two periods on the
        // expiry it was queued for; the wake-ups after it are back on time.
        assert_eq!(
            out.iter().map(|s| s.latency_ns).collect::<Vec<_>>(),
            vec![10, 2010, 20, 1005, 30]
        );
        assert_eq!(
            out.iter().map(|s| s.overruns).collect::<Vec<_>>(),
            vec![0, 2, 0, 1, 0]
        );
        assert_eq!(out[4].t_ns, 10_000 + 7 * 1000 + 30);
    }

    #[test]
    fn timer_signal_is_a_real_time_signal_of_its_own() {
        // Real-time signals queue (each expiry is one signal, with its
        // overrun count) and no user or terminal sends them: SIGHUP, say,
        // would be taken for a tick by the thread that waits for it.
        let s = timer_signal();
        assert!((libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&s), "{s}");
        assert!(![libc::SIGINT, libc::SIGTERM, libc::SIGHUP].contains(&s));
    }

    #[test]
    fn posix_timer_before_start_is_an_error() {
        let mut w = PosixTimerWait::new(libc::CLOCK_MONOTONIC, 1000);
        assert!(w.wait(0).is_err());
    }

    #[test]
    fn kernel_timer_grid_consumes_expirations() {
        let mut g = Grid {
            next: 100,
            period: 10,
            last: 1,
        };
        assert_eq!(g.consume(1), 100);
        assert_eq!(g.skipped(), 0);
        assert_eq!(g.consume(3), 110);
        assert_eq!(g.skipped(), 2);
        assert_eq!(g.consume(1), 140);
        assert_eq!(g.skipped(), 0);
        // A read that reports no expiration still stands for one.
        assert_eq!(g.consume(0), 150);
        assert_eq!(g.skipped(), 0);
    }

    /// A kernel timer's wake-up skipped the expirations it consumed beyond
    /// the first, even when the clock is read after the next expiration
    /// (1.5 periods after the last one consumed): counting `latency /
    /// period` there counted that next expiration twice, once as skipped
    /// and once as the next wake-up's own (timerfd and posix-timer runs at
    /// 1-10 µs counted up to twice the periods they had).
    #[test]
    fn kernel_timers_count_the_expirations_they_consumed() {
        let now = Cell::new(0);
        let signal = SimSignal {
            now: &now,
            script: vec![(0, 10), (1, 1_500), (0, 2_300), (3, 999), (0, 10)],
            i: 0,
            first: 0,
            period: 0,
            expiries: 0,
        };
        let mut w = PosixTimerWait::with_signal(libc::CLOCK_MONOTONIC, 1000, signal);
        let mut out = Vec::new();
        run_loop(
            &mut w,
            &SimClock(&now),
            &mut out,
            &cfg(5),
            &AtomicBool::new(false),
        );
        assert_eq!(
            out.iter().map(|s| s.latency_ns).collect::<Vec<_>>(),
            vec![10, 2_500, 2_300, 3_999, 10]
        );
        // Not [0, 2, 2, 3, 0]: the (1, 1500) wake-up consumed 2 expirations,
        // the (0, 2300) one a single one however late it was read.
        assert_eq!(
            out.iter().map(|s| s.overruns).collect::<Vec<_>>(),
            vec![0, 1, 0, 3, 0]
        );
        // The grid followed the expirations: 1 + 2 + 1 + 4 consumed.
        assert_eq!(out[4].t_ns - out[4].latency_ns as u64, 10_000 + 8 * 1000);
    }

    #[test]
    fn real_absolute_sleep_is_never_early() {
        let clock = PosixClock(libc::CLOCK_MONOTONIC);
        let mut w = AbsoluteSleep {
            clock: libc::CLOCK_MONOTONIC,
        };
        let mut c = cfg(20);
        c.period_ns = 200_000;
        c.start_ns = clock.now() + 200_000;
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
        c.start_ns = clock.now() + 200_000;
        let mut w = TimerfdWait::new(libc::CLOCK_MONOTONIC, c.period_ns);
        let mut out = Vec::new();
        run_loop(&mut w, &clock, &mut out, &c, &AtomicBool::new(false));
        assert_eq!(out.len(), 10);
        assert!(out.iter().all(|s| s.latency_ns >= 0));
        for nanosleep in [true, false] {
            c.start_ns = clock.now() + 200_000;
            let mut w = RelativeSleep::new(libc::CLOCK_MONOTONIC, c.period_ns, nanosleep);
            let mut out = Vec::new();
            run_loop(&mut w, &clock, &mut out, &c, &AtomicBool::new(false));
            assert_eq!(out.len(), 10);
            assert!(out.iter().all(|s| s.latency_ns >= 0));
            // A relative sleep's activation was intended one period after the
            // clock was read before it, which is after the previous wake-up
            // was read: intended >= previous wake-up + period (causality, not
            // a latency bound).
            for p in out.windows(2) {
                let intended = p[1].t_ns - p[1].latency_ns as u64;
                assert!(intended >= p[0].t_ns + c.period_ns, "{p:?}");
            }
        }
    }
}
