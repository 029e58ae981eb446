//! Attribution of OS-noise gaps to what ran during them, from one CPU's
//! trace events.
//!
//! The events cut the CPU's time into segments; each segment belongs to the
//! innermost context open at its start (an NMI, a hardware IRQ handler, a
//! system vector such as the local timer, an hrtimer callback, a softirq) or,
//! with none open, to the task running (`sched_switch`). A gap's time is the
//! sum of the segments it overlaps, split by owner. Time the measuring thread
//! itself owns inside a gap is kernel entry/exit work the events do not
//! cover; a gap with no event at all is hardware or hypervisor noise (an SMI,
//! a vCPU descheduled by the host).
//!
//! RT throttling: a `sched_switch` away from the measuring thread that
//! leaves it runnable (`prev_state` R) while it is real-time (priority below
//! 100) and hands the CPU to a task of lower priority (idle included) is the
//! kernel setting the loop aside for its bandwidth limit (RT throttling, or
//! the fair deadline server running normal tasks): a runnable RT task is
//! otherwise only ever preempted by a higher priority. From that switch to
//! the loop's return, the CPU's time is [`Owner::Throttled`], whatever runs
//! meanwhile (idle, normal tasks, their interrupts).
//!
//! The loop runs at the end of each of its gaps (that is what ends a gap):
//! there the task is the measuring thread again, whether or not a
//! `sched_switch` back to it was recorded (6.18 records none when the CPU
//! returns from idle to a throttled RT task).
//!
//! Streaming contract: gaps in time order, events in time order, and every
//! gap that starts before an event's time pushed before that event (the
//! caller holds events back to the loop's published progress).

use std::collections::{BTreeMap, VecDeque};

use super::event::{softirq_name, Decoder, Event, Kind};

/// Who a stretch of CPU time belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Owner {
    /// The measuring thread: inside a gap, kernel work no event covers.
    Own,
    /// A task, by pid.
    Task(i32),
    /// An interrupt handler, by line.
    Irq(i32),
    /// A softirq, by number.
    Softirq(u32),
    /// An x86 system vector, by index.
    Vector(u16),
    /// An hrtimer callback, by the timer's address.
    Hrtimer(u64),
    /// An NMI handler.
    Nmi,
    /// A gap with no kernel event: hardware or hypervisor.
    Hardware,
    /// The kernel set the runnable loop aside for lower-priority work or
    /// idle: RT throttling or the fair deadline server.
    Throttled,
}

impl Owner {
    /// The kind, as the result document names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Owner::Own => "kernel",
            Owner::Task(_) => "thread",
            Owner::Irq(_) => "irq",
            Owner::Softirq(_) => "softirq",
            Owner::Vector(_) => "irq",
            Owner::Hrtimer(_) => "hrtimer",
            Owner::Nmi => "nmi",
            Owner::Hardware => "hardware",
            Owner::Throttled => "throttling",
        }
    }

    /// A readable name (`irq 11 virtio0`, `softirq TIMER`, `kworker/1:2[88]`)
    /// of an owner of `cpu`.
    pub fn name(&self, d: &Decoder, cpu: u32, symbol: &dyn Fn(u64) -> Option<String>) -> String {
        match *self {
            Owner::Own => "untraced (kernel entry/exit, or the host)".into(),
            Owner::Task(p) => format!("thread {}", d.task_name(p, cpu)),
            Owner::Irq(n) => match d.irq_names.get(&n) {
                Some(name) => format!("irq {n} {name}"),
                None => format!("irq {n}"),
            },
            Owner::Softirq(v) => format!("softirq {}", softirq_name(v)),
            Owner::Vector(v) => format!("irq {}", d.vector_name(v)),
            Owner::Hrtimer(f) => match symbol(f) {
                Some(s) => format!("hrtimer {s}"),
                None => format!("hrtimer {f:#x}"),
            },
            Owner::Nmi => "nmi".into(),
            Owner::Hardware => "hardware/hypervisor (no kernel event)".into(),
            Owner::Throttled => {
                "RT throttling (the loop runnable, the CPU given to lower priority or idle)".into()
            }
        }
    }
}

/// One gap, attributed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributed {
    /// Start of the gap, ns.
    pub start_ns: u64,
    /// Its length, ns.
    pub len_ns: u64,
    /// Time per owner inside the gap, largest first (sums to the gap length).
    pub parts: Vec<(Owner, u64)>,
    /// Trace events inside the gap.
    pub events: u32,
}

impl Attributed {
    /// The owner of most of the gap.
    pub fn main(&self) -> Owner {
        self.parts.first().map_or(Owner::Hardware, |p| p.0)
    }

    /// The part of the gap no kernel event accounts for: a gap without any
    /// event, or the time inside it still owned by the measuring thread
    /// (kernel entry and exit, or the machine stalling the CPU while that
    /// thread ran: a stall ended by a pending interrupt has the interrupt's
    /// events at its end, and its time is this thread's).
    pub fn unexplained_ns(&self) -> u64 {
        self.parts
            .iter()
            .filter(|p| matches!(p.0, Owner::Own | Owner::Hardware))
            .map(|p| p.1)
            .sum()
    }
}

#[derive(Debug, Clone)]
struct Open {
    start: u64,
    end: u64,
    parts: BTreeMap<Owner, u64>,
    events: u32,
}

/// Per-owner totals over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Gaps where this owner had the largest share.
    pub gaps_main: u64,
    /// Gaps it took part in.
    pub gaps: u64,
    /// Its time inside gaps, ns.
    pub total_ns: u64,
    /// Its largest share of one gap, ns.
    pub max_ns: u64,
}

/// The streaming attributor of one CPU.
#[derive(Debug, Clone)]
pub struct Attributor {
    own_pid: i32,
    stack: Vec<Owner>,
    current: Option<i32>,
    /// The loop was set aside for its bandwidth limit (see the module doc).
    throttled: bool,
    last: u64,
    pending: VecDeque<Open>,
    /// Totals per owner.
    pub tally: BTreeMap<Owner, Tally>,
    /// Gaps attributed so far.
    pub gaps: u64,
    worst: Vec<Attributed>,
    keep: usize,
    /// Every gap attributed since the last [`take_finished`](Self::take_finished),
    /// when [`keep_finished`](Self::keep_finished) asked for them.
    finished: Option<Vec<Attributed>>,
}

const MAX_DEPTH: usize = 16;

impl Attributor {
    /// For the thread `own_pid`, whose loop started at `start_ns`; keeps the
    /// `keep` longest gaps with their breakdown.
    pub fn new(own_pid: i32, start_ns: u64, keep: usize) -> Self {
        Attributor {
            own_pid,
            stack: Vec::new(),
            current: None,
            throttled: false,
            last: start_ns,
            pending: VecDeque::new(),
            tally: BTreeMap::new(),
            gaps: 0,
            worst: Vec::new(),
            keep,
            finished: None,
        }
    }

    /// Keeps every attributed gap until [`take_finished`](Self::take_finished)
    /// (for a caller that wants each one, not only the longest).
    pub fn keep_finished(&mut self) {
        self.finished.get_or_insert_with(Vec::new);
    }

    /// The gaps attributed since the last call, in the order they ended
    /// (none unless [`keep_finished`](Self::keep_finished) was called).
    pub fn take_finished(&mut self) -> Vec<Attributed> {
        self.finished
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    fn owner(&self) -> Owner {
        if self.throttled {
            return Owner::Throttled;
        }
        match (self.stack.last(), self.current) {
            (Some(o), _) => *o,
            (None, Some(p)) if p != self.own_pid => Owner::Task(p),
            _ => Owner::Own,
        }
    }

    /// A gap of the loop (CLOCK_MONOTONIC ns).
    pub fn gap(&mut self, start_ns: u64, len_ns: u64) {
        self.pending.push_back(Open {
            start: start_ns,
            end: start_ns + len_ns,
            parts: BTreeMap::new(),
            events: 0,
        });
    }

    /// Credits `[self.last, to)` to `owner` (none: the CPU's owner, read
    /// again at the end of every gap, where the loop runs again), and
    /// finishes the gaps that end by `to`.
    fn credit(&mut self, to: u64, owner: Option<Owner>) {
        loop {
            // The next gap's end, if before `to` (a gap that ended by
            // `self.last`, pushed late, is finished first).
            let stop = self
                .pending
                .front()
                .map_or(to, |g| g.end.max(self.last).min(to));
            let o = owner.unwrap_or_else(|| self.owner());
            self.credit_span(stop, o);
            if stop >= to {
                return;
            }
        }
    }

    /// Credits `[self.last, to)` to `owner`, and finishes the gaps that end by `to`.
    fn credit_span(&mut self, to: u64, owner: Owner) {
        if to > self.last {
            for g in self.pending.iter_mut() {
                if g.start >= to {
                    break;
                }
                let a = g.start.max(self.last);
                let b = g.end.min(to);
                if b > a {
                    *g.parts.entry(owner).or_default() += b - a;
                }
            }
            self.last = to;
        }
        while self.pending.front().is_some_and(|g| g.end <= self.last) {
            let g = self.pending.pop_front().expect("front exists");
            // The loop runs again: its own task, no longer set aside.
            self.current = Some(self.own_pid);
            self.throttled = false;
            self.finish_gap(g);
        }
    }

    fn finish_gap(&mut self, g: Open) {
        let len = g.end - g.start;
        let mut parts: Vec<(Owner, u64)> = if g.events == 0 {
            vec![(Owner::Hardware, len)]
        } else {
            let mut v: Vec<(Owner, u64)> = g.parts.into_iter().filter(|p| p.1 > 0).collect();
            let covered: u64 = v.iter().map(|p| p.1).sum();
            if covered < len {
                match v.iter_mut().find(|p| p.0 == Owner::Own) {
                    Some(p) => p.1 += len - covered,
                    None => v.push((Owner::Own, len - covered)),
                }
            }
            v
        };
        parts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        self.gaps += 1;
        for (i, (o, ns)) in parts.iter().enumerate() {
            let t = self.tally.entry(*o).or_default();
            t.gaps += 1;
            t.total_ns += ns;
            t.max_ns = t.max_ns.max(*ns);
            if i == 0 {
                t.gaps_main += 1;
            }
        }
        let a = Attributed {
            start_ns: g.start,
            len_ns: len,
            parts,
            events: g.events,
        };
        if let Some(f) = self.finished.as_mut() {
            f.push(a.clone());
        }
        if self.keep > 0 {
            if self.worst.len() < self.keep {
                self.worst.push(a);
            } else if let Some((i, w)) = self.worst.iter().enumerate().min_by_key(|(_, w)| w.len_ns)
            {
                if a.len_ns > w.len_ns {
                    self.worst[i] = a;
                }
            }
        }
    }

    /// One event of this CPU.
    pub fn event(&mut self, e: &Event) {
        let ts = e.ts.max(self.last);
        if let Kind::Nmi { delta_ns } = e.kind {
            // Reported at its end: the NMI took [ts - delta, ts).
            let from = ts.saturating_sub(delta_ns).max(self.last);
            self.credit(from, None);
            self.count_event(ts);
            self.credit(ts, Some(Owner::Nmi));
            return;
        }
        self.credit(ts, None);
        self.count_event(ts);
        match e.kind {
            Kind::IrqEntry { irq } => self.push(Owner::Irq(irq)),
            Kind::IrqExit { irq } => self.pop(Owner::Irq(irq)),
            Kind::SoftirqEntry { vec } => self.push(Owner::Softirq(vec)),
            Kind::SoftirqExit { vec } => self.pop(Owner::Softirq(vec)),
            Kind::VectorEntry { vector } => self.push(Owner::Vector(vector)),
            Kind::VectorExit { vector } => self.pop(Owner::Vector(vector)),
            Kind::HrtimerEntry { function, .. } => self.push(Owner::Hrtimer(function)),
            Kind::HrtimerExit => {
                if let Some(i) = self
                    .stack
                    .iter()
                    .rposition(|o| matches!(o, Owner::Hrtimer(_)))
                {
                    self.stack.truncate(i);
                }
            }
            Kind::Switch {
                prev_pid,
                next_pid,
                prev_runnable,
                prev_prio,
                next_prio,
            } => {
                // A switch happens in task context: whatever is open was missed.
                self.stack.clear();
                if next_pid == self.own_pid {
                    self.throttled = false;
                } else if prev_pid == self.own_pid {
                    self.throttled =
                        prev_runnable && (0..100).contains(&prev_prio) && next_prio > prev_prio;
                }
                self.current = Some(next_pid);
            }
            _ => {}
        }
    }

    fn count_event(&mut self, ts: u64) {
        for g in self.pending.iter_mut() {
            if g.start > ts {
                break;
            }
            if ts <= g.end {
                g.events += 1;
            }
        }
    }

    fn push(&mut self, o: Owner) {
        if self.stack.len() >= MAX_DEPTH {
            self.stack.clear();
        }
        self.stack.push(o);
    }

    fn pop(&mut self, o: Owner) {
        // Tolerates lost entries: pop down to the matching context, if open.
        if let Some(i) = self.stack.iter().rposition(|x| *x == o) {
            self.stack.truncate(i);
        }
    }

    /// Events were lost: the open contexts are unknown from here.
    pub fn lost(&mut self) {
        self.stack.clear();
    }

    /// Time up to which events have been fed (for the caller's bookkeeping).
    pub fn last_ns(&self) -> u64 {
        self.last
    }

    /// Ends the stream at `end_ns`: the remaining gaps are credited to the
    /// current owner up to their end.
    pub fn finish(&mut self, end_ns: u64) {
        let end = self.pending.back().map_or(end_ns, |g| g.end.max(end_ns));
        self.credit(end, None);
    }

    /// The longest gaps kept, longest first.
    pub fn worst(&self) -> Vec<Attributed> {
        let mut w = self.worst.clone();
        w.sort_by(|a, b| b.len_ns.cmp(&a.len_ns).then(a.start_ns.cmp(&b.start_ns)));
        w
    }

    /// The owners by total time, largest first.
    pub fn top(&self) -> Vec<(Owner, Tally)> {
        let mut v: Vec<(Owner, Tally)> = self.tally.iter().map(|(o, t)| (*o, *t)).collect();
        v.sort_by(|a, b| b.1.total_ns.cmp(&a.1.total_ns).then(a.0.cmp(&b.0)));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWN: i32 = 100;

    /// A switch from `prev` (going to sleep) to `next`, both normal tasks.
    fn switch(prev_pid: i32, next_pid: i32) -> Kind {
        Kind::Switch {
            prev_pid,
            next_pid,
            prev_runnable: false,
            prev_prio: 120,
            next_prio: 120,
        }
    }

    fn ev(ts: u64, kind: Kind) -> Event {
        Event {
            ts,
            cpu: 1,
            pid: OWN,
            kind,
        }
    }

    #[test]
    fn owner_kinds_and_names() {
        let mut d = Decoder::default();
        d.irq_names.insert(11, "virtio0".into());
        d.comms.insert(88, "kworker/1:2".into());
        let sym = |f: u64| (f == 0xabc).then(|| "tick_nohz_handler".to_string());
        let cases: [(Owner, &str, &str); 12] = [
            (
                Owner::Own,
                "kernel",
                "untraced (kernel entry/exit, or the host)",
            ),
            (Owner::Task(88), "thread", "thread kworker/1:2[88]"),
            (Owner::Task(5), "thread", "thread pid 5"),
            (Owner::Irq(11), "irq", "irq 11 virtio0"),
            (Owner::Irq(12), "irq", "irq 12"),
            (Owner::Softirq(1), "softirq", "softirq TIMER"),
            (Owner::Vector(999), "irq", "irq vector"),
            (
                Owner::Hrtimer(0xabc),
                "hrtimer",
                "hrtimer tick_nohz_handler",
            ),
            (Owner::Hrtimer(0xdef), "hrtimer", "hrtimer 0xdef"),
            (Owner::Nmi, "nmi", "nmi"),
            (
                Owner::Hardware,
                "hardware",
                "hardware/hypervisor (no kernel event)",
            ),
            (
                Owner::Throttled,
                "throttling",
                "RT throttling (the loop runnable, the CPU given to lower priority or idle)",
            ),
        ];
        for (o, kind, name) in cases {
            assert_eq!(o.kind(), kind, "{o:?}");
            assert_eq!(o.name(&d, 1, &sym), name, "{o:?}");
        }
    }

    #[test]
    fn irq_softirq_and_thread_time_is_split() {
        let mut a = Attributor::new(OWN, 0, 4);
        // Gap 1: [1000, 6000): entry overhead 200, irq 11 for 1800, TIMER softirq 2000, exit 1000.
        a.gap(1000, 5000);
        // Gap 2: [10_000, 30_000): a switch to pid 7 for 18 µs.
        a.gap(10_000, 20_000);
        // Gap 3: [40_000, 42_000): nothing in the trace.
        a.gap(40_000, 2_000);
        for e in [
            ev(1200, Kind::IrqEntry { irq: 11 }),
            ev(3000, Kind::IrqExit { irq: 11 }),
            ev(3000, Kind::SoftirqEntry { vec: 1 }),
            ev(5000, Kind::SoftirqExit { vec: 1 }),
            ev(11_000, switch(OWN, 7)),
            ev(29_000, switch(7, OWN)),
        ] {
            a.event(&e);
        }
        a.finish(50_000);
        assert_eq!(a.gaps, 3);
        let w = a.worst();
        assert_eq!(w[0].len_ns, 20_000);
        assert_eq!(
            w[0].parts,
            vec![(Owner::Task(7), 18_000), (Owner::Own, 2_000)]
        );
        assert_eq!(w[1].len_ns, 5_000);
        assert_eq!(
            w[1].parts,
            vec![
                (Owner::Softirq(1), 2000),
                (Owner::Irq(11), 1800),
                (Owner::Own, 1200)
            ]
        );
        assert_eq!(w[2].parts, vec![(Owner::Hardware, 2000)]);
        assert_eq!(w[2].events, 0);
        let t = &a.tally;
        assert_eq!(t[&Owner::Task(7)].gaps_main, 1);
        assert_eq!(t[&Owner::Hardware].total_ns, 2000);
        assert_eq!(t[&Owner::Irq(11)].max_ns, 1800);
        // Every gap's parts sum to its length.
        for g in &w {
            assert_eq!(g.parts.iter().map(|p| p.1).sum::<u64>(), g.len_ns);
        }
    }

    #[test]
    fn every_finished_gap_when_asked_and_its_unexplained_part() {
        let feed = |a: &mut Attributor| {
            // A stall ended by the timer interrupt that was due in it; a gap
            // that is an IRQ; a gap without events.
            a.gap(1000, 100_000);
            a.gap(200_000, 3_000);
            a.gap(300_000, 2_000);
            for e in [
                ev(100_500, Kind::VectorEntry { vector: 236 }),
                ev(100_900, Kind::VectorExit { vector: 236 }),
                ev(200_100, Kind::IrqEntry { irq: 4 }),
                ev(202_900, Kind::IrqExit { irq: 4 }),
            ] {
                a.event(&e);
            }
            a.finish(400_000);
        };
        let mut a = Attributor::new(OWN, 0, 1);
        feed(&mut a);
        assert!(a.take_finished().is_empty(), "not asked for");
        let mut a = Attributor::new(OWN, 0, 1);
        a.keep_finished();
        a.gap(1000, 100_000);
        a.event(&ev(100_500, Kind::VectorEntry { vector: 236 }));
        assert!(a.take_finished().is_empty(), "not ended yet");
        let mut a = Attributor::new(OWN, 0, 1);
        a.keep_finished();
        feed(&mut a);
        let f = a.take_finished();
        assert_eq!(
            f.iter().map(|g| g.start_ns).collect::<Vec<_>>(),
            [1000, 200_000, 300_000]
        );
        assert_eq!(f[0].unexplained_ns(), 100_000 - 400);
        assert_eq!(f[1].unexplained_ns(), 200);
        assert_eq!(f[2].unexplained_ns(), 2_000);
        assert!(a.take_finished().is_empty(), "taken once");
        // Only the longest is kept as worst: the others came out all the same.
        assert_eq!(a.worst().len(), 1);
    }

    #[test]
    fn nested_contexts_and_nmi() {
        let mut a = Attributor::new(OWN, 0, 4);
        a.gap(0, 10_000);
        for e in [
            ev(500, Kind::VectorEntry { vector: 0 }),
            ev(
                1000,
                Kind::HrtimerEntry {
                    hrtimer: 1,
                    function: 0xffff,
                    now: 1000,
                },
            ),
            ev(4000, Kind::Nmi { delta_ns: 1000 }), // NMI [3000, 4000) inside the hrtimer
            ev(5000, Kind::HrtimerExit),
            ev(6000, Kind::VectorExit { vector: 0 }),
        ] {
            a.event(&e);
        }
        a.finish(20_000);
        let w = a.worst();
        assert_eq!(
            w[0].parts,
            vec![
                (Owner::Own, 4500),
                (Owner::Hrtimer(0xffff), 3000),
                (Owner::Vector(0), 1500),
                (Owner::Nmi, 1000)
            ]
        );
    }

    #[test]
    fn lost_exit_does_not_stick() {
        let mut a = Attributor::new(OWN, 0, 2);
        a.gap(0, 1000);
        a.gap(5000, 1000);
        a.event(&ev(100, Kind::IrqEntry { irq: 3 }));
        // The exit was lost; a switch resets the context stack.
        a.event(&ev(2000, switch(9, OWN)));
        a.event(&ev(5500, Kind::SoftirqEntry { vec: 9 }));
        a.event(&ev(5600, Kind::SoftirqExit { vec: 9 }));
        a.finish(10_000);
        let w = a.worst();
        let second = w.iter().find(|g| g.start_ns == 5000).unwrap();
        assert_eq!(
            second.parts,
            vec![(Owner::Own, 900), (Owner::Softirq(9), 100)]
        );
    }

    /// A switch away from the loop (kernel priority 4: SCHED_FIFO 95) that
    /// leaves it runnable, to `next` of kernel priority `next_prio`.
    fn set_aside(next_pid: i32, next_prio: i32) -> Kind {
        Kind::Switch {
            prev_pid: OWN,
            next_pid,
            prev_runnable: true,
            prev_prio: 4,
            next_prio,
        }
    }

    /// What this VM's trace shows of RT throttling: the loop, runnable, is
    /// switched to idle after a tick; the idle CPU takes its ticks; no switch
    /// back is recorded when the loop returns. The gap is throttling, not the
    /// idle task's, and the next gap is not the idle task's either.
    #[test]
    fn a_throttled_loop_is_throttling_not_the_idle_task() {
        let mut a = Attributor::new(OWN, 0, 4);
        let end = 1_000 + 48_000_000;
        a.gap(1_000, 48_000_000);
        a.gap(60_000_000, 5_000);
        let mut evs = vec![
            ev(1_010, Kind::VectorEntry { vector: 0 }),
            ev(1_030, Kind::VectorExit { vector: 0 }),
            ev(1_050, set_aside(0, 120)),
        ];
        for k in 1..12u64 {
            let t = 1_000 + k * 4_000_000;
            evs.push(ev(t, Kind::VectorEntry { vector: 0 }));
            evs.push(ev(t + 10_000, Kind::VectorExit { vector: 0 }));
        }
        evs.push(ev(60_001_000, Kind::IrqEntry { irq: 11 }));
        evs.push(ev(60_003_000, Kind::IrqExit { irq: 11 }));
        run(&mut a, &evs, 70_000_000);
        let w = a.worst();
        assert_eq!(w[0].len_ns, end - 1_000);
        assert_eq!(
            w[0].parts,
            vec![
                (Owner::Throttled, end - 1_050),
                (Owner::Own, 30),
                (Owner::Vector(0), 20)
            ]
        );
        assert_eq!(w[0].main(), Owner::Throttled);
        assert_eq!(
            w[1].parts,
            vec![(Owner::Own, 3_000), (Owner::Irq(11), 2_000)]
        );
        assert!(!a.tally.contains_key(&Owner::Task(0)));
        assert_eq!(a.tally[&Owner::Throttled].gaps_main, 1);
    }

    #[test]
    fn set_aside_only_for_lower_priority_while_runnable() {
        // (the switch away from the loop, whether the gap is throttling).
        let cases = [
            // To idle or a normal task: throttling (or the fair server).
            (set_aside(0, 120), true),
            (set_aside(55, 139), true),
            // One step lower is lower.
            (set_aside(55, 5), true),
            // A higher or equal priority preempts: that task's time.
            (set_aside(21, 0), false),
            (set_aside(55, 4), false),
            (set_aside(55, -1), false),
            // The loop went to sleep: not set aside.
            (
                Kind::Switch {
                    prev_pid: OWN,
                    next_pid: 0,
                    prev_runnable: false,
                    prev_prio: 4,
                    next_prio: 120,
                },
                false,
            ),
            // A normal-priority loop (--policy other) shares the CPU fairly.
            (
                Kind::Switch {
                    prev_pid: OWN,
                    next_pid: 55,
                    prev_runnable: true,
                    prev_prio: 120,
                    next_prio: 139,
                },
                false,
            ),
            // The lowest real-time priority still counts; 100 is normal.
            (
                Kind::Switch {
                    prev_pid: OWN,
                    next_pid: 55,
                    prev_runnable: true,
                    prev_prio: 99,
                    next_prio: 120,
                },
                true,
            ),
            (
                Kind::Switch {
                    prev_pid: OWN,
                    next_pid: 55,
                    prev_runnable: true,
                    prev_prio: 100,
                    next_prio: 120,
                },
                false,
            ),
            (
                Kind::Switch {
                    prev_pid: OWN,
                    next_pid: 55,
                    prev_runnable: true,
                    prev_prio: -1,
                    next_prio: 120,
                },
                false,
            ),
            // A switch between two other tasks does not set the loop aside.
            (
                Kind::Switch {
                    prev_pid: 9,
                    next_pid: 55,
                    prev_runnable: true,
                    prev_prio: 4,
                    next_prio: 120,
                },
                false,
            ),
        ];
        for (k, throttled) in cases {
            let mut a = Attributor::new(OWN, 0, 1);
            a.gap(1_000, 9_000);
            run(&mut a, &[ev(2_000, k)], 20_000);
            let w = a.worst();
            let main = w[0].main();
            assert_eq!(
                main == Owner::Throttled,
                throttled,
                "{k:?}: {:?}",
                w[0].parts
            );
            assert_eq!(w[0].parts[0].1, 8_000, "{k:?}");
        }
    }

    #[test]
    fn throttling_ends_when_the_loop_comes_back() {
        // Set aside at 2000, another task switched in at 5000 (still the
        // loop's throttling), the loop switched back in at 8000; an IRQ
        // after that is the IRQ's again.
        let mut a = Attributor::new(OWN, 0, 1);
        a.gap(1_000, 10_000);
        run(
            &mut a,
            &[
                ev(2_000, set_aside(0, 120)),
                ev(3_000, Kind::IrqEntry { irq: 4 }),
                ev(3_500, Kind::IrqExit { irq: 4 }),
                ev(5_000, switch(0, 66)),
                ev(8_000, switch(66, OWN)),
                ev(9_000, Kind::IrqEntry { irq: 4 }),
                ev(9_500, Kind::IrqExit { irq: 4 }),
            ],
            20_000,
        );
        assert_eq!(
            a.worst()[0].parts,
            vec![
                (Owner::Throttled, 6_000),
                (Owner::Own, 3_500),
                (Owner::Irq(4), 500)
            ]
        );
    }

    #[test]
    fn the_loop_owns_the_cpu_again_after_each_gap() {
        // A preemption by a higher priority whose switch back was not
        // recorded: the next gap is the loop's own (untraced) time and its
        // IRQ's, not the preempting task's.
        let mut a = Attributor::new(OWN, 0, 2);
        a.gap(1_000, 5_000);
        a.gap(10_000, 2_000);
        run(
            &mut a,
            &[
                ev(1_500, set_aside(21, 0)),
                ev(10_500, Kind::SoftirqEntry { vec: 1 }),
                ev(11_000, Kind::SoftirqExit { vec: 1 }),
            ],
            20_000,
        );
        let w = a.worst();
        assert_eq!(
            w[0].parts,
            vec![(Owner::Task(21), 4_500), (Owner::Own, 500)]
        );
        assert_eq!(
            w[1].parts,
            vec![(Owner::Own, 1_500), (Owner::Softirq(1), 500)]
        );
    }

    /// Feeds `events` in order, then ends the stream at `end`.
    fn run(a: &mut Attributor, events: &[Event], end: u64) {
        for e in events {
            a.event(e);
        }
        a.finish(end);
    }

    fn tally(gaps_main: u64, gaps: u64, total_ns: u64, max_ns: u64) -> Tally {
        Tally {
            gaps_main,
            gaps,
            total_ns,
            max_ns,
        }
    }

    #[test]
    fn gap_fully_inside_an_irq_has_no_untraced_part() {
        // [1100, 1600) lies inside irq 4's [1000, 2000): all of it is the IRQ's,
        // with no (zero) share for the thread's own entry/exit work.
        let mut a = Attributor::new(OWN, 0, 4);
        a.event(&ev(1000, Kind::IrqEntry { irq: 4 }));
        a.gap(1100, 500);
        a.event(&ev(
            1300,
            Kind::Waking {
                pid: 8,
                target_cpu: 2,
            },
        ));
        a.event(&ev(2000, Kind::IrqExit { irq: 4 }));
        a.finish(3000);
        let w = a.worst();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].parts, vec![(Owner::Irq(4), 500)]);
        assert_eq!(w[0].events, 1);
        assert_eq!(w[0].main(), Owner::Irq(4));
        assert!(!a.tally.contains_key(&Owner::Own));
    }

    #[test]
    fn an_event_at_the_gap_start_counts() {
        // The entry at the gap's first ns belongs to the gap [1000, 2000); the
        // exit at its end does not (the gap is finished by then).
        let mut a = Attributor::new(OWN, 0, 4);
        a.gap(1000, 1000);
        run(
            &mut a,
            &[
                ev(1000, Kind::IrqEntry { irq: 3 }),
                ev(2000, Kind::IrqExit { irq: 3 }),
            ],
            5000,
        );
        let w = a.worst();
        assert_eq!(w[0].events, 1);
        assert_eq!(w[0].parts, vec![(Owner::Irq(3), 1000)]);
    }

    #[test]
    fn time_before_the_first_credit_goes_to_the_own_part() {
        // The gap [700, 2500) is pushed after the event at 1000 (it came late):
        // [700, 1000) was credited to no one and is the thread's own
        // (untraced) time, added to the own part it already has.
        let mut a = Attributor::new(OWN, 0, 4);
        a.event(&ev(1000, Kind::IrqEntry { irq: 5 }));
        a.gap(700, 1800);
        run(&mut a, &[ev(2000, Kind::IrqExit { irq: 5 })], 3000);
        let w = a.worst();
        // irq [1000, 2000), own [2000, 2500) + the uncredited 300.
        assert_eq!(w[0].parts, vec![(Owner::Irq(5), 1000), (Owner::Own, 800)]);
        assert_eq!(a.tally[&Owner::Own].total_ns, 800);
        assert_eq!(a.tally[&Owner::Irq(5)].total_ns, 1000);

        // The same with no own part yet: one is made for the uncredited 300.
        let mut a = Attributor::new(OWN, 0, 4);
        a.event(&ev(1000, switch(OWN, 7)));
        a.gap(700, 1800);
        run(
            &mut a,
            &[ev(
                2000,
                Kind::Waking {
                    pid: 8,
                    target_cpu: 1,
                },
            )],
            2500,
        );
        let w = a.worst();
        assert_eq!(w[0].parts, vec![(Owner::Task(7), 1500), (Owner::Own, 300)]);
        assert_eq!(w[0].events, 1);
    }

    #[test]
    fn tallies_and_top() {
        // Gap 1 [0, 1000): irq 2 for 600, own 400.
        // Gap 2 [2000, 2500): irq 2 for 100, own 400.
        // Gap 3 [3000, 3300): no event.
        let mut a = Attributor::new(OWN, 0, 4);
        a.gap(0, 1000);
        a.gap(2000, 500);
        a.gap(3000, 300);
        run(
            &mut a,
            &[
                ev(100, Kind::IrqEntry { irq: 2 }),
                ev(700, Kind::IrqExit { irq: 2 }),
                ev(2200, Kind::IrqEntry { irq: 2 }),
                ev(2300, Kind::IrqExit { irq: 2 }),
            ],
            4000,
        );
        assert_eq!(a.gaps, 3);
        assert_eq!(a.tally.len(), 3);
        assert_eq!(a.tally[&Owner::Irq(2)], tally(1, 2, 700, 600));
        assert_eq!(a.tally[&Owner::Own], tally(1, 2, 800, 400));
        assert_eq!(a.tally[&Owner::Hardware], tally(1, 1, 300, 300));
        assert_eq!(
            a.top(),
            vec![
                (Owner::Own, tally(1, 2, 800, 400)),
                (Owner::Irq(2), tally(1, 2, 700, 600)),
                (Owner::Hardware, tally(1, 1, 300, 300)),
            ]
        );
    }

    #[test]
    fn keeps_the_longest_gaps_first_come_on_ties() {
        let mut a = Attributor::new(OWN, 0, 2);
        // Lengths 300, 100, 200, 200 (a tie, later), 50: the two kept are
        // 300 and the first 200.
        for (start, len) in [(0, 300), (1000, 100), (2000, 200), (3000, 200), (4000, 50)] {
            a.gap(start, len);
        }
        a.finish(5000);
        assert_eq!(a.gaps, 5);
        let kept: Vec<(u64, u64)> = a.worst().iter().map(|g| (g.start_ns, g.len_ns)).collect();
        assert_eq!(kept, vec![(0, 300), (2000, 200)]);

        // keep 0: none kept, all counted.
        let mut a = Attributor::new(OWN, 0, 0);
        a.gap(0, 300);
        a.gap(1000, 100);
        a.finish(5000);
        assert_eq!(a.gaps, 2);
        assert!(a.worst().is_empty());
    }

    #[test]
    fn lost_events_close_the_open_contexts() {
        let mut a = Attributor::new(OWN, 0, 1);
        a.gap(0, 1000);
        a.event(&ev(100, Kind::IrqEntry { irq: 3 }));
        a.event(&ev(
            400,
            Kind::Waking {
                pid: 8,
                target_cpu: 1,
            },
        ));
        // Events lost after 400: irq 3 is no longer taken as open.
        a.lost();
        run(
            &mut a,
            &[ev(
                600,
                Kind::Waking {
                    pid: 8,
                    target_cpu: 1,
                },
            )],
            2000,
        );
        assert_eq!(
            a.worst()[0].parts,
            vec![(Owner::Own, 700), (Owner::Irq(3), 300)]
        );
    }

    #[test]
    fn last_ns_follows_the_events() {
        let mut a = Attributor::new(OWN, 500, 1);
        assert_eq!(a.last_ns(), 500);
        a.event(&ev(
            1200,
            Kind::Waking {
                pid: 8,
                target_cpu: 1,
            },
        ));
        assert_eq!(a.last_ns(), 1200);
        // An event stamped earlier does not move it back.
        a.event(&ev(
            1100,
            Kind::Waking {
                pid: 8,
                target_cpu: 1,
            },
        ));
        assert_eq!(a.last_ns(), 1200);
        a.finish(3000);
        assert_eq!(a.last_ns(), 3000);
    }
}
