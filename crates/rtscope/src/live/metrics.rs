//! `/metrics`: a live run's figures in the two exposition formats scrapers
//! read, chosen by the request's `Accept` header.
//!
//! - **OpenMetrics 1.0** (`application/openmetrics-text; version=1.0.0`)
//!   when the client asks for it (Prometheus does, first): `# TYPE`,
//!   `# UNIT`, `# HELP` per family, counters declared without their `_total`,
//!   the run as an `info` family, `# EOF` at the end.
//! - **The Prometheus text format 0.0.4** (`text/plain; version=0.0.4`)
//!   otherwise (promtool, Telegraf, the Datadog agent, curl): no `UNIT`, no
//!   `EOF`, counters declared by their sample name (`..._total`), the run as
//!   a gauge `rtscope_run_info` of value 1 (the text format has no info
//!   type; the `_info` suffix and the value 1 are its convention).
//!
//! Both are written from one list of families by the encoder below (a few
//! rules, unit-tested): the same samples, names, labels and values in both.
//!
//! Every family with a `series` label has one series per measurement thread;
//! the union of the threads (`all` in the snapshots and result documents) is
//! left out, so `sum(...)` over a board's series counts each sample once:
//! PromQL sums the threads' counters and buckets and takes the max of their
//! maxima (docs/fleet.md lists the queries).

use std::fmt::Write as _;

use super::window::{Window, WINDOW_S};
use super::{Snapshot, PROM_BUCKETS_NS, UNION_LABEL};

/// The content type of the OpenMetrics answer.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The content type of the Prometheus text answer.
pub const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// An exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    OpenMetrics,
    Text,
}

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics when it names
    /// `application/openmetrics-text` with a quality above 0 and at least
    /// that of the best range the text format matches (`text/plain`,
    /// `text/*`, `*/*`); the text format otherwise (no header, anything
    /// else).
    pub fn negotiate(accept: Option<&str>) -> Format {
        let (mut om, mut text) = (0.0f32, 0.0f32);
        for range in accept.unwrap_or_default().split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
            let mut q = 1.0f32;
            for p in parts {
                if let Some((k, v)) = p.split_once('=') {
                    if k.trim().eq_ignore_ascii_case("q") {
                        // An unreadable quality is taken as 0: not asked for.
                        q = v.trim().parse::<f32>().unwrap_or(0.0).clamp(0.0, 1.0);
                    }
                }
            }
            match media.as_str() {
                "application/openmetrics-text" => om = om.max(q),
                "text/plain" | "text/*" | "*/*" => text = text.max(q),
                _ => {}
            }
        }
        if om > 0.0 && om >= text {
            Format::OpenMetrics
        } else {
            Format::Text
        }
    }

    /// The `Content-Type` of an answer in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => OPENMETRICS,
            Format::Text => TEXT,
        }
    }
}

/// A metric type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
    Info,
}

/// A sample value: counts as integers, everything else as a float.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    Int(u64),
    Float(f64),
}

/// One sample: the suffix of its name, its labels, its value.
#[derive(Debug, Clone, PartialEq)]
struct Point {
    suffix: &'static str,
    labels: Vec<(&'static str, String)>,
    value: Value,
}

/// A metric family: its name (OpenMetrics': without `_total` or `_info`,
/// with the unit), help, type, unit and samples.
#[derive(Debug, Clone, PartialEq)]
struct Family {
    name: &'static str,
    help: &'static str,
    kind: Kind,
    unit: Option<&'static str>,
    points: Vec<Point>,
}

impl Family {
    fn new(name: &'static str, help: &'static str, kind: Kind, unit: Option<&'static str>) -> Self {
        Family {
            name,
            help,
            kind,
            unit,
            points: vec![],
        }
    }

    fn push(&mut self, suffix: &'static str, labels: Vec<(&'static str, String)>, value: Value) {
        self.points.push(Point {
            suffix,
            labels,
            value,
        });
    }
}

/// A float as both formats write it: `+Inf`, `-Inf`, `NaN`, or Rust's
/// shortest round-trip decimal (`0.000001`, `2.5`, `3`).
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

/// A label value, escaped (both formats: backslash, double quote, newline).
fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A help text, escaped: backslash and newline, and in OpenMetrics the
/// double quote too.
fn escape_help(v: &str, f: Format) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if f == Format::OpenMetrics => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

/// Writes `families` in format `f`.
fn encode(families: &[Family], f: Format) -> String {
    let mut out = String::new();
    for fam in families {
        match f {
            Format::OpenMetrics => {
                let kind = match fam.kind {
                    Kind::Counter => "counter",
                    Kind::Gauge => "gauge",
                    Kind::Histogram => "histogram",
                    Kind::Info => "info",
                };
                let _ = writeln!(out, "# TYPE {} {kind}", fam.name);
                if let Some(u) = fam.unit {
                    let _ = writeln!(out, "# UNIT {} {u}", fam.name);
                }
                let _ = writeln!(out, "# HELP {} {}", fam.name, escape_help(fam.help, f));
            }
            Format::Text => {
                let (name, kind) = match fam.kind {
                    Kind::Counter => (format!("{}_total", fam.name), "counter"),
                    Kind::Gauge => (fam.name.to_string(), "gauge"),
                    Kind::Histogram => (fam.name.to_string(), "histogram"),
                    Kind::Info => (format!("{}_info", fam.name), "gauge"),
                };
                let _ = writeln!(out, "# HELP {name} {}", escape_help(fam.help, f));
                let _ = writeln!(out, "# TYPE {name} {kind}");
            }
        }
        for p in &fam.points {
            out.push_str(fam.name);
            out.push_str(p.suffix);
            if !p.labels.is_empty() {
                out.push('{');
                for (i, (k, v)) in p.labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{k}=\"{}\"", escape_label(v));
                }
                out.push('}');
            }
            let _ = match p.value {
                Value::Int(n) => writeln!(out, " {n}"),
                Value::Float(x) => writeln!(out, " {}", number(x)),
            };
        }
    }
    if f == Format::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

fn secs(ns: f64) -> f64 {
    ns / 1e9
}

/// The families of a snapshot and of the window of its feed (`window`'s
/// series in the snapshot's order).
fn families(s: &Snapshot, window: &Window) -> Vec<Family> {
    let mut info = Family::new(
        "rtscope_run",
        "The run being measured (kernel, preemption model, host, plan).",
        Kind::Info,
        None,
    );
    let r = &s.run;
    info.push(
        "_info",
        vec![
            ("experiment", r.experiment.clone()),
            ("host", r.host.clone()),
            ("kernel", r.kernel.clone()),
            ("preemption", r.preemption.clone()),
            ("plan", r.plan.clone()),
        ],
        Value::Int(1),
    );
    let mut hist = Family::new(
        "rtscope_latency_seconds",
        "Latency of each sample since the run started.",
        Kind::Histogram,
        Some("seconds"),
    );
    let counter = |name, help| Family::new(name, help, Kind::Counter, None);
    let mut samples = counter("rtscope_samples", "Samples recorded.");
    let mut overruns = counter(
        "rtscope_overruns",
        "Periods missed (a wake-up after the next deadline).",
    );
    let mut dropped = counter(
        "rtscope_dropped",
        "Samples lost because the aggregator fell behind.",
    );
    let gauge = |name, help| Family::new(name, help, Kind::Gauge, Some("seconds"));
    let mut max = gauge(
        "rtscope_latency_max_seconds",
        "Largest latency since the run started.",
    );
    let mut wmax = gauge(
        "rtscope_window_latency_max_seconds",
        "Largest latency of the last 60 s (a sliding window, in 0.5 s steps).",
    );
    let mut wp99 = gauge(
        "rtscope_window_latency_p99_seconds",
        "99th percentile of the last 60 s (a sliding window, in 0.5 s steps; log buckets, 3 % wide).",
    );
    debug_assert_eq!(WINDOW_S, 60.0, "the help texts say 60 s");
    for (i, x) in s.series.iter().enumerate() {
        if x.label == UNION_LABEL {
            continue;
        }
        let series = || vec![("series", x.label.clone())];
        let mut cumulative = 0u64;
        // Every bound and +Inf, whatever the snapshot holds (counts per
        // bucket, the overflow last).
        for (j, bound) in PROM_BUCKETS_NS
            .iter()
            .map(|b| secs(*b as f64))
            .chain([f64::INFINITY])
            .enumerate()
        {
            cumulative += x.buckets.get(j).copied().unwrap_or(0);
            let mut labels = series();
            labels.push(("le", number(bound)));
            hist.push("_bucket", labels, Value::Int(cumulative));
        }
        hist.push("_count", series(), Value::Int(cumulative));
        hist.push("_sum", series(), Value::Float(secs(x.sum_ns)));
        samples.push("_total", series(), Value::Int(x.count));
        overruns.push("_total", series(), Value::Int(x.overruns));
        dropped.push("_total", series(), Value::Int(x.dropped));
        if let Some(m) = x.max_ns {
            max.push("", series(), Value::Float(secs(m as f64)));
        }
        let w = window.figures(i);
        if let Some(m) = w.max_ns {
            wmax.push("", series(), Value::Float(secs(m as f64)));
        }
        if let Some(p) = w.p99_ns {
            wp99.push("", series(), Value::Float(secs(p as f64)));
        }
    }
    vec![info, hist, samples, overruns, dropped, max, wmax, wp99]
}

/// `/metrics` of a snapshot (nothing but the end marker before the first)
/// in format `f`.
pub fn metrics(snap: Option<&Snapshot>, window: &Window, f: Format) -> String {
    match snap {
        Some(s) => encode(&families(s, window), f),
        None => encode(&[], f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::{IntervalFigures, RunInfo, SeriesSnapshot};
    use std::sync::Arc;

    #[test]
    fn openmetrics_only_when_asked_for_and_preferred() {
        use Format::*;
        let cases: [(Option<&str>, Format); 14] = [
            (None, Text),
            (Some(""), Text),
            (Some("*/*"), Text),
            (Some("text/plain;version=0.0.4"), Text),
            (Some("text/plain;version=0.0.4;q=0.3,*/*;q=0.2"), Text),
            // Prometheus 2.x and 3.x.
            (
                Some("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
                OpenMetrics,
            ),
            (
                Some("application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"),
                OpenMetrics,
            ),
            (Some("Application/OpenMetrics-Text"), OpenMetrics),
            (Some(" application/openmetrics-text ; Q=0.5 , text/plain;q=0.5"), OpenMetrics),
            (Some("application/openmetrics-text;q=0.5,text/plain;q=0.6"), Text),
            (Some("application/openmetrics-text;q=0.5,*/*;q=0.6"), Text),
            (Some("application/openmetrics-text;q=0"), Text),
            (Some("application/openmetrics-text;q=x"), Text),
            (Some("application/json, application/openmetrics-text;q=0.1"), OpenMetrics),
        ];
        for (accept, want) in cases {
            assert_eq!(Format::negotiate(accept), want, "{accept:?}");
        }
        assert_eq!(OpenMetrics.content_type(), OPENMETRICS);
        assert_eq!(Text.content_type(), TEXT);
    }

    #[test]
    fn numbers_and_escapes() {
        assert_eq!(number(0.000001), "0.000001");
        assert_eq!(number(2.5), "2.5");
        assert_eq!(number(3.0), "3");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(f64::NEG_INFINITY), "-Inf");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(escape_label("a\\b\"c\nd é"), "a\\\\b\\\"c\\nd é");
        assert_eq!(escape_help("a\\b\"c\nd", Format::Text), "a\\\\b\"c\\nd");
        assert_eq!(
            escape_help("a\\b\"c\nd", Format::OpenMetrics),
            "a\\\\b\\\"c\\nd"
        );
    }

    fn sample_families() -> Vec<Family> {
        let mut c = Family::new("x_events", "Events \"seen\".", Kind::Counter, None);
        c.push("_total", vec![("series", "a".into())], Value::Int(3));
        let mut i = Family::new("x_build", "Build.", Kind::Info, None);
        i.push("_info", vec![("v", "1\n2".into())], Value::Int(1));
        let mut g = Family::new("x_max_seconds", "Max.", Kind::Gauge, Some("seconds"));
        g.push("", vec![], Value::Float(0.25));
        let mut h = Family::new("x_seconds", "Lat.", Kind::Histogram, Some("seconds"));
        h.push("_bucket", vec![("le", "+Inf".into())], Value::Int(2));
        h.push("_count", vec![], Value::Int(2));
        h.push("_sum", vec![], Value::Float(1.5));
        vec![c, i, g, h]
    }

    #[test]
    fn openmetrics_encoding() {
        assert_eq!(
            encode(&sample_families(), Format::OpenMetrics),
            "# TYPE x_events counter\n\
             # HELP x_events Events \\\"seen\\\".\n\
             x_events_total{series=\"a\"} 3\n\
             # TYPE x_build info\n\
             # HELP x_build Build.\n\
             x_build_info{v=\"1\\n2\"} 1\n\
             # TYPE x_max_seconds gauge\n\
             # UNIT x_max_seconds seconds\n\
             # HELP x_max_seconds Max.\n\
             x_max_seconds 0.25\n\
             # TYPE x_seconds histogram\n\
             # UNIT x_seconds seconds\n\
             # HELP x_seconds Lat.\n\
             x_seconds_bucket{le=\"+Inf\"} 2\n\
             x_seconds_count 2\n\
             x_seconds_sum 1.5\n\
             # EOF\n"
        );
        assert_eq!(encode(&[], Format::OpenMetrics), "# EOF\n");
    }

    #[test]
    fn text_encoding() {
        assert_eq!(
            encode(&sample_families(), Format::Text),
            "# HELP x_events_total Events \"seen\".\n\
             # TYPE x_events_total counter\n\
             x_events_total{series=\"a\"} 3\n\
             # HELP x_build_info Build.\n\
             # TYPE x_build_info gauge\n\
             x_build_info{v=\"1\\n2\"} 1\n\
             # HELP x_max_seconds Max.\n\
             # TYPE x_max_seconds gauge\n\
             x_max_seconds 0.25\n\
             # HELP x_seconds Lat.\n\
             # TYPE x_seconds histogram\n\
             x_seconds_bucket{le=\"+Inf\"} 2\n\
             x_seconds_count 2\n\
             x_seconds_sum 1.5\n"
        );
        assert_eq!(encode(&[], Format::Text), "");
    }

    fn series(label: &str, buckets: Vec<u64>, max: Option<i64>) -> SeriesSnapshot {
        SeriesSnapshot {
            label: label.into(),
            count: buckets.iter().sum(),
            min_ns: None,
            mean_ns: None,
            p50_ns: None,
            p99_ns: None,
            p999_ns: None,
            max_ns: max,
            overruns: 4,
            dropped: 5,
            act_ns: None,
            late: 0,
            negative: 0,
            corrected: false,
            interval: IntervalFigures {
                max_ns: max,
                buckets: max
                    .map(|m| vec![(rtscope_core::record::blocks::bucket_of(m as u64), 1)])
                    .unwrap_or_default(),
                ..Default::default()
            },
            buckets,
            sum_ns: 1.5e9,
        }
    }

    fn snapshot() -> Snapshot {
        let mut b = vec![0u64; PROM_BUCKETS_NS.len() + 1];
        b[0] = 2; // <= 1 us
        b[3] = 5; // <= 10 us
        b[16] = 1; // above 100 ms
        Snapshot {
            seq: 1,
            state: "running",
            elapsed_s: 1.0,
            interval_s: 0.5,
            run: Arc::new(RunInfo {
                experiment: "cyclic".into(),
                host: "board \"1\"".into(),
                kernel: "6.1".into(),
                preemption: "PREEMPT_RT".into(),
                plan: "plan".into(),
                started_at: "t".into(),
            }),
            series: vec![
                series("thread 0", b.clone(), Some(150_000_000)),
                series("thread 1", vec![], None),
                series(UNION_LABEL, b, Some(150_000_000)),
            ],
            loads: vec![],
            warnings: vec![],
            snapshots_dropped: 0,
        }
    }

    #[test]
    fn a_snapshot_as_families_without_the_union() {
        let s = snapshot();
        let mut w = Window::default();
        w.push(&s);
        let text = metrics(Some(&s), &w, Format::Text);
        assert!(!text.contains("series=\"all\""), "{text}");
        for line in [
            "rtscope_run_info{experiment=\"cyclic\",host=\"board \\\"1\\\"\",kernel=\"6.1\",preemption=\"PREEMPT_RT\",plan=\"plan\"} 1",
            "rtscope_latency_seconds_bucket{series=\"thread 0\",le=\"0.000001\"} 2",
            "rtscope_latency_seconds_bucket{series=\"thread 0\",le=\"0.000002\"} 2",
            "rtscope_latency_seconds_bucket{series=\"thread 0\",le=\"0.00001\"} 7",
            "rtscope_latency_seconds_bucket{series=\"thread 0\",le=\"0.1\"} 7",
            "rtscope_latency_seconds_bucket{series=\"thread 0\",le=\"+Inf\"} 8",
            "rtscope_latency_seconds_count{series=\"thread 0\"} 8",
            "rtscope_latency_seconds_sum{series=\"thread 0\"} 1.5",
            "rtscope_latency_seconds_bucket{series=\"thread 1\",le=\"+Inf\"} 0",
            "rtscope_samples_total{series=\"thread 0\"} 8",
            "rtscope_overruns_total{series=\"thread 1\"} 4",
            "rtscope_dropped_total{series=\"thread 1\"} 5",
            "rtscope_latency_max_seconds{series=\"thread 0\"} 0.15",
            "rtscope_window_latency_max_seconds{series=\"thread 0\"} 0.15",
            "rtscope_window_latency_p99_seconds{series=\"thread 0\"} 0.15",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
        // 17 buckets per thread, nothing for a thread without a max.
        assert_eq!(text.matches("_bucket{").count(), 2 * 17);
        assert!(!text.contains("rtscope_latency_max_seconds{series=\"thread 1\"}"));
        assert!(!text.contains("rtscope_window_latency_max_seconds{series=\"thread 1\"}"));
        assert!(!text.contains("rtscope_window_latency_p99_seconds{series=\"thread 1\"}"));
        // The same samples in OpenMetrics.
        let om = metrics(Some(&s), &w, Format::OpenMetrics);
        let samples = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| !l.starts_with('#'))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(samples(&text), samples(&om));
        assert!(om.contains("# TYPE rtscope_run info\n"));
        assert!(om.contains("# TYPE rtscope_samples counter\n"));
        assert!(text.contains("# TYPE rtscope_samples_total counter\n"));
        assert!(text.contains("# TYPE rtscope_run_info gauge\n"));
        assert!(om.ends_with("# EOF\n"));
        assert_eq!(metrics(None, &w, Format::OpenMetrics), "# EOF\n");
        assert_eq!(metrics(None, &w, Format::Text), "");
    }
}
