//! Reports and comparisons: result documents turned into one self-contained
//! HTML file (inline CSS and SVG, no script, no external request) and into
//! side-by-side tables with confidence intervals.
//!
//! - [`write_html`]: the report of one or more documents; any experiment can
//!   call it (`rtscope cyclic --report FILE` does).
//! - `rtscope report`: [`run_report`].
//! - `rtscope compare`: [`compare::run`].

pub mod answer;
pub mod cells;
pub mod charts;
pub mod compare;
pub mod compare_causes;
pub mod compare_page;
pub mod html;
pub mod hwlat;
pub mod loads_table;
pub mod noise;
pub mod redact;
#[cfg(test)]
mod snapshot_tests;
pub mod stats;
pub mod svg;
pub mod tail;
mod tail_dispersion;
pub mod timer_chart;
pub mod trace;
pub mod verdict;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rtscope_core::result::{write_atomic, ResultDocument};

use crate::error::{usage, EXIT_OK};

/// Escapes text for HTML and SVG (element content and quoted attributes).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters other than tab/newline are not valid in XML;
            // bidirectional overrides and isolates (U+202A-E, U+2066-9,
            // U+200E/F) in a planted label would reorder the page's text.
            c if (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}') =>
            {
                out.push('\u{FFFD}')
            }
            c => out.push(c),
        }
    }
    out
}

/// A command line as a shell would need it typed (single quotes where needed).
pub fn shell_join(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A loaded result document and the name it is shown under.
#[derive(Debug, Clone)]
pub struct Run {
    pub name: String,
    pub path: PathBuf,
    pub doc: ResultDocument,
}

/// Reads a result document; a missing or malformed file is a usage error (exit 2).
pub fn load(path: &Path) -> Result<ResultDocument> {
    ResultDocument::read(path).map_err(|e| usage(e.to_string()))
}

pub use crate::output::files::refuse_output_onto_input;

/// The runs of `paths`, named `names`. With `redact`, an error about a
/// file that does not load is shown redacted by what the other files
/// taught ([`redact::Redactor`]): their host names and every home
/// directory's user name are left out of its path too.
pub fn load_runs(paths: &[PathBuf], names: Vec<String>, redact: bool) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    let mut failed = None;
    for (p, name) in paths.iter().zip(names) {
        match load(p) {
            Ok(doc) => runs.push(Run {
                name,
                path: p.clone(),
                doc,
            }),
            Err(e) if !redact => return Err(e),
            Err(e) => {
                failed.get_or_insert((e, p));
            }
        }
    }
    if let Some((e, p)) = failed {
        let mut r = redact::Redactor::default();
        redact::learn_runs(&mut r, &runs);
        r.learn_path(&p.display().to_string());
        return Err(usage(r.identity(&crate::error::one_line(&e))));
    }
    Ok(runs)
}

/// Short, distinct names for runs: file stems, or more of the path where stems collide.
pub fn run_names(paths: &[PathBuf]) -> Vec<String> {
    let stem = |p: &PathBuf| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| p.display().to_string())
    };
    let stems: Vec<String> = paths.iter().map(stem).collect();
    stems
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if stems.iter().filter(|t| *t == s).count() > 1 {
                paths[i].display().to_string()
            } else {
                s.clone()
            }
        })
        .collect()
}

/// Writes the HTML report of `docs` to `path` (atomically). Documents are
/// named by host and start time.
pub fn write_html(docs: &[ResultDocument], path: &Path) -> std::io::Result<()> {
    write_atomic(path, render_html(docs).as_bytes())
}

/// The HTML report of `docs` (what [`write_html`] writes).
pub fn render_html(docs: &[ResultDocument]) -> String {
    let runs: Vec<Run> = docs
        .iter()
        .map(|d| Run {
            name: format!(
                "{} on {}",
                d.experiment,
                d.system.hostname.as_deref().unwrap_or("unknown host")
            ),
            path: PathBuf::new(),
            doc: d.clone(),
        })
        .collect();
    html::report_page(&runs)
}

/// What `rtscope report` reads and writes.
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// Result documents, one section each.
    pub files: Vec<PathBuf>,
    /// The HTML report (optional when gates are given).
    pub output: Option<PathBuf>,
    /// Gates checked on the stored results.
    pub gates: crate::gate::GateOptions,
    /// Leave out what identifies the machine.
    pub redact: bool,
}

/// `rtscope report RESULT.json... -o report.html`.
pub fn run_report(a: ReportOptions) -> Result<i32> {
    let inputs: Vec<&Path> = a.files.iter().map(PathBuf::as_path).collect();
    let gates = &a.gates;
    // Each output its own file (`-o x --junit x` wrote one over the other).
    let mut outputs = crate::output::files::OutputPaths::new();
    for (flag, p) in [
        ("--output", a.output.as_ref()),
        ("--junit", gates.junit.as_ref()),
    ] {
        if let Some(p) = p {
            refuse_output_onto_input(flag, p, &inputs)?;
            outputs.add(flag, Some(p))?;
        }
    }
    let mut runs = load_runs(&a.files, run_names(&a.files), a.redact)?;
    // Together: one run's file name may carry another's host name.
    if a.redact {
        redact::runs(&mut runs);
    }
    if let Some(out) = &a.output {
        let page = html::report_page(&runs);
        write_atomic(out, page.as_bytes())
            .with_context(|| format!("--output {}", out.display()))?;
        crate::output::outln!("report: {}", out.display());
    }
    if gates.is_empty() {
        return Ok(EXIT_OK);
    }
    let docs: Vec<_> = runs.into_iter().map(|r| r.doc).collect();
    crate::gate::gate_stored(&docs, gates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(
            esc(r#"<script>alert("x" & 'y')</script>"#),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;"
        );
        assert_eq!(esc("a\u{0}b"), "a\u{FFFD}b");
        // A right-to-left override planted in a label cannot reorder the page.
        assert_eq!(esc("a\u{202e}b\u{2066}c"), "a\u{FFFD}b\u{FFFD}c");
    }

    #[test]
    fn shell_quoting() {
        let a: Vec<String> = ["rtscope", "cyclic", "-i", "1ms", "a b", "it's", ""]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(shell_join(&a), r"rtscope cyclic -i 1ms 'a b' 'it'\''s' ''");
    }

    #[test]
    fn names() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(
            run_names(&[p("a/run.json"), p("b/run.json"), p("rt.json")]),
            vec!["a/run.json", "b/run.json", "rt"]
        );
    }
}
