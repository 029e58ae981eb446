//! Version 2 documents read typed ([`ResultDocument::read`]): the rule of
//! [`upgrade_v2`] applied to the series instead of a tree of JSON values.

#[cfg(doc)]
use super::{upgrade_v2, ResultDocument};
use super::{Series, Stats, Unknown};

/// [`upgrade_v2`] on a series read typed: what can only have been unknown
/// is marked so (the values are then what the JSON path's `null`s read as).
pub(super) fn upgrade_v2_series(s: &mut Series) {
    let st = &mut s.stats;
    if st.count == 0 {
        *st = Stats {
            count: 0,
            unknown: Unknown {
                percentiles: true,
                stddev: true,
                mean: true,
            },
            ..Stats::default()
        };
    } else if s.attributes.get("source").is_some_and(|v| v.is_string())
        && st.max_ns > 0
        && !st.unknown.percentiles
        && [
            st.p50_ns,
            st.p90_ns,
            st.p99_ns,
            st.p99_9_ns,
            st.p99_99_ns,
            st.p99_999_ns,
        ]
        .iter()
        .all(|p| *p == 0)
    {
        st.unknown.percentiles = true;
        st.unknown.stddev = true;
        st.stddev_ns = 0.0;
    }
    s.repetitions.iter_mut().for_each(upgrade_v2_series);
}
