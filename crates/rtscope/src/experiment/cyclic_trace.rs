//! `cyclic --trace`: every sample split into the stages of its wake-up with
//! kernel trace events, read by the aggregator (never by a measurement
//! thread) from a private tracefs instance
//! ([`rtscope_core::trace::Instance`]).
//!
//! The instance is opened before the run starts (a missing tracefs is
//! refused at once, or `--trace=auto` runs untraced), filtered to the
//! measurement threads once their tids are known, drained at every poll of
//! the aggregator, and removed when the [`Tracer`] is dropped: at the end of
//! the run, on an error, or after a stop signal. The join and the stages are
//! in [`rtscope_core::trace::stages`]. With `--trace-outliers`, interrupts,
//! softirqs and every context switch of the traced CPUs are recorded too and
//! kept for two seconds, so that the window of a sample above the threshold
//! can be cut out when the sample is joined.

use std::collections::{HashMap, VecDeque};

use anyhow::Result;
use serde::Serialize;

use rtscope_core::named::MeasureClock;
use rtscope_core::result::{ContextEntry, Series, TraceReport};
use rtscope_core::sample::Sample;
use rtscope_core::trace::cause::{
    diagnose, CauseTable, Diagnosis, Outlier, OutlierCause, SchedWatch,
};
use rtscope_core::trace::event::softirq_name;
use rtscope_core::trace::stages::{intended, Joiner, KernelWake, StageRecorder, WakeTracker};
use rtscope_core::trace::{Decoder, Event, Instance, Kind, TraceConfig};

use super::cyclic::CyclicOptions;
use crate::error::usage;
use rtscope_core::cyclic::WakeMethod;

/// `--trace[=on|auto]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum TraceMode {
    /// Untraced.
    #[default]
    #[value(skip)]
    Off,
    /// Trace; where tracing is not possible, say why and exit with code 2.
    On,
    /// Trace where possible, else run untraced (with a note).
    Auto,
}

/// The tracing settings of a planned run.
#[derive(Debug, Clone, Serialize)]
pub struct TracePlan {
    pub mode: TraceMode,
    pub outliers_ns: Option<u64>,
    pub buffer_kb: u32,
    /// `--trace-irqs-off` (left out of the document when off).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub irqs_off: bool,
}

/// Validates the tracing options (`None`: untraced).
pub fn plan(a: &CyclicOptions) -> Result<Option<TracePlan>> {
    if a.trace == TraceMode::Off {
        return Ok(None);
    }
    if a.clock != MeasureClock::Monotonic {
        return Err(usage(
            "--trace needs --clock monotonic (the trace clock is CLOCK_MONOTONIC)",
        ));
    }
    if a.wake != WakeMethod::Absolute {
        return Err(usage(
            "--trace works with --wake absolute (the kernel's timer expiry is then the intended wake time)",
        ));
    }
    if a.run.outputs.repeat > 1 {
        return Err(usage("--repeat cannot be combined with --trace"));
    }
    if !(64..=1_048_576).contains(&a.trace_buffer_kb) {
        return Err(usage("--trace-buffer: 64 to 1048576 KiB"));
    }
    Ok(Some(TracePlan {
        mode: a.trace,
        outliers_ns: a.trace_outliers_ns,
        buffer_kb: a.trace_buffer_kb,
        irqs_off: a.trace_irqs_off && a.trace_outliers_ns.is_some(),
    }))
}

/// The events of the stages.
const STAGE_EVENTS: [&str; 5] = [
    "timer/hrtimer_start",
    "timer/hrtimer_expire_entry",
    "sched/sched_waking",
    "sched/sched_switch",
    "raw_syscalls/sys_exit",
];

/// Without these no stage can be measured.
const REQUIRED: [&str; 3] = [
    "timer/hrtimer_start",
    "timer/hrtimer_expire_entry",
    "raw_syscalls/sys_exit",
];

/// The `preemptirq` events `--trace-irqs-off` enables where the kernel has
/// them.
const IRQS_OFF_EVENTS: [&str; 2] = ["preemptirq/irq_disable", "preemptirq/irq_enable"];

/// How long events are kept for outlier windows, ns.
const HISTORY_NS: u64 = 2_000_000_000;
/// The most one read of the trace may take during the run (it is done every
/// 50 ms: a flood of events must not hold the loop, and with it the stop).
const PUMP_TIME: std::time::Duration = std::time::Duration::from_millis(100);
/// The most the last read may take after a stop signal: what is left then
/// is lost with the instance (the samples it would have split are unsplit).
const FINAL_READ_TIME: std::time::Duration = std::time::Duration::from_millis(500);
/// The most the last read may take after a run that ended by itself (its
/// duration, its loops): a reader behind the run reads what is still
/// buffered, in [`PUMP_TIME`] steps, until a stop signal comes.
const FINAL_READ_MAX: std::time::Duration = std::time::Duration::from_secs(10);
/// Outliers kept one by one with their causes (all are counted in the table).
const OUTLIERS_KEPT: usize = 10_000;
/// Samples and kernel wake-ups wait this long for each other, ns: a sample
/// this long after the trace has been read past it, a wake-up this long
/// after the newest sample.
const JOIN_HORIZON_NS: u64 = 2_000_000_000;
/// The most samples of one thread that wait for their wake-ups (a reader
/// far behind: 20 s of a 1 kHz thread).
const MAX_WAITING: usize = 20_000;

/// Opens the instance before the run (`Ok(None)`: `--trace=auto` and
/// tracing is not possible; a note was printed unless `quiet`). `cpus`: the
/// measured CPUs (empty: all); the housekeeping CPUs where the timers of
/// threads on `nohz_full` CPUs fire are traced too
/// ([`rtscope_core::trace::timer_cpus`]).
pub fn open(tp: &TracePlan, cpus: &[usize], quiet: bool) -> Result<Option<Instance>> {
    let cpus = if cpus.is_empty() {
        vec![]
    } else {
        rtscope_core::trace::timer_cpus_of(std::path::Path::new("/"), cpus)
    };
    let mut events: Vec<String> = STAGE_EVENTS.iter().map(|s| s.to_string()).collect();
    if tp.outliers_ns.is_some() {
        for e in TraceConfig::noise_events() {
            if !events.contains(&e) {
                events.push(e);
            }
        }
    }
    // --trace-irqs-off, where the kernel has the events
    // (CONFIG_PREEMPTIRQ_TRACEPOINTS, the irqsoff tracer's): interrupts off,
    // told apart from a stall below the kernel.
    if tp.irqs_off {
        events.extend(IRQS_OFF_EVENTS.iter().map(|e| format!("{e}?")));
    }
    let cfg = TraceConfig {
        cpus,
        events,
        buffer_kb: tp.buffer_kb,
    };
    let res = Instance::open(&cfg).and_then(|i| {
        match REQUIRED.iter().find(|r| !i.enabled.iter().any(|e| e == *r)) {
            Some(r) => Err(rtscope_core::trace::TraceError::Setting(
                r.into(),
                std::io::Error::other("this kernel lacks the event"),
            )),
            None => Ok(i),
        }
    });
    match (res, tp.mode) {
        (Ok(i), _) => {
            if tp.irqs_off
                && !quiet
                && !i
                    .enabled
                    .iter()
                    .any(|e| IRQS_OFF_EVENTS.contains(&e.as_str()))
            {
                eprintln!("note: {IRQS_OFF_UNAVAILABLE}");
            }
            Ok(Some(i))
        }
        (Err(e), TraceMode::Auto) => {
            if !quiet {
                eprintln!("note: --trace=auto: {e}; running untraced");
            }
            Ok(None)
        }
        (Err(e), _) => Err(usage(format!("--trace: {e}"))),
    }
}

/// The aggregator's tracing state.
pub struct Tracer {
    inst: Instance,
    outliers_ns: Option<u64>,
    keep: usize,
    tracker: WakeTracker,
    joiners: Vec<Joiner>,
    labels: Vec<String>,
    by_tid: HashMap<i32, usize>,
    rec: StageRecorder,
    /// Events read but not taken yet (see [`Tracer::pump`]).
    batch: Vec<Event>,
    /// The events of the last read (kept for its allocation).
    fresh: Vec<Event>,
    /// Events up to this time have been taken (read on every CPU).
    taken_until: u64,
    history: VecDeque<Event>,
    newest_intended: u64,
    samples: u64,
    /// Samples of a thread the tracer does not follow (counted unmatched).
    stray_samples: u64,
    /// Outlier windows: (latency, series, seq, entries, cause), worst first.
    contexts: Vec<(i64, String, u64, Vec<ContextEntry>, Diagnosis)>,
    /// Task priorities and RT throttling seen (`--trace-outliers`).
    watch: SchedWatch,
    /// The causes of all outliers.
    causes: CauseTable,
    /// Each outlier with its cause (the first [`OUTLIERS_KEPT`]).
    outliers: Vec<OutlierCause>,
    /// Filters that could not be set (the run is then only heavier).
    pub filter_errors: Vec<String>,
    /// `--trace-irqs-off` asked for on a kernel without the events.
    irqs_off_unavailable: bool,
}

/// The warning of `--trace-irqs-off` on a kernel without the events.
const IRQS_OFF_UNAVAILABLE: &str = "--trace-irqs-off: this kernel has no preemptirq events (CONFIG_PREEMPTIRQ_TRACEPOINTS): interrupts off in the kernel stay unnamed";

impl Tracer {
    /// Follows the threads `tids` (labels `labels`), keeping the `keep` worst samples.
    pub fn new(
        inst: Instance,
        tp: &TracePlan,
        tids: &[i32],
        labels: Vec<String>,
        origin_ns: u64,
        keep: usize,
    ) -> Tracer {
        let any = |field: &str| {
            tids.iter()
                .map(|t| format!("{field} == {t}"))
                .collect::<Vec<_>>()
                .join(" || ")
        };
        let mut filters = vec![
            ("timer/hrtimer_start", any("common_pid")),
            ("sched/sched_waking", any("pid")),
            ("raw_syscalls/sys_exit", any("common_pid")),
        ];
        if tp.outliers_ns.is_none() {
            filters.push(("sched/sched_switch", any("next_pid")));
        }
        let mut filter_errors = Vec::new();
        for (ev, f) in filters {
            if inst.enabled.iter().any(|e| e == ev) {
                if let Err(e) = inst.set_filter(ev, &f) {
                    filter_errors.push(format!("{ev}: {e}"));
                }
            }
        }
        let irqs_off_unavailable = tp.irqs_off
            && !inst
                .enabled
                .iter()
                .any(|e| IRQS_OFF_EVENTS.contains(&e.as_str()));
        Tracer {
            irqs_off_unavailable,
            inst,
            outliers_ns: tp.outliers_ns,
            keep,
            tracker: WakeTracker::new(tids),
            joiners: tids.iter().map(|_| Joiner::default()).collect(),
            labels,
            by_tid: tids.iter().enumerate().map(|(i, t)| (*t, i)).collect(),
            rec: StageRecorder::new(origin_ns, keep),
            batch: Vec::new(),
            fresh: Vec::new(),
            taken_until: 0,
            history: VecDeque::new(),
            newest_intended: 0,
            samples: 0,
            stray_samples: 0,
            contexts: Vec::new(),
            watch: SchedWatch::with_rt_bandwidth(rt_bandwidth()),
            causes: CauseTable::new(tp.outliers_ns.unwrap_or(0)),
            outliers: Vec::new(),
            filter_errors,
        }
    }

    /// A sample of thread `i`, as the aggregator drains it.
    pub fn sample(&mut self, i: usize, s: &Sample) {
        self.samples += 1;
        self.newest_intended = self.newest_intended.max(intended(s));
        let Some(j) = self.joiners.get_mut(i) else {
            self.stray_samples += 1;
            return;
        };
        if let Some((s, w)) = j.sample(s) {
            self.joined(i, &s, &w);
        }
    }

    /// Reads the events available now and joins what completed.
    ///
    /// The per-CPU buffers are read one after the other, so a CPU read early
    /// may still get events older than the newest of a CPU read later: only
    /// events stamped before the read began are taken now (every CPU had
    /// written those); the rest wait for the next read, in time order.
    pub fn pump(&mut self) {
        let before = rtscope_core::sys::clock_ns(libc::CLOCK_MONOTONIC);
        self.pump_until(before, PUMP_TIME);
    }

    /// Reads the events available now (for `time` at most) and takes those
    /// stamped up to `until`.
    fn pump_until(&mut self, until: u64, time: std::time::Duration) {
        let mut batch = std::mem::take(&mut self.batch);
        let mut fresh = std::mem::take(&mut self.fresh);
        fresh.clear();
        self.inst
            .read_until(Some(std::time::Instant::now() + time), |e| fresh.push(*e));
        // Cut short: only what every CPU has given is complete.
        let until = self.inst.complete_until.map_or(until, |c| until.min(c));
        self.tracker.losses(&fresh, self.taken_until);
        batch.append(&mut fresh);
        self.fresh = fresh;
        self.taken_until = self.taken_until.max(until.min(u64::MAX - 1));
        batch.sort_by_key(|e| e.ts);
        let ready = batch.partition_point(|e| e.ts <= until);
        for e in &batch[..ready] {
            self.tracker.event(e);
        }
        if self.outliers_ns.is_some() {
            for e in &batch[..ready] {
                self.watch.event(e);
            }
            self.history.extend(batch[..ready].iter().copied());
        }
        batch.drain(..ready);
        self.batch = batch;
        for w in self.tracker.take() {
            let Some(&i) = self.by_tid.get(&w.tid) else {
                continue;
            };
            if let Some((s, w)) = self.joiners[i].wake(&w) {
                self.joined(i, &s, &w);
            }
        }
        // Trimmed after the joins: a read that brings more than HISTORY_NS
        // of events at once (a reader behind, the last read after the stop)
        // must not drop the windows of the wake-ups it completes (their
        // outliers were left with no event, "unknown").
        let newest = self.history.back().map_or(0, |e| e.ts);
        while self
            .history
            .front()
            .is_some_and(|e| e.ts + HISTORY_NS < newest)
        {
            self.history.pop_front();
        }
        // A sample waits until the trace has been read past it: a reader
        // behind the run (a slow machine, a flood of events) must not leave
        // its samples unsplit, the outliers among them without a cause.
        let samples_before = self.taken_until.saturating_sub(JOIN_HORIZON_NS);
        let wakes_before = self.newest_intended.saturating_sub(JOIN_HORIZON_NS);
        for j in &mut self.joiners {
            j.expire_each(samples_before, wakes_before, MAX_WAITING);
        }
    }

    fn joined(&mut self, i: usize, s: &Sample, w: &KernelWake) {
        // Its time is the one the thread asked for: its timer is the
        // thread's sleep timer.
        self.tracker.confirm(w);
        let Some(st) = self.rec.record(&self.labels[i], s, w) else {
            return;
        };
        let Some(th) = self.outliers_ns else {
            return;
        };
        if s.latency_ns < th as i64 {
            return;
        }
        // Every outlier gets its cause, from the events of its window.
        let hist = self.history.make_contiguous();
        let from = hist.partition_point(|e| e.ts < w.armed_ns);
        let to = hist.partition_point(|e| e.ts <= w.exit_ns.unwrap_or(u64::MAX));
        let o = Outlier {
            wake: w,
            stages: &st,
            latency_ns: s.latency_ns,
            own_prio: None,
        };
        let d = diagnose(&o, &hist[from..to], &self.inst.decoder, &self.watch);
        self.causes.add(&d, s.cpu, s.latency_ns);
        if self.outliers.len() < OUTLIERS_KEPT {
            self.outliers.push(OutlierCause {
                series: self.labels[i].clone(),
                seq: s.seq,
                t_ns: s.t_ns,
                cpu: s.cpu,
                latency_ns: s.latency_ns,
                diagnosis: d.clone(),
            });
        }
        if self.keep == 0 {
            return;
        }
        let pos = self
            .contexts
            .iter()
            .position(|c| c.0 < s.latency_ns)
            .unwrap_or(self.contexts.len());
        if pos >= self.keep {
            return;
        }
        let entries = context(hist[from..to].iter(), w, &self.inst.decoder);
        self.contexts.insert(
            pos,
            (s.latency_ns, self.labels[i].clone(), s.seq, entries, d),
        );
        self.contexts.truncate(self.keep);
    }

    /// Ends tracing: the last events are read, the instance removed. Returns
    /// the stage series, the report, warnings, and those of them that say
    /// why samples were not split (for stderr, whatever `-q` asks).
    #[allow(clippy::type_complexity)]
    ///
    /// `signalled` says whether a stop signal has come: after one, the last
    /// read takes [`FINAL_READ_TIME`] at most; after a run that ended by
    /// itself, it goes on while events are buffered, up to
    /// [`FINAL_READ_MAX`] or until a stop signal.
    pub fn finish(
        mut self,
        signalled: impl Fn() -> bool,
    ) -> (Vec<Series>, TraceReport, Vec<String>, Vec<String>) {
        self.inst.stop();
        let behind = self.inst.cut_short;
        let began = std::time::Instant::now();
        let final_left = if signalled() {
            self.pump_until(u64::MAX, FINAL_READ_TIME);
            self.inst.cut_short > behind
        } else {
            loop {
                let cut = self.inst.cut_short;
                self.pump_until(u64::MAX, PUMP_TIME);
                if self.inst.cut_short == cut {
                    break false;
                }
                if signalled() || began.elapsed() >= FINAL_READ_MAX {
                    break true;
                }
            }
        };
        let final_read = began.elapsed();
        let mut unmatched_samples = self.stray_samples;
        let mut unmatched_wakes = 0;
        for j in &mut self.joiners {
            j.finish();
            unmatched_samples += j.unmatched_samples;
            unmatched_wakes += j.unmatched_wakes;
        }
        let overruns = self.inst.overruns();
        let dec = &self.inst.decoder;
        let mut worst = self.rec.worst(|p, cpu| dec.task_name(p, cpu));
        for w in &mut worst {
            if let Some(c) = self
                .contexts
                .iter()
                .find(|c| c.1 == w.series && c.2 == w.seq)
            {
                w.context = c.3.clone();
                w.cause = Some(c.4.clone());
            }
        }
        let report = TraceReport {
            clock: "mono".into(),
            instance: self
                .inst
                .dir()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            events: self.inst.enabled.clone(),
            missing_events: self.inst.missing.clone(),
            events_read: self.inst.events,
            lost_pages: self.inst.lost_pages,
            lost_events: self.inst.lost_events,
            overruns,
            samples: self.samples,
            joined: self.rec.joined,
            incomplete: self.rec.incomplete,
            unmatched_samples,
            unmatched_wakes,
            observed: self.rec.observed(),
            accuracy: self.rec.accuracy(),
            worst,
            causes: self.outliers_ns.map(|_| self.causes.clone()),
            outliers: std::mem::take(&mut self.outliers),
        };
        let mut warnings = Vec::new();
        let mut loud = Vec::new();
        if report.lost_pages > 0 || report.overruns > 0 {
            loud.push(format!(
                "the trace lost events ({} overrun, {} pages with losses; raise --trace-buffer): {} of {} samples could not be split",
                report.overruns,
                report.lost_pages,
                report.samples - report.joined,
                report.samples
            ));
            warnings.extend(loud.iter().cloned());
        } else if report.samples > report.joined {
            let line = unsplit_line(&report, self.tracker.unseen_expiry, &self.inst.cpus);
            loud.push(line.clone());
            warnings.push(line);
        }
        if report.accuracy.below_kernel > 0 {
            warnings.push(format!(
                "accuracy check failed: {} of {} samples are below the kernel's bound (sys_exit - expires), by up to {} ns",
                report.accuracy.below_kernel,
                report.accuracy.checked,
                -report.accuracy.min_ns
            ));
        }
        for e in &self.filter_errors {
            warnings.push(format!("trace filter not set (more events recorded): {e}"));
        }
        if self.irqs_off_unavailable {
            warnings.push(IRQS_OFF_UNAVAILABLE.into());
        }
        if final_left {
            warnings.push(format!(
                "the trace came faster than it could be read: {behind} reads were cut short during the run ({} ms each), and what was still buffered after {:.1} s of reading at the end was not read{}",
                PUMP_TIME.as_millis(),
                final_read.as_secs_f64(),
                if signalled() { " (a stop signal)" } else { "" }
            ));
        } else if behind > 0 {
            warnings.push(format!(
                "the trace came faster than it could be read: {behind} reads were cut short during the run ({} ms each); the reader caught up in {:.1} s after the run",
                PUMP_TIME.as_millis(),
                final_read.as_secs_f64()
            ));
        }
        let series = self.rec.series();
        (series, report, warnings, loud)
        // `self.inst` is dropped here: the instance is removed.
    }
}

/// The warning of samples left unsplit (without losses), with why where the
/// tracker saw it: `unseen` timers of the threads expired on CPUs outside
/// `cpus`, the traced ones.
fn unsplit_line(report: &TraceReport, unseen: u64, cpus: &[usize]) -> String {
    let why = if unseen > 0 {
        format!(
            " ({unseen} timers of the threads fired where the trace did not look: traced CPUs {}; a thread's timer fires on a housekeeping CPU under nohz_full and kernel.timer_migration=1)",
            cpu_names(cpus)
        )
    } else {
        String::new()
    };
    format!(
        "{} of {} samples not split into stages: {} without their kernel wake-up, {} whose record lacks the timer interrupt or the syscall exit{why}",
        report.samples - report.joined,
        report.samples,
        report.unmatched_samples,
        report.incomplete
    )
}

/// A CPU list as `0-3,8` (`all` when empty).
fn cpu_names(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        return "all".into();
    }
    rtscope_core::units::format_cpu_list(cpus)
}

/// What ran on the CPUs of a wake-up from the arming of its timer to its
/// return to user space, from events in time order: interrupts, softirqs,
/// system vectors and NMIs with their durations, the tasks that held a CPU
/// until a switch, and the wake-up's own steps as markers. Times relative
/// to the intended wake time.
pub fn context<'a>(
    events: impl Iterator<Item = &'a Event>,
    w: &KernelWake,
    dec: &Decoder,
) -> Vec<ContextEntry> {
    const MAX: usize = 200;
    let Some(end) = w.exit_ns else {
        return vec![];
    };
    let start = w.armed_ns;
    let mut cpus = vec![w.armed_cpu, w.irq_cpu, w.exit_cpu];
    cpus.sort_unstable();
    cpus.dedup();
    let rel = |t: u64| t as i64 - w.expires_ns as i64;
    let mut out: Vec<ContextEntry> = Vec::new();
    // Per CPU: open handlers (kind, what, start) and the last switch time.
    let mut open: HashMap<u32, Vec<(&'static str, String, u64)>> = HashMap::new();
    let mut last_switch: HashMap<u32, u64> = HashMap::new();
    let push =
        |out: &mut Vec<ContextEntry>, t0: u64, t1: u64, cpu: u32, kind: &str, what: String| {
            out.push(ContextEntry {
                start_ns: rel(t0),
                duration_ns: t1.saturating_sub(t0),
                cpu,
                kind: kind.into(),
                what,
            });
        };
    for (t, kind, what) in [
        (Some(w.armed_ns), "armed", "timer armed".to_string()),
        (w.irq_ns, "timer", "timer interrupt (hrtimer)".to_string()),
        (w.waking_ns, "waking", "thread woken (sched_waking)".into()),
        (w.switch_ns, "switch", "switched in".into()),
        (w.exit_ns, "exit", "wait returns (sys_exit)".into()),
    ] {
        if let Some(t) = t {
            push(&mut out, t, t, w.exit_cpu, kind, what);
        }
    }
    for e in events {
        if e.ts < start || e.ts > end || !cpus.contains(&e.cpu) {
            continue;
        }
        let stack = open.entry(e.cpu).or_default();
        match e.kind {
            Kind::IrqEntry { irq } => stack.push((
                "irq",
                format!(
                    "IRQ {irq} {}",
                    dec.irq_names.get(&irq).map_or("", String::as_str)
                ),
                e.ts,
            )),
            Kind::SoftirqEntry { vec } => {
                stack.push(("softirq", format!("softirq {}", softirq_name(vec)), e.ts))
            }
            Kind::VectorEntry { vector } => {
                stack.push(("vector", dec.vector_name(vector).to_string(), e.ts))
            }
            Kind::IrqExit { .. } | Kind::SoftirqExit { .. } | Kind::VectorExit { .. } => {
                let want = match e.kind {
                    Kind::IrqExit { .. } => "irq",
                    Kind::SoftirqExit { .. } => "softirq",
                    _ => "vector",
                };
                if let Some(p) = stack.iter().rposition(|x| x.0 == want) {
                    let (k, what, t0) = stack.remove(p);
                    push(&mut out, t0, e.ts, e.cpu, k, what);
                }
            }
            Kind::Nmi { delta_ns } => push(
                &mut out,
                e.ts.saturating_sub(delta_ns),
                e.ts,
                e.cpu,
                "nmi",
                "NMI".into(),
            ),
            Kind::Switch { prev_pid, .. } => {
                let t0 = last_switch.insert(e.cpu, e.ts).unwrap_or(start);
                if prev_pid != 0 && prev_pid != w.tid {
                    push(
                        &mut out,
                        t0,
                        e.ts,
                        e.cpu,
                        "task",
                        dec.task_name(prev_pid, e.cpu),
                    );
                }
            }
            _ => {}
        }
    }
    // Handlers still running at the wake-up.
    for (cpu, stack) in open {
        for (k, what, t0) in stack {
            push(&mut out, t0, end, cpu, k, what);
        }
    }
    out.sort_by_key(|c| (c.start_ns, c.cpu));
    if out.len() > MAX {
        // Keep the markers and the longest entries.
        let mut keep: Vec<usize> = (0..out.len()).collect();
        keep.sort_by_key(|&i| {
            std::cmp::Reverse(if out[i].duration_ns == 0 {
                u64::MAX
            } else {
                out[i].duration_ns
            })
        });
        keep.truncate(MAX);
        keep.sort_unstable();
        out = keep.into_iter().map(|i| out[i].clone()).collect();
    }
    out
}

/// The real-time class's bandwidth for the throttling watch, ns: (period,
/// runtime) from `/proc/sys/kernel/sched_rt_{period,runtime}_us`; with
/// throttling off (-1), 95 % of the period (a kernel with the fair deadline
/// server still sets the real-time class aside for normal tasks then).
fn rt_bandwidth() -> Option<(u64, u64)> {
    let read = |n: &str| -> Option<i64> {
        std::fs::read_to_string(format!("/proc/sys/kernel/{n}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let period = u64::try_from(read("sched_rt_period_us")?)
        .ok()?
        .checked_mul(1000)?;
    let runtime = match read("sched_rt_runtime_us")? {
        r if r < 0 => period / 100 * 95,
        r => (r as u64).saturating_mul(1000).min(period),
    };
    Some((period, runtime))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: u64, cpu: u32, kind: Kind) -> Event {
        Event {
            ts,
            cpu,
            pid: 0,
            kind,
        }
    }

    #[test]
    fn unsplit_samples_say_why() {
        let report = TraceReport {
            samples: 2076,
            joined: 1466,
            unmatched_samples: 610,
            ..Default::default()
        };
        // The nohz_full case: timers re-armed with no expiry seen.
        assert_eq!(
            unsplit_line(&report, 609, &[1]),
            "610 of 2076 samples not split into stages: 610 without their kernel wake-up, \
             0 whose record lacks the timer interrupt or the syscall exit (609 timers of the \
             threads fired where the trace did not look: traced CPUs 1; a thread's timer fires \
             on a housekeeping CPU under nohz_full and kernel.timer_migration=1)"
        );
        // Nothing seen that explains it: the counts only.
        assert!(unsplit_line(&report, 0, &[]).ends_with("the syscall exit"));
        assert_eq!(cpu_names(&[]), "all");
        assert_eq!(cpu_names(&[0, 1, 2, 5]), "0-2,5");
    }

    #[test]
    fn context_names_what_ran() {
        let mut dec = Decoder::default();
        dec.irq_names.insert(11, "virtio0".into());
        dec.comms.insert(77, "kworker/1:2".into());
        let w = KernelWake {
            tid: 42,
            expires_ns: 10_000,
            timer_fn: 0,
            armed_ns: 0,
            armed_cpu: 1,
            irq_ns: Some(12_000),
            irq_cpu: 1,
            waking_ns: Some(13_000),
            switch_ns: Some(60_000),
            switch_prev: Some(77),
            exit_ns: Some(61_000),
            exit_cpu: 1,
        };
        let evs = [
            ev(
                5_000,
                1,
                Kind::Switch {
                    prev_pid: 0,
                    next_pid: 77,
                    prev_runnable: false,
                    prev_prio: 120,
                    next_prio: 4,
                },
            ),
            ev(20_000, 1, Kind::IrqEntry { irq: 11 }),
            ev(58_000, 1, Kind::IrqExit { irq: 11 }),
            ev(
                60_000,
                1,
                Kind::Switch {
                    prev_pid: 77,
                    next_pid: 42,
                    prev_runnable: false,
                    prev_prio: 120,
                    next_prio: 4,
                },
            ),
            ev(30_000, 0, Kind::IrqEntry { irq: 5 }), // another CPU: ignored
            ev(90_000, 1, Kind::IrqEntry { irq: 11 }), // after the wake-up: ignored
        ];
        let c = context(evs.iter(), &w, &dec);
        let irq = c.iter().find(|e| e.kind == "irq").unwrap();
        assert_eq!(
            (irq.what.as_str(), irq.duration_ns, irq.start_ns),
            ("IRQ 11 virtio0", 38_000, 10_000)
        );
        let task = c.iter().find(|e| e.kind == "task").unwrap();
        assert_eq!(
            (task.what.as_str(), task.duration_ns),
            ("kworker/1:2[77]", 55_000)
        );
        assert_eq!(c.iter().filter(|e| e.kind == "irq").count(), 1);
        assert!(c.iter().any(|e| e.kind == "switch" && e.start_ns == 50_000));
    }

    #[test]
    fn plan_refuses_what_cannot_be_joined() {
        let mut o = CyclicOptions {
            trace: TraceMode::On,
            ..CyclicOptions::default()
        };
        assert!(plan(&o).unwrap().is_some());
        o.wake = WakeMethod::Timerfd;
        assert!(plan(&o).is_err());
        o.wake = WakeMethod::Absolute;
        o.clock = MeasureClock::Realtime;
        assert!(plan(&o).is_err());
        o.clock = MeasureClock::Monotonic;
        o.run.outputs.repeat = 3;
        assert!(plan(&o).is_err());
        o.trace = TraceMode::Off;
        assert!(plan(&o).unwrap().is_none());
    }
}
