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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_listed_escaped() {
        assert_eq!(warnings_list(&[]), "");
        assert_eq!(
            warnings_list(&["a & b".into(), "<c>".into()]),
            "<ul class=\"warnings\">\n<li>a &amp; b</li>\n<li>&lt;c&gt;</li>\n</ul>\n"
        );
    }

    #[test]
    fn values_in_their_unit() {
        let unit = |div, name| Unit { div, name };
        // ns: one decimal below 100 (either sign), none from 100.
        assert_eq!(in_unit(99.9, unit(1.0, "ns")), "99.9");
        assert_eq!(in_unit(-99.9, unit(1.0, "ns")), "-99.9");
        assert_eq!(in_unit(100.0, unit(1.0, "ns")), "100");
        assert_eq!(in_unit(-250.0, unit(1.0, "ns")), "-250");
        assert_eq!(in_unit(12_345.0, unit(1e3, "µs")), "12.3");
        assert_eq!(in_unit(12_345_678.0, unit(1e6, "ms")), "12.346");
        assert_eq!(in_unit(2.5e9, unit(1e9, "s")), "2.500");
    }

    #[test]
    fn percentiles_need_a_histogram() {
        let mut s = Series::default();
        s.stats.count = 10;
        assert!(!has_percentiles(&s), "no histogram");
        s.histogram.buckets = vec![[1_000, 10]];
        assert!(has_percentiles(&s));
        s.stats.unknown.percentiles = true;
        assert!(!has_percentiles(&s), "not measured");
        s.stats.unknown.percentiles = false;
        s.stats.count = 0;
        assert!(!has_percentiles(&s), "no samples");
    }

    #[test]
    fn a_thin_tail_has_under_10_samples_above() {
        // Exactly 10 above the median of 20: not thin; 9.5 of 19: thin.
        assert!(!thin_tail(20, 0.5));
        assert!(thin_tail(19, 0.5));
        // p99.99 of 5,000 samples: 0.5 above it.
        assert!(thin_tail(5_000, 0.9999));
        assert!(!thin_tail(100_000, 0.99));
        assert!(thin_tail(0, 0.5));
    }
}
