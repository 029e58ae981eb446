//! The hwlat experiment's own section: the method (and, from user space,
//! that every figure is an upper bound), a table per CPU of what the
//! generic summary does not show (inner and outer, NMIs, SMIs), how tracefs
//! was given back, and a chart of every sample against time, inner and
//! outer apart (the tracer's samples; from user space, the largest gaps).
//! The per-CPU histograms and timelines are the report's generic charts.

use std::fmt::Write;

use rtscope_core::result::ResultDocument;
use rtscope_core::units::format_ns;

use super::charts::{latency_unit, log_ticks_125};
use super::esc;
use super::svg::render_or_note;
use super::svg::{color, linear_ticks, Axis, Chart, Line, Marker, Scale};

fn u(v: Option<&serde_json::Value>) -> Option<u64> {
    v.and_then(|x| x.as_u64())
}

/// A point of the chart: (series index, t in s, latency ns, tooltip).
type Point = (usize, f64, f64, String);

/// Every sample of the document as points: the tracer's inner and outer
/// gaps apart, user space's largest gaps.
fn points(d: &ResultDocument) -> Vec<Point> {
    let mut v = Vec::new();
    for (i, s) in d.series.iter().enumerate() {
        match s.attributes.get("samples").and_then(|x| x.as_array()) {
            Some(samples) => {
                for x in samples {
                    let t = u(x.get("t_ns")).unwrap_or(0) as f64 / 1e9;
                    let (inner, outer) = (
                        u(x.get("inner_ns")).unwrap_or(0),
                        u(x.get("outer_ns")).unwrap_or(0),
                    );
                    let tip = format!(
                        "{} #{} at {:.3} s: inner {}, outer {}, {} NMIs",
                        s.label,
                        u(x.get("seq")).unwrap_or(0),
                        t,
                        format_ns(inner),
                        format_ns(outer),
                        u(x.get("nmi_count")).unwrap_or(0)
                    );
                    v.push((2 * i, t, inner as f64, tip.clone()));
                    v.push((2 * i + 1, t, outer as f64, tip));
                }
            }
            None => {
                for sp in &s.spikes {
                    let t = sp.t_ns.saturating_sub(d.start_clock_ns) as f64 / 1e9;
                    let tip = format!(
                        "{} at {:.3} s: {} no kernel event explains",
                        s.label,
                        t,
                        format_ns(sp.latency_ns.max(0) as u64)
                    );
                    v.push((2 * i, t, sp.latency_ns.max(0) as f64, tip));
                }
            }
        }
    }
    v
}

/// The chart of every sample against time (log latency axis).
fn chart(d: &ResultDocument) -> Chart {
    let pts = points(d);
    let tracer = d
        .series
        .iter()
        .any(|s| s.attributes.contains_key("samples"));
    let t_max = pts
        .iter()
        .map(|p| p.1)
        .fold(d.duration_ns as f64 / 1e9, f64::max)
        .max(1.0);
    let lo = pts
        .iter()
        .map(|p| p.2)
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let hi = pts.iter().map(|p| p.2).fold(0.0, f64::max);
    let (lo, hi) = if lo.is_finite() {
        (lo / 1.5, hi * 1.5)
    } else {
        (1_000.0, 1e6)
    };
    let unit = latency_unit(hi);
    let markers = pts
        .iter()
        .filter(|p| p.2 > 0.0)
        .map(|p| Marker {
            x: p.1,
            y: p.2,
            color: color(p.0),
            title: p.3.clone(),
        })
        .collect::<Vec<_>>();
    Chart {
        kind: "hwlat-samples",
        title: if tracer {
            "Every sample against time: its inner and its outer gap".into()
        } else {
            "The largest gaps no kernel event explains".into()
        },
        width: 1160,
        height: 340,
        x: Axis {
            scale: Scale::Linear {
                min: 0.0,
                max: t_max,
            },
            ticks: linear_ticks(0.0, t_max, 10)
                .into_iter()
                .map(|v| (v, super::svg::f1(v)))
                .collect(),
            label: "time since the start (s)".into(),
        },
        y: Axis {
            scale: Scale::Log { min: lo, max: hi },
            ticks: log_ticks_125(lo, hi)
                .into_iter()
                .map(|v| (v, super::svg::f1(v / unit.div)))
                .collect(),
            label: format!("latency ({}, log)", unit.name),
        },
        // Legend entries only (the samples are markers).
        lines: d
            .series
            .iter()
            .enumerate()
            .flat_map(|(i, x)| {
                let names = if tracer {
                    vec![format!("{} inner", x.label), format!("{} outer", x.label)]
                } else {
                    vec![x.label.clone()]
                };
                names.into_iter().enumerate().map(move |(j, label)| Line {
                    label,
                    color: color(2 * i + j),
                    points: vec![],
                    dashed: false,
                    width: 2.0,
                    legend: true,
                })
            })
            .collect(),
        empty_note: markers
            .is_empty()
            .then(|| "no sample above the threshold".to_string()),
        markers,
        legend_left: false,
        bands: vec![],
    }
}

/// The section; empty for a document of another experiment.
/// The note a comparison of hwlat runs measured from user space carries:
/// their figures are upper bounds (interrupts were on), as their reports
/// say; `None` when no run is one.
pub fn upper_bound_note(runs: &[super::Run]) -> Option<String> {
    let user: Vec<&str> = runs
        .iter()
        .filter(|r| {
            r.doc.experiment == "hwlat"
                && r.doc.plan.get("method_used").and_then(|m| m.as_str()) == Some("user-space")
        })
        .map(|r| r.name.as_str())
        .collect();
    (!user.is_empty()).then(|| {
        format!(
            "{} measured hwlat from user space: interrupts were on, so each figure is an upper bound on what the machine did, not the machine's own latency",
            user.join(", ")
        )
    })
}

pub fn section(d: &ResultDocument) -> String {
    if d.experiment != "hwlat" {
        return String::new();
    }
    let p = &d.plan;
    let method = p.get("method_used").and_then(|m| m.as_str()).unwrap_or("?");
    let mut s = String::from("<h3>Hardware latency</h3>\n");
    if method == "tracer" {
        let t = p.get("tracer").cloned().unwrap_or_default();
        let _ = writeln!(
            s,
            "<p class=\"sub hwlat-method\">The kernel's hwlat tracer: the CPU sampled spins with interrupts off for {} of every {} window, reading the clock; a window whose largest gap (inner: between two readings, outer: between two turns of the loop) is above {} is a sample. Only the machine can make such a gap (an SMI, firmware, power management, a hypervisor).</p>",
            format_ns(u(t.get("width_us")).unwrap_or(0) * 1000),
            format_ns(u(t.get("window_us")).unwrap_or(0) * 1000),
            format_ns(u(t.get("threshold_us")).unwrap_or(0) * 1000),
        );
    } else {
        let _ = writeln!(
            s,
            "<p class=\"sub hwlat-method\">From user space ({}): a busy loop per CPU with interrupts on; of each gap, the time no kernel event explains is kept. Each figure is an <b>upper bound</b> on what the machine did (kernel work no event shows counts in it), and a stall that overlapped an interrupt is counted with the interrupt.</p>",
            esc(p
                .get("session")
                .and_then(|x| x.get("why"))
                .and_then(|w| w.as_str())
                .unwrap_or("?"))
        );
    }
    s.push_str("<table class=\"hwlat\"><tr><th>CPU</th><th>samples</th><th>max</th><th>inner max</th><th>outer max</th><th>NMIs</th><th>NMI time</th><th>SMIs</th></tr>\n");
    let dash = |v: Option<u64>| v.map_or("–".to_string(), format_ns);
    for x in &d.series {
        let a = &x.attributes;
        let tracer = method == "tracer";
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            u(a.get("cpu")).unwrap_or(0),
            x.stats.count,
            if x.stats.count > 0 { format_ns(x.stats.max_ns.max(0) as u64) } else { "–".into() },
            if tracer { dash(u(a.get("inner_max_ns"))) } else { "–".into() },
            if tracer { dash(u(a.get("outer_max_ns"))) } else { "–".into() },
            if tracer { u(a.get("nmi_count")).map_or("–".into(), |n| n.to_string()) } else { "–".into() },
            if tracer { dash(u(a.get("nmi_total_ns"))) } else { "–".into() },
            u(a.get("smi_count")).map_or("–".into(), |n| n.to_string()),
        );
    }
    s.push_str("</table>\n");
    let session = p.get("session").cloned().unwrap_or_default();
    if let Some(r) = session
        .get("smi")
        .and_then(|m| m.get("reason"))
        .and_then(|r| r.as_str())
    {
        let _ = writeln!(s, "<p class=\"sub\">SMIs not counted: {}.</p>", esc(r));
    }
    if let Some(r) = session.get("tracer").and_then(|t| t.get("restored")) {
        let diffs: Vec<&str> = r
            .get("differences")
            .and_then(|d| d.as_array())
            .map(|d| d.iter().filter_map(|x| x.as_str()).collect())
            .unwrap_or_default();
        let error = r.get("error").and_then(|e| e.as_str());
        let expanded = r.get("kernel_expanded_buffer").and_then(|e| e.as_bool()) == Some(true);
        let text = match (error, diffs.as_slice()) {
            (Some(e), _) => format!("tracefs was NOT given back: {e}."),
            (None, []) => "tracefs was given back as it was.".to_string(),
            (None, [one]) if expanded => format!(
                "tracefs was given back as it was, but for the kernel's one-way expansion of a ring buffer never used since boot ({one})."
            ),
            (None, d) => format!("tracefs is NOT as it was: {}.", d.join("; ")),
        };
        let _ = writeln!(s, "<p class=\"sub hwlat-restored\">{}</p>", esc(&text));
    }
    s.push_str(&render_or_note(&chart(d)));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::result::{Series, Spike};
    use serde_json::json;

    fn doc(method: &str, series: Vec<Series>) -> ResultDocument {
        let mut d = ResultDocument::new(
            "hwlat",
            json!({"method_used": method,
                   "tracer": {"width_us": 950_000, "window_us": 1_000_000, "threshold_us": 10},
                   "session": {"why": "no <tracer>", "smi": {"reason": "AMD"},
                               "tracer": {"restored": {"differences": [], "error": null}}}}),
            rtscope_core::system::SystemSnapshot::default(),
            series,
        );
        d.duration_ns = 10_000_000_000;
        d.start_clock_ns = 1_000;
        d
    }

    fn tracer_series() -> Series {
        let mut s = Series {
            label: "cpu 1".into(),
            ..Default::default()
        };
        s.stats.count = 2;
        s.stats.max_ns = 157_147_000;
        for (k, v) in [
            ("cpu", json!(1)),
            ("inner_max_ns", json!(12_816_000)),
            ("outer_max_ns", json!(157_147_000)),
            ("nmi_count", json!(5)),
            ("nmi_total_ns", json!(14_452_000)),
            ("smi_count", json!(null)),
            (
                "samples",
                json!([{"seq": 3, "t_ns": 2_031_357_000u64, "inner_ns": 12_816_000, "outer_ns": 157_147_000, "nmi_count": 0},
                       {"seq": 4, "t_ns": 3_000_000_000u64, "inner_ns": 24_361_000, "outer_ns": 0, "nmi_count": 2}]),
            ),
        ] {
            s.attributes.insert(k.into(), v);
        }
        s
    }

    #[test]
    fn the_tracers_section() {
        let d = doc("tracer", vec![tracer_series()]);
        let h = section(&d);
        assert!(
            h.contains("spins with interrupts off for 950ms of every 1s window"),
            "{h}"
        );
        assert!(h.contains("<tr><td>1</td><td>2</td><td>157.147ms</td><td>12.816ms</td><td>157.147ms</td><td>5</td><td>14.452ms</td><td>–</td></tr>"), "{h}");
        assert!(h.contains("SMIs not counted: AMD."));
        assert!(h.contains("tracefs was given back as it was."));
        assert!(h.contains("data-chart=\"hwlat-samples\""));
        // Inner and outer of each sample, each with its tooltip; an outer of 0 is not drawn.
        let p = points(&d);
        assert_eq!(p.len(), 4);
        assert_eq!((p[0].0, p[0].2), (0, 12_816_000.0));
        assert_eq!((p[1].0, p[1].2), (1, 157_147_000.0));
        assert!((p[1].1 - 2.031357).abs() < 1e-9);
        assert_eq!(
            p[1].3,
            "cpu 1 #3 at 2.031 s: inner 12.816ms, outer 157.147ms, 0 NMIs"
        );
        let c = chart(&d);
        assert_eq!(c.markers.len(), 3);
        let legend: Vec<(&str, &str)> = c
            .lines
            .iter()
            .map(|l| (l.label.as_str(), l.color))
            .collect();
        assert_eq!(
            legend,
            [("cpu 1 inner", color(0)), ("cpu 1 outer", color(1))]
        );
        // The axes: the run's 10 s (the samples are within), and the
        // latencies 8.5 ms to 157 ms with room, in ms.
        assert_eq!(
            c.x.scale,
            Scale::Linear {
                min: 0.0,
                max: 10.0
            }
        );
        assert_eq!(
            c.y.scale,
            Scale::Log {
                min: 12_816_000.0 / 1.5,
                max: 157_147_000.0 * 1.5
            }
        );
        assert_eq!(c.y.label, "latency (ms, log)");
        assert!(
            c.y.ticks
                .iter()
                .any(|t| t == &(100_000_000.0, "100".to_string())),
            "{:?}",
            c.y.ticks
        );
        assert_eq!(c.x.ticks.last().map(|t| t.0), Some(10.0));
        // A sample past the end stretches the time axis.
        let mut late = d.clone();
        late.duration_ns = 1_000_000_000;
        assert_eq!(chart(&late).x.scale, Scale::Linear { min: 0.0, max: 3.0 });
        // How tracefs was given back, each way.
        let restored = |r: serde_json::Value| {
            let mut x = d.clone();
            x.plan["session"]["tracer"]["restored"] = r;
            section(&x)
        };
        assert!(
            restored(json!({"differences": ["tracing_on: 1 -> 0"], "error": null}))
                .contains("tracefs is NOT as it was: tracing_on: 1 -&gt; 0.")
        );
        assert!(
            restored(json!({"differences": [], "error": "tracing_on: EBUSY"}))
                .contains("tracefs was NOT given back: tracing_on: EBUSY.")
        );
        assert!(restored(json!({"differences": ["buffer_size_kb: 7 (expanded: 1408) -> 1410"],
                                 "kernel_expanded_buffer": true, "error": null}))
            .contains("one-way expansion of a ring buffer never used since boot (buffer_size_kb: 7 (expanded: 1408) -&gt; 1410)."));
        // Another experiment has no such section.
        let mut other = d.clone();
        other.experiment = "noise".into();
        assert_eq!(section(&other), "");
    }

    /// compare: what a run found (tracefs, SMI counts) is no plan
    /// difference; the method is a condition, named in a warning.
    #[test]
    fn a_comparison_of_user_space_runs_says_upper_bound() {
        // Issue 36: compare's text never said so (only the HTML report).
        let run = |name: &str, doc: ResultDocument| super::super::Run {
            name: name.into(),
            path: name.into(),
            doc,
        };
        let t = doc("tracer", vec![tracer_series()]);
        let mut u = t.clone();
        u.plan["method_used"] = json!("user-space");
        assert_eq!(
            upper_bound_note(&[run("a", t.clone()), run("b", t.clone())]),
            None
        );
        let c = super::super::compare::build(String::new(), vec![run("a", t), run("b", u)], &[])
            .unwrap();
        let text = super::super::compare::text(&c);
        assert!(
            text.contains("note: b measured hwlat from user space: interrupts were on, so each figure is an upper bound on what the machine did"),
            "{text}"
        );
    }

    #[test]
    fn compare_leaves_the_session_out_and_names_the_method() {
        let run = |name: &str, doc: ResultDocument| super::super::Run {
            name: name.into(),
            path: name.into(),
            doc,
        };
        let mut a = doc("tracer", vec![tracer_series()]);
        let mut b = a.clone();
        b.plan["session"]["tracer"]["restored"]["differences"] = json!(["x"]);
        b.plan["session"]["smi"]["reason"] = json!("other");
        let (rows, warnings) =
            super::super::compare::plan_differences(&[run("a", a.clone()), run("b", b.clone())]);
        assert!(rows.is_empty(), "{rows:?}");
        assert!(warnings.is_empty());
        b.plan["method_used"] = json!("user-space");
        a.plan["tracer"]["width_us"] = json!(500_000);
        let (rows, warnings) = super::super::compare::plan_differences(&[run("a", a), run("b", b)]);
        let keys: Vec<&str> = rows.iter().skip(1).map(|r| r[0].as_str()).collect();
        assert_eq!(keys, ["method_used", "tracer.width_us"]);
        assert_eq!(
            warnings,
            ["the runs differ in method_used: the verdicts compare unlike conditions, not one change"]
        );
    }

    #[test]
    fn the_user_space_section_says_upper_bound() {
        let mut s = Series {
            label: "cpu 0".into(),
            ..Default::default()
        };
        s.attributes.insert("cpu".into(), json!(0));
        s.attributes.insert("smi_count".into(), json!(0));
        s.spikes.push(Spike {
            latency_ns: 159_106_000,
            t_ns: 1_001_000,
            seq: 4,
            cpu: 0,
        });
        let mut second = s.clone();
        second.label = "cpu 3".into();
        let d = doc("user-space", vec![s, second]);
        let h = section(&d);
        assert!(h.contains("From user space (no &lt;tracer&gt;)"), "{h}");
        // One colour per CPU (its first of two).
        let p = points(&d);
        assert_eq!((p[0].0, p[1].0), (0, 2));
        assert_eq!(chart(&d).lines[1].color, color(2));
        let d = doc("user-space", vec![d.series[0].clone()]);
        assert!(h.contains("<b>upper bound</b>"));
        assert!(h.contains("<tr><td>0</td><td>0</td><td>–</td><td>–</td><td>–</td><td>–</td><td>–</td><td>0</td></tr>"), "{h}");
        let p = points(&d);
        assert_eq!(p.len(), 1);
        assert!((p[0].1 - 0.001).abs() < 1e-12);
        assert!(p[0].3.ends_with("159.106ms no kernel event explains"));
        // Without a sample: the chart's note.
        assert_eq!(chart(&d).lines[0].label, "cpu 0");
        assert_eq!(chart(&d).lines.len(), 1);
        let empty = doc("user-space", vec![Series::default()]);
        assert_eq!(
            chart(&empty).empty_note.as_deref(),
            Some("no sample above the threshold")
        );
    }
}
