//! `rtscope hwlat`: hardware latency, the first step of a real-time
//! qualification: the stalls no kernel setting removes (SMIs, firmware,
//! power management, a hypervisor taking the CPU away).
//!
//! Two methods, one document:
//!
//! - **tracer** (where the kernel has `CONFIG_HWLAT_TRACER`): the kernel's
//!   hwlat tracer, taken as the top-level tracer and given back as it was
//!   ([`rtscope_core::hwlat::tracer`]). Its thread spins with interrupts off
//!   for `--width` of every `--window` on one CPU at a time (`--mode
//!   round-robin`) or on each (`per-cpu`); a sample per window whose largest
//!   gap is above `--threshold`, with the NMIs that came in it. The main
//!   thread reads the per-CPU pipes every 100 ms.
//! - **user space** (without the tracer): `noise`'s engine on the same CPUs
//!   (a SCHED_FIFO busy loop per CPU, gaps attributed with kernel trace
//!   events, [`super::noise::execute_with`]), keeping of each gap the time
//!   no kernel event explains. Interrupts are on, so each figure is an upper
//!   bound on what the machine did.
//!
//! `MSR_SMI_COUNT` is read on each measured CPU before and after the run
//! where the CPU has it ([`rtscope_core::hwlat::smi`]).

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;
use serde_json::json;

use rtscope_core::hwlat::smi;
use rtscope_core::hwlat::tracer::{HwlatError, Restored, Settings, Tracefs, Tracer};
use rtscope_core::record::SeriesRecorder;
use rtscope_core::result::{EndReason, Series};
use rtscope_core::sample::Sample;
use rtscope_core::trace::attrib::Attributed;
use rtscope_core::units::{format_cpu_list, format_ns, online_cpus};

use super::noise::{Engine, NoiseOptions, Observer};
use super::run::{self, Finished, Outputs, RunRequest};
use crate::error::usage;

/// How to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// The hwlat tracer where the kernel has it, else user space.
    Auto,
    /// The kernel's hwlat tracer (CONFIG_HWLAT_TRACER): interrupts off, the machine's stalls only.
    Tracer,
    /// A SCHED_FIFO busy loop per CPU with kernel trace events, keeping the time no event
    /// explains: interrupts on, so an upper bound.
    UserSpace,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Auto => "auto",
            Method::Tracer => "tracer",
            Method::UserSpace => "user-space",
        }
    }
}

/// `hwlat_detector/mode`: which CPUs the tracer's thread samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// One CPU at a time, the next at every window.
    RoundRobin,
    /// Every CPU at once, a thread each.
    PerCpu,
}

impl Mode {
    /// The kernel's name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::RoundRobin => "round-robin",
            Mode::PerCpu => "per-cpu",
        }
    }
}

/// What the user asks for (`cli.rs` fills it in; a program can build one).
#[derive(Debug, Clone)]
pub struct HwlatOptions {
    /// CPUs to measure (None: every online CPU).
    pub cpus: Option<Vec<usize>>,
    pub duration_ns: u64,
    pub window_ns: u64,
    pub width_ns: u64,
    pub threshold_ns: u64,
    /// None: the kernel's mode as it is.
    pub mode: Option<Mode>,
    pub method: Method,
    /// User space: the counter the loop reads (None: noise's default).
    pub source: Option<String>,
    pub calibration_window_ns: u64,
    pub trace_buffer_kb: u32,
    pub spikes: usize,
    /// The real-time choice, the loads and the outputs (`run.rs`).
    pub run: RunRequest,
    /// The options given on the command line that only one method uses
    /// (`--window`, `--source`, ...): refused with the other method asked
    /// for by name.
    pub given: Vec<&'static str>,
}

impl Default for HwlatOptions {
    /// The kernel's defaults (a 1 s window sampled for 500 ms, 10 µs), for 10 s.
    fn default() -> Self {
        HwlatOptions {
            cpus: None,
            duration_ns: 10_000_000_000,
            window_ns: 1_000_000_000,
            width_ns: 500_000_000,
            threshold_ns: 10_000,
            mode: None,
            method: Method::Auto,
            source: None,
            calibration_window_ns: 200_000_000,
            trace_buffer_kb: 4096,
            spikes: 16,
            run: RunRequest::default(),
            given: Vec::new(),
        }
    }
}

/// Options only the tracer uses, and only user space.
const TRACER_ONLY: [&str; 3] = ["--window", "--width", "--mode"];
const USER_ONLY: [&str; 3] = ["--source", "--calibrate", "--trace-buffer"];

/// Every setting of a run (goes into the result document).
#[derive(Debug, Clone, Serialize)]
pub struct HwlatPlan {
    /// As asked (`auto`, `tracer`, `user-space`); the document's
    /// `method_used` says which ran.
    pub method: Method,
    pub cpus: Vec<usize>,
    pub duration_ns: u64,
    /// Whole µs, as the kernel takes them.
    pub window_ns: u64,
    pub width_ns: u64,
    pub threshold_ns: u64,
    pub mode: Option<Mode>,
    pub source: Option<String>,
    pub calibration_window_ns: u64,
    pub trace_buffer_kb: u32,
    pub spikes: usize,
    /// The real-time choice, the loads and the outputs (`run.rs`).
    #[serde(flatten)]
    pub run: RunRequest,
    /// The method-only options given (`--width`, `--calibrate`, ...): a
    /// run whose method does not use one says so before it measures.
    #[serde(skip)]
    pub given: Vec<&'static str>,
}

/// Samples kept per CPU in the document (one a window at most: 2.7 hours
/// of 1 s windows); beyond them only the series' statistics count.
pub const KEEP_SAMPLES: usize = 10_000;

/// Turns options into a validated plan.
pub fn plan(a: &HwlatOptions) -> Result<HwlatPlan> {
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
        None => online.clone(),
    };
    if cpus.is_empty() {
        return Err(usage("--cpus: no CPU to measure on"));
    }
    let us = |ns: u64| ns / 1000 * 1000;
    let (window_ns, width_ns, threshold_ns) = (us(a.window_ns), us(a.width_ns), us(a.threshold_ns));
    for (flag, v) in [
        ("--window", window_ns),
        ("--width", width_ns),
        ("--threshold", threshold_ns),
    ] {
        if v == 0 {
            return Err(usage(format!(
                "{flag} must be at least 1us (the tracer counts whole microseconds)"
            )));
        }
    }
    if width_ns >= window_ns {
        return Err(usage(format!(
            "--width {} is not below --window {}: the CPU sampled runs with interrupts off for --width of every --window, and the rest of the window is the system's",
            format_ns(width_ns),
            format_ns(window_ns)
        )));
    }
    let refused: &[&str] = match a.method {
        Method::Tracer => &USER_ONLY,
        Method::UserSpace => &TRACER_ONLY,
        Method::Auto => &[],
    };
    if let Some(f) = a.given.iter().find(|g| refused.contains(g)) {
        return Err(usage(format!(
            "{f} is not used by --method {}",
            a.method.name()
        )));
    }
    if let Some(s) = &a.source {
        let id = rtscope_core::clock::SourceId::from_name(s)
            .ok_or_else(|| usage(format!("--source {s}: no such source")))?;
        if !id.monotonic() {
            return Err(usage(format!(
                "--source {s}: the loop needs a monotonic source"
            )));
        }
    }
    a.run.check(&[])?;
    crate::gate::check_series(
        &a.run.outputs.gates.gates,
        |n| cpus.iter().any(|&c| label(c) == n),
        &cpus
            .iter()
            .map(|&c| label(c))
            .collect::<Vec<_>>()
            .join(", "),
    )?;
    if a.run.outputs.repeat > 1 {
        for (flag, set) in [
            ("--stream", a.run.outputs.live.stream.is_some()),
            ("--listen", a.run.outputs.live.listen.is_some()),
            ("--live", a.run.outputs.live.tui),
        ] {
            if set {
                return Err(usage(format!("--repeat cannot be combined with {flag}")));
            }
        }
    }
    Ok(HwlatPlan {
        method: a.method,
        cpus,
        duration_ns: a.duration_ns,
        window_ns,
        width_ns,
        threshold_ns,
        mode: a.mode,
        source: a.source.clone(),
        calibration_window_ns: a.calibration_window_ns,
        trace_buffer_kb: a.trace_buffer_kb,
        spikes: a.spikes,
        run: a.run.clone(),
        given: a.given.clone(),
    })
}

/// The warning of a run whose method does not use some of the options
/// given (`--method auto` chose the other one): none when all are used.
fn unused_options(given: &[&'static str], tracer: bool) -> Option<String> {
    let only: &[&str] = if tracer { &USER_ONLY } else { &TRACER_ONLY };
    let unused: Vec<&str> = given.iter().copied().filter(|g| only.contains(g)).collect();
    if unused.is_empty() {
        return None;
    }
    let (what, whose) = if tracer {
        ("uses the kernel's hwlat tracer", "the user-space method")
    } else {
        ("measures from user space", "the kernel's hwlat tracer")
    };
    Some(format!(
        "{}: not used, as this run {what} ({} {whose} only)",
        unused.join(", "),
        if unused.len() == 1 {
            "it is a setting of"
        } else {
            "they are settings of"
        },
    ))
}

/// Prints the warnings known before measuring (unless quiet) and marks
/// them shown, so that the summary does not repeat them.
fn warn_at_start(run: &mut run::Run, quiet: bool, warnings: &[String]) {
    for w in warnings {
        if !quiet {
            eprintln!("warning: {}", crate::output::printable(w));
            run.shown.push(w.clone());
        }
    }
}

/// What the tracer's settings are in the kernel's terms.
fn settings(plan: &HwlatPlan) -> Settings {
    Settings {
        window_us: plan.window_ns / 1000,
        width_us: plan.width_ns / 1000,
        threshold_us: plan.threshold_ns / 1000,
        cpus: plan.cpus.clone(),
        mode: plan.mode.map(|m| m.name().to_string()),
    }
}

/// Which method runs, from the method asked for and what the tracer's
/// check found: the tracer, user space (with the reason), or a refusal.
#[derive(Debug, PartialEq)]
enum Decision {
    Tracer,
    UserSpace(String),
}

fn decide(asked: Method, found: Result<(), HwlatError>) -> Result<Decision> {
    match (asked, found) {
        (Method::Auto | Method::UserSpace, Err(e @ HwlatError::NoTracefs(_))) => {
            Err(usage(format!(
                "{e}: rtscope hwlat needs the hwlat tracer or, without it, kernel trace events"
            )))
        }
        (Method::UserSpace, _) => Ok(Decision::UserSpace("--method user-space".into())),
        (_, Ok(())) => Ok(Decision::Tracer),
        (Method::Auto, Err(e @ HwlatError::NoTracer(_))) => Ok(Decision::UserSpace(e.to_string())),
        (Method::Tracer, Err(e)) => Err(usage(format!("--method tracer: {e}"))),
        (_, Err(e)) => Err(usage(e.to_string())),
    }
}

/// Runs the experiment from the command line.
pub fn run(a: &HwlatOptions) -> Result<i32> {
    let plan = plan(a)?;
    let mut f = super::repeat::finished(&plan.run.outputs, || execute(&plan))?;
    // Pooled runs: each CPU's counts are those of every run, not the first's.
    f.doc
        .series
        .iter_mut()
        .for_each(rtscope_core::hwlat::pool::pool_attributes);
    let mut summary = crate::output::hwlat::summary(&f.doc);
    summary.push_str(&super::repeat::note(&f.doc, plan.run.outputs.repeat));
    Ok(run::deliver(&f.doc, &plan.run.outputs, vec![], &summary))
}

/// Measures with the method the plan and the kernel allow.
pub fn execute(plan: &HwlatPlan) -> Result<Finished> {
    let s = settings(plan);
    let mut tracefs = None;
    let found = if plan.method == Method::UserSpace {
        // The events come from the machine's tracefs (a private instance).
        rtscope_core::trace::find_or_mount_tracefs()
            .map(|_| ())
            .map_err(HwlatError::from)
    } else {
        match Tracefs::open() {
            Ok(fs) => {
                let recovered = fs.recover();
                let r = fs.check(&s).map(|_| ());
                tracefs = Some((fs, recovered));
                r
            }
            Err(e) => Err(e),
        }
    };
    match decide(plan.method, found)? {
        Decision::Tracer => {
            let (fs, recovered) = tracefs.expect("the check ran on it");
            run_tracer(plan, &s, fs, recovered)
        }
        Decision::UserSpace(why) => {
            drop(tracefs);
            // One user-space run at a time, as the tracer allows one.
            let _lock = rtscope_core::hwlat::UserSpaceLock::take().map_err(usage)?;
            run_user_space(plan, why)
        }
    }
}

/// The SMI counts of a run: read before and after, or why not.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
struct SmiCounts {
    /// Per measured CPU: SMIs during the run (None: not counted).
    counts: Vec<Option<u64>>,
    /// Why they were not counted.
    reason: Option<String>,
}

/// Reads the SMI counters of `cpus` (loading the msr module where its
/// device is missing and modprobe is there), or the reason it cannot.
fn smi_read(cpus: &[usize]) -> Result<Vec<u64>, String> {
    smi_read_with(
        std::env::consts::ARCH,
        &std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default(),
        cpus,
        smi::msr_device,
        || {
            let _ = std::process::Command::new("modprobe")
                .arg("msr")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        },
    )
}

/// [`smi_read`] on this `arch` and `cpuinfo`, the devices `dev` names,
/// `load` called when the first CPU's device is missing.
fn smi_read_with(
    arch: &str,
    cpuinfo: &str,
    cpus: &[usize],
    dev: impl Fn(usize) -> PathBuf,
    load: impl FnOnce(),
) -> Result<Vec<u64>, String> {
    if let Some(r) = smi::unsupported(arch, smi::vendor(cpuinfo).as_deref()) {
        return Err(r);
    }
    if !dev(cpus.first().copied().unwrap_or(0)).exists() {
        load();
    }
    smi::read_counts(cpus, dev)
}

impl SmiCounts {
    /// The counts from two readings (or the first reason).
    fn of(before: Result<Vec<u64>, String>, after: Result<Vec<u64>, String>, n: usize) -> Self {
        match (before, after) {
            (Ok(b), Ok(a)) if b.len() == n && a.len() == n => SmiCounts {
                counts: b
                    .iter()
                    .zip(&a)
                    .map(|(b, a)| Some(smi::delta(*b, *a)))
                    .collect(),
                reason: None,
            },
            (Err(r), _) | (_, Err(r)) => SmiCounts {
                counts: vec![None; n],
                reason: Some(r),
            },
            _ => SmiCounts {
                counts: vec![None; n],
                reason: Some("the counters could not be read on every CPU".into()),
            },
        }
    }
}

/// One CPU's samples, as they arrive.
struct PerCpu {
    cpu: usize,
    rec: SeriesRecorder,
    seq: u64,
    /// The first [`KEEP_SAMPLES`] samples for the document.
    kept: Vec<serde_json::Value>,
    inner_max_ns: u64,
    outer_max_ns: u64,
    nmi_count: u64,
    /// Known while every sample with NMIs had their time.
    nmi_total_ns: Option<u64>,
    /// The sum of `count:` while every sample had it.
    above_threshold: Option<u64>,
}

impl PerCpu {
    fn new(cpu: usize, origin: u64, spikes: usize) -> Self {
        PerCpu {
            cpu,
            rec: SeriesRecorder::new(origin, spikes, None),
            seq: 0,
            kept: Vec::new(),
            inner_max_ns: 0,
            outer_max_ns: 0,
            nmi_count: 0,
            nmi_total_ns: Some(0),
            above_threshold: Some(0),
        }
    }

    /// Takes in a tracer sample taken at `t_ns` (CLOCK_MONOTONIC); the
    /// sample as the series records it.
    fn add(&mut self, s: &rtscope_core::hwlat::Sample, t_ns: u64, origin: u64) -> Sample {
        self.inner_max_ns = self.inner_max_ns.max(s.inner_ns);
        self.outer_max_ns = self.outer_max_ns.max(s.outer_ns);
        self.nmi_count += s.nmi_count;
        self.nmi_total_ns = match (self.nmi_total_ns, s.nmi_total_ns) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.above_threshold = match (self.above_threshold, s.count) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        if self.kept.len() < KEEP_SAMPLES {
            self.kept.push(json!({
                "seq": s.seq, "t_ns": t_ns.saturating_sub(origin), "inner_ns": s.inner_ns,
                "outer_ns": s.outer_ns, "count": s.count, "nmi_count": s.nmi_count,
                "nmi_total_ns": s.nmi_total_ns,
            }));
        }
        self.record(t_ns, s.latency_ns())
    }

    fn record(&mut self, t_ns: u64, latency_ns: u64) -> Sample {
        let x = Sample {
            seq: self.seq,
            t_ns,
            latency_ns: latency_ns.min(i64::MAX as u64) as i64,
            overruns: 0,
            cpu: self.cpu as u32,
        };
        self.rec.record(&x);
        self.seq += 1;
        x
    }

    fn snapshot(&self) -> crate::live::SeriesSnapshot {
        crate::live::SeriesSnapshot::from_recorder(&label(self.cpu), &self.rec, 0)
    }
}

fn label(cpu: usize) -> String {
    format!("cpu {cpu}")
}

/// The header line both methods print.
fn header(plan: &HwlatPlan, tracer: bool, why: &str) -> String {
    if tracer {
        format!(
            "rtscope hwlat: the kernel's hwlat tracer on CPUs {} ({}), {}, window {}, width {} (the CPU sampled runs with interrupts off for {} of every {}), threshold {}",
            format_cpu_list(&plan.cpus),
            plan.mode.map_or("its mode as set", |m| m.name()),
            format_ns(plan.duration_ns),
            format_ns(plan.window_ns),
            format_ns(plan.width_ns),
            format_ns(plan.width_ns),
            format_ns(plan.window_ns),
            format_ns(plan.threshold_ns),
        )
    } else {
        format!(
            "rtscope hwlat: from user space ({why}): CPUs {}, {}, SCHED_{} {} busy loops, kernel events explain what they can, the rest >= {} is kept; interrupts are on, so each figure is an upper bound on what the machine did",
            format_cpu_list(&plan.cpus),
            format_ns(plan.duration_ns),
            plan.run.rt.policy.name().to_uppercase(),
            plan.run.rt.priority,
            format_ns(plan.threshold_ns),
        )
    }
}

/// The tracer method.
fn run_tracer(
    plan: &HwlatPlan,
    s: &Settings,
    fs: Tracefs,
    recovered: Option<i32>,
) -> Result<Finished> {
    let labels: Vec<String> = plan.cpus.iter().map(|&c| label(c)).collect();
    let mut run = run::begin_live(
        &plan.run.settings(),
        &header(plan, true, ""),
        Some(run::LiveSetup {
            options: &plan.run.outputs.live,
            experiment: "hwlat",
            series: labels,
            measured_cpus: plan.cpus.clone(),
        }),
    )?;
    let mut live = run.live.take();
    let mut warnings = Vec::new();
    if let Some(pid) = recovered {
        warnings.push(format!(
            "the hwlat tracer was left set by a run that was killed (pid {pid}): its settings were given back first"
        ));
    }
    if plan.mode == Some(Mode::PerCpu) && plan.cpus.len() >= online_cpus().len() {
        warnings.push(format!(
            "per-cpu mode on every online CPU: the whole machine runs with interrupts off for {} of every {}",
            format_ns(plan.width_ns),
            format_ns(plan.window_ns)
        ));
    }
    warnings.extend(unused_options(&plan.given, true));
    // Said before measuring, not only in the summary after it.
    warn_at_start(&mut run, plan.run.outputs.quiet, &warnings);
    let smi_before = smi_read(&plan.cpus);
    // Refusals (someone took the tracer since the check) are usage errors;
    // a file that cannot be read or written is the machine's (exit 1).
    let mut tracer = Tracer::start(fs, s).map_err(|e| match e {
        HwlatError::Setting(..) => anyhow::anyhow!(e),
        e => usage(e.to_string()),
    })?;
    let origin = rtscope_core::sys::clock_ns(libc::CLOCK_MONOTONIC);
    // The samples' `ts` is CLOCK_REALTIME: moved to CLOCK_MONOTONIC by the
    // offset between the two now.
    let real = rtscope_core::sys::clock_ns(libc::CLOCK_REALTIME);
    let offset = real as i128 - origin as i128;
    run.anchor(libc::CLOCK_MONOTONIC, origin);
    if let Some(l) = live.as_mut() {
        l.measuring();
    }
    let mut per: Vec<PerCpu> = plan
        .cpus
        .iter()
        .map(|&c| PerCpu::new(c, origin, plan.spikes))
        .collect();
    let end = origin.saturating_add(plan.duration_ns);
    let take = |tracer: &mut Tracer, per: &mut [PerCpu], live: &mut Option<crate::live::Sinks>| {
        tracer.read(|cpu, x| {
            let Some(k) = plan.cpus.iter().position(|&c| c == cpu) else {
                return;
            };
            let t = (x.ts_ns as i128 - offset).clamp(0, u64::MAX as i128) as u64;
            let sample = per[k].add(x, t, origin);
            if let Some(l) = live.as_mut() {
                l.hub.record(k, &sample);
            }
        });
    };
    loop {
        let now = rtscope_core::sys::clock_ns(libc::CLOCK_MONOTONIC);
        if run.stopped() || now >= end {
            break;
        }
        std::thread::sleep(std::time::Duration::from_nanos(
            (end - now).min(100_000_000),
        ));
        take(&mut tracer, &mut per, &mut live);
        if let Some(l) = live.as_mut() {
            l.hub.tick(|| per.iter().map(PerCpu::snapshot).collect());
        }
    }
    tracer.stop();
    take(&mut tracer, &mut per, &mut live);
    let max_latency_us = tracer.max_latency_us();
    let (lost, mounted, root) = (tracer.lost, tracer.mounted(), tracer.root().to_path_buf());
    let restored = tracer.finish();
    let smi = SmiCounts::of(smi_before, smi_read(&plan.cpus), plan.cpus.len());
    if let Some(l) = live.take() {
        for w in l.finish(|| per.iter().map(PerCpu::snapshot).collect()) {
            eprintln!("warning: {}", crate::output::printable(&w));
        }
    }
    if lost > 0 {
        warnings.push(format!(
            "the trace lost {lost} events (its buffer overflowed): samples are missing"
        ));
    }
    if !restored.as_before() {
        warnings.push(format!(
            "tracefs is not as it was before the run: {}",
            restored
                .error
                .iter()
                .cloned()
                .chain(restored.differences.iter().cloned())
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let series = per
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let mut x = p.rec.to_series(&label(p.cpu), 0);
            let a = &mut x.attributes;
            a.insert("cpu".into(), json!(p.cpu));
            a.insert("method".into(), json!("tracer"));
            a.insert("inner_max_ns".into(), json!(p.inner_max_ns));
            a.insert("outer_max_ns".into(), json!(p.outer_max_ns));
            a.insert("nmi_count".into(), json!(p.nmi_count));
            a.insert("nmi_total_ns".into(), json!(p.nmi_total_ns));
            a.insert("above_threshold".into(), json!(p.above_threshold));
            a.insert("smi_count".into(), json!(smi.counts[k]));
            a.insert("samples".into(), json!(p.kept));
            x
        })
        .collect();
    let end = if run.stopped() {
        EndReason::Interrupted
    } else {
        EndReason::Duration
    };
    let doc_plan = Documented {
        plan,
        method_used: "tracer",
        tracer: Some(TracerSettings {
            window_us: s.window_us,
            width_us: s.width_us,
            threshold_us: s.threshold_us,
            cpumask: rtscope_core::trace::cpumask(&s.cpus),
            // As asked, else the kernel's as the run found it.
            mode: s.mode.clone().or_else(|| {
                restored
                    .before
                    .get("hwlat_detector/mode")
                    .cloned()
                    .flatten()
                    .and_then(|t| rtscope_core::hwlat::tracer::mode_in_force(&t))
            }),
        }),
        session: Session {
            why: None,
            smi: &smi,
            tracer: Some(TracerSession {
                tracefs: root,
                mounted_tracefs: mounted,
                max_latency_us,
                lost_events: lost,
                recovered_from_pid: recovered,
                restored,
            }),
            user_space: None,
        },
    };
    Ok(run.finish("hwlat", &doc_plan, series, end, warnings))
}

/// The plan as the document records it: the settings, and what the run
/// found and did (`session`: not a setting, so `compare` leaves it out of
/// its plan differences).
#[derive(Serialize)]
struct Documented<'a> {
    #[serde(flatten)]
    plan: &'a HwlatPlan,
    /// `tracer` or `user-space`.
    method_used: &'static str,
    /// What the tracer was set to (the tracer method).
    tracer: Option<TracerSettings>,
    session: Session<'a>,
}

/// The tracer's settings as written (the kernel's units).
#[derive(Serialize)]
struct TracerSettings {
    window_us: u64,
    width_us: u64,
    threshold_us: u64,
    cpumask: String,
    mode: Option<String>,
}

/// What a run found and did besides its samples.
#[derive(Serialize)]
struct Session<'a> {
    /// Why user space (the tracer is missing, or it was asked for).
    why: Option<String>,
    smi: &'a SmiCounts,
    tracer: Option<TracerSession>,
    /// The noise engine's plan: counter, calibration, threads, trace session (user space).
    user_space: Option<serde_json::Value>,
}

/// Where the tracer was, and how it was given back.
#[derive(Serialize)]
struct TracerSession {
    tracefs: PathBuf,
    mounted_tracefs: bool,
    /// `tracing_max_latency` at the end: the kernel's own maximum, µs.
    max_latency_us: Option<u64>,
    lost_events: u64,
    recovered_from_pid: Option<i32>,
    restored: Restored,
}

/// The user-space method's observer: keeps each gap's unexplained time.
struct Unexplained {
    threshold_ns: u64,
    spikes: usize,
    per: Vec<PerCpu>,
    cpus: Vec<usize>,
    live: Option<crate::live::Sinks>,
    origin: u64,
    /// Gaps seen, and those kept, per CPU.
    gaps: Vec<(u64, u64)>,
    /// Warnings to print as the run starts, and whether the run is quiet.
    starting: (Vec<String>, bool),
}

impl Unexplained {
    fn new(cpus: &[usize], threshold_ns: u64, spikes: usize) -> Self {
        Unexplained {
            threshold_ns,
            spikes,
            per: Vec::new(),
            cpus: cpus.to_vec(),
            live: None,
            origin: 0,
            gaps: vec![(0, 0); cpus.len()],
            starting: (Vec::new(), false),
        }
    }

    /// The unexplained time of a gap, when it is at or above the threshold.
    fn keep(&self, g: &Attributed) -> Option<u64> {
        let u = g.unexplained_ns();
        (u >= self.threshold_ns).then_some(u)
    }
}

impl Unexplained {
    /// The measurement starts at `origin` (CLOCK_MONOTONIC), with the run's
    /// live sinks.
    fn start(&mut self, origin: u64, live: Option<crate::live::Sinks>) {
        self.origin = origin;
        self.per = self
            .cpus
            .iter()
            .map(|&c| PerCpu::new(c, origin, self.spikes))
            .collect();
        self.live = live;
        if let Some(l) = self.live.as_mut() {
            l.measuring();
        }
    }
}

impl Observer for Unexplained {
    fn started(&mut self, run: &mut run::Run) {
        warn_at_start(run, self.starting.1, &self.starting.0);
        self.start(
            rtscope_core::sys::clock_ns(libc::CLOCK_MONOTONIC),
            run.live.take(),
        );
    }

    fn attributed(&mut self, k: usize, g: &Attributed) {
        if k >= self.per.len() {
            return;
        }
        self.gaps[k].0 += 1;
        let Some(u) = self.keep(g) else {
            return;
        };
        self.gaps[k].1 += 1;
        let x = self.per[k].record(g.start_ns, u);
        if let Some(l) = self.live.as_mut() {
            l.hub.record(k, &x);
        }
    }

    fn tick(&mut self) {
        if let Some(l) = self.live.as_mut() {
            let per = &self.per;
            l.hub.tick(|| per.iter().map(PerCpu::snapshot).collect());
        }
    }
}

/// The noise engine's options for the user-space method: the same CPUs,
/// duration and threshold, always traced; its own files none (the document
/// is hwlat's).
fn noise_options(plan: &HwlatPlan) -> NoiseOptions {
    NoiseOptions {
        cpus: Some(plan.cpus.clone()),
        duration_ns: plan.duration_ns,
        threshold_ns: plan.threshold_ns,
        trace: true,
        trace_buffer_kb: plan.trace_buffer_kb,
        source: plan.source.clone(),
        calibration_window_ns: plan.calibration_window_ns,
        spikes: plan.spikes,
        run: RunRequest {
            outputs: Outputs {
                quiet: plan.run.outputs.quiet,
                ..Default::default()
            },
            ..plan.run.clone()
        },
    }
}

/// The user-space method: noise's engine with kernel trace events.
fn run_user_space(plan: &HwlatPlan, why: String) -> Result<Finished> {
    let np = super::noise::plan(&noise_options(plan))?;
    let mut obs = Unexplained::new(&plan.cpus, plan.threshold_ns, plan.spikes);
    let starting: Vec<String> = unused_options(&plan.given, false).into_iter().collect();
    obs.starting = (starting.clone(), plan.run.outputs.quiet);
    let smi_before = smi_read(&plan.cpus);
    let labels: Vec<String> = plan.cpus.iter().map(|&c| label(c)).collect();
    let mut f = super::noise::execute_with(
        &np,
        Engine {
            header: Some(header(plan, false, &why)),
            live: Some(run::LiveSetup {
                options: &plan.run.outputs.live,
                experiment: "hwlat",
                series: labels,
                measured_cpus: plan.cpus.clone(),
            }),
            observer: Some(&mut obs),
        },
    )?;
    let smi = SmiCounts::of(smi_before, smi_read(&plan.cpus), plan.cpus.len());
    if let Some(l) = obs.live.take() {
        let per = &obs.per;
        for w in l.finish(|| per.iter().map(PerCpu::snapshot).collect()) {
            eprintln!("warning: {}", crate::output::printable(&w));
        }
    }
    let noise_series = std::mem::take(&mut f.doc.series);
    let series: Vec<Series> = obs
        .per
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let mut x = p.rec.to_series(&label(p.cpu), 0);
            let a = &mut x.attributes;
            a.insert("cpu".into(), json!(p.cpu));
            a.insert("method".into(), json!("user-space"));
            a.insert("gaps".into(), json!(obs.gaps[k].0));
            a.insert("gaps_unexplained".into(), json!(obs.gaps[k].1));
            a.insert("smi_count".into(), json!(smi.counts[k]));
            // What the busy loop saw in all (noise's figures of this CPU).
            if let Some(n) = noise_series.iter().find(|s| s.label == label(p.cpu)) {
                let mut m = serde_json::Map::new();
                for key in [
                    "iterations",
                    "duration_ns",
                    "loop_min_ns",
                    "gaps",
                    "noise_ns",
                    "available_pct",
                    "sources",
                    "tid",
                ] {
                    if let Some(v) = n.attributes.get(key) {
                        m.insert(key.into(), v.clone());
                    }
                }
                // None above the threshold: no figure (it read 0, "no stall").
                m.insert(
                    "max_gap_ns".into(),
                    if n.stats.count > 0 {
                        json!(n.stats.max_ns)
                    } else {
                        serde_json::Value::Null
                    },
                );
                a.insert("noise".into(), serde_json::Value::Object(m));
            }
            x
        })
        .collect();
    let user = std::mem::take(&mut f.doc.plan);
    let doc_plan = Documented {
        plan,
        method_used: "user-space",
        tracer: None,
        session: Session {
            why: Some(why),
            smi: &smi,
            tracer: None,
            user_space: Some(user),
        },
    };
    f.doc.experiment = "hwlat".into();
    f.doc.plan = serde_json::to_value(&doc_plan)?;
    f.doc.series = series;
    f.doc.start_clock_ns = obs.origin;
    f.doc.warnings.extend(starting);
    f.doc.warnings.push(
        "measured from user space: interrupts were on, so a gap no kernel event explains may still be kernel work the events do not show (each figure is an upper bound on what the machine did), and a stall that overlapped an interrupt is counted with it".into(),
    );
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> HwlatOptions {
        HwlatOptions {
            cpus: Some(vec![0]),
            ..Default::default()
        }
    }

    #[test]
    fn width_must_be_below_window() {
        let mut o = options();
        o.width_ns = 1_000_000_000;
        let e = plan(&o).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "--width 1s is not below --window 1s: the CPU sampled runs with interrupts off"
            ),
            "{e}"
        );
        o.width_ns = 999_999_000;
        assert_eq!(plan(&o).unwrap().width_ns, 999_999_000);
        // Rounded down to whole µs first: 1 s - 1 ns is 999 999 µs.
        o.width_ns = 999_999_999;
        assert_eq!(plan(&o).unwrap().width_ns, 999_999_000);
        o.width_ns = 2_000_000_000;
        assert!(plan(&o).is_err());
    }

    #[test]
    fn values_below_a_microsecond_and_unknown_cpus_are_refused() {
        for (f, set) in [
            (
                "--threshold",
                &(|o: &mut HwlatOptions| o.threshold_ns = 999) as &dyn Fn(&mut HwlatOptions),
            ),
            ("--width", &|o: &mut HwlatOptions| o.width_ns = 999),
            ("--window", &|o: &mut HwlatOptions| o.window_ns = 500),
        ] {
            let mut o = options();
            set(&mut o);
            let e = plan(&o).unwrap_err().to_string();
            assert!(e.starts_with(&format!("{f} must be at least 1us")), "{e}");
        }
        let mut o = options();
        o.threshold_ns = 1_000;
        assert_eq!(plan(&o).unwrap().threshold_ns, 1_000);
        o.cpus = Some(vec![4096]);
        let e = plan(&o).unwrap_err().to_string();
        assert!(e.starts_with("--cpus: CPU 4096 is not online"), "{e}");
        o.cpus = Some(vec![]);
        assert!(plan(&o).is_err());
        o.cpus = None;
        assert_eq!(plan(&o).unwrap().cpus, online_cpus());
    }

    #[test]
    fn repeat_and_live_views_are_refused_together() {
        let mut o = options();
        o.run.outputs.repeat = 2;
        assert!(plan(&o).is_ok());
        o.run.outputs.live.tui = true;
        assert_eq!(
            plan(&o).unwrap_err().to_string(),
            "--repeat cannot be combined with --live"
        );
        o.run.outputs.repeat = 1;
        assert!(plan(&o).is_ok());
        o.run.outputs.repeat = 2;
        o.run.outputs.live.tui = false;
        o.run.outputs.live.listen = Some("127.0.0.1:0".into());
        assert_eq!(
            plan(&o).unwrap_err().to_string(),
            "--repeat cannot be combined with --listen"
        );
        o.run.outputs.live.listen = None;
        o.run.outputs.live.stream = Some("-".into());
        assert_eq!(
            plan(&o).unwrap_err().to_string(),
            "--repeat cannot be combined with --stream"
        );
    }

    #[test]
    fn options_of_the_other_method_are_refused_by_name() {
        let mut o = options();
        o.method = Method::Tracer;
        o.given = vec!["--width", "--source"];
        assert_eq!(
            plan(&o).unwrap_err().to_string(),
            "--source is not used by --method tracer"
        );
        o.method = Method::UserSpace;
        assert_eq!(
            plan(&o).unwrap_err().to_string(),
            "--width is not used by --method user-space"
        );
        o.method = Method::Auto;
        assert!(plan(&o).is_ok());
        o.source = Some("nosuch".into());
        assert!(plan(&o).is_err());
        // The loop needs a monotonic counter.
        o.source = Some("realtime".into());
        assert_eq!(
            plan(&o).unwrap_err().to_string(),
            "--source realtime: the loop needs a monotonic source"
        );
        o.source = Some("monotonic".into());
        assert_eq!(plan(&o).unwrap().source.as_deref(), Some("monotonic"));
    }

    #[test]
    fn the_method_follows_the_kernel() {
        let no = || HwlatError::NoTracer("blk function nop".into());
        assert_eq!(decide(Method::Auto, Ok(())).unwrap(), Decision::Tracer);
        assert_eq!(decide(Method::Tracer, Ok(())).unwrap(), Decision::Tracer);
        assert_eq!(
            decide(Method::Auto, Err(no())).unwrap(),
            Decision::UserSpace(no().to_string())
        );
        assert_eq!(
            decide(Method::UserSpace, Err(no())).unwrap(),
            Decision::UserSpace("--method user-space".into())
        );
        let e = decide(Method::Tracer, Err(no())).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("--method tracer: this kernel has no hwlat tracer"));
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        // Someone else's tracer is never taken, nor worked around.
        let busy = || HwlatError::Busy("function".into(), String::new());
        let e = decide(Method::Auto, Err(busy())).unwrap_err();
        assert_eq!(e.to_string(), busy().to_string());
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        let e = decide(Method::UserSpace, Err(HwlatError::NoTracefs("x".into()))).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        assert!(
            e.to_string()
                .starts_with("tracefs is not available: x: rtscope hwlat needs"),
            "{e}"
        );
        let e = decide(Method::Auto, Err(HwlatError::NoTracefs("x".into()))).unwrap_err();
        assert!(e
            .to_string()
            .ends_with("needs the hwlat tracer or, without it, kernel trace events"));
    }

    fn sample(
        seq: u64,
        inner: u64,
        outer: u64,
        count: Option<u64>,
        nmi: u64,
        nmi_ns: Option<u64>,
    ) -> rtscope_core::hwlat::Sample {
        rtscope_core::hwlat::Sample {
            seq,
            inner_ns: inner,
            outer_ns: outer,
            ts_ns: 0,
            count,
            nmi_count: nmi,
            nmi_total_ns: nmi_ns,
        }
    }

    #[test]
    fn samples_add_up_per_cpu() {
        let mut p = PerCpu::new(3, 1_000, 4);
        let x = p.add(
            &sample(1, 20_000, 50_000, Some(4), 0, Some(0)),
            5_000,
            1_000,
        );
        assert_eq!((x.latency_ns, x.t_ns, x.seq, x.cpu), (50_000, 5_000, 0, 3));
        let y = p.add(
            &sample(2, 90_000, 10_000, Some(1), 3, Some(7_000)),
            9_000,
            1_000,
        );
        assert_eq!((y.latency_ns, y.seq), (90_000, 1));
        assert_eq!((p.inner_max_ns, p.outer_max_ns), (90_000, 50_000));
        assert_eq!(
            (p.nmi_count, p.nmi_total_ns, p.above_threshold),
            (3, Some(7_000), Some(5))
        );
        assert_eq!(p.kept[1]["t_ns"], 8_000);
        assert_eq!(p.kept[1]["nmi_total_ns"], 7_000);
        // NMIs without their time, a line without count: unknown from then on.
        p.add(&sample(3, 1, 1, None, 2, None), 10_000, 1_000);
        assert_eq!(
            (p.nmi_count, p.nmi_total_ns, p.above_threshold),
            (5, None, None)
        );
        p.add(&sample(4, 1, 1, Some(1), 0, Some(0)), 11_000, 1_000);
        assert_eq!((p.nmi_total_ns, p.above_threshold), (None, None));
        let s = p.rec.to_series("cpu 3", 0);
        assert_eq!(s.stats.count, 4);
        assert_eq!(s.stats.max_ns, 90_000);
        assert_eq!(p.snapshot().label, "cpu 3");
    }

    #[test]
    fn only_the_first_samples_are_kept_in_the_document() {
        let mut p = PerCpu::new(0, 0, 1);
        for i in 0..KEEP_SAMPLES as u64 + 5 {
            p.add(&sample(i, 1_000, 0, None, 0, Some(0)), i, 0);
        }
        assert_eq!(p.kept.len(), KEEP_SAMPLES);
        assert_eq!(p.rec.count(), KEEP_SAMPLES as u64 + 5);
    }

    #[test]
    fn the_smi_counters_are_read_where_the_cpu_has_them() {
        let d = tempfile::tempdir().unwrap();
        let mut msr = vec![0u8; 0x40];
        msr[0x34] = 9;
        std::fs::write(d.path().join("msr1"), &msr).unwrap();
        let dev = |c: usize| d.path().join(format!("msr{c}"));
        let intel = "vendor_id\t: GenuineIntel\n";
        let loads = std::cell::Cell::new(0);
        let load = || loads.set(loads.get() + 1);
        assert_eq!(smi_read_with("x86_64", intel, &[1], dev, load), Ok(vec![9]));
        assert_eq!(loads.get(), 0, "the device was there: nothing loaded");
        let e = smi_read_with("x86_64", intel, &[0, 1], dev, load).unwrap_err();
        assert_eq!(
            loads.get(),
            1,
            "the first CPU's device was missing: the module loaded"
        );
        assert!(e.contains("modprobe msr"), "{e}");
        let e = smi_read_with("x86_64", "vendor_id\t: AuthenticAMD\n", &[1], dev, load);
        assert!(e.unwrap_err().starts_with("AuthenticAMD CPU"));
        assert_eq!(loads.get(), 1, "an AMD CPU: nothing tried");
        // This machine, as the run reads it: the same answer.
        let here = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let expected = smi_read_with(std::env::consts::ARCH, &here, &[0], smi::msr_device, || {});
        match (smi_read(&[0]), expected) {
            (Err(a), Err(b)) => assert_eq!(a, b),
            (Ok(a), Ok(b)) => assert_eq!(a.len(), b.len()),
            (a, b) => panic!("{a:?} vs {b:?}"),
        }
    }

    #[test]
    fn settings_in_the_kernels_units_and_the_headers() {
        let mut o = options();
        o.window_ns = 2_000_000_000;
        o.width_ns = 1_500_000_000;
        o.threshold_ns = 25_000;
        o.mode = Some(Mode::PerCpu);
        let p = plan(&o).unwrap();
        assert_eq!(
            settings(&p),
            Settings {
                window_us: 2_000_000,
                width_us: 1_500_000,
                threshold_us: 25,
                cpus: vec![0],
                mode: Some("per-cpu".into()),
            }
        );
        assert_eq!(Mode::RoundRobin.name(), "round-robin");
        assert_eq!(
            header(&p, true, ""),
            "rtscope hwlat: the kernel's hwlat tracer on CPUs 0 (per-cpu), 10s, window 2s, width 1.5s (the CPU sampled runs with interrupts off for 1.5s of every 2s), threshold 25us"
        );
        let mut q = p.clone();
        q.mode = None;
        assert!(header(&q, true, "").contains("CPUs 0 (its mode as set), 10s"));
        assert_eq!(
            header(&p, false, "no tracer"),
            "rtscope hwlat: from user space (no tracer): CPUs 0, 10s, SCHED_FIFO 95 busy loops, kernel events explain what they can, the rest >= 25us is kept; interrupts are on, so each figure is an upper bound on what the machine did"
        );
    }

    #[test]
    fn smi_counts_or_why_not() {
        let ok = SmiCounts::of(Ok(vec![5, 0xffff_fffe]), Ok(vec![7, 1]), 2);
        assert_eq!(ok.counts, [Some(2), Some(3)]);
        assert_eq!(ok.reason, None);
        let no = SmiCounts::of(Err("AMD".into()), Err("AMD".into()), 2);
        assert_eq!(
            (no.counts, no.reason.as_deref()),
            (vec![None, None], Some("AMD"))
        );
        let late = SmiCounts::of(Ok(vec![1]), Err("gone".into()), 1);
        assert_eq!(
            (late.counts, late.reason.as_deref()),
            (vec![None], Some("gone"))
        );
        let short = SmiCounts::of(Ok(vec![1]), Ok(vec![1]), 2);
        assert_eq!(short.counts, [None, None]);
        assert!(short.reason.unwrap().contains("every CPU"));
        for (b, a) in [(vec![1, 2], vec![3]), (vec![1], vec![2, 3])] {
            let one_short = SmiCounts::of(Ok(b), Ok(a), 2);
            assert_eq!(one_short.counts, [None, None]);
        }
    }

    /// The observer's start makes a recorder per CPU from the origin, and
    /// its tick publishes to the live sinks (a stream to a file here).
    #[test]
    fn the_observer_starts_and_publishes() {
        use rtscope_core::trace::attrib::Owner;
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("live.jsonl");
        let opts = crate::live::LiveOptions {
            stream: Some(file.clone()),
            stream_every_ns: 1,
            ..Default::default()
        };
        let sinks = crate::live::Sinks::start(
            &opts,
            vec!["cpu 1".into()],
            crate::live::RunInfo::new(
                "hwlat",
                &rtscope_core::system::SystemSnapshot::default(),
                "test",
            ),
            vec![],
            std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
            true,
            &[],
        )
        .unwrap();
        let mut u = Unexplained::new(&[1], 10_000, 4);
        u.start(5_000, Some(sinks));
        assert_eq!((u.origin, u.per.len(), u.per[0].cpu), (5_000, 1, 1));
        u.attributed(
            0,
            &Attributed {
                start_ns: 9_000,
                len_ns: 30_000,
                parts: vec![(Owner::Hardware, 30_000)],
                events: 0,
            },
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
        u.tick();
        // The snapshot reaches the file before the run ends.
        let counted = |t: &str| {
            t.lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .any(|v| {
                    v["type"] == "snapshot"
                        && v["series"][0]["label"] == "cpu 1"
                        && v["series"][0]["count"] == 1
                })
        };
        let t0 = std::time::Instant::now();
        let text = loop {
            let t = std::fs::read_to_string(&file).unwrap_or_default();
            if counted(&t) || t0.elapsed() > std::time::Duration::from_secs(5) {
                break t;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert!(counted(&text), "{text}");
        // Its timeline counts from the origin.
        let s = u.per[0].rec.to_series("cpu 1", 0);
        assert_eq!(s.spikes[0].t_ns, 9_000);
        assert!(u.live.take().unwrap().finish(Vec::new).is_empty());
    }

    #[test]
    fn the_noise_engine_is_asked_for_the_same_run_traced() {
        let mut o = options();
        o.run.outputs.quiet = true;
        o.run.outputs.json = Some("h.json".into());
        o.threshold_ns = 20_000;
        o.source = Some("monotonic".into());
        let p = plan(&o).unwrap();
        let n = noise_options(&p);
        assert_eq!(n.cpus, Some(vec![0]));
        assert_eq!((n.duration_ns, n.threshold_ns), (p.duration_ns, 20_000));
        assert!(n.trace);
        assert_eq!(n.source.as_deref(), Some("monotonic"));
        assert_eq!(
            (n.trace_buffer_kb, n.spikes, n.calibration_window_ns),
            (4096, 16, 200_000_000)
        );
        // Quiet as asked; the document and report are hwlat's, not noise's.
        assert!(n.run.outputs.quiet);
        assert_eq!((n.run.outputs.json, n.run.outputs.report), (None, None));
        o.run.outputs.quiet = false;
        assert!(!noise_options(&plan(&o).unwrap()).run.outputs.quiet);
    }

    #[test]
    fn user_space_keeps_the_unexplained_time_of_each_gap() {
        use rtscope_core::trace::attrib::Owner;
        let mut u = Unexplained::new(&[1, 3], 10_000, 4);
        u.per = vec![PerCpu::new(1, 0, 4), PerCpu::new(3, 0, 4)];
        let gap = |start, parts: Vec<(Owner, u64)>| Attributed {
            start_ns: start,
            len_ns: parts.iter().map(|p| p.1).sum(),
            parts,
            events: 2,
        };
        // A stall ended by the timer interrupt due in it: kept, without the IRQ.
        let g = gap(100, vec![(Owner::Own, 99_000), (Owner::Vector(236), 1_000)]);
        assert_eq!(u.keep(&g), Some(99_000));
        u.attributed(0, &g);
        // An interrupt with its entry and exit: explained.
        let g = gap(200, vec![(Owner::Irq(4), 30_000), (Owner::Own, 9_999)]);
        assert_eq!(u.keep(&g), None);
        u.attributed(0, &g);
        // Exactly the threshold, and a gap without events: kept.
        u.attributed(1, &gap(300, vec![(Owner::Own, 10_000)]));
        u.attributed(1, &gap(400, vec![(Owner::Hardware, 25_000)]));
        // A CPU index the run does not have: ignored.
        u.attributed(7, &gap(500, vec![(Owner::Hardware, 25_000)]));
        assert_eq!(u.gaps, [(2, 1), (2, 2)]);
        assert_eq!(u.per[0].rec.count(), 1);
        assert_eq!(u.per[0].rec.to_series("x", 0).stats.max_ns, 99_000);
        assert_eq!(u.per[1].rec.to_series("x", 0).stats.min_ns, 10_000);
    }
}
