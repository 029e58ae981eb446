//! The scheduler as the trace shows it, for the cause diagnosis
//! ([`super::cause`]): each task's kernel priority, and the stretches in
//! which a CPU's real-time class was throttled.

use std::collections::{HashMap, VecDeque};

use super::event::{Event, Kind};

/// Stretches of time in which each CPU's real-time class was throttled,
/// from the events as they stream in. A real-time task switched out while
/// runnable (preempted) waits on its CPU until it is switched in again
/// (there or elsewhere); a `sched_switch` to a lower priority (idle
/// included) while such a task waits sets it aside: that opens a stretch
/// (RT throttling, or the fair deadline server). A real-time task running on
/// the CPU again (switched in, or any event in its context) closes it. A
/// loss forgets the CPU's waiting tasks. Also learns each task's kernel
/// priority.
///
/// With [`SchedWatch::rt_bandwidth`] set, a stretch opens only where the
/// real-time class could have used up its runtime: real-time tasks current
/// on the CPU, plus any time before its first `sched_switch` (unseen),
/// for at least 90 % of the runtime in the period before. A real-time task
/// that waited here and was pulled to a CPU not traced (where it ran
/// unseen) otherwise looks set aside when a lower task runs.
#[derive(Debug, Clone, Default)]
pub struct SchedWatch {
    /// pid -> kernel priority (from `sched_switch`).
    pub prio: HashMap<i32, i32>,
    /// The real-time class's bandwidth, `(period, runtime)` in ns
    /// (`sched_rt_period_us`, `sched_rt_runtime_us`); `None`: not known, and
    /// every set-aside stretch opens.
    pub rt_bandwidth: Option<(u64, u64)>,
    /// Per CPU: throttled stretches (start, end; `None`: still open) with
    /// the task set aside, oldest first.
    throttled: HashMap<u32, VecDeque<(u64, Option<u64>, i32)>>,
    /// Per CPU: runnable real-time tasks switched out (pid, priority, when).
    waiting: HashMap<u32, Vec<(i32, i32, u64)>>,
    /// Per CPU: when real-time tasks were current.
    rt_busy: HashMap<u32, RtBusy>,
}

/// When real-time tasks were current on one CPU, over the last period.
#[derive(Debug, Clone, Default)]
struct RtBusy {
    /// Seen from (the first `sched_switch`, or the last loss).
    since: u64,
    /// A real-time task current since.
    open: Option<u64>,
    /// Closed stretches, oldest first.
    done: VecDeque<(u64, u64)>,
}

impl RtBusy {
    /// Real-time time in `[from, to]`, the time not seen counted as such.
    fn in_window(&self, from: u64, to: u64) -> u64 {
        let overlap = |a: u64, b: u64| b.min(to).saturating_sub(a.max(from));
        let seen: u64 = self.done.iter().map(|&(a, b)| overlap(a, b)).sum();
        seen + self.open.map_or(0, |a| overlap(a, to)) + overlap(0, self.since)
    }
}

/// How long closed throttled stretches are kept, ns.
const WATCH_KEEP_NS: u64 = 4_000_000_000;

impl SchedWatch {
    /// A watch that knows the real-time bandwidth (see
    /// [`SchedWatch::rt_bandwidth`]).
    pub fn with_rt_bandwidth(rt_bandwidth: Option<(u64, u64)>) -> Self {
        Self {
            rt_bandwidth,
            ..Self::default()
        }
    }

    /// Takes one event (in time order per CPU).
    pub fn event(&mut self, e: &Event) {
        let rt = |p: i32| (0..100).contains(&p);
        match e.kind {
            Kind::Switch {
                prev_pid,
                next_pid,
                prev_runnable,
                prev_prio,
                next_prio,
            } => {
                self.prio.insert(prev_pid, prev_prio);
                self.prio.insert(next_pid, next_prio);
                let busy = self.rt_busy.entry(e.cpu).or_insert_with(|| RtBusy {
                    since: e.ts,
                    ..RtBusy::default()
                });
                if let Some(a) = busy.open.take() {
                    busy.done.push_back((a, e.ts));
                }
                if next_pid != 0 && rt(next_prio) {
                    busy.open = Some(e.ts);
                }
                let keep_from = e.ts.saturating_sub(self.rt_bandwidth.map_or(0, |b| b.0));
                while busy.done.front().is_some_and(|x| x.1 < keep_from) {
                    busy.done.pop_front();
                }
                let could_throttle = self.rt_bandwidth.is_none_or(|(period, runtime)| {
                    busy.in_window(e.ts.saturating_sub(period), e.ts) * 10 >= runtime * 9
                });
                for w in self.waiting.values_mut() {
                    w.retain(|x| x.0 != next_pid && x.2 + WATCH_KEEP_NS > e.ts);
                }
                let waiting = self.waiting.entry(e.cpu).or_default();
                if prev_pid != 0 && prev_runnable && rt(prev_prio) {
                    waiting.push((prev_pid, prev_prio, e.ts));
                }
                let aside = waiting
                    .iter()
                    .filter(|x| x.1 < next_prio)
                    .min_by_key(|x| x.1)
                    .map(|x| x.0);
                let q = self.throttled.entry(e.cpu).or_default();
                if rt(next_prio) && next_pid != 0 {
                    close(q, e.ts);
                } else if let Some(aside) = aside.filter(|_| could_throttle) {
                    if q.back().is_none_or(|x| x.1.is_some()) {
                        q.push_back((e.ts, None, aside));
                    }
                }
                while q
                    .front()
                    .is_some_and(|x| x.1.is_some_and(|end| end + WATCH_KEEP_NS < e.ts))
                {
                    q.pop_front();
                }
            }
            Kind::Lost => {
                self.waiting.remove(&e.cpu);
                // What ran is not known from here to the next switch.
                if let Some(b) = self.rt_busy.get_mut(&e.cpu) {
                    b.open = None;
                    b.done.clear();
                    b.since = e.ts;
                }
            }
            _ if e.pid > 0 && self.prio.get(&e.pid).is_some_and(|p| rt(*p)) => {
                if let Some(q) = self.throttled.get_mut(&e.cpu) {
                    close(q, e.ts);
                }
            }
            _ => {}
        }
    }

    /// The throttled stretch of `cpu` that overlaps `[from, to)`, if any:
    /// (start, end, the task set aside).
    pub fn throttled(&self, cpu: u32, from: u64, to: u64) -> Option<(u64, Option<u64>, i32)> {
        self.throttled
            .get(&cpu)?
            .iter()
            .rev()
            .copied()
            .find(|x| x.0 < to && x.1.is_none_or(|end| end > from))
    }
}

fn close(q: &mut VecDeque<(u64, Option<u64>, i32)>, ts: u64) {
    if let Some(x) = q.back_mut() {
        if x.1.is_none() {
            x.1 = Some(ts);
        }
    }
}
