//! Background loads: controlled stress that runs beside a measurement.
//!
//! Every load is one module with a `run` function, listed once in [`LOADS`]
//! (name, one-line help, parameters, counters, run function), in the spirit of
//! stress-ng's stressor table. A load never runs inside the measuring process:
//! the [`supervisor`] re-executes rtscope as `rtscope __load-worker SPEC`, one
//! child per instance, each in its own process group, SCHED_OTHER, pinned to
//! one CPU of `--load-cpus`. The supervisor reads each child's CPU time from
//! `/proc`, stops the group with SIGTERM (SIGKILL after a grace period) and
//! reaps every process on every path, a `Drop` guard included.
//!
//! A load's SPEC is `name[:level][,key=value...]`; the level is the CPU share
//! in percent per instance for loads that are regulated (`cpu`, `mem-*`).
//! `cmd:` takes everything after it as a shell command line (a quoted command
//! may be followed by schedule keys: `cmd:'stress-ng --cpu 1',every=10s,for=2s`).
//!
//! Every load takes the schedule keys `every=`, `for=` and `start=` (see
//! [`Schedule`]): on for `for=` in each `every=` period, stopped in between.
//! A real-time `cpu` load (`policy=fifo|rr`) keeps that schedule itself
//! instead (see [`cpu`]): a supervisor sharing its CPU might never run.

pub mod regulate;
pub mod shortfall;
pub mod supervisor;
pub mod worker;

mod cmd;
mod cpu;
mod io;
mod mem_access;
mod mem_churn;
mod mem_fault;
mod messaging;
mod net;

use std::collections::BTreeMap;
use std::fmt;

use rtscope_core::rt::Policy;
use serde::Serialize;

pub use supervisor::{LoadReport, LoadSet};
pub use worker::Ctx;

/// What kind of value a parameter takes.
#[derive(Debug, Clone, Copy)]
pub enum ParamKind {
    /// Bytes, with an optional binary suffix (`16M`, `64KiB`, `1G`), in `min..=max`.
    Size { min: u64, max: u64 },
    /// A whole number in `min..=max`.
    Count { min: u64, max: u64 },
    /// A whole number in `min..=max`, or `unlimited` (stored as 0).
    CountOrUnlimited { min: u64, max: u64 },
    /// One of the listed words.
    Choice(&'static [&'static str]),
    /// A directory path.
    Path,
}

/// One `key=value` parameter a load accepts.
#[derive(Debug, Clone, Copy)]
pub struct ParamDef {
    pub key: &'static str,
    pub kind: ParamKind,
    /// The default, as text (`None`: computed at run time; said in `help`).
    pub default: Option<&'static str>,
    pub help: &'static str,
}

/// How many instances a load runs when `instances=` is not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultInstances {
    /// One per CPU of `--load-cpus`, each pinned to its CPU.
    PerCpu,
    /// One, allowed on every CPU of `--load-cpus`.
    One,
}

/// One entry of the load table.
pub struct LoadDef {
    pub name: &'static str,
    pub help: &'static str,
    /// Whether `:level` (CPU share per instance, 1-100 %) applies.
    pub takes_level: bool,
    pub params: &'static [ParamDef],
    /// Names of the work counters the load reports, in order.
    pub counters: &'static [&'static str],
    pub instances: DefaultInstances,
    /// Memory one instance maps, bytes (for the memory cap).
    pub memory: fn(&LoadSpec) -> u64,
    /// Runs the load in a worker process until `ctx.stop` is raised.
    pub run: fn(&Ctx) -> anyhow::Result<()>,
    /// Checks the keys of a parsed spec together (one-line error).
    pub check: fn(&LoadSpec) -> Result<(), String>,
}

const INSTANCES: ParamDef = ParamDef {
    key: "instances",
    kind: ParamKind::Count { min: 1, max: 1024 },
    default: None,
    help: "number of worker processes (default: one per CPU of --load-cpus)",
};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const TIB: u64 = 1 << 40;

/// `size=` of the loads that map a region per round.
const MAP_SIZE: ParamDef = ParamDef {
    key: "size",
    kind: ParamKind::Size {
        min: 4096,
        max: TIB,
    },
    default: Some("16M"),
    help: "bytes mapped per round",
};

fn no_memory(_: &LoadSpec) -> u64 {
    0
}

fn no_check(_: &LoadSpec) -> Result<(), String> {
    Ok(())
}

/// Every load rtscope knows, in the order `rtscope load --list` shows them.
pub static LOADS: &[LoadDef] = &[
    LoadDef {
        name: "cpu",
        help: "arithmetic busy loop at a duty cycle of LEVEL % (100: spin), in 4-6 ms slices; \
               policy=fifo|rr makes it a real-time hog that spins FOR of each EVERY on its own clock",
        takes_level: true,
        params: &[
            ParamDef {
                key: "policy",
                kind: ParamKind::Choice(&["other", "fifo", "rr"]),
                default: Some("other"),
                help: "scheduling policy of the workers: SCHED_OTHER, SCHED_FIFO or SCHED_RR \
                       (fifo/rr need every=/for=, or RT throttling on)",
            },
            ParamDef {
                key: "priority",
                kind: ParamKind::Count { min: 1, max: 99 },
                default: None,
                help: "real-time priority, with policy=fifo|rr only (default: 1, the lowest)",
            },
            INSTANCES,
        ],
        counters: cpu::COUNTERS,
        instances: DefaultInstances::PerCpu,
        memory: no_memory,
        run: cpu::run,
        check: cpu::check,
    },
    LoadDef {
        name: "mem-churn",
        help: "mmap a read-write region, write one byte per page, munmap; repeat (page faults, page allocation and freeing)",
        takes_level: true,
        params: &[
            MAP_SIZE,
            INSTANCES,
        ],
        counters: mem_churn::COUNTERS,
        instances: DefaultInstances::PerCpu,
        memory: mem_churn::memory,
        run: mem_churn::run,
        check: no_check,
    },
    LoadDef {
        name: "mem-fault",
        help: "mmap PROT_NONE, write each page; a SIGSEGV handler mprotects the page read-write and the write retries; munmap; repeat",
        takes_level: true,
        params: &[
            MAP_SIZE,
            INSTANCES,
        ],
        counters: mem_fault::COUNTERS,
        instances: DefaultInstances::PerCpu,
        memory: mem_fault::memory,
        run: mem_fault::run,
        check: no_check,
    },
    LoadDef {
        name: "mem-access",
        help: "volatile reads and writes, one per cache line, over a buffer larger than the last-level cache",
        takes_level: true,
        params: &[
            ParamDef {
                key: "size",
                kind: ParamKind::Size { min: 4096, max: TIB },
                default: None,
                help: "buffer bytes (default: 4 x the last-level cache from sysfs, at least 16 MiB)",
            },
            INSTANCES,
        ],
        counters: mem_access::COUNTERS,
        instances: DefaultInstances::PerCpu,
        memory: mem_access::memory,
        run: mem_access::run,
        check: no_check,
    },
    LoadDef {
        name: "messaging",
        help: "hackbench-like groups of senders and receivers passing 100-byte messages over pipes or socketpairs",
        takes_level: false,
        params: &[
            ParamDef {
                key: "groups",
                kind: ParamKind::Count { min: 1, max: 64 },
                default: Some("1"),
                help: "groups per instance",
            },
            ParamDef {
                key: "fds",
                kind: ParamKind::Count { min: 1, max: 64 },
                default: Some("4"),
                help: "senders and receivers per group (each sender writes to every receiver)",
            },
            ParamDef {
                key: "transport",
                kind: ParamKind::Choice(&["pipe", "socket"]),
                default: Some("pipe"),
                help: "pipe or socketpair(AF_UNIX, SOCK_STREAM)",
            },
            INSTANCES,
        ],
        counters: messaging::COUNTERS,
        instances: DefaultInstances::PerCpu,
        memory: no_memory,
        run: messaging::run,
        check: no_check,
    },
    LoadDef {
        name: "net",
        help: "UDP packet flood over loopback: one sender, one receiver per instance",
        takes_level: false,
        params: &[
            ParamDef {
                key: "rate",
                kind: ParamKind::CountOrUnlimited { min: 1, max: 100_000_000 },
                default: Some("unlimited"),
                help: "packets per second per instance, or unlimited",
            },
            ParamDef {
                key: "size",
                kind: ParamKind::Size { min: 1, max: 65_507 },
                default: Some("64"),
                help: "UDP payload bytes",
            },
            INSTANCES,
        ],
        counters: net::COUNTERS,
        instances: DefaultInstances::PerCpu,
        memory: no_memory,
        run: net::run,
        check: no_check,
    },
    LoadDef {
        name: "io",
        help: "write and fsync a file in a temporary directory, over and over; removed afterwards",
        takes_level: false,
        params: &[
            ParamDef {
                key: "size",
                kind: ParamKind::Size { min: 4096, max: TIB },
                default: Some("4M"),
                help: "bytes written between two fsyncs",
            },
            ParamDef {
                key: "dir",
                kind: ParamKind::Path,
                default: None,
                help: "where the temporary directory goes (default: $TMPDIR or /tmp)",
            },
            INSTANCES,
        ],
        counters: io::COUNTERS,
        instances: DefaultInstances::PerCpu,
        memory: no_memory,
        run: io::run,
        check: no_check,
    },
    LoadDef {
        name: "cmd",
        help: "any external command (sh -c), with the same lifecycle: cmd:'stress-ng --vm 1'",
        takes_level: false,
        params: &[],
        counters: cmd::COUNTERS,
        instances: DefaultInstances::One,
        memory: no_memory,
        run: cmd::run,
        check: no_check,
    },
];

/// Puts load reports into a result document: the `loads` section, a
/// warning per failed instance, and for a load that fell short of what it
/// was asked for ([`shortfall::of`]) `fell_short` and a warning.
pub fn attach(doc: &mut rtscope_core::result::ResultDocument, reports: &[LoadReport]) {
    doc.loads = reports.to_vec();
    for r in &mut doc.loads {
        r.fell_short = shortfall::of(r).is_some();
    }
    doc.warnings.extend(warnings(&doc.loads));
}

/// The warnings [`attach`] adds for `loads`: per load, its failed
/// instances, then whether it fell short.
pub fn warnings(loads: &[LoadReport]) -> Vec<String> {
    let mut w = Vec::new();
    for r in loads {
        w.extend(r.errors.iter().map(|e| format!("load {}: {e}", r.spec)));
        w.extend(shortfall::of(r));
    }
    w
}

/// The table entry called `name`.
pub fn lookup(name: &str) -> Option<&'static LoadDef> {
    LOADS.iter().find(|d| d.name == name)
}

/// A parsed, validated load specification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadSpec {
    /// The text as given (what the worker re-parses).
    pub text: String,
    /// Load name from the table.
    pub name: &'static str,
    /// CPU share per instance in percent (loads that take a level; default 100).
    pub level: Option<u8>,
    /// `key=value` parameters, validated.
    pub params: BTreeMap<String, String>,
    /// The shell command of a `cmd` load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// `every=`/`for=`/`start=`: when the load is on (always, if absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Schedule>,
}

/// A load schedule: on for `for_ns` at the start of every `every_ns`
/// period, the first period starting `start_ns` after the measurement
/// window opens; stopped (SIGSTOP of its process groups) in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Schedule {
    pub every_ns: u64,
    pub for_ns: u64,
    pub start_ns: u64,
}

/// The keys of a schedule, accepted by every load.
pub const SCHEDULE_KEYS: [&str; 3] = ["every", "for", "start"];

/// The shortest `every=`: the scheduler acts on whole milliseconds.
pub const MIN_EVERY_NS: u64 = 10_000_000;

impl Schedule {
    /// Builds a schedule from the keys given (`every`, `for`, `start`), or
    /// none if none is given. Errors are one line.
    fn from_keys(load: &str, keys: &BTreeMap<&str, &str>) -> Result<Option<Schedule>, String> {
        if keys.is_empty() {
            return Ok(None);
        }
        let dur = |k: &str| -> Result<Option<u64>, String> {
            keys.get(k)
                .map(|v| {
                    rtscope_core::units::parse_duration_ns(v, rtscope_core::units::Unit::S)
                        .map_err(|e| format!("load {load}: {k}={v}: {e}"))
                })
                .transpose()
        };
        let (every, for_, start) = (dur("every")?, dur("for")?, dur("start")?);
        let (Some(every_ns), Some(for_ns)) = (every, for_) else {
            return Err(format!(
                "load {load}: a schedule needs both every= and for= (e.g. every=50s,for=10s)"
            ));
        };
        if every_ns < MIN_EVERY_NS {
            return Err(format!(
                "load {load}: every={}: at least 10ms",
                keys["every"]
            ));
        }
        if for_ns == 0 || for_ns >= every_ns {
            return Err(format!(
                "load {load}: for={} must be more than 0 and less than every={}",
                keys["for"], keys["every"]
            ));
        }
        Ok(Some(Schedule {
            every_ns,
            for_ns,
            start_ns: start.unwrap_or(0),
        }))
    }

    /// Whether the load is on `t_ns` after the window opened.
    pub fn is_on(&self, t_ns: u64) -> bool {
        t_ns >= self.start_ns && (t_ns - self.start_ns) % self.every_ns < self.for_ns
    }

    /// The first switch (on or off) strictly after `t_ns`.
    pub fn next_switch(&self, t_ns: u64) -> u64 {
        if t_ns < self.start_ns {
            return self.start_ns;
        }
        let k = (t_ns - self.start_ns) / self.every_ns;
        let period = self.start_ns + k * self.every_ns;
        if t_ns < period + self.for_ns {
            period + self.for_ns
        } else {
            period + self.every_ns
        }
    }
}

impl fmt::Display for LoadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl LoadSpec {
    /// The table entry of this load.
    pub fn def(&self) -> &'static LoadDef {
        lookup(self.name).expect("a parsed spec names a known load")
    }

    /// A size parameter in bytes (the default if not given; `None` if neither).
    pub fn size(&self, key: &str) -> Option<u64> {
        let text = self.params.get(key).map(String::as_str).or_else(|| {
            self.def()
                .params
                .iter()
                .find(|p| p.key == key)
                .and_then(|p| p.default)
        })?;
        parse_size(text).ok()
    }

    /// A count parameter (the default if not given); `unlimited` is 0.
    pub fn count(&self, key: &str) -> Option<u64> {
        let text = self.params.get(key).map(String::as_str).or_else(|| {
            self.def()
                .params
                .iter()
                .find(|p| p.key == key)
                .and_then(|p| p.default)
        })?;
        if text == "unlimited" {
            return Some(0);
        }
        text.parse().ok()
    }

    /// A text parameter (the default if not given).
    pub fn text_param(&self, key: &str) -> Option<String> {
        self.params.get(key).cloned().or_else(|| {
            self.def()
                .params
                .iter()
                .find(|p| p.key == key)
                .and_then(|p| p.default.map(str::to_string))
        })
    }

    /// The level, 100 for a regulated load without one.
    pub fn level_or_full(&self) -> u8 {
        self.level.unwrap_or(100)
    }

    /// `instances=` if given.
    pub fn instances(&self) -> Option<usize> {
        self.params.get("instances").and_then(|v| v.parse().ok())
    }

    /// The real-time policy and priority of a `policy=fifo|rr` load
    /// (priority 1 unless given); `None` for a SCHED_OTHER one.
    pub fn real_time(&self) -> Option<(Policy, u8)> {
        let policy = match self.params.get("policy").map(String::as_str) {
            Some("fifo") => Policy::Fifo,
            Some("rr") => Policy::Rr,
            _ => return None,
        };
        let prio = self
            .params
            .get("priority")
            .and_then(|p| p.parse().ok())
            .unwrap_or(DEFAULT_RT_PRIORITY);
        Some((policy, prio))
    }

    /// Whether the load keeps its schedule itself (a real-time one with
    /// `every=`/`for=`): the supervisor must then never stop it.
    pub fn self_timed(&self) -> bool {
        self.schedule.is_some() && self.real_time().is_some()
    }
}

/// The priority of a real-time `cpu` load without `priority=`: the lowest,
/// which preempts every SCHED_OTHER task and no real-time one.
pub const DEFAULT_RT_PRIORITY: u8 = 1;

/// Parses a byte size: a whole number with an optional binary suffix
/// (`K`, `KB`, `KiB`, `M`, `MB`, `MiB`, `G`, `GB`, `GiB`, `T`...; all powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!("'{s}': a size cannot be negative"));
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    if num.is_empty() {
        return Err(format!(
            "'{s}' is not a size (expected e.g. 4096, 64K, 16M, 1G)"
        ));
    }
    let mult: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => {
            return Err(format!(
                "'{s}' is not a size (expected e.g. 4096, 64K, 16M, 1G)"
            ))
        }
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("'{s}' is too large"))
}

/// Formats bytes with a binary suffix (`16 MiB`).
pub fn format_size(b: u64) -> String {
    if b >= GIB && b % GIB == 0 {
        format!("{} GiB", b / GIB)
    } else if b >= MIB && b % MIB == 0 {
        format!("{} MiB", b / MIB)
    } else if b >= 1024 && b % 1024 == 0 {
        format!("{} KiB", b / 1024)
    } else {
        format!("{b} B")
    }
}

fn check_param(load: &str, p: &ParamDef, v: &str) -> Result<String, String> {
    let bad = |why: String| Err(format!("load {load}: {}={v}: {why}", p.key));
    match p.kind {
        ParamKind::Size { min, max } => match parse_size(v) {
            Ok(n) if n < min => bad(format!("at least {}", format_size(min))),
            Ok(n) if n > max => bad(format!("at most {}", format_size(max))),
            Ok(_) => Ok(v.to_string()),
            Err(e) => Err(format!("load {load}: {}: {e}", p.key)),
        },
        ParamKind::Count { min, max } | ParamKind::CountOrUnlimited { min, max } => {
            if matches!(p.kind, ParamKind::CountOrUnlimited { .. }) && v == "unlimited" {
                return Ok(v.to_string());
            }
            match v.parse::<u64>() {
                Ok(n) if (min..=max).contains(&n) => Ok(n.to_string()),
                Ok(_) => bad(format!("expected {min} to {max}")),
                Err(_) if v.starts_with('-') => bad("cannot be negative".into()),
                Err(_) => bad("not a whole number".into()),
            }
        }
        ParamKind::Choice(words) => {
            if words.contains(&v) {
                Ok(v.to_string())
            } else {
                bad(format!("expected one of {}", words.join(", ")))
            }
        }
        ParamKind::Path => {
            if v.is_empty() {
                bad("empty path".into())
            } else {
                Ok(v.to_string())
            }
        }
    }
}

fn known_names() -> String {
    LOADS.iter().map(|d| d.name).collect::<Vec<_>>().join(", ")
}

/// Parses `name[:level][,key=value...]` (or `cmd:COMMAND`). Errors are one line.
pub fn parse_spec(input: &str) -> Result<LoadSpec, String> {
    let text = input.trim();
    if text.is_empty() {
        return Err("empty load spec (expected NAME[:LEVEL][,KEY=VALUE...])".into());
    }
    if let Some(rest) = text.strip_prefix("cmd:") {
        let mut c = rest.trim();
        let mut keys = BTreeMap::new();
        // A quoted command may be followed by schedule keys.
        if let Some(q) = c.chars().next().filter(|q| *q == '\'' || *q == '"') {
            if let Some(end) = c[1..].find(q).map(|e| e + 1) {
                let tail = c[end + 1..].trim();
                if let Some(tail) = tail.strip_prefix(',') {
                    for kv in tail.split(',') {
                        let (k, v) = kv
                            .split_once('=')
                            .map(|(k, v)| (k.trim(), v.trim()))
                            .ok_or_else(|| format!("load cmd: '{kv}' is not KEY=VALUE"))?;
                        if !SCHEDULE_KEYS.contains(&k) {
                            return Err(format!(
                                "load cmd: unknown parameter '{k}' after the command (known: every, for, start)"
                            ));
                        }
                        if keys.insert(k, v).is_some() {
                            return Err(format!("load cmd: {k} given twice"));
                        }
                    }
                    c = &c[..=end];
                }
            }
        }
        for q in ['\'', '"'] {
            if c.len() >= 2 && c.starts_with(q) && c.ends_with(q) {
                c = &c[1..c.len() - 1];
            }
        }
        let c = c.trim();
        if c.is_empty() {
            return Err("load cmd: no command given (cmd:'stress-ng --cpu 1')".into());
        }
        return Ok(LoadSpec {
            text: text.to_string(),
            name: "cmd",
            level: None,
            params: BTreeMap::new(),
            command: Some(c.to_string()),
            schedule: Schedule::from_keys("cmd", &keys)?,
        });
    }
    let mut parts = text.split(',');
    let head = parts.next().unwrap_or_default().trim();
    let (name, level_text) = match head.split_once(':') {
        Some((n, l)) => (n.trim(), Some(l.trim())),
        None => (head, None),
    };
    if name == "cmd" {
        return Err("load cmd needs a command: cmd:'...'".into());
    }
    let def =
        lookup(name).ok_or_else(|| format!("unknown load '{name}' (known: {})", known_names()))?;
    let level = match level_text {
        None => def.takes_level.then_some(100),
        Some(_) if !def.takes_level => {
            return Err(format!("load {name} takes no level"));
        }
        Some(l) => {
            let l = l.trim_end_matches('%');
            match l.parse::<i64>() {
                Ok(v) if (1..=100).contains(&v) => Some(v as u8),
                Ok(v) => {
                    return Err(format!(
                        "load {name}: level {v} is out of range (1-100 % per instance)"
                    ))
                }
                Err(_) => {
                    return Err(format!(
                        "load {name}: level '{l}' is not a number (1-100 % per instance)"
                    ))
                }
            }
        }
    };
    let mut params = BTreeMap::new();
    let mut schedule_keys = BTreeMap::new();
    for kv in parts {
        let kv = kv.trim();
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("load {name}: '{kv}' is not KEY=VALUE"))?;
        let (k, v) = (k.trim(), v.trim());
        if SCHEDULE_KEYS.contains(&k) {
            if schedule_keys.insert(k, v).is_some() {
                return Err(format!("load {name}: {k} given twice"));
            }
            continue;
        }
        let p = def.params.iter().find(|p| p.key == k).ok_or_else(|| {
            let keys: Vec<&str> = def.params.iter().map(|p| p.key).collect();
            if keys.is_empty() {
                format!("load {name} takes no parameters (but every=, for=, start=)")
            } else {
                format!(
                    "load {name}: unknown parameter '{k}' (known: {})",
                    keys.join(", ")
                )
            }
        })?;
        if params.contains_key(k) {
            return Err(format!("load {name}: {k} given twice"));
        }
        params.insert(k.to_string(), check_param(name, p, v)?);
    }
    let spec = LoadSpec {
        text: text.to_string(),
        name: def.name,
        level,
        params,
        command: None,
        schedule: Schedule::from_keys(name, &schedule_keys)?,
    };
    (def.check)(&spec)?;
    Ok(spec)
}

/// The `--list` text: every load, its parameters and counters.
pub fn list_text() -> String {
    let mut out = String::new();
    for d in LOADS {
        out.push_str(&format!(
            "{}{}\n    {}\n",
            d.name,
            if d.takes_level { "[:LEVEL]" } else { "" },
            d.help
        ));
        for p in d.params {
            out.push_str(&format!(
                "    {}={}{}\n",
                p.key,
                match p.kind {
                    ParamKind::Size { .. } => "SIZE",
                    ParamKind::Count { .. } => "N",
                    ParamKind::CountOrUnlimited { .. } => "N|unlimited",
                    ParamKind::Choice(_) => "WORD",
                    ParamKind::Path => "DIR",
                },
                format_args!(
                    "  {}{}",
                    p.help,
                    p.default.map(|d| format!(" [{d}]")).unwrap_or_default()
                )
            ));
        }
        out.push_str(&format!("    counters: {}\n", d.counters.join(", ")));
    }
    out.push_str(
        "every load: every=DURATION,for=DURATION[,start=DURATION]  on for FOR in each EVERY period, stopped (SIGSTOP) in between \
         (a real-time cpu load sleeps in between by itself)\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_good_specs() {
        let s = parse_spec("cpu:50").unwrap();
        assert_eq!((s.name, s.level), ("cpu", Some(50)));
        let s = parse_spec("cpu").unwrap();
        assert_eq!(s.level, Some(100));
        let s = parse_spec("mem-churn:25,size=64KiB,instances=3").unwrap();
        assert_eq!(s.level, Some(25));
        assert_eq!(s.size("size"), Some(64 * 1024));
        assert_eq!(s.instances(), Some(3));
        let s = parse_spec("mem-fault").unwrap();
        assert_eq!(s.size("size"), Some(16 << 20));
        let s = parse_spec("messaging,groups=2,transport=socket").unwrap();
        assert_eq!(s.level, None);
        assert_eq!(s.count("groups"), Some(2));
        assert_eq!(s.text_param("transport").as_deref(), Some("socket"));
        let s = parse_spec("net,rate=unlimited,size=1K").unwrap();
        assert_eq!(s.count("rate"), Some(0));
        assert_eq!(s.size("size"), Some(1024));
        let s = parse_spec("net").unwrap();
        assert_eq!(s.count("rate"), Some(0));
        let s = parse_spec("io,size=1G").unwrap();
        assert_eq!(s.size("size"), Some(1 << 30));
        let s = parse_spec("cpu:100%").unwrap();
        assert_eq!(s.level, Some(100));
    }

    #[test]
    fn cmd_takes_the_rest() {
        let s = parse_spec("cmd:'stress-ng --cpu 1 --taskset 0,1 -t 10:0'").unwrap();
        assert_eq!(s.name, "cmd");
        assert_eq!(
            s.command.as_deref(),
            Some("stress-ng --cpu 1 --taskset 0,1 -t 10:0")
        );
        let s = parse_spec("cmd:make -j2").unwrap();
        assert_eq!(s.command.as_deref(), Some("make -j2"));
        assert!(parse_spec("cmd:").is_err());
        assert!(parse_spec("cmd:''").is_err());
        assert!(parse_spec("cmd").is_err());
    }

    #[test]
    fn refuses_bad_specs() {
        for (spec, want) in [
            ("", "empty"),
            ("bogus", "unknown load 'bogus'"),
            ("cpu:0", "out of range"),
            ("cpu:101", "out of range"),
            ("cpu:-5", "out of range"),
            ("cpu:abc", "not a number"),
            ("messaging:50", "takes no level"),
            ("mem-churn,size=-16M", "negative"),
            ("mem-churn,size=0", "at least"),
            ("mem-churn,size=100T", "at most"),
            ("mem-churn,size=99999999999999999999G", "too large"),
            ("mem-churn,size=lots", "not a size"),
            ("mem-churn,colour=red", "unknown parameter 'colour'"),
            ("mem-churn,size", "not KEY=VALUE"),
            ("cpu,instances=0", "expected 1 to 1024"),
            ("cpu,instances=-1", "negative"),
            ("messaging,transport=carrier-pigeon", "one of pipe, socket"),
            ("net,size=70000", "at most"),
            ("cpu,instances=2,instances=3", "twice"),
        ] {
            let e = parse_spec(spec).unwrap_err();
            assert!(e.contains(want), "{spec}: {e}");
            assert!(!e.contains('\n'), "{spec}: one line");
        }
    }

    #[test]
    fn schedules() {
        let s = parse_spec("cpu:100,every=1s,for=300ms").unwrap();
        assert_eq!(
            s.schedule,
            Some(Schedule {
                every_ns: 1_000_000_000,
                for_ns: 300_000_000,
                start_ns: 0
            })
        );
        assert_eq!(s.level, Some(100));
        assert!(s.params.is_empty());
        let s = parse_spec("messaging,every=50s,for=10s,start=5s,groups=2").unwrap();
        let sc = s.schedule.unwrap();
        assert_eq!(
            (sc.every_ns, sc.for_ns, sc.start_ns),
            (50_000_000_000, 10_000_000_000, 5_000_000_000)
        );
        assert_eq!(s.count("groups"), Some(2));
        // A bare number is seconds.
        let s = parse_spec("net,every=2,for=0.5").unwrap();
        assert_eq!(s.schedule.unwrap().for_ns, 500_000_000);
        let s = parse_spec("cmd:'stress-ng --cpu 1, --x',every=10s,for=2s").unwrap();
        assert_eq!(s.command.as_deref(), Some("stress-ng --cpu 1, --x"));
        assert_eq!(s.schedule.unwrap().every_ns, 10_000_000_000);
        let s = parse_spec("cmd:make -j2,every=1s").unwrap();
        assert_eq!(s.command.as_deref(), Some("make -j2,every=1s"));
        assert_eq!(s.schedule, None);
        assert_eq!(parse_spec("cpu").unwrap().schedule, None);
        for (spec, want) in [
            ("cpu,every=1s,for=1s", "less than every"),
            ("cpu,every=1s,for=2s", "less than every"),
            ("cpu,every=0,for=0", "at least 10ms"),
            ("cpu,every=1s,for=0", "more than 0"),
            ("cpu,every=soon,for=1s", "every=soon"),
            ("cpu,every=1s,for=-1s", "for=-1s"),
            ("cpu,every=1s", "both every= and for="),
            ("cpu,for=1s", "both every= and for="),
            ("cpu,start=1s", "both every= and for="),
            ("cpu,every=1s,every=2s,for=1ms", "twice"),
            ("cmd:'x',every=1s,for=1s", "less than every"),
            ("cmd:'x',size=1", "unknown parameter 'size'"),
        ] {
            let e = parse_spec(spec).unwrap_err();
            assert!(e.contains(want), "{spec}: {e}");
            assert!(!e.contains('\n'), "{spec}: one line");
        }
    }

    #[test]
    fn schedule_switches() {
        let s = Schedule {
            every_ns: 1000,
            for_ns: 300,
            start_ns: 500,
        };
        assert!(!s.is_on(0) && !s.is_on(499));
        assert!(s.is_on(500) && s.is_on(799) && !s.is_on(800) && s.is_on(1500));
        assert_eq!(s.next_switch(0), 500);
        assert_eq!(s.next_switch(500), 800);
        assert_eq!(s.next_switch(800), 1500);
        assert_eq!(s.next_switch(1499), 1500);
        assert_eq!(s.next_switch(1500), 1800);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("16M"), Ok(16 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("2gb"), Ok(2 << 30));
        assert!(parse_size("1.5G").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("-1").is_err());
        assert_eq!(format_size(16 << 20), "16 MiB");
        assert_eq!(format_size(1000), "1000 B");
    }

    /// A load that fell short is marked and warned about in the document;
    /// one that did not is marked `false` even if the report said `true`.
    #[test]
    fn attach_records_failures_and_shortfalls() {
        let short = LoadReport {
            spec: "cpu:50".into(),
            name: "cpu".into(),
            level: Some(50),
            instances: 2,
            window_s: 2.0,
            achieved_cpu_percent: vec![31.0, 31.4],
            achieved_cpu_percent_mean: 31.2,
            errors: vec!["instance 1: exited 1".into()],
            ..Default::default()
        };
        let fine = LoadReport {
            spec: "cpu:50".into(),
            level: Some(50),
            window_s: 2.0,
            achieved_cpu_percent: vec![49.0],
            fell_short: true,
            ..Default::default()
        };
        let mut doc = rtscope_core::result::ResultDocument::new(
            "load",
            serde_json::json!({}),
            Default::default(),
            vec![],
        );
        doc.warnings = vec!["before".into()];
        attach(&mut doc, &[short.clone(), fine]);
        assert_eq!(
            doc.loads.iter().map(|l| l.fell_short).collect::<Vec<_>>(),
            [true, false]
        );
        assert_eq!(doc.warnings.len(), 3, "{:?}", doc.warnings);
        assert_eq!(doc.warnings[0], "before");
        assert_eq!(doc.warnings[1], "load cpu:50: instance 1: exited 1");
        assert!(
            doc.warnings[2].starts_with("load cpu:50 reached 31.2 % CPU of the 50 % asked"),
            "{}",
            doc.warnings[2]
        );
        assert_eq!(warnings(&doc.loads), doc.warnings[1..]);
        assert_eq!(warnings(&[]), Vec::<String>::new());
    }

    #[test]
    fn table_is_consistent() {
        let mut names: Vec<&str> = LOADS.iter().map(|d| d.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), LOADS.len());
        for d in LOADS {
            assert!(!d.counters.is_empty(), "{}", d.name);
            for p in d.params {
                if let Some(def) = p.default {
                    check_param(d.name, p, def).unwrap();
                }
            }
        }
    }
}
