//! The timer experiment's own chart: wake-up error against the requested
//! delay, one line per compensation strategy (p50 solid, p99 dashed), one
//! chart per wait API and policy (small multiples on shared axes when there
//! are several). The study's Table 1 (docs/timer.md) as a picture: a flat uncompensated error
//! across the sweep, and what each strategy makes of it.
//!
//! It reads the signed error figures each timer series carries in
//! `attributes.timer` (the series' own histogram holds |error| only for
//! strategies that can wake early).

use std::collections::BTreeMap;

use rtscope_core::result::{ResultDocument, Series};

use super::charts::{latency_unit, log_ticks_125};
use super::svg::render_or_note;
use super::svg::{color, Axis, Chart, Line, Scale};

/// Strategies in the order they are drawn (and coloured).
const STRATEGIES: [&str; 4] = ["none", "static", "adaptive", "hybrid"];

/// One point of the sweep: (requested ns, p50 error ns, p99 error ns).
type Point = (f64, f64, f64);

/// (api, policy) → strategy → points sorted by delay.
type Groups = BTreeMap<(String, String), BTreeMap<String, Vec<Point>>>;

fn groups(series: &[Series]) -> Groups {
    let mut g: Groups = BTreeMap::new();
    for s in series {
        let Some(t) = s.attributes.get("timer") else {
            continue;
        };
        let text = |k: &str| t.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let num = |k: &str| t.get(k).and_then(|v| v.as_f64());
        let (Some(api), Some(policy), Some(comp), Some(req), Some(p50), Some(p99)) = (
            text("api"),
            text("policy"),
            text("compensation"),
            num("requested_ns"),
            num("error_p50_ns"),
            num("error_p99_ns"),
        ) else {
            continue;
        };
        g.entry((api, policy))
            .or_default()
            .entry(comp)
            .or_default()
            .push((req, p50, p99));
    }
    for per in g.values_mut() {
        for pts in per.values_mut() {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
    }
    g
}

/// The error axis' coordinate of `ns`: asinh of microseconds.
fn sym(ns: f64) -> f64 {
    (ns / 1_000.0).asinh()
}

/// The strategy's colour: fixed per strategy, so that every small chart
/// uses the same one.
fn strategy_color(name: &str) -> &'static str {
    color(STRATEGIES.iter().position(|s| *s == name).unwrap_or(4))
}

/// The section: a heading, a sentence and the chart(s); empty when the
/// document has no sweep (a beacon or service run).
pub fn section(d: &ResultDocument) -> String {
    let g = groups(&d.series);
    if g.is_empty() {
        return String::new();
    }
    // Shared axes: every delay and every error of every chart.
    let all = || g.values().flat_map(|m| m.values().flatten());
    let x_min = all().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let x_max = all().map(|p| p.0).fold(0.0, f64::max);
    let lo = all().map(|p| p.1.min(p.2)).fold(0.0, f64::min);
    let hi = all().map(|p| p.1.max(p.2)).fold(0.0, f64::max);
    let x_unit = latency_unit(x_max);
    // The error axis is symmetric-logarithmic (asinh of µs): linear near
    // zero, where compensated medians sit (and can be negative), and
    // logarithmic beyond, where uncompensated medians and p99 tails are.
    let (y_lo, y_hi) = (sym(lo.min(0.0)) - 0.3, sym(hi.max(1_000.0)) + 0.3);
    let mut yt: Vec<(f64, String)> = vec![(0.0, "0".into())];
    let mut m = 1.0;
    while m * 1_000.0 <= hi.max(-lo) * 1.0001 {
        for v in [m, -m] {
            let t = sym(v * 1_000.0);
            if t >= y_lo && t <= y_hi {
                yt.push((t, format!("{}", v as i64)));
            }
        }
        m *= 10.0;
    }
    let x = Axis {
        scale: Scale::Log {
            min: x_min / 1.15,
            max: x_max * 1.15,
        },
        ticks: log_ticks_125(x_min, x_max)
            .into_iter()
            .filter(|v| *v >= x_min / 1.15 && *v <= x_max * 1.15)
            .map(|v| (v, super::svg::f1(v / x_unit.div)))
            .collect(),
        label: format!("requested delay ({}, log)", x_unit.name),
    };
    let y = Axis {
        scale: Scale::Linear {
            min: y_lo,
            max: y_hi,
        },
        ticks: yt,
        label: "error = actual − requested (µs, sym. log)".into(),
    };
    let chart = |title: String, per: &BTreeMap<String, Vec<Point>>, w: u32, h: u32| {
        let mut lines = vec![Line {
            label: "on time".into(),
            color: "#999999",
            points: vec![(x_min / 1.15, 0.0), (x_max * 1.15, 0.0)],
            dashed: false,
            width: 0.8,
            legend: false,
        }];
        let mut names: Vec<&String> = per.keys().collect();
        names.sort_by_key(|n| STRATEGIES.iter().position(|s| s == n).unwrap_or(9));
        for name in names {
            let pts = &per[name];
            let c = strategy_color(name);
            lines.push(Line {
                label: format!("{name} p50"),
                color: c,
                points: pts.iter().map(|p| (p.0, sym(p.1))).collect(),
                dashed: false,
                width: 2.0,
                legend: true,
            });
            lines.push(Line {
                label: format!("{name} p99"),
                color: c,
                points: pts.iter().map(|p| (p.0, sym(p.2))).collect(),
                dashed: true,
                width: 1.2,
                legend: true,
            });
        }
        Chart {
            kind: "timer-error",
            title,
            width: w,
            height: h,
            x: x.clone(),
            y: y.clone(),
            lines,
            markers: vec![],
            empty_note: None,
            legend_left: false,
            bands: vec![],
        }
    };
    let mut s = conclusions(d);
    s.push_str("<h3>Timer error against the requested delay</h3>\n<p class=\"sub\">p50 (solid) and p99 (dashed) of the wake-up error per compensation strategy; below the grey line a wake-up came early.</p>\n");
    if g.len() == 1 {
        let ((api, policy), per) = g.iter().next().expect("one group");
        s.push_str(&render_or_note(&chart(
            format!("{api} ({policy})"),
            per,
            1160,
            380,
        )));
    } else {
        s.push_str("<div class=\"multiples\">\n");
        for ((api, policy), per) in &g {
            s.push_str(&render_or_note(&chart(
                format!("{api} ({policy})"),
                per,
                570,
                300,
            )));
        }
        s.push_str("</div>\n");
    }
    s
}

/// The sweep's conclusions, as the terminal prints them under its table
/// ([`crate::output::timer::sweep_conclusions`]), one item each, the
/// factors (`12× better`) in bold.
pub fn conclusions(d: &ResultDocument) -> String {
    let cells = crate::output::timer::sweep_cells(d);
    let text = crate::output::timer::sweep_conclusions(&cells);
    if text.is_empty() {
        return String::new();
    }
    let mut s = String::from("<h3>Conclusions</h3>\n<ul class=\"conclusions\">\n");
    for line in text.lines() {
        s.push_str("<li>");
        s.push_str(&bold_factors(&super::esc(line)));
        s.push_str("</li>\n");
    }
    s.push_str("</ul>\n");
    s
}

/// `… 31.3 µs → 6.1 µs, 5.2× better; …` with `5.2× better` in bold.
fn bold_factors(line: &str) -> String {
    let mut out = String::new();
    for (i, part) in line.split(", ").enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let (head, tail) = part.split_at(part.find(';').unwrap_or(part.len()));
        let factor = head.split_once("× ").is_some_and(|(n, w)| {
            !n.is_empty()
                && n.chars()
                    .all(|c| c.is_ascii_digit() || c == '.' || c == '∞')
                && (w == "better" || w == "worse")
        });
        if factor {
            out.push_str(&format!("<b>{head}</b>{tail}"));
        } else {
            out.push_str(part);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn series(api: &str, comp: &str, req: u64, p50: i64, p99: i64) -> Series {
        let mut s = Series {
            label: format!("{api} {comp} fifo {req}"),
            ..Series::default()
        };
        s.attributes.insert(
            "timer".into(),
            json!({"api": api, "policy": "fifo", "compensation": comp, "requested_ns": req,
                   "error_p50_ns": p50, "error_p99_ns": p99}),
        );
        s
    }

    fn doc(series: Vec<Series>) -> ResultDocument {
        ResultDocument::new(
            "timer",
            json!({}),
            rtscope_core::system::SystemSnapshot::default(),
            series,
        )
    }

    #[test]
    fn one_chart_per_api_with_a_line_pair_per_strategy() {
        let mut d = doc(vec![
            series("nanosleep", "none", 1_000_000, 50_000, 90_000),
            series("nanosleep", "none", 320_000, 48_000, 80_000),
            series("nanosleep", "static", 320_000, -2_000, 30_000),
            series("nanosleep", "static", 1_000_000, 1_000, 35_000),
        ]);
        let html = section(&d);
        assert_eq!(html.matches("data-chart=\"timer-error\"").count(), 1);
        for l in ["none p50", "none p99", "static p50", "static p99"] {
            assert!(html.contains(l), "{l}");
        }
        d.series
            .push(series("timerfd", "none", 1_000_000, 60_000, 99_000));
        let html = section(&d);
        assert_eq!(html.matches("data-chart=\"timer-error\"").count(), 2);
        assert!(html.contains("timerfd (fifo)"));
        // Sorted by delay along each line: 320 us before 1 ms.
        let g = groups(&d.series);
        let none = &g[&("nanosleep".to_string(), "fifo".to_string())]["none"];
        assert_eq!(none[0].0, 320_000.0);
    }

    /// The section opens with the terminal's conclusions, then the chart.
    #[test]
    fn conclusions_lead() {
        use crate::output::timer::TimerCell;
        let cell = |comp: &str, req: u64, mean_abs: f64| {
            let c = TimerCell {
                api: "nanosleep".into(),
                compensation: comp.into(),
                policy: "fifo".into(),
                requested_ns: req,
                wakes: 100,
                error_p50_ns: 1_000,
                error_p99_ns: 30_000,
                error_mean_ns: mean_abs,
                abs_error_mean_ns: mean_abs,
                ..Default::default()
            };
            let mut s = series("nanosleep", comp, req, 1_000, 30_000);
            s.attributes
                .insert("timer".into(), serde_json::to_value(c).unwrap());
            s
        };
        let d = doc(vec![
            cell("none", 500_000, 50_000.0),
            cell("static", 500_000, 2_500.0),
        ]);
        let want = crate::output::timer::sweep_conclusions(&crate::output::timer::sweep_cells(&d));
        assert!(want.contains("static compensation"), "{want}");
        let c = conclusions(&d);
        assert_eq!(c.matches("<li>").count(), want.lines().count(), "{c}");
        assert!(c.contains("<b>20× better</b>"), "{c}");
        let html = section(&d);
        assert!(html.starts_with("<h3>Conclusions</h3>"), "{html}");
        assert!(
            html.find("<ul class=\"conclusions\">").unwrap()
                < html.find("data-chart=\"timer-error\"").unwrap()
        );
        // No sweep cells (the attributes of an older or partial document): no list.
        assert_eq!(
            conclusions(&doc(vec![series("nanosleep", "none", 1, 1, 1)])),
            ""
        );
    }

    #[test]
    fn factors_are_bold() {
        assert_eq!(
            bold_factors("a: mean |error| 31.3 µs → 6.1 µs, 5.2× better; median 2 µs, 12× worse"),
            "a: mean |error| 31.3 µs → 6.1 µs, <b>5.2× better</b>; median 2 µs, <b>12× worse</b>"
        );
        assert_eq!(
            bold_factors("x, 3× bigger, ×, no change"),
            "x, 3× bigger, ×, no change"
        );
    }

    #[test]
    fn nothing_without_a_sweep() {
        assert!(section(&doc(vec![Series::default()])).is_empty());
    }
}
