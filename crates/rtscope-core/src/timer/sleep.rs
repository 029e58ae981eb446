//! [`PreciseSleep`]: sleep until an absolute deadline with one of four
//! compensations of the wait API's own lateness.

use std::io;

use serde::{Deserialize, Serialize};

use super::track::{EwmaTracker, WindowQuantile};
use super::wait::OneShotWait;
use crate::cyclic::Clock;

/// How a [`PreciseSleep`] corrects for the lateness of its wait API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Compensation {
    /// The wait API as is: the error is its lateness.
    None,
    /// Wake a fixed, calibrated offset early (the study's static compensation);
    /// no spin, so a wake can come early.
    Static,
    /// Wake `mean + k·σ` of the recent lateness early (an EWMA), then spin on
    /// the clock to the deadline.
    Adaptive,
    /// Wake the `q`-quantile of the recent lateness early (a sliding window),
    /// then spin to the deadline.
    Hybrid,
}

crate::named_enum!(Compensation, "compensation", {
    Compensation::None => "none",
    Compensation::Static => "static",
    Compensation::Adaptive => "adaptive",
    Compensation::Hybrid => "hybrid",
});

impl Compensation {
    /// Whether the strategy spins on the clock after the wait.
    pub fn spins(self) -> bool {
        matches!(self, Compensation::Adaptive | Compensation::Hybrid)
    }
}

/// The tuning of the compensations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SleepTuning {
    /// Static: the calibrated offset, ns (also the starting margin of the
    /// adaptive and hybrid strategies).
    pub static_offset_ns: u64,
    /// Adaptive: the EWMA's smoothing factor.
    pub ewma_alpha: f64,
    /// Adaptive: `k` of `mean + k·σ`.
    pub adaptive_k: f64,
    /// Hybrid: the quantile of the lateness the margin follows.
    pub hybrid_quantile: f64,
    /// Hybrid: the window, in wakes.
    pub hybrid_window: usize,
    /// The largest margin (and so the longest spin) adaptive and hybrid use, ns.
    pub max_margin_ns: u64,
}

impl Default for SleepTuning {
    fn default() -> Self {
        SleepTuning {
            static_offset_ns: 0,
            ewma_alpha: 1.0 / 32.0,
            adaptive_k: 1.0,
            hybrid_quantile: 0.99,
            hybrid_window: 256,
            max_margin_ns: 1_000_000,
        }
    }
}

/// What one sleep did, all in ns on the sleep's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Wake {
    /// The deadline asked for.
    pub requested_ns: u64,
    /// What the wait API was asked for (the deadline minus the margin).
    pub target_ns: u64,
    /// When the wait returned.
    pub woke_ns: u64,
    /// When the sleep returned (after the spin).
    pub actual_ns: u64,
    /// Time spent spinning on the clock after the wait.
    pub spin_ns: u64,
}

impl Wake {
    /// `actual − requested`: positive is late, negative early.
    #[inline]
    pub fn error_ns(&self) -> i64 {
        self.actual_ns as i64 - self.requested_ns as i64
    }

    /// The wait API's own lateness: `woke − target`.
    #[inline]
    pub fn lateness_ns(&self) -> i64 {
        self.woke_ns as i64 - self.target_ns as i64
    }
}

/// The state of the strategy in use.
#[derive(Debug, Clone)]
enum Strategy {
    None,
    Static,
    Adaptive(EwmaTracker),
    Hybrid(WindowQuantile),
}

/// Sleeps until absolute deadlines on one wait API, compensating for its
/// lateness as [`Compensation`] says, and reports every wake as a [`Wake`].
///
/// A sleep makes the wait call (unless the margin already reaches the
/// deadline), reads the clock, and for adaptive and hybrid spins on the clock
/// to the deadline; then it feeds the observed lateness to the estimator.
/// Nothing is allocated after [`new`](Self::new).
///
/// ```no_run
/// use rtscope_core::cyclic::PosixClock;
/// use rtscope_core::timer::{Compensation, PreciseSleep, SleepTuning, SystemWait, WaitApi};
///
/// let wait = SystemWait::open(WaitApi::ClockNanosleep).unwrap();
/// let clock = PosixClock(libc::CLOCK_MONOTONIC);
/// let mut sleep = PreciseSleep::new(wait, clock, Compensation::Adaptive, SleepTuning::default());
/// let deadline = rtscope_core::sys::clock_ns(libc::CLOCK_MONOTONIC) + 500_000;
/// let wake = sleep.sleep_until(deadline).unwrap();
/// println!("error {} ns, spun {} ns", wake.error_ns(), wake.spin_ns);
/// ```
pub struct PreciseSleep<W: OneShotWait, C: Clock> {
    wait: W,
    clock: C,
    comp: Compensation,
    tuning: SleepTuning,
    strategy: Strategy,
}

impl<W: OneShotWait, C: Clock> PreciseSleep<W, C> {
    /// A sleeper on `wait`, reading `clock`, with `comp`.
    pub fn new(wait: W, clock: C, comp: Compensation, tuning: SleepTuning) -> Self {
        let strategy = match comp {
            Compensation::None => Strategy::None,
            Compensation::Static => Strategy::Static,
            Compensation::Adaptive => {
                Strategy::Adaptive(EwmaTracker::new(tuning.ewma_alpha, tuning.static_offset_ns))
            }
            Compensation::Hybrid => {
                let mut w = WindowQuantile::new(tuning.hybrid_window);
                if tuning.static_offset_ns > 0 {
                    w.push(tuning.static_offset_ns);
                }
                Strategy::Hybrid(w)
            }
        };
        PreciseSleep {
            wait,
            clock,
            comp,
            tuning,
            strategy,
        }
    }

    /// Changes the offset static compensation subtracts (e.g. per requested
    /// delay, from [`crate::timer::calibrate::CalibrationEntry::offset_at`]);
    /// the learning strategies keep what they learnt.
    pub fn set_static_offset(&mut self, ns: u64) {
        self.tuning.static_offset_ns = ns;
    }

    /// The compensation in use.
    pub fn compensation(&self) -> Compensation {
        self.comp
    }

    /// How early the next sleep will wake, ns.
    #[inline]
    pub fn margin_ns(&self) -> u64 {
        match &self.strategy {
            Strategy::None => 0,
            Strategy::Static => self.tuning.static_offset_ns,
            Strategy::Adaptive(t) => t.margin(self.tuning.adaptive_k),
            Strategy::Hybrid(w) => w.quantile(self.tuning.hybrid_quantile).unwrap_or(0),
        }
        .min(if self.comp.spins() {
            self.tuning.max_margin_ns
        } else {
            u64::MAX
        })
    }

    /// Sleeps until `deadline_ns` (absolute, on the clock).
    #[inline]
    pub fn sleep_until(&mut self, deadline_ns: u64) -> io::Result<Wake> {
        let target = deadline_ns.saturating_sub(self.margin_ns());
        let mut now = self.clock.now();
        let waited = now < target;
        // A signal may end the wait early: wait again for the rest.
        while now < target {
            self.wait.wait_until(target, now)?;
            now = self.clock.now();
        }
        let woke = now;
        let mut actual = woke;
        if self.comp.spins() {
            while actual < deadline_ns {
                std::hint::spin_loop();
                actual = self.clock.now();
            }
        }
        let wake = Wake {
            requested_ns: deadline_ns,
            target_ns: target,
            woke_ns: woke,
            actual_ns: actual,
            spin_ns: actual - woke,
        };
        // Only a real wait tells the API's lateness.
        if waited {
            let late = woke.saturating_sub(target);
            match &mut self.strategy {
                Strategy::Adaptive(t) => t.push(late),
                Strategy::Hybrid(w) => w.push(late),
                Strategy::None | Strategy::Static => {}
            }
        }
        Ok(wake)
    }
}

#[cfg(test)]
pub(crate) mod sim {
    //! A simulated clock and a wait whose lateness follows a script.
    use std::cell::Cell;
    use std::io;

    use crate::cyclic::Clock;
    use crate::timer::OneShotWait;

    /// A clock that only moves when a wait or a read moves it.
    pub struct SimClock<'a> {
        pub now: &'a Cell<u64>,
        /// Each read advances the clock by this much (the cost of a read).
        pub read_cost: u64,
    }

    impl Clock for SimClock<'_> {
        fn now(&self) -> u64 {
            let t = self.now.get() + self.read_cost;
            self.now.set(t);
            t
        }
    }

    /// Wakes `lateness(i)` after the target of the i-th wait.
    pub struct SimWait<'a, F: FnMut(usize) -> u64> {
        pub now: &'a Cell<u64>,
        pub lateness: F,
        pub calls: usize,
    }

    impl<F: FnMut(usize) -> u64> OneShotWait for SimWait<'_, F> {
        fn wait_until(&mut self, target: u64, _now: u64) -> io::Result<()> {
            let l = (self.lateness)(self.calls);
            self.calls += 1;
            self.now.set(self.now.get().max(target) + l);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::sim::{SimClock, SimWait};
    use super::*;

    fn run(
        comp: Compensation,
        tuning: SleepTuning,
        n: usize,
        lateness: impl FnMut(usize) -> u64,
    ) -> Vec<Wake> {
        let now = Cell::new(1_000_000);
        let w = SimWait {
            now: &now,
            lateness,
            calls: 0,
        };
        let c = SimClock {
            now: &now,
            read_cost: 20,
        };
        let mut s = PreciseSleep::new(w, c, comp, tuning);
        (0..n)
            .map(|_| {
                let d = now.get() + 500_000;
                s.sleep_until(d).unwrap()
            })
            .collect()
    }

    fn mean_abs(w: &[Wake]) -> f64 {
        w.iter().map(|w| w.error_ns().abs() as f64).sum::<f64>() / w.len() as f64
    }

    #[test]
    fn none_is_late_by_the_api_lateness() {
        let w = run(Compensation::None, SleepTuning::default(), 10, |_| 60_000);
        for x in &w {
            assert_eq!(x.target_ns, x.requested_ns);
            // The lateness plus one clock read.
            assert_eq!(x.error_ns(), 60_020);
            assert_eq!(x.lateness_ns(), 60_020);
            assert_eq!(x.spin_ns, 0);
        }
    }

    #[test]
    fn lateness_is_woke_minus_target() {
        let w = Wake {
            requested_ns: 1_000,
            target_ns: 900,
            woke_ns: 950,
            actual_ns: 1_010,
            spin_ns: 60,
        };
        assert_eq!(w.lateness_ns(), 50);
        assert_eq!(w.error_ns(), 10);
        let early = Wake { woke_ns: 880, ..w };
        assert_eq!(early.lateness_ns(), -20);
    }

    #[test]
    fn static_offset_can_be_changed() {
        let now = Cell::new(0);
        let w = SimWait {
            now: &now,
            lateness: |_| 60_000,
            calls: 0,
        };
        let c = SimClock {
            now: &now,
            read_cost: 20,
        };
        let mut s = PreciseSleep::new(w, c, Compensation::Static, SleepTuning::default());
        s.set_static_offset(60_000);
        assert_eq!(s.margin_ns(), 60_000);
        let d = now.get() + 500_000;
        let x = s.sleep_until(d).unwrap();
        assert_eq!(x.target_ns, d - 60_000);
        assert_eq!(x.error_ns(), 20);
    }

    /// A deadline that the first clock read meets exactly: no wait, no spin,
    /// and nothing learnt from a wait that did not happen.
    #[test]
    fn a_deadline_met_exactly_is_neither_waited_for_nor_spun_to() {
        for comp in [
            Compensation::None,
            Compensation::Adaptive,
            Compensation::Hybrid,
        ] {
            let now = Cell::new(0);
            let w = SimWait {
                now: &now,
                lateness: |_| 50_000,
                calls: 0,
            };
            let c = SimClock {
                now: &now,
                read_cost: 100,
            };
            let mut s = PreciseSleep::new(w, c, comp, SleepTuning::default());
            assert_eq!(s.margin_ns(), 0, "{comp:?}");
            // The clock reads 100 next.
            let x = s.sleep_until(100).unwrap();
            assert_eq!(
                (x.woke_ns, x.actual_ns, x.spin_ns),
                (100, 100, 0),
                "{comp:?}"
            );
            assert_eq!(s.wait.calls, 0, "{comp:?}");
            // The learner saw nothing: its margin after one real wait is that
            // of a sleeper whose first wait it is.
            s.sleep_until(1_000_000).unwrap();
            let mut fresh = PreciseSleep::new(
                SimWait {
                    now: &now,
                    lateness: |_| 50_000,
                    calls: 0,
                },
                SimClock {
                    now: &now,
                    read_cost: 100,
                },
                comp,
                SleepTuning::default(),
            );
            fresh.sleep_until(now.get() + 1_000_000).unwrap();
            assert_eq!(s.margin_ns(), fresh.margin_ns(), "{comp:?}");
        }
    }

    #[test]
    fn static_subtracts_the_offset_without_spinning() {
        let t = SleepTuning {
            static_offset_ns: 60_000,
            ..Default::default()
        };
        let w = run(Compensation::Static, t, 10, |_| 60_000);
        for x in &w {
            assert_eq!(x.target_ns, x.requested_ns - 60_000);
            assert_eq!(x.error_ns(), 20);
            assert_eq!(x.spin_ns, 0);
        }
        // An API faster than calibrated wakes early: static does not spin.
        let w = run(Compensation::Static, t, 10, |_| 10_000);
        assert!(w.iter().all(|x| x.error_ns() < 0));
    }

    #[test]
    fn adaptive_learns_the_lateness_and_spins_the_rest() {
        // No calibration: starts uncompensated, converges to a small error.
        let w = run(Compensation::Adaptive, SleepTuning::default(), 400, |i| {
            50_000 + (i as u64 % 7) * 1_000
        });
        assert!(w[0].error_ns() > 40_000);
        let tail = &w[300..];
        assert!(mean_abs(tail) < 5_000.0, "{}", mean_abs(tail));
        // Never early: the spin ends at or after the deadline.
        assert!(w.iter().all(|x| x.error_ns() >= 0));
        assert!(tail.iter().any(|x| x.spin_ns > 0));
    }

    #[test]
    fn adaptive_follows_a_change_of_conditions() {
        let w = run(Compensation::Adaptive, SleepTuning::default(), 800, |i| {
            if i < 400 {
                30_000
            } else {
                120_000
            }
        });
        assert!(w[401].error_ns() > 50_000, "the step shows at first");
        assert!(mean_abs(&w[700..]) < 5_000.0, "{}", mean_abs(&w[700..]));
    }

    #[test]
    fn hybrid_wakes_at_its_quantile() {
        // 2 % of wakes are 400 µs late, the rest 40 µs: with q = 0.9 the margin
        // covers the common case, the outliers stay late.
        let t = SleepTuning {
            hybrid_quantile: 0.9,
            ..Default::default()
        };
        let w = run(Compensation::Hybrid, t, 1000, |i| {
            if i % 50 == 0 {
                400_000
            } else {
                40_000
            }
        });
        let tail = &w[500..];
        let late = tail.iter().filter(|x| x.error_ns() > 1_000).count();
        assert!((5..=15).contains(&late), "{late}");
        // The margin is about 40 µs (at most 1/8 over): the spin is short.
        let mean_spin = tail.iter().map(|x| x.spin_ns).sum::<u64>() / tail.len() as u64;
        assert!(mean_spin <= 6_000, "{mean_spin}");
    }

    #[test]
    fn the_spin_is_bounded_by_max_margin() {
        let t = SleepTuning {
            static_offset_ns: 10_000_000,
            max_margin_ns: 100_000,
            ..Default::default()
        };
        let w = run(Compensation::Adaptive, t, 1, |_| 0);
        assert_eq!(w[0].requested_ns - w[0].target_ns, 100_000);
        assert!(w[0].spin_ns <= 100_000);
    }

    #[test]
    fn a_margin_beyond_the_deadline_spins_without_waiting() {
        let now = Cell::new(0);
        let w = SimWait {
            now: &now,
            lateness: |_| 0,
            calls: 0,
        };
        let c = SimClock {
            now: &now,
            read_cost: 100,
        };
        let t = SleepTuning {
            static_offset_ns: 50_000,
            ..Default::default()
        };
        let mut s = PreciseSleep::new(w, c, Compensation::Hybrid, t);
        let wake = s.sleep_until(now.get() + 10_000).unwrap();
        assert!(wake.error_ns() >= 0 && wake.error_ns() <= 100);
        assert_eq!(wake.spin_ns, wake.actual_ns - wake.woke_ns);
    }
}
