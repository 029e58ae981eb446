//! `rtscope ipc`: the latency of IPC and synchronisation between two real-time
//! tasks — one-way handoffs (semaphores, futex, mutex, condition variable,
//! signal, eventfd, ...) and round trips (pipe, FIFO, UNIX sockets, message
//! queues, ...), between threads or processes, driven by a periodic task.
//!
//! Every mechanism is one small module that builds a one-way [`Channel`] (a
//! [`Tx`] and an [`Rx`]); a round trip is two channels, one per direction. The
//! table [`MECHANISMS`] lists them. [`runner`] runs one experiment (mechanism x
//! pattern x placement x period) with its repetitions; this module plans, builds
//! the result document and prints the summary.

mod condvar;
mod eventfd;
mod fifo;
mod futex;
mod leftovers;
mod mutex;
mod pipe;
mod posix_mq;
mod posix_sem;
mod runner;
mod signal;
mod stream;
mod sysv_mq;
mod sysv_sem;
mod unix;

use rtscope_core::sys;
use std::cell::RefCell;
use std::io;

use anyhow::Result;
use serde::Serialize;
use serde_json::json;

use rtscope_core::named::MeasureClock;
use rtscope_core::record::SeriesRecorder;
use rtscope_core::result::{EndReason, Series};
use rtscope_core::sample::Sample;
use rtscope_core::sys::ClockId;
use rtscope_core::units::{format_cpu_list, format_ns, online_cpus};

use super::run::{self, RunRequest};
use crate::error::{usage, EXIT_OK, EXIT_RUN};
use crate::output::summary;

/// Every timestamp of this experiment is taken on this clock.
pub const CLOCK: ClockId = libc::CLOCK_MONOTONIC;

/// What a receiver got: the sender's stamp and its own wake-up time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    pub sent_ns: u64,
    pub woke_ns: u64,
}

impl Received {
    /// wake − send, signed (never negative on one monotonic clock, but kept signed
    /// so that a broken mechanism shows rather than wraps).
    pub fn latency_ns(&self) -> i64 {
        self.woke_ns as i64 - self.sent_ns as i64
    }
}

/// The sending end of a one-way channel.
pub trait Tx: Send {
    /// Called once on the sending thread before the first send.
    fn prepare(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Sends one message carrying `stamp` (the send time); must not allocate.
    fn send(&mut self, stamp: u64) -> io::Result<()>;
}

/// The receiving end of a one-way channel.
pub trait Rx: Send {
    /// Called once on the receiving thread before the first receive.
    fn prepare(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Blocks for the next message; reads the clock as soon as it is woken.
    fn recv(&mut self) -> io::Result<Received>;
}

/// A one-way channel: both ends, created before the two sides start (and
/// before a fork, so that the receiver process inherits its end).
pub struct Channel {
    pub tx: Box<dyn Tx>,
    pub rx: Box<dyn Rx>,
}

/// What a mechanism may use to create its channel.
pub struct ChannelEnv<'a> {
    /// Unique within the run (names of FIFOs and message queues).
    pub tag: String,
    created: &'a RefCell<Vec<String>>,
}

impl ChannelEnv<'_> {
    /// Records a SysV object, which outlives every descriptor and process:
    /// for the result (`ipc_objects`) and in the state file that lets a later
    /// run remove it if this one is killed ([`leftovers`]).
    pub fn created_sysv(&self, kind: sys::SysvKind, id: i32) {
        let name = match kind {
            sys::SysvKind::Sem => "sysv_sem",
            sys::SysvKind::Msg => "sysv_msg",
        };
        self.created.borrow_mut().push(format!("{name} {id}"));
        leftovers::record(kind, id);
    }
}

/// How an exchange is timed (the doc lines are the CLI's help for each value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// one-way: latency = receiver's wake-up time - sender's send time
    Handoff,
    /// A sends, B replies on a second channel, A times the whole trip
    Roundtrip,
}

impl Pattern {
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Handoff => "handoff",
            Pattern::Roundtrip => "roundtrip",
        }
    }
}

/// Where the two sides run (the doc lines are the CLI's help for each value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Between {
    /// two threads of one process
    Threads,
    /// two processes (the receiver is forked)
    Processes,
}

impl Between {
    pub fn name(self) -> &'static str {
        match self {
            Between::Threads => "threads",
            Between::Processes => "processes",
        }
    }
}

/// One row of the mechanism table.
pub struct Mechanism {
    pub name: &'static str,
    /// `sync` (signals an event) or `data` (carries a message).
    pub kind: &'static str,
    pub patterns: &'static [Pattern],
    /// The pattern used when `--pattern` is not given.
    pub natural: Pattern,
    /// What the send and the wake-up are, in a few words.
    pub what: &'static str,
    pub make: fn(&ChannelEnv) -> io::Result<Channel>,
}

const BOTH: &[Pattern] = &[Pattern::Handoff, Pattern::Roundtrip];
const HANDOFF_ONLY: &[Pattern] = &[Pattern::Handoff];

/// Every mechanism, in the order runs use.
pub static MECHANISMS: &[Mechanism] = &[
    Mechanism {
        name: "futex",
        kind: "sync",
        patterns: BOTH,
        natural: Pattern::Handoff,
        what: "FUTEX_WAKE -> FUTEX_WAIT returns",
        make: futex::channel,
    },
    Mechanism {
        name: "posix-sem",
        kind: "sync",
        patterns: BOTH,
        natural: Pattern::Handoff,
        what: "sem_post -> sem_wait returns (unnamed, pshared)",
        make: posix_sem::channel,
    },
    Mechanism {
        name: "sysv-sem",
        kind: "sync",
        patterns: BOTH,
        natural: Pattern::Handoff,
        what: "semop(+1) -> semop(-1) returns",
        make: sysv_sem::channel,
    },
    Mechanism {
        name: "mutex",
        kind: "sync",
        patterns: HANDOFF_ONLY,
        natural: Pattern::Handoff,
        what: "pthread_mutex_unlock -> blocked pthread_mutex_lock returns",
        make: mutex::channel,
    },
    Mechanism {
        name: "condvar",
        kind: "sync",
        patterns: BOTH,
        natural: Pattern::Handoff,
        what: "pthread_cond_signal -> pthread_cond_wait returns with the mutex",
        make: condvar::channel,
    },
    Mechanism {
        name: "signal",
        kind: "sync",
        patterns: BOTH,
        natural: Pattern::Handoff,
        what: "tgkill(SIGUSR1) -> sigwaitinfo returns",
        make: signal::channel,
    },
    Mechanism {
        name: "eventfd",
        kind: "sync",
        patterns: BOTH,
        natural: Pattern::Handoff,
        what: "write(eventfd) -> read returns",
        make: eventfd::channel,
    },
    Mechanism {
        name: "pipe",
        kind: "data",
        patterns: BOTH,
        natural: Pattern::Roundtrip,
        what: "write 8 bytes -> read returns (one pipe per direction)",
        make: pipe::channel,
    },
    Mechanism {
        name: "fifo",
        kind: "data",
        patterns: BOTH,
        natural: Pattern::Roundtrip,
        what: "write 8 bytes -> read returns (one named FIFO per direction)",
        make: fifo::channel,
    },
    Mechanism {
        name: "unix-stream",
        kind: "data",
        patterns: BOTH,
        natural: Pattern::Roundtrip,
        what: "write 8 bytes -> read returns (SOCK_STREAM socketpair)",
        make: unix::stream_channel,
    },
    Mechanism {
        name: "unix-dgram",
        kind: "data",
        patterns: BOTH,
        natural: Pattern::Roundtrip,
        what: "send 8 bytes -> recv returns (SOCK_DGRAM socketpair)",
        make: unix::dgram_channel,
    },
    Mechanism {
        name: "posix-mq",
        kind: "data",
        patterns: BOTH,
        natural: Pattern::Roundtrip,
        what: "mq_send -> mq_receive returns",
        make: posix_mq::channel,
    },
    Mechanism {
        name: "sysv-mq",
        kind: "data",
        patterns: BOTH,
        natural: Pattern::Roundtrip,
        what: "msgsnd -> msgrcv returns",
        make: sysv_mq::channel,
    },
];

/// The mechanism called `name`.
pub fn find(name: &str) -> Option<&'static Mechanism> {
    MECHANISMS.iter().find(|m| m.name == name)
}

/// One experiment: a mechanism, a pattern, a placement and a period.
#[derive(Debug, Clone, Serialize)]
pub struct Session {
    pub mechanism: &'static str,
    pub pattern: Pattern,
    pub between: Between,
    pub period_ns: u64,
}

/// Every setting of an ipc run, defaults included (goes into the result document).
#[derive(Debug, Clone, Serialize)]
pub struct IpcPlan {
    /// The real-time choice, the loads and the outputs (`run.rs`).
    #[serde(flatten)]
    pub run: RunRequest,
    pub sessions: Vec<Session>,
    /// Exchanges per repetition.
    pub loops: u64,
    pub repetitions: u64,
    /// CPU of the sender (the periodic driver); `None`: not pinned.
    pub sender_cpu: Option<usize>,
    pub receiver_cpu: Option<usize>,
    pub placement: String,
    pub sender_priority: i32,
    pub receiver_priority: i32,
    pub start_delay_ns: u64,
    pub spikes: usize,
    /// Mechanism x pattern combinations left out of `all` (not supported).
    pub skipped: Vec<String>,
    /// The clock every time stamp is taken on.
    pub clock: MeasureClock,
}

impl IpcPlan {
    fn placement_label(&self) -> String {
        let c = |x: Option<usize>| x.map_or("*".to_string(), |c| c.to_string());
        format!("cpu{}->cpu{}", c(self.sender_cpu), c(self.receiver_cpu))
    }

    /// The label suffix shared by a session's series.
    pub fn suffix(&self, s: &Session) -> String {
        format!(
            "{} {} {}",
            s.between.name(),
            self.placement_label(),
            format_ns(s.period_ns)
        )
    }
}

/// What an ipc run is asked to do: plain settings, filled in by `cli.rs` (or
/// by code), validated by [`plan`].
#[derive(Debug, Clone)]
pub struct IpcOptions {
    /// Mechanism names, comma-separated, or `all`.
    pub mech: String,
    /// Patterns (empty: each mechanism's natural one).
    pub patterns: Vec<Pattern>,
    pub between: Vec<Between>,
    /// Sender and receiver CPU (`None`: the first two online CPUs).
    pub cpus: Option<(usize, usize)>,
    /// `None`: the receiver's priority minus 1.
    pub sender_priority: Option<u8>,
    pub periods_ns: Vec<u64>,
    pub loops: u64,
    pub repetitions: u64,
    /// The real-time choice, the loads and the outputs (`run.rs`).
    pub run: RunRequest,
}

/// Turns options into a validated plan (bad input: a usage error, exit 2).
pub fn plan(a: &IpcOptions) -> Result<IpcPlan> {
    // Mechanisms.
    let mut mechs: Vec<(&'static Mechanism, bool)> = Vec::new();
    for part in a.mech.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(usage(format!("--mech '{}': empty mechanism name", a.mech)));
        }
        if part == "all" {
            for m in MECHANISMS {
                if !mechs.iter().any(|(x, _)| x.name == m.name) {
                    mechs.push((m, false));
                }
            }
            continue;
        }
        let m = find(part).ok_or_else(|| {
            let known: Vec<&str> = MECHANISMS.iter().map(|m| m.name).collect();
            usage(format!(
                "unknown mechanism '{part}' (known: {}, or all)",
                known.join(", ")
            ))
        })?;
        match mechs.iter_mut().find(|(x, _)| x.name == m.name) {
            Some(e) => e.1 = true,
            None => mechs.push((m, true)),
        }
    }

    // Patterns per mechanism.
    let wanted = distinct(&a.patterns);
    let betweens = distinct(&a.between);
    let periods = distinct(&a.periods_ns);
    for &p in &periods {
        crate::limits::check_period("-i/--period", p)?;
    }
    let mut skipped = Vec::new();
    let mut combos: Vec<(&'static Mechanism, Pattern)> = Vec::new();
    for (m, explicit) in &mechs {
        if wanted.is_empty() {
            combos.push((m, m.natural));
            continue;
        }
        for &p in &wanted {
            if m.patterns.contains(&p) {
                combos.push((m, p));
            } else if *explicit {
                return Err(usage(format!(
                    "mechanism {} does not support --pattern {} (it supports: {})",
                    m.name,
                    p.name(),
                    m.patterns
                        .iter()
                        .map(|p| p.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            } else {
                skipped.push(format!("{} {}", m.name, p.name()));
            }
        }
    }
    if combos.is_empty() {
        return Err(usage(
            "nothing to measure: no mechanism supports the patterns asked for",
        ));
    }
    let mut sessions = Vec::new();
    for &between in &betweens {
        for &period_ns in &periods {
            for (m, pattern) in &combos {
                sessions.push(Session {
                    mechanism: m.name,
                    pattern: *pattern,
                    between,
                    period_ns,
                });
            }
        }
    }

    // Sizes: every sample is kept until the experiment ends (8 bytes x 4 arrays).
    let n = a.loops.saturating_mul(a.repetitions);
    if n > 20_000_000 {
        return Err(usage(format!(
            "--loops x --repetitions = {n} exchanges per experiment; at most 20000000"
        )));
    }

    // Placement.
    let online = online_cpus();
    let (sender_cpu, receiver_cpu, placement) = match a.cpus {
        Some(p) => {
            for c in [p.0, p.1] {
                if !online.contains(&c) {
                    return Err(usage(format!(
                        "--cpus {},{}: CPU {c} is not online (online: {})",
                        p.0,
                        p.1,
                        format_cpu_list(&online)
                    )));
                }
            }
            let how = if p.0 == p.1 {
                "same CPU"
            } else {
                "across CPUs"
            };
            (
                Some(p.0),
                Some(p.1),
                format!("sender on CPU {}, receiver on CPU {} ({how})", p.0, p.1),
            )
        }
        None if online.len() >= 2 => (
            Some(online[0]),
            Some(online[1]),
            format!(
                "sender on CPU {}, receiver on CPU {} (across CPUs, the default; --cpus {},{} for the same CPU)",
                online[0], online[1], online[0], online[0]
            ),
        ),
        None if online.len() == 1 => (
            Some(online[0]),
            Some(online[0]),
            format!("sender and receiver on CPU {} (the only online CPU)", online[0]),
        ),
        None => (None, None, "not pinned".to_string()),
    };

    let rt = a.run.rt;
    let (receiver_priority, sender_priority) = if rt.policy.is_rt() {
        let r = rt.priority;
        let s = a.sender_priority.map_or((r - 1).max(1), i32::from);
        (r, s)
    } else {
        (0, 0)
    };

    a.run.check(&[])?;
    Ok(IpcPlan {
        run: RunRequest {
            rt,
            loads: a.run.loads.clone(),
            load_cpus: a.run.load_cpus.clone(),
            outputs: a.run.outputs.clone(),
        },
        sessions,
        loops: a.loops,
        repetitions: a.repetitions,
        sender_cpu,
        receiver_cpu,
        placement,
        sender_priority,
        receiver_priority,
        start_delay_ns: 1_000_000,
        spikes: 16,
        skipped,
        clock: MeasureClock::Monotonic,
    })
}

/// The values of `v` in their first order, each once.
fn distinct<T: PartialEq + Copy>(v: &[T]) -> Vec<T> {
    v.iter().fold(Vec::new(), |mut out, &x| {
        if !out.contains(&x) {
            out.push(x);
        }
        out
    })
}

/// The mechanism table as text (`--list`).
pub fn list_text() -> String {
    let mut rows = vec![vec![
        "mechanism".to_string(),
        "kind".into(),
        "patterns".into(),
        "default".into(),
        "timed from -> to".into(),
    ]];
    for m in MECHANISMS {
        rows.push(vec![
            m.name.to_string(),
            m.kind.to_string(),
            m.patterns
                .iter()
                .map(|p| p.name())
                .collect::<Vec<_>>()
                .join(","),
            m.natural.name().to_string(),
            m.what.to_string(),
        ]);
    }
    summary::render(&rows)
}

/// Nearest-rank quantile of sorted values (`q` in 0..=1); 0 when empty.
pub fn quantile(sorted: &[i64], q: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Summary of one repetition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepetitionSummary {
    pub repetition: u64,
    pub count: u64,
    pub min_ns: i64,
    pub p50_ns: i64,
    pub p99_ns: i64,
    pub max_ns: i64,
}

/// Splits `values` into repetitions of `loops` and summarises each (a last,
/// incomplete repetition is summarised as far as it got).
pub fn repetition_summaries(values: &[i64], loops: usize) -> Vec<RepetitionSummary> {
    values
        .chunks(loops.max(1))
        .enumerate()
        .map(|(r, chunk)| {
            let mut v = chunk.to_vec();
            v.sort_unstable();
            RepetitionSummary {
                repetition: r as u64,
                count: v.len() as u64,
                min_ns: v[0],
                p50_ns: quantile(&v, 0.5),
                p99_ns: quantile(&v, 0.99),
                max_ns: v[v.len() - 1],
            }
        })
        .collect()
}

fn series_from(
    label: String,
    values: &[i64],
    t: &[u64],
    overruns: Option<&[u32]>,
    cpu: Option<usize>,
    spikes: usize,
) -> Series {
    let origin = t.first().copied().unwrap_or(0);
    let mut rec = SeriesRecorder::new(origin, spikes, None);
    for (i, &v) in values.iter().enumerate() {
        rec.record(&Sample {
            seq: i as u64,
            t_ns: t.get(i).copied().unwrap_or(origin),
            latency_ns: v,
            overruns: overruns.and_then(|o| o.get(i).copied()).unwrap_or(0),
            cpu: cpu.unwrap_or(0) as u32,
        });
    }
    rec.to_series(&label, 0)
}

/// The two series of one experiment: the mechanism's latency and the driving
/// task's activation latency, each with per-repetition summaries.
fn session_series(plan: &IpcPlan, s: &Session, d: &runner::SessionData) -> Vec<Series> {
    let suffix = plan.suffix(s);
    let n = d.valid;
    let mut lat = series_from(
        format!("{} {} {suffix}", s.mechanism, s.pattern.name()),
        &d.lat[..n],
        &d.t[..n],
        None,
        match s.pattern {
            Pattern::Handoff => plan.receiver_cpu,
            Pattern::Roundtrip => plan.sender_cpu,
        },
        plan.spikes,
    );
    let mut act = series_from(
        format!(
            "periodic activation {} {} {suffix}",
            s.mechanism,
            s.pattern.name()
        ),
        &d.jitter[..d.done],
        &d.t[..d.done],
        Some(&d.overruns[..d.done]),
        plan.sender_cpu,
        plan.spikes,
    );
    let loops = plan.loops as usize;
    for (series, values, what) in [
        (&mut lat, &d.lat[..n], "latency"),
        (&mut act, &d.jitter[..d.done], "activation"),
    ] {
        let a = &mut series.attributes;
        a.insert("measures".into(), json!(what));
        a.insert("mechanism".into(), json!(s.mechanism));
        a.insert("pattern".into(), json!(s.pattern));
        a.insert("between".into(), json!(s.between));
        a.insert("sender_cpu".into(), json!(plan.sender_cpu));
        a.insert("receiver_cpu".into(), json!(plan.receiver_cpu));
        a.insert("period_ns".into(), json!(s.period_ns));
        a.insert("repetitions".into(), json!(plan.repetitions));
        a.insert("loops".into(), json!(plan.loops));
        a.insert("policy".into(), json!(plan.run.rt.policy.name()));
        a.insert("sender_priority".into(), json!(plan.sender_priority));
        a.insert("receiver_priority".into(), json!(plan.receiver_priority));
        a.insert(
            "repetition_summaries".into(),
            json!(repetition_summaries(values, loops)),
        );
        if let Some(st) = &d.sender {
            a.insert("sender_tid".into(), json!(st.tid));
            a.insert("sender_policy".into(), json!(st.policy));
        }
        a.insert("receiver_behind".into(), json!(d.behind));
        a.insert("ipc_objects".into(), json!(d.objects));
    }
    vec![lat, act]
}

fn header(plan: &IpcPlan) -> String {
    let mechs: Vec<&str> = plan.sessions.iter().map(|s| s.mechanism).collect();
    let mut uniq: Vec<&str> = Vec::new();
    for m in mechs {
        if !uniq.contains(&m) {
            uniq.push(m);
        }
    }
    let prio = if plan.run.rt.policy.is_rt() {
        format!(
            "SCHED_{} receiver {} sender {}",
            plan.run.rt.policy.name().to_uppercase(),
            plan.receiver_priority,
            plan.sender_priority
        )
    } else {
        format!("SCHED_{}", plan.run.rt.policy.name().to_uppercase())
    };
    format!(
        "rtscope ipc: {} experiment{} ({}), {} x {} exchanges each; {}; {prio}",
        plan.sessions.len(),
        if plan.sessions.len() == 1 { "" } else { "s" },
        uniq.join(" "),
        plan.repetitions,
        plan.loops,
        plan.placement,
    )
}

/// Refuses to start when the real-time setup cannot work (no privilege, a CPU
/// that cannot be used), before anything is measured: one line, exit 1.
fn preflight(plan: &IpcPlan) -> Result<()> {
    let mut checks = vec![(plan.sender_cpu, plan.sender_priority)];
    if plan.receiver_cpu != plan.sender_cpu || plan.receiver_priority != plan.sender_priority {
        checks.push((plan.receiver_cpu, plan.receiver_priority));
    }
    for (cpu, priority) in checks {
        let setup = rtscope_core::rt::ThreadSetup {
            policy: plan.run.rt.policy,
            priority,
            cpus: cpu.into_iter().collect(),
            timer_slack_ns: None,
            prefault_stack: 0,
            block_signals: vec![],
        };
        std::thread::spawn(move || setup.apply())
            .join()
            .map_err(|_| anyhow::anyhow!("the real-time check panicked"))?
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(())
}

/// `rtscope ipc --list`: the mechanisms, what they measure, their patterns.
pub fn list() -> Result<i32> {
    crate::output::say(&list_text());
    Ok(EXIT_OK)
}

/// `rtscope ipc --cleanup`: removes what killed runs left behind.
pub fn cleanup() -> Result<i32> {
    Ok(leftovers::cleanup_command())
}

/// Runs the experiment from the command line: measure, print, exit code.
pub fn run(a: &IpcOptions) -> Result<i32> {
    let plan = plan(a)?;
    preflight(&plan)?;
    let stale = leftovers::clean_stale();
    if !plan.run.outputs.quiet {
        for l in &stale.removed {
            crate::output::say(&format!("{l} of an earlier run\n"));
        }
    }
    let mut errors: Vec<String> = Vec::new();
    let f = super::repeat::finished(&plan.run.outputs, || {
        let (f, new) = execute(&plan)?;
        for e in new {
            if !errors.contains(&e) {
                errors.push(e);
            }
        }
        Ok(f)
    })?;
    let mut summary = crate::output::ipc::summary_text(&f.doc, plan.repetitions);
    summary.push_str(&super::repeat::note(&f.doc, plan.run.outputs.repeat));
    let code = run::deliver(&f.doc, &plan.run.outputs, vec![], &summary);
    for e in &errors {
        eprintln!("error: {e}");
    }
    Ok(if errors.is_empty() { code } else { EXIT_RUN })
}

/// One run of every planned session: the finished run and the errors of
/// sessions that failed (also in the document's warnings).
fn execute(plan: &IpcPlan) -> Result<(run::Finished, Vec<String>)> {
    let run = run::begin(&plan.run.settings(), &header(plan))?;
    let mut series = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    let mut end = EndReason::Loops;
    let mut threads_stuck = false;
    for (k, s) in plan.sessions.iter().enumerate() {
        if run.stopped() {
            end = EndReason::Interrupted;
            break;
        }
        let name = format!("{} {} {}", s.mechanism, s.pattern.name(), plan.suffix(s));
        if threads_stuck && s.between == Between::Processes {
            errors.push(format!(
                "{name}: not run: a thread of an earlier experiment was left behind, fork is unsafe"
            ));
            continue;
        }
        match runner::run_session(plan, s, &k.to_string(), &run.env) {
            Ok(d) => {
                threads_stuck |= d.thread_left;
                if let Some(e) = &d.error {
                    errors.push(format!("{name}: {e}"));
                }
                let new = session_series(plan, s, &d);
                if !plan.run.outputs.quiet {
                    let l = &new[0].stats;
                    crate::output::say(&format!(
                        "  {name}: {} samples, p50 {} max {}\n",
                        l.count,
                        format_ns(l.p50_ns),
                        format_ns(l.max_ns.max(0) as u64)
                    ));
                }
                series.extend(new);
                if d.interrupted {
                    end = EndReason::Interrupted;
                    break;
                }
                if d.setup_failed {
                    // Every later experiment would fail the same way.
                    break;
                }
            }
            Err(e) => errors.push(format!("{name}: {}", crate::error::one_line(&e))),
        }
    }
    if !errors.is_empty() && end == EndReason::Loops {
        end = EndReason::Error;
    }

    let mut warnings: Vec<String> = plan
        .skipped
        .iter()
        .map(|s| format!("{s}: not supported, skipped"))
        .collect();
    warnings.extend(errors.iter().cloned());
    let f = run.finish("ipc", plan, series, end, warnings);
    Ok((f, errors))
}

#[cfg(test)]
mod tests;
