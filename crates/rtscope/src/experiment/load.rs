//! `rtscope load SPEC... [--duration 30s]`: run loads alone, stress-ng style,
//! and print what they achieved (CPU share per instance, work counters).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;
use rtscope_core::result::{EndReason, ResultDocument};
use rtscope_core::system::SystemSnapshot;
use rtscope_core::units::format_ns;

use crate::error::{usage, EXIT_OK};
use crate::experiment::run::{deliver, Outputs};
use crate::load::{list_text, LoadSet};
use crate::output::files::OutputPaths;
use crate::output::say;
use crate::signals::StopSignals;

/// What `rtscope load` runs: the loads alone, for a while, and where the
/// document of what they achieved goes.
#[derive(Debug, Clone, Default)]
pub struct LoadCommand {
    /// The loads to run.
    pub specs: Vec<crate::load::LoadSpec>,
    /// List the loads instead.
    pub list: bool,
    /// CPUs the loads run on (default: every online CPU).
    pub load_cpus: Option<Vec<usize>>,
    /// How long, ns.
    pub duration: u64,
    /// Where the result document goes.
    pub json: Option<std::path::PathBuf>,
    /// Only the final table.
    pub quiet: bool,
}

pub fn run(a: LoadCommand) -> Result<i32> {
    if a.list {
        say(&list_text());
        return Ok(EXIT_OK);
    }
    if a.specs.is_empty() {
        return Err(usage(
            "no load given (e.g. rtscope load cpu:50; see --list)",
        ));
    }
    OutputPaths::new().add("--json", a.json.as_deref())?;
    let system = SystemSnapshot::capture();
    let signals = StopSignals::install()?;
    let started_at = rtscope_core::result::now_rfc3339();
    let t0 = Instant::now();
    let running = LoadSet::start(&a.specs, a.load_cpus.as_deref())?;
    if !a.quiet {
        eprintln!(
            "rtscope load: {} for {}",
            running.describe().trim_start_matches("loads: "),
            format_ns(a.duration)
        );
    }
    let until = Instant::now() + Duration::from_nanos(a.duration);
    let mut interrupted = false;
    while Instant::now() < until {
        if signals.flag.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let plan = serde_json::json!({
        "specs": a.specs,
        "load_cpus": a.load_cpus,
        "duration_ns": a.duration,
    });
    let warnings = system.warnings();
    let mut doc = ResultDocument::new("load", plan, system, vec![]);
    doc.started_at = started_at;
    doc.duration_ns = t0.elapsed().as_nanos() as u64;
    doc.end_reason = if interrupted {
        EndReason::Interrupted
    } else {
        EndReason::Duration
    };
    doc.warnings = warnings;
    crate::load::attach(&mut doc, &running.stop());
    let outputs = Outputs {
        json: a.json.clone(),
        ..Outputs::default()
    };
    let code = deliver(&doc, &outputs, vec![], "");
    for l in &doc.loads {
        for e in &l.errors {
            eprintln!("error: load {}: {e}", l.spec);
        }
    }
    Ok(code)
}
