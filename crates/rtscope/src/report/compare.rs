//! `rtscope compare A.json B.json [C.json ...]`: runs side by side, series
//! matched by label (or paired with `--match`), each run's figures with the
//! ratio to the first run (the baseline), and a verdict per series that
//! claims a difference only where the 95 % confidence intervals of a
//! percentile do not overlap (see [`super::stats`] for the method).
//!
//! Directories are compared cell by cell: every result document found under
//! the first directory is paired with the file of the same relative path
//! under the others (the layout a matrix run writes).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rtscope_core::result::{write_atomic, Series};

use super::html::{self, doc_unit, has_percentiles, in_unit};
use super::verdict::{self, pct_plain, Call, Effect, Method, Settings};
use super::{run_names, Run};
use crate::error::{usage, EXIT_OK, EXIT_THRESHOLD};
use crate::limits::MAX_JSON_BYTES;
use crate::output::printable;
use crate::output::summary::render;

/// The percentiles a verdict is drawn from.
pub const VERDICT_QUANTILES: [(f64, &str); 3] = [(0.5, "p50"), (0.99, "p99"), (0.999, "p99.9")];

/// Series of each run that are compared with each other.
#[derive(Debug, Clone)]
pub struct Matched {
    /// The label shown (the common label, or `a = b` for explicit pairs).
    pub label: String,
    /// Index of the series in each run's document.
    pub index: Vec<usize>,
}

/// Pairs series across runs: by `--match A=B[=C...]` when given, otherwise
/// every label that all runs share (in the first run's order). Returns the
/// matches and notes about series left out.
pub fn match_series(runs: &[Run], explicit: &[String]) -> Result<(Vec<Matched>, Vec<String>)> {
    let mut notes = Vec::new();
    // Label -> index of its first series, per run: look-ups stay linear in
    // the number of series (a 3000-thread run against another).
    let by_label: Vec<HashMap<&str, usize>> = runs
        .iter()
        .map(|r| {
            let mut m = HashMap::with_capacity(r.doc.series.len());
            for (i, s) in r.doc.series.iter().enumerate() {
                m.entry(s.label.as_str()).or_insert(i);
            }
            m
        })
        .collect();
    if !explicit.is_empty() {
        let mut out = Vec::new();
        for m in explicit {
            let parts: Vec<&str> = m.split('=').map(str::trim).collect();
            if parts.len() != runs.len() {
                return Err(usage(format!(
                    "--match '{}': give one series label per run ({} runs), separated by '='",
                    printable(m),
                    runs.len()
                )));
            }
            let mut index = Vec::new();
            for ((r, label), labels) in runs.iter().zip(&parts).zip(&by_label) {
                let i = labels.get(label).copied().ok_or_else(|| {
                    usage(format!(
                        "--match '{}': {} has no series '{}' (it has: {})",
                        printable(m),
                        printable(&r.name),
                        printable(label),
                        printable(
                            &r.doc
                                .series
                                .iter()
                                .map(|s| s.label.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    ))
                })?;
                index.push(i);
            }
            let label = if parts.iter().all(|p| *p == parts[0]) {
                parts[0].to_string()
            } else {
                parts.join(" = ")
            };
            out.push(Matched { label, index });
        }
        return Ok((out, notes));
    }
    let mut out = Vec::new();
    for (i, s) in runs[0].doc.series.iter().enumerate() {
        let index: Vec<usize> = std::iter::once(Some(i))
            .chain(
                by_label[1..]
                    .iter()
                    .map(|m| m.get(s.label.as_str()).copied()),
            )
            .collect::<Option<_>>()
            .unwrap_or_default();
        if index.len() == runs.len() {
            out.push(Matched {
                label: s.label.clone(),
                index,
            });
        }
    }
    let matched: HashSet<&str> = out.iter().map(|m| m.label.as_str()).collect();
    for r in runs {
        let missing: Vec<&str> = r
            .doc
            .series
            .iter()
            .filter(|s| !matched.contains(s.label.as_str()))
            .map(|s| s.label.as_str())
            .collect();
        if !missing.is_empty() {
            notes.push(format!(
                "{}: series not in every run, left out: {} (pair them with --match)",
                r.name,
                missing.join(", ")
            ));
        }
    }
    if out.is_empty() && runs.iter().all(|r| r.doc.series.len() == 1) {
        notes.clear();
        notes.push("the runs' only series have different labels: compared with each other".into());
        out.push(Matched {
            label: runs
                .iter()
                .map(|r| r.doc.series[0].label.as_str())
                .collect::<Vec<_>>()
                .join(" = "),
            index: vec![0; runs.len()],
        });
    }
    Ok((out, notes))
}

/// The verdict for one run against the baseline, on one matched series.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// One per verdict percentile.
    pub effects: Vec<Effect>,
    /// The practical-effect threshold it was drawn with.
    pub min_effect: f64,
    /// Duration of the run (of each repetition, with `--repeat`), ns.
    pub duration_ns: u64,
}

impl Verdict {
    /// Whether any percentile is clearly worse.
    pub fn any_worse(&self) -> bool {
        self.effects.iter().any(|e| e.call == Call::Worse)
    }

    fn pick(&self, want: Call) -> Vec<String> {
        self.effects
            .iter()
            .filter(|e| e.call == want)
            .map(|e| {
                if matches!(want, Call::TooFewSamples | Call::NoDistribution) {
                    e.name.to_string()
                } else {
                    e.text()
                }
            })
            .collect()
    }

    /// One line: what differs (effect and 95 % interval) and what does not.
    pub fn text(&self, b: &str, a: &str) -> String {
        let (worse, better, same, unclear, few) = (
            self.pick(Call::Worse),
            self.pick(Call::Better),
            self.pick(Call::Same),
            self.pick(Call::Unclear),
            self.pick(Call::TooFewSamples),
        );
        let none = self.pick(Call::NoDistribution);
        let mut parts = Vec::new();
        match (worse.is_empty(), better.is_empty()) {
            (false, true) => parts.push(format!("{b} is worse than {a} at {}", worse.join(", "))),
            (true, false) => parts.push(format!("{b} is better than {a} at {}", better.join(", "))),
            (false, false) => parts.push(format!(
                "mixed: {b} is worse at {} and better at {}",
                worse.join(", "),
                better.join(", ")
            )),
            (true, true) => {}
        }
        if !unclear.is_empty() {
            parts.push(format!("no clear difference at {}", unclear.join(", ")));
        }
        if !same.is_empty() {
            parts.push(format!(
                "same within ±{} at {}",
                pct_plain(self.min_effect),
                same.join(", ")
            ));
        }
        if !few.is_empty() {
            parts.push(format!("too few samples to tell at {}", few.join(", ")));
        }
        if !none.is_empty() {
            parts.push(format!(
                "nothing to tell at {}: a run has no distribution (count, min, mean and max only: an import of cyclictest run without -h)",
                none.join(", ")
            ));
        }
        parts.join("; ")
    }

    /// Which method produced each interval: `block bootstrap, 50 blocks of 100ms (p50, p99)`.
    pub fn methods(&self) -> String {
        let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
        for e in &self.effects {
            let d = if e.call == Call::NoDistribution {
                "none: no distribution recorded".to_string()
            } else {
                e.method.describe()
            };
            match groups.iter_mut().find(|g| g.0 == d) {
                Some(g) => g.1.push(e.name),
                None => groups.push((d, vec![e.name])),
            }
        }
        groups
            .iter()
            .map(|(d, names)| format!("{d} ({})", names.join(", ")))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// What would resolve the unclear percentiles, one line each.
    pub fn advice(&self) -> Vec<String> {
        self.effects
            .iter()
            .filter_map(|e| e.advice.map(|a| (e, a)))
            .map(|(e, a)| {
                let f = a.factor;
                let more = match e.method {
                    Method::Repetitions { .. } if f > 50.0 => {
                        "more than 50x as many repetitions: this percentile varies too much between runs"
                            .to_string()
                    }
                    _ if f > 50.0 => "more than 50x the data: this percentile varies too much within a run; \
                                      compare repetitions (--repeat) instead"
                        .to_string(),
                    Method::Repetitions { a: na, b: nb } => format!(
                        "about {} repetitions per side (--repeat {})",
                        (na.max(nb) as f64 * f).ceil(),
                        (na.max(nb) as f64 * f).ceil()
                    ),
                    _ => {
                        let secs = self.duration_ns as f64 * f / 1e9;
                        let long = if secs >= 10.0 {
                            format!("{secs:.0}s")
                        } else {
                            format!("{secs:.1}s")
                        };
                        format!(
                            "runs about {f:.1}x as long ({long}), or --repeat {} of these (which also measures the spread between runs)",
                            (f - 1e-9).ceil().max(3.0)
                        )
                    }
                };
                format!(
                    "{}: to resolve a difference of ±{} would take {more}",
                    e.name,
                    pct_plain(a.difference)
                )
            })
            .collect()
    }

    /// `worse`, `better` or `same`: the CSS class of the verdict.
    pub fn class(&self) -> &'static str {
        let any = |d: Call| self.effects.iter().any(|e| e.call == d);
        match (any(Call::Worse), any(Call::Better)) {
            (true, _) => "worse",
            (false, true) => "better",
            _ => "same",
        }
    }
}

/// One matched series compared across runs: table rows and verdicts.
#[derive(Debug, Clone)]
pub struct SeriesComparison {
    pub label: String,
    /// `[metric, run0, run1, ratio1, run2, ratio2, ...]`
    pub rows: Vec<Vec<String>>,
    /// One per run after the first.
    pub verdicts: Vec<Verdict>,
    /// What the figures and verdicts are taken over.
    pub over: Over,
    /// The tail verdicts: exceedances of a threshold per hour
    /// ([`super::tail`]); `None` without a threshold.
    pub tail: Option<super::tail::TailComparison>,
}

/// What a comparison's figures are taken over.
#[derive(Debug, Clone, PartialEq)]
pub enum Over {
    /// The intended periods: every run has them, missed ones counted at
    /// their lateness (the default for periodic series).
    Periods,
    /// The wake-ups that came, because a run has no figures over its
    /// intended periods (a document of an older rtscope): the note says
    /// which, and what that leaves out.
    WakeUps(String),
    /// Series that are not periodic (and missed nothing): there is only
    /// the one kind of figure.
    Samples,
}

impl Over {
    /// What the table header adds after the unit.
    pub fn header(&self) -> &'static str {
        match self {
            Over::Periods => ", over intended periods",
            Over::WakeUps(_) => ", over the wake-ups",
            Over::Samples => "",
        }
    }
}

/// The matched series as they are compared: over their intended periods
/// when every run has those figures ([`Series::over_intended_periods`]),
/// else as they are, saying so when that leaves missed periods out or when
/// some runs had the figures.
pub fn compared_series(runs: &[Run], m: &Matched) -> (Vec<Series>, Over) {
    let series: Vec<&Series> = runs
        .iter()
        .zip(&m.index)
        .map(|(r, i)| &r.doc.series[*i])
        .collect();
    let views: Option<Vec<Series>> = series.iter().map(|s| s.over_intended_periods()).collect();
    if let Some(v) = views {
        return (v, Over::Periods);
    }
    let without: Vec<&str> = runs
        .iter()
        .zip(&series)
        .filter(|(_, s)| s.corrected.is_none())
        .map(|(r, _)| r.name.as_str())
        .collect();
    let missed: Vec<String> = runs
        .iter()
        .zip(&series)
        .filter(|(_, s)| s.counters.overruns > 0)
        .map(|(r, s)| format!("{} in {}", s.counters.overruns, r.name))
        .collect();
    let some_have = series.iter().any(|s| s.corrected.is_some());
    let plain: Vec<Series> = series.into_iter().cloned().collect();
    if missed.is_empty() && !some_have {
        return (plain, Over::Samples);
    }
    // Imports (cyclictest counts no missed periods) are not "older".
    let imported = runs
        .iter()
        .zip(&m.index)
        .filter(|(r, _)| r.doc.series.iter().all(|s| s.corrected.is_none()))
        .all(|(r, _)| r.doc.end_reason == rtscope_core::result::EndReason::Imported);
    let note = format!(
        "{}: compared over the wake-ups, as {} no figures over the intended periods \
         ({}){}",
        m.label,
        if without.len() == 1 {
            format!("{} has", without[0])
        } else {
            format!("{} have", without.join(", "))
        },
        if imported {
            "imported: cyclictest does not record missed periods"
        } else {
            "written by an older rtscope"
        },
        if missed.is_empty() {
            String::new()
        } else {
            format!(
                ": the missed periods ({}) are left out of the percentiles",
                missed.join(", ")
            )
        }
    );
    (plain, Over::WakeUps(note))
}

fn ratio(a: f64, b: f64) -> String {
    if a == 0.0 && b == 0.0 {
        "-".into()
    } else if a == 0.0 {
        "inf".into()
    } else {
        format!("{:.2}x", b / a)
    }
}

/// Compares the matched series of `runs` (the first run is the baseline).
pub fn compare_series(
    runs: &[Run],
    m: &Matched,
    unit: super::charts::Unit,
    settings: &Settings,
) -> SeriesComparison {
    let (series, over) = compared_series(runs, m);
    let mut header = vec![format!("{} ({}{})", m.label, unit.name, over.header())];
    for (i, r) in runs.iter().enumerate() {
        header.push(r.name.clone());
        if i > 0 {
            header.push(format!("{}/{}", r.name, runs[0].name));
        }
    }
    let mut rows = vec![header];
    type Getter = fn(&Series) -> Option<f64>;
    let metrics: [(&str, Getter, bool); 9] = [
        ("count", |s| Some(s.stats.count as f64), false),
        (
            "min",
            |s| (s.stats.count > 0).then_some(s.stats.min_ns as f64),
            true,
        ),
        (
            "mean",
            |s| s.stats.has_mean().then_some(s.stats.mean_ns),
            true,
        ),
        (
            "p50",
            |s| has_percentiles(s).then_some(s.stats.p50_ns as f64),
            true,
        ),
        (
            "p99",
            |s| has_percentiles(s).then_some(s.stats.p99_ns as f64),
            true,
        ),
        (
            "p99.9",
            |s| has_percentiles(s).then_some(s.stats.p99_9_ns as f64),
            true,
        ),
        (
            "max",
            |s| (s.stats.count > 0).then_some(s.stats.max_ns as f64),
            true,
        ),
        ("overruns", |s| Some(s.counters.overruns as f64), false),
        ("dropped", |s| Some(s.counters.dropped as f64), false),
    ];
    let verdicts: Vec<Verdict> = (1..runs.len())
        .map(|i| Verdict {
            effects: VERDICT_QUANTILES
                .iter()
                .map(|(q, n)| verdict::effect(&series[0], &series[i], n, *q, settings))
                .collect(),
            min_effect: settings.min_effect,
            duration_ns: runs[0].doc.duration_ns.max(runs[i].doc.duration_ns)
                / series[0].repetitions.len().max(1) as u64,
        })
        .collect();
    for (name, get, is_latency) in metrics {
        let vals: Vec<Option<f64>> = series.iter().map(get).collect();
        // Percentiles are recorded from 0 up: a 0 where the series has
        // negative values (early wakes) stands for "at or below 0", never
        // a 0.0 beside a maximum of -1000.
        let at_or_below_zero: Vec<bool> = series
            .iter()
            .zip(&vals)
            .map(|(s, v)| name.starts_with('p') && *v == Some(0.0) && s.stats.min_ns < 0)
            .collect();
        // Over the intended periods the count is theirs, missed ones included.
        let shown = match (name, &over) {
            ("count", Over::Periods) => "periods",
            _ => name,
        };
        let mut row = vec![shown.to_string()];
        for (i, v) in vals.iter().enumerate() {
            row.push(match v {
                _ if at_or_below_zero[i] => "≤0".into(),
                None => html::UNKNOWN.into(),
                Some(x) if is_latency => in_unit(*x, unit),
                Some(x) => format!("{x:.0}"),
            });
            if i > 0 {
                row.push(match (vals[0], v) {
                    _ if at_or_below_zero[0] || at_or_below_zero[i] => "-".into(),
                    (Some(a), Some(b)) => ratio(a, *b),
                    _ => "-".into(),
                });
            }
        }
        rows.push(row);
        if let Some(qi) = VERDICT_QUANTILES.iter().position(|(_, n)| *n == name) {
            let mut row = vec![format!("  {name} change")];
            for i in 0..runs.len() {
                row.push(String::new());
                if i > 0 {
                    let e = &verdicts[i - 1].effects[qi];
                    row.push(e.text().trim_start_matches(e.name).trim().to_string());
                }
            }
            rows.push(row);
        }
    }
    let names: Vec<String> = runs.iter().map(|r| r.name.clone()).collect();
    let durations: Vec<u64> = runs.iter().map(|r| r.doc.duration_ns).collect();
    SeriesComparison {
        label: m.label.clone(),
        rows,
        verdicts,
        tail: super::tail::compare(&names, &series, &durations, settings),
        over,
    }
}

/// A set of runs to compare: a whole comparison, or one cell of matrices.
pub struct Comparison {
    /// Empty for plain files; the relative path for a matrix cell.
    pub cell: String,
    pub runs: Vec<Run>,
    pub series: Vec<SeriesComparison>,
    pub notes: Vec<String>,
    pub matched: Vec<Matched>,
}

impl Comparison {
    /// Each series' label with its tail comparison (where it has one), and
    /// the runs' names, baseline first: what the tail section shows.
    pub fn tails(&self) -> (Vec<(&str, &super::tail::TailComparison)>, Vec<String>) {
        let tails = self
            .series
            .iter()
            .filter_map(|s| s.tail.as_ref().map(|t| (s.label.as_str(), t)))
            .collect();
        (tails, self.runs.iter().map(|r| r.name.clone()).collect())
    }
}

/// Builds the comparison of `runs` with the default settings.
#[cfg(test)]
pub fn build(cell: String, runs: Vec<Run>, explicit: &[String]) -> Result<Comparison> {
    build_with(cell, runs, explicit, &Settings::default())
}

/// Builds the comparison of `runs` with these verdict settings.
pub fn build_with(
    cell: String,
    runs: Vec<Run>,
    explicit: &[String],
    settings: &Settings,
) -> Result<Comparison> {
    let (matched, notes) = match_series(&runs, explicit)?;
    let docs: Vec<_> = runs.iter().map(|r| r.doc.clone()).collect();
    let unit = doc_unit(&docs);
    let series: Vec<SeriesComparison> = matched
        .iter()
        .map(|m| compare_series(&runs, m, unit, settings))
        .collect();
    let mut notes = notes;
    notes.extend(series.iter().filter_map(|s| match &s.over {
        Over::WakeUps(note) => Some(note.clone()),
        _ => None,
    }));
    notes.extend(super::hwlat::upper_bound_note(&runs));
    Ok(Comparison {
        cell,
        runs,
        series,
        notes,
        matched,
    })
}

/// Plan keys that name outputs, not the measured conditions.
pub const OUTPUT_KEYS: &[&str] = &[
    "json",
    "raw",
    "histogram",
    "report",
    "checkpoint_ns",
    "quiet",
    "out",
    "outputs",
    "resume",
    // Where an import came from (cyclictest's version, its command line).
    "imported",
    // hwlat: what the run found and did (tracefs, SMI counts), not a setting.
    "session",
];

/// Settings under which runs are not like for like: a verdict between them
/// compares different conditions, not one change.
const CONDITION_KEYS: &[&str] = &[
    "period_ns",
    "wake",
    "rt.policy",
    "rt.priority",
    "policy",
    "priority",
    "loads",
    "method_used",
];

/// The plan settings that differ between the runs (a header row with the run
/// names, then one row per setting), and a warning when the experiment or a
/// condition ([`CONDITION_KEYS`]) differs.
pub fn plan_differences(runs: &[Run]) -> (Vec<Vec<String>>, Vec<String>) {
    let plans: Vec<std::collections::BTreeMap<String, String>> = runs
        .iter()
        .map(|r| html::plan_rows(&r.doc.plan).into_iter().collect())
        .collect();
    let mut keys: Vec<&String> = plans.iter().flat_map(|p| p.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut rows = vec![std::iter::once("setting".to_string())
        .chain(runs.iter().map(|r| r.name.clone()))
        .collect::<Vec<_>>()];
    let mut unlike = Vec::new();
    if runs
        .iter()
        .any(|r| r.doc.experiment != runs[0].doc.experiment)
    {
        unlike.push("experiment".to_string());
    }
    for k in keys {
        let root = k.split(['.', '[']).next().unwrap_or(k);
        if OUTPUT_KEYS.contains(&root) {
            continue;
        }
        let vals: Vec<String> = plans
            .iter()
            .map(|p| {
                p.get(k)
                    .cloned()
                    .unwrap_or_else(|| html::UNKNOWN.to_string())
            })
            .collect();
        if vals.iter().all(|v| *v == vals[0]) {
            continue;
        }
        let cond = CONDITION_KEYS
            .iter()
            .any(|c| k == c || (*c == "loads" && root == "loads"));
        if cond && !unlike.contains(&root.to_string()) {
            unlike.push(if root == "rt" {
                k.clone()
            } else {
                root.to_string()
            });
        }
        rows.push(std::iter::once(k.clone()).chain(vals).collect());
    }
    let warnings = if unlike.is_empty() {
        vec![]
    } else {
        vec![format!(
            "the runs differ in {}: the verdicts compare unlike conditions, not one change",
            unlike.join(", ")
        )]
    };
    (if rows.len() > 1 { rows } else { vec![] }, warnings)
}

/// The terminal text of a comparison. Every string that comes from a
/// document or a file name goes through [`printable`]: a result document
/// cannot send escape sequences to the terminal.
pub fn text(c: &Comparison) -> String {
    let mut out = String::new();
    if !c.cell.is_empty() {
        let _ = writeln!(out, "== {} ==", printable(&c.cell));
    }
    for (i, r) in c.runs.iter().enumerate() {
        let s = &r.doc.system;
        let _ = writeln!(
            out,
            "{} {}: {} on {}, kernel {} ({}), {}, {}",
            if i == 0 { "baseline" } else { "run" },
            printable(&r.name),
            printable(&r.doc.experiment),
            printable(s.hostname.as_deref().unwrap_or("unknown host")),
            printable(if s.kernel_release.is_empty() {
                "unknown"
            } else {
                &s.kernel_release
            }),
            printable(&s.preemption_model),
            printable(if r.doc.started_at.is_empty() {
                "unknown time"
            } else {
                &r.doc.started_at
            }),
            html::duration_text(&r.doc)
        );
    }
    let (diff, warnings) = plan_differences(&c.runs);
    if !diff.is_empty() {
        out.push_str("plan differences:\n");
        let rows: Vec<Vec<String>> = diff
            .iter()
            .map(|r| r.iter().map(|c| printable(c).into_owned()).collect())
            .collect();
        for line in render(&rows).lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    for w in &warnings {
        let _ = writeln!(out, "warning: {}", printable(w));
    }
    for r in &c.runs {
        for w in crate::load::shortfall::in_comparison(&r.name, &r.doc.loads) {
            let _ = writeln!(out, "warning: {}", printable(&w));
        }
    }
    for n in &c.notes {
        let _ = writeln!(out, "note: {}", printable(n));
    }
    if c.series.is_empty() {
        out.push_str("no series to compare\n");
    }
    out.push_str(&super::compare_causes::text(&c.runs));
    for s in &c.series {
        out.push('\n');
        let rows: Vec<Vec<String>> = s
            .rows
            .iter()
            .map(|r| r.iter().map(|c| printable(c).into_owned()).collect())
            .collect();
        out.push_str(&render(&rows));
        for (i, v) in s.verdicts.iter().enumerate() {
            let _ = writeln!(
                out,
                "verdict: {}",
                printable(&v.text(&c.runs[i + 1].name, &c.runs[0].name))
            );
            let _ = writeln!(out, "  interval: {}", v.methods());
            for a in v.advice() {
                let _ = writeln!(out, "  advice: {a}");
            }
        }
        if let Some(t) = &s.tail {
            let names: Vec<String> = c.runs.iter().map(|r| r.name.clone()).collect();
            out.push_str(&super::tail::text(t, &names));
        }
    }
    out
}

/// Collects the comparisons: files compared as they are, directories cell by cell.
/// With `redact`, the runs are redacted together ([`super::redact::runs`])
/// before they are compared, so no note or name carries what they hide.
pub fn collect(
    paths: &[PathBuf],
    explicit: &[String],
    settings: &Settings,
    redact: bool,
) -> Result<Vec<Comparison>> {
    // One redactor for every cell: a host is `(host 2)` in all of them.
    let redactor = std::cell::RefCell::new(super::redact::Redactor::default());
    let build = |cell: String, mut runs: Vec<Run>| {
        let cell = if redact {
            let r = redactor.borrow();
            super::redact::redact_with(&r, &mut runs);
            r.identity(&cell)
        } else {
            cell
        };
        build_with(cell, runs, explicit, settings)
    };
    let dirs = paths.iter().filter(|p| p.is_dir()).count();
    if dirs == 0 {
        let runs = super::load_runs(paths, run_names(paths), redact)?;
        super::redact::learn_runs(&mut redactor.borrow_mut(), &runs);
        return Ok(vec![build(String::new(), runs)?]);
    }
    if dirs != paths.len() {
        return Err(usage(
            "compare either result files or matrix directories, not both",
        ));
    }
    let names = run_names(paths);
    let cells: Vec<BTreeSet<PathBuf>> =
        paths.iter().map(|d| json_files(d)).collect::<Result<_>>()?;
    let common: Vec<&PathBuf> = cells[0]
        .iter()
        .filter(|c| cells[1..].iter().all(|o| o.contains(*c)))
        .collect();
    if common.is_empty() {
        return Err(usage(format!(
            "{}: no result file of the same name in every directory",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut loaded = Vec::new();
    for cell in &common {
        let cell_paths: Vec<PathBuf> = paths.iter().map(|d| d.join(cell)).collect();
        let runs = super::load_runs(&cell_paths, names.clone(), redact)?;
        super::redact::learn_runs(&mut redactor.borrow_mut(), &runs);
        loaded.push((cell.display().to_string(), runs));
    }
    let mut out = Vec::new();
    for (cell, runs) in loaded {
        out.push(build(cell, runs)?);
    }
    let total: usize = cells.iter().map(|c| c.len()).sum();
    let used = out.len() * paths.len();
    if total != used {
        if let Some(first) = out.first_mut() {
            first.notes.push(format!(
                "{} result files are not in every directory and were left out",
                total - used
            ));
        }
    }
    Ok(out)
}

/// Result documents under `dir` (recursively), as paths relative to it.
/// Files that are not result documents are skipped.
fn json_files(dir: &Path) -> Result<BTreeSet<PathBuf>> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let rd = std::fs::read_dir(&d).map_err(|e| usage(format!("{}: {e}", d.display())))?;
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "json") && looks_like_result(&p) {
                if let Ok(rel) = p.strip_prefix(dir) {
                    out.insert(rel.to_path_buf());
                }
            }
        }
    }
    Ok(out)
}

fn looks_like_result(p: &Path) -> bool {
    // Larger than a result document can be: not one (and not read into memory).
    if std::fs::metadata(p).map_or(true, |m| !m.is_file() || m.len() > MAX_JSON_BYTES) {
        return false;
    }
    std::fs::read(p)
        .ok()
        .and_then(|b| {
            let b = b.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&b);
            serde_json::from_slice::<serde_json::Value>(b).ok()
        })
        .is_some_and(|v| v.get("schema_version").is_some() && v.get("series").is_some())
}

pub use super::compare_page::html_page;

/// The rule and the methods, as printed under every comparison.
pub fn method_note(min_effect: f64) -> String {
    let d = pct_plain(min_effect);
    format!(
        "change = run / baseline - 1 at each percentile, with its 95% interval; a run is called worse (better) \
         only where the whole interval lies above +{d} (below -{d}, i.e. 1/(1+{d})), \"same within ±{d}\" where it lies \
         wholly inside, \"no clear difference\" otherwise (--min-effect sets {d}). Intervals come from the spread \
         between repetitions (--repeat), else from a block bootstrap over the run's time blocks, else from order \
         statistics with independence assumed (documents without blocks: older files, imports), which are too narrow. \
         A single run per side does not measure the variation between runs: run --repeat N to be sure."
    )
}

/// What `rtscope compare` compares and how.
#[derive(Debug, Clone, Default)]
pub struct CompareOptions {
    /// Result documents or matrix directories; the first is the baseline.
    pub files: Vec<PathBuf>,
    /// Series paired explicitly, `LABEL=LABEL`.
    pub matches: Vec<String>,
    /// The HTML page, if wanted.
    pub html: Option<PathBuf>,
    /// Exit 3 when a run is clearly worse.
    pub fail_if_worse: bool,
    /// Smallest change that counts, as a fraction.
    pub min_effect: f64,
    /// The tail verdicts' threshold, ns (default: the baseline's p99.9).
    pub tail_threshold: Option<u64>,
    /// Leave out what identifies the machine.
    pub redact: bool,
}

/// `rtscope compare`.
pub fn run(a: CompareOptions) -> Result<i32> {
    if let Some(p) = &a.html {
        let inputs: Vec<&Path> = a.files.iter().map(PathBuf::as_path).collect();
        super::refuse_output_onto_input("--html", p, &inputs)?;
        crate::output::files::check_output("--html", p)?;
    }
    let settings = Settings {
        min_effect: a.min_effect,
        tail_threshold_ns: a.tail_threshold,
        ..Settings::default()
    };
    let cs = collect(&a.files, &a.matches, &settings, a.redact)?;
    // Nothing in common is not a comparison: say so, and do not pass it as
    // "not worse" either.
    if let Some(c) = cs.iter().find(|c| c.series.is_empty()) {
        // Runs of different experiments measure different things: say so
        // rather than invite pairing their series.
        let other = c
            .runs
            .iter()
            .find(|r| r.doc.experiment != c.runs[0].doc.experiment);
        let msg = if let Some(o) = other {
            format!(
                "{} is a {} run, {} a {} run: they measure different things (compare runs of one experiment)",
                printable(&c.runs[0].name),
                c.runs[0].doc.experiment,
                printable(&o.name),
                o.doc.experiment
            )
        } else {
            format!(
                "{}{}: no series in common (labels differ); pair series with --match A=B",
                if c.cell.is_empty() {
                    String::new()
                } else {
                    format!("{}: ", printable(&c.cell))
                },
                c.runs
                    .iter()
                    .map(|r| printable(&r.name).into_owned())
                    .collect::<Vec<_>>()
                    .join(" and ")
            )
        };
        if a.fail_if_worse {
            eprintln!("error: {msg}");
            return Ok(EXIT_THRESHOLD);
        }
        return Err(usage(msg));
    }
    for (i, c) in cs.iter().enumerate() {
        if i > 0 {
            crate::output::outln!();
        }
        crate::output::out!("{}", text(c));
    }
    crate::output::outln!("\nmethod: {}", method_note(settings.min_effect));
    if let Some(p) = &a.html {
        write_atomic(p, html_page(&cs).as_bytes())
            .with_context(|| format!("--html {}", p.display()))?;
        crate::output::outln!("report: {}", p.display());
    }
    let worse = cs
        .iter()
        .flat_map(|c| &c.series)
        .flat_map(|s| &s.verdicts)
        .any(Verdict::any_worse);
    if a.fail_if_worse && worse {
        eprintln!("fail: a run is worse than the baseline (--fail-if-worse)");
        return Ok(EXIT_THRESHOLD);
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::record::SeriesRecorder;
    use rtscope_core::result::ResultDocument;
    use rtscope_core::sample::Sample;

    /// A 15 s run of one thread at 1 ms: wake-ups `base_ns` late (with a
    /// little jitter), and `stalls` stalls of 2.5 s, each a wake-up that
    /// skipped 2500 periods.
    #[test]
    fn percentiles_of_early_wakes_are_not_shown_as_zero() {
        // Issue 36: a timer run whose wakes all came early (-3 us to
        // -1 us) showed p50 and p99 0.0 beside a max of -1.0.
        let early = |name: &str| {
            let mut rec = SeriesRecorder::new(0, 8, None);
            for i in 0..2000u64 {
                rec.record(&Sample {
                    seq: i,
                    t_ns: (i + 1) * 1_000_000,
                    latency_ns: -1_000 - (i % 3) as i64 * 1_000,
                    overruns: 0,
                    cpu: 0,
                });
            }
            let mut doc = ResultDocument::new(
                "timer",
                serde_json::json!({}),
                Default::default(),
                vec![rec.to_series("all", 0)],
            );
            doc.duration_ns = 2_000_000_000;
            Run {
                name: name.into(),
                path: PathBuf::new(),
                doc,
            }
        };
        let c = build(String::new(), vec![early("a"), early("b")], &[]).unwrap();
        let rows = &c.series[0].rows;
        let row = |n: &str| rows.iter().find(|r| r[0] == n).unwrap().clone();
        assert_eq!(row("p50")[1..], ["≤0", "≤0", "-"]);
        assert_eq!(row("p99")[1..], ["≤0", "≤0", "-"]);
        assert_eq!(row("max")[1], "-1000");
    }

    fn run_of(name: &str, base_ns: i64, stalls: u64) -> Run {
        let period = 1_000_000u64;
        let mut rec = SeriesRecorder::new(0, 8, None).over_intended_periods(period);
        let (mut due, mut seq, mut x) = (period, 0u64, 7u64);
        let mut stalled = 0;
        while due < 15_000_000_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mut lat = base_ns + ((x >> 33) % 2_000) as i64;
            let mut skipped = 0;
            // A stall at 4 s and at 9 s.
            if stalled < stalls && due >= 4_000_000_000 + stalled * 5_000_000_000 {
                lat = 2_500_000_000;
                skipped = 2_500;
                stalled += 1;
            }
            rec.record(&Sample {
                seq,
                t_ns: due + lat as u64,
                latency_ns: lat,
                overruns: skipped,
                cpu: 0,
            });
            seq += 1;
            due += (u64::from(skipped) + 1) * period;
        }
        let mut doc = ResultDocument::new(
            "cyclic",
            serde_json::json!({"period_ns": period}),
            Default::default(),
            vec![rec.to_series("thread 1", 0)],
        );
        doc.duration_ns = 15_000_000_000;
        Run {
            name: name.into(),
            path: PathBuf::new(),
            doc,
        }
    }

    /// `rtscope compare` hands its options to the comparison: the tail
    /// threshold and the smallest change that counts reach the page.
    #[test]
    fn run_passes_its_settings_on() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<PathBuf> = [("a", 15_000), ("b", 12_000)]
            .iter()
            .map(|(name, base)| {
                let p = dir.path().join(format!("{name}.json"));
                std::fs::write(&p, run_of(name, *base, 0).doc.to_json()).unwrap();
                p
            })
            .collect();
        let page = dir.path().join("c.html");
        let code = run(CompareOptions {
            files,
            html: Some(page.clone()),
            min_effect: 0.2,
            tail_threshold: Some(16_000),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(code, EXIT_OK);
        let h = std::fs::read_to_string(&page).unwrap();
        assert!(h.contains("above 16us (--tail-threshold)</h4>"), "{h}");
        assert!(h.contains("lies above +20% (below -20%"), "{h}");
    }

    fn without_corrected(mut r: Run) -> Run {
        for s in &mut r.doc.series {
            s.corrected = None;
        }
        r
    }

    /// The issue's pair: r2 wakes a little earlier but lost 5000 periods in
    /// two stalls. Over the wake-ups it reads better; over the intended
    /// periods (the default) it is worse, and the table says which it shows.
    #[test]
    fn a_run_that_lost_periods_is_not_called_better() {
        let runs = || vec![run_of("r", 15_000, 0), run_of("r2", 12_000, 2)];
        let c = build(String::new(), runs(), &[]).unwrap();
        let s = &c.series[0];
        assert_eq!(s.over, Over::Periods);
        assert_eq!(s.rows[0][0], "thread 1 (µs, over intended periods)");
        assert_eq!(s.rows[1][..3], ["periods", "14999", "14999"]);
        let v = &s.verdicts[0];
        assert!(v.any_worse(), "{}", v.text("r2", "r"));
        assert!(
            v.text("r2", "r").starts_with("r2 is worse than r at"),
            "{}",
            v.text("r2", "r")
        );
        assert!(c.notes.is_empty(), "{:?}", c.notes);
        let page = html_page(&[c]);
        assert!(page.contains("Percentiles (over intended periods): thread 1"));
        assert!(page.contains("Latency over time: thread 1"));
        // Over the wake-ups alone (what it said before): better.
        let runs: Vec<Run> = runs().into_iter().map(without_corrected).collect();
        let c = build(String::new(), runs, &[]).unwrap();
        let s = &c.series[0];
        assert!(matches!(s.over, Over::WakeUps(_)));
        assert_eq!(s.rows[0][0], "thread 1 (µs, over the wake-ups)");
        assert_eq!(s.rows[1][..3], ["count", "14999", "9999"]);
        assert!(
            !s.verdicts[0].any_worse(),
            "{}",
            s.verdicts[0].text("r2", "r")
        );
        assert!(s.verdicts[0]
            .text("r2", "r")
            .starts_with("r2 is better than r"));
    }

    /// An older document without the figures: compared over the wake-ups,
    /// and a note names it and what is left out. Series that are not
    /// periodic and missed nothing compare as they are, without a note.
    #[test]
    fn documents_without_the_figures_fall_back_and_say_so() {
        let runs = vec![
            run_of("r", 15_000, 0),
            without_corrected(run_of("old", 12_000, 2)),
        ];
        let c = build(String::new(), runs, &[]).unwrap();
        let want = "thread 1: compared over the wake-ups, as old has no figures over the \
                    intended periods (written by an older rtscope): the missed periods \
                    (5000 in old) are left out of the percentiles";
        assert_eq!(c.series[0].over, Over::WakeUps(want.into()));
        assert_eq!(c.notes, [want]);
        assert!(text(&c).contains(&format!("note: {want}\n")));
        let runs = vec![
            without_corrected(run_of("a", 15_000, 0)),
            without_corrected(run_of("b", 12_000, 2)),
        ];
        let c = build(String::new(), runs, &[]).unwrap();
        let Over::WakeUps(note) = &c.series[0].over else {
            panic!("{:?}", c.series[0].over)
        };
        assert!(note.contains("as a, b have no figures"), "{note}");
        assert!(
            note.ends_with(": the missed periods (5000 in b) are left out of the percentiles"),
            "{note}"
        );
        // Neither has them, nothing missed: plain samples.
        let runs = vec![
            without_corrected(run_of("a", 15_000, 0)),
            without_corrected(run_of("b", 12_000, 0)),
        ];
        let c = build(String::new(), runs, &[]).unwrap();
        assert_eq!(c.series[0].over, Over::Samples);
        assert_eq!(c.series[0].rows[0][0], "thread 1 (µs)");
        assert!(c.notes.is_empty());
        // One has them, nothing missed anywhere: still said.
        let runs = vec![
            run_of("a", 15_000, 0),
            without_corrected(run_of("b", 12_000, 0)),
        ];
        let c = build(String::new(), runs, &[]).unwrap();
        let Over::WakeUps(note) = &c.series[0].over else {
            panic!("{:?}", c.series[0].over)
        };
        assert!(note.ends_with("(written by an older rtscope)"), "{note}");
    }
}
