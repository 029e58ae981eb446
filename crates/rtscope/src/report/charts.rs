//! The three charts of a report, built from result-document series:
//!
//! - the latency histogram, OSADL style: latency on a linear axis, counts on a
//!   log axis, one step line per series;
//! - latency over time: per-interval max (solid) and mean (dashed), the worst
//!   samples as markers;
//! - the percentile plot: latency against 1 − quantile on a log axis
//!   ("nines": 90 %, 99 %, 99.9 % ...), which shows the tail at a glance.
//!
//! Every builder takes the series that set the axes' ranges and the series to
//! draw separately, so that small multiples share their scales.

use rtscope_core::record::LatencyHistogram;
use rtscope_core::result::{LoadReport, Series, TimelinePoint};

use super::svg::{count_label, linear_ticks, log_ticks, Axis, Band, Chart, Line, Marker, Scale};

/// A series to plot, with its legend label and colour.
#[derive(Clone)]
pub struct Plotted<'a> {
    pub label: String,
    pub color: &'static str,
    pub series: &'a Series,
    /// The document's `start_clock_ns` (spikes are absolute on that clock).
    pub start_clock_ns: u64,
}

/// A unit to show values in, chosen from the largest value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unit {
    pub div: f64,
    pub name: &'static str,
}

/// ns, µs, ms or s, whichever keeps the largest value readable (µs up to
/// 100 ms: the unit real-time people think in).
pub fn latency_unit(max_ns: f64) -> Unit {
    if max_ns < 2_000.0 {
        Unit {
            div: 1.0,
            name: "ns",
        }
    } else if max_ns < 1e8 {
        Unit {
            div: 1e3,
            name: "µs",
        }
    } else if max_ns < 1e11 {
        Unit {
            div: 1e6,
            name: "ms",
        }
    } else {
        Unit {
            div: 1e9,
            name: "s",
        }
    }
}

/// s, min or h for a time axis of `max_s` seconds.
pub fn time_unit(max_s: f64) -> Unit {
    if max_s < 180.0 {
        Unit {
            div: 1.0,
            name: "s",
        }
    } else if max_s < 3.0 * 3600.0 {
        Unit {
            div: 60.0,
            name: "min",
        }
    } else {
        Unit {
            div: 3600.0,
            name: "h",
        }
    }
}

fn tick_label(v: f64) -> String {
    if v == v.trunc() {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn linear_axis(max: f64, label: String) -> Axis {
    let max = if max > 0.0 { max } else { 1.0 };
    Axis {
        scale: Scale::Linear { min: 0.0, max },
        ticks: linear_ticks(0.0, max, 6)
            .into_iter()
            .map(|v| (v, tick_label(v)))
            .collect(),
        label,
    }
}

/// "Nice" width (1, 2 or 5 × 10^k ns) that cuts `0..=max_ns` into about `target` bins.
pub fn bin_width(max_ns: u64, target: u64) -> u64 {
    let raw = (max_ns / target.max(1)).max(1);
    let mut mag = 1u64;
    while mag.saturating_mul(10) <= raw {
        mag *= 10;
    }
    [1, 2, 5, 10]
        .iter()
        .map(|m| m * mag)
        .find(|w| *w >= raw)
        .unwrap_or(10 * mag)
}

fn max_bucket(s: &Series) -> u64 {
    s.histogram
        .buckets
        .iter()
        .filter(|b| b[1] > 0)
        .map(|b| b[0])
        .max()
        .unwrap_or(0)
}

/// How latencies are cut into display bins.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Binning {
    /// `nbins` bins of `width` ns from 0 (OSADL style).
    Linear { width: u64, nbins: usize },
    /// `nbins` bins of equal width on a log axis from `lo` to `hi` ns, for
    /// long tails (the maximum far above the median).
    Log { lo: f64, hi: f64, nbins: usize },
}

/// The tail ratio (max / median) above which the histogram's latency axis is
/// logarithmic: beyond it a linear axis squeezes the bulk into one bin.
pub const LOG_AXIS_RATIO: u64 = 50;

impl Binning {
    /// Chooses the binning for these series.
    pub fn for_series(series: &[&Series]) -> Binning {
        let max_ns = series.iter().map(|s| max_bucket(s)).max().unwrap_or(0);
        let min_ns = series
            .iter()
            .filter_map(|s| {
                s.histogram
                    .buckets
                    .iter()
                    .filter(|b| b[1] > 0)
                    .map(|b| b[0])
                    .min()
            })
            .min()
            .unwrap_or(0);
        let median = series
            .iter()
            .filter(|s| !s.histogram.buckets.is_empty())
            .map(|s| s.stats.p50_ns)
            .min()
            .unwrap_or(0);
        if median > 0 && max_ns > median.saturating_mul(LOG_AXIS_RATIO) {
            let lo = (min_ns.max(1) as f64) / 1.05;
            let hi = (max_ns as f64) * 1.05;
            Binning::Log { lo, hi, nbins: 150 }
        } else {
            let width = bin_width(max_ns, 150);
            Binning::Linear {
                width,
                nbins: (max_ns / width + 1) as usize,
            }
        }
    }

    fn nbins(&self) -> usize {
        match *self {
            Binning::Linear { nbins, .. } | Binning::Log { nbins, .. } => nbins,
        }
    }

    /// The lower edge of bin `i` (`i == nbins`: the upper end), ns.
    pub fn edge(&self, i: usize) -> f64 {
        match *self {
            Binning::Linear { width, .. } => (i as u64 * width) as f64,
            Binning::Log { lo, hi, nbins } => {
                let (a, b) = (lo.log10(), hi.log10());
                10f64.powf(a + (b - a) * i as f64 / nbins as f64)
            }
        }
    }

    /// The bin that holds `v` ns.
    pub fn index(&self, v: u64) -> usize {
        let last = self.nbins().saturating_sub(1);
        match *self {
            Binning::Linear { width, .. } => ((v / width.max(1)) as usize).min(last),
            Binning::Log { lo, hi, nbins } => {
                let (a, b) = (lo.log10(), hi.log10());
                let x = ((v.max(1) as f64).log10() - a) / (b - a) * nbins as f64;
                if x.is_finite() && x > 0.0 {
                    (x as usize).min(last)
                } else {
                    0
                }
            }
        }
    }
}

/// Counts per display bin.
pub fn rebin(s: &Series, binning: &Binning) -> Vec<u64> {
    let mut bins = vec![0u64; binning.nbins()];
    for b in &s.histogram.buckets {
        if let Some(c) = bins.get_mut(binning.index(b[0])) {
            *c = c.saturating_add(b[1]);
        }
    }
    bins
}

/// The latency histogram.
pub fn histogram(
    title: &str,
    range_from: &[Plotted],
    draw: &[Plotted],
    width: u32,
    height: u32,
) -> Chart {
    let all: Vec<&Series> = range_from.iter().map(|p| p.series).collect();
    let binning = Binning::for_series(&all);
    let nbins = binning.nbins();
    let top_ns = binning.edge(nbins);
    let unit = latency_unit(top_ns);
    let max_count = range_from
        .iter()
        .flat_map(|p| rebin(p.series, &binning))
        .max()
        .unwrap_or(0)
        .max(1);
    let floor = 0.7;
    let y_max = max_count as f64 * 1.6;
    let y = |c: u64| if c == 0 { floor } else { c as f64 };
    let mut lines = Vec::new();
    let mut markers = Vec::new();
    for p in draw {
        let counts = rebin(p.series, &binning);
        let mut pts = Vec::new();
        let mut prev: Option<u64> = None;
        for (i, c) in counts.iter().enumerate() {
            let x0 = binning.edge(i) / unit.div;
            if prev != Some(*c) {
                if let Some(pc) = prev {
                    pts.push((x0, y(pc)));
                }
                pts.push((x0, y(*c)));
                prev = Some(*c);
            }
        }
        if let Some(pc) = prev {
            pts.push((top_ns / unit.div, y(pc)));
        }
        lines.push(Line {
            label: p.label.clone(),
            color: p.color,
            points: pts,
            dashed: false,
            width: 1.5,
            legend: true,
        });
        // The maximum, marked: its bin is often a single sample at the far right.
        if p.series.stats.has_samples() && !p.series.histogram.buckets.is_empty() {
            let max_ns = p.series.stats.max_ns.max(0) as u64;
            let c = counts[binning.index(max_ns).min(nbins.saturating_sub(1))];
            markers.push(Marker {
                x: max_ns as f64 / unit.div,
                y: y(c.max(1)),
                color: p.color,
                title: format!(
                    "{}: max {}",
                    p.label,
                    in_unit_text(max_ns as f64, latency_unit(max_ns as f64))
                ),
            });
        }
    }
    let empty = draw.iter().all(|p| p.series.histogram.buckets.is_empty());
    // Headroom right of the last bin, so that the maximum is not on the frame.
    let x = match binning {
        Binning::Linear { width, .. } => linear_axis(
            top_ns * 1.08 / unit.div,
            format!(
                "latency ({}), bins of {}",
                unit.name,
                in_unit_text(width as f64, latency_unit(width as f64))
            ),
        ),
        Binning::Log { lo, hi, .. } => {
            let (lo, hi) = (lo / unit.div, hi / unit.div);
            Axis {
                scale: Scale::Log {
                    min: lo,
                    max: hi * 1.25,
                },
                ticks: log_ticks_125(lo, hi)
                    .into_iter()
                    .map(|v| (v, tick_label(v)))
                    .collect(),
                label: format!(
                    "latency ({}, log scale: the tail is over {}x the median)",
                    unit.name, LOG_AXIS_RATIO
                ),
            }
        }
    };
    Chart {
        kind: "histogram",
        title: title.to_string(),
        width,
        height,
        x,
        y: Axis {
            scale: Scale::Log {
                min: floor,
                max: y_max,
            },
            ticks: log_ticks(1.0, y_max)
                .into_iter()
                .map(|v| (v, count_label(v)))
                .collect(),
            label: "samples (log)".into(),
        },
        lines,
        markers,
        empty_note: empty.then(|| "no histogram in this data".to_string()),
        legend_left: false,
        bands: vec![],
    }
}

/// `ns` as a short text in `unit` (`5µs`, `200ns`).
fn in_unit_text(ns: f64, unit: Unit) -> String {
    format!("{}{}", tick_label(ns / unit.div), unit.name)
}

/// Ticks at 1, 2 and 5 × 10^k within `lo..=hi` (only decades when that is too many).
pub fn log_ticks_125(lo: f64, hi: f64) -> Vec<f64> {
    let decades = log_ticks(lo / 10.0, hi * 10.0);
    let all: Vec<f64> = decades
        .iter()
        .flat_map(|d| [*d, 2.0 * d, 5.0 * d])
        .filter(|v| *v >= lo && *v <= hi)
        .collect();
    if all.len() > 12 {
        log_ticks(lo, hi)
    } else {
        all
    }
}

/// Points of the percentile curve: (nines, latency ns), where nines =
/// −log10(1 − q), capped at log10(n) for the last sample.
pub fn percentile_points(s: &Series) -> Vec<(f64, f64)> {
    let mut buckets: Vec<[u64; 2]> = s
        .histogram
        .buckets
        .iter()
        .copied()
        .filter(|b| b[1] > 0)
        .collect();
    buckets.sort_unstable_by_key(|b| b[0]);
    // Saturating: a document's counts are read, not trusted (no overflow
    // panic on counts near u64::MAX).
    let n: u64 = buckets.iter().fold(0u64, |a, b| a.saturating_add(b[1]));
    if n == 0 {
        return vec![];
    }
    let h = LatencyHistogram::from_export(&s.histogram);
    let cap = (n as f64).log10();
    let nines = |below: u64| {
        if below >= n {
            cap
        } else {
            (-(1.0 - below as f64 / n as f64).log10()).min(cap)
        }
    };
    let (lo, hi) = (s.stats.min_ns.max(0) as u64, s.stats.max_ns.max(0) as u64);
    let mut pts = Vec::with_capacity(buckets.len() * 2);
    let mut below = 0u64;
    for b in &buckets {
        let mut v = h.inner().highest_equivalent(b[0]);
        if hi > 0 {
            v = v.clamp(lo, hi.max(lo));
        }
        let x0 = nines(below);
        below = below.saturating_add(b[1]);
        let x1 = nines(below);
        pts.push((x0, v as f64));
        pts.push((x1, v as f64));
    }
    pts
}

/// The label of a nines tick: 0 → 0%, 1 → 90%, 2 → 99%, 3 → 99.9% ...
pub fn nines_label(k: u32) -> String {
    match k {
        0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        k => format!("99.{}%", "9".repeat(k as usize - 2)),
    }
}

/// The percentile plot.
pub fn percentiles(
    title: &str,
    range_from: &[Plotted],
    draw: &[Plotted],
    width: u32,
    height: u32,
) -> Chart {
    let all: Vec<Vec<(f64, f64)>> = range_from
        .iter()
        .map(|p| percentile_points(p.series))
        .collect();
    let x_max = all
        .iter()
        .flatten()
        .map(|p| p.0)
        .fold(1.0f64, f64::max)
        .ceil();
    let y_max_ns = all.iter().flatten().map(|p| p.1).fold(0.0, f64::max);
    let y_min_ns = all
        .iter()
        .flatten()
        .map(|p| p.1)
        .fold(f64::INFINITY, f64::min)
        .max(1.0);
    let median = range_from
        .iter()
        .filter(|p| !p.series.histogram.buckets.is_empty())
        .map(|p| p.series.stats.p50_ns)
        .min()
        .unwrap_or(0);
    // A long tail squeezes a linear axis flat: log scale, as for the histogram.
    let log_y = median > 0 && y_max_ns > (median.saturating_mul(LOG_AXIS_RATIO)) as f64;
    let unit = latency_unit(y_max_ns);
    let lines: Vec<Line> = draw
        .iter()
        .map(|p| Line {
            label: p.label.clone(),
            color: p.color,
            points: percentile_points(p.series)
                .into_iter()
                .map(|(x, y)| (x, y / unit.div))
                .collect(),
            dashed: false,
            width: 1.8,
            legend: true,
        })
        .collect();
    let empty = lines.iter().all(|l| l.points.is_empty());
    Chart {
        kind: "percentiles",
        title: title.to_string(),
        width,
        height,
        x: Axis {
            scale: Scale::Linear {
                min: 0.0,
                max: x_max,
            },
            ticks: (0..=x_max as u32)
                .map(|k| (f64::from(k), nines_label(k)))
                .collect(),
            label: "percentile (log scale of 1 − quantile)".into(),
        },
        y: if log_y {
            let (lo, hi) = (y_min_ns / 1.1 / unit.div, y_max_ns * 1.1 / unit.div);
            Axis {
                scale: Scale::Log { min: lo, max: hi },
                ticks: log_ticks_125(lo, hi)
                    .into_iter()
                    .map(|v| (v, tick_label(v)))
                    .collect(),
                label: format!("latency ({}, log scale)", unit.name),
            }
        } else {
            linear_axis(
                y_max_ns * 1.05 / unit.div,
                format!("latency ({})", unit.name),
            )
        },
        lines,
        markers: vec![],
        empty_note: empty.then(|| "no histogram in this data".to_string()),
        legend_left: true,
        bands: vec![],
    }
}

/// A point that breaks a line: the next point starts a new stroke.
pub const GAP: (f64, f64) = (f64::NAN, f64::NAN);

/// More timeline points than this are merged (a chart is about 1100 px wide).
pub const MAX_TIMELINE_POINTS: usize = 1200;

/// Merges runs of consecutive intervals so that at most `max` remain: the max
/// of their maxima, the min of their minima, the count-weighted mean. Spikes
/// stay visible; the interval grows by the merge factor.
pub fn decimate(
    points: &[TimelinePoint],
    interval_ns: u64,
    max: usize,
) -> (Vec<TimelinePoint>, u64) {
    if points.len() <= max || max == 0 {
        return (points.to_vec(), interval_ns);
    }
    let k = points.len().div_ceil(max);
    let merged = points
        .chunks(k)
        .map(|c| {
            let count: u64 = c.iter().map(|p| p.count).sum();
            let mean = if count == 0 {
                0.0
            } else {
                c.iter().map(|p| p.mean_ns * p.count as f64).sum::<f64>() / count as f64
            };
            TimelinePoint {
                t_ns: c[0].t_ns,
                count,
                min_ns: c.iter().map(|p| p.min_ns).min().unwrap_or(0),
                mean_ns: mean,
                max_ns: c.iter().map(|p| p.max_ns).max().unwrap_or(0),
            }
        })
        .collect();
    (merged, interval_ns.saturating_mul(k as u64))
}

/// Latency over time: each interval's max and mean drawn as a step over the
/// interval (not a point at its middle), the worst samples as markers at
/// their exact time, on a log axis so that the mean (tens of µs) stays
/// readable under maxima of milliseconds. With per-thread series, the `all`
/// series (their union: its max is the threads' max) is left out so that it
/// does not cover them.
pub fn timeline(
    title: &str,
    range_from: &[Plotted],
    draw: &[Plotted],
    width: u32,
    height: u32,
) -> Chart {
    timeline_with_loads(title, range_from, draw, width, height, &[])
}

/// [`timeline`], with the times scheduled loads (`every=`, `for=`) were on
/// shaded.
pub fn timeline_with_loads(
    title: &str,
    range_from: &[Plotted],
    draw: &[Plotted],
    width: u32,
    height: u32,
    loads: &[LoadReport],
) -> Chart {
    let t_end_ns = range_from
        .iter()
        .flat_map(|p| {
            let tl = &p.series.timeline;
            tl.points
                .last()
                .map(|q| q.t_ns.saturating_add(tl.interval_ns))
        })
        .max()
        .unwrap_or(0);
    let tunit = time_unit(t_end_ns as f64 / 1e9);
    let y_max_ns = range_from
        .iter()
        .flat_map(|p| {
            let tl = p.series.timeline.points.iter().map(|q| q.max_ns);
            let sp = p
                .series
                .spikes
                .iter()
                .filter(|s| s.t_ns >= p.start_clock_ns)
                .map(|s| s.latency_ns.max(0) as u64);
            tl.chain(sp)
        })
        .max()
        .unwrap_or(0) as f64;
    // The log axis starts below the smallest mean (at least 100 ns).
    let y_min_ns = range_from
        .iter()
        .flat_map(|p| p.series.timeline.points.iter())
        .filter(|q| q.count > 0)
        .map(|q| q.mean_ns.min(q.max_ns as f64))
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let y_min_ns = if y_min_ns.is_finite() {
        (y_min_ns / 2.0).max(100.0)
    } else {
        100.0
    };
    let unit = latency_unit(y_max_ns);
    let tx = |t_ns: u64| t_ns as f64 / 1e9 / tunit.div;
    let per_thread = draw.len() > 1 && draw.iter().any(|p| !is_union(p));
    let draw: Vec<&Plotted> = draw
        .iter()
        .filter(|p| !(per_thread && is_union(p)))
        .collect();
    let mut lines = Vec::new();
    let mut markers = Vec::new();
    // A sample in a thread's series and in the union is marked once.
    let mut marked = std::collections::HashSet::new();
    let mut shown_interval: Option<u64> = None;
    let mut gaps = false;
    for p in &draw {
        let tl = &p.series.timeline;
        if tl.points.is_empty() {
            continue;
        }
        let (points, interval_ns) = decimate(&tl.points, tl.interval_ns, MAX_TIMELINE_POINTS);
        shown_interval = shown_interval.max(Some(interval_ns));
        // A step over each interval: [t, t + interval) at the interval's
        // value; an interval without a sample (a stalled thread) is a gap
        // in the line ([`GAP`]), not a line drawn across it.
        let steps = |v: &dyn Fn(&TimelinePoint) -> f64| -> Vec<(f64, f64)> {
            let mut out = Vec::with_capacity(points.len() * 2);
            let mut end: Option<u64> = None;
            for q in points.iter().filter(|q| q.count > 0) {
                if end.is_some_and(|e| q.t_ns > e) {
                    out.push(GAP);
                }
                let y = v(q).max(y_min_ns) / unit.div;
                out.push((tx(q.t_ns), y));
                // Saturating: a document's times are read, not trusted.
                let q_end = q.t_ns.saturating_add(interval_ns);
                out.push((tx(q_end).min(tx(t_end_ns)), y));
                end = Some(q_end);
            }
            out
        };
        gaps |= points.iter().any(|q| q.count == 0);
        lines.push(Line {
            label: format!("{} max", p.label),
            color: p.color,
            points: steps(&|q| q.max_ns as f64),
            dashed: false,
            width: 1.5,
            legend: true,
        });
        lines.push(Line {
            label: format!("{} mean", p.label),
            color: p.color,
            points: steps(&|q| q.mean_ns),
            dashed: true,
            width: 1.2,
            legend: true,
        });
        for s in p.series.spikes.iter().take(10) {
            if s.t_ns < p.start_clock_ns
                || !marked.insert((p.start_clock_ns, s.t_ns, s.seq, s.latency_ns, s.cpu))
            {
                continue;
            }
            let rel = s.t_ns - p.start_clock_ns;
            markers.push(Marker {
                x: tx(rel),
                y: (s.latency_ns.max(0) as f64).max(y_min_ns) / unit.div,
                color: p.color,
                title: format!(
                    "{}: {:.1} {} at {:.3} s (sample {}, CPU {})",
                    p.label,
                    s.latency_ns.max(0) as f64 / unit.div,
                    unit.name,
                    rel as f64 / 1e9,
                    s.seq,
                    s.cpu
                ),
            });
        }
    }
    let empty = lines.is_empty();
    let interval = shown_interval.unwrap_or(1_000_000_000);
    let bands: Vec<Band> = if empty {
        Vec::new()
    } else {
        loads
            .iter()
            .filter_map(|l| l.schedule.as_ref().map(|s| (l, s)))
            .flat_map(|(l, s)| {
                s.on_intervals_ns.iter().map(move |&[a, b]| Band {
                    x0: tx(a),
                    x1: tx(b.min(t_end_ns)),
                    title: format!(
                        "load {} on from {:.3} s to {:.3} s",
                        l.spec,
                        a as f64 / 1e9,
                        b as f64 / 1e9
                    ),
                })
            })
            .collect()
    };
    let (lo, hi) = (
        y_min_ns / unit.div,
        (y_max_ns * 1.5).max(y_min_ns * 10.0) / unit.div,
    );
    Chart {
        kind: "timeline",
        title: title.to_string(),
        width,
        height,
        x: linear_axis(
            (t_end_ns as f64 / 1e9 / tunit.div).max(1e-9),
            format!(
                "time since start ({}); max (solid) and mean (dashed) over each {}; markers: worst samples at their time{}{}",
                tunit.name,
                rtscope_core::units::format_ns(interval),
                if gaps {
                    "; gaps: no wake-up in the interval"
                } else {
                    ""
                },
                if bands.is_empty() {
                    ""
                } else {
                    "; shaded: scheduled loads on"
                }
            ),
        ),
        y: Axis {
            scale: Scale::Log { min: lo, max: hi },
            ticks: log_ticks_125(lo, hi)
                .into_iter()
                .map(|v| (v, tick_label(v)))
                .collect(),
            label: format!("latency ({}, log scale)", unit.name),
        },
        lines,
        markers,
        empty_note: empty.then(|| "no timeline in this data".to_string()),
        legend_left: false,
        bands,
    }
}

/// The union series of a run (`all`), drawn only when it is alone.
fn is_union(p: &Plotted) -> bool {
    p.series.label == "all"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_bins() {
        assert_eq!(latency_unit(500.0).name, "ns");
        assert_eq!(latency_unit(50_000.0).name, "µs");
        assert_eq!(latency_unit(5e6).name, "µs");
        assert_eq!(latency_unit(5e8).name, "ms");
        assert_eq!(time_unit(36_000.0).name, "h");
        assert_eq!(bin_width(150_000, 150), 1000);
        assert_eq!(bin_width(400_000, 150), 5000);
        assert_eq!(bin_width(10, 150), 1);
        assert_eq!(
            log_ticks_125(15.0, 3000.0),
            vec![20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0]
        );
        let b = Binning::Log {
            lo: 10.0,
            hi: 100_000.0,
            nbins: 4,
        };
        assert_eq!(b.index(10), 0);
        assert_eq!(b.index(150), 1);
        assert_eq!(b.index(99_999), 3);
        assert_eq!(b.index(0), 0);
        assert!((b.edge(2) - 1000.0).abs() < 1e-6);
        let l = Binning::Linear { width: 5, nbins: 3 };
        assert_eq!((l.index(4), l.index(5), l.index(1000)), (0, 1, 2));
        assert_eq!(nines_label(4), "99.99%");
    }

    #[test]
    fn scheduled_loads_are_shaded_on_the_timeline() {
        let mut rec = rtscope_core::record::SeriesRecorder::new(0, 4, None);
        for i in 0..3000u64 {
            rec.record(&rtscope_core::sample::Sample {
                seq: i,
                t_ns: i * 1_000_000,
                latency_ns: 20_000,
                overruns: 0,
                cpu: 0,
            });
        }
        let s = rec.to_series("thread 0", 0);
        let p = [Plotted {
            label: "thread 0".into(),
            color: "#000",
            series: &s,
            start_clock_ns: 0,
        }];
        let load = LoadReport {
            spec: "cpu:100,every=1s,for=300ms".into(),
            schedule: Some(rtscope_core::result::LoadSchedule {
                every_ns: 1_000_000_000,
                for_ns: 300_000_000,
                start_ns: 0,
                on_intervals_ns: vec![[0, 300_000_000], [1_000_000_000, 1_300_000_000]],
                on_count: 2,
                on_s: 0.6,
            }),
            ..Default::default()
        };
        let c = timeline_with_loads("t", &p, &p, 600, 300, std::slice::from_ref(&load));
        assert_eq!(c.bands.len(), 2);
        assert!(c.x.label.contains("shaded"), "{}", c.x.label);
        let svg = c.render();
        assert_eq!(svg.matches(r#"<rect class="band""#).count(), 2);
        assert!(svg.contains("load cpu:100,every=1s,for=300ms on from 1.000 s to 1.300 s"));
        // Without a schedule: no band, the label as before.
        let c = timeline("t", &p, &p, 600, 300);
        assert!(c.bands.is_empty() && !c.x.label.contains("shaded"));
    }

    /// Intervals without a sample (a thread stalled for 3 s) are gaps in
    /// the lines, said in the axis label; a timeline without any is one
    /// stroke per line, as before.
    #[test]
    fn intervals_without_samples_are_gaps() {
        let series = |stall: bool| {
            let mut rec = rtscope_core::record::SeriesRecorder::new(0, 4, None);
            for i in (0..10_000u64).filter(|i| !stall || !(3_000..6_000).contains(i)) {
                rec.record(&rtscope_core::sample::Sample {
                    seq: i,
                    t_ns: i * 1_000_000,
                    latency_ns: 20_000,
                    overruns: 0,
                    cpu: 0,
                });
            }
            rec.to_series("thread 0", 0)
        };
        let strokes = |s: &Series| {
            let p = [Plotted {
                label: "thread 0".into(),
                color: "#000",
                series: s,
                start_clock_ns: 0,
            }];
            let c = timeline("t", &p, &p, 600, 300);
            let max = c.lines.iter().find(|l| l.label == "thread 0 max").unwrap();
            assert_eq!(
                max.points.iter().filter(|q| q.0.is_nan()).count(),
                usize::from(c.x.label.contains("gaps"))
            );
            let svg = c.render();
            let d = svg
                .split("<path class=\"series\" d=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .unwrap()
                .to_string();
            assert!(!d.contains("NaN"), "{d}");
            (d.matches('M').count(), c.x.label)
        };
        let (n, label) = strokes(&series(true));
        assert_eq!(n, 2, "one stroke before the stall, one after");
        assert!(
            label.contains("; gaps: no wake-up in the interval"),
            "{label}"
        );
        let (n, label) = strokes(&series(false));
        assert_eq!(n, 1);
        assert!(!label.contains("gaps"), "{label}");
    }

    /// Timeline times near u64::MAX (a document read, not trusted) do not
    /// overflow (the hard pass's report of such a document panicked, before
    /// the gaps too).
    #[test]
    fn timeline_times_near_the_end_of_u64() {
        let mut s = Series::default();
        s.timeline.interval_ns = 1_000_000_000;
        s.timeline.points = vec![
            TimelinePoint {
                t_ns: u64::MAX - 5,
                count: 1,
                min_ns: 1,
                mean_ns: 1.0,
                max_ns: 1,
            },
            TimelinePoint {
                t_ns: 0,
                count: 1,
                min_ns: 1,
                mean_ns: 1.0,
                max_ns: 1,
            },
        ];
        let p = [Plotted {
            label: "t".into(),
            color: "#000",
            series: &s,
            start_clock_ns: 0,
        }];
        let c = timeline("t", &p, &p, 600, 300);
        assert!(!c.lines.is_empty());
        assert!(!c.render().is_empty());
    }

    /// Counts near u64::MAX (a document read, not trusted) saturate
    /// instead of overflowing (the hard pass's `compare --html` panicked).
    #[test]
    fn percentile_points_of_huge_counts() {
        let s = Series {
            histogram: rtscope_core::result::HistogramExport {
                lowest_ns: 1,
                highest_ns: 100_000_000_000,
                significant_digits: 3,
                buckets: vec![[1_000, u64::MAX], [5_000, u64::MAX], [9_000, 7]],
            },
            ..Default::default()
        };
        let pts = percentile_points(&s);
        assert_eq!(pts.len(), 6);
        assert!(
            pts.iter().all(|p| p.0.is_finite() && p.1.is_finite()),
            "{pts:?}"
        );
    }

    #[test]
    fn decimation_keeps_spikes() {
        let pts: Vec<TimelinePoint> = (0..3600u64)
            .map(|i| TimelinePoint {
                t_ns: i * 1_000_000_000,
                count: 1000,
                min_ns: 1000,
                mean_ns: 2000.0,
                max_ns: if i == 1234 { 900_000 } else { 5000 },
            })
            .collect();
        let (d, iv) = decimate(&pts, 1_000_000_000, 1200);
        assert_eq!(d.len(), 1200);
        assert_eq!(iv, 3_000_000_000);
        assert_eq!(d.iter().map(|p| p.max_ns).max(), Some(900_000));
        assert_eq!(d.iter().map(|p| p.count).sum::<u64>(), 3_600_000);
        assert!(d.iter().all(|p| p.mean_ns == 2000.0));
        let (same, _) = decimate(&pts[..10], 1, 1200);
        assert_eq!(same.len(), 10);
    }
}
