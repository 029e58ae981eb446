//! `rtscope check`: a readiness audit. Reads the system (never changes it)
//! and judges each setting that matters for latency: one line per check with
//! the status, what was found, why it matters and the fix for this kernel.
//!
//! Every check reads through a [`Root`] (`--root DIR` stands for `/`), so
//! tests feed it fake `/proc` and `/sys` trees. `--measure` attaches numbers
//! from short probes on the RT CPUs; `--fix-script` writes the fixes as a
//! shell script for review (never run by rtscope).

pub mod checks;
pub mod facts;
pub mod measure;
pub mod root;
pub mod script;
pub mod text;

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::error::{usage, EXIT_OK, EXIT_RUN, EXIT_THRESHOLD};
pub use checks::{Check, Status};
pub use facts::Facts;
pub use root::Root;

/// Everything `rtscope check` was asked to do.
#[derive(Debug, Clone)]
pub struct CheckPlan {
    pub root: PathBuf,
    pub cpus: Option<Vec<usize>>,
    pub json: Option<PathBuf>,
    pub measure: bool,
    pub measure_ns: u64,
    pub fix_script: Option<PathBuf>,
    pub quiet: bool,
}

/// The audit as `--json` writes it (schema: docs/check-schema.json).
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub schema: &'static str,
    pub tool: rtscope_core::result::Tool,
    pub created_at: String,
    /// The directory that stood for `/`.
    pub root: String,
    pub kernel: KernelInfo,
    pub arch: String,
    pub online_cpus: String,
    /// The CPUs the checks are about and where they came from.
    pub target_cpus: Vec<usize>,
    pub target_source: &'static str,
    pub checks: Vec<Check>,
    pub summary: Summary,
    /// 0 all ok, 1 warnings, 3 failures.
    pub exit_code: i32,
}

#[derive(Debug, Clone, Serialize)]
pub struct KernelInfo {
    pub release: String,
    pub version: String,
    pub preemption_model: String,
    pub preempt_dynamic_mode: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Summary {
    pub ok: usize,
    pub warn: usize,
    pub fail: usize,
    #[serde(rename = "n/a")]
    pub na: usize,
}

/// The exit code for a set of checks: 3 with a failure, 1 with a warning, else 0.
pub fn exit_code(checks: &[Check]) -> i32 {
    match checks.iter().map(|c| c.status).max() {
        Some(Status::Fail) => EXIT_THRESHOLD,
        Some(Status::Warn) => EXIT_RUN,
        _ => EXIT_OK,
    }
}

/// Runs every check under `root` (no measurement).
pub fn audit(root: &Root, cpus: Option<&[usize]>) -> (Facts, Vec<Check>) {
    let facts = Facts::read(root, cpus);
    let checks = checks::all(root, &facts);
    (facts, checks)
}

/// Builds the report document.
pub fn report(root: &Root, facts: &Facts, checks: Vec<Check>) -> CheckReport {
    let mut summary = Summary::default();
    for c in &checks {
        match c.status {
            Status::Ok => summary.ok += 1,
            Status::Warn => summary.warn += 1,
            Status::Fail => summary.fail += 1,
            Status::Na => summary.na += 1,
        }
    }
    CheckReport {
        schema: "rtscope-check/1",
        tool: Default::default(),
        created_at: rtscope_core::result::now_rfc3339(),
        root: root.base().display().to_string(),
        kernel: KernelInfo {
            release: facts.release.clone(),
            version: facts.version.clone(),
            preemption_model: facts.model.clone(),
            preempt_dynamic_mode: facts.dyn_mode.clone(),
        },
        arch: facts.arch.clone(),
        online_cpus: rtscope_core::units::format_cpu_list(&facts.online),
        target_cpus: facts.targets.clone(),
        target_source: facts.targets_from,
        exit_code: exit_code(&checks),
        checks,
        summary,
    }
}

/// `rtscope check`.
pub fn run(plan: &CheckPlan) -> Result<i32> {
    if !plan.root.is_dir() {
        return Err(usage(format!(
            "--root {}: not a directory",
            plan.root.display()
        )));
    }
    let mut outs = crate::output::files::OutputPaths::new();
    outs.add("--json", plan.json.as_deref())?;
    outs.add("--fix-script", plan.fix_script.as_deref())?;
    let root = Root::new(&plan.root);
    if plan.measure && !root.is_live() {
        return Err(usage(
            "--measure measures this machine: it cannot be combined with --root",
        ));
    }
    // With --measure, a stop from here on ends the probes and keeps the
    // audit (without, the audit takes a moment and a stop ends it at once).
    let stop = if plan.measure {
        Some(crate::signals::StopSignals::install()?)
    } else {
        None
    };
    let (facts, mut checks) = audit(&root, plan.cpus.as_deref());
    if let Some(c) = &plan.cpus {
        if let Some(bad) = c.iter().find(|c| !facts.online.contains(c)) {
            if root.is_live() {
                return Err(usage(format!(
                    "--cpus: CPU {bad} is not online (online: {})",
                    rtscope_core::units::format_cpu_list(&facts.online)
                )));
            }
        }
    }
    if let Some(stop) = &stop {
        measure::attach(
            &root,
            &facts,
            &mut checks,
            plan.measure_ns,
            plan.quiet,
            stop,
        )?;
    }
    let rep = report(&root, &facts, checks);
    let mut errors = Vec::new();
    if let Some(p) = &plan.json {
        let mut text = serde_json::to_vec_pretty(&rep).expect("report serialises");
        text.push(b'\n');
        if let Err(e) = rtscope_core::file::write_atomic(p, &text) {
            errors.push(format!("--json {}: {e}", p.display()));
        }
    }
    if let Some(p) = &plan.fix_script {
        let text = script::render(&rep, &facts);
        if let Err(e) = script::write(p, &text) {
            errors.push(format!("--fix-script {}: {e}", p.display()));
        }
    }
    crate::output::say(&text::text(&rep));
    if let Some(p) = &plan.json {
        crate::output::say(&format!("result: {}\n", p.display()));
    }
    if let Some(p) = &plan.fix_script {
        crate::output::say(&format!(
            "fix script: {} (review it; rtscope has changed nothing)\n",
            p.display()
        ));
    }
    for e in &errors {
        eprintln!("error: {e}");
    }
    if !errors.is_empty() {
        return Ok(EXIT_RUN.max(rep.exit_code));
    }
    Ok(rep.exit_code)
}
