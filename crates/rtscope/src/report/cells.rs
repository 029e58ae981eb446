//! Small pieces of the pages' tables and lists: latencies in a unit, the
//! mark of a value not measured, whether a quantile rests on enough samples,
//! a warnings list. Shared by the report sections, the answer block and the
//! loads table, below all of them.

use std::fmt::Write;

use rtscope_core::result::Series;

use super::charts::Unit;
use super::esc;

/// A warnings list (nothing when there are none).
pub fn warnings_list(w: &[String]) -> String {
    if w.is_empty() {
        return String::new();
    }
    let mut s = String::from("<ul class=\"warnings\">\n");
    for x in w {
        let _ = writeln!(s, "<li>{}</li>", esc(x));
    }
    s.push_str("</ul>\n");
    s
}

/// A latency in `unit`: ns (one decimal below 100 ns), µs with one decimal,
/// ms/s with three.
pub fn in_unit(ns: f64, unit: Unit) -> String {
    let v = ns / unit.div;
    match unit.name {
        "ns" if v.abs() < 100.0 => format!("{v:.1}"),
        "ns" => format!("{v:.0}"),
        "µs" => format!("{v:.1}"),
        _ => format!("{v:.3}"),
    }
}

/// Whether a series has percentiles (an imported document may have no histogram).
pub fn has_percentiles(s: &Series) -> bool {
    s.stats.has_percentiles() && !s.histogram.buckets.is_empty()
}

/// Shown for a value that was not measured (`null` in the document).
pub const UNKNOWN: &str = "–";

/// Whether fewer than 10 samples lie above quantile `q` of `count` samples:
/// such a quantile is little more than the largest samples (p99.99 of 5,000
/// samples is the maximum).
pub fn thin_tail(count: u64, q: f64) -> bool {
    (count as f64) * (1.0 - q) < 10.0
}
