//! A measurement thread's wake-ups rebuilt from kernel events and split into
//! stages, joined with rtscope's own samples.
//!
//! The events of one timer wake-up of a thread sleeping in
//! `clock_nanosleep`, in order (trace clock `mono`, CLOCK_MONOTONIC):
//!
//! ```text
//! hrtimer_start        (thread's context)  hrtimer=H softexpires=E   the wait is armed
//! hrtimer_expire_entry (IRQ context)       hrtimer=H now=N           the timer interrupt runs
//! sched_waking         pid=tid                                       the thread is made runnable
//! sched_switch         next_pid=tid                                  it gets the CPU (often not recorded when the CPU was idle)
//! sys_exit             (thread's context)                            the wait returns to user space
//! ```
//!
//! [`WakeTracker`] follows these per thread (by tid, and by the timer's
//! address from arming to expiry) and yields one [`KernelWake`] per wait.
//! [`Joiner`] pairs each with rtscope's sample of the same wake-up: same
//! thread, and the kernel's `softexpires` equal to the sample's intended wake
//! time (its time minus its latency). [`Stages::of`] splits the sample:
//!
//! - `timer`: `now − E`, the timer interrupt's lateness;
//! - `wakeup`: `sched_waking − now`, the interrupt's work up to the wake-up;
//! - `sched`: `sched_switch − sched_waking` and `return`:
//!   `sys_exit − sched_switch`, when the switch was recorded;
//! - `switch+return`: `sys_exit − sched_waking` (always, whether or not the
//!   switch was recorded);
//! - `rtscope-kernel`: rtscope's own stamp − `sys_exit`, never negative when
//!   both clocks agree (the accuracy check).
//!
//! `timer + wakeup + switch+return + rtscope-kernel` is the sample's latency, exactly.

use std::collections::{BTreeMap, HashMap};

use super::event::{Event, Kind};
use crate::record::SeriesRecorder;
use crate::result::{Series, TraceAccuracy, WakeStages};
use crate::sample::Sample;

/// One wait of a measurement thread as the kernel saw it (times: trace clock ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelWake {
    /// The measurement thread.
    pub tid: i32,
    /// The time asked for (`softexpires`).
    pub expires_ns: u64,
    /// The timer's callback (the same for every wait of the thread:
    /// [`WakeTracker::confirm`]).
    pub timer_fn: u64,
    /// `hrtimer_start`: when the wait was armed, and on which CPU.
    pub armed_ns: u64,
    /// The CPU it was armed on.
    pub armed_cpu: u32,
    /// `hrtimer_expire_entry`: the interrupt's `now`, and its CPU.
    pub irq_ns: Option<u64>,
    /// The CPU of the interrupt.
    pub irq_cpu: u32,
    /// `sched_waking` of the thread.
    pub waking_ns: Option<u64>,
    /// `sched_switch` into the thread, and the task it replaced.
    pub switch_ns: Option<u64>,
    /// The task it replaced.
    pub switch_prev: Option<i32>,
    /// `sys_exit` of the wait, and its CPU.
    pub exit_ns: Option<u64>,
    /// The CPU of `sys_exit`.
    pub exit_cpu: u32,
}

/// Follows the timer wake-ups of a set of threads through their events.
#[derive(Debug, Default)]
pub struct WakeTracker {
    tids: Vec<i32>,
    /// Armed timers: address -> (tid, softexpires, armed at, CPU, callback).
    timers: HashMap<u64, (i32, u64, u64, u32, u64)>,
    /// The wake-up in progress, per thread (after its timer fired).
    open: HashMap<i32, KernelWake>,
    /// Per thread, the callback of the timer its waits use, once a wait was
    /// confirmed ([`WakeTracker::confirm`]): other timers armed while it is
    /// the current task (the tick's, the scheduler's, armed from an
    /// interrupt it was running under) are not its waits.
    sleeper_fn: HashMap<i32, u64>,
    done: Vec<KernelWake>,
    /// Waits whose timer was armed again before their `sys_exit` was seen.
    pub incomplete: u64,
    /// Waits in progress given up because the kernel lost events.
    pub lost: u64,
    /// Timers of the threads armed again after their expiry time with no
    /// expiry seen: they fired where the trace did not look (a CPU outside
    /// its mask), so their waits could not be followed.
    pub unseen_expiry: u64,
    /// Spans of time in which some CPU lost events ([`WakeTracker::losses`]).
    blind: Vec<(u64, u64)>,
}

impl WakeTracker {
    /// A tracker of the measurement threads `tids`.
    pub fn new(tids: &[i32]) -> Self {
        WakeTracker {
            tids: tids.to_vec(),
            ..Default::default()
        }
    }

    fn ours(&self, pid: i32) -> bool {
        pid > 0 && self.tids.contains(&pid)
    }

    /// Takes one event (events must come in time order).
    pub fn event(&mut self, e: &Event) {
        match e.kind {
            Kind::HrtimerStart {
                hrtimer,
                softexpires,
                function,
                ..
            } if self.ours(e.pid) => {
                if self.sleeper_fn.get(&e.pid).is_some_and(|f| *f != function) {
                    return;
                }
                if let Some(w) = self.open.remove(&e.pid) {
                    self.incomplete += 1;
                    self.finish(w, e.ts);
                }
                if let Some(old) = self
                    .timers
                    .insert(hrtimer, (e.pid, softexpires, e.ts, e.cpu, function))
                {
                    if old.1 < e.ts {
                        self.unseen_expiry += 1;
                    }
                }
            }
            Kind::HrtimerEntry { hrtimer, now, .. } => {
                if let Some((tid, expires, armed, armed_cpu, function)) = self
                    .timers
                    .remove(&hrtimer)
                    .filter(|t| now >= t.1 && e.ts >= t.2)
                {
                    if let Some(w) = self.open.remove(&tid) {
                        self.incomplete += 1;
                        self.finish(w, e.ts);
                    }
                    self.open.insert(
                        tid,
                        KernelWake {
                            tid,
                            expires_ns: expires,
                            timer_fn: function,
                            armed_ns: armed,
                            armed_cpu,
                            irq_ns: Some(now),
                            irq_cpu: e.cpu,
                            waking_ns: None,
                            switch_ns: None,
                            switch_prev: None,
                            exit_ns: None,
                            exit_cpu: e.cpu,
                        },
                    );
                }
            }
            Kind::Waking { pid, .. } => {
                if let Some(w) = self.open.get_mut(&pid) {
                    w.waking_ns.get_or_insert(e.ts);
                }
            }
            Kind::Switch {
                prev_pid, next_pid, ..
            } => {
                if let Some(w) = self.open.get_mut(&next_pid) {
                    if w.switch_ns.is_none() {
                        w.switch_ns = Some(e.ts);
                        w.switch_prev = Some(prev_pid);
                    }
                }
            }
            Kind::Lost => {
                // Whatever spans the loss cannot be trusted: a timer's arming
                // and its expiry (or a wake-up and its exit) may belong to
                // different waits.
                self.lost += (self.timers.len() + self.open.len()) as u64;
                self.timers.clear();
                self.open.clear();
            }
            Kind::SysExit { .. } => {
                if let Some(mut w) = self.open.remove(&e.pid) {
                    w.exit_ns = Some(e.ts);
                    w.exit_cpu = e.cpu;
                    self.finish(w, e.ts);
                }
            }
            _ => {}
        }
    }

    /// Says that `w` was a wait of its thread (its time was the one the
    /// thread asked for): from then on, only timers with its callback are
    /// taken for the thread's waits.
    pub fn confirm(&mut self, w: &KernelWake) {
        self.sleeper_fn.entry(w.tid).or_insert(w.timer_fn);
    }

    /// Takes note of the losses among `fresh`, the events just read, before
    /// they are given to [`WakeTracker::event`].
    ///
    /// The kernel marks a loss at the first page after it, the loss's end;
    /// the events that CPU lost were stamped after `since` (everything up to
    /// it had been read there). The other CPUs' events inside that window
    /// look complete but are not (a thread's exit lost on one CPU, a later
    /// exit seen on another, would be taken for it), so no wait whose span
    /// (from its arming to its exit) meets such a window is yielded: it is
    /// counted in [`WakeTracker::lost`].
    pub fn losses(&mut self, fresh: &[Event], since: u64) {
        let oldest = self
            .timers
            .values()
            .map(|t| t.2)
            .chain(self.open.values().map(|w| w.armed_ns))
            .min()
            .unwrap_or(since);
        self.blind.retain(|w| w.1 >= oldest);
        for e in fresh {
            if e.kind == Kind::Lost && e.ts > since {
                self.blind.push((since, e.ts));
            }
        }
    }

    /// Yields a wait unless its span met a loss.
    fn finish(&mut self, w: KernelWake, end: u64) {
        if self
            .blind
            .iter()
            .any(|&(from, to)| from < end && to > w.armed_ns)
        {
            self.lost += 1;
        } else {
            self.done.push(w);
        }
    }

    /// The wake-ups completed so far (taken out).
    pub fn take(&mut self) -> Vec<KernelWake> {
        std::mem::take(&mut self.done)
    }
}

/// Pairs a thread's samples with its kernel wake-ups (by intended time).
#[derive(Debug, Default)]
pub struct Joiner {
    samples: BTreeMap<u64, Sample>,
    wakes: BTreeMap<u64, KernelWake>,
    /// Given up on: a sample without its wake-up, and the reverse.
    pub unmatched_samples: u64,
    /// Wake-ups given up on without their sample.
    pub unmatched_wakes: u64,
}

/// A sample's intended wake time.
pub fn intended(s: &Sample) -> u64 {
    s.t_ns.wrapping_sub(s.latency_ns as u64)
}

impl Joiner {
    /// Adds a sample; returns it with its kernel wake-up once both are in.
    pub fn sample(&mut self, s: &Sample) -> Option<(Sample, KernelWake)> {
        let t = intended(s);
        match self.wakes.remove(&t) {
            Some(w) => Some((*s, w)),
            None => {
                if self.samples.insert(t, *s).is_some() {
                    // Two samples of one thread with one intended time: the
                    // earlier one can no longer be paired.
                    self.unmatched_samples += 1;
                }
                None
            }
        }
    }

    /// Adds a kernel wake-up; returns it with its sample once both are in.
    pub fn wake(&mut self, w: &KernelWake) -> Option<(Sample, KernelWake)> {
        match self.samples.remove(&w.expires_ns) {
            Some(s) => Some((s, *w)),
            None => {
                if self.wakes.insert(w.expires_ns, *w).is_some() {
                    self.unmatched_wakes += 1;
                }
                None
            }
        }
    }

    /// Gives up on everything intended before `before_ns` (counted unmatched).
    pub fn expire(&mut self, before_ns: u64) {
        self.expire_each(before_ns, before_ns, usize::MAX);
    }

    /// Gives up on the samples intended before `samples_before_ns`, on all
    /// but the newest `max_samples` of them, and on the kernel wake-ups
    /// intended before `wakes_before_ns` (counted unmatched). The two
    /// horizons differ where one side comes late: a trace reader behind the
    /// run (a slow machine, a flood of events) brings wake-ups seconds after
    /// their samples, which must wait for them rather than be left unsplit;
    /// `max_samples` bounds what such waiting holds.
    pub fn expire_each(
        &mut self,
        samples_before_ns: u64,
        wakes_before_ns: u64,
        max_samples: usize,
    ) {
        let keep_s = self.samples.split_off(&samples_before_ns);
        self.unmatched_samples += self.samples.len() as u64;
        self.samples = keep_s;
        while self.samples.len() > max_samples {
            self.samples.pop_first();
            self.unmatched_samples += 1;
        }
        let keep_w = self.wakes.split_off(&wakes_before_ns);
        self.unmatched_wakes += self.wakes.len() as u64;
        self.wakes = keep_w;
    }

    /// The samples waiting for their kernel wake-up.
    pub fn pending_samples(&self) -> usize {
        self.samples.len()
    }

    /// Gives up on everything still waiting (the end of a run).
    pub fn finish(&mut self) {
        self.expire(u64::MAX);
    }
}

/// One sample split into stages (ns; see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stages {
    /// Intended wake time to the timer interrupt, ns.
    pub timer_ns: i64,
    /// Timer interrupt to `sched_waking`, ns.
    pub wakeup_ns: Option<i64>,
    /// `sched_waking` to `sched_switch`, ns.
    pub sched_ns: Option<i64>,
    /// `sched_switch` to `sys_exit`, ns.
    pub return_ns: Option<i64>,
    /// `sched_waking` to `sys_exit`, ns.
    pub switch_return_ns: Option<i64>,
    /// rtscope's latency − the kernel's bound (`sys_exit − expires`).
    pub rtscope_kernel_ns: i64,
}

/// The stage names, in the order of the wake-up, as series labels use them.
pub const STAGE_NAMES: [&str; 6] = [
    "timer",
    "wakeup",
    "sched",
    "return",
    "switch+return",
    "rtscope-kernel",
];

impl Stages {
    /// The stages of a joined sample; `None` without the timer interrupt or
    /// the syscall exit (the total cannot be split then).
    pub fn of(s: &Sample, w: &KernelWake) -> Option<Stages> {
        let (irq, exit) = (w.irq_ns? as i64, w.exit_ns? as i64);
        let d = |a: i64, b: i64| b - a;
        let waking = w.waking_ns.map(|x| x as i64);
        let switch = w.switch_ns.map(|x| x as i64).filter(|_| waking.is_some());
        Some(Stages {
            timer_ns: d(w.expires_ns as i64, irq),
            wakeup_ns: waking.map(|k| d(irq, k)),
            sched_ns: waking.zip(switch).map(|(k, sw)| d(k, sw)),
            return_ns: switch.map(|sw| d(sw, exit)),
            switch_return_ns: waking.map(|k| d(k, exit)),
            rtscope_kernel_ns: d(exit, s.t_ns as i64),
        })
    }

    /// The stage values in [`STAGE_NAMES`] order.
    pub fn values(&self) -> [Option<i64>; 6] {
        [
            Some(self.timer_ns),
            self.wakeup_ns,
            self.sched_ns,
            self.return_ns,
            self.switch_return_ns,
            Some(self.rtscope_kernel_ns),
        ]
    }
}

/// The stage distributions of a run, the accuracy check, and the worst
/// samples with their stages.
pub struct StageRecorder {
    recs: Vec<SeriesRecorder>,
    observed: [u64; 6],
    /// Joined samples, and those below the kernel's bound.
    pub joined: u64,
    /// Joined samples below the kernel's bound.
    pub below_kernel: u64,
    /// Samples paired with a kernel wake-up whose record lacks the timer
    /// interrupt or the syscall exit (not split: the total cannot be).
    pub incomplete: u64,
    worst: Vec<(String, Sample, KernelWake, Stages)>,
    keep: usize,
}

impl StageRecorder {
    /// Timelines relative to `origin_ns`; `keep` worst samples kept whole.
    pub fn new(origin_ns: u64, keep: usize) -> Self {
        StageRecorder {
            recs: (0..6)
                .map(|_| SeriesRecorder::new(origin_ns, keep.min(32), None))
                .collect(),
            observed: [0; 6],
            joined: 0,
            below_kernel: 0,
            incomplete: 0,
            worst: Vec::new(),
            keep,
        }
    }

    /// Records a joined sample of `series`; returns its stages (`None`: the
    /// kernel's record lacked the interrupt or the syscall exit).
    pub fn record(&mut self, series: &str, s: &Sample, w: &KernelWake) -> Option<Stages> {
        let Some(st) = Stages::of(s, w) else {
            self.incomplete += 1;
            return None;
        };
        self.joined += 1;
        if st.rtscope_kernel_ns < 0 {
            self.below_kernel += 1;
        }
        for (i, v) in st.values().iter().enumerate() {
            if let Some(v) = v {
                self.observed[i] += 1;
                self.recs[i].record(&Sample {
                    latency_ns: *v,
                    overruns: 0,
                    ..*s
                });
            }
        }
        if self.keep > 0 {
            let pos = self
                .worst
                .iter()
                .position(|x| x.1.latency_ns < s.latency_ns)
                .unwrap_or(self.worst.len());
            if pos < self.keep {
                self.worst.insert(pos, (series.to_string(), *s, *w, st));
                self.worst.truncate(self.keep);
            }
        }
        Some(st)
    }

    /// One series per stage, labelled `stage NAME` (attribute `stage`).
    pub fn series(&self) -> Vec<Series> {
        STAGE_NAMES
            .iter()
            .zip(&self.recs)
            .map(|(name, r)| {
                let mut s = r.to_series(&format!("stage {name}"), 0);
                s.attributes.insert("stage".into(), serde_json::json!(name));
                s
            })
            .collect()
    }

    /// For each stage, the samples it was observed for.
    pub fn observed(&self) -> BTreeMap<String, u64> {
        STAGE_NAMES
            .iter()
            .zip(self.observed)
            .map(|(n, c)| (n.to_string(), c))
            .collect()
    }

    /// The accuracy check's outcome.
    pub fn accuracy(&self) -> TraceAccuracy {
        let r = &self.recs[5];
        TraceAccuracy {
            checked: self.joined,
            below_kernel: self.below_kernel,
            min_ns: if self.joined > 0 { r.stats.min() } else { 0 },
            p50_ns: r.hist.quantile(0.5),
            p99_ns: r.hist.quantile(0.99),
            max_ns: if self.joined > 0 { r.stats.max() } else { 0 },
            passed: self.joined > 0 && self.below_kernel == 0,
        }
    }

    /// The worst samples, worst first, as the document keeps them
    /// (`name` gives a task's name from its pid and the CPU it ran on: the
    /// task switched out for the thread ran on the CPU of its `sys_exit`).
    pub fn worst(&self, name: impl Fn(i32, u32) -> String) -> Vec<WakeStages> {
        self.worst
            .iter()
            .map(|(series, s, w, st)| WakeStages {
                series: series.clone(),
                seq: s.seq,
                t_ns: s.t_ns,
                cpu: s.cpu,
                latency_ns: s.latency_ns,
                expires_ns: w.expires_ns,
                timer_ns: st.timer_ns,
                wakeup_ns: st.wakeup_ns,
                sched_ns: st.sched_ns,
                return_ns: st.return_ns,
                switch_return_ns: st.switch_return_ns,
                rtscope_kernel_ns: st.rtscope_kernel_ns,
                switched_from: w.switch_prev.map(|p| name(p, w.exit_cpu)),
                context: vec![],
                cause: None,
            })
            .collect()
    }

    /// The kernel's record of each kept worst sample (for context extraction).
    pub fn worst_wakes(&self) -> impl Iterator<Item = (&Sample, &KernelWake)> {
        self.worst.iter().map(|x| (&x.1, &x.2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: u64, cpu: u32, pid: i32, kind: Kind) -> Event {
        Event { ts, cpu, pid, kind }
    }

    fn wake_events(tid: i32, e: u64, switch: bool) -> Vec<Event> {
        let mut v = vec![
            ev(
                e - 900_000,
                1,
                tid,
                Kind::HrtimerStart {
                    hrtimer: 0xabc,
                    function: 0xf,
                    expires: e,
                    softexpires: e,
                },
            ),
            ev(
                e + 3_000,
                1,
                0,
                Kind::HrtimerEntry {
                    hrtimer: 0xabc,
                    function: 0xf,
                    now: e + 2_000,
                },
            ),
            ev(
                e + 4_000,
                1,
                0,
                Kind::Waking {
                    pid: tid,
                    target_cpu: 1,
                },
            ),
        ];
        if switch {
            v.push(ev(
                e + 9_000,
                1,
                0,
                Kind::Switch {
                    prev_pid: 0,
                    next_pid: tid,
                    prev_runnable: false,
                    prev_prio: 120,
                    next_prio: 4,
                },
            ));
        }
        v.push(ev(e + 10_000, 1, tid, Kind::SysExit { nr: 230 }));
        v
    }

    #[test]
    fn one_wake_split_and_joined() {
        let mut t = WakeTracker::new(&[42]);
        // Another thread's events are ignored.
        for e in wake_events(7, 1_000_000, true)
            .iter()
            .chain(wake_events(42, 2_000_000, true).iter())
        {
            t.event(e);
        }
        let w = t.take();
        assert_eq!(w.len(), 1);
        let w = w[0];
        assert_eq!(
            (w.tid, w.expires_ns, w.switch_prev),
            (42, 2_000_000, Some(0))
        );
        let s = Sample {
            seq: 3,
            t_ns: 2_012_500,
            latency_ns: 12_500,
            overruns: 0,
            cpu: 1,
        };
        let mut j = Joiner::default();
        assert!(j.sample(&s).is_none());
        let (s2, w2) = j.wake(&w).unwrap();
        let st = Stages::of(&s2, &w2).unwrap();
        assert_eq!(st.timer_ns, 2_000);
        assert_eq!(st.wakeup_ns, Some(2_000));
        assert_eq!(st.sched_ns, Some(5_000));
        assert_eq!(st.return_ns, Some(1_000));
        assert_eq!(st.switch_return_ns, Some(6_000));
        assert_eq!(st.rtscope_kernel_ns, 2_500);
        // The stages add up to the sample.
        assert_eq!(
            st.timer_ns
                + st.wakeup_ns.unwrap()
                + st.switch_return_ns.unwrap()
                + st.rtscope_kernel_ns,
            s.latency_ns
        );
    }

    #[test]
    fn a_second_expiry_gives_up_the_open_wake_and_a_loss_counts_both_kinds() {
        // Thread 42 arms two timers; the second fires while the first's
        // wake-up is still open (its sys_exit not seen).
        let mut t = WakeTracker::new(&[42, 43]);
        let start = |ts, hrtimer, e| {
            ev(
                ts,
                1,
                42,
                Kind::HrtimerStart {
                    hrtimer,
                    function: 0xf,
                    expires: e,
                    softexpires: e,
                },
            )
        };
        let entry = |ts, hrtimer, now| {
            ev(
                ts,
                1,
                0,
                Kind::HrtimerEntry {
                    hrtimer,
                    function: 0xf,
                    now,
                },
            )
        };
        t.event(&start(100, 0xa, 1_000));
        t.event(&start(200, 0xb, 2_000));
        t.event(&entry(1_100, 0xa, 1_050));
        t.event(&entry(2_100, 0xb, 2_050));
        assert_eq!(t.incomplete, 1);
        let w = t.take();
        assert_eq!((w.len(), w[0].expires_ns, w[0].exit_ns), (1, 1_000, None));
        // Open: 42's second wake-up; armed: a timer of 43. A loss drops both.
        let mut s43 = start(3_000, 0xc, 9_000);
        s43.pid = 43;
        t.event(&s43);
        t.event(&ev(4_000, 1, -1, Kind::Lost));
        assert_eq!(t.lost, 2);
        // The id 0 (the idle task) is never one of ours.
        let mut t = WakeTracker::new(&[0]);
        let mut idle = start(100, 0xa, 1_000);
        idle.pid = 0;
        t.event(&idle);
        t.event(&entry(1_100, 0xa, 1_050));
        t.event(&ev(1_200, 1, 0, Kind::SysExit { nr: 230 }));
        assert!(t.take().is_empty());
    }

    #[test]
    fn the_recorder_keeps_each_stage_the_check_and_the_worst() {
        let mut t = WakeTracker::new(&[42]);
        let expiries = [1_000_000u64, 2_000_000, 3_000_000];
        for (k, e) in expiries.iter().enumerate() {
            // The second without its switch.
            for ev in wake_events(42, *e, k != 1) {
                t.event(&ev);
            }
        }
        let wakes = t.take();
        assert_eq!(wakes.len(), 3);
        let mut r = StageRecorder::new(0, 2);
        // Latencies 12.5, 20 and 9 µs after the expiry; the last one reads
        // below the kernel's bound (sys_exit is 10 µs after the expiry).
        let lat = [12_500i64, 20_000, 9_000];
        let mut got = Vec::new();
        for (i, w) in wakes.iter().enumerate() {
            let s = Sample {
                seq: i as u64,
                t_ns: w.expires_ns + lat[i] as u64,
                latency_ns: lat[i],
                overruns: 3,
                cpu: 1,
            };
            got.push(r.record("cpu1", &s, w).unwrap());
        }
        assert_eq!(got[0].rtscope_kernel_ns, 2_500);
        assert_eq!(got[2].rtscope_kernel_ns, -1_000);
        assert_eq!((r.joined, r.below_kernel), (3, 1));
        let observed = r.observed();
        assert_eq!(observed["timer"], 3);
        assert_eq!(observed["sched"], 2);
        assert_eq!(observed["return"], 2);
        assert_eq!(observed["switch+return"], 3);
        assert_eq!(observed["rtscope-kernel"], 3);
        let series = r.series();
        let labels: Vec<&str> = series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels[0], "stage timer");
        assert_eq!(labels[5], "stage rtscope-kernel");
        // Each stage's series holds its values, without the sample's overruns.
        let kernel = &series[5];
        assert_eq!(kernel.stats.count, 3);
        assert_eq!((kernel.stats.min_ns, kernel.stats.max_ns), (-1_000, 10_000));
        assert_eq!(series[2].stats.count, 2);
        assert_eq!(series[2].stats.max_ns, 5_000);
        assert!(series.iter().all(|s| s.counters.overruns == 0));
        let acc = r.accuracy();
        assert_eq!((acc.checked, acc.below_kernel, acc.passed), (3, 1, false));
        assert_eq!((acc.min_ns, acc.max_ns), (-1_000, 10_000));
        // The two worst, worst first.
        let worst = r.worst(|p, cpu| format!("task {p} on {cpu}"));
        let w: Vec<(i64, u64)> = worst.iter().map(|x| (x.latency_ns, x.seq)).collect();
        assert_eq!(w, [(20_000, 1), (12_500, 0)]);
        // The task switched out is named with the CPU of the switch (every
        // idle task has pid 0).
        assert_eq!(worst[1].switched_from.as_deref(), Some("task 0 on 1"));
        assert_eq!(worst[0].switched_from, None);
        assert_eq!(r.worst_wakes().count(), 2);
        // An equal latency does not push out an earlier one.
        let w0 = wakes[0];
        let again = Sample {
            seq: 9,
            t_ns: w0.expires_ns + 12_500,
            latency_ns: 12_500,
            overruns: 0,
            cpu: 1,
        };
        r.record("cpu1", &again, &w0).unwrap();
        let seqs: Vec<u64> = r
            .worst(|p, _| p.to_string())
            .iter()
            .map(|x| x.seq)
            .collect();
        assert_eq!(seqs, [1, 0]);
        // Nothing joined: nothing checked, and no pass.
        let r = StageRecorder::new(0, 0);
        let acc = r.accuracy();
        assert_eq!(
            (acc.checked, acc.min_ns, acc.max_ns, acc.passed),
            (0, 0, 0, false)
        );
        // A sample exactly at the kernel's bound is not below it.
        let mut r = StageRecorder::new(0, 0);
        let at = Sample {
            t_ns: w0.expires_ns + 10_000,
            latency_ns: 10_000,
            ..again
        };
        assert_eq!(r.record("cpu1", &at, &w0).unwrap().rtscope_kernel_ns, 0);
        assert_eq!((r.joined, r.below_kernel), (1, 0));
        assert!(r.accuracy().passed);
        assert!(r.worst(|p, _| p.to_string()).is_empty());
    }

    /// nohz_full: the thread runs on CPU 1, its timer is queued on the
    /// housekeeping CPU 0, whose interrupt fires it and wakes the thread.
    fn nohz_wake(tid: i32, e: u64) -> Vec<Event> {
        wake_events(tid, e, true)
            .into_iter()
            .map(|mut x| {
                if matches!(x.kind, Kind::HrtimerEntry { .. } | Kind::Waking { .. }) {
                    x.cpu = 0;
                }
                x
            })
            .collect()
    }

    #[test]
    fn a_timer_fired_on_another_cpu_is_joined_by_thread() {
        // Traced on both CPUs: every wait is followed and split.
        let mut t = WakeTracker::new(&[42]);
        let mut j = Joiner::default();
        let mut r = StageRecorder::new(0, 1);
        for k in 1..=4u64 {
            for x in nohz_wake(42, k * 1_000_000) {
                t.event(&x);
            }
        }
        let wakes = t.take();
        assert_eq!(wakes.len(), 4);
        for w in &wakes {
            assert_eq!((w.irq_cpu, w.exit_cpu), (0, 1));
            let s = Sample {
                seq: 0,
                t_ns: w.expires_ns + 12_000,
                latency_ns: 12_000,
                overruns: 0,
                cpu: 1,
            };
            assert!(j.sample(&s).is_none());
            let (s, w) = j.wake(w).unwrap();
            let st = r.record("cpu1", &s, &w).unwrap();
            assert_eq!((st.timer_ns, st.wakeup_ns), (2_000, Some(2_000)));
        }
        assert_eq!((r.joined, t.unseen_expiry), (4, 0));
        // Traced on CPU 1 only (the mask before housekeeping CPUs were
        // added): no wait is followed, and each re-arming after an expiry
        // nobody saw is counted, so the run can say why.
        let mut t = WakeTracker::new(&[42]);
        for k in 1..=4u64 {
            for x in nohz_wake(42, k * 1_000_000)
                .into_iter()
                .filter(|x| x.cpu == 1)
            {
                t.event(&x);
            }
        }
        assert!(t.take().is_empty());
        assert_eq!(t.unseen_expiry, 3);
    }

    #[test]
    fn a_loss_never_joins_events_of_different_waits() {
        // Wait 1 is armed, then events are lost (its expiry, the next arming):
        // the next expiry of the same timer must not be taken for wait 1's.
        let mut t = WakeTracker::new(&[42]);
        let first = wake_events(42, 1_000_000, true);
        t.event(&first[0]);
        t.event(&ev(1_500_000, 1, -1, Kind::Lost));
        for e in &wake_events(42, 2_000_000, true)[1..] {
            t.event(e);
        }
        assert!(t.take().is_empty());
        assert_eq!(t.lost, 1);
        // A timer that would have fired before its time is not taken either.
        let mut t = WakeTracker::new(&[42]);
        let mut evs = wake_events(42, 3_000_000, true);
        if let Kind::HrtimerEntry { ref mut now, .. } = evs[1].kind {
            *now = 2_999_000;
        }
        for e in &evs {
            t.event(e);
        }
        assert!(t.take().is_empty());
    }

    #[test]
    fn other_timers_armed_under_the_thread_are_not_its_waits() {
        // The tick's timer, armed from an interrupt while the measurement
        // thread is the current task, carries its pid.
        let tick = |ts: u64, at: u64| {
            ev(
                ts,
                1,
                42,
                Kind::HrtimerStart {
                    hrtimer: 0x71c,
                    function: 0x7,
                    expires: at,
                    softexpires: at,
                },
            )
        };
        let tick_fires = |ts: u64| {
            ev(
                ts,
                1,
                0,
                Kind::HrtimerEntry {
                    hrtimer: 0x71c,
                    function: 0x7,
                    now: ts,
                },
            )
        };
        let mut t = WakeTracker::new(&[42]);
        // The first wait, once confirmed (joined with its sample), teaches
        // the tracker its timer's callback.
        for e in wake_events(42, 1_000_000, true) {
            t.event(&e);
        }
        let first = t.take();
        assert_eq!(first.len(), 1);
        t.confirm(&first[0]);
        // Wait 2: the tick is armed between the wake-up and the exit (it must
        // not close wait 2), and again while the thread runs; it fires before
        // wait 3's timer (it must not open a wait of the thread).
        let w2 = wake_events(42, 2_000_000, true);
        for e in &w2[..3] {
            t.event(e);
        }
        t.event(&tick(2_005_000, 2_500_000));
        for e in &w2[3..] {
            t.event(e);
        }
        t.event(&tick(2_020_000, 2_900_000));
        let w3 = wake_events(42, 3_000_000, true);
        t.event(&w3[0]);
        t.event(&tick_fires(2_900_000));
        for e in &w3[1..] {
            t.event(e);
        }
        let w = t.take();
        assert_eq!(t.incomplete, 0);
        let got: Vec<(u64, bool)> = w
            .iter()
            .map(|w| (w.expires_ns, w.exit_ns.is_some()))
            .collect();
        assert_eq!(got, [(2_000_000, true), (3_000_000, true)]);
        // A complete wait teaches nothing until it is confirmed: a foreign
        // timer's (armed under the thread, fired, then the thread's exit)
        // must not make the thread's own timers foreign.
        let mut t = WakeTracker::new(&[42]);
        t.event(&tick(500_000, 900_000));
        t.event(&tick_fires(900_000));
        t.event(&ev(905_000, 1, 42, Kind::SysExit { nr: 230 }));
        assert_eq!(t.take()[0].timer_fn, 0x7);
        for e in wake_events(42, 1_000_000, true) {
            t.event(&e);
        }
        let w = t.take();
        assert_eq!(
            (w.len(), w[0].expires_ns, w[0].timer_fn),
            (1, 1_000_000, 0xf)
        );
        // Before a confirmed wait, a thread's timers are all taken.
        let mut t = WakeTracker::new(&[42]);
        let w1 = wake_events(42, 1_000_000, true);
        for e in &w1[..3] {
            t.event(e);
        }
        t.event(&tick(1_005_000, 1_500_000));
        assert_eq!(t.incomplete, 1);
    }

    /// A loss seen on one CPU (its page after the gap) must not let the other
    /// CPUs' events inside the gap pair a wait with a later wait's exit.
    #[test]
    fn no_wait_across_a_loss_is_yielded() {
        // The thread's wait 1 fires on CPU 1; it runs on CPU 0, where its
        // exit, the arming of wait 2 and wait 2's expiry are lost; it then
        // runs on CPU 2 (switch and exit of wait 2 seen there). CPU 0's page
        // after the gap starts at 3 ms; everything up to 0.5 ms was read.
        let w1 = wake_events(42, 1_000_000, true);
        let mut fresh: Vec<Event> = w1[..3].to_vec(); // armed, fired, woken
        let mut w2 = wake_events(42, 1_050_000, true);
        for e in &mut w2[3..] {
            e.cpu = 2;
        }
        fresh.extend_from_slice(&w2[3..]); // switch and exit on CPU 2
        fresh.push(ev(3_000_000, 0, -1, Kind::Lost));
        // Wait 3, after the loss, is whole.
        fresh.extend(wake_events(42, 4_000_000, true));
        fresh.sort_by_key(|e| e.ts);
        let run = |since: Option<u64>| {
            let mut t = WakeTracker::new(&[42]);
            if let Some(s) = since {
                t.losses(&fresh, s);
            }
            for e in &fresh {
                t.event(e);
            }
            (t.take(), t.lost)
        };
        // Without the window, wait 1 takes wait 2's exit (its stages would
        // be wrong by a period).
        let (wrong, _) = run(None);
        assert_eq!(wrong[0].exit_ns, Some(1_060_000));
        let (w, lost) = run(Some(500_000));
        let got: Vec<u64> = w.iter().map(|w| w.expires_ns).collect();
        assert_eq!((got, lost), (vec![4_000_000], 1));
        // A loss at or before the last read opens no window.
        let (w, lost) = run(Some(3_000_000));
        assert_eq!((w.len(), lost), (2, 0));
        // A wait that ends where the window begins, or begins where it ends,
        // is not in it.
        let mut t = WakeTracker::new(&[42]);
        t.losses(&[ev(4_000_000 - 900_000, 0, -1, Kind::Lost)], 1_010_000);
        for e in wake_events(42, 1_000_000, true)
            .iter()
            .chain(wake_events(42, 4_000_000, true).iter())
        {
            t.event(e);
        }
        assert_eq!((t.take().len(), t.lost), (2, 0));
        // A loss marked at the last read itself opens no window, even
        // inside a wait.
        let mut t = WakeTracker::new(&[42]);
        t.losses(&[ev(1_005_000, 0, -1, Kind::Lost)], 1_005_000);
        for e in wake_events(42, 1_000_000, true) {
            t.event(&e);
        }
        assert_eq!((t.take().len(), t.lost), (1, 0));
        // Windows no wait in progress can meet any more are forgotten.
        let mut t = WakeTracker::new(&[42]);
        t.losses(&[ev(2_000, 0, -1, Kind::Lost)], 1_000);
        t.losses(&[], 5_000);
        assert!(t.blind.is_empty());
        // (a wait armed at 100 µs keeps a window after it).
        t.event(&wake_events(42, 1_000_000, true)[0]);
        t.losses(&[ev(200_000, 0, -1, Kind::Lost)], 150_000);
        t.losses(&[], 250_000);
        assert_eq!(t.blind, [(150_000, 200_000)]);
    }

    #[test]
    fn missing_switch_and_lost_events() {
        let mut t = WakeTracker::new(&[42]);
        for e in wake_events(42, 1_000_000, false) {
            t.event(&e);
        }
        // The next wait loses its sys_exit: armed again, it is given up.
        let mut second = wake_events(42, 2_000_000, true);
        second.pop();
        for e in second.iter().chain(wake_events(42, 3_000_000, true).iter()) {
            t.event(e);
        }
        let w = t.take();
        assert_eq!(w.len(), 3);
        assert_eq!(t.incomplete, 1);
        assert!(w[0].switch_ns.is_none() && w[0].exit_ns.is_some());
        assert!(w[1].exit_ns.is_none());
        let s = |e: u64| Sample {
            seq: 0,
            t_ns: e + 11_000,
            latency_ns: 11_000,
            overruns: 0,
            cpu: 1,
        };
        let st = Stages::of(&s(1_000_000), &w[0]).unwrap();
        assert_eq!((st.sched_ns, st.return_ns), (None, None));
        assert_eq!(st.switch_return_ns, Some(6_000));
        assert!(Stages::of(&s(2_000_000), &w[1]).is_none());
        // The recorder counts such a pair as incomplete, not as joined.
        let mut r = StageRecorder::new(0, 0);
        assert!(r.record("cpu1", &s(2_000_000), &w[1]).is_none());
        assert!(r.record("cpu1", &s(1_000_000), &w[0]).is_some());
        assert_eq!((r.joined, r.incomplete), (1, 1));
        // A sample that never gets its wake-up is given up when expired.
        let mut j = Joiner::default();
        j.sample(&s(5_000_000));
        j.wake(&w[2]);
        j.expire(4_000_000);
        assert_eq!((j.unmatched_samples, j.unmatched_wakes), (0, 1));
        j.finish();
        assert_eq!((j.unmatched_samples, j.unmatched_wakes), (1, 1));
        // Samples and wake-ups expire each at their own horizon, and the
        // samples waiting are bounded, the oldest given up first.
        let mut j = Joiner::default();
        for k in 5..=8 {
            assert!(j.sample(&s(k * 1_000_000)).is_none());
        }
        assert!(j.wake(&w[2]).is_none());
        j.expire_each(0, 6_000_000, 3);
        assert_eq!((j.unmatched_samples, j.unmatched_wakes), (1, 1));
        assert_eq!(j.pending_samples(), 3);
        j.expire_each(7_000_000, 0, 3);
        assert_eq!((j.unmatched_samples, j.pending_samples()), (2, 2));
        let late = KernelWake {
            expires_ns: 8_000_000,
            ..w[2]
        };
        assert!(j.wake(&late).is_some());
        // A second sample or wake-up of one intended time replaces the first,
        // which is counted as given up on.
        let mut j = Joiner::default();
        assert!(j.sample(&s(5_000_000)).is_none());
        assert!(j.sample(&s(5_000_000)).is_none());
        assert!(j.wake(&w[2]).is_none());
        assert!(j.wake(&w[2]).is_none());
        assert_eq!((j.unmatched_samples, j.unmatched_wakes), (1, 1));
        j.finish();
        assert_eq!((j.unmatched_samples, j.unmatched_wakes), (2, 2));
    }
}
