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
//! (on the start's grid, [`rtscope_core::cyclic::first_deadline`]). At the
//! end, the aggregator raises the stop flag and interrupts every thread's wait
//! ([`rtscope_core::rt::wake_until_ended`]), so that a long period or start
//! delay does not hold the stop back.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use serde::Serialize;
use serde_json::json;

use rtscope_core::cyclic::{
    run_loop, timer_signal, AbsoluteSleep, LoopConfig, LoopEnd, PosixClock, PosixTimerWait,
    RelativeSleep, TimerfdWait, WakeMethod, START_MARGIN_NS,
};
use rtscope_core::record::{MicrosecondBins, SeriesRecorder};
use rtscope_core::result::{
    now_rfc3339, BreakEvent, EndReason, ResultDocument, Series, Threshold, Tool, SCHEMA_VERSION,
};
use rtscope_core::rt::{ThreadSetup, ThreadState};
use rtscope_core::sample::{ring, RingSink, RingSource, Sample};
use rtscope_core::sys::{self, ClockId};
use rtscope_core::system::SystemSnapshot;
use rtscope_core::units::{format_cpu_list, format_ns, online_cpus};

use super::{check_output, command_line, resolve_rt, RtChoice, RunEnv};
use crate::cli::{ClockArg, CyclicArgs, WakeArg};
use crate::error::{usage, EXIT_OK, EXIT_RUN, EXIT_THRESHOLD};
use crate::output::{histogram as hist_out, live::Live, summary};

/// One measurement thread as planned.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadPlan {
    pub index: usize,
    /// CPUs it is pinned to (empty: not pinned).
    pub cpus: Vec<usize>,
    pub period_ns: u64,
}

/// Every setting of a cyclic run, defaults included (goes into the result document).
#[derive(Debug, Clone, Serialize)]
pub struct CyclicPlan {
    pub threads: Vec<ThreadPlan>,
    pub period_ns: u64,
    pub distance_ns: u64,
    pub loops: Option<u64>,
    pub duration_ns: Option<u64>,
    pub start_delay_ns: u64,
    /// Wake-ups dropped at the start of each thread (`--warmup`), part of `loops`.
    pub warmup: u64,
    pub clock: &'static str,
    pub wake: WakeMethod,
    pub rt: RtChoice,
    pub spikes: usize,
    pub histogram_max_ns: u64,
    pub break_above_ns: Option<u64>,
    pub fail_above_ns: Option<u64>,
    pub checkpoint_ns: Option<u64>,
    pub json: Option<PathBuf>,
    pub raw: Option<PathBuf>,
    pub histogram: Option<PathBuf>,
    pub report: Option<PathBuf>,
    pub ring_capacity: usize,
    /// Background loads (`--load`) and their CPUs (`--load-cpus`).
    pub loads: Vec<crate::load::LoadSpec>,
    pub load_cpus: Option<Vec<usize>>,
    #[serde(skip)]
    pub quiet: bool,
    #[serde(skip)]
    pub clock_id: ClockId,
}

/// Turns arguments into a validated plan (bad input: a usage error, exit 2).
pub fn plan(a: &CyclicArgs) -> Result<CyclicPlan> {
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
    // Pinned unless -t was given without -a (then the scheduler places threads, as in cyclictest).
    let pin = a.cpus.is_some() || a.threads.is_none();
    // About one second of samples per ring at the shortest period, within bounds.
    let ring_capacity = (1_000_000_000 / a.period.max(1)).clamp(4096, 1 << 20) as usize;
    let bins = a.histogram.as_ref().map(|_| a.histogram_max / 1000);
    crate::limits::check_threads(n, crate::limits::cyclic_thread_bytes(ring_capacity, bins))?;
    crate::limits::check_thread_periods(a.period, a.distance, n)?;
    crate::limits::check_start_delay(a.start_delay)?;
    crate::limits::check_warmup(a.warmup, a.loops)?;
    crate::limits::check_count("--spikes", a.spikes as u64, 32 * (n as u64 + 1))?;
    let mut threads = Vec::with_capacity(n);
    for i in 0..n {
        let period_ns = (i as u64)
            .checked_mul(a.distance)
            .and_then(|d| d.checked_add(a.period))
            .ok_or_else(|| usage("--distance: thread periods overflow"))?;
        threads.push(ThreadPlan {
            index: i,
            cpus: if pin {
                vec![list[i % list.len()]]
            } else {
                vec![]
            },
            period_ns,
        });
    }
    if a.out.checkpoint.is_some() && a.out.json.is_none() {
        return Err(usage("--checkpoint needs --json FILE"));
    }
    let rt = resolve_rt(&a.rt)?;
    if a.histogram_max / 1000 > 10_000_000 {
        return Err(usage("--histogram-max: at most 10s"));
    }
    if a.histogram_max < 1000 {
        return Err(usage("--histogram-max: at least 1us (bins are 1 us wide)"));
    }
    for (flag, p) in [
        ("--json", &a.out.json),
        ("--raw", &a.raw),
        ("--histogram", &a.histogram),
        ("--report", &a.out.report),
    ] {
        if let Some(p) = p {
            check_output(flag, p)?;
        }
    }
    crate::load::LoadSet::check(&a.loads.load, a.loads.load_cpus.as_deref())?;
    Ok(CyclicPlan {
        threads,
        period_ns: a.period,
        distance_ns: a.distance,
        loops: a.loops,
        duration_ns: a.duration,
        start_delay_ns: a.start_delay,
        warmup: a.warmup,
        clock: match a.clock {
            ClockArg::Monotonic => "monotonic",
            ClockArg::Realtime => "realtime",
        },
        clock_id: match a.clock {
            ClockArg::Monotonic => libc::CLOCK_MONOTONIC,
            ClockArg::Realtime => libc::CLOCK_REALTIME,
        },
        wake: match a.wake {
            WakeArg::Absolute => WakeMethod::Absolute,
            WakeArg::Relative => WakeMethod::Relative,
            WakeArg::Nanosleep => WakeMethod::Nanosleep,
            WakeArg::Timerfd => WakeMethod::Timerfd,
            WakeArg::PosixTimer => WakeMethod::PosixTimer,
        },
        rt,
        spikes: a.spikes,
        histogram_max_ns: a.histogram_max,
        break_above_ns: a.break_above,
        fail_above_ns: a.fail_above,
        checkpoint_ns: a.out.checkpoint,
        json: a.out.json.clone(),
        raw: a.raw.clone(),
        histogram: a.histogram.clone(),
        report: a.out.report.clone(),
        ring_capacity,
        loads: a.loads.load.clone(),
        load_cpus: a.loads.load_cpus.clone(),
        quiet: a.out.quiet,
    })
}

/// What a measurement thread needs.
struct ThreadJob {
    setup: ThreadSetup,
    period_ns: u64,
    wake: WakeMethod,
    clock: ClockId,
    loops: Option<u64>,
    warmup: u64,
    break_above_ns: Option<u64>,
    sink: RingSink,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ready: mpsc::Sender<(usize, Result<ThreadState, String>)>,
    start: mpsc::Receiver<Option<u64>>,
    index: usize,
}

fn measure_thread(mut job: ThreadJob) -> Option<LoopEnd> {
    let state = job.setup.apply().map_err(|e| e.to_string()).and_then(|st| {
        rtscope_core::rt::accept_wake()
            .map(|_| st)
            .map_err(|e| format!("cannot make the wait interruptible: {e}"))
    });
    let ok = state.is_ok();
    let _ = job.ready.send((job.index, state));
    if !ok {
        return None;
    }
    let start = job.start.recv().ok().flatten()?;
    let cfg = LoopConfig {
        period_ns: job.period_ns,
        start_ns: start,
        start_margin_ns: START_MARGIN_NS,
        warmup: job.warmup,
        loops: job.loops,
        break_above_ns: job.break_above_ns,
        fixed_cpu: match job.setup.cpus.as_slice() {
            [c] => Some(*c as u32),
            _ => None,
        },
    };
    let clock = PosixClock(job.clock);
    let (sink, stop) = (&mut job.sink, &*job.stop);
    Some(match job.wake {
        WakeMethod::Absolute => run_loop(
            &mut AbsoluteSleep { clock: job.clock },
            &clock,
            sink,
            &cfg,
            stop,
        ),
        WakeMethod::Relative => run_loop(
            &mut RelativeSleep::new(job.clock, job.period_ns, false),
            &clock,
            sink,
            &cfg,
            stop,
        ),
        WakeMethod::Nanosleep => run_loop(
            &mut RelativeSleep::new(job.clock, job.period_ns, true),
            &clock,
            sink,
            &cfg,
            stop,
        ),
        WakeMethod::Timerfd => run_loop(
            &mut TimerfdWait::new(job.clock, job.period_ns),
            &clock,
            sink,
            &cfg,
            stop,
        ),
        WakeMethod::PosixTimer => run_loop(
            &mut PosixTimerWait::new(job.clock, job.period_ns),
            &clock,
            sink,
            &cfg,
            stop,
        ),
    })
}

/// Per-thread state of the aggregator.
pub struct ThreadView {
    pub plan: ThreadPlan,
    pub state: Option<ThreadState>,
    pub rec: SeriesRecorder,
    pub last: Option<Sample>,
    pub us_bins: Option<MicrosecondBins>,
    source: RingSource,
}

impl ThreadView {
    pub fn dropped(&self) -> u64 {
        self.source.dropped()
    }

    pub fn label(&self) -> String {
        format!("thread {}", self.plan.index)
    }
}

/// The aggregator's view of the whole run.
pub struct Aggregate {
    pub threads: Vec<ThreadView>,
    pub all: SeriesRecorder,
    raw: Option<(tempfile::NamedTempFile, BufWriter<File>, PathBuf)>,
    raw_error: Option<String>,
}

impl Aggregate {
    /// Drains every ring; returns the number of samples taken in.
    fn drain(&mut self) -> usize {
        let mut n = 0;
        for t in &mut self.threads {
            let (rec, all, last, bins) = (&mut t.rec, &mut self.all, &mut t.last, &mut t.us_bins);
            let idx = t.plan.index;
            let raw = &mut self.raw;
            let raw_error = &mut self.raw_error;
            n += t.source.drain(|s| {
                rec.record(s);
                all.record(s);
                if let Some(b) = bins.as_mut() {
                    b.record(s.latency_ns, s.seq);
                }
                if let Some((_, w, _)) = raw.as_mut() {
                    if let Err(e) =
                        writeln!(w, "{idx},{},{},{},{}", s.cpu, s.seq, s.t_ns, s.latency_ns)
                    {
                        raw_error.get_or_insert_with(|| e.to_string());
                    }
                }
                *last = Some(*s);
            });
        }
        n
    }
}

/// What a finished cyclic run produced.
pub struct Outcome {
    /// The result document (also written to `--json` if given).
    pub doc: ResultDocument,
    /// One line per file written (`result: run.json`).
    pub written: Vec<String>,
    /// Files that could not be written.
    pub write_errors: Vec<String>,
    /// Measurement threads that failed.
    pub thread_errors: Vec<String>,
}

/// Runs the experiment from the command line: measure, print, exit code.
pub fn run(args: CyclicArgs) -> Result<i32> {
    let plan = plan(&args)?;
    let out = execute(&plan)?;
    let doc = &out.doc;
    print!("{}", summary::cyclic_summary(doc));
    print!("{}", crate::output::loads::table(&doc.loads));
    for w in &out.written {
        println!("{w}");
    }
    if let Some(b) = &doc.break_event {
        println!(
            "break: {} sample {} at {} latency {} (above {})",
            b.series,
            b.seq,
            b.t_ns,
            format_ns(b.latency_ns.max(0) as u64),
            format_ns(b.threshold_ns)
        );
    }
    for e in out.write_errors.iter().chain(&out.thread_errors) {
        eprintln!("error: {e}");
    }
    if !out.thread_errors.is_empty() || !out.write_errors.is_empty() {
        return Ok(EXIT_RUN);
    }
    if let Some(t) = doc.threshold.as_ref().filter(|t| t.exceeded) {
        eprintln!(
            "fail: {} samples above {}",
            t.samples_above,
            format_ns(t.fail_above_ns)
        );
        return Ok(EXIT_THRESHOLD);
    }
    Ok(EXIT_OK)
}

/// Runs a planned measurement to its end and writes its files. Errors before
/// the measurement starts (privileges, thread setup) are returned; everything
/// after is reported in the [`Outcome`] so that no result is lost.
pub fn execute(plan: &CyclicPlan) -> Result<Outcome> {
    let system = SystemSnapshot::capture();
    let env = RunEnv::setup(plan.rt.default_system)?;
    // Background loads (crate::load): ramped up before the threads start; a
    // Drop guard stops and reaps them on every early return.
    let loads = crate::load::LoadSet::start(&plan.loads, plan.load_cpus.as_deref())?;
    let started_at = now_rfc3339();

    // Rings and threads.
    let (ready_tx, ready_rx) = mpsc::channel();
    let mut starts = Vec::new();
    let mut handles: Vec<JoinHandle<Option<LoopEnd>>> = Vec::new();
    let mut pending = Vec::new();
    let block = vec![libc::SIGINT, libc::SIGTERM, timer_signal()];
    for tp in &plan.threads {
        let (sink, source) = ring(plan.ring_capacity);
        let (start_tx, start_rx) = mpsc::channel();
        starts.push(start_tx);
        let job = ThreadJob {
            setup: ThreadSetup {
                policy: plan.rt.policy,
                priority: plan.rt.priority,
                cpus: tp.cpus.clone(),
                timer_slack_ns: (!plan.rt.default_system).then_some(1),
                prefault_stack: 128 * 1024,
                block_signals: block.clone(),
            },
            period_ns: tp.period_ns,
            wake: plan.wake,
            clock: plan.clock_id,
            loops: plan.loops,
            warmup: plan.warmup,
            break_above_ns: plan.break_above_ns,
            sink,
            stop: env.stop.clone(),
            ready: ready_tx.clone(),
            start: start_rx,
            index: tp.index,
        };
        let h = std::thread::Builder::new()
            .name(format!("rtscope-t{}", tp.index))
            .stack_size(512 * 1024)
            .spawn(move || measure_thread(job))
            .context("cannot start a measurement thread")?;
        handles.push(h);
        pending.push((tp.clone(), source));
    }
    drop(ready_tx);
    let mut states: Vec<Option<ThreadState>> = vec![None; plan.threads.len()];
    let mut setup_errors = Vec::new();
    for _ in 0..plan.threads.len() {
        match ready_rx.recv() {
            Ok((i, Ok(st))) => states[i] = Some(st),
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

    let mut raw = None;
    if let Some(p) = &plan.raw {
        let dir = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        let tmp = tempfile::Builder::new()
            .prefix(".rtscope-raw-")
            .tempfile_in(dir)
            .with_context(|| format!("--raw {}", p.display()))?;
        {
            use std::os::unix::fs::PermissionsExt;
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o644))?;
        }
        let mut w = BufWriter::with_capacity(1 << 20, tmp.reopen()?);
        writeln!(w, "thread,cpu,seq,t_ns,latency_ns")?;
        raw = Some((tmp, w, p.clone()));
    }

    let mut live = Live::new(plan.quiet);
    if !plan.quiet {
        eprintln!("{}", header(plan));
        if !loads.is_empty() {
            eprintln!("{}", loads.describe());
        }
        for w in system.warnings().iter().chain(env.notes.iter()) {
            eprintln!("warning: {w}");
        }
    }
    // The common start, chosen now that every thread is ready and the run's
    // set-up is done; each thread still arms its first deadline at least
    // START_MARGIN_NS in its own future, on this start's grid.
    let start_at = sys::clock_ns(plan.clock_id) + plan.start_delay_ns;
    for s in &starts {
        let _ = s.send(Some(start_at));
    }
    let t0 = Instant::now();
    let new_recorder = || SeriesRecorder::new(start_at, plan.spikes, plan.fail_above_ns);
    let mut agg = Aggregate {
        threads: pending
            .into_iter()
            .zip(states)
            .map(|((tp, source), state)| ThreadView {
                plan: tp,
                state,
                rec: new_recorder(),
                last: None,
                us_bins: plan
                    .histogram
                    .as_ref()
                    .map(|_| MicrosecondBins::new((plan.histogram_max_ns / 1000) as usize, 20)),
                source,
            })
            .collect(),
        all: new_recorder(),
        raw,
        raw_error: None,
    };

    let duration = plan.duration_ns.map(Duration::from_nanos);
    let mut duration_hit = false;
    let mut last_checkpoint = Instant::now();
    let poll = Duration::from_millis(50);
    loop {
        let all_done = handles.iter().all(|h| h.is_finished());
        agg.drain();
        live.update(&agg, plan, t0.elapsed());
        if env.stop.load(Ordering::Relaxed) || all_done {
            break;
        }
        if let Some(d) = duration {
            if t0.elapsed() >= d + Duration::from_nanos(plan.start_delay_ns) {
                duration_hit = true;
                env.stop.store(true, Ordering::Relaxed);
                break;
            }
        }
        if let (Some(every), Some(path)) = (plan.checkpoint_ns, &plan.json) {
            if last_checkpoint.elapsed() >= Duration::from_nanos(every) {
                last_checkpoint = Instant::now();
                let doc = document(
                    plan,
                    &system,
                    &env,
                    &agg,
                    &started_at,
                    start_at,
                    EndReason::Running,
                    None,
                );
                if let Err(e) = doc.write(path) {
                    eprintln!("warning: checkpoint to {} failed: {e}", path.display());
                }
            }
        }
        std::thread::sleep(poll);
    }
    env.stop.store(true, Ordering::Relaxed);
    // Interrupt the waits (a long period or start delay would hold the stop).
    let tids: Vec<i32> = agg
        .threads
        .iter()
        .map(|t| t.state.as_ref().map_or(0, |st| st.tid))
        .collect();
    rtscope_core::rt::wake_until_ended(&tids, |i| !handles[i].is_finished());
    let mut ends = Vec::new();
    for (i, h) in handles.into_iter().enumerate() {
        ends.push((i, h.join().unwrap_or(None)));
    }
    agg.drain();
    live.finish();
    let load_reports = loads.stop();

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
    } else if duration_hit {
        EndReason::Duration
    } else if ends.iter().all(|(_, e)| matches!(e, Some(LoopEnd::Loops))) {
        EndReason::Loops
    } else {
        EndReason::Interrupted
    };
    let mut doc = document(
        plan,
        &system,
        &env,
        &agg,
        &started_at,
        start_at,
        end_reason,
        break_event,
    );
    crate::load::attach(&mut doc, &load_reports);

    // Outputs: every file is written even if another one fails.
    let mut written = Vec::new();
    let mut write_errors = Vec::new();
    if let Some(p) = &plan.json {
        match doc.write(p) {
            Ok(()) => written.push(format!("result: {}", p.display())),
            Err(e) => write_errors.push(format!("--json {}: {e}", p.display())),
        }
    }
    if let Some(p) = &plan.histogram {
        let text = hist_out::cyclictest_text(&agg, env.dma_latency_held);
        match rtscope_core::result::write_atomic(p, text.as_bytes()) {
            Ok(()) => written.push(format!("histogram: {}", p.display())),
            Err(e) => write_errors.push(format!("--histogram {}: {e}", p.display())),
        }
    }
    if let Some((tmp, mut w, p)) = agg.raw.take() {
        let res = w
            .flush()
            .and_then(|_| tmp.as_file().sync_all())
            .and_then(|_| tmp.persist(&p).map(|_| ()).map_err(|e| e.error));
        match (res, agg.raw_error.take()) {
            (Ok(()), None) => written.push(format!("raw samples: {}", p.display())),
            (Ok(()), Some(e)) | (Err(_), Some(e)) => {
                write_errors.push(format!("--raw {}: {e}", p.display()))
            }
            (Err(e), None) => write_errors.push(format!("--raw {}: {e}", p.display())),
        }
    }

    // The HTML report (crate::report), written last so that it shows the final document.
    if let Some(p) = &plan.report {
        match crate::report::write_html(std::slice::from_ref(&doc), p) {
            Ok(()) => written.push(format!("report: {}", p.display())),
            Err(e) => write_errors.push(format!("--report {}: {e}", p.display())),
        }
    }

    Ok(Outcome {
        doc,
        written,
        write_errors,
        thread_errors: errors,
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
    format!(
        "rtscope cyclic: {} thread{} ({placement}), period {}{}, SCHED_{} {}, wake {} on CLOCK_{}, {stop}",
        plan.threads.len(),
        if plan.threads.len() == 1 { "" } else { "s" },
        format_ns(plan.period_ns),
        if plan.distance_ns > 0 {
            format!(" (+{} per thread)", format_ns(plan.distance_ns))
        } else {
            String::new()
        },
        plan.rt.policy.name().to_uppercase(),
        plan.rt.priority,
        plan.wake.name(),
        plan.clock.to_uppercase(),
    )
}

/// Builds the result document from the aggregator's state.
#[allow(clippy::too_many_arguments)]
fn document(
    plan: &CyclicPlan,
    system: &SystemSnapshot,
    env: &RunEnv,
    agg: &Aggregate,
    started_at: &str,
    start_at: u64,
    end_reason: EndReason,
    break_event: Option<BreakEvent>,
) -> ResultDocument {
    let mut series: Vec<Series> = Vec::new();
    let mut total_dropped = 0;
    for t in &agg.threads {
        let dropped = t.dropped();
        total_dropped += dropped;
        let mut s = t.rec.to_series(&t.label(), dropped);
        let a = &mut s.attributes;
        a.insert("thread".into(), json!(t.plan.index));
        a.insert("period_ns".into(), json!(t.plan.period_ns));
        a.insert("cpus".into(), json!(t.plan.cpus));
        if let Some(st) = &t.state {
            a.insert("tid".into(), json!(st.tid));
            a.insert("policy".into(), json!(st.policy));
            a.insert("priority".into(), json!(st.priority));
            a.insert("timer_slack_ns".into(), json!(st.timer_slack_ns));
        }
        series.push(s);
    }
    let mut all = agg.all.to_series("all", total_dropped);
    all.attributes
        .insert("threads".into(), json!(agg.threads.len()));
    series.push(all);

    let mut warnings = super::run_warnings(system, env, &plan.rt);
    if total_dropped > 0 {
        warnings.push(format!(
            "{total_dropped} samples dropped: the aggregator could not keep up"
        ));
    }
    if agg.all.negative > 0 {
        warnings.push(format!(
            "{} samples had negative latency (the clock was stepped)",
            agg.all.negative
        ));
    }
    let now = sys::clock_ns(plan.clock_id);
    let mut plan_json = serde_json::to_value(plan).unwrap_or_default();
    if let Some(o) = plan_json.as_object_mut() {
        o.insert("mlocked".into(), json!(env.mlocked));
        o.insert("cpu_dma_latency_held".into(), json!(env.dma_latency_held));
    }
    ResultDocument {
        schema_version: SCHEMA_VERSION,
        tool: Tool::default(),
        experiment: "cyclic".into(),
        command_line: command_line(),
        started_at: started_at.to_string(),
        ended_at: now_rfc3339(),
        start_clock_ns: start_at,
        duration_ns: now.saturating_sub(start_at),
        end_reason,
        plan: plan_json,
        system: system.clone(),
        series,
        loads: vec![],
        break_event,
        threshold: plan.fail_above_ns.map(|t| Threshold {
            fail_above_ns: t,
            exceeded: agg.all.above_threshold > 0,
            samples_above: agg.all.above_threshold,
        }),
        warnings,
    }
}
