//! A small SVG line-chart writer: linear or log axes with ticks, lines (solid
//! or dashed), point markers with tooltips and a legend. Deliberately small
//! (no plotting crate, no fonts): the browser lays out the text, every string
//! is escaped, coordinates carry one decimal.
//!
//! Every chart's root element carries `class="chart"` and `data-chart="KIND"`
//! (histogram, timeline, percentiles) so that tests find them in the DOM.

use std::fmt::Write;

use super::esc;

/// Colours for series, one per run or per series, in order (Tableau 10).
pub const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// The colour of the `i`-th series.
pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// How values map onto an axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    Linear {
        min: f64,
        max: f64,
    },
    /// Base-10 logarithmic; `min` must be > 0.
    Log {
        min: f64,
        max: f64,
    },
}

impl Scale {
    /// The position of `v` along the axis, 0..=1 (clamped).
    pub fn norm(&self, v: f64) -> f64 {
        let r = match *self {
            Scale::Linear { min, max } => {
                if max > min {
                    (v - min) / (max - min)
                } else {
                    0.5
                }
            }
            Scale::Log { min, max } => {
                let (lmin, lmax) = (min.max(1e-300).log10(), max.max(1e-300).log10());
                if lmax > lmin {
                    (v.max(min).max(1e-300).log10() - lmin) / (lmax - lmin)
                } else {
                    0.5
                }
            }
        };
        if r.is_finite() {
            r.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// An axis: its scale, its ticks (value, label) and its title.
#[derive(Debug, Clone)]
pub struct Axis {
    pub scale: Scale,
    pub ticks: Vec<(f64, String)>,
    pub label: String,
}

/// A polyline.
#[derive(Debug, Clone)]
pub struct Line {
    pub label: String,
    pub color: &'static str,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
    pub width: f64,
    /// Whether it gets a legend entry.
    pub legend: bool,
}

/// A point with a tooltip (a spike on a timeline).
#[derive(Debug, Clone)]
pub struct Marker {
    pub x: f64,
    pub y: f64,
    pub color: &'static str,
    pub title: String,
}

/// One chart.
#[derive(Debug, Clone)]
pub struct Chart {
    /// `histogram`, `timeline`, `percentiles`: the `data-chart` attribute.
    pub kind: &'static str,
    pub title: String,
    pub width: u32,
    pub height: u32,
    pub x: Axis,
    pub y: Axis,
    pub lines: Vec<Line>,
    pub markers: Vec<Marker>,
    /// Shown in the middle of the plot area when there is nothing to draw.
    pub empty_note: Option<String>,
    /// Legend at the top left instead of the top right (curves that rise to the right).
    pub legend_left: bool,
    /// Shaded x ranges behind the data (when a scheduled load was on).
    pub bands: Vec<Band>,
}

/// A shaded range of the x axis, from `x0` to `x1` (axis units), with a
/// tooltip.
#[derive(Debug, Clone)]
pub struct Band {
    pub x0: f64,
    pub x1: f64,
    pub title: String,
}

/// A number with at most one decimal, without a trailing `.0`.
pub fn f1(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// "Nice" linear ticks (steps of 1, 2 or 5 × 10^k) covering `min..=max`,
/// about `target` of them.
pub fn linear_ticks(min: f64, max: f64, target: usize) -> Vec<f64> {
    if max <= min || !min.is_finite() || !max.is_finite() {
        return vec![min];
    }
    let raw = (max - min) / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (min / step).ceil() * step;
    let mut out = Vec::new();
    let mut v = first;
    while v <= max + step * 1e-9 && out.len() < 100 {
        // Avoid -0 and 0.30000000000000004.
        out.push(((v / step).round() * step * 1e9).round() / 1e9 + 0.0);
        v += step;
    }
    out
}

/// Decade ticks 10^k within `min..=max`.
pub fn log_ticks(min: f64, max: f64) -> Vec<f64> {
    let mut out = Vec::new();
    if min <= 0.0 || max < min || min.is_nan() || max.is_nan() {
        return out;
    }
    let mut e = min.log10().ceil() as i32;
    while 10f64.powi(e) <= max * (1.0 + 1e-9) && out.len() < 40 {
        out.push(10f64.powi(e));
        e += 1;
    }
    out
}

/// A count for a log axis label: 1, 10, 100, 1k, 10k, 1M ...
pub fn count_label(v: f64) -> String {
    let v = v.round() as u64;
    match v {
        0..=999 => v.to_string(),
        1_000..=999_999 => format!("{}k", v / 1_000),
        1_000_000..=999_999_999 => format!("{}M", v / 1_000_000),
        _ => format!("{}G", v / 1_000_000_000),
    }
}

/// About how wide `text` is drawn at `px` pixels: 0.6 em a character, what
/// DejaVu Sans and the usual system-ui fonts average (digits 0.64 em, so
/// 0.62 keeps a margin for labels of numbers).
pub fn text_width(text: &str, px: f64) -> f64 {
    text.chars().count() as f64 * px * 0.62
}

/// `text` as it fits in `width` pixels at `px`: whole, or cut at the last
/// `; ` (then `, `) that fits, else at a character with `…`; and whether it
/// was cut (the caller then adds the whole text as a tooltip).
pub fn fit(text: &str, px: f64, width: f64) -> (String, bool) {
    if text_width(text, px) <= width {
        return (text.to_string(), false);
    }
    for sep in ["; ", ", "] {
        let mut best = None;
        for (i, _) in text.match_indices(sep) {
            if text_width(&text[..i], px) <= width {
                best = Some(i);
            }
        }
        if let Some(i) = best.filter(|i| *i > 0) {
            // `latency (µs, log: ...)` cut at the comma still closes its parenthesis.
            let cut = &text[..i];
            let open = cut
                .matches('(')
                .count()
                .saturating_sub(cut.matches(')').count());
            if open > 0 && text_width(&format!("{cut})"), px) > width {
                continue;
            }
            return (format!("{cut}{}", ")".repeat(open)), true);
        }
    }
    let keep = ((width / (px * 0.62)) as usize).saturating_sub(1);
    let cut: String = text.chars().take(keep).collect();
    (format!("{}…", cut.trim_end()), true)
}

/// A `<text>`'s content: `text` fitted to `width`, with the whole text as
/// its tooltip when it was cut.
fn fitted(text: &str, px: f64, width: f64) -> String {
    match fit(text, px, width) {
        (t, false) => esc(&t),
        (t, true) => format!("<title>{}</title>{}", esc(text), esc(&t)),
    }
}

const MARGIN_LEFT: f64 = 62.0;
const MARGIN_RIGHT: f64 = 16.0;
const MARGIN_TOP: f64 = 30.0;
const MARGIN_BOTTOM: f64 = 44.0;

impl Chart {
    fn plot_area(&self) -> (f64, f64, f64, f64) {
        let (w, h) = (f64::from(self.width), f64::from(self.height));
        (
            MARGIN_LEFT,
            MARGIN_TOP,
            (w - MARGIN_LEFT - MARGIN_RIGHT).max(10.0),
            (h - MARGIN_TOP - MARGIN_BOTTOM).max(10.0),
        )
    }

    fn px(&self, x: f64, y: f64) -> (f64, f64) {
        let (l, t, w, h) = self.plot_area();
        (
            l + self.x.scale.norm(x) * w,
            t + (1.0 - self.y.scale.norm(y)) * h,
        )
    }

    /// The chart as an `<svg>` element.
    pub fn render(&self) -> String {
        let (l, t, w, h) = self.plot_area();
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="{kind}" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" aria-label="{title}">"#,
            kind = self.kind,
            W = self.width,
            H = self.height,
            title = esc(&self.title),
        );
        let _ = write!(
            s,
            r#"<text class="ctitle" x="{}" y="18" text-anchor="middle">{}</text>"#,
            f1(l + w / 2.0),
            // 13 px bold: about 0.67 em a character.
            fitted(&self.title, 14.0, f64::from(self.width) - 12.0)
        );
        // Shaded bands, behind everything else, clipped to the plot area.
        if !self.bands.is_empty() {
            s.push_str(r#"<g class="bands">"#);
            for b in &self.bands {
                let (x0, _) = self.px(b.x0, 0.0);
                let (x1, _) = self.px(b.x1, 0.0);
                let (x0, x1) = (x0.clamp(l, l + w), x1.clamp(l, l + w));
                if x1 <= x0 {
                    continue;
                }
                let _ = write!(
                    s,
                    r#"<rect class="band" x="{}" y="{}" width="{}" height="{}"><title>{}</title></rect>"#,
                    f1(x0),
                    f1(t),
                    f1((x1 - x0).max(0.5)),
                    f1(h),
                    esc(&b.title)
                );
            }
            s.push_str("</g>");
        }
        // Grid and ticks.
        s.push_str(r#"<g class="grid">"#);
        for (v, label) in &self.x.ticks {
            let (x, _) = self.px(*v, 0.0);
            // The last label at the right edge would be cut off: align its
            // end there; the first, at the left, would meet the y axis'
            // lowest label: align its start there.
            let anchor = if x > l + w - 20.0 {
                "end"
            } else if x < l + 20.0 {
                "start"
            } else {
                "middle"
            };
            let _ = write!(
                s,
                r#"<line x1="{x}" y1="{t}" x2="{x}" y2="{b}"/><text class="tick" x="{x}" y="{ty}" text-anchor="{anchor}">{lab}</text>"#,
                x = f1(x),
                t = f1(t),
                b = f1(t + h),
                ty = f1(t + h + 15.0),
                lab = esc(label)
            );
        }
        for (v, label) in &self.y.ticks {
            let (_, y) = self.px(
                match self.x.scale {
                    Scale::Linear { min, .. } | Scale::Log { min, .. } => min,
                },
                *v,
            );
            let _ = write!(
                s,
                r#"<line x1="{l}" y1="{y}" x2="{r}" y2="{y}"/><text class="tick" x="{tx}" y="{ty}" text-anchor="end">{lab}</text>"#,
                l = f1(l),
                r = f1(l + w),
                y = f1(y),
                tx = f1(l - 5.0),
                ty = f1(y + 4.0),
                lab = esc(label)
            );
        }
        s.push_str("</g>");
        let _ = write!(
            s,
            r#"<rect class="frame" x="{}" y="{}" width="{}" height="{}"/>"#,
            f1(l),
            f1(t),
            f1(w),
            f1(h)
        );
        let _ = write!(
            s,
            r#"<text class="alabel" x="{}" y="{}" text-anchor="middle">{}</text>"#,
            f1(l + w / 2.0),
            f1(t + h + 34.0),
            fitted(&self.x.label, 11.0, f64::from(self.width) - 8.0)
        );
        let _ = write!(
            s,
            r#"<text class="alabel" transform="translate(14 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
            f1(t + h / 2.0),
            fitted(&self.y.label, 11.0, f64::from(self.height) - 8.0)
        );
        // Data.
        for line in &self.lines {
            if line.points.is_empty() {
                continue;
            }
            let mut d = String::new();
            let mut last: Option<(String, String)> = None;
            for (x, y) in &line.points {
                // A point that is not a number breaks the line (a gap).
                if !x.is_finite() || !y.is_finite() {
                    last = None;
                    continue;
                }
                let (px, py) = self.px(*x, *y);
                let p = (f1(px), f1(py));
                if last.as_ref() == Some(&p) {
                    continue;
                }
                let _ = write!(
                    d,
                    "{}{} {}",
                    if last.is_none() { "M" } else { "L" },
                    p.0,
                    p.1
                );
                last = Some(p);
            }
            let _ = write!(
                s,
                r#"<path class="series" d="{d}" stroke="{c}" stroke-width="{sw}"{dash}><title>{lab}</title></path>"#,
                c = line.color,
                sw = f1(line.width),
                dash = if line.dashed {
                    r#" stroke-dasharray="4 3""#
                } else {
                    ""
                },
                lab = esc(&line.label)
            );
        }
        for m in &self.markers {
            let (px, py) = self.px(m.x, m.y);
            let _ = write!(
                s,
                r#"<circle class="marker" cx="{}" cy="{}" r="3.5" stroke="{c}"><title>{}</title></circle>"#,
                f1(px),
                f1(py),
                esc(&m.title),
                c = m.color
            );
        }
        if let Some(note) = &self.empty_note {
            let _ = write!(
                s,
                r#"<text class="note" x="{}" y="{}" text-anchor="middle">{}</text>"#,
                f1(l + w / 2.0),
                f1(t + h / 2.0),
                esc(note)
            );
        }
        // Legend: top right, inside the plot area.
        let mut entries: Vec<&Line> = self.lines.iter().filter(|l| l.legend).collect();
        // One line named as the chart is (a small multiple): the title says it.
        if let [one] = entries[..] {
            if one.label == self.title {
                entries.clear();
            }
        }
        if !entries.is_empty() {
            let longest = entries
                .iter()
                .map(|e| text_width(&e.label, 11.0))
                .fold(0.0, f64::max);
            // Labels longer than the plot is wide (or 40 characters) are
            // cut, whole in the tooltip.
            let room = (w - 12.0 - 34.0)
                .max(40.0)
                .min(text_width(&"x".repeat(40), 11.0));
            let lw = 34.0 + longest.min(room);
            let lh = 6.0 + 15.0 * entries.len() as f64;
            let lx = if self.legend_left {
                l + 6.0
            } else {
                l + w - lw - 6.0
            };
            let ly = t + 6.0;
            let _ = write!(
                s,
                r#"<g class="legend"><rect x="{}" y="{}" width="{}" height="{}"/>"#,
                f1(lx),
                f1(ly),
                f1(lw),
                f1(lh)
            );
            for (i, e) in entries.iter().enumerate() {
                let y = ly + 13.0 + 15.0 * i as f64;
                let _ = write!(
                    s,
                    r#"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="{c}" stroke-width="3"{dash}/><text x="{}" y="{}">{}</text>"#,
                    f1(lx + 6.0),
                    f1(lx + 24.0),
                    f1(lx + 29.0),
                    f1(y + 4.0),
                    fitted(&e.label, 11.0, lw - 33.0),
                    y = f1(y),
                    c = e.color,
                    dash = if e.dashed {
                        r#" stroke-dasharray="4 3""#
                    } else {
                        ""
                    },
                );
            }
            s.push_str("</g>");
        }
        s.push_str("</svg>");
        s
    }
}

/// The chart, or only its note when it has nothing to draw (an imported
/// document has no timeline, a cyclictest file without -h no histogram).
pub fn render_or_note(c: &Chart) -> String {
    match &c.empty_note {
        Some(note) => format!(
            "<p class=\"sub nochart\" data-chart-missing=\"{}\">{}: {}.</p>\n",
            c.kind,
            esc(&c.title),
            esc(note)
        ),
        None => format!("<div class=\"cw\">{}</div>\n", c.render()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(title: &str, labels: &[&str], width: u32) -> Chart {
        let axis = |label: &str| Axis {
            scale: Scale::Linear {
                min: 0.0,
                max: 10.0,
            },
            ticks: vec![(0.0, "0".into()), (5.0, "5".into()), (10.0, "10".into())],
            label: label.into(),
        };
        Chart {
            kind: "t",
            title: title.into(),
            width,
            height: 200,
            x: axis("x axis, with a long explanation; and more of it after that"),
            y: axis("y"),
            lines: labels
                .iter()
                .map(|l| Line {
                    label: l.to_string(),
                    color: "#000",
                    points: vec![(1.0, 1.0), (2.0, 2.0)],
                    dashed: false,
                    width: 1.0,
                    legend: true,
                })
                .collect(),
            markers: vec![],
            empty_note: None,
            legend_left: false,
            bands: vec![],
        }
    }

    /// A small multiple's one line named as its title gets no legend; the
    /// first x tick starts at the axis, the last ends there; a long axis
    /// label is cut with its whole text as the tooltip.
    #[test]
    fn labels_keep_apart() {
        assert!(!chart("thread 0", &["thread 0"], 380)
            .render()
            .contains("class=\"legend\""));
        assert!(chart("thread 0", &["thread 0 max"], 380)
            .render()
            .contains("class=\"legend\""));
        assert!(chart("t", &["a", "b"], 380)
            .render()
            .contains("class=\"legend\""));
        let svg = chart("t", &["a"], 380).render();
        assert!(svg.contains("text-anchor=\"start\">0</text>"), "{svg}");
        assert!(svg.contains("text-anchor=\"middle\">5</text>"), "{svg}");
        assert!(svg.contains("text-anchor=\"end\">10</text>"), "{svg}");
        assert!(svg.contains("<title>x axis, with a long explanation; and more of it after that</title>x axis, with a long explanation</text>"), "{svg}");
        let wide = chart("t", &["a"], 1160).render();
        assert!(
            wide.contains(">x axis, with a long explanation; and more of it after that</text>"),
            "{wide}"
        );
        // A legend label longer than the plot is wide is cut.
        let long = "a very long legend label that runs on and on past the frame";
        let svg = chart("t", &[long, "b"], 300).render();
        assert!(svg.contains(&format!("<title>{long}</title>")), "{svg}");
    }

    #[test]
    fn long_labels_are_fitted() {
        assert_eq!(text_width("abcde", 10.0), 31.0);
        assert_eq!(fit("short", 11.0, 100.0), ("short".to_string(), false));
        let long = "time since start (s); max (solid) and mean (dashed); markers";
        // 11 px: 6.82 px a character; "time since start (s)" is 20 (136 px).
        assert_eq!(
            fit(long, 11.0, 140.0),
            ("time since start (s)".to_string(), true)
        );
        assert_eq!(
            fit(long, 11.0, 360.0),
            (
                "time since start (s); max (solid) and mean (dashed)".to_string(),
                true
            )
        );
        assert_eq!(fit("a, b, c", 10.0, 30.0), ("a, b".to_string(), true));
        assert_eq!(
            fit("latency (µs, log: 150 bins)", 10.0, 90.0),
            ("latency (µs)".to_string(), true)
        );
        let (t, cut) = fit("abcdefghijklmnop", 10.0, 62.0);
        assert!(cut);
        assert_eq!(t, "abcdefghi…");
        assert_eq!(fitted("x<y", 10.0, 100.0), "x&lt;y");
        assert_eq!(
            fitted("abcdefghijklmnop", 10.0, 62.0),
            "<title>abcdefghijklmnop</title>abcdefghi…"
        );
    }
    #[test]
    fn nice_ticks() {
        assert_eq!(
            linear_ticks(0.0, 100.0, 5),
            vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
        );
        assert_eq!(linear_ticks(0.0, 0.7, 4), vec![0.0, 0.2, 0.4, 0.6]);
        assert_eq!(linear_ticks(3.0, 9.0, 3), vec![4.0, 6.0, 8.0]);
        assert_eq!(linear_ticks(5.0, 5.0, 3), vec![5.0]);
        assert_eq!(log_ticks(0.8, 2000.0), vec![1.0, 10.0, 100.0, 1000.0]);
        assert!(log_ticks(0.0, 10.0).is_empty());
    }

    #[test]
    fn scales() {
        let s = Scale::Log {
            min: 1.0,
            max: 1000.0,
        };
        assert!((s.norm(10.0) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.norm(0.0), 0.0);
        assert_eq!(s.norm(1e9), 1.0);
        let l = Scale::Linear { min: 0.0, max: 0.0 };
        assert_eq!(l.norm(3.0), 0.5);
    }

    #[test]
    fn labels_and_numbers() {
        assert_eq!(f1(1.04), "1");
        assert_eq!(f1(1.06), "1.1");
        assert_eq!(f1(-0.0), "0");
        assert_eq!(count_label(10_000.0), "10k");
        assert_eq!(count_label(1e6), "1M");
    }

    #[test]
    fn escapes_labels() {
        let c = Chart {
            kind: "histogram",
            title: "t<\"x\">".into(),
            width: 300,
            height: 200,
            x: Axis {
                scale: Scale::Linear { min: 0.0, max: 1.0 },
                ticks: vec![(0.5, "<b>".into())],
                label: "x & y".into(),
            },
            y: Axis {
                scale: Scale::Linear { min: 0.0, max: 1.0 },
                ticks: vec![],
                label: "y".into(),
            },
            lines: vec![Line {
                label: "</svg><script>".into(),
                color: color(0),
                points: vec![(0.0, 0.0), (1.0, 1.0)],
                dashed: false,
                width: 1.5,
                legend: true,
            }],
            markers: vec![],
            empty_note: None,
            legend_left: false,
            bands: vec![],
        };
        let s = c.render();
        assert!(!s.contains("<script>"));
        assert!(!s.contains("<b>"));
        assert!(s.contains("&lt;/svg&gt;&lt;script&gt;"));
        assert!(s.contains("x &amp; y"));
        assert_eq!(s.matches("<svg").count(), 1);
        assert_eq!(s.matches("</svg>").count(), 1);
    }
}
