//! The matrix summary: one row per cell, as an aligned text table, Markdown
//! and CSV. Latencies in microseconds with one decimal.

use rtscope_core::units::format_ns;
use serde::{Deserialize, Serialize};

use super::{summary::render, us1};

const HEADER: [&str; 12] = [
    "cell",
    "period",
    "load",
    "level",
    "samples",
    "avg_us",
    "max_us",
    "stddev_us",
    "p99.9_us",
    "overruns",
    "load_cpu_%",
    "status",
];

fn row(c: &CellEntry) -> Vec<String> {
    let s = c.summary.as_ref();
    let f =
        |g: &dyn Fn(&CellSummary) -> String| s.filter(|s| s.samples > 0).map_or("-".to_string(), g);
    vec![
        c.id.clone(),
        format_ns(c.period_ns),
        c.load.clone(),
        c.level.map_or("-".into(), |l| l.to_string()),
        s.map_or("-".into(), |s| s.samples.to_string()),
        f(&|s| us1(s.avg_ns)),
        f(&|s| us1(s.max_ns as f64)),
        f(&|s| us1(s.stddev_ns)),
        f(&|s| us1(s.p99_9_ns as f64)),
        s.map_or("-".into(), |s| s.overruns.to_string()),
        s.and_then(|s| s.load_cpu_percent)
            .map_or("-".into(), |p| format!("{p:.1}")),
        c.status.clone(),
    ]
}

/// One cell of the matrix.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellEntry {
    /// Stable id, also the result file's name without `.json`.
    pub id: String,
    pub period_ns: u64,
    /// Load name, or `none`.
    pub load: String,
    /// Level in percent, for loads that take one.
    pub level: Option<u8>,
    /// The full load SPEC (absent for `none`).
    pub spec: Option<String>,
    /// Result file, relative to the matrix directory.
    pub file: String,
    /// `pending`, `done`, `interrupted`, `error`, `failed`.
    pub status: String,
    /// Why the cell failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The cell's figures (all threads together), once it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<CellSummary>,
}

/// A cell's figures, from its result document's `all` series and `loads`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CellSummary {
    pub samples: u64,
    pub min_ns: i64,
    pub avg_ns: f64,
    pub max_ns: i64,
    pub stddev_ns: f64,
    pub p99_9_ns: u64,
    /// Wake-ups whose latency exceeded the period (a period was missed).
    pub overruns: u64,
    /// The latencies are over the intended periods, each missed period
    /// counted at its lateness; false: over the wake-ups only (the result
    /// of an older rtscope).
    #[serde(default)]
    pub over_intended_periods: bool,
    /// Mean achieved CPU share of the load's instances, percent (None: no load).
    pub load_cpu_percent: Option<f64>,
    pub end_reason: String,
    pub duration_ns: u64,
}

/// What the cells' latencies are over: the intended periods, the
/// wake-ups, or (a matrix resumed over older results) which cells are over
/// the wake-ups.
fn over(cells: &[CellEntry]) -> String {
    let with: Vec<&CellEntry> = cells.iter().filter(|c| c.summary.is_some()).collect();
    let older: Vec<&str> = with
        .iter()
        .filter(|c| c.summary.as_ref().is_some_and(|s| !s.over_intended_periods))
        .map(|c| c.id.as_str())
        .collect();
    let intended = "over the intended periods, each missed period counted at its lateness";
    if older.is_empty() {
        intended.into()
    } else if older.len() == with.len() {
        "over the wake-ups".into()
    } else {
        format!(
            "{intended}; over the wake-ups in {} (results of an older rtscope)",
            older.join(", ")
        )
    }
}

/// The terminal table.
pub fn table(cells: &[CellEntry]) -> String {
    let mut rows = vec![HEADER.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
    rows.extend(cells.iter().map(row));
    format!(
        "\nmatrix summary (all threads, latency in us {}):\n{}",
        over(cells),
        render(&rows)
    )
}

/// `summary.md`: a Markdown table.
pub fn markdown(cells: &[CellEntry]) -> String {
    let mut out = format!(
        "# rtscope matrix\n\nLatency in microseconds {}, all measurement threads together. ",
        over(cells)
    );
    out.push_str("`overruns`: wake-ups later than one period. `load_cpu_%`: the CPU share the load's instances achieved (mean).\n\n");
    out.push_str(&format!("| {} |\n", HEADER.join(" | ")));
    out.push_str(&format!(
        "|{}|\n",
        HEADER
            .iter()
            .enumerate()
            .map(|(i, _)| if i < 4 { "---" } else { "---:" })
            .collect::<Vec<_>>()
            .join("|")
    ));
    for c in cells {
        out.push_str(&format!("| {} |\n", row(c).join(" | ")));
    }
    out
}

/// `summary.csv`: raw numbers (ns), one row per cell.
pub fn csv(cells: &[CellEntry]) -> String {
    let mut out = String::from(
        "cell,period_ns,load,level,samples,avg_ns,max_ns,stddev_ns,p99_9_ns,overruns,load_cpu_percent,status\n",
    );
    for c in cells {
        let s = c.summary.clone().unwrap_or_default();
        let has = c.summary.is_some();
        let opt = |v: String| if has { v } else { String::new() };
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{}\n",
            c.id,
            c.period_ns,
            c.load,
            c.level.map_or(String::new(), |l| l.to_string()),
            opt(s.samples.to_string()),
            opt(format!("{:.1}", s.avg_ns)),
            opt(s.max_ns.to_string()),
            opt(format!("{:.1}", s.stddev_ns)),
            opt(s.p99_9_ns.to_string()),
            opt(s.overruns.to_string()),
            s.load_cpu_percent
                .map_or(String::new(), |p| format!("{p:.2}")),
            c.status
        ));
    }
    out
}

/// A progress line for a finished cell.
pub fn cell_line(c: &CellEntry, s: &CellSummary, n: usize, of: usize) -> String {
    format!(
        "{} ({n}/{of}): {}, {} samples, avg {} us, max {} us, overruns {}{}",
        c.id,
        c.status,
        s.samples,
        us1(s.avg_ns),
        us1(s.max_ns as f64),
        s.overruns,
        s.load_cpu_percent
            .map(|p| format!(", load {p:.1} % CPU"))
            .unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(id: &str, summary: Option<CellSummary>) -> CellEntry {
        CellEntry {
            id: id.into(),
            period_ns: 1_000_000,
            load: "cpu".into(),
            level: Some(50),
            spec: Some("cpu:50".into()),
            file: format!("{id}.json"),
            status: if summary.is_some() { "done" } else { "pending" }.into(),
            error: None,
            summary,
        }
    }

    #[test]
    fn formats() {
        let s = CellSummary {
            samples: 1000,
            avg_ns: 12_345.0,
            max_ns: 99_000,
            stddev_ns: 1500.0,
            p99_9_ns: 50_000,
            overruns: 2,
            load_cpu_percent: Some(49.87),
            ..Default::default()
        };
        let cells = [cell("p1ms-cpu-50", Some(s)), cell("p1ms-cpu-100", None)];
        let csv = csv(&cells);
        assert_eq!(
            csv.lines().nth(1).unwrap(),
            "p1ms-cpu-50,1000000,cpu,50,1000,12345.0,99000,1500.0,50000,2,49.87,done"
        );
        assert_eq!(
            csv.lines().nth(2).unwrap(),
            "p1ms-cpu-100,1000000,cpu,50,,,,,,,,pending"
        );
        let md = markdown(&cells);
        assert!(md.contains("| p1ms-cpu-50 | 1ms | cpu | 50 | 1000 | 12.3 | 99.0 | 1.5 | 50.0 | 2 | 49.9 | done |"), "{md}");
        let t = table(&cells);
        assert!(t.contains("p1ms-cpu-100"), "{t}");
    }

    /// The tables say what the latencies are over, naming the cells of
    /// older results in a resumed matrix.
    #[test]
    fn the_tables_say_what_the_latencies_are_over() {
        let s = |over: bool| {
            Some(CellSummary {
                samples: 10,
                over_intended_periods: over,
                ..Default::default()
            })
        };
        let new = [cell("a", s(true)), cell("b", s(true)), cell("c", None)];
        let t = table(&new);
        assert!(t.starts_with("\nmatrix summary (all threads, latency in us over the intended periods, each missed period counted at its lateness):\n"), "{t}");
        assert!(markdown(&new).contains("Latency in microseconds over the intended periods, each missed period counted at its lateness, all"));
        let old = [cell("a", s(false)), cell("b", s(false)), cell("c", None)];
        assert!(table(&old)
            .starts_with("\nmatrix summary (all threads, latency in us over the wake-ups):\n"));
        let mixed = [cell("a", s(false)), cell("b", s(true)), cell("c", s(false))];
        assert!(table(&mixed)
            .contains("lateness; over the wake-ups in a, c (results of an older rtscope)):\n"));
    }
}
