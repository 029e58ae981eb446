//! Experiments, one module each, and the run-time scaffolding they share: the
//! stop flag wired to SIGINT/SIGTERM, the real-time environment (mlockall,
//! `/dev/cpu_dma_latency`), policy resolution and output-path checks.

pub mod clock;
pub mod cyclic;
pub mod ipc;
pub mod matrix;
pub mod period;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Result;
use rtscope_core::rt::{self, DmaLatencyGuard, Policy};

use crate::cli::{PolicyArg, RtArgs};
use crate::error::usage;

/// The resolved real-time settings of an experiment's measurement threads.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct RtChoice {
    pub policy: Policy,
    pub priority: i32,
    /// `--no-rt` was given: the result is marked as measured without RT scheduling.
    pub no_rt: bool,
    /// `--default-system`: no system tuning.
    pub default_system: bool,
}

/// Validates policy and priority.
pub fn resolve_rt(a: &RtArgs) -> Result<RtChoice> {
    let policy = if a.no_rt {
        Policy::Other
    } else {
        match a.policy {
            PolicyArg::Fifo => Policy::Fifo,
            PolicyArg::Rr => Policy::Rr,
            PolicyArg::Other => Policy::Other,
            PolicyArg::Batch => Policy::Batch,
            PolicyArg::Idle => Policy::Idle,
        }
    };
    let priority = if policy.is_rt() {
        if a.priority == 0 {
            return Err(usage(format!(
                "priority 0 is not valid for --policy {} (use 1-99)",
                policy.name()
            )));
        }
        i32::from(a.priority)
    } else {
        0
    };
    Ok(RtChoice {
        policy,
        priority,
        no_rt: a.no_rt,
        default_system: a.default_system,
    })
}

/// Refuses an output path that cannot be written, before anything is measured.
pub fn check_output(flag: &str, path: &Path) -> Result<()> {
    rtscope_core::result::check_writable(path).map_err(|e| {
        // tempfile appends the probe file's name; the user only needs the reason.
        let reason = e.to_string();
        let reason = reason
            .split(" at path ")
            .next()
            .unwrap_or(&reason)
            .to_string();
        usage(format!(
            "{flag} {}: cannot write there: {reason}",
            path.display()
        ))
    })
}

/// SIGINT and SIGTERM wired to a stop flag while this value lives; a second
/// signal ends the process at once (exit 130). The signal actions are removed
/// on drop, so that a later run in the same process (a matrix cell) starts
/// with a fresh flag.
pub struct StopSignals {
    /// Raised by SIGINT/SIGTERM.
    pub flag: Arc<AtomicBool>,
    ids: Vec<signal_hook::SigId>,
}

impl StopSignals {
    /// Registers the signal actions.
    pub fn install() -> Result<Self> {
        let flag = Arc::new(AtomicBool::new(false));
        let mut ids = Vec::new();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            ids.push(signal_hook::flag::register_conditional_shutdown(
                sig,
                130,
                flag.clone(),
            )?);
            ids.push(signal_hook::flag::register(sig, flag.clone())?);
        }
        Ok(StopSignals { flag, ids })
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// What the run changed in the system, undone on drop.
pub struct RunEnv {
    /// Raised by SIGINT/SIGTERM, by `--duration`, or by `--break-above`.
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
    /// Wires SIGINT/SIGTERM to the stop flag (a second signal ends the process at
    /// once), and unless `default_system`, locks memory and holds
    /// `/dev/cpu_dma_latency` at 0.
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
            rtscope_core::sys::munlockall();
        }
    }
}

/// The warnings every experiment's result carries: what weakens real-time
/// results on this system, what the run could not set up, and a run without
/// real-time scheduling.
pub fn run_warnings(
    system: &rtscope_core::system::SystemSnapshot,
    env: &RunEnv,
    rt: &RtChoice,
) -> Vec<String> {
    let mut warnings = system.warnings();
    warnings.extend(env.notes.iter().cloned());
    if !rt.policy.is_rt() {
        warnings.push(format!(
            "measured as SCHED_{} without real-time priority{}",
            rt.policy.name().to_uppercase(),
            if rt.no_rt { " (--no-rt)" } else { "" }
        ));
    }
    warnings
}

/// Ends a finished run: writes its JSON result and HTML report (each if
/// asked for; one failing does not stop the other), then prints `summary`,
/// the loads table and where the files went. Files come first, so that a
/// closed terminal cannot lose them. Returns the exit code: 0, or 1 when a
/// file could not be written (the reason is on stderr).
pub fn finish_run(
    doc: &rtscope_core::result::ResultDocument,
    summary: &str,
    json: Option<&Path>,
    report: Option<&Path>,
) -> i32 {
    let mut written = String::new();
    let mut errors = Vec::new();
    if let Some(p) = json {
        match doc.write(p) {
            Ok(()) => written.push_str(&format!("result: {}\n", p.display())),
            Err(e) => errors.push(format!("--json {}: {e}", p.display())),
        }
    }
    if let Some(p) = report {
        match crate::report::write_html(std::slice::from_ref(doc), p) {
            Ok(()) => written.push_str(&format!("report: {}\n", p.display())),
            Err(e) => errors.push(format!("--report {}: {e}", p.display())),
        }
    }
    crate::output::say(summary);
    crate::output::say(&crate::output::loads::table(&doc.loads));
    crate::output::say(&written);
    for e in &errors {
        eprintln!("error: {e}");
    }
    if errors.is_empty() {
        crate::error::EXIT_OK
    } else {
        crate::error::EXIT_RUN
    }
}

/// The command line as given.
pub fn command_line() -> Vec<String> {
    std::env::args().collect()
}
