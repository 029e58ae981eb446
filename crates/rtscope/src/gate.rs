//! CI gates: `--fail-if p99>50us,max>200us,overruns>0` (and `--fail-above X`,
//! which is the gate `all:max>X`), checked on the result document of any
//! experiment, recorded in it (`gates`), reported on stderr and, with
//! `--junit FILE`, as a JUnit XML file a CI system reads.
//!
//! A gate names the condition that fails the run. It applies to every series
//! of the document (trace stage series aside), to the series it names
//! (`thread 0:p99>50us`), or with `all:` to the aggregate series `all` where
//! the document has one (every series where it has not). A statistic the
//! series did not record (no samples, an import without percentiles) fails
//! its check: a gate never passes on nothing. Two cases say more:
//!
//! - **A run that measured nothing** ([`measured_nothing`]: shorter than
//!   one hwlat window, or than the threshold of a user-space hwlat run;
//!   no series of a sampling experiment with a sample) fails every gate,
//!   and the run warns.
//! - **An hwlat series without samples** in a run that measured: a sample
//!   is a gap at or above the threshold, so none means that every gap was
//!   below it. A duration statistic is then known to lie below the
//!   threshold (recorded as `below`), and a `>`/`>=` gate whose limit is at
//!   or above the threshold passes: a clean machine passes
//!   `--fail-if max>1s`.

use std::fmt;
use std::path::PathBuf;

use rtscope_core::result::{GateCheck, GateReport, ResultDocument, Series};
use rtscope_core::units::{format_ns, parse_duration_ns, Unit};

/// A statistic a gate can test, by the name `report` and the summaries use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    Min,
    Max,
    Mean,
    Stddev,
    P50,
    P90,
    P99,
    P99_9,
    P99_99,
    P99_999,
    Count,
    Overruns,
    OverrunSamples,
    Dropped,
    Negative,
    SamplesAbove,
}

/// Every statistic's names (the first is the one recorded), in the order
/// `--help` lists them.
const STATS: &[(Stat, &[&str])] = &[
    (Stat::Min, &["min"]),
    (Stat::Max, &["max"]),
    (Stat::Mean, &["avg", "mean"]),
    (Stat::Stddev, &["stddev"]),
    (Stat::P50, &["p50"]),
    (Stat::P90, &["p90"]),
    (Stat::P99, &["p99"]),
    (Stat::P99_9, &["p99.9"]),
    (Stat::P99_99, &["p99.99"]),
    (Stat::P99_999, &["p99.999"]),
    (Stat::Count, &["count"]),
    (Stat::Overruns, &["overruns", "missed"]),
    (Stat::OverrunSamples, &["overrun_samples"]),
    (Stat::Dropped, &["dropped"]),
    (Stat::Negative, &["negative"]),
    (Stat::SamplesAbove, &["samples_above"]),
];

/// The statistics' names as `--help` and errors list them.
pub fn known_names() -> String {
    STATS
        .iter()
        .flat_map(|(_, n)| n.iter().copied())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Stat {
    fn parse(s: &str) -> Option<Stat> {
        let s = s.trim().to_ascii_lowercase();
        STATS
            .iter()
            .find(|(_, names)| names.contains(&s.as_str()))
            .map(|(st, _)| *st)
    }

    /// The name recorded in the document.
    pub fn name(self) -> &'static str {
        STATS
            .iter()
            .find(|(st, _)| *st == self)
            .map(|(_, n)| n[0])
            .expect("every statistic is listed")
    }

    /// A duration (ns) rather than a count.
    pub fn is_duration(self) -> bool {
        matches!(
            self,
            Stat::Min
                | Stat::Max
                | Stat::Mean
                | Stat::Stddev
                | Stat::P50
                | Stat::P90
                | Stat::P99
                | Stat::P99_9
                | Stat::P99_99
                | Stat::P99_999
        )
    }

    /// The series' value (ns or a count), `None` when it was not recorded.
    pub fn value(self, s: &Series) -> Option<f64> {
        let st = &s.stats;
        let c = &s.counters;
        let pc = |v: u64| st.has_percentiles().then_some(v as f64);
        match self {
            Stat::Min => st.has_samples().then_some(st.min_ns as f64),
            Stat::Max => st.has_samples().then_some(st.max_ns as f64),
            Stat::Mean => st.has_mean().then_some(st.mean_ns),
            Stat::Stddev => st.has_stddev().then_some(st.stddev_ns),
            Stat::P50 => pc(st.p50_ns),
            Stat::P90 => pc(st.p90_ns),
            Stat::P99 => pc(st.p99_ns),
            Stat::P99_9 => pc(st.p99_9_ns),
            Stat::P99_99 => pc(st.p99_99_ns),
            Stat::P99_999 => pc(st.p99_999_ns),
            Stat::Count => Some(st.count as f64),
            Stat::Overruns => Some(c.overruns as f64),
            Stat::OverrunSamples => Some(c.overrun_samples as f64),
            Stat::Dropped => Some(c.dropped as f64),
            Stat::Negative => Some(c.negative as f64),
            Stat::SamplesAbove => c.above_threshold.map(|v| v as f64),
        }
    }
}

/// A comparison: the gate fails when `value OP limit` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Gt,
    Ge,
    Lt,
    Le,
}

impl Op {
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
        }
    }

    /// Whether `value OP limit` holds.
    pub fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Op::Gt => value > limit,
            Op::Ge => value >= limit,
            Op::Lt => value < limit,
            Op::Le => value <= limit,
        }
    }
}

/// Refuses, before anything runs, a gate that names a series the run
/// cannot have (`thread 7:max>1s` on a run of one thread): `can_have` says
/// which names it can. Found only after the run, it failed the run (exit 3)
/// as if the latency had.
pub fn check_series(
    gates: &[Gate],
    can_have: impl Fn(&str) -> bool,
    which: &str,
) -> anyhow::Result<()> {
    for g in gates {
        if let Some(name) = g.series.as_deref().filter(|n| !can_have(n)) {
            return Err(crate::error::usage(format!(
                "--fail-if {}: this run has no series '{name}' (its series: {which})",
                g.text
            )));
        }
    }
    Ok(())
}

/// One gate.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    /// As given (`p99>50us`), or `--fail-above 200us`.
    pub text: String,
    /// The series it names (`None`: every series).
    pub series: Option<String>,
    pub stat: Stat,
    pub op: Op,
    /// ns for a duration, else a count.
    pub limit: f64,
    /// Made by `--fail-above` (its `fail:` line is kept as it was).
    pub fail_above: bool,
}

impl Gate {
    /// `--fail-above X`: the gate `all:max>X`.
    pub fn fail_above(ns: u64) -> Gate {
        Gate {
            text: format!("--fail-above {}", format_ns(ns)),
            series: Some("all".into()),
            stat: Stat::Max,
            op: Op::Gt,
            limit: ns as f64,
            fail_above: true,
        }
    }
}

/// `--fail-if` and `--junit`, as every experiment's outputs carry them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GateOptions {
    pub gates: Vec<Gate>,
    pub junit: Option<PathBuf>,
}

impl GateOptions {
    pub fn is_empty(&self) -> bool {
        self.gates.is_empty()
    }
}

/// Parses one gate: `[SERIES:]STAT OP LIMIT`.
pub fn parse_gate(text: &str) -> Result<Gate, String> {
    let t = text.trim();
    let at = t
        .find(['<', '>'])
        .ok_or_else(|| format!("'{t}': no comparison (use >, >=, < or <=, e.g. p99>50us)"))?;
    let (lhs, rest) = t.split_at(at);
    let (op, limit) = if let Some(r) = rest.strip_prefix(">=") {
        (Op::Ge, r)
    } else if let Some(r) = rest.strip_prefix("<=") {
        (Op::Le, r)
    } else if let Some(r) = rest.strip_prefix('>') {
        (Op::Gt, r)
    } else {
        (Op::Lt, &rest[1..])
    };
    let (series, stat_name) = match lhs.rsplit_once(':') {
        Some((s, st)) => {
            let s = s.trim();
            if s.is_empty() {
                return Err(format!("'{t}': empty series name before ':'"));
            }
            (Some(s.to_string()), st)
        }
        None => (None, lhs),
    };
    let stat = Stat::parse(stat_name).ok_or_else(|| {
        format!(
            "'{t}': unknown statistic '{}' (known: {})",
            stat_name.trim(),
            known_names()
        )
    })?;
    let limit = parse_limit(stat, limit.trim()).map_err(|e| format!("'{t}': {e}"))?;
    Ok(Gate {
        text: t.to_string(),
        series,
        stat,
        op,
        limit,
        fail_above: false,
    })
}

/// A limit: a duration for a duration statistic (a bare number is
/// microseconds, as in every duration option; a leading `-` for a negative
/// one), a whole number for a count.
fn parse_limit(stat: Stat, s: &str) -> Result<f64, String> {
    if s.is_empty() {
        return Err("no limit after the comparison".into());
    }
    if stat.is_duration() {
        let (neg, body) = match s.strip_prefix('-') {
            Some(b) => (true, b),
            None => (false, s),
        };
        let ns = parse_duration_ns(body, Unit::Us).map_err(|e| e.to_string())?;
        Ok(if neg { -(ns as f64) } else { ns as f64 })
    } else {
        s.parse::<u64>()
            .map(|v| v as f64)
            .map_err(|_| format!("{} is a count: '{s}' is not a whole number", stat.name()))
    }
}

/// `--fail-if`'s value: gates separated by commas (clap's value parser).
pub fn parse_gates(text: &str) -> Result<Vec<Gate>, String> {
    let gates: Vec<Gate> = text
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(parse_gate)
        .collect::<Result<_, _>>()?;
    if gates.is_empty() {
        return Err("no gate given (e.g. p99>50us,max>200us)".into());
    }
    Ok(gates)
}

/// The most gates one run takes (each is checked on every series).
pub const MAX_GATES: usize = 64;

/// Refuses more than [`MAX_GATES`] gates (usage error, exit 2).
pub fn check_count(n: usize) -> anyhow::Result<()> {
    if n > MAX_GATES {
        return Err(crate::error::usage(format!(
            "--fail-if: at most {MAX_GATES} gates ({n} given)"
        )));
    }
    Ok(())
}

/// The series a gate applies to: its labels, or `Err(name)` when it names
/// a series the document lacks.
fn targets<'a>(gate: &Gate, doc: &'a ResultDocument) -> Result<Vec<&'a Series>, String> {
    let every = || -> Vec<&'a Series> {
        doc.series
            .iter()
            .filter(|s| !s.label.starts_with("stage "))
            .collect()
    };
    match gate.series.as_deref() {
        None => Ok(every()),
        Some(name) => {
            if let Some(s) = doc.series.iter().find(|s| s.label == name) {
                Ok(vec![s])
            } else if name == "all" {
                Ok(every())
            } else {
                Err(name.to_string())
            }
        }
    }
}

/// A number from the plan (`plan.KEY`).
fn plan_u64(doc: &ResultDocument, key: &str) -> Option<u64> {
    doc.plan.get(key).and_then(serde_json::Value::as_u64)
}

/// Why the run measured nothing, when it did not: an hwlat run shorter
/// than one window of the tracer (which takes at most one sample a
/// window), or than the threshold of the user-space method (no gap that
/// long fits in it); a run of a sampling experiment in which no series
/// recorded a sample. `None` for a run that measured (an hwlat or noise run
/// without samples above its threshold measured, and saw nothing).
pub fn measured_nothing(doc: &ResultDocument) -> Option<String> {
    let ran = |planned: Option<u64>| -> u64 {
        let d = doc.duration_ns;
        match planned {
            Some(p) if d > 0 => p.min(d),
            Some(p) => p,
            None => d,
        }
    };
    match doc.experiment.as_str() {
        "hwlat" => {
            let planned = plan_u64(doc, "duration_ns");
            let ran = ran(planned);
            let method = doc.plan.get("method_used").and_then(|m| m.as_str());
            let (unit, what, why) = match method {
                Some("tracer") => (
                    plan_u64(doc, "window_ns")?,
                    "one window (--window",
                    "the tracer takes at most one sample a window",
                ),
                Some("user-space") => (
                    plan_u64(doc, "threshold_ns")?,
                    "the threshold (--threshold",
                    "no gap that long fits in it",
                ),
                _ => return None,
            };
            (ran < unit).then(|| {
                format!(
                    "the run measured nothing: it ran {}, shorter than {what} {}): {why}; its gates fail",
                    format_ns(ran),
                    format_ns(unit)
                )
            })
        }
        // A sample is a gap above the threshold: none is a clean run.
        "noise" => None,
        _ => {
            let series: Vec<&Series> = doc
                .series
                .iter()
                .filter(|s| !s.label.starts_with("stage "))
                .collect();
            if series.is_empty() || series.iter().any(|s| s.stats.count > 0) {
                return None;
            }
            let period = plan_u64(doc, "period_ns").filter(|p| *p > 0);
            let why = match period {
                Some(p) if p >= ran(None) / 2 => format!(
                    " (period {}, run {}: a run must last well over one period)",
                    format_ns(p),
                    format_ns(doc.duration_ns)
                ),
                _ => String::new(),
            };
            Some(format!(
                "the run measured nothing: no series recorded a sample{why}; its gates fail"
            ))
        }
    }
}

/// What is known of an hwlat series without samples (in a run that
/// measured): every gap was below its threshold, ns.
fn below_threshold(doc: &ResultDocument, s: &Series) -> Option<f64> {
    (doc.experiment == "hwlat" && s.stats.count == 0)
        .then(|| plan_u64(doc, "threshold_ns"))
        .flatten()
        .map(|t| t as f64)
}

/// The gates, each once: a gate given twice (`--fail-if p99>50us --fail-if
/// p99>50us`, or `p99>50us` and `p99 > 50us`) is checked and reported once.
fn unique(gates: &[Gate]) -> Vec<&Gate> {
    let mut out: Vec<&Gate> = Vec::new();
    for g in gates {
        let same = |o: &&Gate| {
            o.text == g.text
                || (o.series == g.series
                    && o.stat == g.stat
                    && o.op == g.op
                    && o.limit == g.limit
                    && o.fail_above == g.fail_above)
        };
        if !out.iter().any(same) {
            out.push(g);
        }
    }
    out
}

/// Checks every gate on the series it applies to.
pub fn evaluate(gates: &[Gate], doc: &ResultDocument) -> GateReport {
    let nothing = measured_nothing(doc).is_some();
    let mut checks = Vec::new();
    for g in unique(gates) {
        let check = |series: String, value: Option<f64>, below: Option<f64>| {
            // Known below a bound: `> L` or `>= L` with L at or above it
            // cannot hold.
            let passes_below = below.is_some_and(|b| {
                g.stat.is_duration() && matches!(g.op, Op::Gt | Op::Ge) && g.limit >= b
            });
            GateCheck {
                gate: g.text.clone(),
                series,
                statistic: g.stat.name().into(),
                op: g.op.symbol().into(),
                limit: g.limit,
                unit: if g.stat.is_duration() { "ns" } else { "count" }.into(),
                value,
                below: below.filter(|_| value.is_none() && g.stat.is_duration()),
                failed: nothing
                    || match value {
                        Some(v) => g.op.holds(v, g.limit),
                        None => !passes_below,
                    },
            }
        };
        match targets(g, doc) {
            Ok(series) if series.is_empty() => checks.push(check("(no series)".into(), None, None)),
            Ok(series) => {
                for s in series {
                    checks.push(check(
                        s.label.clone(),
                        g.stat.value(s),
                        below_threshold(doc, s),
                    ));
                }
            }
            Err(name) => checks.push(check(name, None, None)),
        }
    }
    GateReport {
        passed: checks.iter().all(|c| !c.failed),
        checks,
    }
}

/// A check's value or limit in its unit (`62.1us`, `-3us`, `12`).
fn show(v: f64, duration: bool) -> String {
    if !duration {
        return format!("{v}");
    }
    let mag = format_ns(v.abs().round() as u64);
    if v < 0.0 {
        format!("-{mag}")
    } else {
        mag
    }
}

/// What a failed check says: `p99 62.1us > 50us`, or why it has no value.
pub fn failure_text(c: &GateCheck, doc: &ResultDocument) -> String {
    let dur = c.unit == "ns";
    if let Some(why) = measured_nothing(doc) {
        return why;
    }
    if let (None, Some(b)) = (c.value, c.below) {
        return format!(
            "{} below {}: no sample, i.e. no gap at or above the threshold ({}), which is not enough to tell whether {} {} {} (set --threshold at or below the limit)",
            c.statistic,
            show(b, true),
            show(b, true),
            c.statistic,
            c.op,
            show(c.limit, dur)
        );
    }
    match c.value {
        Some(v) => format!(
            "{} {} {} {}",
            c.statistic,
            show(v, dur),
            c.op,
            show(c.limit, dur)
        ),
        None if !doc.series.iter().any(|s| s.label == c.series) => {
            let labels: Vec<&str> = doc.series.iter().map(|s| s.label.as_str()).collect();
            format!(
                "no series '{}' in the result (series: {})",
                c.series,
                labels.join(", ")
            )
        }
        None => format!(
            "{} was not recorded (no samples, or not measured)",
            c.statistic
        ),
    }
}

/// The lines a failed gate prints on stderr: `fail: thread 0: p99 62.1us >
/// 50us (gate p99>50us)`; a `--fail-above` gate prints its own line as
/// it always has (see [`fail_above_line`]).
pub fn fail_lines(gates: &[Gate], report: &GateReport, doc: &ResultDocument) -> Vec<String> {
    let mut lines = Vec::new();
    for g in unique(gates) {
        let failed: Vec<&GateCheck> = report
            .checks
            .iter()
            .filter(|c| c.gate == g.text && c.failed)
            .collect();
        if failed.is_empty() {
            continue;
        }
        if g.fail_above && doc.threshold.is_some() && measured_nothing(doc).is_none() {
            lines.push(fail_above_line(doc));
            continue;
        }
        for c in failed {
            // Labels come from the document (an import, a hand-edited
            // file): no control character reaches the terminal.
            lines.push(
                crate::output::printable(&format!(
                    "fail: {}: {} (gate {})",
                    c.series,
                    failure_text(c, doc),
                    c.gate
                ))
                .into_owned(),
            );
        }
    }
    lines
}

/// The `fail:` line of `--fail-above`: the samples above it, and the
/// intended periods above it (missed ones at their lateness) when the
/// union has them. A skipped period is never later than the wake-up that
/// skipped it, so the verdict is the same either way; the count is not.
pub fn fail_above_line(doc: &ResultDocument) -> String {
    let Some(t) = &doc.threshold else {
        return String::new();
    };
    let periods = doc
        .series
        .iter()
        .find(|s| s.label == "all")
        .and_then(|s| s.corrected.as_ref()?.above_threshold)
        .map(|n| format!(" ({n} of the intended periods)"))
        .unwrap_or_default();
    format!(
        "fail: {} samples above {}{periods}",
        t.samples_above,
        format_ns(t.fail_above_ns)
    )
}

/// Text safe in XML 1.0 (attributes and content): the five escapes, and
/// characters XML cannot hold replaced.
fn xml(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\t' | '\n' | '\r' => o.push(ch),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

/// The JUnit XML report of one run: see [`junit_of`].
pub fn junit(report: &GateReport, doc: &ResultDocument) -> String {
    junit_of(&[(report, doc)])
}

/// The JUnit XML report: one test suite per run, one test case per gate
/// and series (named `SERIES: GATE`), a `failure` element with the
/// measured value and the limit where it failed.
pub fn junit_of(runs: &[(&GateReport, &ResultDocument)]) -> String {
    let count = |f: &dyn Fn(&GateCheck) -> bool| -> usize {
        runs.iter()
            .map(|(r, _)| r.checks.iter().filter(|c| f(c)).count())
            .sum()
    };
    let tests = count(&|_| true);
    let failures = count(&|c| c.failed);
    let total_s: f64 = runs.iter().map(|(_, d)| d.duration_ns as f64 / 1e9).sum();
    let mut o = String::new();
    o.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    o.push_str(&format!(
        "<testsuites name=\"rtscope\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" time=\"{total_s:.3}\">\n"
    ));
    for (report, doc) in runs {
        suite(&mut o, report, doc);
    }
    o.push_str("</testsuites>\n");
    o
}

/// One run's `testsuite` element.
fn suite(o: &mut String, report: &GateReport, doc: &ResultDocument) {
    let failures = report.checks.iter().filter(|c| c.failed).count();
    let tests = report.checks.len();
    let secs = doc.duration_ns as f64 / 1e9;
    let name = format!("rtscope {}", doc.experiment);
    o.push_str(&format!(
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"{secs:.3}\" timestamp=\"{}\" hostname=\"{}\">\n",
        xml(&name),
        xml(&doc.started_at),
        xml(doc.system.hostname.as_deref().unwrap_or("")),
    ));
    o.push_str("    <properties>\n");
    o.push_str(&format!(
        "      <property name=\"command_line\" value=\"{}\"/>\n",
        xml(&doc.command_line.join(" "))
    ));
    o.push_str(&format!(
        "      <property name=\"kernel\" value=\"{}\"/>\n",
        xml(&doc.system.kernel_release)
    ));
    o.push_str("    </properties>\n");
    for c in &report.checks {
        let dur = c.unit == "ns";
        let name = format!("{}: {}", c.series, c.gate);
        o.push_str(&format!(
            "    <testcase classname=\"{}\" name=\"{}\" time=\"0\">\n",
            xml(&format!("rtscope.{}", doc.experiment)),
            xml(&name)
        ));
        let measured = match (c.value, c.below) {
            (Some(v), _) => show(v, dur),
            (None, Some(b)) => format!(
                "below {} (no sample at or above the threshold)",
                show(b, true)
            ),
            (None, None) => "not recorded".into(),
        };
        if c.failed {
            o.push_str(&format!(
                "      <failure type=\"gate\" message=\"{}\">series: {}\nstatistic: {}\nmeasured: {}\nlimit: fail if {} {} {}\n</failure>\n",
                xml(&failure_text(c, doc)),
                xml(&c.series),
                xml(&c.statistic),
                xml(&measured),
                xml(&c.statistic),
                xml(&c.op),
                xml(&show(c.limit, dur)),
            ));
        } else {
            o.push_str(&format!(
                "      <system-out>{} {} (fails if {} {})</system-out>\n",
                xml(&c.statistic),
                xml(&measured),
                xml(&c.op),
                xml(&show(c.limit, dur))
            ));
        }
        o.push_str("    </testcase>\n");
    }
    o.push_str("  </testsuite>\n");
}

/// `rtscope report FILE... --fail-if ... [--junit FILE]`: the gates checked
/// on stored results (not written back); the fail lines on stderr; 0 or 3.
pub fn gate_stored(docs: &[ResultDocument], opts: &GateOptions) -> anyhow::Result<i32> {
    use anyhow::Context;
    check_count(opts.gates.len())?;
    let reports: Vec<GateReport> = docs.iter().map(|d| evaluate(&opts.gates, d)).collect();
    if let Some(p) = &opts.junit {
        let runs: Vec<(&GateReport, &ResultDocument)> = reports.iter().zip(docs).collect();
        rtscope_core::file::write_atomic(p, junit_of(&runs).as_bytes())
            .with_context(|| format!("--junit {}", p.display()))?;
        crate::output::outln!("junit: {}", p.display());
    }
    let mut passed = true;
    for (r, d) in reports.iter().zip(docs) {
        for line in fail_lines(&opts.gates, r, d) {
            eprintln!("{line}");
        }
        passed &= r.passed;
    }
    Ok(if passed {
        crate::error::EXIT_OK
    } else {
        crate::error::EXIT_THRESHOLD
    })
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::result::{Stats, Threshold};

    fn series(label: &str, count: u64, max: i64, p99: u64, overruns: u64) -> Series {
        let mut s = Series {
            label: label.into(),
            stats: Stats {
                count,
                min_ns: 1_000,
                max_ns: max,
                mean_ns: 2_000.5,
                stddev_ns: 10.0,
                p50_ns: 1_500,
                p90_ns: 1_900,
                p99_ns: p99,
                p99_9_ns: p99 + 1,
                p99_99_ns: p99 + 2,
                p99_999_ns: p99 + 3,
                ..Default::default()
            },
            ..Default::default()
        };
        s.counters.overruns = overruns;
        s.counters.overrun_samples = overruns / 2;
        s.counters.dropped = 7;
        s.counters.negative = 3;
        s
    }

    fn doc() -> ResultDocument {
        let mut d = ResultDocument::new(
            "cyclic",
            serde_json::json!({}),
            Default::default(),
            vec![
                series("thread 0", 1000, 80_000, 40_000, 0),
                series("thread 1", 1000, 300_000, 60_000, 2),
                series("all", 2000, 300_000, 55_000, 2),
                series("stage timer", 2000, 900_000, 900_000, 0),
            ],
        );
        d.duration_ns = 3_000_000_000;
        d
    }

    /// An hwlat document: `method`, planned `duration_ns`, window 1 s,
    /// threshold 500 ms, one CPU with `count` samples.
    fn hwlat(method: &str, duration_ns: u64, count: u64) -> ResultDocument {
        let mut s = Series {
            label: "cpu 1".into(),
            ..Default::default()
        };
        s.stats.count = count;
        s.stats.unknown.percentiles = count == 0;
        s.stats.unknown.stddev = count == 0;
        s.stats.unknown.mean = count == 0;
        let plan = serde_json::json!({
            "method_used": method,
            "duration_ns": duration_ns,
            "window_ns": 1_000_000_000u64,
            "threshold_ns": 500_000_000u64,
        });
        let mut d = ResultDocument::new("hwlat", plan, Default::default(), vec![s]);
        // Calibration and set-up count in the document's duration.
        d.duration_ns = duration_ns + 800_000_000;
        d
    }

    #[test]
    fn a_clean_hwlat_run_passes_gates_above_its_threshold() {
        // Issue 36: `hwlat -T 500ms --fail-if max>1s` on a clean machine
        // failed: "max was not recorded (no samples)".
        let d = hwlat("user-space", 1_000_000_000, 0);
        assert_eq!(measured_nothing(&d), None);
        let r = evaluate(&parse_gates("max>1s,p99>=500ms").unwrap(), &d);
        assert!(r.passed, "{r:?}");
        assert!(r
            .checks
            .iter()
            .all(|c| c.value.is_none() && c.below == Some(5e8)));
        assert!(junit(&r, &d).contains("max below 500ms (no sample at or above the threshold)"));
        // A limit below the threshold cannot be told: it fails, and says why.
        let r = evaluate(&parse_gates("max>100us").unwrap(), &d);
        assert!(!r.passed);
        let lines = fail_lines(&parse_gates("max>100us").unwrap(), &r, &d);
        assert_eq!(
            lines,
            vec!["fail: cpu 1: max below 500ms: no sample, i.e. no gap at or above the threshold (500ms), which is not enough to tell whether max > 100us (set --threshold at or below the limit) (gate max>100us)"]
        );
        // `<` gates and counts are not helped by a bound above.
        assert!(!evaluate(&parse_gates("max<1s").unwrap(), &d).passed);
        assert!(evaluate(&parse_gates("count>0").unwrap(), &d).passed);
        // Not hwlat: a series without samples still fails.
        let mut c = d.clone();
        c.experiment = "cyclic".into();
        c.plan = serde_json::json!({});
        assert!(!evaluate(&parse_gates("max>1s").unwrap(), &c).passed);
    }

    #[test]
    fn a_run_that_measured_nothing_says_so_and_fails_its_gates() {
        // Issue 36: `hwlat -D 500ms --window 10s` (tracer), `hwlat -D 1ns`,
        // `cyclic --policy deadline -i 600ms -D 1` exited 0 without a word.
        let t = hwlat("tracer", 500_000_000, 0);
        let why = measured_nothing(&t).unwrap();
        assert_eq!(
            why,
            "the run measured nothing: it ran 500ms, shorter than one window (--window 1s): the tracer takes at most one sample a window; its gates fail"
        );
        let r = evaluate(&parse_gates("max>1s").unwrap(), &t);
        assert!(!r.passed);
        assert_eq!(
            fail_lines(&parse_gates("max>1s").unwrap(), &r, &t),
            vec![format!("fail: cpu 1: {why} (gate max>1s)")]
        );
        assert_eq!(measured_nothing(&hwlat("tracer", 1_000_000_000, 0)), None);
        let u = hwlat("user-space", 1, 0);
        assert!(measured_nothing(&u)
            .unwrap()
            .contains("it ran 1ns, shorter than the threshold (--threshold 500ms): no gap that long fits in it"));
        // Even a gate on a counter fails.
        assert!(!evaluate(&parse_gates("overruns>0").unwrap(), &u).passed);
        // A sampling experiment without a sample in any series.
        let mut c = doc();
        for s in &mut c.series {
            s.stats.count = 0;
        }
        c.plan = serde_json::json!({"period_ns": 600_000_000u64});
        c.duration_ns = 613_000_000;
        assert_eq!(
            measured_nothing(&c).unwrap(),
            "the run measured nothing: no series recorded a sample (period 600ms, run 613ms: a run must last well over one period); its gates fail"
        );
        assert!(!evaluate(&parse_gates("overruns>0").unwrap(), &c).passed);
        // --fail-above says why, not "0 samples above".
        c.threshold = Some(Threshold {
            fail_above_ns: 1_000,
            exceeded: false,
            samples_above: 0,
        });
        let fa = [Gate::fail_above(1_000)];
        let lines = fail_lines(&fa, &evaluate(&fa, &c), &c);
        assert!(
            lines.iter().all(|l| l.contains("the run measured nothing")),
            "{lines:?}"
        );
        // One sample anywhere is a measurement; noise without gaps is clean.
        assert_eq!(measured_nothing(&doc()), None);
        c.experiment = "noise".into();
        assert_eq!(measured_nothing(&c), None);
    }

    #[test]
    fn a_gate_given_twice_is_checked_and_reported_once() {
        let d = doc();
        let gates = parse_gates("p99>50us,p99 > 50us,p99>50us").unwrap();
        let r = evaluate(&gates, &d);
        // Three series (the stage left out), once each.
        assert_eq!(r.checks.len(), 3);
        let lines = fail_lines(&gates, &r, &d);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(junit(&r, &d).contains("tests=\"3\""));
    }

    #[test]
    fn fail_lines_carry_no_control_characters() {
        let mut d = doc();
        d.series[1].label = "thread\x1b[31m 1\x07".into();
        let gates = parse_gates("p99>50us").unwrap();
        let lines = fail_lines(&gates, &evaluate(&gates, &d), &d);
        assert_eq!(
            lines,
            vec![
                "fail: thread?[31m 1?: p99 60us > 50us (gate p99>50us)",
                "fail: all: p99 55us > 50us (gate p99>50us)"
            ]
        );
    }

    #[test]
    fn parses_gates_with_series_operators_and_units() {
        let g = parse_gate("p99>50us").unwrap();
        assert_eq!(
            (g.series.clone(), g.stat, g.op, g.limit),
            (None, Stat::P99, Op::Gt, 50_000.0)
        );
        let g = parse_gate(" thread 0:max>=1.5ms ").unwrap();
        assert_eq!(g.series.as_deref(), Some("thread 0"));
        assert_eq!((g.stat, g.op, g.limit), (Stat::Max, Op::Ge, 1_500_000.0));
        assert_eq!(g.text, "thread 0:max>=1.5ms");
        let g = parse_gate("count<1000").unwrap();
        assert_eq!((g.stat, g.op, g.limit), (Stat::Count, Op::Lt, 1000.0));
        let g = parse_gate("min<=-5us").unwrap();
        assert_eq!((g.stat, g.op, g.limit), (Stat::Min, Op::Le, -5_000.0));
        // A bare number is microseconds, as in every duration option.
        assert_eq!(parse_gate("p99.9>20").unwrap().limit, 20_000.0);
        assert_eq!(parse_gate("avg>1ns").unwrap().stat, Stat::Mean);
        assert_eq!(parse_gate("mean>1ns").unwrap().stat, Stat::Mean);
        assert_eq!(parse_gate("missed>0").unwrap().stat, Stat::Overruns);
        for (name, st) in [
            ("p50", Stat::P50),
            ("p90", Stat::P90),
            ("p99.99", Stat::P99_99),
            ("p99.999", Stat::P99_999),
            ("stddev", Stat::Stddev),
            ("overrun_samples", Stat::OverrunSamples),
            ("dropped", Stat::Dropped),
            ("negative", Stat::Negative),
            ("samples_above", Stat::SamplesAbove),
        ] {
            assert_eq!(parse_gate(&format!("{name}>1")).unwrap().stat, st, "{name}");
        }
        let all = parse_gates("p99>50us, max>200us,overruns>0,").unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(all[2].stat, Stat::Overruns);
    }

    #[test]
    fn bad_gates_are_named() {
        let e = parse_gate("p98>5us").unwrap_err();
        assert!(e.contains("unknown statistic 'p98'"), "{e}");
        assert!(e.contains("known: min, max, avg, mean"), "{e}");
        assert!(parse_gate("p99=5us").unwrap_err().contains("no comparison"));
        assert!(parse_gate("p99>").unwrap_err().contains("no limit"));
        assert!(parse_gate("p99>5 parsecs").is_err());
        assert!(parse_gate("overruns>1.5")
            .unwrap_err()
            .contains("is a count"));
        assert!(parse_gate(":p99>1").unwrap_err().contains("empty series"));
        assert!(parse_gates(" , ").unwrap_err().contains("no gate"));
    }

    #[test]
    fn operators_hold_as_written() {
        assert!(Op::Gt.holds(2.0, 1.0) && !Op::Gt.holds(1.0, 1.0));
        assert!(Op::Ge.holds(1.0, 1.0) && !Op::Ge.holds(0.5, 1.0));
        assert!(Op::Lt.holds(0.5, 1.0) && !Op::Lt.holds(1.0, 1.0));
        assert!(Op::Le.holds(1.0, 1.0) && !Op::Le.holds(1.5, 1.0));
        assert_eq!(
            [Op::Gt, Op::Ge, Op::Lt, Op::Le].map(Op::symbol),
            [">", ">=", "<", "<="]
        );
    }

    #[test]
    fn values_come_from_the_series() {
        let s = series("x", 10, 9_000, 5_000, 4);
        let v = |st: Stat| st.value(&s);
        assert_eq!(v(Stat::Min), Some(1_000.0));
        assert_eq!(v(Stat::Max), Some(9_000.0));
        assert_eq!(v(Stat::Mean), Some(2_000.5));
        assert_eq!(v(Stat::Stddev), Some(10.0));
        assert_eq!(v(Stat::P50), Some(1_500.0));
        assert_eq!(v(Stat::P90), Some(1_900.0));
        assert_eq!(v(Stat::P99), Some(5_000.0));
        assert_eq!(v(Stat::P99_9), Some(5_001.0));
        assert_eq!(v(Stat::P99_99), Some(5_002.0));
        assert_eq!(v(Stat::P99_999), Some(5_003.0));
        assert_eq!(v(Stat::Count), Some(10.0));
        assert_eq!(v(Stat::Overruns), Some(4.0));
        assert_eq!(v(Stat::OverrunSamples), Some(2.0));
        assert_eq!(v(Stat::Dropped), Some(7.0));
        assert_eq!(v(Stat::Negative), Some(3.0));
        assert_eq!(v(Stat::SamplesAbove), None);
        // Nothing measured: nothing known but the count.
        let mut e = series("e", 0, 0, 0, 0);
        e.stats.count = 0;
        assert_eq!(Stat::Max.value(&e), None);
        assert_eq!(Stat::Min.value(&e), None);
        assert_eq!(Stat::P99.value(&e), None);
        assert_eq!(Stat::Mean.value(&e), None);
        assert_eq!(Stat::Count.value(&e), Some(0.0));
        let mut n = series("n", 5, 1, 1, 0);
        n.stats.unknown.percentiles = true;
        n.stats.unknown.stddev = true;
        assert_eq!(Stat::P50.value(&n), None);
        assert_eq!(Stat::Stddev.value(&n), None);
        assert_eq!(Stat::Max.value(&n), Some(1.0));
        assert!(Stat::P99.is_duration() && !Stat::Count.is_duration());
    }

    #[test]
    fn every_series_or_one_or_the_aggregate() {
        let d = doc();
        let r = evaluate(&parse_gates("p99>50us").unwrap(), &d);
        // Every series but the trace stages.
        let got: Vec<(&str, bool)> = r
            .checks
            .iter()
            .map(|c| (c.series.as_str(), c.failed))
            .collect();
        assert_eq!(
            got,
            [("thread 0", false), ("thread 1", true), ("all", true)]
        );
        assert!(!r.passed);
        let r = evaluate(&parse_gates("thread 0:p99>50us").unwrap(), &d);
        assert_eq!(r.checks.len(), 1);
        assert!(r.passed);
        assert_eq!(r.checks[0].value, Some(40_000.0));
        assert_eq!(r.checks[0].limit, 50_000.0);
        assert_eq!(r.checks[0].unit, "ns");
        assert_eq!(r.checks[0].statistic, "p99");
        assert_eq!(r.checks[0].op, ">");
        let r = evaluate(&parse_gates("all:overruns>1").unwrap(), &d);
        assert_eq!(r.checks.len(), 1);
        assert_eq!(r.checks[0].series, "all");
        assert!(r.checks[0].failed);
        assert_eq!(r.checks[0].unit, "count");
        // Without an `all` series, `all:` means every series.
        let mut d2 = d.clone();
        d2.series.retain(|s| s.label != "all");
        let r = evaluate(&parse_gates("all:count<1000").unwrap(), &d2);
        assert_eq!(r.checks.len(), 2);
        assert!(r.passed);
        let r = evaluate(&parse_gates("count<1001").unwrap(), &d2);
        assert!(!r.passed);
    }

    #[test]
    fn a_missing_series_or_value_fails() {
        let d = doc();
        let g = parse_gates("thread 9:max>1s").unwrap();
        let r = evaluate(&g, &d);
        assert!(!r.passed);
        assert_eq!(r.checks[0].value, None);
        let lines = fail_lines(&g, &r, &d);
        assert_eq!(
            lines,
            ["fail: thread 9: no series 'thread 9' in the result (series: thread 0, thread 1, all, stage timer) (gate thread 9:max>1s)"]
        );
        let g = parse_gates("samples_above>0").unwrap();
        let r = evaluate(&g, &d);
        assert!(r.checks.iter().all(|c| c.failed));
        assert!(fail_lines(&g, &r, &d)[0].contains("samples_above was not recorded"));
        let mut empty = d.clone();
        empty.series.clear();
        let r = evaluate(&parse_gates("max>1s").unwrap(), &empty);
        assert!(!r.passed);
        assert_eq!(r.checks[0].series, "(no series)");
    }

    #[test]
    fn fail_lines_name_series_value_and_limit() {
        let d = doc();
        let g = parse_gates("p99>50us,max>=300us,min<-1us").unwrap();
        let r = evaluate(&g, &d);
        assert_eq!(
            fail_lines(&g, &r, &d),
            [
                "fail: thread 1: p99 60us > 50us (gate p99>50us)",
                "fail: all: p99 55us > 50us (gate p99>50us)",
                "fail: thread 1: max 300us >= 300us (gate max>=300us)",
                "fail: all: max 300us >= 300us (gate max>=300us)",
            ]
        );
        assert_eq!(show(-1_500.0, true), "-1.5us");
        assert_eq!(show(12.0, false), "12");
    }

    #[test]
    fn fail_above_is_the_max_gate_with_its_own_line() {
        let mut d = doc();
        let g = vec![Gate::fail_above(200_000)];
        assert_eq!(g[0].text, "--fail-above 200us");
        assert_eq!((g[0].stat, g[0].op), (Stat::Max, Op::Gt));
        d.threshold = Some(rtscope_core::result::Threshold {
            fail_above_ns: 200_000,
            exceeded: true,
            samples_above: 5,
        });
        let r = evaluate(&g, &d);
        assert_eq!(r.checks.len(), 1);
        assert!(r.checks[0].failed);
        assert_eq!(fail_lines(&g, &r, &d), ["fail: 5 samples above 200us"]);
        d.series[2].corrected = Some(rtscope_core::result::Corrected {
            above_threshold: Some(9),
            ..Default::default()
        });
        assert_eq!(
            fail_above_line(&d),
            "fail: 5 samples above 200us (9 of the intended periods)"
        );
        let r = evaluate(&[Gate::fail_above(300_000)], &d);
        assert!(r.passed);
        assert!(fail_lines(&[Gate::fail_above(300_000)], &r, &d).is_empty());
        d.threshold = None;
        assert_eq!(fail_above_line(&d), "");
    }

    #[test]
    fn junit_has_a_case_per_series_and_gate() {
        let mut d = doc();
        d.command_line = vec!["rtscope".into(), "cyclic".into(), "--x=<&>\"'".into()];
        let g = parse_gates("p99>50us,overruns>0").unwrap();
        let r = evaluate(&g, &d);
        let x = junit(&r, &d);
        assert!(x.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites"));
        assert!(x.contains("tests=\"6\" failures=\"4\""), "{x}");
        assert_eq!(x.matches("<testcase ").count(), 6);
        assert_eq!(x.matches("<failure ").count(), 4);
        assert!(x.contains(
            "name=\"thread 1: p99&gt;50us\" time=\"0\">\n      <failure type=\"gate\" message=\"p99 60us &gt; 50us\">"
        ), "{x}");
        assert!(
            x.contains("measured: 60us\nlimit: fail if p99 &gt; 50us"),
            "{x}"
        );
        assert!(x.contains("--x=&lt;&amp;&gt;&quot;&apos;"), "{x}");
        assert!(x.contains("<system-out>p99 40us (fails if &gt; 50us)</system-out>"));
        assert!(x.ends_with("</testsuites>\n"));
        assert_eq!(xml("a\u{1}b\tc"), "a\u{FFFD}b\tc");
    }

    #[test]
    fn options_and_display() {
        let mut o = GateOptions::default();
        assert!(o.is_empty());
        o.gates = parse_gates("max>1s").unwrap();
        assert!(!o.is_empty());
        assert_eq!(o.gates[0].to_string(), "max>1s");
        assert_eq!(Gate::fail_above(1_000).to_string(), "--fail-above 1us");
        assert_eq!(Stat::P99_9.name(), "p99.9");
        assert_eq!(Stat::Mean.name(), "avg");
    }

    #[test]
    fn stored_results_are_gated_with_one_suite_each() {
        let dir = tempfile::tempdir().unwrap();
        let junit = dir.path().join("j.xml");
        let docs = vec![doc(), doc()];
        let mut o = GateOptions {
            gates: parse_gates("thread 0:p99>50us").unwrap(),
            junit: Some(junit.clone()),
        };
        assert_eq!(gate_stored(&docs, &o).unwrap(), crate::error::EXIT_OK);
        let x = std::fs::read_to_string(&junit).unwrap();
        assert_eq!(x.matches("<testsuite ").count(), 2);
        assert!(x.contains("<testsuites name=\"rtscope\" tests=\"2\" failures=\"0\" errors=\"0\" time=\"6.000\">"), "{x}");
        o.gates = parse_gates("thread 1:p99>50us").unwrap();
        assert_eq!(
            gate_stored(&docs, &o).unwrap(),
            crate::error::EXIT_THRESHOLD
        );
        let x = std::fs::read_to_string(&junit).unwrap();
        assert!(x.contains("tests=\"2\" failures=\"2\""), "{x}");
        // One failing of two: still 3.
        let mut ok = doc();
        ok.series[1].stats.p99_ns = 1;
        assert_eq!(
            gate_stored(&[ok, doc()], &o).unwrap(),
            crate::error::EXIT_THRESHOLD
        );
        o.gates = vec![parse_gate("max>1s").unwrap(); MAX_GATES + 1];
        assert!(gate_stored(&docs, &o).is_err());
    }

    #[test]
    fn gates_are_bounded() {
        assert!(check_count(MAX_GATES).is_ok());
        let e = check_count(MAX_GATES + 1).unwrap_err();
        assert!(e.to_string().contains("at most 64 gates"));
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        assert!(known_names().starts_with("min, max, avg, mean, stddev, p50"));
    }

    // Tests written against the mutants cargo-mutants left (docs/testing.md).

    #[test]
    fn zero_is_shown_without_a_sign() {
        assert_eq!(show(0.0, true), "0ns");
        assert_eq!(show(2_500_000.0, true), "2.5ms");
        assert_eq!(show(0.0, false), "0");
    }

    #[test]
    fn only_fail_above_with_a_threshold_prints_its_own_line() {
        let mut d = doc();
        // --fail-above on a document without its threshold record (a
        // stored result gated anew): the gate's own line.
        let g = vec![Gate::fail_above(200_000)];
        let r = evaluate(&g, &d);
        assert_eq!(
            fail_lines(&g, &r, &d),
            ["fail: all: max 300us > 200us (gate --fail-above 200us)"]
        );
        // A --fail-if gate on a document with one: its own line as well.
        d.threshold = Some(rtscope_core::result::Threshold {
            fail_above_ns: 200_000,
            exceeded: true,
            samples_above: 5,
        });
        let g = parse_gates("all:max>250us").unwrap();
        let r = evaluate(&g, &d);
        assert_eq!(
            fail_lines(&g, &r, &d),
            ["fail: all: max 300us > 250us (gate all:max>250us)"]
        );
    }

    #[test]
    fn xml_keeps_what_it_can_hold() {
        // Space is the first character XML text holds as it is; below it,
        // only tab, line feed and carriage return; U+FFFE and U+FFFF never.
        assert_eq!(xml("a b\t\n\r"), "a b\t\n\r");
        assert_eq!(
            xml("\u{0}\u{1f}\u{FFFE}\u{FFFF}\u{FFFD}é"),
            "\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}é"
        );
    }

    #[test]
    fn junit_suites_carry_their_run() {
        let mut d = doc();
        d.duration_ns = 2_500_000_000;
        d.started_at = "2026-11-26T05:00:00Z".into();
        d.system.hostname = Some("h<1>".into());
        d.system.kernel_release = "6.18.0-rt".into();
        let g = parse_gates("p99>50us").unwrap();
        let r = evaluate(&g, &d);
        let x = junit(&r, &d);
        assert!(
            x.contains(
                "<testsuites name=\"rtscope\" tests=\"3\" failures=\"2\" errors=\"0\" time=\"2.500\">\n  \
                 <testsuite name=\"rtscope cyclic\" tests=\"3\" failures=\"2\" errors=\"0\" skipped=\"0\" \
                 time=\"2.500\" timestamp=\"2026-11-26T05:00:00Z\" hostname=\"h&lt;1&gt;\">\n"
            ),
            "{x}"
        );
        assert!(
            x.contains("<property name=\"kernel\" value=\"6.18.0-rt\"/>"),
            "{x}"
        );
        assert!(
            x.contains(
                "<testcase classname=\"rtscope.cyclic\" name=\"thread 0: p99&gt;50us\" time=\"0\">"
            ),
            "{x}"
        );
        // A check without a value says so.
        let g = parse_gates("samples_above>0").unwrap();
        let r = evaluate(&g, &d);
        let x = junit(&r, &d);
        assert!(
            x.contains("measured: not recorded\nlimit: fail if samples_above &gt; 0\n"),
            "{x}"
        );
    }
}
