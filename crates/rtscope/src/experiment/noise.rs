//! `rtscope noise`: OS noise per CPU, oslat's method. A thread per CPU
//! (SCHED_FIFO by default) reads the cycle counter in a tight loop
//! ([`rtscope_core::noise::busy_loop`]) and records every iteration longer
//! than `--threshold` as a gap; the aggregator turns gaps into CLOCK_MONOTONIC
//! ns, records them (HDR histogram, timeline, worst gaps) and, with
//! `--trace`, attributes each gap to the IRQs, softirqs, threads and NMIs
//! whose kernel events fall inside it (a private tracefs instance,
//! [`rtscope_core::trace`]). Gaps without any kernel event are hardware or
//! hypervisor noise.
//!
//! A real-time loop's gaps that are the kernel's bandwidth limits (RT
//! throttling, the fair server) are told apart from the noise at the end of
//! the run ([`rtscope_core::noise::throttle`]): the series and its figures
//! are the noise without them, the `throttling` attribute says what they were.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

use anyhow::{anyhow, Result};
use serde::Serialize;
use serde_json::json;

use rtscope_core::clock::{open_calibrated_until, SourceId};
use rtscope_core::noise::throttle::{self, Budget};
use rtscope_core::noise::{busy_loop_on, gap_ring, LoopTotals, TickMap};
use rtscope_core::record::SeriesRecorder;
use rtscope_core::result::{EndReason, Series};
use rtscope_core::sample::Sample;
use rtscope_core::trace::attrib::{Attributed, Attributor, Owner};
use rtscope_core::trace::{Event, Instance, TraceConfig};
use rtscope_core::units::{format_cpu_list, format_ns, online_cpus};

use super::run::{self, Finished, Outputs, RtChoice, RunRequest};
use crate::error::usage;

/// Every setting of a noise run (goes into the result document).
#[derive(Debug, Clone, Serialize)]
pub struct NoisePlan {
    pub cpus: Vec<usize>,
    pub duration_ns: u64,
    pub threshold_ns: u64,
    /// Attribute gaps with kernel trace events (private tracefs instance).
    pub trace: bool,
    /// Per-CPU trace buffer, KiB.
    pub trace_buffer_kb: u32,
    /// The counter the loop reads (`tsc`, `cntvct`, `monotonic`, ...).
    pub source: String,
    pub calibration_window_ns: u64,
    /// Longest gaps kept per CPU (with their causes under --trace).
    pub spikes: usize,
    /// The real-time choice, the loads and the outputs (`run.rs`).
    #[serde(flatten)]
    pub run: RunRequest,
}

/// The default counter: the invariant TSC on x86-64, the generic timer on
/// aarch64, else CLOCK_MONOTONIC.
pub fn default_source() -> SourceId {
    #[cfg(target_arch = "x86_64")]
    if rtscope_core::clock::x86::tsc_invariant().invariant() {
        return SourceId::Tsc;
    }
    #[cfg(target_arch = "aarch64")]
    return SourceId::Cntvct;
    #[allow(unreachable_code)]
    SourceId::Monotonic
}

/// What the user asks for (plain values; `cli.rs` fills it in from the
/// command line, and a program can build one directly).
#[derive(Debug, Clone)]
pub struct NoiseOptions {
    /// CPUs to measure (None: the last online CPU).
    pub cpus: Option<Vec<usize>>,
    pub duration_ns: u64,
    pub threshold_ns: u64,
    pub trace: bool,
    pub trace_buffer_kb: u32,
    /// The counter's name (None: [`default_source`]).
    pub source: Option<String>,
    pub calibration_window_ns: u64,
    pub spikes: usize,
    /// The real-time choice, the loads and the outputs (`run.rs`).
    pub run: RunRequest,
}

impl Default for NoiseOptions {
    /// `rtscope noise`'s defaults: 10 s on the last CPU, gaps from 1 µs.
    fn default() -> Self {
        NoiseOptions {
            cpus: None,
            duration_ns: 10_000_000_000,
            threshold_ns: 1_000,
            trace: false,
            trace_buffer_kb: 4096,
            source: None,
            calibration_window_ns: 200_000_000,
            spikes: 16,
            run: RunRequest {
                rt: RtChoice::default(),
                loads: Vec::new(),
                load_cpus: None,
                outputs: Outputs::default(),
            },
        }
    }
}

/// Turns options into a validated plan.
pub fn plan(a: &NoiseOptions) -> Result<NoisePlan> {
    let online = online_cpus();
    let cpus = match &a.cpus {
        Some(c) => {
            if let Some(bad) = c.iter().find(|c| !online.contains(c)) {
                return Err(usage(format!(
                    "--cpus: CPU {bad} is not online (online CPUs: {})",
                    format_cpu_list(&online)
                )));
            }
            c.clone()
        }
        None => online.last().copied().into_iter().collect(),
    };
    if cpus.is_empty() {
        return Err(usage("--cpus: no CPU to measure on"));
    }
    crate::limits::check_period("--threshold", a.threshold_ns)?;
    let source = match &a.source {
        Some(s) => {
            let id = SourceId::from_name(s)
                .ok_or_else(|| usage(format!("--source {s}: no such source")))?;
            if !id.monotonic() {
                return Err(usage(format!(
                    "--source {s}: the loop needs a monotonic source"
                )));
            }
            id
        }
        None => default_source(),
    };
    a.run.check(&[])?;
    Ok(NoisePlan {
        cpus,
        duration_ns: a.duration_ns,
        threshold_ns: a.threshold_ns,
        trace: a.trace,
        trace_buffer_kb: a.trace_buffer_kb,
        source: source.name().to_string(),
        calibration_window_ns: a.calibration_window_ns,
        spikes: a.spikes,
        run: a.run.clone(),
    })
}

/// What another experiment run on this engine asks of it (`hwlat`'s
/// user-space method): its header and live sinks, and every attributed gap.
#[derive(Default)]
pub struct Engine<'a> {
    /// The run's header (default: noise's).
    pub header: Option<String>,
    /// Live sinks to start with the run (taken by the observer).
    pub live: Option<run::LiveSetup<'a>>,
    pub observer: Option<&'a mut dyn Observer>,
}

/// Called on the aggregator thread of a run of the engine.
pub trait Observer {
    /// The run has begun (its live sinks are in `run.live`).
    fn started(&mut self, run: &mut run::Run);
    /// A gap of CPU `k` (the plan's `cpus[k]`) attributed (`--trace` only).
    fn attributed(&mut self, k: usize, gap: &Attributed);
    /// Once a drain of the rings (every 20 ms).
    fn tick(&mut self);
}

/// Runs the experiment from the command line.
pub fn run(a: &NoiseOptions) -> Result<i32> {
    let plan = plan(a)?;
    let f = super::repeat::finished(&plan.run.outputs, || execute(&plan))?;
    let mut summary = crate::output::noise::summary(&f.doc, &f.shown);
    summary.push_str(&super::repeat::note(&f.doc, plan.run.outputs.repeat));
    Ok(run::deliver(&f.doc, &plan.run.outputs, vec![], &summary))
}

/// What a CPU's measurement thread shares with the aggregator.
struct Shared {
    progress: AtomicU64,
    tid: AtomicI32,
}

/// How long after an event's time the aggregator waits before attributing
/// the gaps around it: the trace buffers are read every 20 ms and a gap
/// reaches the aggregator when it ends, so everything before this lag has
/// arrived (a gap longer than this is attributed with what is still held).
const ATTRIBUTION_LAG_NS: u64 = 2_000_000_000;

/// The most gaps held per CPU for the throttling recognition (16 bytes
/// each: 4 MiB); gaps beyond that are recorded as noise at once.
const MAX_HELD: usize = 1 << 18;

/// Where debugfs is mounted, for the fair server's settings.
const DEBUGFS: &str = "/sys/kernel/debug";

/// One CPU's state in the aggregator. Everything is bounded: gaps go into
/// the recorder and running totals as they arrive, and with --trace the
/// attribution streams, holding only the last [`ATTRIBUTION_LAG_NS`] of
/// gaps and events.
struct PerCpu {
    cpu: usize,
    rec: SeriesRecorder,
    seq: u64,
    gaps: u64,
    noise_ns: u64,
    /// oslat's 1 µs buckets of the gaps (the quiet iterations are added at the end).
    oslat: Vec<u64>,
    attrib: Option<Attributor>,
    pend_gaps: std::collections::VecDeque<(u64, u64)>,
    pend_evs: Vec<Event>,
    /// The bandwidth limits that may stop this CPU's loop (none for a
    /// loop that is not real-time).
    budgets: Vec<Budget>,
    /// Gaps long enough to be part of throttling, `(start, len, seq)`:
    /// recorded once [`settle`](Self::settle) has told them apart.
    held: Vec<(u64, u64, u64)>,
}

impl PerCpu {
    fn new(cpu: usize, origin: u64, spikes: usize, budgets: Vec<Budget>) -> PerCpu {
        PerCpu {
            cpu,
            rec: SeriesRecorder::new(origin, spikes, None),
            seq: 0,
            gaps: 0,
            noise_ns: 0,
            oslat: vec![0; 32],
            attrib: None,
            pend_gaps: Default::default(),
            pend_evs: Vec::new(),
            budgets,
            held: Vec::new(),
        }
    }

    fn gap(&mut self, start: u64, len: u64, trace: bool) {
        let seq = self.seq;
        self.seq += 1;
        self.gaps += 1;
        self.noise_ns += len;
        let n = self.oslat.len();
        self.oslat[((len / 1000) as usize).min(n - 1)] += 1;
        let piece_min = self.budgets.iter().map(Budget::piece_min_ns).min();
        if piece_min.is_some_and(|m| len >= m) && self.held.len() < MAX_HELD {
            self.held.push((start, len, seq));
        } else {
            self.record(start, len, seq);
        }
        if trace {
            self.pend_gaps.push_back((start, len));
        }
    }

    /// The gaps of the noise: every gap but those of throttling, and those
    /// that did not fit in the ring (`dropped`, counted, not recorded).
    fn noise_gaps(&self, dropped: u64) -> u64 {
        self.gaps + dropped
    }

    /// oslat's histogram of a loop of `iterations`: the buckets of every gap
    /// received (throttling included, as oslat counts it), every other
    /// iteration in bucket 0.
    fn oslat_buckets(&self, iterations: u64) -> Vec<u64> {
        let mut b = self.oslat.clone();
        b[0] += iterations.saturating_sub(self.oslat.iter().sum());
        b
    }

    fn record(&mut self, start: u64, len: u64, seq: u64) {
        self.rec.record(&Sample {
            seq,
            t_ns: start,
            latency_ns: len as i64,
            overruns: 0,
            cpu: self.cpu as u32,
        });
    }

    /// Tells the held gaps of a run of `run_ns` apart: throttling leaves the
    /// noise figures (gaps, noise), the rest is recorded. `None` for a loop
    /// with no bandwidth limit to look for.
    fn settle(&mut self, run_ns: u64) -> Option<throttle::Report> {
        let held = std::mem::take(&mut self.held);
        let spans: Vec<(u64, u64)> = held.iter().map(|&(s, l, _)| (s, l)).collect();
        let (flags, found) = throttle::classify(&spans, &self.budgets, run_ns);
        for (&(start, len, seq), throttled) in held.iter().zip(flags) {
            if throttled {
                self.gaps -= 1;
                self.noise_ns -= len;
            } else {
                self.record(start, len, seq);
            }
        }
        (!self.budgets.is_empty()).then(|| throttle::Report::new(&self.budgets, &found, run_ns))
    }

    /// Feeds the attributor every gap and event before `until`, in time
    /// order (a gap before the events at or after its start); the rest waits.
    fn attribute(&mut self, until: u64) {
        let Some(a) = self.attrib.as_mut() else {
            return;
        };
        self.pend_evs.sort_by_key(|e| e.ts);
        let n = self.pend_evs.partition_point(|e| e.ts < until);
        for e in &self.pend_evs[..n] {
            while let Some(&(gs, gl)) = self.pend_gaps.front().filter(|g| g.0 <= e.ts) {
                a.gap(gs, gl);
                self.pend_gaps.pop_front();
            }
            a.event(e);
        }
        self.pend_evs.drain(..n);
        while let Some(&(gs, gl)) = self.pend_gaps.front().filter(|g| g.0 < until) {
            a.gap(gs, gl);
            self.pend_gaps.pop_front();
        }
    }
}

/// The bandwidth limits that may stop a loop of `policy` on `cpu` (see
/// [`throttle::budgets`]): none unless it is real-time; the fair server's
/// settings from `debugfs` where readable.
fn budgets_for(
    policy: rtscope_core::rt::Policy,
    sys: &rtscope_core::system::SystemSnapshot,
    debugfs: &std::path::Path,
    cpu: usize,
) -> Vec<Budget> {
    if !policy.is_rt() {
        return Vec::new();
    }
    throttle::budgets(
        sys.sched_rt_period_us,
        sys.sched_rt_runtime_us,
        throttle::read_fair_server(debugfs, cpu),
        throttle::fair_server_kernel(&sys.kernel_release),
    )
}

/// Measures and builds the result document.
pub fn execute(plan: &NoisePlan) -> Result<Finished> {
    execute_with(plan, Engine::default())
}

/// The header of a noise run.
fn noise_header(plan: &NoisePlan) -> String {
    format!(
        "rtscope noise: CPUs {}, {}, gaps >= {}, SCHED_{} {}, {} loop{}",
        format_cpu_list(&plan.cpus),
        format_ns(plan.duration_ns),
        format_ns(plan.threshold_ns),
        plan.run.rt.policy.name().to_uppercase(),
        plan.run.rt.priority,
        plan.source,
        if plan.trace {
            ", attributed with kernel trace events"
        } else {
            ""
        }
    )
}

/// [`execute`] for another experiment run on this engine (see [`Engine`]).
pub fn execute_with(plan: &NoisePlan, engine: Engine) -> Result<Finished> {
    let Engine {
        header,
        live,
        mut observer,
    } = engine;
    let header = header.unwrap_or_else(|| noise_header(plan));
    let mut warnings = Vec::new();
    if plan.run.rt.policy.is_rt() && plan.cpus.len() >= online_cpus().len() {
        warnings.push(
            "every online CPU runs a real-time busy loop: the aggregator (and everything else) only runs when the kernel throttles them".to_string(),
        );
    }
    let id = SourceId::from_name(&plan.source).ok_or_else(|| anyhow!("unknown source"))?;
    // Tracing is set up before the run so that a missing tracefs is refused
    // at once; the stop signals are wired first, so that a stop or a fatal
    // signal during the set-up does not leave the instance behind (a stop
    // then makes the run begin stopped).
    let _early = crate::signals::StopSignals::install()?;
    let mut inst = if plan.trace {
        let events = TraceConfig::noise_events();
        let cfg = TraceConfig {
            cpus: plan.cpus.clone(),
            events,
            buffer_kb: plan.trace_buffer_kb,
        };
        Some(Instance::open(&cfg).map_err(|e| usage(format!("--trace: {e}")))?)
    } else {
        None
    };
    let mut run = run::begin_live(&plan.run.settings(), &header, live)?;
    if let Some(o) = observer.as_mut() {
        o.started(&mut run);
    }
    if let Some(i) = &inst {
        if !i.missing.is_empty() && !plan.run.outputs.quiet {
            eprintln!(
                "note: trace events not available here: {}",
                i.missing.join(", ")
            );
        }
    }
    // A stop during the calibration cuts it short (within 100 ms); the run
    // then ends at once with what it has.
    let (src, scale, cal) = open_calibrated_until(id, plan.calibration_window_ns, run.stop())
        .map_err(|e| anyhow!("--source {}: {e}", plan.source))?;
    let threshold_ticks = ((plan.threshold_ns as f64) * scale.hz / 1e9)
        .ceil()
        .max(1.0) as u64;
    let duration_ticks = ((plan.duration_ns as f64) * scale.hz / 1e9) as u64;
    let mut map = TickMap::new(scale, id.width_bits());
    map.sample(&src);
    let origin = rtscope_core::sys::clock_ns(libc::CLOCK_MONOTONIC);
    let mut per: Vec<PerCpu> = plan
        .cpus
        .iter()
        .map(|&cpu| {
            let budgets = budgets_for(
                plan.run.rt.policy,
                &run.system,
                std::path::Path::new(DEBUGFS),
                cpu,
            );
            PerCpu::new(cpu, origin, plan.spikes, budgets)
        })
        .collect();
    let shared: Vec<Shared> = plan
        .cpus
        .iter()
        .map(|_| Shared {
            progress: AtomicU64::new(0),
            tid: AtomicI32::new(0),
        })
        .collect();
    let stop: &AtomicBool = run.stop();
    // Ring: room for a second of gaps at one per 10 µs, drained every 20 ms.
    let mut rings = Vec::new();
    let mut producers = Vec::new();
    for _ in &plan.cpus {
        let (p, c) = gap_ring(1 << 17);
        producers.push(p);
        rings.push(c);
    }
    if let Some(i) = inst.as_mut() {
        // Drop what was recorded during set-up.
        i.read(|_| {});
    }
    // Gaps and trace events are drained during the run (so that neither the
    // rings nor the trace buffers fill up) and attributed as they settle.
    let cpus = &plan.cpus;
    let trace = inst.is_some();
    let observing = observer.is_some();
    let drain = |rings: &mut [rtscope_core::noise::GapConsumer],
                 inst: &mut Option<Instance>,
                 map: &TickMap,
                 per: &mut [PerCpu],
                 observer: &mut Option<&mut dyn Observer>,
                 until: u64| {
        for (k, r) in rings.iter_mut().enumerate() {
            while let Ok(g) = r.pop() {
                per[k].gap(map.to_mono(g.start), map.len_ns(g.ticks), trace);
            }
        }
        if let Some(i) = inst.as_mut() {
            i.read(|e| {
                if let Some(k) = cpus.iter().position(|&c| c as u32 == e.cpu) {
                    per[k].pend_evs.push(*e);
                }
            });
            for (k, p) in per.iter_mut().enumerate() {
                if p.attrib.is_none() {
                    let tid = shared[k].tid.load(Ordering::Acquire);
                    if tid != 0 {
                        let mut a = Attributor::new(tid, origin, plan.spikes);
                        if observing {
                            a.keep_finished();
                        }
                        p.attrib = Some(a);
                    }
                }
                p.attribute(until);
                if let (Some(o), Some(a)) = (observer.as_mut(), p.attrib.as_mut()) {
                    for g in a.take_finished() {
                        o.attributed(k, &g);
                    }
                }
            }
        }
        if let Some(o) = observer.as_mut() {
            o.tick();
        }
    };
    let per_ref: &[Shared] = &shared;
    let src_ref = &src;
    let results: Vec<Result<(rtscope_core::rt::ThreadState, LoopTotals), String>> =
        std::thread::scope(|s| {
            let mut handles = Vec::new();
            for (k, mut prod) in producers.into_iter().enumerate() {
                let setup = plan
                    .run
                    .rt
                    .thread_setup(vec![cpus[k]], run::STOP_SIGNALS.to_vec());
                let h = std::thread::Builder::new()
                    .name(format!("rtscope-noise-{}", cpus[k]))
                    .spawn_scoped(s, move || {
                        let state = setup.apply().map_err(|e| e.to_string())?;
                        per_ref[k]
                            .tid
                            .store(rtscope_core::sys::gettid(), Ordering::Release);
                        let t = busy_loop_on(
                            src_ref,
                            threshold_ticks,
                            duration_ticks,
                            stop,
                            &per_ref[k].progress,
                            &mut prod,
                        );
                        Ok((state, t))
                    });
                handles.push(h);
            }
            // The aggregator: drains the rings and the trace buffers.
            loop {
                let all_done = handles
                    .iter()
                    .all(|h| h.as_ref().map_or(true, |h| h.is_finished()));
                map.sample(src_ref);
                let now = rtscope_core::sys::clock_ns(libc::CLOCK_MONOTONIC);
                drain(
                    &mut rings,
                    &mut inst,
                    &map,
                    &mut per,
                    &mut observer,
                    now.saturating_sub(ATTRIBUTION_LAG_NS),
                );
                if all_done {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            handles
                .into_iter()
                .map(|h| match h {
                    Ok(h) => h
                        .join()
                        .unwrap_or_else(|_| Err("the measurement thread panicked".into())),
                    Err(e) => Err(format!("cannot start the measurement thread: {e}")),
                })
                .collect()
        });
    let mut totals = Vec::new();
    let mut thread_states = Vec::new();
    for r in results {
        let (st, t) = r.map_err(|e| anyhow!(e))?;
        thread_states.push(st);
        totals.push(t);
    }
    map.sample(&src);
    // Everything is drained now: the last gaps and events, attributed to the end.
    if let Some(i) = inst.as_mut() {
        i.stop();
    }
    drain(
        &mut rings,
        &mut inst,
        &map,
        &mut per,
        &mut observer,
        u64::MAX,
    );
    let mut trace_doc = None;
    if let Some(i) = inst.take() {
        for (k, p) in per.iter_mut().enumerate() {
            let t = &totals[k];
            let own = shared[k].tid.load(Ordering::Acquire);
            let a = p.attrib.get_or_insert_with(|| {
                let mut a = Attributor::new(own, origin, plan.spikes);
                if observing {
                    a.keep_finished();
                }
                a
            });
            a.finish(map.to_mono(t.last));
            if let Some(o) = observer.as_mut() {
                for g in a.take_finished() {
                    o.attributed(k, &g);
                }
            }
        }
        // Only the hrtimer callbacks shown are looked up (reading and
        // parsing all of /proc/kallsyms took over a second after a stop).
        let mut wanted = std::collections::HashSet::new();
        for a in per.iter().filter_map(|p| p.attrib.as_ref()) {
            let owners = a
                .top()
                .into_iter()
                .take(12)
                .map(|(o, _)| o)
                .chain(
                    a.worst()
                        .iter()
                        .flat_map(|w| w.parts.iter().map(|(o, _)| *o)),
                )
                .collect::<Vec<_>>();
            wanted.extend(owners.into_iter().filter_map(|o| match o {
                Owner::Hrtimer(f) => Some(f),
                _ => None,
            }));
        }
        let symbols = kallsyms_resolver(&wanted);
        let mut top_doc = Vec::new();
        for p in per.iter_mut() {
            let a = p
                .attrib
                .as_mut()
                .expect("every CPU's attributor was made above");
            let d = &i.decoder;
            let cpu = p.cpu as u32;
            let name = |o: &Owner| o.name(d, cpu, &|f| symbols.get(&f).cloned());
            let top: Vec<serde_json::Value> = a
                .top()
                .iter()
                .take(12)
                .map(|(o, t)| {
                    json!({"name": name(o), "kind": o.kind(), "total_ns": t.total_ns,
                           "gaps": t.gaps, "gaps_main": t.gaps_main, "max_ns": t.max_ns})
                })
                .collect();
            let worst: Vec<serde_json::Value> = a
                .worst()
                .iter()
                .map(|w| {
                    json!({"t_ns": w.start_ns, "gap_ns": w.len_ns, "events": w.events,
                           "causes": w.parts.iter().map(|(o, ns)| json!({"name": name(o), "kind": o.kind(), "ns": ns})).collect::<Vec<_>>()})
                })
                .collect();
            top_doc.push((top, worst));
        }
        trace_doc = Some((
            top_doc,
            i.events,
            i.lost_pages,
            i.lost_events,
            i.enabled.clone(),
            i.missing.clone(),
            i.mounted,
        ));
        drop(i);
    }
    let mut series: Vec<Series> = Vec::new();
    for (k, p) in per.iter_mut().enumerate() {
        let t = &totals[k];
        let dur_ns = map.len_ns(t.last.wrapping_sub(t.first));
        let throttling = p.settle(dur_ns);
        let gap_ns = p.noise_ns;
        let loop_min_ns = map.len_ns(t.min_ticks);
        // The mean of the iterations that were no gap; none when every one was.
        let quiet_iters = t.iterations.saturating_sub(t.gaps);
        let loop_mean_ns = (quiet_iters > 0).then(|| {
            map.len_ns(t.last.wrapping_sub(t.first).saturating_sub(t.gap_ticks)) as f64
                / quiet_iters as f64
        });
        if loop_min_ns >= plan.threshold_ns {
            warnings.push(format!(
                "CPU {}: the loop's fastest iteration ({}) is not below --threshold ({}): every iteration counts as a gap, so the noise figures measure the loop itself (a counter slow to read here?): raise --threshold above it",
                p.cpu,
                format_ns(loop_min_ns),
                format_ns(plan.threshold_ns)
            ));
        }
        let mut s = p.rec.to_series(&format!("cpu {}", p.cpu), t.dropped);
        let secs = dur_ns as f64 / 1e9;
        let a = &mut s.attributes;
        a.insert("cpu".into(), json!(p.cpu));
        a.insert("tid".into(), json!(shared[k].tid.load(Ordering::Acquire)));
        a.insert("duration_ns".into(), json!(dur_ns));
        a.insert("iterations".into(), json!(t.iterations));
        a.insert("loop_min_ns".into(), json!(loop_min_ns));
        a.insert("loop_mean_ns".into(), json!(loop_mean_ns));
        a.insert("max_iteration_ns".into(), json!(map.len_ns(t.max_ticks)));
        a.insert("gaps".into(), json!(p.noise_gaps(t.dropped)));
        a.insert("noise_ns".into(), json!(gap_ns));
        a.insert("throttling".into(), json!(throttling));
        a.insert(
            "available_pct".into(),
            json!(if dur_ns > 0 {
                100.0 * (1.0 - gap_ns as f64 / dur_ns as f64)
            } else {
                0.0
            }),
        );
        a.insert(
            "gaps_per_s".into(),
            json!(if secs > 0.0 {
                p.noise_gaps(t.dropped) as f64 / secs
            } else {
                0.0
            }),
        );
        if plan.threshold_ns <= 1000 {
            a.insert(
                "oslat_buckets_us".into(),
                json!(p.oslat_buckets(t.iterations)),
            );
        }
        if let Some((top, worst)) = trace_doc.as_ref().map(|d| (&d.0[k].0, &d.0[k].1)) {
            a.insert("sources".into(), json!(top));
            a.insert("worst_gaps".into(), json!(worst));
        }
        series.push(s);
    }
    let interrupted = stop.load(Ordering::Relaxed);
    let trace_info = trace_doc.as_ref().map(|d| {
        json!({"events": d.1, "lost_pages": d.2, "lost_events": d.3,
               "enabled": d.4, "missing": d.5, "mounted_tracefs": d.6, "clock": "mono"})
    });
    if let Some(d) = &trace_doc {
        if d.2 > 0 {
            warnings.push(format!(
                "the trace lost events on {} buffer pages (raise --trace-buffer): attribution is partial",
                d.2
            ));
        }
    }
    if totals.iter().any(|t| t.dropped > 0) {
        warnings.push(
            "some gaps did not fit in the ring to the aggregator (counted, not recorded)".into(),
        );
    }
    let plan_doc = Documented {
        plan,
        counter_hz: scale.hz,
        calibration: cal,
        threads: &thread_states,
        trace_session: trace_info,
    };
    let end = if interrupted {
        EndReason::Interrupted
    } else {
        EndReason::Duration
    };
    Ok(run.finish("noise", &plan_doc, series, end, warnings))
}

/// Kernel symbol names for the addresses hrtimer events carry (`/proc/kallsyms`, root only).
fn kallsyms_resolver(wanted: &std::collections::HashSet<u64>) -> HashMap<u64, String> {
    let mut m = HashMap::new();
    if wanted.is_empty() {
        return m;
    }
    if let Ok(text) = std::fs::read_to_string("/proc/kallsyms") {
        for l in text.lines() {
            // The address first: the rest of the line only for one wanted.
            let Some((a, rest)) = l.split_once(' ') else {
                continue;
            };
            match u64::from_str_radix(a, 16) {
                Ok(a) if a != 0 && wanted.contains(&a) && !m.contains_key(&a) => {
                    let mut it = rest.split_whitespace();
                    if let (Some("t" | "T"), Some(n)) = (it.next(), it.next()) {
                        m.insert(a, n.to_string());
                    }
                }
                _ => {}
            }
            if m.len() == wanted.len() {
                break;
            }
        }
    }
    m
}

/// The plan as the document records it.
#[derive(Serialize)]
struct Documented<'a> {
    #[serde(flatten)]
    plan: &'a NoisePlan,
    counter_hz: f64,
    calibration: Option<rtscope_core::clock::Calibration>,
    threads: &'a [rtscope_core::rt::ThreadState],
    /// The trace instance's outcome (`--trace`).
    trace_session: Option<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::trace::attrib::Owner;
    use rtscope_core::trace::Kind;

    fn cpu() -> PerCpu {
        let mut p = PerCpu::new(0, 0, 4, Vec::new());
        p.attrib = Some(Attributor::new(7, 0, 4));
        p
    }

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    /// A SCHED_FIFO loop's CPU on this VM: sched_rt_runtime_us=950000 of 1 s.
    fn throttled_cpu() -> PerCpu {
        PerCpu::new(1, 0, 4, vec![Budget::rt(1_000_000, 950_000).unwrap()])
    }

    #[test]
    fn throttling_leaves_the_noise_figures() {
        let mut p = throttled_cpu();
        p.gap(500 * MS, 1_500, false);
        for k in 1..=3 {
            p.gap(k * S - 48_700_000, 48_700_000, false);
        }
        p.gap(2_500 * MS, 2 * MS, false);
        // Held until the end: the short gap is recorded, the long ones wait.
        assert_eq!(p.rec.count(), 1);
        assert_eq!(p.held.len(), 4);
        let r = p.settle(4 * S).unwrap();
        assert_eq!((r.episodes, r.gaps, r.noise_ns), (3, 3, 3 * 48_700_000));
        assert!(p.held.is_empty());
        assert_eq!((p.gaps, p.noise_ns), (2, 1_500 + 2 * MS));
        // With 5 gaps that did not fit in the ring: 7 gaps of noise.
        assert_eq!(p.noise_gaps(5), 7);
        let s = p.rec.to_series("cpu 1", 0);
        assert_eq!(s.stats.count, 2);
        assert_eq!(s.stats.max_ns, 2 * MS as i64);
        // The 2 ms gap keeps its place in the sequence (the fifth gap).
        assert_eq!(s.spikes[0].seq, 4);
        assert_eq!(s.spikes[0].t_ns, 2_500 * MS);
        // oslat's buckets hold every gap, throttling included (as oslat's
        // do), and every other iteration of the loop in bucket 0.
        let b = p.oslat_buckets(1000);
        assert_eq!((b[0], b[1], b[31]), (995, 1, 4));
        assert_eq!(b.iter().sum::<u64>(), 1000);
    }

    #[test]
    fn only_a_real_time_loop_has_limits() {
        use rtscope_core::rt::Policy;
        let sys = rtscope_core::system::SystemSnapshot {
            kernel_release: "6.18.44-fc-v657".into(),
            sched_rt_runtime_us: Some(950_000),
            sched_rt_period_us: Some(1_000_000),
            ..Default::default()
        };
        let d = tempfile::tempdir().unwrap();
        let rt = Budget::rt(1_000_000, 950_000).unwrap();
        let assumed = Budget::fair_server(S, 50 * MS, true).unwrap();
        for policy in [Policy::Fifo, Policy::Rr] {
            assert_eq!(budgets_for(policy, &sys, d.path(), 1), vec![rt, assumed]);
        }
        for policy in [Policy::Other, Policy::Batch, Policy::Idle] {
            assert!(budgets_for(policy, &sys, d.path(), 1).is_empty());
        }
        // The fair server as debugfs gives it, for that CPU.
        let dir = d.path().join("sched/fair_server/cpu1");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("period"), "500000000\n").unwrap();
        std::fs::write(dir.join("runtime"), "20000000\n").unwrap();
        let read = Budget::fair_server(500 * MS, 20 * MS, false).unwrap();
        assert_eq!(budgets_for(Policy::Fifo, &sys, d.path(), 1), vec![rt, read]);
        assert_eq!(
            budgets_for(Policy::Fifo, &sys, d.path(), 0),
            vec![rt, assumed]
        );
    }

    #[test]
    fn a_loop_without_a_limit_holds_nothing() {
        let mut p = cpu();
        p.gap(S - 48_700_000, 48_700_000, false);
        p.gap(2 * S - 48_700_000, 48_700_000, false);
        assert!(p.held.is_empty());
        assert_eq!(p.rec.count(), 2);
        assert_eq!(p.settle(3 * S), None);
        assert_eq!(p.gaps, 2);
        // With a limit, a gap just below its shortest piece (1 ms) is not held.
        let mut p = throttled_cpu();
        p.gap(0, MS - 1, false);
        p.gap(10 * MS, MS, false);
        assert_eq!(p.held, vec![(10 * MS, MS, 1)]);
        // Nothing found: an empty report, and the held gap recorded.
        let r = p.settle(S).unwrap();
        assert_eq!(r.gaps, 0);
        assert_eq!(r.budgets.len(), 1);
        assert_eq!((p.gaps, p.rec.count()), (2, 2));
    }

    #[test]
    fn held_gaps_are_bounded() {
        let mut p = throttled_cpu();
        p.held = vec![(0, MS, 0); MAX_HELD - 1];
        p.gap(S, 2 * MS, false);
        assert_eq!(p.held.len(), MAX_HELD);
        assert_eq!(p.rec.count(), 0);
        // Full: recorded at once.
        p.gap(2 * S, 2 * MS, false);
        assert_eq!(p.held.len(), MAX_HELD);
        assert_eq!(p.rec.count(), 1);
    }

    fn ev(ts: u64, kind: Kind) -> Event {
        Event {
            ts,
            cpu: 0,
            pid: 7,
            kind,
        }
    }

    /// An IRQ inside the first gap, a gap with no event, events arriving out
    /// of order and in two batches: the streamed attribution, fed in steps,
    /// gives what one pass over everything gives.
    #[test]
    fn streamed_attribution_matches_one_pass() {
        let feed = |steps: &[u64]| {
            let mut p = cpu();
            p.gap(1_000, 500, true);
            p.gap(5_000, 300, true);
            p.pend_evs.push(ev(1_300, Kind::IrqExit { irq: 11 }));
            p.pend_evs.push(ev(1_100, Kind::IrqEntry { irq: 11 }));
            for &until in steps {
                p.attribute(until);
            }
            p.pend_evs.push(ev(9_000, Kind::IrqEntry { irq: 4 }));
            p.pend_evs.push(ev(9_050, Kind::IrqExit { irq: 4 }));
            p.attribute(u64::MAX);
            let a = p.attrib.as_mut().unwrap();
            a.finish(10_000);
            assert!(p.pend_evs.is_empty() && p.pend_gaps.is_empty());
            p.attrib.unwrap().worst()
        };
        let one = feed(&[]);
        assert_eq!(one.len(), 2);
        // The first gap: 200 ns of IRQ 11, the rest the thread's own time.
        let g = one.iter().find(|w| w.start_ns == 1_000).unwrap();
        assert_eq!(g.events, 2);
        assert!(g.parts.contains(&(Owner::Irq(11), 200)), "{:?}", g.parts);
        // The second gap has no kernel event: hardware.
        let g = one.iter().find(|w| w.start_ns == 5_000).unwrap();
        assert_eq!(g.parts, vec![(Owner::Hardware, 300)]);
        for steps in [
            &[1_050u64][..],
            &[1_200, 4_000],
            &[1_100, 1_300, 5_000, 8_000],
        ] {
            let w = feed(steps);
            assert_eq!(
                format!("{w:?}"),
                format!("{one:?}"),
                "fed in steps {steps:?}"
            );
        }
    }

    #[test]
    fn the_header_says_what_is_measured() {
        let mut p = plan(&NoiseOptions {
            cpus: Some(vec![0]),
            duration_ns: 2_000_000_000,
            source: Some("monotonic".into()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            noise_header(&p),
            "rtscope noise: CPUs 0, 2s, gaps >= 1us, SCHED_FIFO 95, monotonic loop"
        );
        p.trace = true;
        assert!(noise_header(&p).ends_with("monotonic loop, attributed with kernel trace events"));
    }

    #[test]
    fn gaps_go_to_the_recorder_and_oslat_counts_as_they_come() {
        let mut p = cpu();
        p.gap(0, 1_500, false);
        p.gap(10, 40_000, false);
        assert_eq!((p.gaps, p.noise_ns), (2, 41_500));
        assert_eq!(p.oslat[1], 1);
        assert_eq!(p.oslat[31], 1);
        // Without --trace nothing waits for attribution.
        assert!(p.pend_gaps.is_empty());
        assert_eq!(p.rec.to_series("cpu 0", 0).stats.count, 2);
    }
}
