//! `rtscope load SPEC... [--duration 30s]`: run loads alone, stress-ng style,
//! and print what they achieved (CPU share per instance, work counters).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use rtscope_core::result::{now_rfc3339, EndReason, ResultDocument, Tool, SCHEMA_VERSION};
use rtscope_core::system::SystemSnapshot;
use rtscope_core::units::format_ns;

use super::{list_text, LoadSet};
use crate::cli::LoadCmdArgs;
use crate::error::{usage, EXIT_OK, EXIT_RUN};
use crate::experiment::{check_output, command_line};
use crate::output::loads as loads_out;

pub fn run(a: LoadCmdArgs) -> Result<i32> {
    if a.list {
        print!("{}", list_text());
        return Ok(EXIT_OK);
    }
    if a.specs.is_empty() {
        return Err(usage(
            "no load given (e.g. rtscope load cpu:50; see --list)",
        ));
    }
    if let Some(p) = &a.json {
        check_output("--json", p)?;
    }
    let system = SystemSnapshot::capture();
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone())?;
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let started_at = now_rfc3339();
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
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let reports = running.stop();
    let loads: Vec<serde_json::Value> = reports.iter().map(|r| r.to_json()).collect();
    print!("{}", loads_out::table(&loads));
    let errors: Vec<String> = reports
        .iter()
        .flat_map(|r| {
            r.errors
                .iter()
                .map(move |e| format!("load {}: {e}", r.spec))
        })
        .collect();
    let mut code = if errors.is_empty() { EXIT_OK } else { EXIT_RUN };
    if let Some(p) = &a.json {
        let doc = ResultDocument {
            schema_version: SCHEMA_VERSION,
            tool: Tool::default(),
            experiment: "load".into(),
            command_line: command_line(),
            started_at,
            ended_at: now_rfc3339(),
            start_clock_ns: 0,
            duration_ns: t0.elapsed().as_nanos() as u64,
            end_reason: if interrupted {
                EndReason::Interrupted
            } else {
                EndReason::Duration
            },
            plan: serde_json::json!({
                "specs": a.specs,
                "load_cpus": a.load_cpus,
                "duration_ns": a.duration,
            }),
            warnings: system.warnings(),
            system,
            series: vec![],
            loads,
            break_event: None,
            threshold: None,
        };
        match doc.write(p) {
            Ok(()) => println!("result: {}", p.display()),
            Err(e) => {
                eprintln!("error: --json {}: {e}", p.display());
                code = EXIT_RUN;
            }
        }
    }
    for e in &errors {
        eprintln!("error: {e}");
    }
    Ok(code)
}
