//! The text of a `period` result (also of documents written by
//! `PeriodProbe`): one row per source and period.

use rtscope_core::clock::probe::PeriodSummary;
use rtscope_core::result::ResultDocument;
use rtscope_core::units::format_ns;

use super::summary::render;

/// The per-source, per-period table of a period document (also for documents
/// written by `PeriodProbe`).
pub fn report(doc: &ResultDocument, already_shown: &[String]) -> String {
    let mut rows = vec![vec![
        "source".to_string(),
        "period".into(),
        "periods".into(),
        "mean".into(),
        "error".into(),
        "jitter min".into(),
        "jitter max".into(),
        "stddev".into(),
        "|jitter| p99".into(),
    ]];
    for s in &doc.series {
        let sum: PeriodSummary = s
            .attributes
            .get("period")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        rows.push(vec![
            s.attributes
                .get("source")
                .and_then(|v| v.as_str())
                .unwrap_or(&s.label)
                .to_string(),
            format_ns(sum.requested_ns),
            sum.periods.to_string(),
            format!("{:.1}", sum.mean_period_ns),
            format!("{:+.1}", sum.error_ns),
            format!("{:+.1}", sum.jitter_min_ns),
            format!("{:+.1}", sum.jitter_max_ns),
            format!("{:.1}", sum.jitter_stddev_ns),
            sum.abs_jitter_p99_ns.to_string(),
        ]);
    }
    let mut out = String::from("\nobserved loop period, ns (error = mean - requested):\n");
    out.push_str(&render(&rows));
    for w in doc.warnings.iter().filter(|w| !already_shown.contains(w)) {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}
