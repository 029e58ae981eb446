//! The block that opens each run's section of the report: the answer
//! first. A few key figures, each with its unit (the worst maximum, p99,
//! p99.9, missed periods, the `--fail-above` verdict), then the warnings;
//! the system, the plan and the big tables follow, collapsed or below.
//!
//! Which figures depend on the document: a run with a union series (`all`,
//! or its only series) gets that series' figures; a run of several series
//! without a union (ipc's mechanisms, clock's sources) gets the best and
//! the worst series by p99 and the worst maximum; a timer sweep leads with
//! its conclusions (see [`super::timer_chart`]).

use std::fmt::Write;

use rtscope_core::result::{ResultDocument, Series};

use super::cells::{has_percentiles, in_unit, thin_tail, warnings_list};
use super::charts::latency_unit;
use super::esc;

/// One key figure: what it is, its value (with its unit), and a remark.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub label: String,
    pub value: String,
    pub note: String,
    /// `""`, `"bad"` (a failed gate, missed periods) or `"thin"` (a
    /// quantile with fewer than 10 samples above it).
    pub class: &'static str,
}

impl Figure {
    fn new(label: impl Into<String>, value: String, note: impl Into<String>) -> Self {
        Figure {
            label: label.into(),
            value,
            note: note.into(),
            class: "",
        }
    }

    fn class(mut self, c: &'static str) -> Self {
        self.class = c;
        self
    }
}

/// A duration in ns with its own unit, signed as it is: `-1.2 µs`,
/// `952.3 µs`, `49.26 ms` (µs up to 10 ms: a key figure stays short).
pub fn with_unit(ns: f64) -> String {
    let a = ns.abs();
    if a < 2_000.0 {
        format!("{} ns", in_unit(ns, latency_unit(a)))
    } else if a < 1e7 {
        format!("{:.1} µs", ns / 1e3)
    } else if a < 1e10 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// The series whose figures speak for the run: `all` (the union of the
/// threads), or the only series.
pub fn headline(series: &[Series]) -> Option<&Series> {
    match series {
        [one] => Some(one),
        many => many.iter().find(|s| s.label == "all"),
    }
}

/// A quantile figure of `s`, `≈`-marked where fewer than 10 samples lie above it.
fn quantile(s: &Series, name: &str, ns: u64, q: f64) -> Figure {
    if !has_percentiles(s) {
        return Figure::new(name, super::cells::UNKNOWN.into(), "not measured");
    }
    let f = Figure::new(name, with_unit(ns as f64), "");
    if thin_tail(s.stats.count, q) {
        Figure {
            value: format!("≈{}", f.value),
            note: "≈: under 10 samples above it".into(),
            ..f
        }
        .class("thin")
    } else {
        f
    }
}

/// The series with the largest maximum.
/// The series with the largest maximum: a thread rather than the union
/// that holds the same sample.
fn worst_max(series: &[Series]) -> Option<&Series> {
    let max = series
        .iter()
        .filter(|s| s.stats.has_samples())
        .map(|s| s.stats.max_ns)
        .max()?;
    let at = |s: &&Series| s.stats.has_samples() && s.stats.max_ns == max;
    series
        .iter()
        .filter(|s| s.label != "all")
        .find(at)
        .or_else(|| series.iter().find(at))
}

/// The key figures of a document.
pub fn figures(d: &ResultDocument) -> Vec<Figure> {
    let mut f = Vec::new();
    if let Some(t) = &d.threshold {
        let fig = Figure::new(
            format!("--fail-above {}", with_unit(t.fail_above_ns as f64)),
            if t.exceeded { "FAILED" } else { "passed" }.into(),
            format!("{} samples above", t.samples_above),
        );
        f.push(if t.exceeded { fig.class("bad") } else { fig });
    }
    if let Some(b) = &d.break_event {
        f.push(
            Figure::new(
                "stopped by --break-above",
                with_unit(b.latency_ns as f64),
                format!("{} sample {}", b.series, b.seq),
            )
            .class("bad"),
        );
    }
    if crate::output::timer::sweep_cells(d).is_empty() {
        f.extend(series_figures(&d.series));
    } else {
        let cells = crate::output::timer::sweep_cells(d);
        let wakes: u64 = cells.iter().map(|c| c.wakes).sum();
        f.push(Figure::new(
            "cells",
            cells.len().to_string(),
            "API × compensation × policy × delay",
        ));
        f.push(Figure::new("wakes", wakes.to_string(), "measured in all"));
    }
    f
}

/// The figures of the run's series.
fn series_figures(series: &[Series]) -> Vec<Figure> {
    let mut f = Vec::new();
    let Some(worst) = worst_max(series) else {
        f.push(Figure::new("samples", "0".into(), "nothing was measured"));
        return f;
    };
    let of = |s: &Series| {
        if series.len() > 1 {
            s.label.clone()
        } else {
            String::new()
        }
    };
    match headline(series) {
        Some(h) => {
            let st = &h.stats;
            f.push(Figure::new(
                "worst max",
                with_unit(worst.stats.max_ns as f64),
                of(worst),
            ));
            f.push(quantile(h, "p99", st.p99_ns, 0.99));
            f.push(quantile(h, "p99.9", st.p99_9_ns, 0.999));
            if h.corrected.is_some() {
                let missed = h.counters.overruns;
                let due = st.count + h.counters.dropped + missed;
                let fig = Figure::new(
                    "missed periods",
                    format!("{missed} of {due}"),
                    format!("{:.2} %", missed as f64 * 100.0 / due.max(1) as f64),
                );
                f.push(if missed > 0 { fig.class("bad") } else { fig });
                if let Some(c) = h.corrected.as_ref().filter(|_| missed > 0) {
                    if c.stats.has_percentiles() {
                        f.push(Figure::new(
                            "p99 over the intended periods",
                            with_unit(c.stats.p99_ns as f64),
                            "missed periods counted at their lateness",
                        ));
                    }
                }
            }
            if h.repetitions.len() > 1 {
                let p99s: Vec<u64> = h.repetitions.iter().map(|r| r.stats.p99_ns).collect();
                let (lo, hi) = (
                    p99s.iter().copied().min().unwrap_or(0),
                    p99s.iter().copied().max().unwrap_or(0),
                );
                f.push(Figure::new(
                    "runs pooled",
                    h.repetitions.len().to_string(),
                    format!(
                        "p99 per run {} to {}",
                        with_unit(lo as f64),
                        with_unit(hi as f64)
                    ),
                ));
            }
            f.push(Figure::new(
                "samples",
                st.count.to_string(),
                if series.len() > 1 {
                    format!("{} ({} series)", h.label, series.len())
                } else {
                    String::new()
                },
            ));
        }
        None => {
            let ranked: Vec<&Series> = {
                let mut v: Vec<&Series> = series.iter().filter(|s| has_percentiles(s)).collect();
                v.sort_by_key(|s| s.stats.p99_ns);
                v
            };
            if let (Some(best), Some(worst_p99)) = (ranked.first(), ranked.last()) {
                f.push(Figure::new(
                    "lowest p99",
                    with_unit(best.stats.p99_ns as f64),
                    best.label.clone(),
                ));
                f.push(Figure::new(
                    "highest p99",
                    with_unit(worst_p99.stats.p99_ns as f64),
                    worst_p99.label.clone(),
                ));
            }
            f.push(Figure::new(
                "worst max",
                with_unit(worst.stats.max_ns as f64),
                worst.label.clone(),
            ));
            f.push(Figure::new(
                "series",
                series.len().to_string(),
                format!(
                    "{} samples in all",
                    series.iter().map(|s| s.stats.count).sum::<u64>()
                ),
            ));
        }
    }
    let dropped: u64 = series.iter().map(|s| s.counters.dropped).sum();
    if dropped > 0 {
        f.push(Figure::new("dropped", dropped.to_string(), "samples lost").class("bad"));
    }
    f
}

/// The block: figures, then the warnings.
pub fn section(d: &ResultDocument, warnings: &[String]) -> String {
    let mut s = String::from("<section class=\"answer\">\n<div class=\"figures\">\n");
    for fig in figures(d) {
        let _ = writeln!(
            s,
            "<div class=\"fig {}\"><div class=\"flabel\">{}</div><div class=\"fvalue\">{}</div><div class=\"fnote\">{}</div></div>",
            fig.class,
            esc(&fig.label),
            esc(&fig.value),
            esc(&fig.note)
        );
    }
    s.push_str("</div>\n");
    if !warnings.is_empty() {
        let _ = writeln!(
            s,
            "<p class=\"wcount\">{} warning{}:</p>",
            warnings.len(),
            if warnings.len() == 1 { "" } else { "s" }
        );
    }
    s.push_str(&warnings_list(warnings));
    s.push_str("</section>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::record::SeriesRecorder;
    use rtscope_core::sample::Sample;

    fn series(label: &str, lat: &[i64], missed_at: Option<usize>) -> Series {
        let mut r = SeriesRecorder::new(0, 4, Some(50_000)).over_intended_periods(1_000_000);
        for (i, l) in lat.iter().enumerate() {
            r.record(&Sample {
                seq: i as u64,
                t_ns: i as u64 * 1_000_000,
                latency_ns: *l,
                overruns: u32::from(missed_at == Some(i)),
                cpu: 0,
            });
        }
        r.to_series(label, 0)
    }

    fn doc(series: Vec<Series>) -> ResultDocument {
        ResultDocument::new("cyclic", serde_json::json!({}), Default::default(), series)
    }

    /// 100 wake-ups at 20 µs, `--fail-above 50us` failed by 3 samples.
    fn failed_threshold() -> ResultDocument {
        let lat: Vec<i64> = (0..100).map(|_| 20_000).collect();
        let mut d = doc(vec![series("all", &lat, None)]);
        d.threshold = Some(rtscope_core::result::Threshold {
            fail_above_ns: 50_000,
            exceeded: true,
            samples_above: 3,
        });
        d
    }

    fn get<'a>(f: &'a [Figure], label: &str) -> &'a Figure {
        f.iter()
            .find(|x| x.label == label)
            .unwrap_or_else(|| panic!("no {label} in {f:?}"))
    }

    #[test]
    fn units_and_signs() {
        assert_eq!(with_unit(-1_200.0), "-1200 ns");
        assert_eq!(with_unit(-45.0), "-45.0 ns");
        assert_eq!(with_unit(-12_000.0), "-12.0 µs");
        assert_eq!(with_unit(952_300.0), "952.3 µs");
        assert_eq!(with_unit(3_854_045.0), "3854.0 µs");
        assert_eq!(with_unit(9_999_000.0), "9999.0 µs");
        assert_eq!(with_unit(49_256_000.0), "49.26 ms");
        assert_eq!(with_unit(-49_256_000.0), "-49.26 ms");
        assert_eq!(with_unit(350_000_000.0), "350.00 ms");
        assert_eq!(with_unit(12_500_000_000.0), "12.50 s");
        assert_eq!(with_unit(1_999.0), "1999 ns");
        assert_eq!(with_unit(2_000.0), "2.0 µs");
        assert_eq!(with_unit(35.0), "35.0 ns");
        // The unit changes at 10 ms and at 10 s.
        assert_eq!(with_unit(1e7), "10.00 ms");
        assert_eq!(with_unit(9_999_999.0), "10000.0 µs");
        assert_eq!(with_unit(1e10), "10.00 s");
        assert_eq!(with_unit(9_999_990_000.0), "9999.99 ms");
    }

    /// The union speaks for the run; the worst max names its thread; the
    /// missed periods are counted and marked.
    #[test]
    fn a_run_with_threads_leads_with_the_union() {
        let lat: Vec<i64> = (0..2000).map(|i| 20_000 + (i % 7) * 100).collect();
        let mut worse = lat.clone();
        worse[1500] = 900_000;
        let mut t0 = series("thread 0", &lat, None);
        t0.label = "thread 0".into();
        let t1 = series("thread 1", &worse, Some(1500));
        let all = series("all", &worse, Some(1500));
        let f = figures(&doc(vec![t0, t1, all]));
        let w = get(&f, "worst max");
        assert_eq!(
            (w.value.as_str(), w.note.as_str()),
            ("900.0 µs", "thread 1")
        );
        assert_eq!(get(&f, "p99").value, "20.6 µs");
        // 2 of 2000 samples above p99.9: about the maximum.
        assert_eq!(get(&f, "p99.9").class, "thin");
        assert!(get(&f, "p99.9").value.starts_with('≈'));
        assert_eq!(get(&f, "p99").class, "");
        let m = get(&f, "missed periods");
        assert_eq!((m.value.as_str(), m.class), ("1 of 2001", "bad"));
        assert_eq!(get(&f, "samples").note, "all (3 series)");
        assert!(f.iter().any(|x| x.label == "p99 over the intended periods"));
        // None missed: not marked, no second p99.
        let f = figures(&doc(vec![series("all", &lat, None)]));
        assert_eq!(get(&f, "missed periods").class, "");
        assert_eq!(get(&f, "missed periods").value, "0 of 2000");
        assert!(!f.iter().any(|x| x.label == "p99 over the intended periods"));
        assert_eq!(get(&f, "samples").note, "");
        assert!(!f.iter().any(|x| x.label == "runs pooled"));
        assert_eq!(get(&f, "worst max").note, "", "one series: not named");
        assert!(!f.iter().any(|x| x.label == "dropped"));
        let mut one = series("all", &lat, None);
        one.repetitions = vec![series("all", &lat, None)];
        one.counters.dropped = 4;
        let f = figures(&doc(vec![one]));
        assert!(
            !f.iter().any(|x| x.label == "runs pooled"),
            "one run is not pooled"
        );
        let d = get(&f, "dropped");
        assert_eq!((d.value.as_str(), d.class), ("4", "bad"));
        assert_eq!(get(&f, "missed periods").value, "0 of 2004");
        // Pooled repetitions: how many, and how far their p99 lay apart.
        let mut pooled = series("all", &lat, None);
        pooled.repetitions = vec![
            series("all", &lat, None),
            series("all", &lat.iter().map(|l| l * 2).collect::<Vec<_>>(), None),
        ];
        let f = figures(&doc(vec![pooled]));
        let r = get(&f, "runs pooled");
        assert_eq!(r.value, "2");
        assert_eq!(r.note, "p99 per run 20.6 µs to 41.2 µs");
        // A short run: p99 too.
        let f = figures(&doc(vec![series("all", &lat[..500], None)]));
        assert_eq!(get(&f, "p99").class, "thin");
    }

    /// Several series without a union: the best and worst by p99.
    #[test]
    fn series_without_a_union_are_ranked() {
        let a: Vec<i64> = (0..1000).map(|i| 10_000 + i).collect();
        let b: Vec<i64> = (0..1000).map(|i| 50_000 + i).collect();
        let f = figures(&doc(vec![series("b", &b, None), series("a", &a, None)]));
        assert_eq!(get(&f, "lowest p99").note, "a");
        assert_eq!(get(&f, "highest p99").note, "b");
        assert_eq!(get(&f, "worst max").note, "b");
        assert_eq!(get(&f, "series").value, "2");
        assert_eq!(get(&f, "series").note, "2000 samples in all");
        assert!(!f.iter().any(|x| x.label == "dropped"));
        assert_eq!(get(&figures(&doc(vec![])), "samples").value, "0");
    }

    /// The gate leads; a failed one is marked.
    #[test]
    fn the_gate_leads() {
        let mut d = failed_threshold();
        let f = figures(&d);
        assert_eq!(f[0].label, "--fail-above 50.0 µs");
        assert_eq!((f[0].value.as_str(), f[0].class), ("FAILED", "bad"));
        d.threshold.as_mut().unwrap().exceeded = false;
        assert_eq!(figures(&d)[0].class, "");
        assert_eq!(figures(&d)[0].value, "passed");
        let html = section(&d, &["w1".into(), "w2".into()]);
        assert!(
            html.contains("<p class=\"wcount\">2 warnings:</p>"),
            "{html}"
        );
        assert!(!section(&d, &[]).contains("wcount"));
        assert!(section(&d, &["w1".into()]).contains("<p class=\"wcount\">1 warning:</p>"));
    }

    // Tests written against the mutants cargo-mutants left (docs/testing.md).

    #[test]
    fn a_thin_quantile_says_why() {
        let lat: Vec<i64> = (0..500).map(|_| 20_000).collect();
        let f = figures(&doc(vec![series("all", &lat, None)]));
        // 500 samples: 5 above p99, 0.5 above p99.9.
        for q in ["p99", "p99.9"] {
            let x = get(&f, q);
            assert_eq!(
                (x.value.as_str(), x.note.as_str(), x.class),
                ("≈20.0 µs", "≈: under 10 samples above it", "thin")
            );
        }
        let unknown = {
            let mut s = series("all", &lat, None);
            s.stats.unknown.percentiles = true;
            s
        };
        let f = figures(&doc(vec![unknown]));
        let x = get(&f, "p99");
        assert_eq!(
            (x.value.as_str(), x.note.as_str(), x.class),
            ("–", "not measured", "")
        );
    }

    #[test]
    fn missed_periods_as_a_share() {
        let lat: Vec<i64> = (0..1999).map(|_| 20_000).collect();
        // 1 missed of 2000 periods: 0.05 %.
        let f = figures(&doc(vec![series("all", &lat, Some(10))]));
        let m = get(&f, "missed periods");
        assert_eq!((m.value.as_str(), m.note.as_str()), ("1 of 2000", "0.05 %"));
        let f = figures(&doc(vec![series("all", &lat, None)]));
        assert_eq!(get(&f, "missed periods").note, "0.00 %");
    }

    #[test]
    fn a_break_is_a_figure() {
        let lat: Vec<i64> = (0..100).map(|_| 20_000).collect();
        let mut d = doc(vec![series("all", &lat, None)]);
        d.break_event = Some(rtscope_core::result::BreakEvent {
            threshold_ns: 100_000,
            series: "thread 1".into(),
            seq: 41,
            t_ns: 0,
            latency_ns: 123_400,
        });
        let f = figures(&d);
        assert_eq!(
            f[0],
            Figure {
                label: "stopped by --break-above".into(),
                value: "123.4 µs".into(),
                note: "thread 1 sample 41".into(),
                class: "bad",
            }
        );
    }

    #[test]
    fn an_empty_series_is_never_the_worst() {
        let lat: Vec<i64> = (0..100).map(|_| 20_000).collect();
        let low: Vec<i64> = (0..100).map(|_| 5_000).collect();
        // A series without samples and one with a lower maximum ahead of
        // the one with the maximum.
        let empty = series("idle", &[], None);
        let f = figures(&doc(vec![
            empty,
            series("quiet", &low, None),
            series("busy", &lat, None),
        ]));
        assert_eq!(get(&f, "worst max").note, "busy");
        assert_eq!(get(&f, "worst max").value, "20.0 µs");
    }

    #[test]
    fn a_timer_sweep_counts_cells_and_wakes() {
        let cell = |wakes: u64| {
            let mut s = Series::default();
            let c = crate::output::timer::TimerCell {
                api: "nanosleep".into(),
                compensation: "none".into(),
                wakes,
                ..Default::default()
            };
            s.attributes
                .insert("timer".into(), serde_json::to_value(c).unwrap());
            s
        };
        let f = figures(&doc(vec![cell(300), cell(200), cell(500)]));
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!((f[0].label.as_str(), f[0].value.as_str()), ("cells", "3"));
        assert_eq!(
            (f[1].label.as_str(), f[1].value.as_str()),
            ("wakes", "1000")
        );
    }

    #[test]
    fn the_section_shows_each_figure() {
        let d = failed_threshold();
        let h = section(&d, &["a <b>".into()]);
        assert!(h.starts_with("<section class=\"answer\">\n<div class=\"figures\">\n<div class=\"fig bad\"><div class=\"flabel\">--fail-above 50.0 µs</div><div class=\"fvalue\">FAILED</div><div class=\"fnote\">3 samples above</div></div>\n"), "{h}");
        assert!(h.contains("<div class=\"fig \"><div class=\"flabel\">worst max</div><div class=\"fvalue\">20.0 µs</div>"), "{h}");
        assert!(h.ends_with("</div>\n<p class=\"wcount\">1 warning:</p>\n<ul class=\"warnings\">\n<li>a &lt;b&gt;</li>\n</ul>\n</section>\n"), "{h}");
    }
}
