//! The HTML page of `rtscope compare --html`: the answer first. The
//! verdicts (one line per series and run, coloured worse / better / same)
//! and the warnings that weaken them open the page; then what differs
//! between the runs (system and plan: only the fields that differ, the
//! identical ones counted and collapsed); then each series' table, intervals,
//! changes and charts; the method last.

use std::fmt::Write;

use super::charts::{self, Plotted};
use super::compare::{compared_series, method_note, plan_differences, Comparison, Verdict};
use super::html::{self, plan_rows, system_rows, warnings_list};
use super::svg::color;
use super::verdict::{pct, Call, Effect, Settings};
use super::{esc, Run};

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
    if let Some(c) = cs.first() {
        let _ = writeln!(
            b,
            "<p class=\"sub\">{} is the baseline; ratios and changes are run / baseline.</p>",
            esc(&c.runs[0].name)
        );
    }
    // 1. The answer: every verdict, and what weakens them.
    b.push_str(&verdicts_block(cs));
    // 2. Tail verdicts (exceedances per hour), after the percentile
    //    verdicts and before the runs' details.
    for c in cs {
        let (tails, names) = c.tails();
        b.push_str(&super::tail::html_section(&tails, &names));
    }
    // 3. What differs between the runs.
    if let Some(c) = cs.first() {
        b.push_str(&runs_table(&c.runs));
        b.push_str(&differences(&c.runs));
        b.push_str(&super::compare_causes::html(&c.runs));
    }
    // 4. Each series: its table, intervals, changes and charts.
    for c in cs {
        if !c.cell.is_empty() {
            let _ = writeln!(b, "<h2>{}</h2>", esc(&c.cell));
        } else {
            b.push_str("<h2>Series</h2>\n");
        }
        for n in &c.notes {
            let _ = writeln!(b, "<p class=\"sub\">Note: {}</p>", esc(n));
        }
        for (s, m) in c.series.iter().zip(&c.matched) {
            let _ = writeln!(b, "<h3>{}</h3>", esc(&s.label));
            for (i, v) in s.verdicts.iter().enumerate() {
                let _ = writeln!(
                    b,
                    "<p class=\"verdict {}\">{}</p>",
                    v.class(),
                    esc(&v.text(&c.runs[i + 1].name, &c.runs[0].name))
                );
                let _ = writeln!(b, "<p class=\"sub\">Intervals: {}</p>", esc(&v.methods()));
                for a in v.advice() {
                    let _ = writeln!(b, "<p class=\"sub\">Advice: {}</p>", esc(&a));
                }
            }
            b.push_str(&rows_table(&s.rows));
            b.push_str(&effects_svg(&s.label, &c.runs, &s.verdicts));
            // The charts show what the verdicts were drawn from.
            let (views, _) = compared_series(&c.runs, m);
            let plotted: Vec<Plotted> = c
                .runs
                .iter()
                .zip(&views)
                .enumerate()
                .map(|(i, (r, v))| Plotted {
                    label: r.name.clone(),
                    color: color(i),
                    series: v,
                    start_clock_ns: r.doc.start_clock_ns,
                })
                .collect();
            let over = s.over.header().trim_start_matches(", ");
            let t = |k: &str| {
                if over.is_empty() || k.starts_with("Latency over time") {
                    format!("{k}: {}", s.label)
                } else {
                    format!("{k} ({over}): {}", s.label)
                }
            };
            for chart in [
                charts::histogram(&t("Histogram"), &plotted, &plotted, 1160, 360),
                charts::percentiles(&t("Percentiles"), &plotted, &plotted, 1160, 360),
                charts::timeline(&t("Latency over time"), &plotted, &plotted, 1160, 300),
            ] {
                b.push_str(&html::render_or_note(&chart));
            }
        }
    }
    let delta = cs
        .iter()
        .flat_map(|c| &c.series)
        .flat_map(|s| &s.verdicts)
        .map(|v| v.min_effect)
        .next()
        .unwrap_or(Settings::default().min_effect);
    let _ = writeln!(
        b,
        "<details class=\"method\"><summary><h3>How the verdicts are drawn</h3></summary>\n<p class=\"sub\">{}</p>\n</details>",
        esc(&method_note(delta))
    );
    html::page(&title, &b)
}

/// The verdicts of every series (one line per run against the baseline),
/// then the warnings: conditions that differ, loads that fell short, and
/// each run's own warnings (those every run has, once).
pub fn verdicts_block(cs: &[Comparison]) -> String {
    let mut b = String::from("<section class=\"answer verdicts\">\n<h2>Verdicts</h2>\n");
    let mut any = false;
    for c in cs {
        for s in &c.series {
            for (i, v) in s.verdicts.iter().enumerate() {
                any = true;
                let what = if c.cell.is_empty() {
                    s.label.clone()
                } else {
                    format!("{} · {}", c.cell, s.label)
                };
                let _ = writeln!(
                    b,
                    "<p class=\"verdict {}\"><span class=\"vlabel\">{}:</span> {}</p>",
                    v.class(),
                    esc(&what),
                    esc(&v.text(&c.runs[i + 1].name, &c.runs[0].name))
                );
            }
        }
    }
    if !any {
        b.push_str("<p class=\"verdict same\">No series to compare.</p>\n");
    }
    let mut warnings: Vec<String> = Vec::new();
    for c in cs {
        let (_, unlike) = plan_differences(&c.runs);
        warnings.extend(unlike);
        for r in &c.runs {
            warnings.extend(crate::load::shortfall::in_comparison(&r.name, &r.doc.loads));
        }
        warnings.extend(run_warnings(&c.runs));
    }
    let mut seen = std::collections::HashSet::new();
    warnings.retain(|w| seen.insert(w.clone()));
    if !warnings.is_empty() {
        let _ = writeln!(
            b,
            "<p class=\"wcount\">{} warning{}:</p>",
            warnings.len(),
            if warnings.len() == 1 { "" } else { "s" }
        );
        b.push_str(&warnings_list(&warnings));
    }
    b.push_str("</section>\n");
    b
}

/// The runs' own warnings: those of every run once (`all runs: ...`), the
/// others under the run's name.
pub fn run_warnings(runs: &[Run]) -> Vec<String> {
    let each: Vec<Vec<String>> = runs.iter().map(|r| html::doc_warnings(&r.doc)).collect();
    let mut out = Vec::new();
    if let Some(first) = each.first() {
        for w in first {
            if runs.len() > 1 && each.iter().all(|x| x.contains(w)) {
                out.push(format!("all runs: {w}"));
            }
        }
    }
    for (r, ws) in runs.iter().zip(&each) {
        for w in ws {
            if runs.len() < 2 || !each.iter().all(|x| x.contains(w)) {
                out.push(format!("{}: {w}", r.name));
            }
        }
    }
    out
}

/// The system and plan fields that differ between the runs, side by side;
/// the identical ones counted, listed collapsed. Plan fields that name
/// outputs (`json`, `report`, ...) are left out of both.
pub fn differences(runs: &[Run]) -> String {
    let mut differ: Vec<Vec<String>> = Vec::new();
    let mut same: Vec<(String, String)> = Vec::new();
    let systems: Vec<Vec<(&str, String)>> = runs
        .iter()
        .map(|r| {
            let host = r.doc.system.hostname.clone().unwrap_or_else(|| "-".into());
            std::iter::once(("host", host))
                .chain(system_rows(&r.doc.system))
                .collect()
        })
        .collect();
    for (k, (name, first)) in systems[0].iter().enumerate() {
        let vals: Vec<String> = systems.iter().map(|c| c[k].1.clone()).collect();
        if vals.iter().all(|v| v == first) {
            same.push((format!("system · {name}"), first.clone()));
        } else {
            differ.push(
                std::iter::once(format!("system · {name}"))
                    .chain(vals)
                    .collect(),
            );
        }
    }
    let (plan_diff, _) = plan_differences(runs);
    for row in plan_diff.iter().skip(1) {
        let mut row = row.clone();
        row[0] = format!("plan · {}", row[0]);
        differ.push(row);
    }
    let plans: Vec<std::collections::BTreeMap<String, String>> = runs
        .iter()
        .map(|r| plan_rows(&r.doc.plan).into_iter().collect())
        .collect();
    for (k, v) in &plans[0] {
        let root = k.split(['.', '[']).next().unwrap_or(k);
        if super::compare::OUTPUT_KEYS.contains(&root) {
            continue;
        }
        if plans.iter().all(|p| p.get(k) == Some(v)) {
            same.push((format!("plan · {k}"), v.clone()));
        }
    }
    let mut s = String::from("<h3>What differs between the runs</h3>\n");
    if differ.is_empty() {
        s.push_str("<p class=\"sub\">Nothing: the systems and the plans are the same.</p>\n");
    } else {
        let mut rows = vec![std::iter::once("field".to_string())
            .chain(runs.iter().map(|r| r.name.clone()))
            .collect::<Vec<_>>()];
        rows.extend(differ);
        s.push_str(
            &rows_table(&rows).replace("<table class=\"compare\">", "<table class=\"kv differs\">"),
        );
    }
    if !same.is_empty() {
        let _ = writeln!(
            s,
            "<details class=\"same\"><summary>identical: {} fields</summary>",
            same.len()
        );
        let rows: Vec<(&str, String)> = same.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        s.push_str(&html::kv_table(&rows, "same"));
        s.push_str("</details>\n");
    }
    s
}

/// The changes of one series as error bars: one row per run and percentile,
/// the no-effect zone shaded, intervals without a verdict in grey.
pub fn effects_svg(label: &str, runs: &[Run], verdicts: &[Verdict]) -> String {
    let rows: Vec<(usize, &Effect)> = verdicts
        .iter()
        .enumerate()
        .flat_map(|(i, v)| v.effects.iter().map(move |e| (i + 1, e)))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let z = verdicts[0].min_effect.ln_1p();
    // The axis: log ratio, symmetric, wide enough for every interval.
    let mut span = (2.0 * z).max(0.05);
    for (_, e) in &rows {
        if let Some((lo, hi)) = e.interval {
            span = span.max(lo.ln_1p().abs()).max(hi.ln_1p().abs());
        }
        if let Some(x) = e.estimate {
            span = span.max(x.ln_1p().abs());
        }
    }
    let span = (span * 1.1).min(3.0);
    let (w, left, plot_w, row_h, top) = (1160.0, 150.0, 620.0, 24.0, 34.0);
    let h = top + row_h * rows.len() as f64 + 30.0;
    let x = |l: f64| left + (l.clamp(-span, span) + span) / (2.0 * span) * plot_w;
    let mut s = format!(
        "<div class=\"cw\"><svg class=\"chart\" data-chart=\"effects\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" \
         role=\"img\" aria-label=\"{}\">\n<text class=\"ctitle\" x=\"8\" y=\"18\">{}</text>\n",
        esc(&format!("Changes: {label}")),
        esc(&format!("Changes against the baseline, 95% intervals: {label}"))
    );
    let (y0, y1) = (top - 6.0, top + row_h * rows.len() as f64);
    let _ = writeln!(
        s,
        "<rect class=\"zone\" x=\"{:.1}\" y=\"{y0:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#e9ecf1\"/>",
        x(-z),
        x(z) - x(-z),
        y1 - y0
    );
    for t in [-span, -span / 2.0, 0.0, span / 2.0, span] {
        let _ = writeln!(
            s,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{y0:.1}\" y2=\"{y1:.1}\" stroke=\"{1}\"/>\
             <text class=\"alabel\" x=\"{0:.1}\" y=\"{2:.1}\" text-anchor=\"middle\">{3}</text>",
            x(t),
            if t == 0.0 { "#9aa3b2" } else { "#eceff4" },
            y1 + 14.0,
            esc(&pct(t.exp_m1()))
        );
    }
    for (k, (run, e)) in rows.iter().enumerate() {
        let y = top + row_h * k as f64 + row_h / 2.0 - 6.0;
        let decided = matches!(e.call, Call::Worse | Call::Better);
        let col = if decided {
            color(*run - 1 + 1).to_string()
        } else {
            "#a0a6b0".to_string()
        };
        let _ = writeln!(
            s,
            "<text x=\"8\" y=\"{:.1}\"{}>{}</text>",
            y + 4.0,
            if decided { "" } else { " class=\"alabel\"" },
            // A long run name would run into the bars: cut, whole in the tooltip.
            {
                let label = format!("{} {}", runs[*run].name, e.name);
                match super::svg::fit(&label, 11.0, left - 14.0) {
                    (t, false) => esc(&t),
                    (t, true) => format!("<title>{}</title>{}", esc(&label), esc(&t)),
                }
            }
        );
        if let Some((lo, hi)) = e.interval {
            let (a, b) = (x(lo.ln_1p()), x(hi.ln_1p()));
            let _ = writeln!(
                s,
                "<line class=\"errbar\" x1=\"{a:.1}\" x2=\"{b:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{col}\" stroke-width=\"2.5\"/>\
                 <line x1=\"{a:.1}\" x2=\"{a:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"{col}\"/>\
                 <line x1=\"{b:.1}\" x2=\"{b:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"{col}\"/>",
                y - 5.0,
                y + 5.0,
                y - 5.0,
                y + 5.0
            );
        }
        if let Some(est) = e.estimate {
            let _ = writeln!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"{col}\"/>",
                x(est.ln_1p())
            );
        }
        let what = match e.call {
            Call::Worse => "worse",
            Call::Better => "better",
            Call::Same => "same within the zone",
            Call::Unclear => "no clear difference",
            Call::TooFewSamples => "too few samples",
            Call::NoDistribution => "no distribution recorded",
        };
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\"{}>{} {}</text>",
            left + plot_w + 12.0,
            y + 4.0,
            if decided { "" } else { " class=\"alabel\"" },
            esc(e.text().trim_start_matches(e.name).trim()),
            what
        );
    }
    s.push_str("</svg></div>\n");
    s
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

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::result::ResultDocument;

    fn run(name: &str, kernel: &str, loads: &str, warnings: &[&str]) -> Run {
        let mut doc = ResultDocument::new(
            "cyclic",
            serde_json::json!({"period_ns": 1_000_000, "loads": loads, "json": format!("{name}.json")}),
            Default::default(),
            vec![],
        );
        doc.system.kernel_release = kernel.into();
        doc.system.hostname = Some("box".into());
        doc.end_reason = rtscope_core::result::EndReason::Imported;
        doc.warnings = warnings.iter().map(|w| w.to_string()).collect();
        Run {
            name: name.into(),
            path: Default::default(),
            doc,
        }
    }

    /// Only the fields that differ are tabled; the identical ones are
    /// counted and collapsed; output paths are neither.
    #[test]
    fn differences_show_what_differs() {
        let runs = [
            run("a", "6.1", "none", &[]),
            run("b", "6.6-rt", "cpu:50", &[]),
        ];
        let d = differences(&runs);
        assert!(
            d.contains("<tr><td class=\"l\">system · kernel</td><td>6.1</td><td>6.6-rt</td></tr>"),
            "{d}"
        );
        assert!(
            d.contains("<td class=\"l\">plan · loads</td><td>none</td><td>cpu:50</td>"),
            "{d}"
        );
        assert!(!d.contains("plan · json"), "{d}");
        assert!(!d.contains("system · host</td><td>"), "{d}");
        let same = d
            .split("<details class=\"same\">")
            .nth(1)
            .expect("identical, collapsed");
        assert!(
            same.contains(">system · host<") && same.contains(">plan · period_ns<"),
            "{same}"
        );
        // The host and the snapshot's rows less the kernel, and the plan's period_ns.
        let n = (1 + system_rows(&runs[0].doc.system).len() - 1) + 1;
        assert!(
            d.contains(&format!("<summary>identical: {n} fields</summary>")),
            "{d}"
        );
        let same_runs = [run("a", "6.1", "none", &[]), run("b", "6.1", "none", &[])];
        assert!(
            differences(&same_runs).contains("Nothing: the systems and the plans are the same.")
        );
    }

    fn with_series(mut r: Run, base_ns: i64) -> Run {
        use rtscope_core::record::SeriesRecorder;
        use rtscope_core::sample::Sample;
        let mut rec = SeriesRecorder::new(0, 4, None);
        for seq in 0..3000u64 {
            rec.record(&Sample {
                seq,
                t_ns: seq * 1_000_000,
                latency_ns: base_ns + (seq % 13) as i64 * 100,
                overruns: 0,
                cpu: 0,
            });
        }
        r.doc.series = vec![rec.to_series("all", 0)];
        r.doc.duration_ns = 3_000_000_000;
        r
    }

    /// The verdicts lead the page, each named by its series (and cell), the
    /// conditions that differ warned of with them.
    #[test]
    fn verdicts_lead() {
        let runs = vec![
            with_series(run("a", "6.1", "none", &[]), 20_000),
            with_series(run("b", "6.1", "cpu:50", &[]), 40_000),
        ];
        let c = super::super::compare::build_with(
            String::new(),
            runs.clone(),
            &[],
            &Settings::default(),
        )
        .unwrap();
        let b = verdicts_block(std::slice::from_ref(&c));
        assert!(b.contains("<p class=\"verdict worse\"><span class=\"vlabel\">all:</span> b is worse than a at p50"), "{b}");
        assert!(b.contains("the runs differ in loads"), "{b}");
        assert!(!b.contains("No series to compare."), "{b}");
        let page = html_page(std::slice::from_ref(&c));
        assert!(page.contains("<h2>Series</h2>"), "{page}");
        let c = super::super::compare::build_with(
            "p1ms/cpu.json".into(),
            runs,
            &[],
            &Settings::default(),
        )
        .unwrap();
        let b = verdicts_block(std::slice::from_ref(&c));
        assert!(
            b.contains("<span class=\"vlabel\">p1ms/cpu.json · all:</span>"),
            "{b}"
        );
        let page = html_page(&[c]);
        // A matrix cell's series under the cell's name.
        assert!(page.contains("<h2>p1ms/cpu.json</h2>"), "{page}");
        assert!(!page.contains("<h2>Series</h2>"), "{page}");
        let v = page.find("<p class=\"verdict").unwrap();
        assert!(v < page.find("What differs between the runs").unwrap());
        assert!(
            page.find("How the verdicts are drawn").unwrap()
                > page.find("data-chart=\"histogram\"").unwrap()
        );
    }

    /// The changes as error bars, every coordinate: the zone, the ticks,
    /// each run's bar, estimate and call (a run worse at p50, one better).
    #[test]
    fn effects_chart() {
        let runs = vec![
            with_series(run("a", "6.1", "none", &[]), 20_000),
            with_series(run("b", "6.1", "none", &[]), 40_000),
            with_series(run("a run with a long name", "6.1", "none", &[]), 10_000),
        ];
        let c = super::super::compare::build_with(String::new(), runs, &[], &Settings::default())
            .unwrap();
        let svg = effects_svg("all", &c.runs, &c.series[0].verdicts);
        assert!(
            svg.contains("<title>a run with a long name p99.9</title>"),
            "{svg}"
        );
        insta::assert_snapshot!(svg.replace("/>", "/>\n"));
        assert_eq!(effects_svg("all", &c.runs[..1], &[]), "");
    }

    /// The runs, one row each, named in their colour.
    #[test]
    fn runs_table_names_each_run_in_its_colour() {
        let runs: Vec<Run> = ["a", "b"]
            .iter()
            .map(|name| {
                let mut r = run(name, "6.1", "none", &[]);
                r.path = format!("{name}.json").into();
                r.doc.started_at = "2026-11-26T06:00:00Z".into();
                r.doc.duration_ns = 3_000_000_000;
                r.doc.command_line = vec!["rtscope".into(), "cyclic".into(), "-q".into()];
                r
            })
            .collect();
        let row = |i: usize, name: &str| {
            format!(
                "<tr><td class=\"l\" style=\"color:{}\">{name}</td><td class=\"l\">{name}.json</td>\
                 <td class=\"l\">cyclic</td><td class=\"l\">2026-11-26T06:00:00Z</td><td class=\"l\">3s</td>\
                 <td class=\"l\">rtscope cyclic -q</td></tr>\n",
                color(i)
            )
        };
        assert_eq!(
            runs_table(&runs),
            format!(
                "<h3>Runs</h3>\n<table class=\"runs\">\n<tr><th class=\"l\">run</th><th class=\"l\">file</th>\
                 <th class=\"l\">experiment</th><th class=\"l\">started</th><th class=\"l\">duration</th>\
                 <th class=\"l\">command line</th></tr>\n{}{}</table>\n",
                row(0, "a"),
                row(1, "b")
            )
        );
    }

    /// Warnings every run has are said once; the others under their run.
    #[test]
    fn shared_warnings_once() {
        let runs = [
            run("a", "6.1", "none", &["in a VM", "only a"]),
            run("b", "6.1", "none", &["in a VM"]),
        ];
        assert_eq!(run_warnings(&runs), ["all runs: in a VM", "a: only a"]);
        assert_eq!(run_warnings(&runs[..1]), ["a: in a VM", "a: only a"]);
        let b = verdicts_block(&[]);
        assert!(b.contains("No series to compare."), "{b}");
        assert!(!b.contains("wcount"), "{b}");
    }
}
