//! The HTML report: one self-contained page (inline CSS and SVG, no script,
//! a Content-Security-Policy that forbids every external request), one
//! section per result document:
//!
//! header (what, when, how long, command line, end) · warnings · system
//! snapshot · summary table per series · histogram · latency over time ·
//! percentile plot · worst samples · loads · series attributes.
//!
//! Every string that comes from a document (command line, host name, CPU
//! model, labels, warnings, plan values) goes through [`esc`].

use std::fmt::Write;

use rtscope_core::result::{EndReason, ResultDocument, Series};
use rtscope_core::system::SystemSnapshot;
use rtscope_core::units::format_ns;

use super::charts::{self, latency_unit, Plotted, Unit};
use super::svg::color;
use super::{esc, shell_join, Run};

/// Above this many series, charts become small multiples.
pub const OVERLAY_MAX: usize = 6;

/// The most series drawn in a run's charts: beyond it the charts show the
/// union (`all`) and the worst series; the summary table keeps every series.
pub const CHART_SERIES_MAX: usize = 12;

/// The series a run's charts draw (indices into `series`, in document order)
/// and, when that is not all of them, a note that says which are shown.
///
/// Up to [`CHART_SERIES_MAX`] series are all drawn. Beyond, the `all` series
/// (the union, when there is one) and the worst of the others by p99, then
/// max, fill the [`CHART_SERIES_MAX`] charts: a report of 3000 threads stays
/// readable (and fast: every chart of small multiples shares its axes with the
/// others, which costs the square of the number drawn).
pub fn chart_selection(series: &[Series]) -> (Vec<usize>, Option<String>) {
    if series.len() <= CHART_SERIES_MAX {
        return ((0..series.len()).collect(), None);
    }
    let union = series.iter().position(|s| s.label == "all");
    let mut rest: Vec<usize> = (0..series.len()).filter(|i| Some(*i) != union).collect();
    let key = |i: &usize| {
        let st = &series[*i].stats;
        let p99 = if has_percentiles(&series[*i]) {
            st.p99_ns
        } else {
            0
        };
        std::cmp::Reverse((p99, st.max_ns))
    };
    rest.sort_by_key(key);
    let worst = CHART_SERIES_MAX - usize::from(union.is_some());
    let mut chosen: Vec<usize> = union
        .into_iter()
        .chain(rest.into_iter().take(worst))
        .collect();
    chosen.sort_unstable();
    let note = format!(
        "Charts show {} of {} series: {}the {worst} worst by p99 (then max). Every series is in the summary table.",
        chosen.len(),
        series.len(),
        if union.is_some() { "all (the union) and " } else { "" },
    );
    (chosen, Some(note))
}

const CSS: &str = r#"
:root{--fg:#1d2330;--muted:#5c6577;--line:#d8dde6;--bg:#fff;--band:#f4f6fa;--warn:#8a4b00;--warnbg:#fff4e0}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg);margin:0;padding:24px 32px;max-width:1240px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:19px;margin:36px 0 8px;padding-top:12px;border-top:3px solid var(--fg)}
h3{font-size:15px;margin:22px 0 6px}
.sub{color:var(--muted);margin:0 0 12px}
table{border-collapse:collapse;margin:6px 0 10px}
th,td{padding:3px 10px;border-bottom:1px solid var(--line);text-align:right;vertical-align:top}
th{background:var(--band);font-weight:600}
td.l,th.l{text-align:left}
table.kv td:first-child{color:var(--muted);text-align:left;white-space:nowrap}
table.kv td{text-align:left;overflow-wrap:anywhere}
.grid2>div{min-width:0}
tr.diff td{background:#fff8d6}
tr.short td{background:var(--warnbg);color:var(--warn)}
code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px}
code.cmd{display:block;background:var(--band);padding:6px 10px;border-radius:4px;white-space:pre-wrap;word-break:break-all}
ul.warnings{background:var(--warnbg);color:var(--warn);border-left:4px solid #e08a00;padding:8px 12px 8px 30px;margin:8px 0}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(420px,100%),1fr));gap:4px 28px}
.multiples{display:flex;flex-wrap:wrap;gap:6px}
svg.chart{display:block;max-width:100%;height:auto;margin:6px 0}
.cw{overflow-x:auto;max-width:100%}
.multiples>.cw{flex:0 1 auto}
svg.chart[width="1160"]{min-width:640px}
svg.chart text{font:11px system-ui,"DejaVu Sans",sans-serif;fill:var(--fg)}
svg.chart text.ctitle{font-size:13px;font-weight:600}
svg.chart text.alabel{fill:var(--muted)}
svg.chart text.note{fill:var(--muted);font-size:13px}
svg.chart .grid line{stroke:#eceff4}
svg.chart rect.frame{fill:none;stroke:#9aa3b2}
svg.chart rect.band{fill:#f6d9a8;opacity:.45}
svg.chart path.series{fill:none;stroke-linejoin:round}
svg.chart circle.marker{fill:#fff;stroke-width:1.6}
svg.chart .legend rect{fill:#fff;fill-opacity:.88;stroke:var(--line)}
.verdict{font-weight:600}
td.thin,td.unknown{color:var(--muted)}
.worse{color:#b3261e}.better{color:#1b7a36}.same{color:var(--muted)}
details{margin:6px 0}
summary{cursor:pointer;color:var(--muted)}
table{display:block;max-width:100%;overflow-x:auto}
.answer{margin:14px 0 8px}
.figures{display:flex;flex-wrap:wrap;gap:8px}
.fig{border:1px solid var(--line);border-radius:6px;padding:6px 12px;min-width:128px;max-width:100%;background:var(--band)}
.fig .flabel,.fig .fnote{color:var(--muted);font-size:12px;overflow-wrap:anywhere}
.fig .fvalue{font-size:20px;font-weight:600;font-variant-numeric:tabular-nums;white-space:nowrap}
.fig.bad{border-color:#e6a09a;background:#fdecea}.fig.bad .fvalue{color:#b3261e}
.fig.thin .fvalue{color:var(--muted)}
p.wcount{margin:10px 0 0;color:var(--warn);font-weight:600}
ul.conclusions{padding-left:22px}ul.conclusions li{margin:3px 0}
details>summary h3{display:inline;margin:0}
details.meta,details.summary,details.same{margin:22px 0 6px}
td.exact{font-style:italic}
@media (max-width:600px){body{padding:12px}h1{font-size:19px}}
footer{margin-top:40px;color:var(--muted);font-size:12px;border-top:1px solid var(--line);padding-top:8px}
"#;

/// The page skeleton around `body`.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"rtscope {ver}\">\n\
         <title>{t}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}\n\
         <footer>Generated by rtscope {ver}. Percentiles come from HDR histograms (3 significant digits); \
         min, mean and max are exact. A self-contained file: no script, no external resources.</footer>\n\
         </body>\n</html>\n",
        t = esc(title),
        ver = esc(env!("CARGO_PKG_VERSION")),
    )
}

/// The report of one or more runs.
pub fn report_page(runs: &[Run]) -> String {
    let mut body = String::new();
    let title = match runs {
        [one] => format!("rtscope report: {} ({})", one.doc.experiment, one.name),
        _ => format!("rtscope report: {} runs", runs.len()),
    };
    let _ = writeln!(body, "<h1>{}</h1>", esc(&title));
    if runs.len() > 1 {
        body.push_str("<p class=\"sub\">Runs: ");
        let list: Vec<String> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| format!("<a href=\"#run{i}\">{}</a>", esc(&r.name)))
            .collect();
        body.push_str(&list.join(" · "));
        body.push_str("</p>\n");
    }
    for (i, r) in runs.iter().enumerate() {
        let _ = writeln!(body, "<section class=\"run\" id=\"run{i}\">");
        if runs.len() > 1 {
            let _ = writeln!(body, "<h2>{}</h2>", esc(&r.name));
        }
        body.push_str(&run_section(r));
        body.push_str("</section>\n");
    }
    page(&title, &body)
}

/// Above this many series the summary table starts collapsed.
pub const SUMMARY_OPEN_MAX: usize = 24;

/// Every part of one run's section: the answer first (key figures and
/// warnings; a timer sweep's conclusions and chart), then the tables and
/// charts, then the run's details, system and plan, collapsed.
pub fn run_section(r: &Run) -> String {
    let d = &r.doc;
    let mut s = String::new();
    s.push_str(&header(r));
    s.push_str(&super::answer::section(d, &doc_warnings(d)));
    let timer = if d.experiment == "timer" {
        super::timer_chart::section(d)
    } else {
        String::new()
    };
    s.push_str(&timer);
    let unit = doc_unit(std::slice::from_ref(d));
    let periodic = d.series.iter().any(|x| x.corrected.is_some());
    let heading = format!(
        "Summary (latency in {}{})",
        unit.name,
        if periodic { ", over the wake-ups" } else { "" }
    );
    let table = summary_table(&d.series, unit);
    // A timer sweep's table (one row per cell) follows its chart, closed;
    // so does any table of many series.
    if !timer.is_empty() || d.series.len() > SUMMARY_OPEN_MAX {
        let _ = writeln!(
            s,
            "<details class=\"summary\"><summary><h3>{heading}: {} series</h3></summary>\n{table}</details>",
            d.series.len()
        );
    } else {
        let _ = writeln!(s, "<h3>{heading}</h3>");
        s.push_str(&table);
    }
    s.push_str(&intended_table(&d.series, unit));
    s.push_str(&super::noise::section(d));
    s.push_str(&super::hwlat::section(d));
    let (shown, note) = chart_selection(&d.series);
    if let Some(note) = note {
        let _ = writeln!(s, "<p class=\"sub chart-selection\">{}</p>", esc(&note));
    }
    let plotted: Vec<Plotted> = shown
        .iter()
        .enumerate()
        .map(|(i, &si)| Plotted {
            label: d.series[si].label.clone(),
            color: color(i),
            series: &d.series[si],
            start_clock_ns: d.start_clock_ns,
        })
        .collect();
    s.push_str(&chart_block(
        &plotted,
        "Latency histogram",
        "histogram",
        &[],
    ));
    s.push_str(&chart_block(
        &plotted,
        "Latency over time",
        "timeline",
        &d.loads,
    ));
    s.push_str(&chart_block(&plotted, "Percentiles", "percentiles", &[]));
    s.push_str(&spikes_table(d, unit));
    s.push_str(&super::trace::section(d));
    s.push_str(&super::loads_table::table(&d.loads));
    s.push_str(&attributes_details(&d.series));
    s.push_str(&details_block(r));
    s
}

/// The run's details, system snapshot and plan, collapsed.
fn details_block(r: &Run) -> String {
    let d = &r.doc;
    let mut s = String::from(
        "<details class=\"meta\"><summary><h3>Run details, system and plan</h3></summary>\n",
    );
    s.push_str(&header_table(r));
    s.push_str("<div class=\"grid2\">\n<div>\n<h3>System</h3>\n");
    s.push_str(&kv_table(&system_rows(&d.system), "system"));
    s.push_str("</div>\n<div>\n<h3>Plan</h3>\n");
    let plan = plan_rows(&d.plan);
    let plan: Vec<(&str, String)> = plan.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    s.push_str(&kv_table(&plan, "plan"));
    s.push_str("</div>\n</div>\n</details>\n");
    s
}

/// One chart kind, overlaid, or as small multiples when there are many
/// series; the timeline shades when the scheduled `loads` were on.
pub fn chart_block(
    plotted: &[Plotted],
    title: &str,
    kind: &str,
    loads: &[rtscope_core::result::LoadReport],
) -> String {
    let build = |t: &str, draw: &[Plotted], w: u32, h: u32| match kind {
        "histogram" => charts::histogram(t, plotted, draw, w, h),
        "timeline" => charts::timeline_with_loads(t, plotted, draw, w, h, loads),
        _ => charts::percentiles(t, plotted, draw, w, h),
    };
    let mut s = format!("<h3>{}</h3>\n", esc(title));
    if plotted.len() <= OVERLAY_MAX {
        s.push_str(&render_or_note(&build(title, plotted, 1160, 380)));
    } else {
        s.push_str(&format!(
            "<p class=\"sub\">{} series: one small chart each, on shared axes.</p>\n<div class=\"multiples\">\n",
            plotted.len()
        ));
        for p in plotted {
            s.push_str(&render_or_note(&build(
                &p.label,
                std::slice::from_ref(p),
                380,
                250,
            )));
        }
        s.push_str("</div>\n");
    }
    s
}

pub use super::svg::render_or_note;

/// The run's duration, or "unknown" where an import did not hold it.
pub fn duration_text(d: &ResultDocument) -> String {
    if d.duration_ns == 0 && d.end_reason == EndReason::Imported {
        "unknown".into()
    } else {
        format_ns(d.duration_ns)
    }
}

fn end_reason_text(e: EndReason) -> &'static str {
    match e {
        EndReason::Loops => "all loops done",
        EndReason::Duration => "duration reached",
        EndReason::Interrupted => "interrupted (SIGINT/SIGTERM)",
        EndReason::Break => "stopped by --break-above",
        EndReason::Error => "a measurement thread failed",
        EndReason::Running => "still running (checkpoint)",
        EndReason::Imported => "imported from another tool's output",
    }
}

/// The run in one line, and its command line.
fn header(r: &Run) -> String {
    let d = &r.doc;
    let mut s = String::from("<div class=\"header\">\n");
    let _ = writeln!(
        s,
        "<p class=\"sub\">{} measured on {} from {} for {} ({}).</p>",
        esc(&d.experiment),
        esc(d.system.hostname.as_deref().unwrap_or("an unknown host")),
        esc(or_unknown(&d.started_at)),
        esc(&duration_text(d)),
        esc(end_reason_text(d.end_reason)),
    );
    let _ = writeln!(
        s,
        "<code class=\"cmd\">{}</code>",
        esc(&shell_join(&d.command_line))
    );
    s.push_str("</div>\n");
    s
}

fn header_table(r: &Run) -> String {
    let d = &r.doc;
    let mut rows: Vec<(String, String)> = vec![
        ("experiment".into(), esc(&d.experiment)),
        (
            "host".into(),
            esc(d.system.hostname.as_deref().unwrap_or("unknown")),
        ),
        ("started".into(), esc(or_unknown(&d.started_at))),
        ("ended".into(), esc(or_unknown(&d.ended_at))),
        ("duration".into(), esc(&duration_text(d))),
        ("end".into(), esc(end_reason_text(d.end_reason))),
        (
            "tool".into(),
            esc(&format!("{} {}", d.tool.name, d.tool.version)),
        ),
    ];
    if !r.path.as_os_str().is_empty() {
        rows.push(("file".into(), esc(&r.path.display().to_string())));
    }
    if let Some(b) = &d.break_event {
        rows.push((
            "break".into(),
            esc(&format!(
                "{} sample {} at t={} ns: {} (above {})",
                b.series,
                b.seq,
                b.t_ns,
                signed_ns(b.latency_ns),
                format_ns(b.threshold_ns)
            )),
        ));
    }
    if let Some(t) = &d.threshold {
        let periods = d
            .series
            .iter()
            .find(|x| x.label == "all")
            .and_then(|x| x.corrected.as_ref()?.above_threshold)
            .map(|n| format!(" ({n} of the intended periods)"))
            .unwrap_or_default();
        rows.push((
            "threshold".into(),
            esc(&format!(
                "--fail-above {}: {} samples above{periods}{}",
                format_ns(t.fail_above_ns),
                t.samples_above,
                if t.exceeded { " (FAILED)" } else { " (passed)" }
            )),
        ));
    }
    let mut s = String::new();
    s.push_str("<table class=\"kv\">\n");
    for (k, v) in rows {
        let _ = writeln!(s, "<tr><td>{}</td><td>{v}</td></tr>", esc(&k));
    }
    s.push_str("</table>\n");
    s
}

/// A signed duration: `-1.2us`, never clamped to 0.
pub fn signed_ns(ns: i64) -> String {
    if ns < 0 {
        format!("-{}", format_ns(ns.unsigned_abs()))
    } else {
        format_ns(ns.unsigned_abs())
    }
}

fn or_unknown(s: &str) -> &str {
    if s.is_empty() {
        "unknown"
    } else {
        s
    }
}

/// The document's warnings, plus what the snapshot and plan say weakens the
/// result where the document did not already say it.
pub fn doc_warnings(d: &ResultDocument) -> Vec<String> {
    let mut w: Vec<String> = d.warnings.clone();
    if d.end_reason != EndReason::Imported {
        for x in d.system.warnings() {
            if !w.contains(&x) {
                w.push(x);
            }
        }
        let mentions = |w: &[String], needle: &str| w.iter().any(|x| x.contains(needle));
        if d.plan.get("mlocked").and_then(|v| v.as_bool()) == Some(false) && !mentions(&w, "lock") {
            w.push("memory was not locked (no mlockall): page faults can add latency".into());
        }
        // A document written before runs said so themselves.
        if d.experiment == "cyclic" && !mentions(&w, "of the periods were missed") {
            if let Some(m) = missed_share(d) {
                w.push(m);
            }
        }
        let policy = d
            .plan
            .pointer("/rt/policy")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        if matches!(policy, "other" | "batch" | "idle") && !mentions(&w, "SCHED_") {
            w.push(format!(
                "measured as SCHED_{} without real-time priority",
                policy.to_uppercase()
            ));
        }
    }
    w
}

/// More than 1 % of the union's periods missed (the union: `all`, or the
/// only series), as a warning.
fn missed_share(d: &ResultDocument) -> Option<String> {
    let s = match &d.series[..] {
        [one] => one,
        many => many.iter().find(|s| s.label == "all")?,
    };
    let missed = s.counters.overruns;
    let due = s.stats.count + s.counters.dropped + missed;
    (u128::from(missed) * 100 > u128::from(due)).then(|| {
        format!(
            "{:.1}% of the periods were missed ({missed} of {due}: wake-ups after the \
             following deadline); percentiles over the wake-ups alone leave them out",
            missed as f64 * 100.0 / due as f64
        )
    })
}

fn opt(s: &Option<String>) -> String {
    s.clone().unwrap_or_else(|| "-".into())
}

/// The system snapshot as (name, value) rows, plain text.
pub fn system_rows(s: &SystemSnapshot) -> Vec<(&'static str, String)> {
    let governors = {
        let mut by: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for (cpu, g) in &s.governors {
            by.entry(g.as_str()).or_default().push(cpu.as_str());
        }
        if by.is_empty() {
            "-".to_string()
        } else if by.len() == 1 {
            by.keys()
                .next()
                .map(|g| format!("{g} (all)"))
                .unwrap_or_default()
        } else {
            by.iter()
                .map(|(g, cpus)| format!("{g}: {}", cpus.join(",")))
                .collect::<Vec<_>>()
                .join("; ")
        }
    };
    let rt_throttle = match (s.sched_rt_runtime_us, s.sched_rt_period_us) {
        (Some(r), _) if r < 0 => "off (sched_rt_runtime_us=-1)".to_string(),
        (Some(r), Some(p)) => format!("on: {r} us of every {p} us"),
        (Some(r), None) => format!("on: sched_rt_runtime_us={r}"),
        _ => "-".into(),
    };
    let lim = |v: Option<u64>| v.map_or("unlimited".to_string(), |x| x.to_string());
    // An imported document's snapshot holds only what the source had (no CPUs):
    // the process-level fields are not known then, not zero.
    let known = s.cpu_count > 0;
    let unknown = |v: String| if known { v } else { "-".to_string() };
    let or_dash = |v: &str| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.to_string()
        }
    };
    vec![
        ("kernel", or_dash(&s.kernel_release)),
        ("kernel version", or_dash(&s.kernel_version)),
        (
            "preemption",
            format!(
                "{}{}{}",
                or_dash(&s.preemption_model),
                s.preempt_dynamic_mode
                    .as_deref()
                    .map(|m| format!(" (mode {m})"))
                    .unwrap_or_default(),
                // The flag where the model does not say it already.
                if s.preempt_rt && s.preemption_model != "PREEMPT_RT" {
                    ", PREEMPT_RT"
                } else {
                    ""
                }
            ),
        ),
        ("arch", or_dash(&s.arch)),
        ("CPU", opt(&s.cpu_model)),
        (
            "CPUs online",
            if s.cpu_count == 0 {
                "-".into()
            } else {
                format!("{} ({})", s.online_cpus, s.cpu_count)
            },
        ),
        ("SMT", opt(&s.smt)),
        (
            "clocksource",
            format!(
                "{}{}",
                opt(&s.clocksource),
                if s.clocksources_available.is_empty() {
                    String::new()
                } else {
                    format!(" (available: {})", s.clocksources_available.join(" "))
                }
            ),
        ),
        ("isolcpus", opt(&s.isolcpus)),
        ("nohz_full", opt(&s.nohz_full)),
        ("rcu_nocbs", opt(&s.rcu_nocbs)),
        ("governor", governors),
        (
            "virtualization",
            unknown(match (&s.virtualization, s.hypervisor) {
                (Some(v), _) => v.clone(),
                (None, true) => "hypervisor".into(),
                (None, false) => "none detected".into(),
            }),
        ),
        ("RT throttling", rt_throttle),
        ("timer slack", unknown(format_ns(s.timer_slack_ns))),
        (
            "RLIMIT_RTPRIO",
            unknown(format!(
                "{} / {}",
                lim(s.rlimit_rtprio[0]),
                lim(s.rlimit_rtprio[1])
            )),
        ),
        ("euid", unknown(s.euid.to_string())),
        (
            "clock flags",
            if s.clock_flags.is_empty() {
                "-".into()
            } else {
                s.clock_flags.join(" ")
            },
        ),
        ("kernel cmdline", opt(&s.cmdline)),
    ]
}

/// A key/value table; values are plain text (escaped here).
pub fn kv_table(rows: &[(&str, String)], class: &str) -> String {
    let mut s = format!("<table class=\"kv {}\">\n", esc(class));
    for (k, v) in rows {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td class=\"mono\">{}</td></tr>",
            esc(k),
            esc(v)
        );
    }
    s.push_str("</table>\n");
    s
}

/// The plan as readable rows: nested objects as dotted keys (`rt.policy`,
/// `rt.priority`), a list of objects one row per element (`threads[0]`:
/// `index 0, cpus 0, period 1ms`), lists of plain values joined, `_ns` values
/// as durations, null as `none`.
pub fn plan_rows(plan: &serde_json::Value) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    flatten_plan("", plan, &mut rows);
    rows
}

fn plan_scalar(key: &str, v: &serde_json::Value) -> String {
    use serde_json::Value as V;
    match v {
        V::String(s) => s.clone(),
        V::Null => "none".into(),
        // Durations with their unit, signed as they are (a calibration residual of -2.8us).
        V::Number(n) if key.ends_with("_ns") => n
            .as_u64()
            .map(format_ns)
            .or_else(|| n.as_i64().map(signed_ns))
            .unwrap_or(n.to_string()),
        // A parsed spec (a load) reads best as the text it was parsed from.
        V::Object(o) if o.get("text").is_some_and(|t| t.is_string()) => {
            o["text"].as_str().unwrap_or_default().to_string()
        }
        V::Array(a)
            if a.iter().all(|x| {
                (!x.is_object() && !x.is_array()) || x.get("text").is_some_and(|t| t.is_string())
            }) =>
        {
            if a.is_empty() {
                "none".into()
            } else {
                a.iter()
                    .map(|x| plan_scalar(key, x))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        }
        V::Object(o) => o
            .iter()
            .map(|(k, x)| {
                let name = k.strip_suffix("_ns").unwrap_or(k);
                format!("{name} {}", plan_scalar(k, x))
            })
            .collect::<Vec<_>>()
            .join(", "),
        other => {
            let t = other.to_string();
            if t.chars().count() > 160 {
                format!("{}…", t.chars().take(160).collect::<String>())
            } else {
                t
            }
        }
    }
}

fn flatten_plan(prefix: &str, v: &serde_json::Value, rows: &mut Vec<(String, String)>) {
    use serde_json::Value as V;
    match v {
        V::Object(o) if prefix.is_empty() || o.len() <= 8 => {
            for (k, x) in o {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten_plan(&key, x, rows);
            }
        }
        V::Array(a)
            if a.iter().any(|x| {
                (x.is_object() && x.get("text").is_none_or(|t| !t.is_string())) || x.is_array()
            }) =>
        {
            const SHOWN: usize = 16;
            for (i, x) in a.iter().take(SHOWN).enumerate() {
                rows.push((format!("{prefix}[{i}]"), plan_scalar(prefix, x)));
            }
            if a.len() > SHOWN {
                rows.push((format!("{prefix}[…]"), format!("{} more", a.len() - SHOWN)));
            }
        }
        _ => rows.push((prefix.to_string(), plan_scalar(prefix, v))),
    }
}

/// The unit the summary tables of these documents use: chosen from the
/// largest p99 rather than the largest maximum, so that one spike does not
/// turn a table of 30 ns clock reads into rows of `0.0 µs`.
pub fn doc_unit(docs: &[ResultDocument]) -> Unit {
    let p99 = docs
        .iter()
        .flat_map(|d| d.series.iter().map(|s| s.stats.p99_ns))
        .max()
        .unwrap_or(0);
    latency_unit(p99 as f64)
}

pub use super::cells::{has_percentiles, in_unit, thin_tail, warnings_list, UNKNOWN};

/// The summary table: count, min, mean, p50, p99, p99.9, p99.99, max, stddev, overruns, dropped.
pub fn summary_table(series: &[Series], unit: Unit) -> String {
    let mut s = String::from(
        "<table class=\"summary\">\n<tr><th class=\"l\">series</th><th>count</th><th>min</th><th>mean</th>\
         <th>p50</th><th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th><th>stddev</th>\
         <th>overruns</th><th>dropped</th></tr>\n",
    );
    for se in series {
        let st = &se.stats;
        let v = |known: bool, ns: f64| {
            if known {
                format!("<td>{}</td>", in_unit(ns, unit))
            } else {
                format!("<td class=\"unknown\" title=\"not measured\">{UNKNOWN}</td>")
            }
        };
        // A quantile with fewer than 10 samples above it is greyed and
        // marked ≈: it says little more than the maximum does.
        let p = |ns: u64, q: f64| {
            if !has_percentiles(se) {
                v(false, 0.0)
            } else if let Some(c) = clamped_quantile(se, ns, q, unit) {
                c
            } else if thin_tail(st.count, q) {
                format!(
                    "<td class=\"thin\" title=\"fewer than 10 of {} samples lie above this quantile: it is about the maximum\">≈{}</td>",
                    st.count,
                    in_unit(ns as f64, unit)
                )
            } else {
                v(true, ns as f64)
            }
        };
        let _ = writeln!(
            s,
            "<tr><td class=\"l\">{}</td><td>{}</td>{}{}{}{}{}{}{}{}<td>{}</td><td>{}</td></tr>",
            esc(&se.label),
            st.count,
            v(st.has_samples(), st.min_ns as f64),
            v(st.has_mean(), st.mean_ns),
            p(st.p50_ns, 0.5),
            p(st.p99_ns, 0.99),
            p(st.p99_9_ns, 0.999),
            p(st.p99_99_ns, 0.9999),
            v(st.has_samples(), st.max_ns as f64),
            v(st.has_stddev(), st.stddev_ns),
            se.counters.overruns,
            se.counters.dropped,
        );
    }
    s.push_str("</table>\n");
    s
}

/// The cell of a quantile the histogram clamped: a series with negative
/// samples (a timer's static compensation wakes early) counts them as 0 in
/// its histogram, so a quantile read there as 0 lies somewhere between the
/// minimum and 0. The exact signed value where the series carries it
/// (`attributes.timer.error_p50_ns`, `error_p99_ns`), else `≤ 0` with the
/// range; `None` when the quantile is not clamped.
pub fn clamped_quantile(se: &Series, ns: u64, q: f64, unit: Unit) -> Option<String> {
    if se.stats.min_ns >= 0 || ns > 0 {
        return None;
    }
    let key = if q == 0.5 {
        Some("error_p50_ns")
    } else if q == 0.99 {
        Some("error_p99_ns")
    } else {
        None
    };
    let exact = key.and_then(|k| se.attributes.get("timer")?.get(k)?.as_i64());
    Some(match exact {
        Some(x) => format!(
            "<td class=\"exact\" title=\"exact signed value (the histogram counts negative samples as 0)\">{}</td>",
            in_unit(x as f64, unit)
        ),
        None => format!(
            "<td class=\"unknown\" title=\"negative samples are counted as 0 in the histogram: this quantile lies between the minimum ({}) and 0\">≤ 0</td>",
            signed_ns(se.stats.min_ns)
        ),
    })
}

/// The figures over the intended periods (each missed period counted at
/// its lateness) of the series that have them: periods, missed, mean, p50,
/// p99, p99.9, p99.99, max; nothing when no series missed a period.
pub fn intended_table(series: &[Series], unit: Unit) -> String {
    let with: Vec<(&Series, &rtscope_core::result::Stats)> = series
        .iter()
        .filter_map(|x| x.corrected.as_ref().map(|c| (x, &c.stats)))
        .collect();
    if !with.iter().any(|(x, _)| x.counters.overruns > 0) {
        return String::new();
    }
    let mut s = format!(
        "<h3>Over the intended periods (latency in {}, each missed period counted at its lateness)</h3>\n\
         <table class=\"summary intended\">\n<tr><th class=\"l\">series</th><th>periods</th><th>missed</th>\
         <th>mean</th><th>p50</th><th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th></tr>\n",
        unit.name
    );
    for (x, st) in with {
        let v = |known: bool, ns: f64| {
            if known {
                format!("<td>{}</td>", in_unit(ns, unit))
            } else {
                format!("<td class=\"unknown\" title=\"not measured\">{UNKNOWN}</td>")
            }
        };
        let pc = st.has_percentiles();
        let _ = writeln!(
            s,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td>{}{}{}{}{}{}</tr>",
            esc(&x.label),
            st.count,
            x.counters.overruns,
            v(st.has_mean(), st.mean_ns),
            v(pc, st.p50_ns as f64),
            v(pc, st.p99_ns as f64),
            v(pc, st.p99_9_ns as f64),
            v(pc, st.p99_99_ns as f64),
            v(st.has_samples(), st.max_ns as f64),
        );
    }
    s.push_str("</table>\n");
    s
}

/// The worst samples of all series, worst first, each once (a sample that is
/// in a thread's series and in the union is shown under the first series
/// that holds it).
pub fn spikes_table(d: &ResultDocument, unit: Unit) -> String {
    let mut seen = std::collections::HashSet::new();
    let mut all = Vec::new();
    for se in &d.series {
        for sp in &se.spikes {
            if seen.insert((sp.t_ns, sp.seq, sp.latency_ns, sp.cpu)) {
                all.push((se.label.as_str(), sp));
            }
        }
    }
    if all.is_empty() {
        return String::new();
    }
    all.sort_by_key(|a| std::cmp::Reverse(a.1.latency_ns));
    all.truncate(20);
    let mut s = format!(
        "<h3>Worst samples</h3>\n<table class=\"spikes\">\n<tr><th>latency ({})</th><th class=\"l\">series</th>\
         <th>time since start (s)</th><th>clock (ns)</th><th>sample</th><th>CPU</th></tr>\n",
        unit.name
    );
    for (label, sp) in all {
        let rel = if sp.t_ns >= d.start_clock_ns {
            format!("{:.6}", (sp.t_ns - d.start_clock_ns) as f64 / 1e9)
        } else {
            "-".into()
        };
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td class=\"l\">{}</td><td>{rel}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            in_unit(sp.latency_ns as f64, unit),
            esc(label),
            sp.t_ns,
            sp.seq,
            sp.cpu
        );
    }
    s.push_str("</table>\n");
    s
}

fn json_cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "-".into(),
        other => other.to_string(),
    }
}

fn attributes_details(series: &[Series]) -> String {
    if series.iter().all(|s| s.attributes.is_empty()) {
        return String::new();
    }
    let mut s =
        String::from("<details><summary>Series attributes</summary>\n<table class=\"attrs\">\n");
    for se in series {
        let attrs: Vec<String> = se
            .attributes
            .iter()
            .map(|(k, v)| format!("{k}={}", json_cell(v)))
            .collect();
        let _ = writeln!(
            s,
            "<tr><td class=\"l\">{}</td><td class=\"l mono\">{}</td></tr>",
            esc(&se.label),
            esc(&attrs.join("  "))
        );
    }
    s.push_str("</table>\n</details>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preemption(model: &str, mode: Option<&str>, rt: bool) -> String {
        let s = SystemSnapshot {
            preemption_model: model.into(),
            preempt_dynamic_mode: mode.map(str::to_string),
            preempt_rt: rt,
            ..Default::default()
        };
        system_rows(&s)
            .into_iter()
            .find(|(k, _)| *k == "preemption")
            .unwrap()
            .1
    }

    fn periodic(missed: u32, corrected: bool) -> Series {
        periodic_of(98, missed, corrected)
    }

    fn periodic_of(n: u64, missed: u32, corrected: bool) -> Series {
        use rtscope_core::record::SeriesRecorder;
        use rtscope_core::sample::Sample;
        let mut r = SeriesRecorder::new(0, 4, Some(50_000)).over_intended_periods(1_000_000);
        for seq in 0..n {
            let late = seq == 50 && missed > 0;
            r.record(&Sample {
                seq,
                t_ns: seq * 1_000_000,
                latency_ns: if late {
                    i64::from(missed) * 1_000_000 + 7
                } else {
                    20_000
                },
                overruns: if late { missed } else { 0 },
                cpu: 0,
            });
        }
        let mut x = r.to_series("all", 0);
        if !corrected {
            x.corrected = None;
        }
        x
    }

    fn doc(series: Vec<Series>) -> ResultDocument {
        let mut d =
            ResultDocument::new("cyclic", serde_json::json!({}), Default::default(), series);
        d.end_reason = EndReason::Duration;
        d
    }

    /// The report's tables say what they are over; the one over intended
    /// periods only where periods were missed, with the missed ones in it.
    #[test]
    fn summary_tables_say_what_they_are_over() {
        let unit = charts::latency_unit(20_000.0);
        let t = intended_table(&[periodic(2, true)], unit);
        assert!(t.contains("<h3>Over the intended periods (latency in µs, each missed period counted at its lateness)</h3>"), "{t}");
        // 98 wake-ups + 2 skipped: 100 periods, 2 missed; max 2 ms.
        assert!(
            t.contains("<td class=\"l\">all</td><td>100</td><td>2</td>"),
            "{t}"
        );
        assert!(t.contains("<td>2000.0</td></tr>"), "{t}");
        assert_eq!(intended_table(&[periodic(0, true)], unit), "");
        assert_eq!(intended_table(&[periodic(2, false)], unit), "");
        let run = |x: Series| Run {
            name: "r".into(),
            path: Default::default(),
            doc: doc(vec![x]),
        };
        let page = run_section(&run(periodic(2, true)));
        assert!(page.contains("<h3>Summary (latency in µs, over the wake-ups)</h3>"));
        assert!(page.contains("<h3>Over the intended periods"));
        let page = run_section(&run(periodic(2, false)));
        assert!(page.contains("<h3>Summary (latency in µs)</h3>"));
        assert!(!page.contains("intended"));
        let mut r = run(periodic(2, true));
        r.doc.threshold = Some(rtscope_core::result::Threshold {
            fail_above_ns: 50_000,
            exceeded: true,
            samples_above: 1,
        });
        // 2000007 and the skipped 1000007 (not 7).
        assert!(run_section(&r)
            .contains("--fail-above 50us: 1 samples above (2 of the intended periods) (FAILED)"));
    }

    /// A cyclic document that missed more than 1 % of its periods and does
    /// not say so (written before runs said it) gets the warning; one that
    /// says it, one within 1 %, or another experiment, do not.
    #[test]
    fn missed_periods_are_warned_of_in_older_documents() {
        let missed = |d: &ResultDocument| {
            doc_warnings(d)
                .into_iter()
                .filter(|w| w.contains("of the periods were missed"))
                .collect::<Vec<_>>()
        };
        let d = doc(vec![periodic(2, false)]);
        assert_eq!(
            missed(&d),
            ["2.0% of the periods were missed (2 of 100: wake-ups after the following deadline); percentiles over the wake-ups alone leave them out"]
        );
        let mut said = d.clone();
        said.warnings = vec!["thread 1: 2.0% of the periods were missed (...)".into()];
        assert_eq!(missed(&said).len(), 1);
        let mut other = d.clone();
        other.experiment = "irq".into();
        assert!(missed(&other).is_empty());
        assert!(
            missed(&doc(vec![periodic_of(99, 1, false)])).is_empty(),
            "1 of 100 is not above 1 %"
        );
        assert_eq!(
            missed(&doc(vec![periodic_of(98, 1, false)])).len(),
            1,
            "1 of 99 is"
        );
        // Several series: the union's counters.
        let mut t = periodic(0, false);
        t.label = "thread 0".into();
        assert_eq!(missed(&doc(vec![t.clone(), periodic(2, false)])).len(), 1);
        assert!(missed(&doc(vec![periodic(2, false), t.clone(), t])).len() == 1);
    }

    /// A quantile the histogram clamped to 0 shows signed: exact where the
    /// series carries it, else `≤ 0` with the minimum; others as they are.
    #[test]
    fn negative_quantiles_are_not_clamped() {
        let unit = charts::latency_unit(20_000.0);
        let mut se = periodic(0, false);
        assert_eq!(
            clamped_quantile(&se, 0, 0.5, unit),
            None,
            "min is not negative"
        );
        se.stats.min_ns = -5_611;
        assert_eq!(
            clamped_quantile(&se, 8_530, 0.99, unit),
            None,
            "above 0: exact"
        );
        let c = clamped_quantile(&se, 0, 0.5, unit).unwrap();
        assert!(
            c.contains(">≤ 0</td>") && c.contains("minimum (-5.611us)"),
            "{c}"
        );
        se.attributes.insert(
            "timer".into(),
            serde_json::json!({"error_p50_ns": -1745, "error_p99_ns": -12}),
        );
        let c = clamped_quantile(&se, 0, 0.5, unit).unwrap();
        assert!(
            c.starts_with("<td class=\"exact\"") && c.ends_with(">-1.7</td>"),
            "{c}"
        );
        let c = clamped_quantile(&se, 0, 0.99, unit).unwrap();
        assert!(c.ends_with(">-0.0</td>"), "{c}");
        let c = clamped_quantile(&se, 0, 0.999, unit).unwrap();
        assert!(c.contains(">≤ 0</td>"), "no exact p99.9: {c}");
        se.stats.p50_ns = 0;
        let t = summary_table(std::slice::from_ref(&se), unit);
        assert!(t.contains(">-1.7</td>"), "{t}");
        assert_eq!(signed_ns(-1_200), "-1.2us");
        let plan = serde_json::json!({"calibration": {"entries": [
            {"api": "x", "residual_ns": [-2817, 799], "offset_ns": 25363}]}});
        let rows = plan_rows(&plan);
        assert_eq!(
            rows[0].1, "api x, offset 25.363us, residual -2.817us, 799ns",
            "{rows:?}"
        );
        assert_eq!(signed_ns(1_200), "1.2us");
        assert_eq!(signed_ns(0), "0ns");
    }

    /// The answer leads; system and plan are collapsed at the end.
    #[test]
    fn the_section_leads_with_the_answer() {
        let r = Run {
            name: "r".into(),
            path: Default::default(),
            doc: doc(vec![periodic(2, true)]),
        };
        let page = run_section(&r);
        let answer = page.find("<section class=\"answer\">").unwrap();
        let summary = page.find("<h3>Summary").unwrap();
        let meta = page.find("<details class=\"meta\">").unwrap();
        let system = page.find("<table class=\"kv system\">").unwrap();
        assert!(
            answer < summary && summary < meta && meta < system,
            "{page}"
        );
        // Many series: the table is collapsed.
        let many: Vec<Series> = (0..=SUMMARY_OPEN_MAX)
            .map(|i| {
                let mut x = periodic(0, true);
                x.label = format!("t{i}");
                x
            })
            .collect();
        let r = Run {
            doc: doc(many.clone()),
            ..r
        };
        assert!(run_section(&r).contains("<details class=\"summary\"><summary><h3>Summary (latency in µs, over the wake-ups): 25 series</h3>"));
        let r = Run {
            doc: doc(many[1..].to_vec()),
            ..r
        };
        assert!(!run_section(&r).contains("<details class=\"summary\">"));
    }

    /// A PREEMPT_RT kernel reads "PREEMPT_RT" once (the kernel lab's RT
    /// guests read "PREEMPT_RT, PREEMPT_RT").
    #[test]
    fn preemption_row_names_rt_once() {
        assert_eq!(preemption("PREEMPT_RT", None, true), "PREEMPT_RT");
        assert_eq!(
            preemption("PREEMPT_DYNAMIC", Some("full"), false),
            "PREEMPT_DYNAMIC (mode full)"
        );
        // The flag alone (a model the version did not name) is still said.
        assert_eq!(preemption("unknown", None, true), "unknown, PREEMPT_RT");
        assert_eq!(preemption("", None, false), "-");
    }
}
