//! A named cause for every outlier: why one wake-up was late, from the
//! kernel events around it, in a fixed vocabulary ([`Cause`]), with its
//! evidence in one sentence and its share of the latency ([`Diagnosis`]);
//! and the table of causes over a run's outliers ([`CauseTable`]).
//!
//! [`diagnose`] splits the late wake-up into its stages
//! ([`super::stages::Stages`]) and reads the stage that took most of the
//! latency on the CPU it happened on:
//!
//! - **timer** (the expiry to the timer interrupt): a hard interrupt handler
//!   or softirq that covered it names itself; with none, nothing on the CPU
//!   explains it: with the idle task current, [`Cause::HardwareOrHypervisor`]
//!   (the idle task cannot hold interrupts off for that long); with a task
//!   current, [`Cause::Unknown`]: without `preemptirq` tracepoints,
//!   interrupts off in its kernel code and a stall below the kernel look the
//!   same, and the evidence names both;
//! - **wakeup** (the interrupt to `sched_waking`): the handlers inside it;
//! - **switch+return** (`sched_waking` to the return to user space): the
//!   task that held the CPU (its name, pid, priority, and whether it outranked
//!   the thread or held non-preemptible kernel code), RT throttling (a
//!   runnable real-time task set aside for a lower priority: see
//!   [`SchedWatch`]), an interrupt handler or softirq, the thread itself
//!   sleeping again (not runnable), or a wake-up on another CPU;
//! - **rtscope-kernel** (after the return to user space): [`Cause::Unknown`].
//!
//! A cause is named only where the events support it: the named owner must
//! hold at least half of the stage, and the stage must be at least half of
//! the latency; otherwise the cause is [`Cause::Unknown`] and the evidence
//! says what was seen.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::event::{softirq_name, Decoder, Event, Kind};
use super::stages::{KernelWake, Stages};
pub use super::watch::SchedWatch;

/// Why a wake-up was late: the fixed vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Cause {
    /// The timer interrupt came late and nothing on the CPU explains it (no
    /// kernel event in the gap): hardware, firmware (SMI) or the hypervisor.
    HardwareOrHypervisor,
    /// Interrupts or preemption off in the kernel, where the kernel's
    /// tracepoints show it.
    IrqsOrPreemptOff,
    /// A hard interrupt handler (line and name) or system vector (no line)
    /// ran on the CPU.
    IrqHandler {
        /// The interrupt line (`None`: an x86 system vector).
        irq: Option<i32>,
        /// The handler's or vector's name.
        name: String,
    },
    /// A softirq ran on the CPU.
    Softirq {
        /// Its name (`NET_RX`, `TIMER`, ...).
        vector: String,
    },
    /// A task held the CPU after the wake-up.
    TaskHeldCpu {
        /// Its name.
        comm: String,
        /// Its pid.
        pid: i32,
        /// `fifo/rr`, `deadline` or `other` (from its kernel priority).
        policy: String,
        /// Its priority: the real-time priority (1-99) for `fifo/rr`, the
        /// kernel priority (100-139) otherwise.
        prio: i32,
        /// It had a higher priority than the measuring thread.
        outranked: bool,
        /// It had a lower priority and still kept the CPU: it was running
        /// kernel code that cannot be preempted.
        kernel_nonpreemptible: bool,
    },
    /// The real-time class was throttled on the CPU (`sched_rt_runtime_us`,
    /// or the fair deadline server): the thread was runnable while
    /// lower-priority tasks or idle ran.
    RtThrottling,
    /// The thread was woken on one CPU and ran on another.
    Migration {
        /// The CPU of the timer interrupt.
        from: u32,
        /// The CPU the thread returned on.
        to: u32,
    },
    /// The thread itself was not runnable (it slept again in the kernel).
    NotRunnable {
        /// What the events show.
        why: String,
    },
    /// The events do not support a name; the evidence says what was seen.
    Unknown,
}

impl Cause {
    /// The cause class as the result names it (`hardware_or_hypervisor`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Cause::HardwareOrHypervisor => "hardware_or_hypervisor",
            Cause::IrqsOrPreemptOff => "irqs_or_preempt_off",
            Cause::IrqHandler { .. } => "irq_handler",
            Cause::Softirq { .. } => "softirq",
            Cause::TaskHeldCpu { .. } => "task_held_cpu",
            Cause::RtThrottling => "rt_throttling",
            Cause::Migration { .. } => "migration",
            Cause::NotRunnable { .. } => "not_runnable",
            Cause::Unknown => "unknown",
        }
    }

    /// Readable, and the key of the cause table: `irq 24 virtio0-input`,
    /// `task hog[812] fifo/rr 99 (outranked the thread)`, ...
    pub fn label(&self) -> String {
        match self {
            Cause::HardwareOrHypervisor => {
                "hardware/hypervisor (timer late, no kernel event)".into()
            }
            Cause::IrqsOrPreemptOff => "interrupts or preemption off".into(),
            Cause::IrqHandler { irq: Some(n), name } if name.is_empty() => format!("irq {n}"),
            Cause::IrqHandler { irq: Some(n), name } => format!("irq {n} {name}"),
            Cause::IrqHandler { irq: None, name } => format!("irq vector {name}"),
            Cause::Softirq { vector } => format!("softirq {vector}"),
            Cause::TaskHeldCpu {
                comm,
                pid,
                policy,
                prio,
                outranked,
                kernel_nonpreemptible,
            } => {
                let how = if *outranked {
                    " (outranked the thread)"
                } else if *kernel_nonpreemptible {
                    " (non-preemptible kernel code)"
                } else {
                    ""
                };
                format!("task {comm}[{pid}] {policy} {prio}{how}")
            }
            Cause::RtThrottling => "RT throttling".into(),
            Cause::Migration { from, to } => format!("woken on CPU {from}, ran on CPU {to}"),
            Cause::NotRunnable { why } => format!("thread not runnable ({why})"),
            Cause::Unknown => "unknown".into(),
        }
    }

    /// What removes it: the `check` row or the setting to look at.
    pub fn remedy(&self) -> &'static str {
        match self {
            Cause::HardwareOrHypervisor => {
                "the machine: run `rtscope hwlat`; BIOS power/SMI settings, or pin and isolate the vCPU on the host (`check` rows `virtualization`, `cpu-idle`)"
            }
            Cause::IrqsOrPreemptOff => {
                "the kernel: a PREEMPT_RT kernel (`check` row `preempt`); find the section with the `preemptirq` tracer"
            }
            Cause::IrqHandler { .. } => {
                "IRQ affinity: move the interrupt off the measured CPU (`check` row `irq-affinity`), threaded IRQs (`threadirqs`)"
            }
            Cause::Softirq { .. } => {
                "threaded IRQs / softirqs off the measured CPU: IRQ affinity and RPS masks (`check` rows `irq-affinity`, `rps`)"
            }
            Cause::TaskHeldCpu { outranked: true, .. } => {
                "the task's priority or CPU: isolate the measured CPU (`isolcpus`/`nohz_full`, `check` row `isolation`) or lower that task's priority"
            }
            Cause::TaskHeldCpu { .. } => {
                "a preemptible kernel (`check` row `preempt`: PREEMPT_RT or preempt=full), or isolate the measured CPU (`isolcpus`)"
            }
            Cause::RtThrottling => {
                "RT throttling: `sched_rt_runtime_us` (`check` row `rt-throttling`); no RT task may spin past it on the measured CPU"
            }
            Cause::Migration { .. } => {
                "pin the measuring thread (`-a`) and keep the timer on its CPU (`check` row `isolation`)"
            }
            Cause::NotRunnable { .. } => {
                "the thread itself: lock its memory (`mlockall`, `check` row `memlock`) and avoid shared locks"
            }
            Cause::Unknown => "more events: a larger `--trace-buffer`, or a kernel with `preemptirq` tracepoints",
        }
    }
}

/// The cause of one outlier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// The cause.
    pub cause: Cause,
    /// What the events show, in one sentence.
    pub evidence: String,
    /// The cause's part of the latency, 0 to 1.
    pub share: f64,
    /// The cause's time, ns.
    pub cause_ns: u64,
    /// The stage it was found in (`timer`, `wakeup`, `switch+return`,
    /// `rtscope-kernel`).
    pub stage: String,
}

/// One outlier to diagnose.
#[derive(Debug, Clone, Copy)]
pub struct Outlier<'a> {
    /// The kernel's record of the wake-up.
    pub wake: &'a KernelWake,
    /// Its stages.
    pub stages: &'a Stages,
    /// rtscope's latency, ns.
    pub latency_ns: i64,
    /// The measuring thread's kernel priority (0-98 real-time: 99 − its RT
    /// priority; 100-139 normal), where known; else learned from the events.
    pub own_prio: Option<i32>,
}

/// Who held a CPU: a task (pid; 0 the idle task) or a handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Holder {
    Task(i32),
    Irq(i32),
    Softirq(u32),
    Vector(u16),
    Hrtimer,
    Nmi,
}

/// Time per holder of `cpu` inside `[from, to)`, from the events (in time
/// order; those before `from` set the state), the number of events
/// strictly inside, and the innermost hard interrupt (handler or vector)
/// still open at `to`.
fn holders(
    events: &[Event],
    cpu: u32,
    from: u64,
    to: u64,
) -> (BTreeMap<Holder, u64>, u32, Option<Holder>) {
    let mut out: BTreeMap<Holder, u64> = BTreeMap::new();
    let mut inside = 0u32;
    if to <= from {
        return (out, 0, None);
    }
    let mut stack: Vec<Holder> = Vec::new();
    let mut current: Option<i32> = None;
    let mut last = from;
    let credit = |out: &mut BTreeMap<Holder, u64>, h: Option<Holder>, a: u64, b: u64| {
        let (a, b) = (a.max(from), b.min(to));
        if let (Some(h), true) = (h, b > a) {
            *out.entry(h).or_default() += b - a;
        }
    };
    for e in events.iter().filter(|e| e.cpu == cpu) {
        if e.ts >= to {
            break;
        }
        if e.ts > from {
            inside += 1;
        }
        // Before the CPU's first event the current task is unknown: the
        // event's own pid is the task it interrupted or switched out.
        let now = current.or((e.pid >= 0).then_some(e.pid));
        let holder = stack.last().copied().or(now.map(Holder::Task));
        if let Kind::Nmi { delta_ns } = e.kind {
            let s = e.ts.saturating_sub(delta_ns);
            credit(&mut out, holder, last, s);
            credit(&mut out, Some(Holder::Nmi), s.max(last), e.ts);
            last = e.ts.max(last);
            continue;
        }
        credit(&mut out, holder, last, e.ts);
        last = e.ts.max(last);
        match e.kind {
            Kind::IrqEntry { irq } => stack.push(Holder::Irq(irq)),
            Kind::SoftirqEntry { vec } => stack.push(Holder::Softirq(vec)),
            Kind::VectorEntry { vector } => stack.push(Holder::Vector(vector)),
            Kind::HrtimerEntry { .. } => stack.push(Holder::Hrtimer),
            Kind::IrqExit { irq } => pop(&mut stack, Holder::Irq(irq)),
            Kind::SoftirqExit { vec } => pop(&mut stack, Holder::Softirq(vec)),
            Kind::VectorExit { vector } => pop(&mut stack, Holder::Vector(vector)),
            Kind::HrtimerExit => pop(&mut stack, Holder::Hrtimer),
            Kind::Switch { next_pid, .. } => {
                stack.clear();
                current = Some(next_pid);
            }
            Kind::Lost => stack.clear(),
            _ => {
                if e.pid >= 0 {
                    current = Some(e.pid);
                }
            }
        }
        if stack.len() > 16 {
            stack.clear();
        }
    }
    let holder = stack.last().copied().or(current.map(Holder::Task));
    credit(&mut out, holder, last, to);
    let open = stack
        .iter()
        .rev()
        .find(|h| matches!(h, Holder::Irq(_) | Holder::Vector(_)))
        .copied();
    (out, inside, open)
}

fn pop(stack: &mut Vec<Holder>, h: Holder) {
    if let Some(i) = stack.iter().rposition(|x| *x == h) {
        stack.truncate(i);
    }
}

fn us(ns: u64) -> String {
    let v = ns as f64 / 1000.0;
    if v >= 100.0 {
        format!("{v:.0} µs")
    } else {
        format!("{v:.1} µs")
    }
}

/// The policy and user-facing priority of kernel priority `p`.
fn policy(p: i32) -> (&'static str, i32) {
    match p {
        p if p < 0 => ("deadline", p),
        p if p < 100 => ("fifo/rr", 99 - p),
        p => ("other", p),
    }
}

/// Names the cause of one outlier from `events` (in time order; at least
/// those of the wake-up's CPUs from the arming of its timer to its return to
/// user space: earlier ones only set the CPUs' state), with the names the
/// decoder learned and the throttled stretches `watch` saw.
pub fn diagnose(o: &Outlier, events: &[Event], dec: &Decoder, watch: &SchedWatch) -> Diagnosis {
    let w = o.wake;
    let st = o.stages;
    let lat = o.latency_ns.max(1) as u64;
    let exp = w.expires_ns;
    let irq_t = w.irq_ns.unwrap_or(exp);
    let exit_t = w.exit_ns.unwrap_or(irq_t);
    let wake_t = w.waking_ns.unwrap_or(irq_t);
    let stages = [
        ("timer", st.timer_ns.max(0) as u64),
        ("wakeup", st.wakeup_ns.unwrap_or(0).max(0) as u64),
        (
            "switch+return",
            st.switch_return_ns.unwrap_or(0).max(0) as u64,
        ),
        ("rtscope-kernel", st.rtscope_kernel_ns.max(0) as u64),
    ];
    let (stage, stage_ns) = stages
        .iter()
        .copied()
        .max_by_key(|s| s.1)
        .unwrap_or(("timer", 0));
    let mk = |cause: Cause, evidence: String, ns: u64| Diagnosis {
        cause,
        evidence,
        share: (ns as f64 / lat as f64).min(1.0),
        cause_ns: ns,
        stage: stage.to_string(),
    };
    if stage_ns * 2 < lat {
        return mk(
            Cause::Unknown,
            format!(
                "no stage took half of the {}: timer {}, wake-up {}, switch+return {}, after the return {}",
                us(lat),
                us(stages[0].1),
                us(stages[1].1),
                us(stages[2].1),
                us(stages[3].1)
            ),
            stage_ns,
        );
    }
    let handler = |h: Holder| -> Option<Cause> {
        match h {
            Holder::Irq(n) => Some(Cause::IrqHandler {
                irq: Some(n),
                name: dec.irq_names.get(&n).cloned().unwrap_or_default(),
            }),
            Holder::Vector(v) => Some(Cause::IrqHandler {
                irq: None,
                name: dec.vector_name(v).to_string(),
            }),
            Holder::Softirq(v) => Some(Cause::Softirq {
                vector: softirq_name(v).to_string(),
            }),
            _ => None,
        }
    };
    // Task `p`'s longest section with interrupts off (`preemptirq`) over
    // two thirds of `[from, to)` or more: (start, end, its overlap).
    let off_for = |cpu: u32, p: i32, from: u64, to: u64| -> Option<(u64, u64, u64)> {
        irqs_off(events, cpu, from, to)
            .filter(|&(a, b, pid)| pid == p && (b.min(to) - a.max(from)) * 3 >= (to - from) * 2)
            .map(|(a, b, _)| (a, b, b.min(to) - a.max(from)))
    };
    let top = |m: &BTreeMap<Holder, u64>| -> Option<(Holder, u64)> {
        m.iter()
            .map(|(h, ns)| (*h, *ns))
            .max_by_key(|x| (x.1, std::cmp::Reverse(x.0)))
    };
    match stage {
        "timer" | "wakeup" => {
            let cpu = w.irq_cpu;
            let (from, to) = if stage == "timer" {
                (exp, irq_t)
            } else {
                (irq_t, wake_t)
            };
            let (mut m, _, open) = holders(events, cpu, from, to);
            // The timer's own interrupt: the hard interrupt (handler or
            // vector) still open when the timer ran in it. Its time before
            // the timer is not work of a handler that delays others: its
            // first job is to run the expired timers (the callbacks of
            // others before ours are timers of their own), so a long
            // stretch there is the CPU held inside it, interrupts off.
            // In the wake-up stage, the timer's callback (it wakes the
            // thread at once) is the same.
            let own = open;
            let mut own_ns = own.and_then(|h| m.remove(&h)).unwrap_or(0);
            if stage == "wakeup" {
                own_ns += m.remove(&Holder::Hrtimer).unwrap_or(0);
            }
            let best = top(&m);
            if let Some((h, ns)) = best {
                if let Some(c) = handler(h) {
                    if ns * 2 >= stage_ns && ns * 4 >= lat {
                        let ev = format!(
                            "{} ran {} on CPU {cpu} between the timer's expiry and the wake-up",
                            c.label(),
                            us(ns)
                        );
                        return mk(c, ev, ns);
                    }
                }
                if h == Holder::Nmi && ns * 2 >= stage_ns {
                    return mk(
                        Cause::Unknown,
                        format!("an NMI ran {} on CPU {cpu} before the timer interrupt", us(ns)),
                        ns,
                    );
                }
            }
            if own_ns * 2 >= stage_ns && (stage == "wakeup" || own.is_some()) {
                let what = own.and_then(handler).map_or("its interrupt".into(), |c| c.label());
                let ev = if stage == "timer" {
                    format!(
                        "the timer's own interrupt ({what}) was entered in time on CPU {cpu}, but ran the timer {} later, with no event in between: its few instructions before the timer cannot take that long with interrupts off; the hardware, firmware or hypervisor held the CPU",
                        us(own_ns)
                    )
                } else {
                    format!(
                        "the timer ran in its interrupt ({what}) on CPU {cpu}, but woke the thread {} later, with no event in between: its callback wakes the thread at once, interrupts off; the hardware, firmware or hypervisor held the CPU",
                        us(own_ns)
                    )
                };
                return mk(Cause::HardwareOrHypervisor, ev, own_ns);
            }
            if stage == "wakeup" {
                return mk(
                    Cause::Unknown,
                    format!(
                        "the timer interrupt on CPU {cpu} took {} to wake the thread, no handler explains it",
                        us(stage_ns)
                    ),
                    stage_ns,
                );
            }
            // Nothing on the CPU explains the late interrupt.
            let task = match best {
                Some((Holder::Task(p), _)) => Some(p),
                _ => None,
            };
            // Its section with interrupts off, where the kernel shows one.
            let off = task.and_then(|p| off_for(cpu, p, from, to));
            match task {
                // The idle task cannot hold interrupts off for long: what
                // held the CPU was below the kernel.
                Some(0) | None => mk(
                    Cause::HardwareOrHypervisor,
                    format!(
                        "the timer interrupt came {} late on CPU {cpu} with the CPU idle and no kernel event in between: the hardware, firmware or hypervisor held the CPU",
                        us(stage_ns)
                    ),
                    stage_ns,
                ),
                // A task in the kernel with interrupts off: where the
                // kernel has `preemptirq` events, its section shows it.
                Some(p) if off.is_some() => {
                    let (a, b, ns) = off.unwrap_or_default();
                    mk(
                        Cause::IrqsOrPreemptOff,
                        format!(
                            "interrupts were off on CPU {cpu} in {}'s kernel code for {} (from {} to {} of the expiry): the timer interrupt came {} late",
                            dec.task_name(p, cpu),
                            us(b - a),
                            signed_us(a as i64 - exp as i64),
                            signed_us(b as i64 - exp as i64),
                            us(stage_ns)
                        ),
                        ns,
                    )
                }
                // The thread itself, not asleep since it armed the timer on
                // this CPU (at most preempted): on its own way to sleep
                // (`hrtimer_start` to `schedule`), a path that holds
                // interrupts off for a few instructions only (the timer
                // base's and the run queue's locks).
                Some(p)
                    if p == w.tid
                        && w.armed_cpu == cpu
                        && !events.iter().any(|e| {
                            e.cpu == cpu
                                && (w.armed_ns..to).contains(&e.ts)
                                && matches!(e.kind, Kind::Switch { prev_pid, prev_runnable: false, .. } if prev_pid == p)
                        }) =>
                {
                    mk(
                        Cause::HardwareOrHypervisor,
                        format!(
                            "the timer interrupt came {} late on CPU {cpu} while the thread itself, on its way to sleep since it armed the timer, held it, and no kernel event came in between: that path holds interrupts off for a few instructions only; the hardware, firmware or hypervisor held the CPU",
                            us(stage_ns)
                        ),
                        stage_ns,
                    )
                }
                // A task in the kernel with interrupts off looks the same as
                // a stall below the kernel without `preemptirq` events: not
                // named either way.
                Some(p) => mk(
                    Cause::Unknown,
                    format!(
                        "the timer interrupt came {} late on CPU {cpu} with {} running and no kernel event in between: interrupts off in its kernel code, or the hardware, firmware or hypervisor held the CPU (a kernel with preemptirq tracepoints tells them apart; `rtscope hwlat` tests the machine)",
                        us(stage_ns),
                        dec.task_name(p, cpu)
                    ),
                    stage_ns,
                ),
            }
        }
        "switch+return" => {
            let cpu = w.exit_cpu;
            // To the return, not the first switch in: a thread switched in
            // and preempted again before its return waited for whoever
            // preempted it (a FIFO 99 hog's 40 ms was left unnamed).
            let upto = exit_t.max(wake_t);
            // The thread slept again before returning.
            let slept = events.iter().find(|e| {
                e.cpu == cpu
                    && e.ts > wake_t
                    && e.ts < exit_t
                    && matches!(e.kind, Kind::Switch { prev_pid, prev_runnable: false, .. } if prev_pid == w.tid)
            });
            if let Some(e) = slept {
                let ns = exit_t - e.ts;
                if ns * 2 >= stage_ns {
                    return mk(
                        Cause::NotRunnable {
                            why: "it slept again in the kernel: a lock or a page fault".into(),
                        },
                        format!(
                            "the thread went to sleep again on CPU {cpu} {} after its wake-up and returned {} later",
                            us(e.ts - wake_t),
                            us(ns)
                        ),
                        ns,
                    );
                }
            }
            if w.irq_cpu != cpu {
                return mk(
                    Cause::Migration {
                        from: w.irq_cpu,
                        to: cpu,
                    },
                    format!(
                        "the timer woke the thread on CPU {}, it returned on CPU {cpu} {} later",
                        w.irq_cpu,
                        us(stage_ns)
                    ),
                    stage_ns,
                );
            }
            // Throttled: a real-time task was set aside while lower-priority
            // tasks or idle ran, and they (not a handler or a real-time
            // task) held the CPU for most of the stage. A task set aside
            // here may have been pulled to a CPU not traced: the watch
            // cannot tell, what held the CPU can.
            let throttled = watch.throttled(cpu, wake_t, upto).and_then(|(t0, _, aside)| {
                let (m, _, _) = holders(events, cpu, wake_t, upto);
                let lower: u64 = m
                    .iter()
                    .filter(|(h, _)| match h {
                        Holder::Task(0) => true,
                        // Not known to be real-time (a task current since
                        // before the trace has no priority seen).
                        Holder::Task(p) => *p != w.tid && watch.prio.get(p).is_none_or(|&k| k >= 100),
                        _ => false,
                    })
                    .map(|(_, ns)| *ns)
                    .sum();
                (lower * 2 >= stage_ns).then_some((t0, aside, lower))
            });
            if let Some((t0, aside, lower)) = throttled {
                let ns = upto.saturating_sub(wake_t.max(t0)).max(exit_t - wake_t.max(t0));
                let ns = ns.min(stage_ns).max(lower.min(stage_ns));
                return mk(
                    Cause::RtThrottling,
                    format!(
                        "the real-time class was throttled on CPU {cpu}: {} was set aside for a lower priority at {} from the expiry, and the thread stayed runnable {} while lower-priority tasks or idle ran",
                        dec.task_name(aside, cpu),
                        signed_us(t0 as i64 - exp as i64),
                        us(ns)
                    ),
                    ns,
                );
            }
            let (m, inside, _) = holders(events, cpu, wake_t, upto);
            let own = o.own_prio.or_else(|| watch.prio.get(&w.tid).copied());
            let Some((h, ns)) = top(&m) else {
                return mk(
                    Cause::Unknown,
                    format!("no event on CPU {cpu} between the wake-up and the return ({})", us(stage_ns)),
                    stage_ns,
                );
            };
            if ns * 2 < stage_ns {
                return mk(
                    Cause::Unknown,
                    format!(
                        "on CPU {cpu}, nothing held most of the {} between the wake-up and the return (longest: {} for {})",
                        us(stage_ns),
                        holder_name(h, dec, cpu),
                        us(ns)
                    ),
                    ns,
                );
            }
            // The hard interrupt the thread was woken in (its timer's),
            // going on after the wake-up: what is left of it without an
            // event (the callbacks of other timers are events of their
            // own) is a few instructions, a long stretch the CPU held.
            let waker = (w.irq_cpu == cpu)
                .then(|| holders(events, cpu, irq_t, wake_t).2)
                .flatten();
            if let (Some(c), true) = (handler(h), waker == Some(h)) {
                return mk(
                    Cause::HardwareOrHypervisor,
                    format!(
                        "the interrupt the thread was woken in ({}) went on {} on CPU {cpu} after the wake-up with no event in between: what is left of it then is a few instructions, interrupts off; the hardware, firmware or hypervisor held the CPU",
                        c.label(),
                        us(ns)
                    ),
                    ns,
                );
            }
            if let Some(c) = handler(h) {
                let ev = format!(
                    "{} ran {} on CPU {cpu} between the wake-up and the return",
                    c.label(),
                    us(ns)
                );
                return mk(c, ev, ns);
            }
            match h {
                Holder::Task(p) if p == w.tid => mk(
                    Cause::Unknown,
                    format!(
                        "the thread itself was current on CPU {cpu} for {} after its wake-up ({inside} events): kernel work no event covers, or the host",
                        us(ns)
                    ),
                    ns,
                ),
                Holder::Task(0) if inside == 0 => mk(
                    Cause::HardwareOrHypervisor,
                    format!(
                        "CPU {cpu} stayed idle for {} after the wake-up with no kernel event: the host did not run it",
                        us(ns)
                    ),
                    ns,
                ),
                Holder::Task(0) => mk(
                    Cause::Unknown,
                    format!(
                        "CPU {cpu} ran the idle task for {} after the wake-up ({inside} events) with no throttling seen",
                        us(ns)
                    ),
                    ns,
                ),
                Holder::Task(p) => {
                    let kp = watch.prio.get(&p).copied();
                    let Some(kp) = kp else {
                        return mk(
                            Cause::Unknown,
                            format!(
                                "{} held CPU {cpu} for {} after the wake-up; its priority was not seen",
                                dec.task_name(p, cpu),
                                us(ns)
                            ),
                            ns,
                        );
                    };
                    let (pol, prio) = policy(kp);
                    let outranked = own.is_some_and(|o| kp < o);
                    let lower = own.is_some_and(|o| kp > o);
                    // A lower priority keeps the CPU past an interrupt's
                    // return only in kernel code that cannot be preempted
                    // (in user space, the return switches to the thread):
                    // interrupts after the waking one, with the task still
                    // current, show it. Without one, or with two thirds of
                    // the stage silent (no event, not even the tick:
                    // interrupts off, or the vCPU not run), the host not
                    // running the CPU looks the same.
                    let quiet = longest_quiet(events, cpu, wake_t, upto);
                    if let Some((a, b, off)) = off_for(cpu, p, wake_t, upto).filter(|_| lower) {
                        return mk(
                            Cause::IrqsOrPreemptOff,
                            format!(
                                "interrupts were off on CPU {cpu} in {}'s kernel code for {} after the wake-up ({} in all), holding the thread ({pol} {prio} was below it)",
                                dec.task_name(p, cpu),
                                us(off),
                                us(b - a)
                            ),
                            off,
                        );
                    }
                    if lower
                        && (later_interrupts(events, cpu, wake_t, upto) == 0
                            || quiet * 3 >= stage_ns * 2)
                    {
                        return mk(
                            Cause::Unknown,
                            format!(
                                "{} ({pol} {prio}, below the thread) was current on CPU {cpu} for {} after the wake-up, with no kernel event for {}: non-preemptible kernel code with interrupts off, or the host not running the CPU",
                                dec.task_name(p, cpu),
                                us(ns),
                                us(quiet)
                            ),
                            ns,
                        );
                    }
                    let comm = dec.comms.get(&p).cloned().unwrap_or_default();
                    let c = Cause::TaskHeldCpu {
                        comm,
                        pid: p,
                        policy: pol.into(),
                        prio,
                        outranked,
                        kernel_nonpreemptible: lower,
                    };
                    let ev = format!(
                        "{} ({pol} {prio}) held CPU {cpu} for {} after the wake-up{}",
                        dec.task_name(p, cpu),
                        us(ns),
                        if outranked {
                            ", outranking the thread"
                        } else {
                            ""
                        }
                    );
                    mk(c, ev, ns)
                }
                _ => mk(
                    Cause::Unknown,
                    format!("{} ran {} on CPU {cpu} after the wake-up", holder_name(h, dec, cpu), us(ns)),
                    ns,
                ),
            }
        }
        _ => mk(
            Cause::Unknown,
            format!(
                "{} passed after the return to user space, before rtscope read the clock (no kernel event covers it)",
                us(stage_ns)
            ),
            stage_ns,
        ),
    }
}

/// Interrupts that began on `cpu` in `(from, to)` after the one running at
/// `from` (the wake-up's) returned.
fn later_interrupts(events: &[Event], cpu: u32, from: u64, to: u64) -> usize {
    let mut evs = events
        .iter()
        .filter(|e| e.cpu == cpu && e.ts > from && e.ts < to);
    let mut depth = 1i32;
    for e in evs.by_ref() {
        match e.kind {
            Kind::IrqEntry { .. } | Kind::VectorEntry { .. } => depth += 1,
            Kind::IrqExit { .. } | Kind::VectorExit { .. } => depth -= 1,
            _ => {}
        }
        if depth <= 0 {
            break;
        }
    }
    evs.filter(|e| matches!(e.kind, Kind::IrqEntry { .. } | Kind::VectorEntry { .. }))
        .count()
}

/// The longest section of `cpu` with interrupts off (`preemptirq`
/// `irq_disable` to `irq_enable`, in a task's context: the idle loop's are
/// not sections) that overlaps `[from, to)`: (start, end, the task's pid).
fn irqs_off(events: &[Event], cpu: u32, from: u64, to: u64) -> Option<(u64, u64, i32)> {
    let mut open: Option<(u64, i32)> = None;
    let mut best: Option<(u64, u64, i32)> = None;
    let overlap = |a: u64, b: u64| b.min(to).saturating_sub(a.max(from));
    for e in events.iter().filter(|e| e.cpu == cpu) {
        match e.kind {
            Kind::IrqsOff { .. } => {
                open.get_or_insert((e.ts, e.pid));
            }
            Kind::Lost => open = None,
            Kind::IrqsOn { .. } => {
                if let Some((a, pid)) = open.take() {
                    if pid > 0 && overlap(a, e.ts) > best.map_or(0, |(x, y, _)| overlap(x, y)) {
                        best = Some((a, e.ts, pid));
                    }
                }
            }
            _ => {}
        }
        if e.ts >= to && open.is_none() {
            break;
        }
    }
    best
}

/// The longest stretch of `[from, to]` with no event on `cpu`, ns.
fn longest_quiet(events: &[Event], cpu: u32, from: u64, to: u64) -> u64 {
    let mut last = from;
    let mut quiet = 0;
    for e in events
        .iter()
        .filter(|e| e.cpu == cpu && e.ts > from && e.ts < to)
    {
        quiet = quiet.max(e.ts - last);
        last = e.ts;
    }
    quiet.max(to.saturating_sub(last))
}

fn signed_us(ns: i64) -> String {
    let s = if ns < 0 { "-" } else { "+" };
    format!("{s}{}", us(ns.unsigned_abs()))
}

fn holder_name(h: Holder, dec: &Decoder, cpu: u32) -> String {
    match h {
        Holder::Task(p) => dec.task_name(p, cpu),
        Holder::Irq(n) => format!("irq {n}"),
        Holder::Softirq(v) => format!("softirq {}", softirq_name(v)),
        Holder::Vector(v) => format!("irq vector {}", dec.vector_name(v)),
        Holder::Hrtimer => "an hrtimer callback".into(),
        Holder::Nmi => "an NMI".into(),
    }
}

/// One outlier with its cause, as the result keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutlierCause {
    /// The series (thread) of the sample.
    pub series: String,
    /// Its sequence number in the series.
    pub seq: u64,
    /// rtscope's stamp, ns.
    pub t_ns: u64,
    /// The CPU it returned on.
    pub cpu: u32,
    /// Its latency, ns.
    pub latency_ns: i64,
    /// The cause, its evidence and share.
    #[serde(flatten)]
    pub diagnosis: Diagnosis,
}

/// One row of a [`CauseTable`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CauseRow {
    /// The cause.
    pub cause: Cause,
    /// [`Cause::label`].
    pub label: String,
    /// Outliers with this cause.
    pub count: u64,
    /// Their part of all outliers, 0 to 1.
    pub share: f64,
    /// The worst of them, ns.
    pub worst_ns: i64,
    /// The evidence of the worst.
    pub worst_evidence: String,
    /// Outliers per CPU (of the wake-up's return).
    pub per_cpu: BTreeMap<u32, u64>,
    /// [`Cause::remedy`].
    pub remedy: String,
}

/// The causes of a run's outliers: count, share, worst and CPUs per cause,
/// most frequent first.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CauseTable {
    /// The outlier threshold, ns.
    pub threshold_ns: u64,
    /// Outliers diagnosed.
    pub outliers: u64,
    /// One row per cause.
    pub rows: Vec<CauseRow>,
}

impl CauseTable {
    /// An empty table for outliers above `threshold_ns`.
    pub fn new(threshold_ns: u64) -> Self {
        CauseTable {
            threshold_ns,
            ..Default::default()
        }
    }

    /// Counts one outlier of `latency_ns` on `cpu`.
    pub fn add(&mut self, d: &Diagnosis, cpu: u32, latency_ns: i64) {
        self.outliers += 1;
        let label = d.cause.label();
        let i = match self.rows.iter().position(|r| r.label == label) {
            Some(i) => i,
            None => {
                self.rows.push(CauseRow {
                    cause: d.cause.clone(),
                    label,
                    count: 0,
                    share: 0.0,
                    worst_ns: i64::MIN,
                    worst_evidence: String::new(),
                    per_cpu: BTreeMap::new(),
                    remedy: d.cause.remedy().into(),
                });
                self.rows.len() - 1
            }
        };
        let r = &mut self.rows[i];
        r.count += 1;
        *r.per_cpu.entry(cpu).or_default() += 1;
        if latency_ns > r.worst_ns {
            r.worst_ns = latency_ns;
            r.worst_evidence = d.evidence.clone();
        }
        let n = self.outliers as f64;
        for r in &mut self.rows {
            r.share = r.count as f64 / n;
        }
        self.rows
            .sort_by(|a, b| b.count.cmp(&a.count).then(b.worst_ns.cmp(&a.worst_ns)));
    }

    /// The main cause in one sentence: `83 % of outliers above 100 µs on CPU
    /// 1: irq 24 virtio0-input, worst 412 µs` (`None`: no outlier).
    pub fn sentence(&self) -> Option<String> {
        let r = self.rows.first()?;
        let cpus: Vec<String> = r.per_cpu.keys().map(|c| c.to_string()).collect();
        let on = match cpus.len() {
            1 => format!(" on CPU {}", cpus[0]),
            _ => format!(" on CPUs {}", cpus.join(",")),
        };
        Some(format!(
            "{:.0} % of outliers above {}{on}: {}, worst {}",
            r.share * 100.0,
            us(self.threshold_ns),
            r.label,
            us(r.worst_ns.max(0) as u64)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TID: i32 = 42;
    /// SCHED_FIFO 95.
    const OWN: i32 = 4;

    fn ev(ts: u64, cpu: u32, pid: i32, kind: Kind) -> Event {
        Event { ts, cpu, pid, kind }
    }

    fn switch(prev: i32, next: i32, runnable: bool, pp: i32, np: i32) -> Kind {
        Kind::Switch {
            prev_pid: prev,
            next_pid: next,
            prev_runnable: runnable,
            prev_prio: pp,
            next_prio: np,
        }
    }

    /// A wake-up of TID on CPU 1 expiring at 1 ms: interrupt at `irq`,
    /// woken 2 µs later, switched in at `sw`, returned 2 µs after that,
    /// read by rtscope 1 µs later.
    fn wake(irq: u64, sw: Option<u64>, exit: u64) -> (KernelWake, Stages, i64) {
        let w = KernelWake {
            tid: TID,
            expires_ns: 1_000_000,
            timer_fn: 0xf,
            armed_ns: 0,
            armed_cpu: 1,
            irq_ns: Some(irq),
            irq_cpu: 1,
            waking_ns: Some(irq + 2_000),
            switch_ns: sw,
            switch_prev: None,
            exit_ns: Some(exit),
            exit_cpu: 1,
        };
        let s = crate::sample::Sample {
            seq: 0,
            t_ns: exit + 1_000,
            latency_ns: (exit + 1_000 - 1_000_000) as i64,
            overruns: 0,
            cpu: 1,
        };
        (w, Stages::of(&s, &w).unwrap(), s.latency_ns)
    }

    fn run(w: &KernelWake, st: &Stages, lat: i64, evs: &[Event], dec: &Decoder) -> Diagnosis {
        let mut watch = SchedWatch::default();
        watch.prio.insert(TID, OWN);
        for e in evs {
            watch.event(e);
        }
        let o = Outlier {
            wake: w,
            stages: st,
            latency_ns: lat,
            own_prio: Some(OWN),
        };
        diagnose(&o, evs, dec, &watch)
    }

    fn dec() -> Decoder {
        let mut d = Decoder::default();
        d.comms.insert(77, "hog".into());
        d.comms.insert(88, "make".into());
        d.irq_names.insert(24, "virtio0-input".into());
        d
    }

    #[test]
    fn a_higher_priority_task_is_named_with_its_priority() {
        // hog (FIFO 99 = kernel 0) runs from 0.9 ms to 2.9 ms; the thread is
        // woken at 1.002 ms and switched in when hog sleeps.
        let (w, st, lat) = wake(1_000_000, Some(2_900_000), 2_902_000);
        let evs = [
            ev(900_000, 1, 0, switch(0, 77, false, 120, 0)),
            ev(
                1_000_000,
                1,
                77,
                Kind::HrtimerEntry {
                    hrtimer: 1,
                    function: 0xf,
                    now: 1_000_000,
                },
            ),
            ev(
                1_002_000,
                1,
                77,
                Kind::Waking {
                    pid: TID,
                    target_cpu: 1,
                },
            ),
            ev(1_003_000, 1, 77, Kind::HrtimerExit),
            ev(2_900_000, 1, 77, switch(77, TID, false, 0, OWN)),
            ev(2_902_000, 1, TID, Kind::SysExit { nr: 230 }),
        ];
        let d = run(&w, &st, lat, &evs, &dec());
        assert_eq!(
            d.cause,
            Cause::TaskHeldCpu {
                comm: "hog".into(),
                pid: 77,
                policy: "fifo/rr".into(),
                prio: 99,
                outranked: true,
                kernel_nonpreemptible: false
            }
        );
        assert_eq!(d.cause_ns, 1_897_000);
        assert_eq!(d.stage, "switch+return");
        assert!(d.share > 0.9, "{d:?}");
        assert!(
            d.evidence.contains("hog[77] (fifo/rr 99) held CPU 1"),
            "{}",
            d.evidence
        );
        // A lower priority task that kept the CPU: non-preemptible kernel code.
        let mut evs = evs;
        for e in &mut evs {
            if e.pid == 77 {
                e.pid = 88;
            }
        }
        evs[0] = ev(900_000, 1, 0, switch(0, 88, false, 120, 120));
        evs[4] = ev(2_900_000, 1, 88, switch(88, TID, true, 120, OWN));
        // With no interrupt after the waking one: it may have been the host.
        let d = run(&w, &st, lat, &evs, &dec());
        assert_eq!(d.cause, Cause::Unknown, "{d:?}");
        assert!(d.evidence.contains("or the host"), "{}", d.evidence);
        // A tick at 2 ms that returned to it: it was in the kernel.
        let mut evs = evs.to_vec();
        evs.insert(4, ev(1_004_000, 1, 88, Kind::VectorExit { vector: 0 }));
        evs.insert(5, ev(2_000_000, 1, 88, Kind::VectorEntry { vector: 0 }));
        evs.insert(6, ev(2_010_000, 1, 88, Kind::VectorExit { vector: 0 }));
        let d = run(&w, &st, lat, &evs, &dec());
        assert!(
            matches!(
                d.cause,
                Cause::TaskHeldCpu {
                    outranked: false,
                    kernel_nonpreemptible: true,
                    pid: 88,
                    prio: 120,
                    ..
                }
            ),
            "{d:?}"
        );
    }

    #[test]
    fn interrupts_off_in_a_tasks_kernel_code_are_named_where_the_kernel_shows_them() {
        // make (normal, pid 88) current; interrupts off from 0.9 ms to
        // 5.99 ms (the lab's module on the bindeb-pkg kernel with
        // preemptirq events); the timer interrupt comes at 6 ms.
        let (w, st, lat) = wake(6_000_000, Some(6_010_000), 6_020_000);
        let off = [
            ev(100_000, 1, 88, switch(0, 88, false, 120, 120)),
            ev(900_000, 1, 88, Kind::IrqsOff { caller: 0x1234 }),
            ev(5_990_000, 1, 88, Kind::IrqsOn { caller: 0x1250 }),
            ev(
                6_000_000,
                1,
                88,
                Kind::HrtimerEntry {
                    hrtimer: 1,
                    function: 0xf,
                    now: 6_000_000,
                },
            ),
            ev(
                6_002_000,
                1,
                88,
                Kind::Waking {
                    pid: TID,
                    target_cpu: 1,
                },
            ),
            ev(6_003_000, 1, 88, Kind::HrtimerExit),
            ev(6_010_000, 1, 88, switch(88, TID, true, 120, OWN)),
            ev(6_020_000, 1, TID, Kind::SysExit { nr: 230 }),
        ];
        let d = run(&w, &st, lat, &off, &dec());
        assert_eq!(d.cause, Cause::IrqsOrPreemptOff, "{d:?}");
        assert!(
            d.evidence
                .starts_with("interrupts were off on CPU 1 in make[88]'s kernel code for 5090 µs (from -100 µs to +4990 µs of the expiry)"),
            "{}",
            d.evidence
        );
        assert_eq!(d.cause_ns, 4_990_000);
        // Without the preemptirq events: unknown, as before.
        let none: Vec<Event> = off
            .iter()
            .copied()
            .filter(|e| !matches!(e.kind, Kind::IrqsOff { .. } | Kind::IrqsOn { .. }))
            .collect();
        assert_eq!(run(&w, &st, lat, &none, &dec()).cause, Cause::Unknown);
        // A section of a third of the gap: not the cause.
        let mut short = off;
        short[1] = ev(4_300_000, 1, 88, Kind::IrqsOff { caller: 0x1234 });
        assert_eq!(run(&w, &st, lat, &short, &dec()).cause, Cause::Unknown);
        // A loss inside the section: its end is not known.
        let mut lost = off.to_vec();
        lost.insert(2, ev(3_000_000, 1, 88, Kind::Lost));
        assert_ne!(
            run(&w, &st, lat, &lost, &dec()).cause,
            Cause::IrqsOrPreemptOff
        );
        // The idle loop's "off" (it sleeps with interrupts off as the
        // tracepoints see it) is not a section: hardware/hypervisor.
        let idle: Vec<Event> = off
            .iter()
            .map(|e| match e.kind {
                Kind::Switch { .. } if e.ts == 100_000 => {
                    ev(100_000, 1, 0, switch(88, 0, false, 120, 120))
                }
                Kind::Switch { .. } => ev(e.ts, 1, 0, switch(0, TID, false, 120, OWN)),
                _ if e.pid == 88 => Event { pid: 0, ..*e },
                _ => *e,
            })
            .collect();
        assert_eq!(
            run(&w, &st, lat, &idle, &dec()).cause,
            Cause::HardwareOrHypervisor
        );
        // After the wake-up: a lower task (rcuc/1-like, FIFO 1) keeps the
        // CPU with interrupts off through two thirds of the stage or more.
        let (w, st, lat) = wake(1_000_000, Some(6_000_000), 6_010_000);
        let mut d0 = dec();
        d0.comms.insert(26, "rcuc/1".into());
        let after = [
            ev(100_000, 1, 26, switch(TID, 26, false, OWN, 98)),
            ev(1_000_000, 1, 26, Kind::IrqEntry { irq: 11 }),
            ev(
                1_002_000,
                1,
                26,
                Kind::Waking {
                    pid: TID,
                    target_cpu: 1,
                },
            ),
            ev(1_003_000, 1, 26, Kind::IrqExit { irq: 11 }),
            ev(1_100_000, 1, 26, Kind::IrqsOff { caller: 0x99 }),
            ev(5_900_000, 1, 26, Kind::IrqsOn { caller: 0x9a }),
            ev(5_901_000, 1, 26, Kind::IrqEntry { irq: 11 }),
            ev(5_910_000, 1, 26, Kind::IrqExit { irq: 11 }),
            ev(6_000_000, 1, 26, switch(26, TID, true, 98, OWN)),
            ev(6_010_000, 1, TID, Kind::SysExit { nr: 230 }),
        ];
        let d = run(&w, &st, lat, &after, &d0);
        assert_eq!(d.cause, Cause::IrqsOrPreemptOff, "{d:?}");
        assert!(
            d.evidence
                .contains("rcuc/1[26]'s kernel code for 4800 µs after the wake-up"),
            "{}",
            d.evidence
        );
    }

    #[test]
    fn a_task_that_preempts_the_thread_before_its_return_is_named() {
        // The 6.1 RT arm64 guest's hog: the thread is switched in 0.14 ms
        // after its wake-up, preempted by hog (FIFO 99) in the kernel
        // before its return, and returns 40 ms later: hog held it (it was
        // "nothing held most": only the wait for the first switch was read).
        let (w, st, lat) = wake(1_000_000, Some(1_140_000), 41_300_000);
        let mut evs = vec![
            ev(900_000, 1, 0, switch(TID, 0, false, OWN, 120)),
            ev(
                1_002_000,
                1,
                0,
                Kind::Waking {
                    pid: TID,
                    target_cpu: 1,
                },
            ),
            ev(1_140_000, 1, 0, switch(0, TID, true, 120, OWN)),
            ev(1_270_000, 1, TID, switch(TID, 77, true, OWN, 0)),
        ];
        for k in 1..40u64 {
            evs.push(ev(
                1_270_000 + k * 1_000_000,
                1,
                77,
                Kind::VectorEntry { vector: 0 },
            ));
            evs.push(ev(
                1_280_000 + k * 1_000_000,
                1,
                77,
                Kind::VectorExit { vector: 0 },
            ));
        }
        evs.push(ev(41_200_000, 1, 77, switch(77, TID, false, 0, OWN)));
        evs.push(ev(41_300_000, 1, TID, Kind::SysExit { nr: 230 }));
        let d = run(&w, &st, lat, &evs, &dec());
        assert!(
            matches!(&d.cause, Cause::TaskHeldCpu { comm, outranked: true, prio: 99, .. } if comm == "hog"),
            "{d:?}"
        );
        assert!(d.share > 0.9, "{d:?}");
    }

    #[test]
    fn a_throttled_rt_class_is_rt_throttling() {
        // spin (FIFO 1 = kernel 98) is set aside for idle at 0.5 ms: the RT
        // class is throttled; the thread is woken at 1.002 ms and returns at
        // 30 ms, without a recorded switch in.
        let (w, st, lat) = wake(1_000_000, None, 30_000_000);
        let mut d0 = dec();
        d0.comms.insert(55, "spin".into());
        let evs = [
            ev(100_000, 1, 0, switch(0, 55, false, 120, 98)),
            ev(500_000, 1, 55, switch(55, 0, true, 98, 120)),
            ev(
                1_000_000,
                1,
                0,
                Kind::HrtimerEntry {
                    hrtimer: 1,
                    function: 0xf,
                    now: 1_000_000,
                },
            ),
            ev(
                1_002_000,
                1,
                0,
                Kind::Waking {
                    pid: TID,
                    target_cpu: 1,
                },
            ),
            ev(1_003_000, 1, 0, Kind::HrtimerExit),
            ev(5_000_000, 1, 0, Kind::VectorEntry { vector: 0 }),
            ev(5_010_000, 1, 0, Kind::VectorExit { vector: 0 }),
            ev(30_000_000, 1, TID, Kind::SysExit { nr: 230 }),
        ];
        let d = run(&w, &st, lat, &evs, &d0);
        assert_eq!(d.cause, Cause::RtThrottling, "{d:?}");
        assert!(
            d.evidence.contains("spin[55] was set aside"),
            "{}",
            d.evidence
        );
        assert!(d.share > 0.9);
        // Without the switch that set spin aside, the idle stretch (with a
        // tick in it) is not named.
        let d = run(&w, &st, lat, &[&evs[..1], &evs[2..]].concat(), &d0);
        assert_eq!(d.cause, Cause::Unknown, "{d:?}");
        // The throttled stretch ends when an RT task runs again: a later
        // wake-up is not throttled.
        let mut watch = SchedWatch::default();
        watch.prio.insert(TID, OWN);
        for e in &evs {
            watch.event(e);
        }
        assert_eq!(
            watch.throttled(1, 1_000_000, 2_000_000).map(|t| t.0),
            Some(500_000)
        );
        assert!(watch.throttled(1, 30_000_001, 40_000_000).is_none());
        assert!(watch.throttled(0, 1_000_000, 2_000_000).is_none());
        // spin set aside (perhaps pulled to a CPU not traced), but what held
        // the CPU after the wake-up was an interrupt handler and a real-time
        // task: the handler is named, not throttling (a TCG guest's
        // arch_timer took 12.7 ms; it was named throttling).
        let held = [
            evs[0],
            evs[1],
            evs[2],
            evs[3],
            evs[4],
            ev(1_004_000, 1, 0, Kind::IrqEntry { irq: 11 }),
            ev(24_000_000, 1, 0, Kind::IrqExit { irq: 11 }),
            ev(24_001_000, 1, 0, switch(0, 25, false, 120, 0)),
            ev(29_000_000, 1, 25, switch(25, TID, false, 0, OWN)),
            evs[6],
        ];
        let d = run(&w, &st, lat, &held, &d0);
        assert_eq!(
            d.cause,
            Cause::IrqHandler {
                irq: Some(11),
                name: String::new()
            },
            "{d:?}"
        );
        assert!(d.evidence.starts_with("irq 11 ran"), "{}", d.evidence);
    }

    #[test]
    fn a_lower_task_current_through_a_silent_stretch_is_not_named() {
        // The 6.1 RT arm64 guest's flood (TCG): rcuc/1 (FIFO 1, kernel 98)
        // current, the thread (kernel 59) woken by the tick's handler in
        // its context at 1.0165 ms; no event at all for the next 5 ms, not
        // even a tick, then the tick and the switch to the thread. The
        // task kept the CPU with interrupts off, or the host stalled the
        // vCPU: named neither way (it was "rcuc/1 held CPU 1").
        let (w, st, lat) = wake(1_110_000, Some(6_310_000), 6_363_000);
        let mut d0 = dec();
        d0.comms.insert(26, "rcuc/1".into());
        let t = |us: u64| 1_000_000 + us * 1000;
        let evs = [
            ev(t(54), 1, TID, switch(TID, 26, false, 59, 98)),
            ev(t(100), 1, 26, Kind::IrqEntry { irq: 11 }),
            ev(
                t(110),
                1,
                26,
                Kind::HrtimerEntry {
                    hrtimer: 1,
                    function: 0xf,
                    now: t(110),
                },
            ),
            ev(
                t(112),
                1,
                26,
                Kind::Waking {
                    pid: TID,
                    target_cpu: 1,
                },
            ),
            ev(t(140), 1, 26, Kind::HrtimerExit),
            ev(t(168), 1, 26, Kind::IrqExit { irq: 11 }),
            ev(t(5_193), 1, 26, Kind::IrqEntry { irq: 11 }),
            ev(t(5_280), 1, 26, Kind::IrqExit { irq: 11 }),
            ev(t(5_310), 1, 26, switch(26, TID, true, 98, 59)),
            ev(t(5_363), 1, TID, Kind::SysExit { nr: 115 }),
        ];
        let run59 = |evs: &[Event]| {
            let mut watch = SchedWatch::default();
            watch.prio.insert(TID, 59);
            for e in evs {
                watch.event(e);
            }
            let o = Outlier {
                wake: &w,
                stages: &st,
                latency_ns: lat,
                own_prio: Some(59),
            };
            diagnose(&o, evs, &d0, &watch)
        };
        let d = run59(&evs);
        assert_eq!(d.cause, Cause::Unknown, "{d:?}");
        assert!(d.evidence.contains("rcuc/1[26]"), "{}", d.evidence);
        assert!(
            d.evidence.contains("no kernel event for 5025 µs"),
            "{}",
            d.evidence
        );
        // With the ticks on time (every millisecond) the task was running
        // kernel code that interrupts did not preempt: named.
        let mut ticking = evs.to_vec();
        for k in 1..5u64 {
            ticking.push(ev(t(168 + k * 1000), 1, 26, Kind::IrqEntry { irq: 11 }));
            ticking.push(ev(t(178 + k * 1000), 1, 26, Kind::IrqExit { irq: 11 }));
        }
        ticking.sort_by_key(|e| e.ts);
        let d = run59(&ticking);
        assert!(
            matches!(
                d.cause,
                Cause::TaskHeldCpu {
                    pid: 26,
                    outranked: false,
                    kernel_nonpreemptible: true,
                    ..
                }
            ),
            "{d:?}"
        );
    }

    #[test]
    fn a_stretch_a_higher_task_ends_after_the_wake_up_is_that_task() {
        // spin (kernel 98) is set aside for idle at 0.5 ms (as a task that
        // went on to run on an untraced CPU stays set aside), the thread is
        // woken at 1.002 ms and hog (FIFO 99 = kernel 0) is switched in at
        // 1.01 ms and holds the CPU until the thread runs at 30 ms: the hog
        // held the thread, not throttling (the lab's FIFO 99 hog was named
        // RT throttling in half its outliers).
        let (w, st, lat) = wake(1_000_000, Some(30_000_000), 30_002_000);
        let mut d0 = dec();
        d0.comms.insert(55, "spin".into());
        d0.comms.insert(77, "hog".into());
        let evs = [
            ev(100_000, 1, 0, switch(0, 55, false, 120, 98)),
            ev(500_000, 1, 55, switch(55, 0, true, 98, 120)),
            ev(
                1_002_000,
                1,
                0,
                Kind::Waking {
                    pid: TID,
                    target_cpu: 1,
                },
            ),
            ev(1_010_000, 1, 0, switch(0, 77, false, 120, 0)),
            ev(30_000_000, 1, 77, switch(77, TID, true, 0, OWN)),
            ev(30_002_000, 1, TID, Kind::SysExit { nr: 230 }),
        ];
        let d = run(&w, &st, lat, &evs, &d0);
        assert!(
            matches!(&d.cause, Cause::TaskHeldCpu { comm, outranked: true, .. } if comm == "hog"),
            "{d:?}"
        );
    }

    #[test]
    fn a_stretch_opens_only_where_the_runtime_could_be_used_up() {
        const MS: u64 = 1_000_000;
        let watch_of = |bw: Option<(u64, u64)>, evs: &[Event]| {
            let mut w = SchedWatch::with_rt_bandwidth(bw);
            for e in evs {
                w.event(e);
            }
            w
        };
        let bw = Some((1000 * MS, 950 * MS));
        // The 6.1 RT arm64 guest's flood: rcu_preempt (kernel 98) preempted
        // and waiting at 1 ms (then pulled to a CPU not traced, unseen);
        // the CPU runs mostly idle or normal tasks for 1.5 s, then goes idle
        // again: nothing real-time could have used 950 ms of the last
        // second, so nothing was throttled (it was named RT throttling).
        let stale = [
            ev(0, 1, 0, switch(0, 16, false, 120, 98)),
            ev(MS, 1, 16, switch(16, 77, true, 98, 0)),
            ev(2 * MS, 1, 77, switch(77, 88, false, 0, 120)),
            ev(1500 * MS, 1, 88, switch(88, 0, false, 120, 120)),
        ];
        assert!(watch_of(bw, &stale)
            .throttled(1, 1500 * MS, 1600 * MS)
            .is_none());
        // Without the bandwidth, as before: set aside from 2 ms.
        assert_eq!(
            watch_of(None, &stale).throttled(1, 1500 * MS, 1600 * MS),
            Some((2 * MS, None, 16))
        );
        // A real-time spinner current for 1.2 s, then set aside for idle
        // while runnable: throttled.
        let spin = [
            ev(0, 1, 0, switch(0, 55, false, 120, 98)),
            ev(1200 * MS, 1, 55, switch(55, 0, true, 98, 120)),
        ];
        assert_eq!(
            watch_of(bw, &spin).throttled(1, 1200 * MS, 1210 * MS),
            Some((1200 * MS, None, 55))
        );
        // The same with the spinner current since before the trace: its
        // first switch comes at 1.2 s, and the time before is not seen.
        assert_eq!(
            watch_of(bw, &spin[1..]).throttled(1, 1200 * MS, 1210 * MS),
            Some((1200 * MS, None, 55))
        );
        // 800 ms of real-time in the last second: short of 90 % of 950 ms.
        let short = [
            ev(0, 1, 0, switch(0, 88, false, 120, 120)),
            ev(400 * MS, 1, 88, switch(88, 55, false, 120, 98)),
            ev(1200 * MS, 1, 55, switch(55, 0, true, 98, 120)),
        ];
        assert!(watch_of(bw, &short)
            .throttled(1, 1200 * MS, 1210 * MS)
            .is_none());
        // A loss: what ran before it is not known, and may have been real-time.
        let lost = [
            ev(0, 1, 0, switch(0, 88, false, 120, 120)),
            ev(1100 * MS, 1, 88, Kind::Lost),
            ev(1150 * MS, 1, 0, switch(0, 55, false, 120, 98)),
            ev(1200 * MS, 1, 55, switch(55, 0, true, 98, 120)),
        ];
        assert!(watch_of(bw, &lost)
            .throttled(1, 1200 * MS, 1210 * MS)
            .is_some());
    }

    #[test]
    fn throttling_begun_under_another_rt_task_is_seen() {
        // spin (kernel 98) is preempted by the thread (runnable, waiting);
        // the budget runs out while the thread runs: it sleeps, and the CPU
        // goes idle with spin still runnable: throttled from there.
        let mut watch = SchedWatch::default();
        for e in [
            ev(100, 1, 0, switch(0, 55, false, 120, 98)),
            ev(200, 1, 55, switch(55, TID, true, 98, OWN)),
            ev(300, 1, TID, switch(TID, 0, false, OWN, 120)),
        ] {
            watch.event(&e);
        }
        assert_eq!(watch.throttled(1, 400, 500), Some((300, None, 55)));
        // Switched back in: no longer waiting, the stretch ends.
        watch.event(&ev(600, 1, 0, switch(0, 55, false, 120, 98)));
        assert_eq!(watch.throttled(1, 400, 500), Some((300, Some(600), 55)));
        watch.event(&ev(700, 1, 55, switch(55, TID, true, 98, OWN)));
        watch.event(&ev(800, 1, TID, switch(TID, 55, false, OWN, 98)));
        watch.event(&ev(900, 1, 55, switch(55, 0, false, 98, 120)));
        assert!(watch.throttled(1, 650, 2_000).is_none());
        // A waiting task switched in on another CPU no longer waits here;
        // a loss forgets the CPU's waiting tasks.
        watch.event(&ev(1_000, 1, 0, switch(0, 55, false, 120, 98)));
        watch.event(&ev(1_100, 1, 55, switch(55, TID, true, 98, OWN)));
        watch.event(&ev(1_200, 0, 0, switch(0, 55, false, 120, 98)));
        watch.event(&ev(1_300, 1, TID, switch(TID, 0, false, OWN, 120)));
        assert!(watch.throttled(1, 1_000, 2_000).is_none());
        watch.event(&ev(1_400, 0, 55, switch(55, TID, true, 98, OWN)));
        watch.event(&ev(1_500, 0, -1, Kind::Lost));
        watch.event(&ev(1_600, 0, TID, switch(TID, 0, false, OWN, 120)));
        assert!(watch.throttled(0, 1_000, 2_000).is_none());
    }

    #[test]
    fn a_late_timer_is_the_handler_that_covered_it_or_the_machine() {
        // irq 24 runs 0.95 ms to 1.4 ms; the timer interrupt comes at 1.4 ms.
        let (w, st, lat) = wake(1_400_000, None, 1_405_000);
        let evs = [
            ev(950_000, 1, 0, Kind::IrqEntry { irq: 24 }),
            ev(1_399_000, 1, 0, Kind::IrqExit { irq: 24 }),
            ev(1_399_500, 1, 0, Kind::VectorEntry { vector: 0 }),
            ev(
                1_402_000,
                1,
                0,
                Kind::Waking {
                    pid: TID,
                    target_cpu: 1,
                },
            ),
        ];
        let d = run(&w, &st, lat, &evs, &dec());
        assert_eq!(
            d.cause,
            Cause::IrqHandler {
                irq: Some(24),
                name: "virtio0-input".into()
            }
        );
        assert_eq!((d.cause_ns, d.stage.as_str()), (399_000, "timer"));
        assert!(d
            .evidence
            .starts_with("irq 24 virtio0-input ran 399 µs on CPU 1"));
        // No event between the expiry and the interrupt, the CPU idle.
        let d = run(&w, &st, lat, &evs[2..], &dec());
        assert_eq!(d.cause, Cause::HardwareOrHypervisor, "{d:?}");
        assert!(d.evidence.contains("the CPU idle"), "{}", d.evidence);
        // The same with a task current: interrupts off in its kernel code
        // look the same without preemptirq events, so neither is named.
        let busy: Vec<Event> = evs[2..]
            .iter()
            .map(|e| ev(e.ts, e.cpu, 55, e.kind))
            .collect();
        let d = run(&w, &st, lat, &busy, &dec());
        assert_eq!(d.cause, Cause::Unknown, "{d:?}");
        assert!(
            d.evidence
                .contains("interrupts off in its kernel code, or the hardware"),
            "{}",
            d.evidence
        );
    }

    #[test]
    fn a_stall_inside_the_timers_own_interrupt_is_the_machine() {
        // The 6.1 RT arm64 guest, the host stopping qemu 600 ms: arch_timer
        // (irq 11) entered 40 µs after the expiry, the timer run in it
        // 604 ms later, nothing in between.
        let (w, st, lat) = wake(605_040_000, None, 605_100_000);
        let mut d = dec();
        d.irq_names.insert(11, "arch_timer".into());
        let evs = [
            ev(1_040_000, 1, 55, Kind::IrqEntry { irq: 11 }),
            ev(
                605_040_000,
                1,
                55,
                Kind::HrtimerEntry {
                    hrtimer: 0x1,
                    function: 0xf,
                    now: 605_040_000,
                },
            ),
            ev(
                605_042_000,
                1,
                55,
                Kind::Waking {
                    pid: TID,
                    target_cpu: 1,
                },
            ),
            ev(605_043_000, 1, 55, Kind::HrtimerExit),
            ev(605_044_000, 1, 55, Kind::IrqExit { irq: 11 }),
        ];
        let r = run(&w, &st, lat, &evs, &d);
        assert_eq!(r.cause, Cause::HardwareOrHypervisor, "{r:?}");
        assert_eq!(r.cause_ns, 604_000_000);
        assert!(
            r.evidence
                .starts_with("the timer's own interrupt (irq 11 arch_timer) was entered in time"),
            "{}",
            r.evidence
        );
        // Another interrupt's handler that ran long before the timer's is
        // still that handler (the timer's own entry is not counted).
        let evs2 = [
            ev(1_010_000, 1, 55, Kind::IrqEntry { irq: 24 }),
            ev(605_000_000, 1, 55, Kind::IrqExit { irq: 24 }),
            ev(605_001_000, 1, 55, Kind::IrqEntry { irq: 11 }),
            ev(
                605_040_000,
                1,
                55,
                Kind::HrtimerEntry {
                    hrtimer: 0x1,
                    function: 0xf,
                    now: 605_040_000,
                },
            ),
        ];
        let r = run(&w, &st, lat, &evs2, &d);
        assert_eq!(
            r.cause,
            Cause::IrqHandler {
                irq: Some(24),
                name: "virtio0-input".into()
            },
            "{r:?}"
        );
        // Stopped inside the callback: the timer ran in time, the thread
        // woken 604 ms later.
        let (mut w, _, _) = wake(1_040_000, None, 605_100_000);
        w.waking_ns = Some(605_042_000);
        let s = crate::sample::Sample {
            seq: 0,
            t_ns: 605_101_000,
            latency_ns: 604_101_000,
            overruns: 0,
            cpu: 1,
        };
        let st = Stages::of(&s, &w).unwrap();
        let evs3 = [
            ev(1_020_000, 1, 55, Kind::IrqEntry { irq: 11 }),
            ev(
                1_040_000,
                1,
                55,
                Kind::HrtimerEntry {
                    hrtimer: 0x1,
                    function: 0xf,
                    now: 1_040_000,
                },
            ),
            evs[2],
            evs[3],
            evs[4],
        ];
        let r = run(&w, &st, s.latency_ns, &evs3, &d);
        assert_eq!(
            (r.cause.clone(), r.stage.as_str()),
            (Cause::HardwareOrHypervisor, "wakeup"),
            "{r:?}"
        );
        assert!(
            r.evidence
                .starts_with("the timer ran in its interrupt (irq 11 arch_timer)"),
            "{}",
            r.evidence
        );
        // Stopped inside it after the wake-up, before the thread could be
        // switched in: the same.
        let (w, st, lat) = wake(1_040_000, Some(605_050_000), 605_052_000);
        let evs5 = [
            ev(1_020_000, 1, 55, Kind::IrqEntry { irq: 11 }),
            ev(
                1_040_000,
                1,
                55,
                Kind::HrtimerEntry {
                    hrtimer: 0x1,
                    function: 0xf,
                    now: 1_040_000,
                },
            ),
            ev(
                1_042_000,
                1,
                55,
                Kind::Waking {
                    pid: TID,
                    target_cpu: 1,
                },
            ),
            ev(1_043_000, 1, 55, Kind::HrtimerExit),
            ev(605_044_000, 1, 55, Kind::IrqExit { irq: 11 }),
            ev(605_050_000, 1, 55, switch(55, TID, true, 120, OWN)),
        ];
        let r = run(&w, &st, lat, &evs5, &d);
        assert_eq!(
            (r.cause.clone(), r.stage.as_str()),
            (Cause::HardwareOrHypervisor, "switch+return"),
            "{r:?}"
        );
        assert!(
            r.evidence
                .starts_with("the interrupt the thread was woken in (irq 11 arch_timer) went on"),
            "{}",
            r.evidence
        );
        // Another interrupt after the wake-up is that interrupt.
        let evs6 = [
            evs5[0],
            evs5[1],
            evs5[2],
            evs5[3],
            ev(1_044_000, 1, 55, Kind::IrqExit { irq: 11 }),
            ev(1_045_000, 1, 55, Kind::IrqEntry { irq: 24 }),
            ev(605_044_000, 1, 55, Kind::IrqExit { irq: 24 }),
            evs5[5],
        ];
        let r = run(&w, &st, lat, &evs6, &d);
        assert_eq!(
            r.cause,
            Cause::IrqHandler {
                irq: Some(24),
                name: "virtio0-input".into()
            },
            "{r:?}"
        );
    }

    #[test]
    fn a_stall_on_the_threads_own_way_to_sleep_is_the_machine() {
        // The thread armed its timer at 0.5 ms and had not switched out
        // when the machine stopped: the timer interrupt 600 ms late.
        let (mut w, st, lat) = wake(601_000_000, None, 601_010_000);
        w.armed_ns = 500_000;
        let evs = [
            ev(
                500_000,
                1,
                TID,
                Kind::HrtimerStart {
                    hrtimer: 0x1,
                    function: 0xf,
                    expires: 1_000_000,
                    softexpires: 1_000_000,
                },
            ),
            ev(
                601_000_000,
                1,
                TID,
                Kind::HrtimerEntry {
                    hrtimer: 0x1,
                    function: 0xf,
                    now: 601_000_000,
                },
            ),
        ];
        let r = run(&w, &st, lat, &evs, &dec());
        assert_eq!(r.cause, Cause::HardwareOrHypervisor, "{r:?}");
        assert!(
            r.evidence
                .contains("the thread itself, on its way to sleep"),
            "{}",
            r.evidence
        );
        // Switched out and back in since (it slept, then ran again: in what
        // code, the events do not say): not named.
        let evs2 = [
            evs[0],
            ev(600_000, 1, TID, switch(TID, 77, false, OWN, 120)),
            ev(700_000, 1, 77, switch(77, TID, true, 120, OWN)),
            evs[1],
        ];
        let r = run(&w, &st, lat, &evs2, &dec());
        assert_eq!(r.cause, Cause::Unknown, "{r:?}");
        // Preempted on its way (switched out runnable) and back: still on
        // its way to sleep.
        let evs4 = [
            evs[0],
            ev(600_000, 1, TID, switch(TID, 77, true, OWN, 120)),
            ev(700_000, 1, 77, switch(77, TID, false, 120, OWN)),
            evs[1],
        ];
        let r = run(&w, &st, lat, &evs4, &dec());
        assert_eq!(r.cause, Cause::HardwareOrHypervisor, "{r:?}");
        // Another task current: not named either.
        let evs3 = [
            evs[0],
            ev(600_000, 1, TID, switch(TID, 77, false, OWN, 120)),
            evs[1],
        ];
        let r = run(&w, &st, lat, &evs3, &dec());
        assert_eq!(r.cause, Cause::Unknown, "{r:?}");
        assert!(r.evidence.contains("hog[77] running"), "{}", r.evidence);
    }

    #[test]
    fn a_thread_woken_elsewhere_or_sleeping_again_is_named_so() {
        let (mut w, _, _) = wake(1_000_000, None, 1_900_000);
        w.exit_cpu = 0;
        let s = crate::sample::Sample {
            seq: 0,
            t_ns: 1_901_000,
            latency_ns: 901_000,
            overruns: 0,
            cpu: 0,
        };
        let st = Stages::of(&s, &w).unwrap();
        let d = run(&w, &st, 901_000, &[], &dec());
        assert_eq!(d.cause, Cause::Migration { from: 1, to: 0 });
        let (w, st, lat) = wake(1_000_000, None, 1_900_000);
        let evs = [ev(1_010_000, 1, TID, switch(TID, 0, false, OWN, 120))];
        let d = run(&w, &st, lat, &evs, &dec());
        assert!(matches!(d.cause, Cause::NotRunnable { .. }), "{d:?}");
        // Half the latency in no stage: unknown.
        let (w, mut st, _) = wake(1_100_000, None, 1_200_000);
        st.rtscope_kernel_ns = 90_000;
        let d = run(&w, &st, 500_000, &[], &dec());
        assert_eq!(d.cause, Cause::Unknown);
        assert!(
            d.evidence.starts_with("no stage took half"),
            "{}",
            d.evidence
        );
    }

    #[test]
    fn the_table_counts_shares_and_says_the_main_cause() {
        let mut t = CauseTable::new(100_000);
        assert_eq!(t.sentence(), None);
        let irq = Diagnosis {
            cause: Cause::IrqHandler {
                irq: Some(24),
                name: "virtio0-input".into(),
            },
            evidence: "e1".into(),
            share: 0.8,
            cause_ns: 1,
            stage: "timer".into(),
        };
        let hw = Diagnosis {
            cause: Cause::HardwareOrHypervisor,
            evidence: "e2".into(),
            ..irq.clone()
        };
        for l in [150_000, 412_000, 200_000, 300_000, 120_000] {
            t.add(&irq, 1, l);
        }
        t.add(&hw, 0, 900_000);
        assert_eq!(t.outliers, 6);
        assert_eq!(t.rows[0].count, 5);
        assert_eq!(t.rows[0].worst_ns, 412_000);
        assert_eq!(t.rows[1].per_cpu[&0], 1);
        assert_eq!(
            t.sentence().unwrap(),
            "83 % of outliers above 100 µs on CPU 1: irq 24 virtio0-input, worst 412 µs"
        );
        assert!(t.rows[0].remedy.contains("IRQ affinity"));
        let j = serde_json::to_value(&t).unwrap();
        assert_eq!(j["rows"][0]["cause"]["kind"], "irq_handler");
        assert_eq!(serde_json::from_value::<CauseTable>(j).unwrap(), t);
    }
}
