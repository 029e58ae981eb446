//! Decoding the records of the events rtscope enables into small, copyable
//! [`Event`]s; the strings they carry (IRQ names, task names) are kept once
//! in the [`Decoder`]'s tables.

use std::collections::HashMap;

use super::format::{read_int, read_str, read_uint, EventFormat, Field};

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    IrqEntry {
        irq: i32,
    },
    IrqExit {
        irq: i32,
    },
    SoftirqEntry {
        vec: u32,
    },
    SoftirqExit {
        vec: u32,
    },
    /// An x86 system vector (`irq_vectors:local_timer_entry`, ...): the index in [`Decoder::vector_name`].
    VectorEntry {
        vector: u16,
    },
    VectorExit {
        vector: u16,
    },
    /// `sched_switch`: the task that ran before and the one that runs now.
    Switch {
        prev_pid: i32,
        next_pid: i32,
    },
    /// `sched_waking` of `pid`, to run on `target_cpu`.
    Waking {
        pid: i32,
        target_cpu: i32,
    },
    /// `nmi_handler`: an NMI handler ran for `delta_ns`, ending now.
    Nmi {
        delta_ns: u64,
    },
    /// `hrtimer_expire_entry`: the timer `hrtimer` (its address) runs its
    /// callback; `now` is the clock base's time read in the interrupt.
    HrtimerEntry {
        hrtimer: u64,
        function: u64,
        now: u64,
    },
    HrtimerExit,
    /// `hrtimer_start`: `hrtimer` armed for `softexpires` (the time asked
    /// for) .. `expires` (plus the task's timer slack).
    HrtimerStart {
        hrtimer: u64,
        function: u64,
        expires: u64,
        softexpires: u64,
    },
    SysEnter {
        nr: i64,
    },
    SysExit {
        nr: i64,
    },
    /// Not a kernel event: the kernel lost events on this CPU before this
    /// point ([`super::Instance::read`] reports it before the page that said so).
    Lost,
}

/// One event: its CPU, trace-clock time, the current task's pid, and what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub ts: u64,
    pub cpu: u32,
    pub pid: i32,
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
            } => {
                let (p, n) = (
                    read_int(rec, prev_pid) as i32,
                    read_int(rec, next_pid) as i32,
                );
                for (pid, f) in [(n, next_comm), (p, prev_comm)] {
                    self.comms.entry(pid).or_insert_with(|| read_str(rec, f));
                }
                Kind::Switch {
                    prev_pid: p,
                    next_pid: n,
                }
            }
            Decode::Waking { pid, comm, target } => {
                let p = read_int(rec, pid) as i32;
                self.comms.entry(p).or_insert_with(|| read_str(rec, comm));
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
        };
        Some(Event { ts, cpu, pid, kind })
    }

    /// A task's name as `comm[pid]`, or `pid N`.
    pub fn task_name(&self, pid: i32) -> String {
        match self.comms.get(&pid) {
            Some(c) if pid == 0 => format!("{c} (idle)"),
            Some(c) => format!("{c}[{pid}]"),
            None => format!("pid {pid}"),
        }
    }
}

/// The softirq names, by vector number.
pub const SOFTIRQ_NAMES: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

pub fn softirq_name(vec: u32) -> &'static str {
    SOFTIRQ_NAMES.get(vec as usize).copied().unwrap_or("?")
}
