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

use super::charts::{self, Plotted};
use super::html::{self, doc_unit, has_percentiles, in_unit, system_rows, warnings_list};
use super::stats::{difference, Difference, QuantileCi, RankedHistogram, METHOD};
use super::svg::color;
use super::{esc, load, run_names, Run};
use crate::cli::CompareArgs;
use crate::error::{usage, EXIT_OK, EXIT_THRESHOLD};
use crate::import::MAX_JSON_BYTES;
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
    /// Per verdict quantile: the difference found.
    pub per_quantile: Vec<(&'static str, Difference)>,
    /// Per verdict quantile: the run's value over the baseline's, where both are known.
    pub ratios: Vec<Option<f64>>,
}

impl Verdict {
    /// Whether any percentile is clearly worse.
    pub fn any_worse(&self) -> bool {
        self.per_quantile
            .iter()
            .any(|(_, d)| *d == Difference::Worse)
    }

    /// One line: what differs and what does not.
    pub fn text(&self, b: &str, a: &str) -> String {
        let pick = |want: Difference| -> Vec<String> {
            self.per_quantile
                .iter()
                .zip(&self.ratios)
                .filter(|((_, d), _)| *d == want)
                .map(|((n, d), r)| match (d, r) {
                    (Difference::Worse | Difference::Better, Some(r)) => {
                        format!("{n} ({:+.0}%)", (r - 1.0) * 100.0)
                    }
                    _ => n.to_string(),
                })
                .collect()
        };
        let (worse, better, same, few) = (
            pick(Difference::Worse),
            pick(Difference::Better),
            pick(Difference::Unclear),
            pick(Difference::TooFewSamples),
        );
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
        if !same.is_empty() {
            if parts.is_empty() {
                parts.push(format!("no clear difference ({})", same.join(", ")));
            } else {
                parts.push(format!("no clear difference at {}", same.join(", ")));
            }
        }
        if !few.is_empty() {
            parts.push(format!("too few samples to tell at {}", few.join(", ")));
        }
        parts.join("; ")
    }

    /// `worse`, `better` or `same`: the CSS class of the verdict.
    pub fn class(&self) -> &'static str {
        let any = |d: Difference| self.per_quantile.iter().any(|(_, x)| *x == d);
        match (any(Difference::Worse), any(Difference::Better)) {
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

fn ci_text(ci: &QuantileCi, unit: super::charts::Unit) -> String {
    let f = |v: Option<u64>, open: &str| v.map_or(open.to_string(), |x| in_unit(x as f64, unit));
    format!("[{}, {}]", f(ci.lo_ns, "?"), f(ci.hi_ns, "?"))
}

/// Compares the matched series of `runs` (the first run is the baseline).
pub fn compare_series(runs: &[Run], m: &Matched, unit: super::charts::Unit) -> SeriesComparison {
    let series: Vec<&Series> = runs
        .iter()
        .zip(&m.index)
        .map(|(r, i)| &r.doc.series[*i])
        .collect();
    let ranked: Vec<RankedHistogram> = series.iter().map(|s| RankedHistogram::new(s)).collect();
    let mut header = vec![format!("{} ({})", m.label, unit.name)];
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
            |s| (s.stats.count > 0).then_some(s.stats.mean_ns),
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
    let cis: Vec<Vec<QuantileCi>> = ranked
        .iter()
        .map(|h| {
            VERDICT_QUANTILES
                .iter()
                .map(|(q, _)| h.quantile_ci(*q))
                .collect()
        })
        .collect();
    for (name, get, is_latency) in metrics {
        let vals: Vec<Option<f64>> = series.iter().map(|s| get(s)).collect();
        let mut row = vec![name.to_string()];
        for (i, v) in vals.iter().enumerate() {
            row.push(match v {
                None => "-".into(),
                Some(x) if is_latency => in_unit(*x, unit),
                Some(x) => format!("{x:.0}"),
            });
            if i > 0 {
                row.push(match (vals[0], v) {
                    (Some(a), Some(b)) => ratio(a, *b),
                    _ => "-".into(),
                });
            }
        }
        rows.push(row);
        if let Some(qi) = VERDICT_QUANTILES.iter().position(|(_, n)| *n == name) {
            let mut row = vec![format!("  {name} 95% CI")];
            for (i, c) in cis.iter().enumerate() {
                row.push(if has_percentiles(series[i]) {
                    ci_text(&c[qi], unit)
                } else {
                    "-".into()
                });
                if i > 0 {
                    row.push(String::new());
                }
            }
            rows.push(row);
        }
    }
    let point = |s: &Series, q: f64| -> Option<f64> {
        let v = match q {
            0.5 => s.stats.p50_ns,
            0.99 => s.stats.p99_ns,
            _ => s.stats.p99_9_ns,
        };
        has_percentiles(s).then_some(v as f64)
    };
    let verdicts = (1..runs.len())
        .map(|i| Verdict {
            per_quantile: VERDICT_QUANTILES
                .iter()
                .enumerate()
                .map(|(qi, (_, n))| (*n, difference(&cis[0][qi], &cis[i][qi])))
                .collect(),
            ratios: VERDICT_QUANTILES
                .iter()
                .map(
                    |(q, _)| match (point(series[0], *q), point(series[i], *q)) {
                        (Some(a), Some(b)) if a > 0.0 => Some(b / a),
                        _ => None,
                    },
                )
                .collect(),
        })
        .collect();
    SeriesComparison {
        label: m.label.clone(),
        rows,
        verdicts,
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

/// Builds the comparison of `runs`.
pub fn build(cell: String, runs: Vec<Run>, explicit: &[String]) -> Result<Comparison> {
    let (matched, notes) = match_series(&runs, explicit)?;
    let docs: Vec<_> = runs.iter().map(|r| r.doc.clone()).collect();
    let unit = doc_unit(&docs);
    let series = matched
        .iter()
        .map(|m| compare_series(&runs, m, unit))
        .collect();
    Ok(Comparison {
        cell,
        runs,
        series,
        notes,
        matched,
    })
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
    for n in &c.notes {
        let _ = writeln!(out, "note: {}", printable(n));
    }
    if c.series.is_empty() {
        out.push_str("no series to compare\n");
    }
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
        }
    }
    out
}

/// Collects the comparisons: files compared as they are, directories cell by cell.
pub fn collect(paths: &[PathBuf], explicit: &[String]) -> Result<Vec<Comparison>> {
    let dirs = paths.iter().filter(|p| p.is_dir()).count();
    if dirs == 0 {
        let names = run_names(paths);
        let mut runs = Vec::new();
        for (p, name) in paths.iter().zip(names) {
            runs.push(Run {
                name,
                path: p.clone(),
                doc: load(p)?,
            });
        }
        return Ok(vec![build(String::new(), runs, explicit)?]);
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
    let mut out = Vec::new();
    for cell in common {
        let mut runs = Vec::new();
        for (d, name) in paths.iter().zip(&names) {
            let p = d.join(cell);
            runs.push(Run {
                name: name.clone(),
                doc: load(&p)?,
                path: p,
            });
        }
        out.push(build(cell.display().to_string(), runs, explicit)?);
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

/// The HTML page of comparisons.
pub fn html_page(cs: &[Comparison]) -> String {
    let mut b = String::new();
    let title = match cs.first() {
        Some(c) => format!(
            "rtscope comparison: {}",
            c.runs
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>()
                .join(" vs ")
        ),
        None => "rtscope comparison".into(),
    };
    let _ = writeln!(b, "<h1>{}</h1>", esc(&title));
    let _ = writeln!(
        b,
        "<p class=\"sub\">The first run is the baseline; ratios are run / baseline. A verdict claims a \
         difference only where the {} do not overlap; samples of one run are not fully independent, so \
         treat a verdict as \"larger than this run's sampling noise\".</p>",
        esc(METHOD)
    );
    if let Some(c) = cs.first() {
        b.push_str(&runs_table(&c.runs));
        b.push_str(&system_diff(&c.runs));
    }
    for c in cs {
        if !c.cell.is_empty() {
            let _ = writeln!(b, "<h2>{}</h2>", esc(&c.cell));
        }
        for r in &c.runs {
            let w = html::doc_warnings(&r.doc);
            if !w.is_empty() {
                let _ = writeln!(b, "<p class=\"sub\">Warnings for {}:</p>", esc(&r.name));
                b.push_str(&warnings_list(&w));
            }
        }
        for n in &c.notes {
            let _ = writeln!(b, "<p class=\"sub\">Note: {}</p>", esc(n));
        }
        for (s, m) in c.series.iter().zip(&c.matched) {
            let _ = writeln!(b, "<h3>{}</h3>", esc(&s.label));
            b.push_str(&rows_table(&s.rows));
            for (i, v) in s.verdicts.iter().enumerate() {
                let _ = writeln!(
                    b,
                    "<p class=\"verdict {}\">{}</p>",
                    v.class(),
                    esc(&v.text(&c.runs[i + 1].name, &c.runs[0].name))
                );
            }
            let plotted: Vec<Plotted> = c
                .runs
                .iter()
                .zip(&m.index)
                .enumerate()
                .map(|(i, (r, si))| Plotted {
                    label: r.name.clone(),
                    color: color(i),
                    series: &r.doc.series[*si],
                    start_clock_ns: r.doc.start_clock_ns,
                })
                .collect();
            let t = |k: &str| format!("{k}: {}", s.label);
            for chart in [
                charts::histogram(&t("Histogram"), &plotted, &plotted, 1160, 360),
                charts::percentiles(&t("Percentiles"), &plotted, &plotted, 1160, 360),
                charts::timeline(&t("Latency over time"), &plotted, &plotted, 1160, 300),
            ] {
                b.push_str(&html::render_or_note(&chart));
            }
        }
    }
    html::page(&title, &b)
}

fn rows_table(rows: &[Vec<String>]) -> String {
    let mut s = String::from("<table class=\"compare\">\n");
    for (i, r) in rows.iter().enumerate() {
        s.push_str("<tr>");
        for (j, cell) in r.iter().enumerate() {
            let tag = if i == 0 { "th" } else { "td" };
            let class = if j == 0 { " class=\"l\"" } else { "" };
            let _ = write!(s, "<{tag}{class}>{}</{tag}>", esc(cell));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
    s
}

fn runs_table(runs: &[Run]) -> String {
    let mut rows = vec![vec![
        "run".to_string(),
        "file".into(),
        "experiment".into(),
        "started".into(),
        "duration".into(),
        "command line".into(),
    ]];
    for r in runs {
        rows.push(vec![
            r.name.clone(),
            r.path.display().to_string(),
            r.doc.experiment.clone(),
            r.doc.started_at.clone(),
            rtscope_core::units::format_ns(r.doc.duration_ns),
            super::shell_join(&r.doc.command_line),
        ]);
    }
    let mut s = String::from("<h3>Runs</h3>\n<table class=\"runs\">\n");
    for (i, r) in rows.iter().enumerate() {
        s.push_str("<tr>");
        for (j, cell) in r.iter().enumerate() {
            let tag = if i == 0 { "th" } else { "td" };
            let style = if i > 0 && j == 0 {
                format!(" class=\"l\" style=\"color:{}\"", color(i - 1))
            } else {
                " class=\"l\"".to_string()
            };
            let _ = write!(s, "<{tag}{style}>{}</{tag}>", esc(cell));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
    s
}

/// The runs' system snapshots side by side, rows that differ highlighted.
fn system_diff(runs: &[Run]) -> String {
    let cols: Vec<Vec<(&str, String)>> = runs.iter().map(|r| system_rows(&r.doc.system)).collect();
    let mut s =
        String::from("<h3>Systems</h3>\n<table class=\"kv sysdiff\">\n<tr><th class=\"l\"></th>");
    for r in runs {
        let _ = write!(s, "<th class=\"l\">{}</th>", esc(&r.name));
    }
    s.push_str("</tr>\n");
    for (k, (name, _)) in cols[0].iter().enumerate() {
        let vals: Vec<&str> = cols.iter().map(|c| c[k].1.as_str()).collect();
        let differs = vals.iter().any(|v| *v != vals[0]);
        let _ = write!(
            s,
            "<tr{}><td>{}</td>",
            if differs { " class=\"diff\"" } else { "" },
            esc(name)
        );
        for v in vals {
            let _ = write!(s, "<td class=\"l mono\">{}</td>", esc(v));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
    s
}

/// `rtscope compare`.
pub fn run(a: CompareArgs) -> Result<i32> {
    if let Some(p) = &a.html {
        let inputs: Vec<&Path> = a.files.iter().map(PathBuf::as_path).collect();
        super::refuse_output_onto_input("--html", p, &inputs)?;
        crate::output::files::check_output("--html", p)?;
    }
    let cs = collect(&a.files, &a.matches)?;
    // Nothing in common is not a comparison: say so, and do not pass it as
    // "not worse" either.
    if let Some(c) = cs.iter().find(|c| c.series.is_empty()) {
        let msg = format!(
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
        );
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
    crate::output::outln!(
        "\nmethod: {METHOD}; a verdict claims a difference only where they do not overlap. \
         Samples of one run are not fully independent: read a verdict as \"larger than this run's sampling noise\"."
    );
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
