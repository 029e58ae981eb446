//! `rtscope cyclic`: periodic wake-up latency, one measurement thread per CPU
//! (or as asked), missed periods counted.
//!
//! Threads: each applies its real-time setup, reports it, waits for the common
//! start time, then runs [`rtscope_core::cyclic::run_loop`] pushing samples into
//! its own wait-free ring. The main thread is the aggregator: it drains the
//! rings into recorders, refreshes the live display, writes checkpoints and
//! watches for the end (loops, duration, signal, break, error).
//!
//! The common start is chosen once the threads are ready and the run's
//! set-up is done; each thread arms its first deadline in its own future
//! (on the start's grid, [`rtscope_core::cyclic::first_deadline`]). With a
//! duration, each thread ends by itself at the common start + the duration
//! ([`rtscope_core::cyclic::end_time`], on the measurement clock): when the
//! threads take every CPU and cannot keep up with their period, the
//! aggregator (normal priority) may not run until they end. At the end of a
//! run the aggregator raises the stop flag and interrupts every thread's wait
//! ([`rtscope_core::rt::wake_until_ended`]), so that a long period or start
//! delay does not hold a stop back.
//!
//! A run that dropped more than 1 % of its samples or missed more than 1 %
//! of its periods says so on stderr even with `-q` ([`run::Overload`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use serde::Serialize;
use serde_json::json;

use rtscope_core::cyclic::{
    end_time, run_loop, timer_signal, AbsoluteSleep, Clock, LoopConfig, LoopEnd, PosixClock,
    PosixTimerWait, RelativeSleep, TimerfdWait, WakeMethod, START_MARGIN_NS,
};
use rtscope_core::deadline::{
    run_deadline_loop, BandwidthLimit, Calibration, DeadlineConfig, DeadlineParams, GridCounters,
    ParamError, PeriodLimits, SchedDeadline, SchedFile, ServerReserve,
};
use rtscope_core::file::OutFile;
use rtscope_core::named::MeasureClock;
use rtscope_core::record::{MicrosecondBins, SeriesRecorder};
use rtscope_core::result::{BreakEvent, EndReason, ResultDocument, Series, Threshold};
use rtscope_core::rt::{Policy, ThreadSetup, ThreadState};
use rtscope_core::sample::{ring, RingSink, RingSource, Sample};
use rtscope_core::sys::{self, ClockId};
use rtscope_core::units::{format_cpu_list, format_ns, online_cpus};

use super::run::{self, ExtraFile, Outputs, Run, RunRequest};
use crate::error::{usage, EXIT_RUN};
use crate::output::cyclictest::Style as CyclictestStyle;
use crate::output::live::{Live, ThreadStatus};
use crate::output::{histogram as hist_out, summary};

mod aggregate;
mod deadline;
mod thread;

use aggregate::*;
use deadline::*;
use thread::*;

/// What a user asks of a cyclic run: every setting, `None` where the default
/// depends on the machine. The CLI converts its arguments to this; `matrix`
/// builds one per cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CyclicOptions {
    /// Measurement threads (default: one per CPU of `cpus`).
    pub threads: Option<usize>,
    /// CPUs to pin threads to (default: every online CPU; with `threads`
    /// alone, threads are not pinned).
    pub cpus: Option<Vec<usize>>,
    pub period_ns: u64,
    pub distance_ns: u64,
    pub loops: Option<u64>,
    pub duration_ns: Option<u64>,
    pub start_delay_ns: u64,
    /// Wake-ups dropped at the start of each thread (`--warmup`).
    pub warmup: u64,
    pub clock: MeasureClock,
    pub wake: WakeMethod,
    /// The real-time choice, the loads and the outputs (`run.rs`).
    pub run: RunRequest,
    /// `--dl-runtime`, `--dl-deadline` (with `--policy deadline`).
    pub deadline: DeadlineAsk,
    pub spikes: usize,
    pub raw: Option<PathBuf>,
    pub histogram: Option<PathBuf>,
    pub histogram_max_ns: u64,
    pub break_above_ns: Option<u64>,
    pub fail_above_ns: Option<u64>,
    pub checkpoint_ns: Option<u64>,
    /// `--trace`: split samples into stages with kernel events.
    pub trace: super::cyclic_trace::TraceMode,
    /// `--trace-outliers`: keep the kernel's context of samples above this.
    pub trace_outliers_ns: Option<u64>,
    /// `--trace-buffer`: per-CPU trace buffer, KiB.
    pub trace_buffer_kb: u32,
    /// `--trace-irqs-off`: also trace interrupts turned off and on.
    pub trace_irqs_off: bool,
    /// `rtscope cyclictest`: cyclictest's display and histogram on stdout,
    /// and the threads' timer slack left as it is (as cyclictest leaves it).
    pub cyclictest: Option<CyclictestStyle>,
}

impl Default for CyclicOptions {
    /// `rtscope cyclic`'s defaults (a test checks that the CLI agrees).
    fn default() -> Self {
        CyclicOptions {
            threads: None,
            cpus: None,
            period_ns: 1_000_000,
            distance_ns: 0,
            loops: None,
            duration_ns: None,
            start_delay_ns: 1_000_000,
            warmup: 0,
            clock: MeasureClock::Monotonic,
            wake: WakeMethod::Absolute,
            run: RunRequest::default(),
            deadline: DeadlineAsk::default(),
            spikes: 32,
            raw: None,
            histogram: None,
            histogram_max_ns: 400_000,
            break_above_ns: None,
            fail_above_ns: None,
            checkpoint_ns: None,
            trace: super::cyclic_trace::TraceMode::Off,
            trace_outliers_ns: None,
            trace_buffer_kb: 4096,
            trace_irqs_off: false,
            cyclictest: None,
        }
    }
}

/// What a user asks of SCHED_DEADLINE (`None`: the default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DeadlineAsk {
    /// `--dl-runtime` (default: cyclicdeadline's share of the deadline,
    /// [`DeadlineParams::default_runtime`]).
    pub runtime_ns: Option<u64>,
    /// `--dl-deadline` (default: the thread's period).
    pub deadline_ns: Option<u64>,
}

/// One measurement thread as planned.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadPlan {
    pub index: usize,
    /// CPUs it is pinned to (empty: not pinned).
    pub cpus: Vec<usize>,
    pub period_ns: u64,
    /// With `--policy deadline`: its runtime, deadline and period.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DeadlineParams>,
}

/// Every setting of a cyclic run, defaults included (goes into the result document).
#[derive(Debug, Clone, Serialize)]
pub struct CyclicPlan {
    /// The experiment the run is recorded as: `cyclic`, or `irq` when
    /// `rtscope irq --source timer` runs this measurement.
    #[serde(skip)]
    pub experiment: &'static str,
    pub threads: Vec<ThreadPlan>,
    pub period_ns: u64,
    pub distance_ns: u64,
    pub loops: Option<u64>,
    pub duration_ns: Option<u64>,
    pub start_delay_ns: u64,
    /// Wake-ups dropped at the start of each thread (`--warmup`), part of `loops`.
    pub warmup: u64,
    pub clock: MeasureClock,
    pub wake: WakeMethod,
    /// The real-time choice, the loads and the outputs (`run.rs`).
    #[serde(flatten)]
    pub run: RunRequest,
    /// `--dl-runtime`, `--dl-deadline` as asked (with `--policy deadline`
    /// only; each thread's resolved parameters are in `threads`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DeadlineAsk>,
    pub spikes: usize,
    pub histogram_max_ns: u64,
    pub break_above_ns: Option<u64>,
    pub fail_above_ns: Option<u64>,
    pub checkpoint_ns: Option<u64>,
    pub raw: Option<PathBuf>,
    pub histogram: Option<PathBuf>,
    pub ring_capacity: usize,
    /// `--trace`, `--trace-outliers`, `--trace-buffer` (absent when untraced).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<super::cyclic_trace::TracePlan>,
    /// `rtscope cyclictest`'s output (see [`CyclicOptions::cyclictest`]).
    #[serde(skip)]
    pub cyclictest: Option<CyclictestStyle>,
}

impl CyclicPlan {
    fn clock_id(&self) -> ClockId {
        self.clock.id()
    }
}

/// Turns options into a validated plan (bad input: a usage error, exit 2).
pub fn plan(a: &CyclicOptions) -> Result<CyclicPlan> {
    let online = online_cpus();
    let requested = a.cpus.clone();
    if let Some(cpus) = &requested {
        if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
            return Err(usage(format!(
                "--cpus: CPU {bad} is not online (online CPUs: {})",
                format_cpu_list(&online)
            )));
        }
    }
    let list = requested.unwrap_or_else(|| online.clone());
    let n = a.threads.unwrap_or(list.len());
    let deadline = a.run.rt.policy == Policy::Deadline;
    check_deadline_options(a)?;
    // Pinned unless -t was given without -a (then the scheduler places
    // threads, as in cyclictest); deadline tasks are never pinned.
    let pin = !deadline && (a.cpus.is_some() || a.threads.is_none());
    // About one second of samples per ring at the shortest period, within bounds.
    let ring_capacity = (1_000_000_000 / a.period_ns.max(1)).clamp(4096, 1 << 20) as usize;
    let bins = (a.histogram.is_some() || a.cyclictest.as_ref().is_some_and(|c| c.histogram))
        .then_some(a.histogram_max_ns / 1000);
    crate::limits::check_threads(n, crate::limits::cyclic_thread_bytes(ring_capacity, bins))?;
    crate::limits::check_thread_periods(a.period_ns, a.distance_ns, n)?;
    crate::limits::check_start_delay(a.start_delay_ns)?;
    crate::limits::check_warmup(a.warmup, a.loops)?;
    crate::limits::check_count("--spikes", a.spikes as u64, 32 * (n as u64 + 1))?;
    let mut threads = Vec::with_capacity(n);
    for i in 0..n {
        let period_ns = (i as u64)
            .checked_mul(a.distance_ns)
            .and_then(|d| d.checked_add(a.period_ns))
            .ok_or_else(|| usage("--distance: thread periods overflow"))?;
        threads.push(ThreadPlan {
            index: i,
            cpus: if pin {
                vec![list[i % list.len()]]
            } else {
                vec![]
            },
            period_ns,
            deadline: None,
        });
    }
    if deadline {
        let periods: Vec<u64> = threads.iter().map(|t| t.period_ns).collect();
        let params = deadline_params(
            &a.deadline,
            &periods,
            online.len(),
            &PeriodLimits::of_system(),
            BandwidthLimit::of_system().map(|l| {
                l.beside(ServerReserve::fair_server(
                    std::path::Path::new("/sys/kernel/debug"),
                    &online,
                    &rtscope_core::sys::uname().1,
                ))
            }),
        )?;
        for (t, p) in threads.iter_mut().zip(params) {
            t.deadline = Some(p);
        }
    }
    if a.checkpoint_ns.is_some() && a.run.outputs.json.is_none() {
        return Err(usage("--checkpoint needs --json FILE"));
    }
    if a.histogram_max_ns / 1000 > 10_000_000 {
        return Err(usage("--histogram-max: at most 10s"));
    }
    if a.histogram_max_ns < 1000 {
        return Err(usage("--histogram-max: at least 1us (bins are 1 us wide)"));
    }
    a.run.check(&[
        ("--raw", a.raw.as_deref()),
        ("--histogram", a.histogram.as_deref()),
    ])?;
    let trace = super::cyclic_trace::plan(a)?;
    let nthreads = threads.len();
    crate::gate::check_series(
        &a.run.outputs.gates.gates,
        |n| {
            n == "all"
                || n.strip_prefix("thread ")
                    .and_then(|i| i.parse::<usize>().ok())
                    .is_some_and(|i| i < nthreads)
                || (trace.is_some() && n.starts_with("stage "))
        },
        &format!(
            "thread 0{}, all{}",
            match nthreads {
                1 => String::new(),
                n => format!(" to thread {}", n - 1),
            },
            if trace.is_some() { ", stage ..." } else { "" }
        ),
    )?;
    Ok(CyclicPlan {
        experiment: "cyclic",
        threads,
        period_ns: a.period_ns,
        distance_ns: a.distance_ns,
        loops: a.loops,
        duration_ns: a.duration_ns,
        start_delay_ns: a.start_delay_ns,
        warmup: a.warmup,
        clock: a.clock,
        wake: a.wake,
        run: RunRequest {
            rt: a.run.rt,
            loads: a.run.loads.clone(),
            load_cpus: a.run.load_cpus.clone(),
            outputs: gated_outputs(a),
        },
        deadline: deadline.then_some(a.deadline),
        spikes: a.spikes,
        histogram_max_ns: a.histogram_max_ns,
        break_above_ns: a.break_above_ns,
        fail_above_ns: a.fail_above_ns,
        checkpoint_ns: a.checkpoint_ns,
        raw: a.raw.clone(),
        histogram: a.histogram.clone(),
        ring_capacity,
        trace,
        cyclictest: a.cyclictest.clone(),
    })
}

/// The outputs with `--fail-above X` as the gate `all:max>X`, first
/// among the gates (`--fail-if`): one machinery decides exit code 3.
fn gated_outputs(a: &CyclicOptions) -> Outputs {
    let mut o = a.run.outputs.clone();
    if let Some(t) = a.fail_above_ns {
        o.gates.gates.insert(0, crate::gate::Gate::fail_above(t));
    }
    o
}

/// What a finished cyclic run produced.
pub struct Outcome {
    /// The result document.
    pub doc: ResultDocument,
    /// The histogram text, if asked for.
    histogram: Option<String>,
    /// The raw sample file, if asked for, and its first write error.
    raw: Option<(OutFile, Option<String>)>,
    /// Measurement threads that failed.
    pub thread_errors: Vec<String>,
    /// Each thread's 1 µs bins and statistics, when a histogram was asked
    /// for (`--histogram`, or `-h` of `rtscope cyclictest`).
    pub bins: Vec<(MicrosecondBins, rtscope_core::record::RunningStats)>,
    /// Each thread's final figures, as the live display shows them.
    pub status: Vec<ThreadStatus>,
}

impl Outcome {
    /// Writes every requested file and prints the summary (see
    /// [`run::deliver`]); the exit code: 0, 1 (a thread or a file failed),
    /// 3 (a gate failed: `--fail-if`, `--fail-above`).
    pub fn deliver(self, plan: &CyclicPlan) -> i32 {
        let mut extra = Vec::new();
        if let (Some(text), Some(p)) = (self.histogram, &plan.histogram) {
            extra.push(ExtraFile {
                what: "histogram",
                flag: "--histogram",
                path: p.clone(),
                write: Box::new(move |p: &Path| {
                    rtscope_core::file::write_atomic(p, text.as_bytes())
                }),
            });
        }
        if let (Some((f, err)), Some(p)) = (self.raw, &plan.raw) {
            extra.push(ExtraFile {
                what: "raw samples",
                flag: "--raw",
                path: p.clone(),
                write: Box::new(move |_: &Path| match err {
                    Some(e) => Err(std::io::Error::other(e)),
                    None => f.commit(),
                }),
            });
        }
        let mut text = summary::cyclic_summary(&self.doc);
        if let Some(b) = &self.doc.break_event {
            text.push_str(&format!(
                "break: {} sample {} at {} latency {} (above {})\n",
                b.series,
                b.seq,
                b.t_ns,
                format_ns(b.latency_ns.max(0) as u64),
                format_ns(b.threshold_ns)
            ));
        }
        let code = run::deliver(&self.doc, &plan.run.outputs, extra, &text);
        for e in &self.thread_errors {
            eprintln!("error: {e}");
        }
        if !self.thread_errors.is_empty() {
            return EXIT_RUN;
        }
        code
    }
}

/// Runs the experiment: measure, write, print; the exit code.
pub fn run(options: &CyclicOptions) -> Result<i32> {
    let plan = plan(options)?;
    if plan.run.outputs.repeat > 1 {
        return run_repeated(&plan, plan.run.outputs.repeat);
    }
    let out = execute(&plan)?;
    let accuracy = out.doc.trace.as_ref().map(|t| t.accuracy.clone());
    // 0, 1, or 3 when a gate failed (its fail lines are printed).
    let code = out.deliver(&plan);
    if code == EXIT_RUN {
        return Ok(code);
    }
    if let Some(a) = accuracy.filter(|a| a.below_kernel > 0) {
        eprintln!(
            "error: accuracy check failed: {} of {} samples below the kernel's bound (by up to {} ns)",
            a.below_kernel, a.checked, -a.min_ns
        );
        return Ok(EXIT_RUN);
    }
    Ok(code)
}

/// `--repeat N`: N runs one after the other, pooled into one document
/// (see [`super::repeat`]).
fn run_repeated(plan: &CyclicPlan, n: usize) -> Result<i32> {
    for (flag, set) in [
        ("--raw", plan.raw.is_some()),
        ("--histogram", plan.histogram.is_some()),
        ("--checkpoint", plan.checkpoint_ns.is_some()),
        ("--break-above", plan.break_above_ns.is_some()),
        ("--stream", plan.run.outputs.live.stream.is_some()),
        ("--listen", plan.run.outputs.live.listen.is_some()),
        ("--live", plan.run.outputs.live.tui),
    ] {
        if set {
            return Err(usage(format!("--repeat cannot be combined with {flag}")));
        }
    }
    if plan.loops.is_none() && plan.duration_ns.is_none() {
        return Err(usage(
            "--repeat needs --duration or --loops (each run must end)",
        ));
    }
    let mut errors = Vec::new();
    let docs = super::repeat::runs(n, plan.run.outputs.quiet, |_| {
        let out = execute(plan)?;
        errors.extend(out.thread_errors);
        Ok(out.doc)
    })?;
    let doc = super::repeat::pool(docs);
    let mut text = summary::cyclic_summary(&doc);
    text.push_str(&super::repeat::note(&doc, n));
    // 0, 1, or 3 when a gate failed (its fail lines are printed).
    let code = run::deliver(&doc, &plan.run.outputs, vec![], &text);
    for e in &errors {
        eprintln!("error: {e}");
    }
    if !errors.is_empty() {
        return Ok(EXIT_RUN);
    }
    Ok(code)
}

/// Runs a planned measurement to its end. Errors before the measurement
/// starts (privileges, thread setup) are returned; everything after is in
/// the [`Outcome`], so that no result is lost.
pub fn execute(plan: &CyclicPlan) -> Result<Outcome> {
    // Tracing is set up first, so that a missing tracefs is refused at once.
    let trace_inst = match &plan.trace {
        Some(tp) => {
            let mut cpus: Vec<usize> = plan.threads.iter().flat_map(|t| t.cpus.clone()).collect();
            cpus.sort_unstable();
            cpus.dedup();
            if plan.threads.iter().any(|t| t.cpus.is_empty()) {
                cpus.clear();
            }
            super::cyclic_trace::open(tp, &cpus, plan.run.outputs.quiet)?
        }
        None => None,
    };
    let mut run = run::begin_live(
        &plan.run.settings(),
        &header(plan),
        Some(run::LiveSetup {
            options: &plan.run.outputs.live,
            experiment: "cyclic",
            series: plan
                .threads
                .iter()
                .map(|t| format!("thread {}", t.index))
                .chain(["all".to_string()])
                .collect(),
            measured_cpus: if plan.threads.iter().any(|t| t.cpus.is_empty()) {
                vec![]
            } else {
                plan.threads.iter().flat_map(|t| t.cpus.clone()).collect()
            },
        }),
    )?;
    let live_sinks = run.live.take();

    // Rings and threads.
    let (ready_tx, ready_rx) = mpsc::channel();
    let mut starts = Vec::new();
    let mut handles: Vec<JoinHandle<Option<LoopEnd>>> = Vec::new();
    let mut pending = Vec::new();
    let block = vec![libc::SIGINT, libc::SIGTERM, libc::SIGHUP, timer_signal()];
    for tp in &plan.threads {
        let (sink, source) = ring(plan.ring_capacity);
        let (start_tx, start_rx) = mpsc::channel();
        starts.push(start_tx);
        let mut setup = thread_setup(plan, tp, block.clone());
        let deadline = tp
            .deadline
            .map(|p| (p, std::sync::Arc::new(GridCounters::default())));
        if deadline.is_some() {
            // A normal thread until it becomes a deadline task itself.
            setup.policy = Policy::Other;
            setup.priority = 0;
        }
        let job = ThreadJob {
            setup,
            period_ns: tp.period_ns,
            wake: plan.wake,
            clock: plan.clock_id(),
            loops: plan.loops,
            duration_ns: plan.duration_ns,
            warmup: plan.warmup,
            break_above_ns: plan.break_above_ns,
            sink,
            stop: run.stop().clone(),
            ready: ready_tx.clone(),
            start: start_rx,
            index: tp.index,
            deadline: deadline.clone(),
        };
        let h = std::thread::Builder::new()
            .name(format!("rtscope-t{}", tp.index))
            .stack_size(512 * 1024)
            .spawn(move || measure_thread(job))
            .context("cannot start a measurement thread")?;
        handles.push(h);
        pending.push((tp.clone(), source, deadline));
    }
    drop(ready_tx);
    let mut states: Vec<Option<ThreadState>> = vec![None; plan.threads.len()];
    let mut granted: Vec<Option<DeadlineReady>> = vec![None; plan.threads.len()];
    let mut setup_errors = Vec::new();
    for _ in 0..plan.threads.len() {
        match ready_rx.recv() {
            Ok((i, Ok((st, dl)))) => {
                states[i] = Some(st);
                granted[i] = dl;
            }
            Ok((i, Err(e))) => setup_errors.push(format!("thread {i}: {e}")),
            Err(_) => setup_errors.push("a measurement thread died during setup".into()),
        }
    }
    if !setup_errors.is_empty() {
        for s in &starts {
            let _ = s.send(None);
        }
        for h in handles {
            let _ = h.join();
        }
        setup_errors
            .dedup_by(|a, b| a.split_once(": ").map(|x| x.1) == b.split_once(": ").map(|x| x.1));
        return Err(anyhow!(setup_errors[0]
            .split_once(": ")
            .map_or(setup_errors[0].clone(), |x| x.1.to_string())));
    }

    let raw = match &plan.raw {
        Some(p) => {
            let mut f = OutFile::create(p).with_context(|| format!("--raw {}", p.display()))?;
            writeln!(f, "thread,cpu,seq,t_ns,latency_ns")
                .with_context(|| format!("--raw {}", p.display()))?;
            Some((f, None))
        }
        None => None,
    };
    let mut live = match &plan.cyclictest {
        Some(style) => Live::cyclictest(style.clone(), run.env.dma_latency_held),
        None => Live::new(plan.run.outputs.quiet || live_sinks.as_ref().is_some_and(|l| l.tui)),
    };
    // The common start, chosen now that every thread is ready and the run's
    // set-up is done; each thread still arms its first deadline at least
    // START_MARGIN_NS in its own future, on this start's grid.
    let start_at = sys::clock_ns(plan.clock_id()) + plan.start_delay_ns;
    run.anchor(plan.clock_id(), start_at);
    for s in &starts {
        let _ = s.send(Some(start_at));
    }
    let t0 = Instant::now();
    // The threads' common end time (each ends there by itself).
    let end_at = end_time(start_at, plan.duration_ns);
    let tracer = match (trace_inst, &plan.trace) {
        (Some(inst), Some(tp)) => Some(super::cyclic_trace::Tracer::new(
            inst,
            tp,
            &states
                .iter()
                .map(|s| s.as_ref().map_or(0, |st| st.tid))
                .collect::<Vec<_>>(),
            plan.threads
                .iter()
                .map(|t| format!("thread {}", t.index))
                .collect(),
            start_at,
            plan.spikes,
        )),
        _ => None,
    };
    let mut agg = Aggregate {
        threads: pending
            .into_iter()
            .zip(states)
            .zip(granted)
            .map(|(((tp, source, dl), state), granted)| ThreadView {
                rec: thread_recorder(&tp, start_at, end_at, plan.spikes, plan.fail_above_ns),
                plan: tp,
                state,
                deadline: dl.map(|(asked, c)| {
                    (
                        granted.unwrap_or(DeadlineReady {
                            granted: asked,
                            calibration: None,
                        }),
                        c,
                    )
                }),
                last: None,
                us_bins: us_bins(plan),
                source,
            })
            .collect(),
        all: union_recorder(start_at, end_at, plan.spikes, plan.fail_above_ns),
        raw,
        tracer,
        live: live_sinks,
    };
    if let Some(l) = agg.live.as_mut() {
        l.measuring();
    }

    let duration = plan.duration_ns.map(Duration::from_nanos);
    let mut duration_hit = false;
    let mut last_checkpoint = Instant::now();
    let poll = Duration::from_millis(50);
    loop {
        let all_done = handles.iter().all(|h| h.is_finished());
        agg.drain();
        agg.publish();
        live.update(|| agg.statuses(plan.run.rt.priority), t0.elapsed());
        if run.stopped() || all_done {
            break;
        }
        if let Some(d) = duration {
            if t0.elapsed() >= d + Duration::from_nanos(plan.start_delay_ns) {
                duration_hit = true;
                run.stop().store(true, Ordering::Relaxed);
                break;
            }
        }
        if let (Some(every), Some(path)) = (plan.checkpoint_ns, &plan.run.outputs.json) {
            if last_checkpoint.elapsed() >= Duration::from_nanos(every) {
                last_checkpoint = Instant::now();
                if let Err(e) = agg.document(&run, plan, EndReason::Running).write(path) {
                    eprintln!("warning: checkpoint to {} failed: {e}", path.display());
                }
            }
        }
        std::thread::sleep(poll);
    }
    run.stop().store(true, Ordering::Relaxed);
    // Interrupt the waits (a long period or start delay would hold the stop).
    let tids: Vec<i32> = agg
        .threads
        .iter()
        .map(|t| t.state.as_ref().map_or(0, |st| st.tid))
        .collect();
    rtscope_core::rt::wake_until_ended(&tids, |i| !handles[i].is_finished());
    let ends = agg.join(handles);
    run.measurement_ended();
    // The loads stop now, not after the trace's last read and the live
    // sinks' end: a stop under loads ends the process sooner.
    run.stop_loads();
    live.finish(|| agg.statuses(plan.run.rt.priority));
    for w in agg.end_live() {
        // Not eprintln!: after a hangup stderr may be gone, and the results
        // must still be written.
        let _ = writeln!(
            std::io::stderr(),
            "warning: {}",
            crate::output::printable(&w)
        );
    }

    // How it ended.
    let mut break_event = None;
    let mut errors = Vec::new();
    for (i, e) in &ends {
        match e {
            Some(LoopEnd::Break {
                seq,
                t_ns,
                latency_ns,
            }) => {
                break_event = Some(BreakEvent {
                    threshold_ns: plan.break_above_ns.unwrap_or(0),
                    series: format!("thread {i}"),
                    seq: *seq,
                    t_ns: *t_ns,
                    latency_ns: *latency_ns,
                })
            }
            Some(LoopEnd::Error(err)) => errors.push(format!("thread {i}: {err}")),
            _ => {}
        }
    }
    let end_reason = if break_event.is_some() {
        EndReason::Break
    } else if !errors.is_empty() {
        EndReason::Error
    } else if duration_hit
        || ends
            .iter()
            .any(|(_, e)| matches!(e, Some(LoopEnd::Duration)))
    {
        EndReason::Duration
    } else if ends.iter().all(|(_, e)| matches!(e, Some(LoopEnd::Loops))) {
        EndReason::Loops
    } else {
        EndReason::Interrupted
    };
    let (mut series, mut warnings) = agg.series();
    // An overloaded run is said so whatever -q asks: its statistics look
    // normal, but describe a few samples of a machine that did not keep up.
    // (Not for `cyclictest -q`, whose stderr is cyclictest's alone.)
    let ct_quiet = plan.cyclictest.as_ref().is_some_and(|c| c.quiet);
    if let Some(all) = series.last().filter(|_| !ct_quiet) {
        let mut loud: Vec<String> = run::Overload::of(all).dropped.into_iter().collect();
        loud.extend(missed_warnings(&series));
        let _ = std::io::stderr().write_all(run::warning_lines(&loud).as_bytes());
    }
    let mut trace_report = None;
    if let Some(tr) = agg.tracer.take() {
        let (stage_series, report, w, loud) = tr.finish(crate::signals::stop_signalled);
        if !ct_quiet {
            let _ = std::io::stderr().write_all(run::warning_lines(&loud).as_bytes());
        }
        series.extend(stage_series);
        warnings.extend(w);
        trace_report = Some(report);
    }
    let dma_held = run.env.dma_latency_held;
    let finished = run.finish(plan.experiment, plan, series, end_reason, warnings);
    let mut doc = finished.doc;
    doc.trace = trace_report;
    doc.break_event = break_event;
    agg.threshold(plan, &mut doc);
    let histogram = plan.histogram.as_ref().map(|_| {
        let cols: Vec<_> = agg
            .threads
            .iter()
            .filter_map(|t| t.us_bins.as_ref().map(|b| (b, &t.rec.stats)))
            .collect();
        hist_out::cyclictest_text(&cols, dma_held)
    });
    let status = agg.statuses(plan.run.rt.priority);
    let bins = agg
        .threads
        .iter_mut()
        .filter_map(|t| t.us_bins.take().map(|b| (b, t.rec.stats.clone())))
        .collect();
    Ok(Outcome {
        doc,
        histogram,
        raw: agg.raw.take(),
        thread_errors: errors,
        bins,
        status,
    })
}

fn header(plan: &CyclicPlan) -> String {
    let cpus: Vec<usize> = plan.threads.iter().flat_map(|t| t.cpus.clone()).collect();
    let mut cpus_sorted = cpus.clone();
    cpus_sorted.sort_unstable();
    cpus_sorted.dedup();
    let placement = if cpus.is_empty() {
        "unpinned".to_string()
    } else {
        format!("CPU {}", format_cpu_list(&cpus_sorted))
    };
    let stop = match (plan.loops, plan.duration_ns) {
        (Some(l), Some(d)) => format!("{l} loops or {}", format_ns(d)),
        (Some(l), None) => format!("{l} loops"),
        (None, Some(d)) => format_ns(d),
        (None, None) => "until Ctrl-C".into(),
    };
    if let Some(p) = plan.threads.first().and_then(|t| t.deadline) {
        return format!(
            "rtscope {}: {} thread{} ({placement}), period {}{}, SCHED_DEADLINE runtime {} deadline {}, released by the scheduler, latency on CLOCK_MONOTONIC_RAW, {stop}",
            plan.experiment,
            plan.threads.len(),
            if plan.threads.len() == 1 { "" } else { "s" },
            format_ns(plan.period_ns),
            if plan.distance_ns > 0 {
                format!(" (+{} per thread)", format_ns(plan.distance_ns))
            } else {
                String::new()
            },
            format_ns(p.runtime_ns),
            format_ns(p.deadline_ns),
        );
    }
    format!(
        "rtscope {}: {} thread{} ({placement}), period {}{}, SCHED_{} {}, wake {} on CLOCK_{}, {stop}",
        plan.experiment,
        plan.threads.len(),
        if plan.threads.len() == 1 { "" } else { "s" },
        format_ns(plan.period_ns),
        if plan.distance_ns > 0 {
            format!(" (+{} per thread)", format_ns(plan.distance_ns))
        } else {
            String::new()
        },
        plan.run.rt.policy.name().to_uppercase(),
        plan.run.rt.priority,
        plan.wake.name(),
        plan.clock.name().to_uppercase(),
    )
}

#[cfg(test)]
mod aggregate_tests {
    use super::*;
    use crate::experiment::run::RtChoice;
    use rtscope_core::sample::SampleSink;

    fn one_thread(source: RingSource) -> Aggregate {
        threads(vec![(1000, source)], None)
    }

    fn threads(periods: Vec<(u64, RingSource)>, threshold: Option<u64>) -> Aggregate {
        threads_until(periods, threshold, None)
    }

    /// An aggregate of threads with these periods, recorded as `execute`
    /// records them (a run that ends at `end`).
    fn threads_until(
        periods: Vec<(u64, RingSource)>,
        threshold: Option<u64>,
        end: Option<u64>,
    ) -> Aggregate {
        Aggregate {
            threads: periods
                .into_iter()
                .enumerate()
                .map(|(index, (period_ns, source))| {
                    let plan = ThreadPlan {
                        index,
                        cpus: vec![],
                        period_ns,
                        deadline: None,
                    };
                    ThreadView {
                        rec: thread_recorder(&plan, 0, end, 4, threshold),
                        plan,
                        state: None,
                        deadline: None,
                        last: None,
                        us_bins: None,
                        source,
                    }
                })
                .collect(),
            all: union_recorder(0, end, 4, threshold),
            raw: None,
            tracer: None,
            live: None,
        }
    }

    /// A thread that woke 2 s after a 1 s run's end (the r1 of docs/report.md:
    /// 3999 periods counted of a 2000-period run) skipped only the periods
    /// due before the end: the thread's and the union's counters and
    /// periods stop there.
    #[test]
    fn a_wake_up_past_the_end_skipped_only_the_periods_before_it() {
        let (mut s0, r0) = ring(64);
        let period = 500_000;
        let mut agg = threads_until(vec![(period, r0)], None, Some(1_000_000_000));
        // Due at 40 ms, woke at 2.04 s: 3999 deadlines passed, 1919 before the end.
        s0.push(Sample {
            seq: 80,
            t_ns: 2_040_000_000,
            latency_ns: 2_000_000_000,
            overruns: 3_999,
            cpu: 0,
        });
        agg.drain();
        let (series, w) = agg.series();
        for s in &series {
            assert_eq!(s.counters.overruns, 1_919, "{}", s.label);
            assert_eq!(
                s.corrected.as_ref().unwrap().stats.count,
                1_920,
                "{}",
                s.label
            );
        }
        assert!(w[0].contains("(1919 of 1920"), "{w:?}");
    }

    /// `--fail-above`: the samples above it, and the intended periods above
    /// it when the union has them (not for a union without, or no threshold).
    #[test]
    fn the_fail_line_counts_the_intended_periods_too() {
        let (mut s0, r0) = ring(64);
        let mut agg = threads(vec![(1_000, r0)], Some(1_200));
        s0.push(Sample {
            seq: 0,
            t_ns: 10_000,
            latency_ns: 4_500,
            overruns: 4,
            cpu: 0,
        });
        agg.drain();
        let (series, _) = agg.series();
        let mut doc = ResultDocument::new("cyclic", json!({}), Default::default(), series);
        assert_eq!(crate::gate::fail_above_line(&doc), "");
        doc.threshold = Some(Threshold {
            fail_above_ns: 1_200,
            exceeded: true,
            samples_above: 1,
        });
        // 4500 and the skipped 3500, 2500, 1500 (not 500).
        assert_eq!(
            crate::gate::fail_above_line(&doc),
            "fail: 1 samples above 1.2us (4 of the intended periods)"
        );
        doc.series[1].corrected = None;
        assert_eq!(
            crate::gate::fail_above_line(&doc),
            "fail: 1 samples above 1.2us"
        );
    }

    /// A thread that missed more than 1 % of its periods is named when the
    /// union (nine threads) stays within 1 %; the union's warning alone
    /// when it does not.
    #[test]
    fn a_thread_that_missed_periods_is_named_when_the_union_did_not() {
        let mut sinks = Vec::new();
        let mut sources = Vec::new();
        for _ in 0..9 {
            let (k, r) = ring(256);
            sinks.push(k);
            sources.push((1_000_000, r));
        }
        let mut agg = threads(sources, None);
        for (i, k) in sinks.iter_mut().enumerate() {
            // Thread 4: 2 of 100 wake-ups skipped one period each.
            push(k, 100, 0);
            if i == 4 {
                push(k, 2, 1);
            }
        }
        agg.drain();
        let (_, w) = agg.series();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("thread 4: 1.9% of the periods were missed (2 of 104"),
            "{w:?}"
        );
        // Every thread as late: the union's warning, no thread named.
        for k in sinks.iter_mut() {
            push(k, 10, 1);
        }
        agg.drain();
        let (_, w) = agg.series();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("8.5% of the periods were missed (92 of 1084"),
            "{w:?}"
        );
    }

    /// Each thread's missed periods join its figures over the intended
    /// periods at its own period, and the union's too: a thread of 1 µs
    /// that woke 2.5 µs late and one of 3 µs that woke 10 µs late.
    #[test]
    fn missed_periods_are_counted_over_intended_periods_at_their_own_period() {
        let (mut s0, r0) = ring(64);
        let (mut s1, r1) = ring(64);
        let mut agg = threads(vec![(1_000, r0), (3_000, r1)], Some(1_200));
        let sample = |seq, latency_ns, overruns| Sample {
            seq,
            t_ns: 1_000_000 + seq * 10_000,
            latency_ns,
            overruns,
            cpu: 0,
        };
        s0.push(sample(0, 100, 0));
        s0.push(sample(1, 2_500, 2));
        s1.push(sample(0, 10_000, 3));
        agg.drain();
        let (series, _) = agg.series();
        let c = |i: usize| series[i].corrected.clone().unwrap();
        // Thread 0: 100, 2500 and the skipped 1500, 500.
        assert_eq!(c(0).stats.count, 4);
        assert_eq!(c(0).stats.min_ns, 100);
        assert_eq!(
            c(0).stats.mean_ns,
            (100.0 + 2_500.0 + 1_500.0 + 500.0) / 4.0
        );
        assert_eq!(c(0).above_threshold, Some(2));
        // Thread 1: 10000 and the skipped 7000, 4000, 1000.
        assert_eq!(c(1).stats.count, 4);
        assert_eq!(c(1).stats.min_ns, 1_000);
        assert_eq!(c(1).above_threshold, Some(3));
        // The union: both, each at its own period.
        assert_eq!(c(2).stats.count, 8);
        assert_eq!(c(2).stats.min_ns, 100);
        assert_eq!(c(2).above_threshold, Some(5));
        let sum: u64 = c(2).histogram.buckets.iter().map(|b| b[1]).sum();
        assert_eq!(sum, 8);
        // The wake-ups alone are as before.
        assert_eq!(series[2].stats.count, 3);
        assert_eq!(series[2].counters.above_threshold, Some(2));
        assert_eq!(series[2].counters.overruns, 5);
    }

    fn push(sink: &mut RingSink, n: u64, overruns: u32) {
        for seq in 0..n {
            sink.push(Sample {
                seq,
                t_ns: 1000 * seq,
                latency_ns: 7,
                overruns,
                cpu: 0,
            });
        }
    }

    /// No drop: no warning; a few (at most 1 %): the quiet count; more: the
    /// overload warning instead; more than 1 % of the periods missed: that
    /// warning too.
    #[test]
    fn dropped_and_missed_samples_are_warned_of_by_their_share() {
        let warned = |agg: &Aggregate| {
            let (series, w) = agg.series();
            assert_eq!(series.len(), 2);
            w
        };
        let (mut sink, source) = ring(64);
        let mut agg = one_thread(source);
        push(&mut sink, 64, 0);
        agg.drain();
        assert!(warned(&agg).is_empty());
        push(&mut sink, 64, 0);
        agg.drain();
        // 128 kept, then one dropped of 193.
        push(&mut sink, 65, 0);
        agg.drain();
        assert_eq!(agg.threads[0].source.dropped(), 1);
        assert_eq!(
            warned(&agg),
            ["1 samples dropped: the aggregator could not keep up"]
        );
        // 500 more pushed at once: 64 kept, 436 dropped.
        push(&mut sink, 500, 0);
        agg.drain();
        let w = warned(&agg);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("63.1% of the samples were dropped (437 of 693"),
            "{w:?}"
        );
        // Every kept wake-up missed a period: the missed periods too.
        let (mut sink, source) = ring(64);
        let mut agg = one_thread(source);
        push(&mut sink, 10, 1);
        agg.drain();
        let w = warned(&agg);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("50.0% of the periods were missed"),
            "{w:?}"
        );
    }

    /// A deadline run that missed most periods names its runtime budget
    /// (before: `--dl-runtime 1024ns` missed 96.6 % and the warning
    /// spoke only of the period); a fifo run, or a deadline run that missed
    /// a few, does not.
    #[test]
    fn a_deadline_run_missing_most_periods_names_its_runtime() {
        let series_of = |overruns: u32, deadline: bool| {
            let (mut sink, source) = ring(64);
            let mut agg = one_thread(source);
            push(&mut sink, 10, overruns);
            agg.drain();
            let (mut series, _) = agg.series();
            if deadline {
                let a = &mut series[0].attributes;
                a.insert("dl_runtime_ns".into(), serde_json::json!(1024));
                a.insert("dl_period_ns".into(), serde_json::json!(1_000_000));
            }
            series
        };
        let w = missed_warnings(&series_of(30, true));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("runtime budget: --dl-runtime 1.024us of every 1ms")
                && w[0].ends_with("give it a larger --dl-runtime"),
            "{w:?}"
        );
        let w = missed_warnings(&series_of(30, false));
        assert!(!w[0].contains("--dl-runtime"), "{w:?}");
        // One missed period a wake-up: half, not most.
        let w = missed_warnings(&series_of(1, true));
        assert!(!w[0].contains("--dl-runtime"), "{w:?}");
    }

    /// A measurement thread as `execute` starts it (SCHED_OTHER here): it
    /// ends on its loop count, or by itself at the common start + the
    /// duration, with nobody raising its stop flag.
    #[test]
    fn a_thread_ends_on_its_loops_or_by_itself_at_the_end_time() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        // With the duration, a loop count far beyond it is only a backstop.
        for (loops, duration_ns) in [(Some(3), None), (Some(1_000), Some(20_000_000))] {
            let (sink, source) = ring(256);
            let (ready_tx, ready_rx) = mpsc::channel();
            let (start_tx, start_rx) = mpsc::channel();
            let stop = Arc::new(AtomicBool::new(false));
            let rt = RtChoice {
                policy: Policy::Other,
                priority: 0,
                no_rt: true,
                default_system: true,
            };
            let job = ThreadJob {
                setup: rt.thread_setup(vec![], vec![]),
                period_ns: 1_000_000,
                wake: WakeMethod::Absolute,
                clock: libc::CLOCK_MONOTONIC,
                loops,
                duration_ns,
                warmup: 0,
                break_above_ns: None,
                sink,
                stop: stop.clone(),
                ready: ready_tx,
                start: start_rx,
                index: 0,
                deadline: None,
            };
            let t0 = Instant::now();
            let h = std::thread::spawn(move || measure_thread(job));
            let (_, state) = ready_rx.recv().unwrap();
            assert!(state.is_ok(), "{state:?}");
            let start = sys::clock_ns(libc::CLOCK_MONOTONIC) + 1_000_000;
            start_tx.send(Some(start)).unwrap();
            let end = h.join().unwrap();
            let mut agg = one_thread(source);
            agg.drain();
            let n = agg.threads[0].rec.count();
            assert!(!stop.load(Ordering::Relaxed));
            assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
            match duration_ns {
                None => {
                    assert!(matches!(end, Some(LoopEnd::Loops)), "{end:?}");
                    assert_eq!(n, 3);
                }
                Some(d) => {
                    assert!(matches!(end, Some(LoopEnd::Duration)), "{end:?}");
                    // About 20 wake-ups at 1 ms (fewer on a slow machine),
                    // the last due before the end.
                    assert!((1..=20).contains(&n), "{n}");
                    let last = agg.threads[0].last.unwrap();
                    let due = last.t_ns - last.latency_ns as u64;
                    assert!(due < start + d, "{due} {start}");
                }
            }
        }
    }

    /// `rtscope cyclictest`'s threads keep their timer slack and, with `-h`,
    /// histogram bins without a file, keeping as many overflow sample numbers
    /// as there are bins (cyclictest's limit); `--histogram FILE` keeps 20.
    #[test]
    fn cyclictest_runs_keep_the_timer_slack_and_their_histogram() {
        let ct = |histogram| CyclictestStyle {
            histogram,
            ..CyclictestStyle::default()
        };
        let base = CyclicOptions {
            threads: Some(1),
            histogram_max_ns: 30_000,
            ..CyclicOptions::default()
        };
        let p = plan(&base).unwrap();
        assert!(us_bins(&p).is_none());
        assert_eq!(
            thread_setup(&p, &p.threads[0], vec![]).timer_slack_ns,
            Some(1)
        );
        let p = plan(&CyclicOptions {
            cyclictest: Some(ct(false)),
            ..base.clone()
        })
        .unwrap();
        assert!(us_bins(&p).is_none());
        assert_eq!(thread_setup(&p, &p.threads[0], vec![]).timer_slack_ns, None);
        let p = plan(&CyclicOptions {
            cyclictest: Some(ct(true)),
            ..base.clone()
        })
        .unwrap();
        let mut b = us_bins(&p).unwrap();
        assert_eq!(b.bins.len(), 30);
        for seq in 0..40 {
            b.record(31_000, seq);
        }
        assert_eq!((b.overflows, b.overflow_seqs.len()), (40, 30));
        let dir = tempfile::tempdir().unwrap();
        let p = plan(&CyclicOptions {
            histogram: Some(dir.path().join("h.txt")),
            ..base
        })
        .unwrap();
        let mut b = us_bins(&p).unwrap();
        for seq in 0..40 {
            b.record(31_000, seq);
        }
        assert_eq!((b.bins.len(), b.overflow_seqs.len()), (30, 20));
    }

    #[test]
    fn samples_pushed_before_the_threads_end_are_all_recorded() {
        let (mut sink, source) = ring(64);
        let mut agg = one_thread(source);
        // A thread that pushes its last samples and ends after the loop's last drain.
        let h = std::thread::spawn(move || {
            for seq in 0..3 {
                sink.push(Sample {
                    seq,
                    t_ns: 1000 * seq,
                    latency_ns: 7,
                    overruns: 0,
                    cpu: 0,
                });
            }
            Some(LoopEnd::Stopped)
        });
        let ends = agg.join(vec![h]);
        assert!(matches!(ends[..], [(0, Some(LoopEnd::Stopped))]));
        assert_eq!(agg.threads[0].rec.count(), 3);
        assert_eq!(agg.all.count(), 3);
        assert_eq!(agg.threads[0].last.map(|s| s.seq), Some(2));
    }
}

#[cfg(test)]
mod gate_tests {
    use super::*;

    /// `--fail-above X` becomes the gate `all:max>X`, before the `--fail-if` gates.
    #[test]
    fn fail_above_is_the_first_gate() {
        let mut o = CyclicOptions::default();
        assert!(gated_outputs(&o).gates.gates.is_empty());
        o.run.outputs.gates.gates = crate::gate::parse_gates("p99>50us").unwrap();
        o.fail_above_ns = Some(200_000);
        let g = gated_outputs(&o).gates.gates;
        assert_eq!(g.len(), 2);
        assert_eq!(g[0], crate::gate::Gate::fail_above(200_000));
        assert_eq!(g[1].text, "p99>50us");
        assert_eq!(plan(&o).unwrap().run.outputs.gates.gates, g);
    }
}

#[cfg(test)]
mod deadline_tests {
    use super::*;
    use crate::error::{exit_code, EXIT_USAGE};
    use crate::experiment::run::RtChoice;

    fn deadline() -> CyclicOptions {
        CyclicOptions {
            run: RunRequest {
                rt: RtChoice::with_deadline(Policy::Deadline, 95, false, false).unwrap(),
                ..RunRequest::default()
            },
            ..CyclicOptions::default()
        }
    }

    fn refused(o: &CyclicOptions) -> String {
        let e = plan(o).unwrap_err();
        assert_eq!(exit_code(&e), EXIT_USAGE, "{e}");
        let m = e.to_string();
        assert!(!m.contains('\n'), "{m}");
        m
    }

    const LIMITS: PeriodLimits = PeriodLimits {
        min_ns: 100_000,
        max_ns: 4_000_000_000,
    };

    fn ask(runtime_ns: Option<u64>, deadline_ns: Option<u64>) -> DeadlineAsk {
        DeadlineAsk {
            runtime_ns,
            deadline_ns,
        }
    }

    fn params(runtime_ns: u64, deadline_ns: u64, period_ns: u64) -> DeadlineParams {
        DeadlineParams {
            runtime_ns,
            deadline_ns,
            period_ns,
        }
    }

    /// The defaults: the period as deadline, cyclicdeadline's runtime, for
    /// each thread's own period.
    #[test]
    fn each_thread_gets_its_parameters() {
        let p =
            deadline_params(&ask(None, None), &[1_000_000, 1_500_000], 2, &LIMITS, None).unwrap();
        assert_eq!(
            p,
            [
                params(600_000, 1_000_000, 1_000_000),
                params(900_000, 1_500_000, 1_500_000)
            ]
        );
        // More threads than CPUs: 80 % of the CPUs shared.
        let p = deadline_params(&ask(None, None), &[1_000_000; 4], 2, &LIMITS, None).unwrap();
        assert_eq!(p[3], params(400_000, 1_000_000, 1_000_000));
        // As asked.
        let p = deadline_params(
            &ask(Some(100_000), Some(500_000)),
            &[1_000_000],
            2,
            &LIMITS,
            None,
        )
        .unwrap();
        assert_eq!(p, [params(100_000, 500_000, 1_000_000)]);
        // The default runtime follows the deadline asked.
        let p = deadline_params(&ask(None, Some(500_000)), &[1_000_000], 2, &LIMITS, None).unwrap();
        assert_eq!(p, [params(300_000, 500_000, 1_000_000)]);
    }

    /// Each of the kernel's rules broken: one line naming the option.
    #[test]
    fn bad_parameters_are_refused_by_name() {
        let msg = |a: DeadlineAsk, period: u64| {
            let e = deadline_params(&a, &[period], 2, &LIMITS, None).unwrap_err();
            assert_eq!(exit_code(&e), EXIT_USAGE);
            e.to_string()
        };
        assert_eq!(
            msg(ask(Some(2_000_000), None), 1_000_000),
            "--dl-runtime 2ms is longer than the deadline 1ms: SCHED_DEADLINE needs runtime <= \
             deadline <= period"
        );
        assert_eq!(
            msg(ask(None, Some(2_000_000)), 1_000_000),
            "--dl-deadline 2ms is longer than the period 1ms: SCHED_DEADLINE needs runtime <= \
             deadline <= period"
        );
        assert_eq!(
            msg(ask(Some(1000), None), 1_000_000),
            "--dl-runtime 1us: the runtime must be at least 1024 ns (the kernel counts it in units \
             of 1024 ns)"
        );
        assert_eq!(
            msg(ask(Some(10_000), None), 50_000),
            "--period 50us: with --policy deadline the period must be at least 100us \
             (kernel.sched_deadline_period_min_us)"
        );
        assert_eq!(
            msg(ask(Some(10_000), None), 5_000_000_000),
            "--period 5s: with --policy deadline the period must be at most 4s \
             (kernel.sched_deadline_period_max_us)"
        );
        // The second thread's period (with --distance) breaks it.
        let e = deadline_params(
            &ask(None, Some(1_000_000)),
            &[1_000_000, 900_000],
            2,
            &LIMITS,
            None,
        )
        .unwrap_err();
        assert!(e
            .to_string()
            .starts_with("--dl-deadline 1ms is longer than the period 900us"));
    }

    /// The threads together against the share deadline tasks may reserve.
    #[test]
    fn the_threads_must_fit_the_deadline_bandwidth() {
        let limit = BandwidthLimit::from_sysctls(950_000, 1_000_000);
        let sixty = ask(Some(600_000), None);
        assert!(deadline_params(&sixty, &[1_000_000; 3], 2, &LIMITS, limit).is_ok());
        let e = deadline_params(&sixty, &[1_000_000; 4], 2, &LIMITS, limit).unwrap_err();
        assert_eq!(exit_code(&e), EXIT_USAGE);
        assert_eq!(
            e.to_string(),
            "the 4 deadline threads would reserve 240.0% of a CPU, more than the 190% deadline \
             tasks may have on 2 CPUs (95% of each, kernel.sched_rt_runtime_us): lower \
             --dl-runtime, lengthen the period or run fewer threads (-t)"
        );
        // No limit (sched_rt_runtime_us -1): the kernel admits everything.
        assert!(deadline_params(&sixty, &[1_000_000; 4], 2, &LIMITS, None).is_ok());
        // The fair-class server holds 5 % of each CPU (Linux 6.12 and later):
        // 2 × 90 % fits, 2 × 90.5 % is refused before the kernel would.
        let server = |assumed| {
            limit.map(|l| {
                l.beside(Some(ServerReserve {
                    runtime_ns: 50_000_000,
                    period_ns: 1_000_000_000,
                    assumed,
                }))
            })
        };
        let ninety = ask(Some(900_000), None);
        assert!(deadline_params(&ninety, &[1_000_000; 2], 2, &LIMITS, server(true)).is_ok());
        let more = ask(Some(905_000), None);
        assert!(deadline_params(&more, &[1_000_000; 2], 2, &LIMITS, limit).is_ok());
        let e = deadline_params(&more, &[1_000_000; 2], 2, &LIMITS, server(true)).unwrap_err();
        assert_eq!(exit_code(&e), EXIT_USAGE);
        assert_eq!(
            e.to_string(),
            "the 2 deadline threads would reserve 181.0% of a CPU, more than the 180% deadline \
             tasks may have on 2 CPUs (95% of each, kernel.sched_rt_runtime_us, less the \
             fair-class server's 5% of each (the kernel's default: \
             /sys/kernel/debug/sched/fair_server is not readable)): lower --dl-runtime, lengthen \
             the period or run fewer threads (-t)"
        );
        let e = deadline_params(&more, &[1_000_000; 2], 2, &LIMITS, server(false)).unwrap_err();
        assert!(
            e.to_string().contains(
                "(95% of each, kernel.sched_rt_runtime_us, less the \
                 fair-class server's 5% of each): lower"
            ),
            "{e}"
        );
        // The defaults always fit an idle system.
        for n in 1..=9 {
            assert!(
                deadline_params(&ask(None, None), &vec![1_000_000; n], 2, &LIMITS, limit).is_ok(),
                "{n}"
            );
        }
    }

    /// What a deadline run cannot honour is named, and the deadline options
    /// need the policy.
    #[test]
    fn options_a_deadline_run_cannot_honour() {
        let mut o = CyclicOptions::default();
        o.deadline.runtime_ns = Some(100_000);
        assert_eq!(refused(&o), "--dl-runtime is for --policy deadline");
        o.deadline = ask(None, Some(100_000));
        assert_eq!(refused(&o), "--dl-deadline is for --policy deadline");
        o.deadline = ask(Some(1), Some(1));
        assert_eq!(refused(&o), "--dl-runtime is for --policy deadline");
        let mut o = deadline();
        o.cpus = Some(vec![0]);
        assert!(refused(&o).starts_with("--cpus: a deadline task cannot be pinned"));
        let mut o = deadline();
        o.wake = WakeMethod::Timerfd;
        assert!(refused(&o).starts_with("--wake timerfd: a deadline thread waits on no timer"));
        let mut o = deadline();
        o.clock = MeasureClock::Realtime;
        assert!(refused(&o).starts_with("--clock realtime: a deadline run measures on"));
        let mut o = deadline();
        o.trace = super::super::cyclic_trace::TraceMode::On;
        assert!(refused(&o).starts_with("--trace: the stages are a timer's"));
        let mut o = deadline();
        o.trace_outliers_ns = Some(1000);
        assert!(refused(&o).starts_with("--trace: the stages are a timer's"));
        // Bad parameters through plan().
        let mut o = deadline();
        o.deadline = ask(Some(2_000_000), None);
        assert!(refused(&o).starts_with("--dl-runtime 2ms is longer than the deadline 1ms"));
    }

    /// The plan: threads unpinned, one per CPU by default, each with its
    /// parameters; what was asked recorded; nothing of it without the policy.
    #[test]
    fn the_plan_records_the_parameters() {
        let cpus = online_cpus().len();
        let mut o = deadline();
        o.deadline = ask(Some(100_000), None);
        o.distance_ns = 500_000;
        let p = plan(&o).unwrap();
        assert_eq!(p.threads.len(), cpus);
        assert!(p.threads.iter().all(|t| t.cpus.is_empty()));
        assert_eq!(
            p.threads[0].deadline,
            Some(params(100_000, 1_000_000, 1_000_000))
        );
        if cpus > 1 {
            assert_eq!(
                p.threads[1].deadline,
                Some(params(100_000, 1_500_000, 1_500_000))
            );
        }
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["rt"]["policy"], "deadline");
        assert_eq!(v["rt"]["priority"], 0);
        assert_eq!(
            v["deadline"],
            serde_json::json!({"runtime_ns": 100_000, "deadline_ns": null})
        );
        assert_eq!(
            v["threads"][0]["deadline"],
            serde_json::json!({"runtime_ns": 100_000, "deadline_ns": 1_000_000, "period_ns": 1_000_000})
        );
        assert!(header(&p).contains(
            "period 1ms (+500us per thread), SCHED_DEADLINE runtime 100us deadline 1ms, released \
             by the scheduler, latency on CLOCK_MONOTONIC_RAW"
        ));
        // -t without --cpus: as many, unpinned.
        o.threads = Some(3);
        assert_eq!(plan(&o).unwrap().threads.len(), 3);
        // A fifo plan has none of it; its threads are pinned, one per CPU,
        // unless -t is given without --cpus.
        let p = plan(&CyclicOptions::default()).unwrap();
        assert_eq!(p.threads[0].cpus, vec![online_cpus()[0]]);
        let t2 = plan(&CyclicOptions {
            threads: Some(2),
            ..CyclicOptions::default()
        })
        .unwrap();
        assert!(t2.threads.iter().all(|t| t.cpus.is_empty()));
        let v = serde_json::to_value(&p).unwrap();
        assert!(v.get("deadline").is_none());
        assert!(v["threads"][0].get("deadline").is_none());
        assert!(p.threads.iter().all(|t| t.deadline.is_none()));
        assert!(header(&p).contains("SCHED_FIFO 95, wake absolute"));
    }

    #[test]
    fn the_uncalibrated_warning() {
        assert_eq!(uncalibrated_warning(0), None);
        let w = uncalibrated_warning(2).unwrap();
        assert!(
            w.starts_with("2 deadline threads could not read their deadline from the kernel"),
            "{w}"
        );
    }

    /// A deadline measurement thread as `execute` starts it (as root): it
    /// ends by itself at the end time, its samples on the run's clock
    /// (CLOCK_MONOTONIC, the latency read on the raw clock), after the start.
    #[test]
    fn a_deadline_thread_measures_on_the_runs_clock() {
        if sys::geteuid() != 0 {
            return;
        }
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        let (sink, source) = ring(256);
        let (ready_tx, ready_rx) = mpsc::channel();
        let (start_tx, start_rx) = mpsc::channel();
        let counters = Arc::new(GridCounters::default());
        let p = params(100_000, 1_000_000, 1_000_000);
        let rt = RtChoice::new(Policy::Other, 0, true, true).unwrap();
        let job = ThreadJob {
            setup: rt.thread_setup(vec![], vec![]),
            period_ns: 1_000_000,
            wake: WakeMethod::Absolute,
            clock: libc::CLOCK_MONOTONIC,
            loops: Some(1000),
            duration_ns: Some(20_000_000),
            warmup: 0,
            break_above_ns: None,
            sink,
            stop: Arc::new(AtomicBool::new(false)),
            ready: ready_tx,
            start: start_rx,
            index: 0,
            deadline: Some((p, counters)),
        };
        let h = std::thread::spawn(move || measure_thread(job));
        let (_, state) = ready_rx.recv().unwrap();
        let (st, ready) = state.unwrap();
        assert_eq!(st.policy, "deadline");
        assert_eq!(ready.unwrap().granted, p);
        let start = sys::clock_ns(libc::CLOCK_MONOTONIC) + 1_000_000;
        start_tx.send(Some(start)).unwrap();
        let end = h.join().unwrap();
        let done = sys::clock_ns(libc::CLOCK_MONOTONIC);
        assert!(matches!(end, Some(LoopEnd::Duration)), "{end:?}");
        let mut got = Vec::new();
        let mut source = source;
        source.drain(|s| got.push(*s));
        assert!(!got.is_empty());
        for s in &got {
            assert!(
                (start..=done).contains(&s.t_ns),
                "{} {start} {done}",
                s.t_ns
            );
        }
    }

    /// A deadline thread's series: its parameters and counters; one that
    /// could not read the kernel's deadline is named in a warning.
    #[test]
    fn deadline_series_attributes_and_the_uncalibrated_warning() {
        let view = |calibration: Option<Calibration>| {
            let (_, source) = ring(16);
            ThreadView {
                plan: ThreadPlan {
                    index: 0,
                    cpus: vec![],
                    period_ns: 1_000_000,
                    deadline: Some(params(100_000, 1_000_000, 1_000_000)),
                },
                state: None,
                deadline: Some((
                    DeadlineReady {
                        granted: params(100_000, 1_000_000, 1_000_000),
                        calibration,
                    },
                    std::sync::Arc::new(GridCounters::default()),
                )),
                rec: SeriesRecorder::new(0, 4, None),
                last: None,
                us_bins: None,
                source,
            }
        };
        let agg = |views: Vec<ThreadView>| Aggregate {
            threads: views,
            all: SeriesRecorder::new(0, 4, None),
            raw: None,
            tracer: None,
            live: None,
        };
        let cal = Calibration {
            offset_ns: 5,
            window_ns: 7,
        };
        let a = agg(vec![view(Some(cal)), view(None), view(None)]);
        a.threads[0]
            .deadline
            .as_ref()
            .unwrap()
            .1
            .reanchored
            .store(3, Ordering::Relaxed);
        a.threads[0]
            .deadline
            .as_ref()
            .unwrap()
            .1
            .early
            .store(2, Ordering::Relaxed);
        let (series, warnings) = a.series();
        let at = &series[0].attributes;
        assert_eq!(at["dl_runtime_ns"], 100_000);
        assert_eq!(at["dl_deadline_ns"], 1_000_000);
        assert_eq!(at["dl_period_ns"], 1_000_000);
        assert_eq!(at["dl_calibration_window_ns"], 7);
        assert_eq!(at["dl_reanchored"], 3);
        assert_eq!(at["dl_early"], 2);
        assert!(series[1].attributes["dl_calibration_window_ns"].is_null());
        assert_eq!(warnings, [uncalibrated_warning(2).unwrap()]);
        let (_, warnings) = agg(vec![view(Some(cal))]).series();
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    /// A deadline thread's set-up: admitted, what the kernel holds read back
    /// (as root; refused with the reason otherwise).
    #[test]
    fn a_deadline_thread_is_set_up() {
        let p = params(100_000, 1_000_000, 1_000_000);
        let (r, after) = std::thread::spawn(move || {
            let st = ThreadState {
                tid: sys::gettid(),
                policy: "other".into(),
                priority: 0,
                cpus: vec![],
                timer_slack_ns: 1,
            };
            let sched = SchedFile::open();
            let r = enter_deadline(st, &p, sched.as_ref());
            (r, sys::get_scheduler().unwrap().0)
        })
        .join()
        .unwrap();
        match r {
            Ok((st, ready)) => {
                assert_eq!(after, libc::SCHED_DEADLINE);
                assert_eq!((st.policy.as_str(), st.priority), ("deadline", 0));
                let ready = ready.unwrap();
                assert_eq!(ready.granted, p);
                // The kernel's deadline read back (where /proc shows it).
                assert!(ready.calibration.is_some());
            }
            Err(e) => {
                assert_eq!(after, libc::SCHED_OTHER);
                assert!(sys::geteuid() != 0, "{e}");
                assert!(e.starts_with("not allowed to use SCHED_DEADLINE"), "{e}");
            }
        }
    }
}
