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
use rtscope_core::result::Series;

use super::svg::{count_label, linear_ticks, log_ticks, Axis, Chart, Line, Marker, Scale};

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

/// Counts per display bin of width `bw`.
pub fn rebin(s: &Series, bw: u64, nbins: usize) -> Vec<u64> {
    let mut bins = vec![0u64; nbins];
    for b in &s.histogram.buckets {
        let i = ((b[0] / bw) as usize).min(nbins.saturating_sub(1));
        if let Some(c) = bins.get_mut(i) {
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
    let max_ns = range_from
        .iter()
        .map(|p| max_bucket(p.series))
        .max()
        .unwrap_or(0);
    let bw = bin_width(max_ns, 150);
    let nbins = (max_ns / bw + 1) as usize;
    let unit = latency_unit((nbins as u64 * bw) as f64);
    let binned: Vec<Vec<u64>> = range_from
        .iter()
        .map(|p| rebin(p.series, bw, nbins))
        .collect();
    let max_count = binned.iter().flatten().copied().max().unwrap_or(0).max(1);
    let floor = 0.7;
    let y_max = max_count as f64 * 1.6;
    let mut lines = Vec::new();
    for p in draw {
        let counts = rebin(p.series, bw, nbins);
        let mut pts = Vec::new();
        let mut prev: Option<u64> = None;
        for (i, c) in counts.iter().enumerate() {
            let x0 = (i as u64 * bw) as f64 / unit.div;
            let y = |c: u64| if c == 0 { floor } else { c as f64 };
            if prev != Some(*c) {
                if let Some(pc) = prev {
                    pts.push((x0, y(pc)));
                }
                pts.push((x0, y(*c)));
                prev = Some(*c);
            }
        }
        if let Some(pc) = prev {
            pts.push((
                ((nbins as u64) * bw) as f64 / unit.div,
                if pc == 0 { floor } else { pc as f64 },
            ));
        }
        lines.push(Line {
            label: p.label.clone(),
            color: p.color,
            points: pts,
            dashed: false,
            width: 1.5,
            legend: true,
        });
    }
    let empty = draw.iter().all(|p| p.series.histogram.buckets.is_empty());
    Chart {
        kind: "histogram",
        title: title.to_string(),
        width,
        height,
        x: {
            let mut a = linear_axis(
                (nbins as u64 * bw) as f64 / unit.div,
                format!(
                    "latency ({}), bins of {}",
                    unit.name,
                    rtscope_core::units::format_ns(bw)
                ),
            );
            a.label = a.label.replace("us", "µs");
            a
        },
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
        markers: vec![],
        empty_note: empty.then(|| "no histogram in this data".to_string()),
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
    let n: u64 = buckets.iter().map(|b| b[1]).sum();
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
        below += b[1];
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
        y: linear_axis(
            y_max_ns * 1.05 / unit.div,
            format!("latency ({})", unit.name),
        ),
        lines,
        markers: vec![],
        empty_note: empty.then(|| "no histogram in this data".to_string()),
    }
}

/// Latency over time: per-interval max and mean, spikes as markers.
pub fn timeline(
    title: &str,
    range_from: &[Plotted],
    draw: &[Plotted],
    width: u32,
    height: u32,
) -> Chart {
    let t_end_ns = range_from
        .iter()
        .flat_map(|p| {
            let tl = &p.series.timeline;
            tl.points.last().map(|q| q.t_ns + tl.interval_ns)
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
    let unit = latency_unit(y_max_ns);
    let tx = |t_ns: u64| t_ns as f64 / 1e9 / tunit.div;
    let mut lines = Vec::new();
    let mut markers = Vec::new();
    // A sample in a thread's series and in the union is marked once.
    let mut marked = std::collections::HashSet::new();
    for p in draw {
        let tl = &p.series.timeline;
        if tl.points.is_empty() {
            continue;
        }
        // Each interval's value is drawn at the middle of the interval.
        let mid = tl.interval_ns / 2;
        lines.push(Line {
            label: format!("{} max", p.label),
            color: p.color,
            points: tl
                .points
                .iter()
                .map(|q| (tx(q.t_ns + mid), q.max_ns as f64 / unit.div))
                .collect(),
            dashed: false,
            width: 1.5,
            legend: true,
        });
        lines.push(Line {
            label: format!("{} mean", p.label),
            color: p.color,
            points: tl
                .points
                .iter()
                .map(|q| (tx(q.t_ns + mid), q.mean_ns / unit.div))
                .collect(),
            dashed: true,
            width: 1.0,
            legend: draw.len() == 1,
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
                y: s.latency_ns.max(0) as f64 / unit.div,
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
    let interval = range_from
        .iter()
        .map(|p| p.series.timeline.interval_ns)
        .find(|i| *i > 0)
        .unwrap_or(1_000_000_000);
    Chart {
        kind: "timeline",
        title: title.to_string(),
        width,
        height,
        x: linear_axis(
            (t_end_ns as f64 / 1e9 / tunit.div).max(1e-9),
            format!(
                "time since start ({}); max (solid) and mean (dashed) per {}",
                tunit.name,
                rtscope_core::units::format_ns(interval)
            ),
        ),
        y: linear_axis(
            y_max_ns * 1.08 / unit.div,
            format!("latency ({})", unit.name),
        ),
        lines,
        markers,
        empty_note: empty.then(|| "no timeline in this data".to_string()),
    }
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
        assert_eq!(nines_label(4), "99.99%");
    }
}
