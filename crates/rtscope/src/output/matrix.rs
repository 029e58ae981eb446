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
        if load_short(c) {
            format!("{}, {LOAD_SHORT}", c.status)
        } else {
            c.status.clone()
        },
    ]
}

/// The mark of a cell whose load fell short, after its status.
const LOAD_SHORT: &str = "load short";

/// Whether the cell ran and its load fell short of what it was asked for.
fn load_short(c: &CellEntry) -> bool {
    c.summary.as_ref().is_some_and(|s| s.load_fell_short)
}

/// One line per cell whose load fell short (none when no load did): the
/// cell is not the condition it names.
fn short_notes(cells: &[CellEntry]) -> String {
    cells
        .iter()
        .filter(|c| load_short(c))
        .map(|c| {
            let got = c.summary.as_ref().and_then(|s| s.load_cpu_percent);
            let what = match (c.level, got) {
                (Some(l), Some(p)) => format!("fell short of its level ({p:.1} % CPU of {l} %)"),
                _ => "fell short of what it asked for".into(),
            };
            format!(
                "{LOAD_SHORT}: {}: {} {what}: the cell is not the condition it names \
                 (see the warnings in {})\n",
                c.id,
                c.spec.as_deref().unwrap_or(&c.load),
                c.file
            )
        })
        .collect()
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
    /// Whether the load fell short of what it was asked for (its level, or
    /// a `net` load's rate) in the cell's run, or in one of its runs with
    /// `--repeat` (`fell_short` of a load in the cell's document).
    #[serde(default)]
    pub load_fell_short: bool,
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
        "
matrix summary (all threads, latency in us {}):
{}{}",
        over(cells),
        render(&rows),
        short_notes(cells)
    )
}

/// `summary.md`: a Markdown table.
pub fn markdown(cells: &[CellEntry]) -> String {
    let mut out = format!(
        "# rtscope matrix\n\nLatency in microseconds {}, all measurement threads together. ",
        over(cells)
    );
    out.push_str("`overruns`: wake-ups later than one period. `load_cpu_%`: the CPU share the load's instances achieved (mean). `load short` after the status: the load fell short of what it was asked for.\n\n");
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
    let notes = short_notes(cells);
    if !notes.is_empty() {
        out.push('\n');
        for n in notes.lines() {
            out.push_str(&format!("- {n}\n"));
        }
    }
    out
}

/// `summary.csv`: raw numbers (ns), one row per cell.
pub fn csv(cells: &[CellEntry]) -> String {
    let mut out = String::from(
        "cell,period_ns,load,level,samples,avg_ns,max_ns,stddev_ns,p99_9_ns,overruns,load_cpu_percent,status,load_fell_short\n",
    );
    for c in cells {
        let s = c.summary.clone().unwrap_or_default();
        let has = c.summary.is_some();
        let opt = |v: String| if has { v } else { String::new() };
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
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
            c.status,
            // Empty where no load ran.
            s.load_cpu_percent
                .map_or(String::new(), |_| s.load_fell_short.to_string()),
        ));
    }
    out
}

/// A progress line for a finished cell.
pub fn cell_line(c: &CellEntry, s: &CellSummary, n: usize, of: usize) -> String {
    format!(
        "{} ({n}/{of}): {}, {} samples, avg {} us, max {} us, overruns {}{}{}",
        c.id,
        c.status,
        s.samples,
        us1(s.avg_ns),
        us1(s.max_ns as f64),
        s.overruns,
        s.load_cpu_percent
            .map(|p| format!(", load {p:.1} % CPU"))
            .unwrap_or_default(),
        if s.load_fell_short {
            ", short of what it asked for"
        } else {
            ""
        }
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
            "p1ms-cpu-50,1000000,cpu,50,1000,12345.0,99000,1500.0,50000,2,49.87,done,false"
        );
        assert_eq!(
            csv.lines().nth(2).unwrap(),
            "p1ms-cpu-100,1000000,cpu,50,,,,,,,,pending,"
        );
        let md = markdown(&cells);
        assert!(md.contains("| p1ms-cpu-50 | 1ms | cpu | 50 | 1000 | 12.3 | 99.0 | 1.5 | 50.0 | 2 | 49.9 | done |"), "{md}");
        let t = table(&cells);
        assert!(t.contains("p1ms-cpu-100"), "{t}");
        assert!(
            !t.contains("load short") && !md.contains("- load short"),
            "{t}{md}"
        );
    }

    /// A cell whose load fell short is marked after its status, in a
    /// column of the CSV, in its progress line, and said under the tables.
    #[test]
    fn marks_a_cell_whose_load_fell_short() {
        let s = |share: Option<f64>, short: bool| CellSummary {
            samples: 2000,
            load_cpu_percent: share,
            load_fell_short: short,
            ..Default::default()
        };
        let mut net = cell("p1ms-net-rate1000000", Some(s(Some(22.8), true)));
        net.load = "net".into();
        net.level = None;
        net.spec = Some("net,rate=1000000".into());
        let mut none = cell("p1ms-none", Some(s(None, false)));
        none.load = "none".into();
        none.level = None;
        none.spec = None;
        let cells = [
            none,
            cell("p1ms-cpu-50", Some(s(Some(31.24), true))),
            cell("p1ms-cpu-100", Some(s(Some(97.0), false))),
            net,
        ];
        let t = table(&cells);
        let line = |id: &str| {
            t.lines()
                .find(|l| l.starts_with(&format!("{id} ")))
                .unwrap()
        };
        assert!(
            line("p1ms-cpu-50").ends_with("  31.2  done, load short"),
            "{t}"
        );
        assert!(line("p1ms-cpu-100").ends_with("  97.0  done"), "{t}");
        assert!(line("p1ms-none").ends_with("  done"), "{t}");
        let notes: Vec<&str> = t
            .lines()
            .filter(|l| l.starts_with("load short: "))
            .collect();
        assert_eq!(
            notes,
            [
                "load short: p1ms-cpu-50: cpu:50 fell short of its level (31.2 % CPU of 50 %): \
                 the cell is not the condition it names (see the warnings in p1ms-cpu-50.json)",
                "load short: p1ms-net-rate1000000: net,rate=1000000 fell short of what it asked for: \
                 the cell is not the condition it names (see the warnings in p1ms-net-rate1000000.json)",
            ]
        );
        let md = markdown(&cells);
        assert!(md.contains("| 31.2 | done, load short |\n"), "{md}");
        assert!(
            md.contains("\n\n- load short: p1ms-cpu-50: cpu:50 fell short"),
            "{md}"
        );
        assert!(
            md.contains("\n- load short: p1ms-net-rate1000000: "),
            "{md}"
        );
        let csv = csv(&cells);
        assert!(csv
            .lines()
            .next()
            .unwrap()
            .ends_with(",status,load_fell_short"));
        let rows: Vec<&str> = csv.lines().skip(1).collect();
        assert!(rows[0].ends_with(",,done,"), "{csv}");
        assert!(rows[1].ends_with(",31.24,done,true"), "{csv}");
        assert!(rows[2].ends_with(",97.00,done,false"), "{csv}");
        assert_eq!(
            cell_line(&cells[1], cells[1].summary.as_ref().unwrap(), 2, 4),
            "p1ms-cpu-50 (2/4): done, 2000 samples, avg 0.0 us, max 0.0 us, overruns 0, \
             load 31.2 % CPU, short of what it asked for"
        );
        assert!(!cell_line(&cells[2], cells[2].summary.as_ref().unwrap(), 3, 4).contains("short"));
        // A level without a share (a failed load): said without figures.
        let mut failed = cell("p1ms-cpu-50", Some(s(None, true)));
        failed.status = "error".into();
        assert!(table(&[failed])
            .contains("load short: p1ms-cpu-50: cpu:50 fell short of what it asked for: the cell"));
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
