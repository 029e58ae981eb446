//! `rtscope matrix`: the cyclic experiment over periods x loads x levels, the
//! classic vanilla-vs-PREEMPT_RT campaign (300/500/1000 us x CPU and memory loads x 0/50/100 %)
//! in one command.
//!
//! Every cell is a full `cyclic` result document, `<out>/<cell-id>.json`. Cell
//! ids are stable (`p1ms-mem-fault-50`), so the same matrix run on two kernels
//! can be compared cell by cell. `matrix.json` indexes the cells and is
//! rewritten after each one (a crash keeps what was done); `summary.md` and
//! `summary.csv` hold one row per cell. Ctrl-C stops the cell in flight (its
//! result is written, marked interrupted), writes the index and the summary,
//! and `--resume` later runs only the cells that are not complete.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use anyhow::{Context, Result};

use crate::output::progress::Progress;
use serde::{Deserialize, Serialize};

use rtscope_core::result::{now_rfc3339, write_atomic, EndReason, ResultDocument};
use rtscope_core::units::format_ns;

use super::cyclic::{self, CyclicOptions};
use super::run::{RtChoice, RunRequest};
use crate::error::{usage, EXIT_OK, EXIT_RUN};
use crate::load::{parse_spec, LoadSet, LoadSpec};
use crate::output::matrix::{self as out, CellEntry, CellSummary};
use crate::output::{out, outln};
use crate::signals::StopSignals;

/// Version of `matrix.json`'s shape.
pub const INDEX_VERSION: u32 = 1;

/// `matrix.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MatrixIndex {
    pub kind: String,
    pub version: u32,
    pub tool_version: String,
    pub command_line: Vec<String>,
    pub created_at: String,
    pub updated_at: String,
    pub periods_ns: Vec<u64>,
    pub loads: Vec<String>,
    pub levels: Vec<u8>,
    pub samples: u64,
    /// The options every cell shares (clock, wake, policy, threads, CPUs);
    /// `--resume` refuses a directory made with other settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<serde_json::Value>,
    pub cells: Vec<CellEntry>,
}

/// A load item of `--loads` before levels are applied.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LoadItem {
    /// `none`, or a SPEC without level or with a fixed one.
    text: String,
}

/// Splits `--loads` values: items on commas, a `KEY=VALUE` item joins the one
/// before it, `cmd:` takes the rest of its value.
fn load_items(values: &[String]) -> Result<Vec<LoadItem>> {
    let mut items: Vec<LoadItem> = Vec::new();
    for v in values {
        let mut rest = v.as_str();
        while !rest.is_empty() {
            if rest.trim_start().starts_with("cmd:") {
                items.push(LoadItem {
                    text: rest.trim().to_string(),
                });
                break;
            }
            let (tok, next) = rest.split_once(',').unwrap_or((rest, ""));
            rest = next;
            let tok = tok.trim();
            if tok.is_empty() {
                continue;
            }
            if tok.contains('=') {
                match items.last_mut() {
                    Some(last) if last.text != "none" && !last.text.starts_with("cmd:") => {
                        last.text.push(',');
                        last.text.push_str(tok);
                    }
                    _ => {
                        return Err(usage(format!(
                        "--loads: '{tok}' must follow the load it belongs to (mem-churn,size=64M)"
                    )))
                    }
                }
            } else {
                items.push(LoadItem {
                    text: tok.to_string(),
                });
            }
        }
    }
    if items.is_empty() {
        return Err(usage("--loads: no load given"));
    }
    Ok(items)
}

/// `300us`, `1ms`, `1500ns`: the period as a cell-id part.
fn period_id(ns: u64) -> String {
    if ns % 1_000_000_000 == 0 {
        format!("{}s", ns / 1_000_000_000)
    } else if ns % 1_000_000 == 0 {
        format!("{}ms", ns / 1_000_000)
    } else if ns % 1000 == 0 {
        format!("{}us", ns / 1000)
    } else {
        format!("{ns}ns")
    }
}

fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The stable id of a cell: `p<period>-<load>[-<params>][-<level>]`.
pub fn cell_id(period_ns: u64, spec: Option<&LoadSpec>) -> String {
    let mut id = format!("p{}", period_id(period_ns));
    match spec {
        None => id.push_str("-none"),
        Some(s) if s.name == "cmd" => {
            let c = s.command.as_deref().unwrap_or_default();
            id.push_str(&format!("-cmd-{:08x}", fnv1a(c) as u32));
        }
        Some(s) => {
            id.push('-');
            id.push_str(s.name);
            for (k, v) in &s.params {
                let v: String = v.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
                id.push_str(&format!("-{k}{v}"));
            }
            if let Some(l) = s.level {
                id.push_str(&format!("-{l}"));
            }
        }
    }
    id
}

/// What `rtscope matrix` runs: every period × load × level cell of
/// `rtscope cyclic`, and where the results go.
#[derive(Debug, Clone)]
pub struct MatrixOptions {
    /// Periods, ns.
    pub periods: Vec<u64>,
    /// Load lists (`none,cpu,mem-churn,size=64M`).
    pub loads: Vec<String>,
    /// Levels for loads that take one, %.
    pub levels: Vec<u8>,
    /// Wake-ups per measurement thread in each cell.
    pub samples: u64,
    /// The output directory.
    pub out: PathBuf,
    /// Skip cells already complete in `out`.
    pub resume: bool,
    /// Rounds over all cells.
    pub repeat: usize,
    /// Measurement threads (default: one per CPU).
    pub threads: Option<usize>,
    /// CPUs of the measurement threads.
    pub cpus: Option<Vec<usize>>,
    /// CPUs of the loads.
    pub load_cpus: Option<Vec<usize>>,
    /// The schedule's and the latency's clock.
    pub clock: rtscope_core::named::MeasureClock,
    /// How threads wait.
    pub wake: rtscope_core::cyclic::WakeMethod,
    /// The real-time settings.
    pub rt: RtChoice,
    /// Only the final summary.
    pub quiet: bool,
}

impl Default for MatrixOptions {
    /// `rtscope matrix`'s defaults.
    fn default() -> Self {
        MatrixOptions {
            periods: vec![1_000_000],
            loads: vec!["none".into()],
            levels: vec![50, 100],
            samples: 10_000,
            out: PathBuf::new(),
            resume: false,
            repeat: 1,
            threads: None,
            cpus: None,
            load_cpus: None,
            clock: rtscope_core::named::MeasureClock::Monotonic,
            wake: rtscope_core::cyclic::WakeMethod::Absolute,
            rt: RtChoice::default(),
            quiet: false,
        }
    }
}

/// Every cell in order: periods, then loads, then levels.
fn cells(a: &MatrixOptions) -> Result<Vec<(CellEntry, Option<LoadSpec>)>> {
    let items = load_items(&a.loads)?;
    let mut specs: Vec<Option<LoadSpec>> = Vec::new();
    for it in &items {
        if it.text == "none" {
            specs.push(None);
            continue;
        }
        let base = parse_spec(&it.text).map_err(|e| usage(format!("--loads: {e}")))?;
        let head = it.text.split(',').next().unwrap_or_default();
        if base.def().takes_level && !head.contains(':') {
            for l in &a.levels {
                let text = match it.text.split_once(',') {
                    Some((h, rest)) => format!("{h}:{l},{rest}"),
                    None => format!("{}:{l}", it.text),
                };
                specs.push(Some(
                    parse_spec(&text).map_err(|e| usage(format!("--loads: {e}")))?,
                ));
            }
        } else {
            specs.push(Some(base));
        }
    }
    let mut out = Vec::new();
    for &p in &a.periods {
        for s in &specs {
            let id = cell_id(p, s.as_ref());
            out.push((
                CellEntry {
                    file: format!("{id}.json"),
                    id,
                    period_ns: p,
                    load: s.as_ref().map_or("none".into(), |s| s.name.to_string()),
                    level: s.as_ref().and_then(|s| s.level),
                    spec: s.as_ref().map(|s| s.text.clone()),
                    status: "pending".into(),
                    error: None,
                    summary: None,
                },
                s.clone(),
            ));
        }
    }
    let mut ids: Vec<&str> = out.iter().map(|c| c.0.id.as_str()).collect();
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(usage(format!("the matrix has cell {} twice", w[0])));
    }
    Ok(out)
}

/// The options every cell shares: `rtscope cyclic`'s defaults and the
/// matrix's own settings.
fn base_options(a: &MatrixOptions) -> Result<CyclicOptions> {
    Ok(CyclicOptions {
        threads: a.threads,
        cpus: a.cpus.clone(),
        loops: Some(a.samples),
        clock: a.clock,
        wake: a.wake,
        run: RunRequest {
            rt: a.rt,
            load_cpus: a.load_cpus.clone(),
            ..RunRequest::quiet()
        },
        ..CyclicOptions::default()
    })
}

/// The options of one cell.
fn cell_options(
    base: &CyclicOptions,
    period_ns: u64,
    spec: Option<&LoadSpec>,
    json: Option<&Path>,
) -> CyclicOptions {
    let mut o = base.clone();
    o.period_ns = period_ns;
    o.run.loads = spec.into_iter().cloned().collect();
    o.run.outputs.json = json.map(Path::to_path_buf);
    o
}

/// What `--resume` compares: the settings that shape every cell.
fn settings(base: &CyclicOptions, repeat: usize) -> serde_json::Value {
    let mut v = serde_json::json!({
        "threads": base.threads,
        "cpus": base.cpus,
        "clock": base.clock,
        "wake": base.wake,
        "rt": base.run.rt,
        "load_cpus": base.run.load_cpus,
    });
    // Only when asked for, so that older indexes still resume.
    if repeat > 1 {
        v["repeat"] = repeat.into();
    }
    v
}

/// Refuses to resume a matrix that was made with other settings: its cells
/// would mix two experiments.
fn check_resumable(dir: &Path, index: &MatrixIndex) -> Result<()> {
    let Ok(text) = std::fs::read_to_string(dir.join("matrix.json")) else {
        return Ok(());
    };
    let old: MatrixIndex = serde_json::from_str(&text).map_err(|e| {
        usage(format!(
            "--resume: {} is not a matrix index: {e}",
            dir.join("matrix.json").display()
        ))
    })?;
    let mut differ = Vec::new();
    if old.periods_ns != index.periods_ns {
        differ.push("--periods");
    }
    if old.loads != index.loads {
        differ.push("--loads");
    }
    if old.levels != index.levels {
        differ.push("--levels");
    }
    if old.samples != index.samples {
        differ.push("--samples");
    }
    if old.settings.is_some() && old.settings != index.settings {
        differ.push("cell options (threads, CPUs, clock, wake, policy, priority, repeat)");
    }
    if differ.is_empty() {
        return Ok(());
    }
    Err(usage(format!(
        "--resume: {} was made with other {}: give the same options, or another --out",
        dir.display(),
        differ.join(", ")
    )))
}

/// Whether `path` holds a complete result of this cell (with `rounds`
/// runs pooled when `--repeat` asks for more than one).
fn complete(path: &Path, cell: &CellEntry, rounds: usize) -> Option<ResultDocument> {
    let doc = ResultDocument::read(path).ok()?;
    let made = doc.plan.get("repeat").and_then(|v| v.as_u64()).unwrap_or(1);
    let ok_end =
        matches!(doc.end_reason, EndReason::Loops | EndReason::Duration) && made == rounds as u64;
    let same_period = doc.plan.get("period_ns").and_then(|v| v.as_u64()) == Some(cell.period_ns);
    let loads: Vec<String> = doc
        .plan
        .get("loads")
        .and_then(|l| l.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|s| s.get("text").and_then(|t| t.as_str()).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let want: Vec<String> = cell.spec.iter().cloned().collect();
    (doc.experiment == "cyclic" && ok_end && same_period && loads == want).then_some(doc)
}

/// A cell's figures from its document.
pub fn summarize(doc: &ResultDocument) -> CellSummary {
    let all = doc
        .series
        .iter()
        .find(|s| s.label == "all")
        .or(doc.series.first());
    let shares: Vec<f64> = doc
        .loads
        .iter()
        .map(|l| l.achieved_cpu_percent_mean)
        .collect();
    let mut s = CellSummary {
        load_cpu_percent: (!shares.is_empty())
            .then(|| shares.iter().sum::<f64>() / shares.len() as f64),
        load_fell_short: doc.loads.iter().any(|l| l.fell_short),
        end_reason: serde_json::to_value(doc.end_reason)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        duration_ns: doc.duration_ns,
        ..Default::default()
    };
    if let Some(a) = all {
        // The latencies over the intended periods (missed ones counted at
        // their lateness) where the document has them; the samples are the
        // wake-ups either way.
        let view = a.over_intended_periods();
        s.over_intended_periods = view.is_some();
        let st = view.as_ref().map_or(&a.stats, |v| &v.stats);
        s.samples = a.stats.count;
        s.min_ns = st.min_ns;
        s.avg_ns = st.mean_ns;
        s.max_ns = st.max_ns;
        s.stddev_ns = st.stddev_ns;
        s.p99_9_ns = st.p99_9_ns;
        s.overruns = a.counters.overrun_samples;
    }
    s
}

fn write_index(dir: &Path, index: &mut MatrixIndex) -> Result<()> {
    index.updated_at = now_rfc3339();
    let text = serde_json::to_string_pretty(index)? + "\n";
    write_atomic(&dir.join("matrix.json"), text.as_bytes())
        .with_context(|| format!("{}", dir.join("matrix.json").display()))?;
    write_atomic(
        &dir.join("summary.md"),
        out::markdown(&index.cells).as_bytes(),
    )
    .context("summary.md")?;
    write_atomic(&dir.join("summary.csv"), out::csv(&index.cells).as_bytes())
        .context("summary.csv")?;
    Ok(())
}

/// How long one cell takes, in ms: one thread's loops (threads run side by
/// side), plus the loads' ramp-up and stop. Saturates: `--samples` may be any
/// count (18446744073709551615 overflowed the sum and panicked).
fn cell_estimate_ms(period_ns: u64, samples: u64, loaded: bool) -> u64 {
    let loops = u128::from(period_ns) * u128::from(samples) / 1_000_000;
    u64::try_from(loops)
        .unwrap_or(u64::MAX)
        .saturating_add(if loaded { 600 } else { 100 })
}

/// Runs the matrix; the exit code.
pub fn run(a: MatrixOptions) -> Result<i32> {
    let mut plan = cells(&a)?;
    // Everything is checked before the first cell runs.
    let specs: Vec<LoadSpec> = plan.iter().filter_map(|c| c.1.clone()).collect();
    for s in &specs {
        LoadSet::check(std::slice::from_ref(s), a.load_cpus.as_deref())?;
    }
    let dir: PathBuf = a.out.clone();
    if dir.join("matrix.json").exists() && !a.resume {
        return Err(usage(format!(
            "{} already holds a matrix: --resume continues it, or choose another --out",
            dir.display()
        )));
    }
    let base = base_options(&a)?;
    for (c, s) in &plan {
        // Validates every cell's options through cyclic's own planner.
        cyclic::plan(&cell_options(&base, c.period_ns, s.as_ref(), None))?;
    }
    let created_at = existing_created_at(&dir).unwrap_or_else(now_rfc3339);
    let mut index = MatrixIndex {
        kind: "rtscope-matrix".into(),
        version: INDEX_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command_line: std::env::args().collect(),
        created_at,
        updated_at: String::new(),
        periods_ns: a.periods.clone(),
        loads: a.loads.clone(),
        levels: a.levels.clone(),
        samples: a.samples,
        settings: Some(settings(&base, a.repeat)),
        cells: plan.iter().map(|c| c.0.clone()).collect(),
    };
    if a.resume {
        check_resumable(&dir, &index)?;
    }
    // Only now, with everything checked, does the directory appear.
    std::fs::create_dir_all(&dir)
        .map_err(|e| usage(format!("--out {}: cannot create: {e}", dir.display())))?;
    for c in &index.cells {
        crate::output::files::check_output("--out", &dir.join(&c.file))?;
    }
    let signals = StopSignals::install()?;
    let stop = signals.flag.clone();
    let est: Vec<u64> = index
        .cells
        .iter()
        // Threads run side by side: a cell lasts one thread's loops, plus the
        // loads' ramp-up and stop.
        .map(|c| cell_estimate_ms(c.period_ns, a.samples, c.spec.is_some()))
        .collect();
    let rounds = a.repeat.max(1);
    let total_ms: u64 = est
        .iter()
        .fold(0u64, |t, e| t.saturating_add(*e))
        .saturating_mul(rounds as u64);
    if !a.quiet {
        eprintln!(
            "rtscope matrix: {} cells ({} periods x {} load settings){}, {} samples per thread, about {} -> {}",
            index.cells.len(),
            a.periods.len(),
            index.cells.len() / a.periods.len().max(1),
            if rounds > 1 {
                format!(" x {rounds} rounds")
            } else {
                String::new()
            },
            a.samples,
            format_ns(total_ms.saturating_mul(1_000_000)),
            dir.display()
        );
    }
    let progress = Progress::new("matrix", total_ms, a.quiet);
    let n = index.cells.len();
    let mut done_ms = 0u64;
    let mut interrupted = false;
    let mut failure: Option<anyhow::Error> = None;
    // Each cell's runs so far (rounds > 1); a cell found complete is skipped
    // in every round.
    let mut runs: Vec<Vec<ResultDocument>> = vec![Vec::new(); n];
    let mut skip = vec![false; n];
    'rounds: for round in 1..=rounds {
        for i in 0..n {
            if stop.load(Ordering::Relaxed) {
                interrupted = true;
                break 'rounds;
            }
            let (cell, spec) = &mut plan[i];
            let path = dir.join(&cell.file);
            if skip[i] {
                done_ms = done_ms.saturating_add(est[i]);
                continue;
            }
            if a.resume && round == 1 {
                if let Some(doc) = complete(&path, cell, rounds) {
                    let e = &mut index.cells[i];
                    e.status = "done".into();
                    e.summary = Some(summarize(&doc));
                    done_ms = done_ms.saturating_add(est[i]);
                    skip[i] = true;
                    progress.line(
                        &format!("{} ({}/{n}): complete, skipped", e.id, i + 1),
                        done_ms,
                    );
                    continue;
                }
            }
            let what = if rounds > 1 {
                format!("cell {}/{n} {} (round {round}/{rounds})", i + 1, cell.id)
            } else {
                format!("cell {}/{n} {}", i + 1, cell.id)
            };
            progress.step(done_ms, est[i], &what);
            let result = cyclic::plan(&cell_options(
                &base,
                cell.period_ns,
                spec.as_ref(),
                Some(&path),
            ))
            .and_then(|p| cyclic::execute(&p));
            done_ms = done_ms.saturating_add(est[i]);
            let e = &mut index.cells[i];
            match result {
                Ok(o) => {
                    let end = o.doc.end_reason;
                    let doc = if rounds > 1 {
                        runs[i].push(o.doc);
                        super::repeat::pool(runs[i].clone())
                    } else {
                        o.doc
                    };
                    let s = summarize(&doc);
                    let mut errs: Vec<String> = o.thread_errors.clone();
                    if let Err(e) = doc.write(&path) {
                        errs.push(format!("{}: {e}", path.display()));
                    }
                    e.status = if !errs.is_empty() {
                        "error".into()
                    } else if end == EndReason::Interrupted {
                        "interrupted".into()
                    } else if round < rounds {
                        format!("round {round}/{rounds}")
                    } else {
                        "done".into()
                    };
                    e.error = (!errs.is_empty()).then(|| errs.join("; "));
                    progress.line(&out::cell_line(e, &s, i + 1, n), done_ms);
                    e.summary = Some(s);
                    if end == EndReason::Interrupted {
                        interrupted = true;
                    }
                }
                Err(err) => {
                    e.status = "failed".into();
                    e.error = Some(crate::error::one_line(&err));
                    progress.line(
                        &format!(
                            "{} ({}/{n}): failed: {}",
                            e.id,
                            i + 1,
                            crate::error::one_line(&err)
                        ),
                        done_ms,
                    );
                    failure = Some(err);
                }
            }
            write_index(&dir, &mut index)?;
            if interrupted || failure.is_some() {
                break 'rounds;
            }
        }
    }
    progress.finish();
    write_index(&dir, &mut index)?;
    drop(signals);
    out!("{}", out::table(&index.cells));
    outln!(
        "matrix: {} (matrix.json, summary.md, summary.csv, one <cell>.json per cell)",
        dir.display()
    );
    let pending = index.cells.iter().filter(|c| c.status != "done").count();
    if let Some(e) = failure {
        return Err(e);
    }
    if interrupted || pending > 0 {
        eprintln!(
            "matrix: {} of {} cells complete; run the same command with --resume to finish",
            n - pending,
            n
        );
        return Ok(if interrupted { EXIT_OK } else { EXIT_RUN });
    }
    Ok(EXIT_OK)
}

/// The `created_at` of an existing index (kept across `--resume`).
fn existing_created_at(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("matrix.json")).ok()?;
    let idx: MatrixIndex = serde_json::from_str(&text).ok()?;
    Some(idx.created_at)
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_cells_estimate_saturates() {
        assert_eq!(cell_estimate_ms(1_000_000, 2_000, false), 2_100);
        assert_eq!(cell_estimate_ms(1_000_000, 2_000, true), 2_600);
        assert_eq!(cell_estimate_ms(300_000, 10, false), 103);
        assert_eq!(cell_estimate_ms(1_000_000, u64::MAX, false), u64::MAX);
        assert_eq!(
            cell_estimate_ms(1_000_000_000, u64::MAX / 2, true),
            u64::MAX
        );
    }

    use super::*;

    /// A cell's figures are the `all` series' over its intended periods
    /// where the document has them (the samples stay the wake-ups), else
    /// the wake-ups', and the summary says which.
    #[test]
    fn a_cell_is_summarized_over_its_intended_periods() {
        use rtscope_core::record::SeriesRecorder;
        use rtscope_core::sample::Sample;
        let mut rec = SeriesRecorder::new(0, 4, None).over_intended_periods(1_000_000);
        for seq in 0..1_000u64 {
            rec.record(&Sample {
                seq,
                t_ns: seq * 1_000_000,
                latency_ns: if seq == 500 { 20_500_000 } else { 20_000 },
                overruns: if seq == 500 { 20 } else { 0 },
                cpu: 0,
            });
        }
        let all = rec.to_series("all", 0);
        let mut doc = ResultDocument::new(
            "cyclic",
            serde_json::json!({}),
            Default::default(),
            vec![all],
        );
        let s = summarize(&doc);
        let c = doc.series[0].corrected.clone().unwrap().stats;
        assert!(s.over_intended_periods);
        assert_eq!(s.samples, 1_000);
        assert_eq!(s.overruns, 1);
        assert_eq!(
            (s.avg_ns, s.stddev_ns, s.p99_9_ns),
            (c.mean_ns, c.stddev_ns, c.p99_9_ns)
        );
        assert_eq!(s.min_ns, c.min_ns);
        assert!(s.avg_ns > doc.series[0].stats.mean_ns);
        doc.series[0].corrected = None;
        let s = summarize(&doc);
        let o = &doc.series[0].stats;
        assert!(!s.over_intended_periods);
        assert_eq!(
            (s.avg_ns, s.stddev_ns, s.p99_9_ns),
            (o.mean_ns, o.stddev_ns, o.p99_9_ns)
        );
        assert_eq!((s.min_ns, s.max_ns), (o.min_ns, o.max_ns));
    }

    fn args(loads: &[&str], levels: &[u8], periods: &[u64]) -> MatrixOptions {
        MatrixOptions {
            loads: loads.iter().map(|l| l.to_string()).collect(),
            levels: levels.to_vec(),
            periods: periods.to_vec(),
            out: "/tmp/x".into(),
            ..MatrixOptions::default()
        }
    }

    #[test]
    fn splits_load_lists() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let items = load_items(&v(&["none,cpu,mem-churn,size=64M,instances=1,messaging"])).unwrap();
        let t: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
        assert_eq!(
            t,
            ["none", "cpu", "mem-churn,size=64M,instances=1", "messaging"]
        );
        let items = load_items(&v(&["cpu", "cmd:stress-ng --cpu 1,2"])).unwrap();
        assert_eq!(items[1].text, "cmd:stress-ng --cpu 1,2");
        assert!(load_items(&v(&["size=1M,cpu"])).is_err());
        assert!(load_items(&v(&["none,size=1M"])).is_err());
    }

    #[test]
    fn expands_the_cross_product_with_stable_ids() {
        let a = args(
            &["none,cpu,messaging,mem-fault:75"],
            &[50, 100],
            &[300_000, 1_000_000],
        );
        let c = cells(&a).unwrap();
        let ids: Vec<&str> = c.iter().map(|c| c.0.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "p300us-none",
                "p300us-cpu-50",
                "p300us-cpu-100",
                "p300us-messaging",
                "p300us-mem-fault-75",
                "p1ms-none",
                "p1ms-cpu-50",
                "p1ms-cpu-100",
                "p1ms-messaging",
                "p1ms-mem-fault-75",
            ]
        );
        assert_eq!(c[1].0.spec.as_deref(), Some("cpu:50"));
        let a = args(&["mem-churn,size=64M"], &[50], &[1_000_000]);
        let c = cells(&a).unwrap();
        assert_eq!(c[0].0.id, "p1ms-mem-churn-size64M-50");
        assert_eq!(c[0].0.spec.as_deref(), Some("mem-churn:50,size=64M"));
        let a = args(&["cmd:stress-ng --cpu 1"], &[50], &[1_500]);
        let c = cells(&a).unwrap();
        assert_eq!(
            c[0].0.id,
            cell_id(1_500, parse_spec("cmd:stress-ng --cpu 1").ok().as_ref())
        );
        assert!(c[0].0.id.starts_with("p1500ns-cmd-"));
        let a = args(&["cpu,cpu"], &[50], &[1_000_000]);
        assert!(cells(&a).is_err());
        let a = args(&["bogus"], &[50], &[1_000_000]);
        assert!(cells(&a).unwrap_err().to_string().contains("unknown load"));
    }

    /// A cell's load fell short when one of its documents' loads did (with
    /// `--repeat`, one run is enough).
    #[test]
    fn summary_says_when_the_load_fell_short() {
        use rtscope_core::result::LoadReport;
        let mut doc =
            ResultDocument::new("cyclic", serde_json::json!({}), Default::default(), vec![]);
        let s = summarize(&doc);
        assert_eq!((s.load_cpu_percent, s.load_fell_short), (None, false));
        let load = |share: f64, short: bool| LoadReport {
            achieved_cpu_percent_mean: share,
            fell_short: short,
            ..Default::default()
        };
        doc.loads = vec![load(50.0, false), load(31.0, false)];
        let s = summarize(&doc);
        assert_eq!((s.load_cpu_percent, s.load_fell_short), (Some(40.5), false));
        doc.loads[1].fell_short = true;
        assert!(summarize(&doc).load_fell_short);
        doc.loads[0].fell_short = true;
        doc.loads[1].fell_short = false;
        assert!(summarize(&doc).load_fell_short);
    }

    #[test]
    fn cell_options_go_through_cyclic() {
        let a = args(&["cpu"], &[50], &[500_000]);
        let s = parse_spec("cpu:50").unwrap();
        let base = base_options(&a).unwrap();
        let c = cell_options(&base, 500_000, Some(&s), Some(Path::new("/tmp/c.json")));
        assert_eq!(c.period_ns, 500_000);
        assert_eq!(c.loops, Some(10_000));
        assert_eq!(c.run.loads, vec![s.clone()]);
        assert!(c.run.outputs.quiet);
        assert_eq!(
            c.run.outputs.json.as_deref(),
            Some(Path::new("/tmp/c.json"))
        );
        // Everything the matrix does not set is cyclic's default.
        assert_eq!(c.spikes, CyclicOptions::default().spikes);
        assert_eq!(c.start_delay_ns, CyclicOptions::default().start_delay_ns);
        cyclic::plan(&cell_options(&base, 500_000, Some(&s), None)).unwrap();
        // The matrix's own real-time choice, wait, clock and load CPUs reach
        // every cell.
        let mut a = args(&["none"], &[50], &[500_000]);
        a.rt = RtChoice::new(rtscope_core::rt::Policy::Rr, 7, false, true).unwrap();
        a.wake = rtscope_core::cyclic::WakeMethod::Relative;
        a.clock = rtscope_core::named::MeasureClock::Realtime;
        a.load_cpus = Some(vec![0]);
        let c = cell_options(&base_options(&a).unwrap(), 500_000, None, None);
        assert_eq!(c.run.rt, a.rt);
        assert_eq!((c.wake, c.clock), (a.wake, a.clock));
        assert_eq!(c.run.load_cpus, Some(vec![0]));
        assert!(c.run.loads.is_empty());
    }
}
