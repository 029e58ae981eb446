//! The run harness: everything around an experiment's measurement, once.
//!
//! ```text
//! plan ─► begin(settings, header) ─► Run ─► experiment measures (Run::stop ends it)
//!                                     │
//!          Run::document (checkpoints) ┤
//!                                     ▼
//!        Run::finish(plan, series, end) ─► ResultDocument ─► deliver(doc, outputs, summary)
//! ```
//!
//! [`begin`] refuses a real-time run without the right to one (before any
//! calibration or load), wires SIGINT/SIGTERM/SIGHUP to the stop flag, locks
//! memory and holds `/dev/cpu_dma_latency`, starts the background loads and
//! prints the header and the warnings. [`Run::finish`] stops and reaps the
//! loads and builds the [`ResultDocument`] (run environment, warnings, loads).
//! [`deliver`] writes every requested file first, then prints, so a closed
//! terminal never loses a result.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Result;
use serde::Serialize;

use rtscope_core::result::{EndReason, ResultDocument, RunEnvironment, Series};
use rtscope_core::rt::{self, DmaLatencyGuard, Policy, ThreadSetup};
use rtscope_core::sys::{self, ClockId};
use rtscope_core::system::SystemSnapshot;

use crate::error::{usage, EXIT_OK, EXIT_RUN};
use crate::load::{LoadSet, LoadSpec};
use crate::output::files::OutputPaths;
use crate::output::say;

/// The resolved real-time settings of an experiment's measurement threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RtChoice {
    pub policy: Policy,
    pub priority: i32,
    /// `--no-rt`: the result is marked as measured without RT scheduling.
    pub no_rt: bool,
    /// `--default-system`: no system tuning.
    pub default_system: bool,
}

impl Default for RtChoice {
    /// The command line's default: SCHED_FIFO 95, system tuned.
    fn default() -> Self {
        RtChoice {
            policy: Policy::Fifo,
            priority: 95,
            no_rt: false,
            default_system: false,
        }
    }
}

impl RtChoice {
    /// Validates a policy and priority (`--no-rt` forces SCHED_OTHER).
    /// SCHED_DEADLINE is refused: only `cyclic` runs deadline tasks
    /// ([`RtChoice::with_deadline`]).
    pub fn new(policy: Policy, priority: u8, no_rt: bool, default_system: bool) -> Result<Self> {
        if policy == Policy::Deadline && !no_rt {
            return Err(usage(DEADLINE_ONLY_CYCLIC));
        }
        Self::with_deadline(policy, priority, no_rt, default_system)
    }

    /// [`RtChoice::new`], SCHED_DEADLINE allowed (its priority is 0; its
    /// runtime, deadline and period are the experiment's to plan).
    pub fn with_deadline(
        policy: Policy,
        priority: u8,
        no_rt: bool,
        default_system: bool,
    ) -> Result<Self> {
        // (It ran SCHED_OTHER silently.)
        if no_rt && policy == Policy::Deadline {
            return Err(usage(
                "--policy deadline and --no-rt contradict each other: a deadline run needs \
                 SCHED_DEADLINE, --no-rt runs SCHED_OTHER; leave one out",
            ));
        }
        let policy = if no_rt { Policy::Other } else { policy };
        let priority = if policy.is_rt() {
            if !(1..=99).contains(&priority) {
                return Err(usage(format!(
                    "--priority {priority} is not valid for --policy {policy} (use 1-99)"
                )));
            }
            i32::from(priority)
        } else {
            0
        };
        Ok(RtChoice {
            policy,
            priority,
            no_rt,
            default_system,
        })
    }

    /// What a measurement thread on `cpus` asks for.
    pub fn thread_setup(&self, cpus: Vec<usize>, block_signals: Vec<i32>) -> ThreadSetup {
        ThreadSetup {
            policy: self.policy,
            priority: self.priority,
            cpus,
            timer_slack_ns: (!self.default_system).then_some(1),
            prefault_stack: 128 * 1024,
            block_signals,
        }
    }

    /// Refuses a real-time policy this process may not use, with the fix,
    /// before anything is started (a thread tries it and ends).
    pub fn check_allowed(&self) -> Result<()> {
        if self.policy == Policy::Deadline {
            return check_deadline_allowed();
        }
        if !self.policy.is_rt() {
            return Ok(());
        }
        let probe = self.thread_setup(vec![], vec![]);
        let res = std::thread::spawn(move || probe.apply().map(|_| ()))
            .join()
            .unwrap_or(Ok(()));
        match res {
            Err(e @ rt::RtError::Permission(_)) => Err(anyhow::anyhow!(e)),
            _ => Ok(()),
        }
    }
}

/// Refuses SCHED_DEADLINE where the kernel says this process may not use
/// it at all (EPERM: privileges, an affinity narrower than the root domain,
/// no deadline bandwidth), before anything is started: a thread tries a
/// reservation of a negligible share (100 µs every second) and ends.
fn check_deadline_allowed() -> Result<()> {
    let probe = rtscope_core::deadline::DeadlineParams {
        runtime_ns: 100_000,
        deadline_ns: 1_000_000_000,
        period_ns: 1_000_000_000,
    };
    let res = std::thread::spawn(move || probe.apply().map(|_| ()))
        .join()
        .unwrap_or(Ok(()));
    deadline_refusal(res)
}

/// The probe's outcome as [`check_deadline_allowed`] answers it: only EPERM
/// refuses (other errors, such as admission control's, depend on the run's
/// own parameters and are the threads' to report).
fn deadline_refusal(
    probe: std::result::Result<(), rtscope_core::deadline::DeadlineError>,
) -> Result<()> {
    match probe {
        Err(e) if e.errno == Some(libc::EPERM) => Err(anyhow::anyhow!(e.message)),
        _ => Ok(()),
    }
}

/// Why an experiment other than `cyclic` refuses `--policy deadline`.
pub const DEADLINE_ONLY_CYCLIC: &str = "--policy deadline is for rtscope cyclic only (its \
     measurement threads become deadline tasks); this command takes fifo, rr, other, batch or idle";

pub use crate::signals::{StopSignals, STOP_SIGNALS};

/// What the run changed in the system, undone on drop.
pub struct RunEnv {
    /// Raised by a stop signal, or by the experiment itself (duration, break).
    pub stop: Arc<AtomicBool>,
    _dma: Option<DmaLatencyGuard>,
    /// Whether memory is locked.
    pub mlocked: bool,
    /// Whether `/dev/cpu_dma_latency` is held at 0.
    pub dma_latency_held: bool,
    /// What could not be set up (the run goes on; these become warnings).
    pub notes: Vec<String>,
    _signals: StopSignals,
}

impl RunEnv {
    /// Wires the stop signals, and unless `default_system`, locks memory and
    /// holds `/dev/cpu_dma_latency` at 0.
    pub fn setup(default_system: bool) -> Result<Self> {
        let signals = StopSignals::install()?;
        let stop = signals.flag.clone();
        let mut notes = Vec::new();
        let (mut mlocked, mut dma) = (false, None);
        if !default_system {
            match rt::lock_memory() {
                Ok(()) => mlocked = true,
                Err(e) => notes.push(format!("{e}: page faults can add latency")),
            }
            match DmaLatencyGuard::acquire(0) {
                Ok(g) => dma = Some(g),
                Err(e) => notes.push(format!(
                    "/dev/cpu_dma_latency not held ({e}): deep idle states can add latency"
                )),
            }
        }
        Ok(RunEnv {
            stop,
            dma_latency_held: dma.is_some(),
            _dma: dma,
            mlocked,
            notes,
            _signals: signals,
        })
    }
}

impl Drop for RunEnv {
    fn drop(&mut self) {
        if self.mlocked {
            sys::munlockall();
        }
    }
}

/// What every run asks for besides its own measurement: the real-time
/// choice, the background loads and their CPUs, and where the result goes.
/// Every experiment's options and plan flatten one (in the result document
/// its fields stand in `plan` beside the experiment's own).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunRequest {
    /// `--policy`, `--priority`, `--no-rt`, `--default-system`.
    pub rt: RtChoice,
    /// Background loads (`--load`).
    pub loads: Vec<LoadSpec>,
    /// The loads' CPUs (`--load-cpus`; `None`: every online CPU).
    pub load_cpus: Option<Vec<usize>>,
    /// `--json`, `--report` and the rest of [`Outputs`].
    #[serde(flatten)]
    pub outputs: Outputs,
}

impl RunRequest {
    /// The defaults, with only the final summary printed (a run that code
    /// makes for its own use: `check --measure`, a matrix cell).
    pub fn quiet() -> Self {
        RunRequest {
            outputs: Outputs {
                quiet: true,
                ..Outputs::default()
            },
            ..RunRequest::default()
        }
    }

    /// Checks the outputs (with the experiment's own `extra` ones), then the
    /// loads (bad input: a usage error, exit 2).
    pub fn check(&self, extra: &[(&'static str, Option<&Path>)]) -> Result<()> {
        self.outputs.check(extra)?;
        LoadSet::check(&self.loads, self.load_cpus.as_deref())
    }

    /// What [`begin`] takes of it.
    pub fn settings(&self) -> RunSettings<'_> {
        RunSettings {
            rt: self.rt,
            loads: &self.loads,
            load_cpus: self.load_cpus.as_deref(),
            quiet: self.outputs.quiet,
        }
    }
}

/// What [`begin`] needs: the part of a plan every experiment has.
pub struct RunSettings<'a> {
    pub rt: RtChoice,
    pub loads: &'a [LoadSpec],
    pub load_cpus: Option<&'a [usize]>,
    /// No header, warnings or progress on stderr.
    pub quiet: bool,
}

/// What the live sinks of a run need (see [`begin_live`]).
pub struct LiveSetup<'a> {
    pub options: &'a crate::live::LiveOptions,
    pub experiment: &'a str,
    /// The series, in the order the aggregator records them.
    pub series: Vec<String>,
    /// The CPUs the measurement threads are pinned to (empty: not pinned);
    /// the HTTP server keeps off them.
    pub measured_cpus: Vec<usize>,
}

/// A run in progress.
pub struct Run {
    /// The live sinks (`--stream`, `--listen`, `--live`), until the
    /// experiment's aggregator takes them.
    pub live: Option<crate::live::Sinks>,
    pub system: SystemSnapshot,
    pub env: RunEnv,
    loads: crate::load::supervisor::RunningLoads,
    rt: RtChoice,
    started_at: String,
    clock: ClockId,
    start_clock_ns: u64,
    /// Warnings already printed when the run started (the summary skips them).
    pub shown: Vec<String>,
    /// When the measurement ended ([`Run::measurement_ended`]): the
    /// document's duration ends there, not after the post-processing.
    ended_clock_ns: std::cell::Cell<Option<u64>>,
    /// The loads' reports, where [`Run::stop_loads`] stopped them before
    /// [`Run::finish`].
    load_reports: Option<Vec<rtscope_core::result::LoadReport>>,
}

/// Starts a run: checks the right to real-time scheduling, sets up the
/// environment and the loads, prints `header` and the warnings.
pub fn begin(s: &RunSettings, header: &str) -> Result<Run> {
    begin_live(s, header, None)
}

/// [`begin`], with the live sinks `live` asks for started after the
/// environment and before the header and the loads: a used port or a bad
/// stream destination ends the run (exit 2) before anything is measured or
/// loaded.
pub fn begin_live(s: &RunSettings, header: &str, live: Option<LiveSetup>) -> Result<Run> {
    s.rt.check_allowed()?;
    let system = SystemSnapshot::capture();
    let env = RunEnv::setup(s.rt.default_system)?;
    let live = match live.filter(|l| l.options.any()) {
        Some(l) => Some(crate::live::Sinks::start(
            l.options,
            l.series,
            crate::live::RunInfo::new(l.experiment, &system, header),
            s.loads
                .iter()
                .map(|x| crate::live::LoadStatus {
                    load: x.text.clone(),
                    state: "running".into(),
                })
                .collect(),
            env.stop.clone(),
            s.quiet,
            &l.measured_cpus,
        )?),
        None => None,
    };
    if !s.quiet {
        eprintln!("{}", crate::output::printable(header));
    }
    // Background loads: ramped up before measuring, stopped and reaped (also
    // on errors, by their guard) when the run ends.
    let loads = LoadSet::start_for_run(s.loads, s.load_cpus, s.quiet)?;
    let mut shown = Vec::new();
    if !s.quiet {
        shown = system
            .warnings()
            .into_iter()
            .chain(env.notes.iter().cloned())
            .collect();
        for w in &shown {
            eprintln!("warning: {}", crate::output::printable(w));
        }
    }
    let mut run = Run {
        live,
        system,
        env,
        loads,
        rt: s.rt,
        started_at: rtscope_core::result::now_rfc3339(),
        clock: libc::CLOCK_MONOTONIC,
        start_clock_ns: sys::clock_ns(libc::CLOCK_MONOTONIC),
        shown,
        ended_clock_ns: std::cell::Cell::new(None),
        load_reports: None,
    };
    // The live views show the warnings the run starts with (the terminal UI
    // covers the lines printed above).
    let starting = run.warnings(vec![]);
    if let Some(l) = run.live.as_mut() {
        for w in &starting {
            l.hub.warn(w);
        }
    }
    Ok(run)
}

impl Run {
    /// The stop flag: raised by a signal; raise it to end the run.
    pub fn stop(&self) -> &Arc<AtomicBool> {
        &self.env.stop
    }

    /// Whether the run was told to stop.
    pub fn stopped(&self) -> bool {
        self.env.stop.load(Ordering::Relaxed)
    }

    /// Sets the measurement clock and the reading the document's times are
    /// relative to (default: CLOCK_MONOTONIC when the run began).
    pub fn anchor(&mut self, clock: ClockId, start_clock_ns: u64) {
        self.clock = clock;
        self.start_clock_ns = start_clock_ns;
    }

    /// The run environment as the result document records it.
    pub fn environment(&self) -> RunEnvironment {
        RunEnvironment {
            policy: self.rt.policy,
            priority: self.rt.priority,
            no_rt: self.rt.no_rt,
            default_system: self.rt.default_system,
            mlocked: self.env.mlocked,
            cpu_dma_latency_held: self.env.dma_latency_held,
        }
    }

    /// The warnings every experiment's result carries: what weakens
    /// real-time results on this system, what the run could not set up, and
    /// a run without real-time scheduling; then the experiment's own.
    fn warnings(&self, extra: Vec<String>) -> Vec<String> {
        let mut w = self.system.warnings();
        w.extend(self.env.notes.iter().cloned());
        if !self.rt.policy.is_real_time() {
            w.push(format!(
                "measured as SCHED_{} without real-time priority{}",
                self.rt.policy.name().to_uppercase(),
                if self.rt.no_rt { " (--no-rt)" } else { "" }
            ));
        }
        w.extend(extra);
        w
    }

    /// Says that the measurement has ended (the first call counts): the
    /// document's duration is the measuring time, without what comes after
    /// (the trace's last read, the live sinks' end, a stalled reader).
    pub fn measurement_ended(&self) {
        if self.ended_clock_ns.get().is_none() {
            self.ended_clock_ns.set(Some(sys::clock_ns(self.clock)));
        }
    }

    /// Stops and reaps the loads now (the measurement has ended): their
    /// shares end with the measurement, and their shutdown does not add to
    /// what follows a stop (the trace's last read, the files). [`finish`]
    /// attaches their reports.
    ///
    /// [`finish`]: Self::finish
    pub fn stop_loads(&mut self) {
        if self.load_reports.is_none() {
            let origin = self.load_origin(self.start_clock_ns);
            let loads = std::mem::replace(
                &mut self.loads,
                crate::load::supervisor::RunningLoads::none(),
            );
            self.load_reports = Some(loads.stop_at(origin));
        }
    }

    /// CLOCK_MONOTONIC at the run's start `start_clock_ns` (on the
    /// measurement clock): scheduled loads count their on-intervals from it
    /// (where the measurement clock is another one, the start is moved to
    /// CLOCK_MONOTONIC by their current offset).
    fn load_origin(&self, start_clock_ns: u64) -> u64 {
        if self.clock == libc::CLOCK_MONOTONIC {
            start_clock_ns
        } else {
            let offset =
                sys::clock_ns(self.clock) as i128 - sys::clock_ns(libc::CLOCK_MONOTONIC) as i128;
            (start_clock_ns as i128 - offset).max(0) as u64
        }
    }

    /// The result document as of now (also for checkpoints): the loads are
    /// attached by [`finish`](Self::finish).
    pub fn document(
        &self,
        experiment: &str,
        plan: &impl Serialize,
        series: Vec<Series>,
        end_reason: EndReason,
        warnings: Vec<String>,
    ) -> ResultDocument {
        let plan = serde_json::to_value(plan).unwrap_or_default();
        let mut doc = ResultDocument::new(experiment, plan, self.system.clone(), series);
        doc.started_at = self.started_at.clone();
        doc.start_clock_ns = self.start_clock_ns;
        doc.duration_ns = self
            .ended_clock_ns
            .get()
            .unwrap_or_else(|| sys::clock_ns(self.clock))
            .saturating_sub(self.start_clock_ns);
        doc.end_reason = end_reason;
        doc.environment = Some(self.environment());
        doc.warnings = self.warnings(warnings);
        doc
    }

    /// Ends the run: stops and reaps the loads and builds the final document.
    /// Returns it with the warnings the summary need not repeat ([`Finished::shown`]).
    pub fn finish(
        self,
        experiment: &str,
        plan: &impl Serialize,
        series: Vec<Series>,
        end_reason: EndReason,
        warnings: Vec<String>,
    ) -> Finished {
        // From here to the files written, a first stop writes them still.
        crate::signals::results_pending();
        let mut doc = self.document(experiment, plan, series, end_reason, warnings);
        // On-intervals of scheduled loads: relative to the document's start.
        let origin = self.load_origin(doc.start_clock_ns);
        let Run {
            loads,
            mut shown,
            load_reports,
            ..
        } = self;
        let reports = load_reports.unwrap_or_else(|| loads.stop_at(origin));
        crate::load::attach(&mut doc, &reports);
        // Said under the loads table (`deliver`), not again in the summary.
        shown.extend(crate::load::warnings(&doc.loads));
        Finished { doc, shown }
    }
}

pub use crate::overload::Overload;

/// `warning: ...` lines for stderr, one per warning (for the warnings a run
/// prints whatever `-q` asks).
pub fn warning_lines(warnings: &[String]) -> String {
    warnings
        .iter()
        .map(|w| format!("warning: {}\n", crate::output::printable(w)))
        .collect()
}

/// A finished run's document.
pub struct Finished {
    pub doc: ResultDocument,
    /// Warnings the summary need not repeat: printed when the run started,
    /// or said under the loads table ([`deliver`] prints it).
    pub shown: Vec<String>,
}

/// Writes one file to the path it is given.
pub type WriteFn = Box<dyn FnOnce(&Path) -> std::io::Result<()>>;

/// One more file a run writes besides its JSON result and HTML report.
pub struct ExtraFile {
    /// What it is, as the closing lines say (`histogram`, `raw samples`).
    pub what: &'static str,
    pub flag: &'static str,
    pub path: PathBuf,
    /// Writes the file (an error is reported, the other files still written).
    pub write: WriteFn,
}

/// The JSON result and HTML report of a run, as every experiment offers them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outputs {
    pub json: Option<PathBuf>,
    pub report: Option<PathBuf>,
    /// Print only the final summary.
    #[serde(skip)]
    pub quiet: bool,
    /// `--repeat N`: runs to make and pool into the one document (1, or 0:
    /// one run; see [`super::repeat`]). The document records it as
    /// `plan.repeat`.
    #[serde(skip)]
    pub repeat: usize,
    /// `--stream`, `--listen`, `--live` (see [`crate::live`]).
    #[serde(skip)]
    pub live: crate::live::LiveOptions,
    /// `--fail-if`, `--junit` (and cyclic's `--fail-above`): checked by
    /// [`deliver`] on the final document (see [`crate::gate`]).
    #[serde(skip)]
    pub gates: crate::gate::GateOptions,
}

impl Default for Outputs {
    /// No files, the summary printed, one run.
    fn default() -> Self {
        Outputs {
            json: None,
            report: None,
            quiet: false,
            repeat: 1,
            live: Default::default(),
            gates: Default::default(),
        }
    }
}

impl Outputs {
    /// Checks the paths (and the experiment's own `extra` outputs) together.
    pub fn check(&self, extra: &[(&'static str, Option<&Path>)]) -> Result<()> {
        let mut paths = OutputPaths::new();
        paths.add("--json", self.json.as_deref())?;
        for (flag, p) in extra {
            paths.add(flag, *p)?;
        }
        paths.add("--report", self.report.as_deref())?;
        paths.add("--junit", self.gates.junit.as_deref())?;
        crate::gate::check_count(self.gates.gates.len())?;
        if let Some(s) = self.live.stream.as_deref().filter(|s| s.as_os_str() != "-") {
            paths.add("--stream", Some(s))?;
        }
        self.live.check()
    }
}

/// Ends a run for the user: writes the JSON result, the `extra` files and the
/// HTML report (each if asked for; one failing does not stop the others),
/// then prints `summary`, the loads table and where the files went. Files
/// come first, so that a closed terminal cannot lose them. Returns 0, or 1
/// when a file could not be written or a load failed (the reason is on
/// stderr).
pub fn deliver(
    doc: &ResultDocument,
    outputs: &Outputs,
    mut extra: Vec<ExtraFile>,
    summary: &str,
) -> i32 {
    // A run that measured nothing says so (and fails its gates).
    let nothing = crate::gate::measured_nothing(doc);
    // Gates: checked on the final document and recorded in it, the JUnit
    // file written with the others.
    let gated;
    let (doc, gate_report) = if outputs.gates.is_empty() && nothing.is_none() {
        (doc, None)
    } else {
        let mut d = doc.clone();
        d.warnings.extend(nothing.clone());
        let report =
            (!outputs.gates.is_empty()).then(|| crate::gate::evaluate(&outputs.gates.gates, &d));
        d.gates = report.clone();
        gated = d;
        (&gated, report)
    };
    if let (Some(r), Some(p)) = (&gate_report, &outputs.gates.junit) {
        let xml = crate::gate::junit(r, doc);
        extra.push(ExtraFile {
            what: "junit",
            flag: "--junit",
            path: p.clone(),
            write: Box::new(move |p: &Path| rtscope_core::file::write_atomic(p, xml.as_bytes())),
        });
    }
    let mut written = String::new();
    let mut errors = Vec::new();
    let mut file = |what: &str, flag: &str, path: &Path, res: std::io::Result<()>| match res {
        Ok(()) => written.push_str(&format!("{what}: {}\n", path.display())),
        Err(e) => errors.push(format!("{flag} {}: {e}", path.display())),
    };
    if let Some(p) = &outputs.json {
        file("result", "--json", p, doc.write(p));
    }
    for x in extra {
        let res = (x.write)(&x.path);
        file(x.what, x.flag, &x.path, res);
    }
    // Written last so that it shows the final document.
    if let Some(p) = &outputs.report {
        file(
            "report",
            "--report",
            p,
            crate::report::write_html(std::slice::from_ref(doc), p),
        );
    }
    say(summary);
    if let Some(w) = &nothing {
        eprintln!("warning: {w}");
    }
    say(&crate::output::loads::table(&doc.loads));
    say(&written);
    for e in &errors {
        eprintln!("error: {e}");
    }
    let failed_load = doc.loads.iter().any(|l| !l.errors.is_empty());
    let mut gate_failed = false;
    if let Some(r) = &gate_report {
        for line in crate::gate::fail_lines(&outputs.gates.gates, r, doc) {
            eprintln!("{line}");
        }
        gate_failed = !r.passed;
    }
    exit_code(!errors.is_empty() || failed_load, gate_failed)
}

/// [`deliver`]'s exit code: 1 when a file or a load failed, else 3 when a
/// gate failed, else 0.
fn exit_code(failed: bool, gate_failed: bool) -> i32 {
    if failed {
        EXIT_RUN
    } else if gate_failed {
        crate::error::EXIT_THRESHOLD
    } else {
        EXIT_OK
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overload::percent;

    fn series(count: u64, dropped: u64, overruns: u64) -> Series {
        let mut s = Series::default();
        s.stats.count = count;
        s.counters.dropped = dropped;
        s.counters.overruns = overruns;
        s
    }

    /// A request's check refuses bad outputs (one path twice) and bad loads
    /// (a CPU that is not online), and `settings` hands it over whole.
    #[test]
    fn a_request_is_checked_and_handed_to_the_harness() {
        assert!(RunRequest::default().check(&[]).is_ok());
        let same = RunRequest {
            outputs: Outputs {
                json: Some("/tmp/x".into()),
                report: Some("/tmp/x".into()),
                ..Outputs::default()
            },
            ..RunRequest::default()
        };
        assert_eq!(crate::error::exit_code(&same.check(&[]).unwrap_err()), 2);
        let cpus = RunRequest {
            loads: vec![crate::load::parse_spec("cpu:10").unwrap()],
            load_cpus: Some(vec![100_000]),
            ..RunRequest::default()
        };
        assert_eq!(crate::error::exit_code(&cpus.check(&[]).unwrap_err()), 2);
        let r = RunRequest {
            rt: RtChoice::new(Policy::Rr, 3, false, true).unwrap(),
            load_cpus: Some(vec![0]),
            ..RunRequest::quiet()
        };
        let s = r.settings();
        assert_eq!((s.rt, s.load_cpus, s.quiet), (r.rt, Some(&[0][..]), true));
        assert!(!RunRequest::default().settings().quiet);
    }

    /// Gates are checked on the document, recorded in the JSON written,
    /// and the JUnit file written beside it; a failed gate is exit 3.
    #[test]
    fn deliver_checks_records_and_reports_gates() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = series(100, 0, 2);
        s.label = "all".into();
        let doc = ResultDocument::new("cyclic", serde_json::json!({}), Default::default(), vec![s]);
        let (json, junit) = (dir.path().join("r.json"), dir.path().join("j.xml"));
        let mut o = Outputs {
            json: Some(json.clone()),
            quiet: true,
            ..Outputs::default()
        };
        // No gates: nothing recorded, exit 0.
        assert_eq!(deliver(&doc, &o, vec![], ""), EXIT_OK);
        assert_eq!(ResultDocument::read(&json).unwrap().gates, None);
        o.gates = crate::gate::GateOptions {
            gates: crate::gate::parse_gates("overruns>1,count<100").unwrap(),
            junit: Some(junit.clone()),
        };
        assert_eq!(deliver(&doc, &o, vec![], ""), crate::error::EXIT_THRESHOLD);
        let g = ResultDocument::read(&json).unwrap().gates.unwrap();
        assert!(!g.passed);
        assert_eq!(g.checks.len(), 2);
        assert!(g.checks[0].failed && !g.checks[1].failed);
        let x = std::fs::read_to_string(&junit).unwrap();
        assert!(x.contains("tests=\"2\" failures=\"1\""), "{x}");
        // Passing gates: exit 0, recorded as passed.
        o.gates.gates = crate::gate::parse_gates("overruns>2").unwrap();
        assert_eq!(deliver(&doc, &o, vec![], ""), EXIT_OK);
        assert!(ResultDocument::read(&json).unwrap().gates.unwrap().passed);
    }

    #[test]
    fn a_failed_file_outranks_a_failed_gate() {
        assert_eq!(exit_code(false, false), EXIT_OK);
        assert_eq!(exit_code(false, true), crate::error::EXIT_THRESHOLD);
        assert_eq!(exit_code(true, true), EXIT_RUN);
        assert_eq!(exit_code(true, false), EXIT_RUN);
    }

    #[test]
    fn overload_warns_above_one_percent_dropped_or_missed() {
        // Nothing dropped or missed; exactly 1 %: no warning.
        assert_eq!(Overload::of(&series(1000, 0, 0)), Overload::default());
        assert_eq!(Overload::of(&series(99, 1, 0)), Overload::default());
        assert_eq!(Overload::of(&series(99, 0, 1)), Overload::default());
        assert!(Overload::of(&series(0, 0, 0)).warnings().is_empty());
        // Just above 1 %.
        assert!(Overload::of(&series(98, 1, 0)).dropped.is_some());
        assert!(Overload::of(&series(98, 0, 1)).missed.is_some());
        let o = Overload::of(&series(98, 2, 0));
        let d = o.dropped.as_deref().unwrap();
        assert!(
            d.starts_with("2.0% of the samples were dropped (2 of 100"),
            "{d}"
        );
        assert!(o.missed.is_none());
        let o = Overload::of(&series(98, 0, 2));
        let m = o.missed.as_deref().unwrap();
        assert!(
            m.starts_with("2.0% of the periods were missed (2 of 100"),
            "{m}"
        );
        assert!(o.dropped.is_none());
        // A run reported from the field: 99.4 % dropped, and most kept wake-ups late.
        let o = Overload::of(&series(1_200, 198_800, 600_000));
        assert_eq!(o.warnings().len(), 2);
        assert!(o.warnings()[0].starts_with("99.4% of the samples were dropped (198800 of 200000"));
        assert!(o.warnings()[1].starts_with("75.0% of the periods were missed (600000 of 800000"));
        assert!(o.warnings()[1].contains("below what this machine can serve"));
        // No overflow on huge counters.
        let o = Overload::of(&series(u64::MAX / 4, u64::MAX / 4, 0));
        assert!(o.dropped.unwrap().starts_with("50.0%"));
    }

    /// Missed periods from a few long stalls are named as such, with the
    /// longest; from many wake-ups a period or two late, as a period too
    /// short. A series with figures over intended periods says they count them.
    #[test]
    fn missed_periods_say_whether_they_came_from_stalls() {
        let late = |overruns: u64, late: u64, max_ns: i64| {
            let mut s = series(10_774, 0, overruns);
            s.counters.overrun_samples = late;
            s.stats.max_ns = max_ns;
            s
        };
        // The issue's thread 1: 3011 periods in two stalls of up to 3 s.
        let m = Overload::of(&late(3_011, 2, 2_999_776_700)).missed.unwrap();
        assert!(
            m.starts_with("21.8% of the periods were missed (3011 of 13785"),
            "{m}"
        );
        assert!(
            m.contains("2 late wake-ups of up to 3s skipped them"),
            "{m}"
        );
        assert!(!m.contains("below what") && !m.contains("intended"), "{m}");
        let m = Overload::of(&late(3_011, 1, 2_999_776_700)).missed.unwrap();
        assert!(m.contains(" 1 late wake-up of up to"), "{m}");
        // Ten periods per late wake-up is a stall; fewer is not.
        assert!(Overload::of(&late(3_000, 300, 1))
            .missed
            .unwrap()
            .contains("held off"));
        let m = Overload::of(&late(3_000, 301, 1)).missed.unwrap();
        assert!(m.contains("below what this machine can serve"), "{m}");
        assert!(Overload::of(&late(3_000, 0, 1))
            .missed
            .unwrap()
            .contains("below what"));
        let mut s = late(3_011, 2, 2_999_776_700);
        s.corrected = Some(Default::default());
        let m = Overload::of(&s).missed.unwrap();
        assert!(m.ends_with("; the figures over the intended periods count each at its lateness, those over the wake-ups leave them out"), "{m}");
    }

    /// Only `cyclic` takes SCHED_DEADLINE; with `--no-rt` it is a
    /// contradiction everywhere (it ran SCHED_OTHER silently,).
    #[test]
    fn deadline_is_refused_but_where_allowed() {
        let e = RtChoice::new(Policy::Deadline, 95, false, false).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        assert_eq!(e.to_string(), DEADLINE_ONLY_CYCLIC);
        for e in [
            RtChoice::new(Policy::Deadline, 95, true, false).unwrap_err(),
            RtChoice::with_deadline(Policy::Deadline, 0, true, false).unwrap_err(),
        ] {
            assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
            assert!(e.to_string().contains("contradict each other"), "{e}");
        }
        assert_eq!(
            RtChoice::new(Policy::Fifo, 95, true, false).unwrap(),
            RtChoice {
                policy: Policy::Other,
                priority: 0,
                no_rt: true,
                default_system: false,
            }
        );
        let d = RtChoice::with_deadline(Policy::Deadline, 95, false, true).unwrap();
        assert_eq!(
            d,
            RtChoice {
                policy: Policy::Deadline,
                priority: 0,
                no_rt: false,
                default_system: true,
            }
        );
        assert_eq!(
            RtChoice::with_deadline(Policy::Fifo, 80, false, false)
                .unwrap()
                .priority,
            80
        );
        assert!(RtChoice::with_deadline(Policy::Fifo, 0, false, false).is_err());
        // A deadline run is no run without real-time scheduling.
        assert!(d.check_allowed().is_ok());
    }

    #[test]
    fn only_a_deadline_refusal_for_privilege_stops_a_run_early() {
        use rtscope_core::deadline::DeadlineError;
        let err = |errno: Option<i32>| {
            Err(DeadlineError {
                errno,
                message: format!("m {errno:?}"),
            })
        };
        assert!(deadline_refusal(Ok(())).is_ok());
        assert_eq!(
            deadline_refusal(err(Some(libc::EPERM)))
                .unwrap_err()
                .to_string(),
            format!("m {:?}", Some(libc::EPERM))
        );
        assert!(deadline_refusal(err(Some(libc::EBUSY))).is_ok());
        assert!(deadline_refusal(err(None)).is_ok());
    }

    /// A run's warnings: the system's and the set-up's, the one of a run
    /// without real-time scheduling (not a deadline run's), then the
    /// experiment's own, last.
    #[test]
    fn a_run_without_real_time_scheduling_says_so() {
        let settings = |rt: RtChoice| RunSettings {
            rt,
            loads: &[],
            load_cpus: None,
            quiet: true,
        };
        let warnings = |rt: RtChoice| {
            let run = begin(&settings(rt), "").unwrap();
            run.document(
                "cyclic",
                &serde_json::json!({}),
                vec![],
                EndReason::Loops,
                vec!["its own".into()],
            )
            .warnings
        };
        let other = RtChoice::new(Policy::Fifo, 95, true, true).unwrap();
        let w = warnings(other);
        assert_eq!(w.last().map(String::as_str), Some("its own"));
        assert_eq!(
            w[w.len() - 2],
            "measured as SCHED_OTHER without real-time priority (--no-rt)"
        );
        let batch = RtChoice::new(Policy::Batch, 0, false, true).unwrap();
        assert!(warnings(batch)
            .contains(&"measured as SCHED_BATCH without real-time priority".to_string()));
        if sys::geteuid() == 0 {
            for rt in [
                RtChoice::new(Policy::Fifo, 10, false, true).unwrap(),
                RtChoice::with_deadline(Policy::Deadline, 0, false, true).unwrap(),
            ] {
                let w = warnings(rt);
                assert!(
                    !w.iter().any(|w| w.contains("without real-time priority")),
                    "{w:?}"
                );
                assert_eq!(w.last().map(String::as_str), Some("its own"));
            }
        }
    }

    /// The deadline probe inherits the caller's affinity: narrowed to one
    /// CPU of several, root is refused with the reason, before anything runs.
    #[test]
    fn deadline_is_refused_before_anything_runs_where_the_kernel_would() {
        let cpus = rtscope_core::units::online_cpus();
        if cpus.len() < 2 || sys::geteuid() != 0 {
            return;
        }
        let d = RtChoice::with_deadline(Policy::Deadline, 0, false, false).unwrap();
        let r = std::thread::spawn(move || {
            sys::set_affinity(&cpus[..1]).unwrap();
            d.check_allowed()
        })
        .join()
        .unwrap();
        let e = r.unwrap_err().to_string();
        assert!(
            e.starts_with("SCHED_DEADLINE refused: this thread may run only on CPUs"),
            "{e}"
        );
        // Fifo is not asked about deadline's rules.
        let f = RtChoice::default();
        let one = rtscope_core::units::online_cpus()[0];
        let r = std::thread::spawn(move || {
            sys::set_affinity(&[one]).unwrap();
            f.check_allowed()
        })
        .join()
        .unwrap();
        assert!(r.is_ok());
    }

    #[test]
    fn percent_and_warning_lines() {
        assert_eq!(percent(1, 3), "33.3%");
        assert_eq!(percent(0, 0), "0.0%");
        assert_eq!(percent(5, 0), "500.0%");
        assert_eq!(warning_lines(&[]), "");
        assert_eq!(
            warning_lines(&["a".into(), "b\x1b[2J".into()]),
            format!(
                "warning: a\nwarning: {}\n",
                crate::output::printable("b\x1b[2J")
            )
        );
    }
}
