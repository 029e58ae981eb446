//! The text of a `clock` result: one row per source (read cost and the
//! deltas' distribution), then calibration, the cross-CPU warp test and the
//! sources unavailable here. Built from the document alone, so it works on
//! files read back too.

use rtscope_core::clock::measure::DeltaSummary;
use rtscope_core::clock::SourceInfo;
use rtscope_core::result::{ResultDocument, Series};
use rtscope_core::units::format_ns;

use super::summary::render;

fn f1(v: f64) -> String {
    format!("{v:.1}")
}

/// The per-source table of a clock document, plus calibration, warp and
/// unavailable sources.
pub fn report(doc: &ResultDocument, already_shown: &[String]) -> String {
    let mut out = String::new();
    let mode = doc
        .plan
        .get("mode")
        .and_then(|m| m.as_str())
        .unwrap_or("consecutive")
        .to_string();
    let consecutive = mode == "consecutive";
    let rows_src: Vec<(&Series, DeltaSummary, Option<f64>)> = doc
        .series
        .iter()
        .map(|s| {
            let sum: DeltaSummary = s
                .attributes
                .get("summary")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default();
            let cost = s
                .attributes
                .get("cost_per_read_ns")
                .and_then(|v| v.as_f64());
            (s, sum, cost)
        })
        .collect();
    // The cheapest source: by the reference-timed cost per read (consecutive),
    // else by the mean among sources that see their own read (most deltas > 0).
    let sees_itself = |d: &DeltaSummary| d.count > 0 && d.zero_deltas * 2 < d.count;
    let key = |(_, d, c): &(&Series, DeltaSummary, Option<f64>)| -> Option<f64> {
        if consecutive {
            *c
        } else if sees_itself(d) {
            Some(d.mean_ns)
        } else {
            None
        }
    };
    let base = rows_src
        .iter()
        .filter_map(key)
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let mut header = vec!["source", "count", "min", "median", "mean", "p99", "max"];
    if consecutive {
        header.push("cost/read");
    }
    header.push("x cheapest");
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for r in &rows_src {
        let (s, d, c) = r;
        let src = s
            .attributes
            .get("source")
            .and_then(|v| v.as_str())
            .unwrap_or(&s.label)
            .to_string();
        let mut row = vec![
            src,
            d.count.to_string(),
            f1(d.min_ns),
            f1(d.p50_ns),
            f1(d.mean_ns),
            f1(d.p99_ns),
            f1(d.max_ns),
        ];
        if consecutive {
            row.push(c.map_or("-".into(), f1));
        }
        row.push(match key(r) {
            Some(v) if base.is_finite() && v > 0.0 => format!("{:.2}", v / base),
            _ => "-".into(),
        });
        rows.push(row);
    }
    let what = match mode.as_str() {
        "consecutive" => "back-to-back reads".to_string(),
        _ => {
            let every: Vec<String> = doc
                .plan
                .get("every_ns")
                .and_then(|v| serde_json::from_value::<Vec<u64>>(v.clone()).ok())
                .unwrap_or_default()
                .into_iter()
                .map(format_ns)
                .collect();
            format!("pairs of reads after sleeping {}", every.join(" / "))
        }
    };
    out.push_str(&format!(
        "\nclock read cost, {mode} ({what}), ns per read:\n"
    ));
    out.push_str(&render(&rows));
    if consecutive {
        out.push_str(
            "cost/read: the whole loop timed with monotonic-raw / reads (also right for coarse clocks)\n",
        );
    }
    let coarse: Vec<&str> = rows_src
        .iter()
        .filter(|(_, d, _)| d.count > 0 && d.zero_deltas * 2 >= d.count)
        .filter_map(|(s, _, _)| s.attributes.get("source").and_then(|v| v.as_str()))
        .collect();
    if !coarse.is_empty() {
        out.push_str(&format!(
            "{}: most deltas are 0 (the source does not advance between two reads)\n",
            coarse.join(", ")
        ));
    }
    let infos: Vec<SourceInfo> = doc
        .plan
        .get("sources")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    let mut cal_lines = Vec::new();
    let mut seen_cal: Vec<f64> = Vec::new();
    for i in &infos {
        if let Some(c) = &i.calibration {
            if seen_cal.contains(&c.hz) {
                continue;
            }
            seen_cal.push(c.hz);
            let mut l = format!(
                "{}: {:.6} MHz ± {:.3} ppm (over {} against {})",
                i.name,
                c.hz / 1e6,
                c.uncertainty_ppm,
                format_ns(c.window_ns as u64),
                c.reference
            );
            for (d, ppm) in c.declared.iter().zip(&c.declared_diff_ppm) {
                l.push_str(&format!(
                    "; {} {:.3} MHz ({:+.1} ppm)",
                    d.origin,
                    d.hz / 1e6,
                    ppm
                ));
            }
            if let Some(inv) = c.invariant {
                l.push_str(&format!(
                    "; invariant: {} (constant_tsc {}, nonstop_tsc {})",
                    if inv.invariant() { "yes" } else { "no" },
                    inv.constant_tsc,
                    inv.nonstop_tsc
                ));
            }
            cal_lines.push(l);
        }
    }
    if !cal_lines.is_empty() {
        out.push_str("\ncalibration:\n");
        for l in cal_lines {
            out.push_str(&format!("  {l}\n"));
        }
    }
    let warp_rows: Vec<Vec<String>> = infos
        .iter()
        .filter_map(|i| i.warp.as_ref().map(|w| (i, w)))
        .map(|(i, w)| {
            if let Some(why) = &w.skipped {
                return vec![
                    i.name.clone(),
                    "-".into(),
                    "-".into(),
                    format!("skipped: {why}"),
                ];
            }
            let pairs: Vec<String> = w
                .pairs
                .iter()
                .map(|p| format!("{}/{}", p[0], p[1]))
                .collect();
            vec![
                i.name.clone(),
                w.iterations.to_string(),
                w.backwards_steps.to_string(),
                if w.backwards_steps == 0 {
                    format!("CPUs {}", pairs.join(","))
                } else {
                    format!(
                        "CPUs {}, largest step back {:.1} ns",
                        pairs.join(","),
                        w.max_backwards_ns
                    )
                },
            ]
        })
        .collect();
    if !warp_rows.is_empty() {
        out.push_str("\ncross-CPU warp test:\n");
        let mut rows = vec![vec![
            "source".to_string(),
            "readings".into(),
            "backwards".into(),
            "".into(),
        ]];
        rows.extend(warp_rows);
        out.push_str(&render(&rows));
    }
    let unavailable: Vec<String> = infos
        .iter()
        .filter(|i| !i.available)
        .map(|i| {
            format!(
                "  {}: {}",
                i.name,
                i.unavailable_reason.as_deref().unwrap_or("unavailable")
            )
        })
        .collect();
    if !unavailable.is_empty() {
        out.push_str("\nunavailable here:\n");
        out.push_str(&unavailable.join("\n"));
        out.push('\n');
    }
    for w in doc.warnings.iter().filter(|w| !already_shown.contains(w)) {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}
