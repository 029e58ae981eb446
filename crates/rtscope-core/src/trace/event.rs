//! Decoding the records of the events rtscope enables into small, copyable
//! [`Event`]s; the strings they carry (IRQ names, task names) are kept once
//! in the [`Decoder`]'s tables.

use std::collections::HashMap;

use super::format::{read_cstr, read_int, read_str, read_uint, EventFormat, Field};

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `irq_handler_entry` of `irq`.
    IrqEntry {
        /// The interrupt line.
        irq: i32,
    },
    /// `irq_handler_exit` of `irq`.
    IrqExit {
        /// The interrupt line.
        irq: i32,
    },
    /// `softirq_entry` of softirq `vec` ([`softirq_name`]).
    SoftirqEntry {
        /// The softirq number.
        vec: u32,
    },
    /// `softirq_exit` of softirq `vec`.
    SoftirqExit {
        /// The softirq number.
        vec: u32,
    },
    /// An x86 system vector (`irq_vectors:local_timer_entry`, ...): the index in [`Decoder::vector_name`].
    VectorEntry {
        /// The vector's index.
        vector: u16,
    },
    /// The end of an x86 system vector.
    VectorExit {
        /// The vector's index.
        vector: u16,
    },
    /// `sched_switch`: the task that ran before and the one that runs now.
    Switch {
        /// The pid that ran before.
        prev_pid: i32,
        /// The pid that runs now.
        next_pid: i32,
        /// The task that ran before stays runnable (`prev_state` R or R+:
        /// preempted, or set aside by the scheduler), rather than sleeping.
        prev_runnable: bool,
        /// Kernel priorities: 0-98 real-time (99 - the RT priority), 100-139
        /// normal (and idle), -1 deadline; where the format has them, else 0.
        prev_prio: i32,
        /// The next task's kernel priority.
        next_prio: i32,
    },
    /// `sched_waking` of `pid`, to run on `target_cpu`.
    Waking {
        /// The task woken.
        pid: i32,
        /// The CPU it will run on.
        target_cpu: i32,
    },
    /// `nmi_handler`: an NMI handler ran for `delta_ns`, ending now.
    Nmi {
        /// How long the handler ran, ns.
        delta_ns: u64,
    },
    /// `hrtimer_expire_entry`: the timer `hrtimer` (its address) runs its
    /// callback; `now` is the clock base's time read in the interrupt.
    HrtimerEntry {
        /// The timer's address.
        hrtimer: u64,
        /// Its callback's address.
        function: u64,
        /// The clock base's time in the interrupt, ns.
        now: u64,
    },
    /// `hrtimer_expire_exit`: the callback returned.
    HrtimerExit,
    /// `hrtimer_start`: `hrtimer` armed for `softexpires` (the time asked
    /// for) .. `expires` (plus the task's timer slack).
    HrtimerStart {
        /// The timer's address.
        hrtimer: u64,
        /// Its callback's address.
        function: u64,
        /// The latest expiry (with the timer slack), ns.
        expires: u64,
        /// The time asked for, ns.
        softexpires: u64,
    },
    /// `sys_enter` of system call `nr`.
    SysEnter {
        /// The system call number.
        nr: i64,
    },
    /// `sys_exit` of system call `nr`.
    SysExit {
        /// The system call number.
        nr: i64,
    },
    /// `preemptirq:irq_disable`: interrupts turned off on this CPU (kernels
    /// with `CONFIG_PREEMPTIRQ_TRACEPOINTS`, the irqsoff tracer's).
    IrqsOff {
        /// Where: the caller's offset from the kernel text's start (`_stext`).
        caller: i32,
    },
    /// `preemptirq:irq_enable`: interrupts turned on again.
    IrqsOn {
        /// Where: the caller's offset from `_stext`.
        caller: i32,
    },
    /// Not a kernel event: the kernel lost events on this CPU before this
    /// point ([`super::Instance::read`] reports it before the page that said so).
    Lost,
}

/// One event: its CPU, trace-clock time, the current task's pid, and what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Trace-clock time, ns.
    pub ts: u64,
    /// The CPU it happened on.
    pub cpu: u32,
    /// The pid current on that CPU.
    pub pid: i32,
    /// What happened.
    pub kind: Kind,
}

#[derive(Debug, Clone)]
enum Decode {
    IrqEntry {
        irq: Field,
        name: Field,
    },
    IrqExit {
        irq: Field,
    },
    SoftirqEntry {
        vec: Field,
    },
    SoftirqExit {
        vec: Field,
    },
    VectorEntry(u16),
    VectorExit(u16),
    Switch {
        prev_pid: Field,
        next_pid: Field,
        next_comm: Field,
        prev_comm: Field,
        prev_state: Option<Field>,
        prev_prio: Option<Field>,
        next_prio: Option<Field>,
    },
    Waking {
        pid: Field,
        comm: Field,
        target: Field,
    },
    Nmi {
        delta: Field,
    },
    HrtimerEntry {
        hrtimer: Field,
        function: Field,
        now: Field,
    },
    HrtimerExit,
    HrtimerStart {
        hrtimer: Field,
        function: Field,
        expires: Field,
        softexpires: Field,
    },
    SysEnter {
        id: Field,
    },
    SysExit {
        id: Field,
    },
    IrqsOff {
        caller: Field,
    },
    IrqsOn {
        caller: Field,
    },
}

/// Turns records into [`Event`]s, by event id.
#[derive(Debug, Clone, Default)]
pub struct Decoder {
    by_id: HashMap<u16, Decode>,
    vectors: Vec<String>,
    /// IRQ number -> handler name (from `irq_handler_entry`).
    pub irq_names: HashMap<i32, String>,
    /// pid -> task name (from `sched_switch` / `sched_waking`).
    pub comms: HashMap<i32, String>,
}

impl Decoder {
    /// Registers an event (`system`, its parsed format); unknown events are ignored.
    pub fn add(&mut self, system: &str, f: &EventFormat) -> bool {
        let g = |n: &str| f.field(n).cloned();
        let d = match (system, f.name.as_str()) {
            ("irq", "irq_handler_entry") => g("irq")
                .zip(g("name"))
                .map(|(irq, name)| Decode::IrqEntry { irq, name }),
            ("irq", "irq_handler_exit") => g("irq").map(|irq| Decode::IrqExit { irq }),
            ("irq", "softirq_entry") => g("vec").map(|vec| Decode::SoftirqEntry { vec }),
            ("irq", "softirq_exit") => g("vec").map(|vec| Decode::SoftirqExit { vec }),
            ("irq_vectors", n) if n.ends_with("_entry") || n.ends_with("_exit") => {
                let base = n
                    .trim_end_matches("_entry")
                    .trim_end_matches("_exit")
                    .to_string();
                let idx = match self.vectors.iter().position(|v| *v == base) {
                    Some(i) => i,
                    None => {
                        self.vectors.push(base);
                        self.vectors.len() - 1
                    }
                } as u16;
                Some(if n.ends_with("_entry") {
                    Decode::VectorEntry(idx)
                } else {
                    Decode::VectorExit(idx)
                })
            }
            ("sched", "sched_switch") => {
                match (g("prev_pid"), g("next_pid"), g("next_comm"), g("prev_comm")) {
                    (Some(prev_pid), Some(next_pid), Some(next_comm), Some(prev_comm)) => {
                        Some(Decode::Switch {
                            prev_pid,
                            next_pid,
                            next_comm,
                            prev_comm,
                            prev_state: g("prev_state"),
                            prev_prio: g("prev_prio"),
                            next_prio: g("next_prio"),
                        })
                    }
                    _ => None,
                }
            }
            ("sched", "sched_waking") => match (g("pid"), g("comm"), g("target_cpu")) {
                (Some(pid), Some(comm), Some(target)) => Some(Decode::Waking { pid, comm, target }),
                _ => None,
            },
            ("nmi", "nmi_handler") => g("delta_ns").map(|delta| Decode::Nmi { delta }),
            ("timer", "hrtimer_expire_entry") => match (g("hrtimer"), g("function"), g("now")) {
                (Some(hrtimer), Some(function), Some(now)) => Some(Decode::HrtimerEntry {
                    hrtimer,
                    function,
                    now,
                }),
                _ => None,
            },
            ("timer", "hrtimer_expire_exit") => Some(Decode::HrtimerExit),
            ("timer", "hrtimer_start") => match (g("hrtimer"), g("function"), g("expires")) {
                (Some(hrtimer), Some(function), Some(expires)) => Some(Decode::HrtimerStart {
                    hrtimer,
                    function,
                    softexpires: g("softexpires").unwrap_or_else(|| expires.clone()),
                    expires,
                }),
                _ => None,
            },
            ("raw_syscalls", "sys_enter") => g("id").map(|id| Decode::SysEnter { id }),
            ("raw_syscalls", "sys_exit") => g("id").map(|id| Decode::SysExit { id }),
            ("preemptirq", "irq_disable") => {
                g("caller_offs").map(|caller| Decode::IrqsOff { caller })
            }
            ("preemptirq", "irq_enable") => {
                g("caller_offs").map(|caller| Decode::IrqsOn { caller })
            }
            _ => None,
        };
        match d {
            Some(d) => {
                self.by_id.insert(f.id, d);
                true
            }
            None => false,
        }
    }

    /// The name of a system vector (`local_timer`, `reschedule`, ...).
    pub fn vector_name(&self, v: u16) -> &str {
        self.vectors
            .get(v as usize)
            .map_or("vector", String::as_str)
    }

    /// Decodes one record; `None` for events not registered.
    pub fn decode(&mut self, cpu: u32, ts: u64, rec: &[u8]) -> Option<Event> {
        let id = read_uint(rec, 0, 2) as u16;
        let pid = read_uint(rec, 4, 4) as i32;
        let kind = match self.by_id.get(&id)? {
            Decode::IrqEntry { irq, name } => {
                let n = read_int(rec, irq) as i32;
                self.irq_names
                    .entry(n)
                    .or_insert_with(|| read_str(rec, name));
                Kind::IrqEntry { irq: n }
            }
            Decode::IrqExit { irq } => Kind::IrqExit {
                irq: read_int(rec, irq) as i32,
            },
            Decode::SoftirqEntry { vec } => Kind::SoftirqEntry {
                vec: read_int(rec, vec) as u32,
            },
            Decode::SoftirqExit { vec } => Kind::SoftirqExit {
                vec: read_int(rec, vec) as u32,
            },
            Decode::VectorEntry(v) => Kind::VectorEntry { vector: *v },
            Decode::VectorExit(v) => Kind::VectorExit { vector: *v },
            Decode::Switch {
                prev_pid,
                next_pid,
                next_comm,
                prev_comm,
                prev_state,
                prev_prio,
                next_prio,
            } => {
                let (p, n) = (
                    read_int(rec, prev_pid) as i32,
                    read_int(rec, next_pid) as i32,
                );
                for (pid, f) in [(n, next_comm), (p, prev_comm)] {
                    note_comm(&mut self.comms, pid, read_cstr(rec, f));
                }
                let int = |f: &Option<Field>| f.as_ref().map(|f| read_int(rec, f));
                Kind::Switch {
                    prev_pid: p,
                    next_pid: n,
                    prev_runnable: int(prev_state).is_some_and(runnable),
                    prev_prio: int(prev_prio).unwrap_or(0) as i32,
                    next_prio: int(next_prio).unwrap_or(0) as i32,
                }
            }
            Decode::Waking { pid, comm, target } => {
                let p = read_int(rec, pid) as i32;
                note_comm(&mut self.comms, p, read_cstr(rec, comm));
                Kind::Waking {
                    pid: p,
                    target_cpu: read_int(rec, target) as i32,
                }
            }
            Decode::Nmi { delta } => Kind::Nmi {
                delta_ns: read_int(rec, delta).max(0) as u64,
            },
            Decode::HrtimerEntry {
                hrtimer,
                function,
                now,
            } => Kind::HrtimerEntry {
                hrtimer: read_int(rec, hrtimer) as u64,
                function: read_int(rec, function) as u64,
                now: read_int(rec, now) as u64,
            },
            Decode::HrtimerExit => Kind::HrtimerExit,
            Decode::HrtimerStart {
                hrtimer,
                function,
                expires,
                softexpires,
            } => Kind::HrtimerStart {
                hrtimer: read_int(rec, hrtimer) as u64,
                function: read_int(rec, function) as u64,
                expires: read_int(rec, expires) as u64,
                softexpires: read_int(rec, softexpires) as u64,
            },
            Decode::SysEnter { id } => Kind::SysEnter {
                nr: read_int(rec, id),
            },
            Decode::SysExit { id } => Kind::SysExit {
                nr: read_int(rec, id),
            },
            Decode::IrqsOff { caller } => Kind::IrqsOff {
                caller: read_int(rec, caller) as i32,
            },
            Decode::IrqsOn { caller } => Kind::IrqsOn {
                caller: read_int(rec, caller) as i32,
            },
        };
        Some(Event { ts, cpu, pid, kind })
    }

    /// A task's name as `comm[pid]`, or `pid N`; the idle task (pid 0 on
    /// every CPU) as `swapper/CPU (idle)`, of `cpu`, the CPU the task ran on.
    pub fn task_name(&self, pid: i32, cpu: u32) -> String {
        match self.comms.get(&pid) {
            _ if pid == 0 => format!("swapper/{cpu} (idle)"),
            Some(c) => format!("{c}[{pid}]"),
            None => format!("pid {pid}"),
        }
    }
}

/// Keeps the latest name seen of `pid`: a task may rename itself after its
/// first event (an exec, `PR_SET_NAME`: a load worker forked as `rtscope`
/// becomes `rtscope-cpu`). The idle task (pid 0, one name per CPU) keeps
/// its first; [`Decoder::task_name`] names it by its CPU.
fn note_comm(comms: &mut HashMap<i32, String>, pid: i32, name: std::borrow::Cow<'_, str>) {
    match comms.get_mut(&pid) {
        Some(c) if pid == 0 || *c == *name => {}
        Some(c) => *c = name.into_owned(),
        None => {
            comms.insert(pid, name.into_owned());
        }
    }
}

/// Whether a `sched_switch` `prev_state` says the task stays runnable: none
/// of the state bits its print format masks with `TASK_REPORT_MAX - 1`
/// (0xff: S D T t X Z P I) is set. The bit above them (0x100 since 4.14,
/// printed `+`) marks a preemption, still runnable.
pub fn runnable(prev_state: i64) -> bool {
    prev_state & 0xff == 0
}

/// The softirq names, by vector number.
pub const SOFTIRQ_NAMES: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// The kernel's name of softirq `vec` (`TIMER`, `NET_RX`, `RCU`, ...).
pub fn softirq_name(vec: u32) -> &'static str {
    SOFTIRQ_NAMES.get(vec as usize).copied().unwrap_or("?")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::format::parse_format;

    /// The formats of the events rtscope decodes (and one it does not,
    /// `timer/timer_start`), as a 6.18 x86-64 kernel's tracefs gives them.
    const FORMATS: &str = include_str!("testdata/formats-6.18-x86_64.txt");

    fn formats() -> Vec<(String, EventFormat)> {
        FORMATS
            .split("== ")
            .filter(|b| !b.trim().is_empty())
            .map(|b| {
                let (name, text) = b.split_once('\n').unwrap();
                let sys = name.split('/').next().unwrap().to_string();
                (sys, parse_format(text).unwrap())
            })
            .collect()
    }

    fn format(name: &str) -> EventFormat {
        formats()
            .into_iter()
            .map(|(_, f)| f)
            .find(|f| f.name == name)
            .unwrap()
    }

    /// A record of `f` from `pid` with the given integer and string fields.
    fn record(f: &EventFormat, pid: i32, ints: &[(&str, i64)], strs: &[(&str, &str)]) -> Vec<u8> {
        let fixed = f.fields.iter().map(|x| x.offset + x.size).max().unwrap();
        let mut r = vec![0u8; fixed];
        r[0..2].copy_from_slice(&f.id.to_le_bytes());
        r[4..8].copy_from_slice(&pid.to_le_bytes());
        for (n, v) in ints {
            let x = f.field(n).unwrap();
            r[x.offset..x.offset + x.size].copy_from_slice(&v.to_le_bytes()[..x.size]);
        }
        for (n, s) in strs {
            let x = f.field(n).unwrap();
            if x.data_loc {
                let off = r.len() as u32;
                r.extend_from_slice(s.as_bytes());
                r.push(0);
                let loc = ((s.len() as u32 + 1) << 16) | off;
                r[x.offset..x.offset + 4].copy_from_slice(&loc.to_le_bytes());
            } else {
                r[x.offset..x.offset + s.len()].copy_from_slice(s.as_bytes());
            }
        }
        r
    }

    /// A task renamed after its first event (a load worker forked as
    /// `rtscope`) is named by its latest name; the idle task keeps its first.
    #[test]
    fn a_renamed_task_has_its_latest_name() {
        let mut d = Decoder::default();
        for (sys, f) in formats() {
            d.add(&sys, &f);
        }
        let f = format("sched_switch");
        let switch = |d: &mut Decoder, prev: &str, next: &str| {
            let r = record(
                &f,
                0,
                &[("prev_pid", 0), ("next_pid", 42)],
                &[("prev_comm", prev), ("next_comm", next)],
            );
            d.decode(1, 1, &r).unwrap();
        };
        switch(&mut d, "swapper/1", "rtscope");
        assert_eq!(d.task_name(42, 1), "rtscope[42]");
        switch(&mut d, "swapper/0", "rtscope-cpu");
        assert_eq!(d.task_name(42, 1), "rtscope-cpu[42]");
        assert_eq!(d.comms[&0], "swapper/1");
    }

    #[test]
    fn the_known_events_are_registered_and_others_not() {
        let mut d = Decoder::default();
        for (sys, f) in formats() {
            let known = f.name != "timer_start";
            assert_eq!(d.add(&sys, &f), known, "{sys}/{}", f.name);
        }
        // A name of a known system that rtscope does not decode.
        let mut other = format("softirq_entry");
        other.name = "softirq_raise".into();
        assert!(!d.add("irq", &other));
        // A system vector event that is neither an entry nor an exit.
        let mut config = format("local_timer_entry");
        config.name = "vector_config".into();
        assert!(!d.add("irq_vectors", &config));
        // A sched_switch without the fields it needs.
        let mut bare = format("sched_switch");
        bare.fields.retain(|x| x.name != "prev_comm");
        assert!(!Decoder::default().add("sched", &bare));
        // The system vectors are numbered by name, entry and exit alike.
        assert_eq!(d.vector_name(0), "local_timer");
        assert_eq!(d.vector_name(1), "reschedule");
        assert_eq!(d.vector_name(2), "vector");
    }

    #[test]
    fn every_event_decodes_to_its_kind() {
        let mut d = Decoder::default();
        for (sys, f) in formats() {
            d.add(&sys, &f);
        }
        let mut dec = |name: &str, ints: &[(&str, i64)], strs: &[(&str, &str)]| {
            let f = format(name);
            let e = d.decode(1, 777, &record(&f, 42, ints, strs)).unwrap();
            assert_eq!((e.ts, e.cpu, e.pid), (777, 1, 42), "{name}");
            e.kind
        };
        assert_eq!(
            dec("irq_handler_entry", &[("irq", 11)], &[("name", "virtio0")]),
            Kind::IrqEntry { irq: 11 }
        );
        assert_eq!(
            dec("irq_handler_exit", &[("irq", 11), ("ret", 1)], &[]),
            Kind::IrqExit { irq: 11 }
        );
        assert_eq!(
            dec("softirq_entry", &[("vec", 7)], &[]),
            Kind::SoftirqEntry { vec: 7 }
        );
        assert_eq!(
            dec("softirq_exit", &[("vec", 9)], &[]),
            Kind::SoftirqExit { vec: 9 }
        );
        assert_eq!(
            dec("local_timer_entry", &[], &[]),
            Kind::VectorEntry { vector: 0 }
        );
        assert_eq!(
            dec("local_timer_exit", &[], &[]),
            Kind::VectorExit { vector: 0 }
        );
        assert_eq!(
            dec("reschedule_exit", &[], &[]),
            Kind::VectorExit { vector: 1 }
        );
        assert_eq!(
            dec(
                "sched_switch",
                &[
                    ("prev_pid", 0),
                    ("next_pid", 88),
                    ("prev_prio", 120),
                    ("next_prio", 4)
                ],
                &[("prev_comm", "swapper/1"), ("next_comm", "kworker/1:2")]
            ),
            Kind::Switch {
                prev_pid: 0,
                next_pid: 88,
                prev_runnable: true,
                prev_prio: 120,
                next_prio: 4
            }
        );
        // A task that goes to sleep (S), and one preempted (R+).
        for (state, runnable) in [(1, false), (0x100, true), (0x80, false)] {
            assert_eq!(
                dec(
                    "sched_switch",
                    &[("prev_pid", 7), ("next_pid", 0), ("prev_state", state)],
                    &[("prev_comm", "loop"), ("next_comm", "swapper/1")]
                ),
                Kind::Switch {
                    prev_pid: 7,
                    next_pid: 0,
                    prev_runnable: runnable,
                    prev_prio: 0,
                    next_prio: 0
                },
                "prev_state {state:#x}"
            );
        }
        assert_eq!(
            dec(
                "sched_waking",
                &[("pid", 99), ("target_cpu", 3)],
                &[("comm", "rtscope")]
            ),
            Kind::Waking {
                pid: 99,
                target_cpu: 3
            }
        );
        assert_eq!(
            dec("nmi_handler", &[("delta_ns", 1500)], &[]),
            Kind::Nmi { delta_ns: 1500 }
        );
        assert_eq!(
            dec("nmi_handler", &[("delta_ns", -5)], &[]),
            Kind::Nmi { delta_ns: 0 }
        );
        assert_eq!(
            dec(
                "hrtimer_expire_entry",
                &[("hrtimer", 0x1000), ("function", 0xabc), ("now", 5_000)],
                &[]
            ),
            Kind::HrtimerEntry {
                hrtimer: 0x1000,
                function: 0xabc,
                now: 5_000
            }
        );
        assert_eq!(
            dec("hrtimer_expire_exit", &[("hrtimer", 0x1000)], &[]),
            Kind::HrtimerExit
        );
        assert_eq!(
            dec(
                "hrtimer_start",
                &[
                    ("hrtimer", 0x1000),
                    ("function", 0xabc),
                    ("expires", 9_000),
                    ("softexpires", 8_000)
                ],
                &[]
            ),
            Kind::HrtimerStart {
                hrtimer: 0x1000,
                function: 0xabc,
                expires: 9_000,
                softexpires: 8_000
            }
        );
        assert_eq!(
            dec("sys_enter", &[("id", 230)], &[]),
            Kind::SysEnter { nr: 230 }
        );
        assert_eq!(
            dec("sys_exit", &[("id", 230), ("ret", 0)], &[]),
            Kind::SysExit { nr: 230 }
        );
        // Names learnt on the way.
        assert_eq!(d.irq_names.get(&11).map(String::as_str), Some("virtio0"));
        assert_eq!(d.task_name(88, 1), "kworker/1:2[88]");
        assert_eq!(d.task_name(0, 1), "swapper/1 (idle)");
        // Every CPU's idle task has pid 0: its name is the CPU's, not the
        // first one seen (swapper/1 above).
        assert_eq!(d.task_name(0, 3), "swapper/3 (idle)");
        assert_eq!(d.task_name(99, 1), "rtscope[99]");
        assert_eq!(d.task_name(5, 1), "pid 5");
        // An event that was not registered.
        let f = format("timer_start");
        assert!(d.decode(0, 0, &record(&f, 1, &[], &[])).is_none());
    }

    /// The `preemptirq` events of a kernel with
    /// CONFIG_PREEMPTIRQ_TRACEPOINTS (the kernel lab's 6.12 PREEMPT_RT
    /// kernel of `bench/kernel-lab/build-kernel`, its tracefs formats).
    #[test]
    fn interrupts_off_and_on_decode_with_their_caller() {
        let fmts: Vec<EventFormat> = include_str!("testdata/formats-6.12-rtlab-preemptirq.txt")
            .split("== ")
            .filter(|b| !b.trim().is_empty())
            .map(|b| parse_format(b.split_once('\n').unwrap().1).unwrap())
            .collect();
        let mut d = Decoder::default();
        for f in &fmts {
            assert!(d.add("preemptirq", f), "{}", f.name);
        }
        // Registered under their system only.
        assert!(!Decoder::default().add("irq", &fmts[0]));
        let kinds: Vec<Kind> = fmts
            .iter()
            .map(|f| {
                let e = d
                    .decode(
                        1,
                        5,
                        &record(
                            f,
                            136,
                            &[("caller_offs", -0x2a0), ("parent_offs", 0x10)],
                            &[],
                        ),
                    )
                    .unwrap();
                assert_eq!((e.cpu, e.ts, e.pid), (1, 5, 136));
                e.kind
            })
            .collect();
        assert_eq!(
            kinds,
            [
                Kind::IrqsOff { caller: -0x2a0 },
                Kind::IrqsOn { caller: -0x2a0 }
            ]
        );
    }

    #[test]
    fn runnable_states() {
        // R, R+ (preempted; 0x800 before 4.14): runnable.
        for s in [0, 0x100, 0x800, 0x300] {
            assert!(runnable(s), "{s:#x}");
        }
        // S, D, T, t, X, Z, P, I, and any of them with the preemption bit.
        for s in [1, 2, 4, 8, 0x10, 0x20, 0x40, 0x80, 0x101, 0xff] {
            assert!(!runnable(s), "{s:#x}");
        }
    }

    #[test]
    fn sched_switch_without_state_or_priorities() {
        // An older format without prev_state and the priorities: not
        // runnable (no claim), priorities 0.
        let mut f = format("sched_switch");
        f.fields
            .retain(|x| !matches!(x.name.as_str(), "prev_state" | "prev_prio" | "next_prio"));
        let mut d = Decoder::default();
        assert!(d.add("sched", &f));
        let r = record(
            &f,
            1,
            &[("prev_pid", 7), ("next_pid", 0)],
            &[("prev_comm", "loop"), ("next_comm", "swapper/1")],
        );
        assert_eq!(
            d.decode(0, 0, &r).unwrap().kind,
            Kind::Switch {
                prev_pid: 7,
                next_pid: 0,
                prev_runnable: false,
                prev_prio: 0,
                next_prio: 0
            }
        );
    }

    #[test]
    fn hrtimer_start_without_softexpires_uses_expires() {
        let mut f = format("hrtimer_start");
        f.fields.retain(|x| x.name != "softexpires");
        let mut d = Decoder::default();
        assert!(d.add("timer", &f));
        let r = record(&f, 1, &[("expires", 9_000)], &[]);
        match d.decode(0, 0, &r).unwrap().kind {
            Kind::HrtimerStart {
                expires,
                softexpires,
                ..
            } => assert_eq!((expires, softexpires), (9_000, 9_000)),
            k => panic!("{k:?}"),
        }
    }
}
