//! The text of a `timer` result, from the document alone: the study's Table 1
//! shape (request, error per compensation as p50/p99/max, with a verdict line
//! per API), its Table 2 shape for beacon runs, and the stage table of the
//! timer-service designs. The typed attributes the series carry are defined
//! here, where they are read.

use serde::{Deserialize, Serialize};

use rtscope_core::result::ResultDocument;
use rtscope_core::units::format_ns;

use super::summary::render;
use super::us1;

/// What a sweep cell's series carries under `attributes.timer`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimerCell {
    pub api: String,
    pub compensation: String,
    pub policy: String,
    pub requested_ns: u64,
    pub wakes: u64,
    /// Exact error percentiles (signed: static compensation can wake early), ns.
    pub error_min_ns: i64,
    pub error_p50_ns: i64,
    pub error_p99_ns: i64,
    pub error_max_ns: i64,
    pub error_mean_ns: f64,
    pub abs_error_mean_ns: f64,
    /// Median |error|, ns (absent in documents of older versions): a single
    /// stall moves the mean, not this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abs_error_p50_ns: Option<u64>,
    /// Wakes before the deadline.
    pub early: u64,
    /// The wait API's own lateness (woke − what it was asked for), median and p99, ns.
    pub lateness_p50_ns: i64,
    pub lateness_p99_ns: i64,
    /// The margin the strategy subtracted, mean over the cell, ns.
    pub margin_mean_ns: f64,
    /// Time spent spinning after the wait: total, and as a share of the time asleep.
    pub spin_total_ns: u64,
    pub spin_share: f64,
}

/// What a beacon series carries under `attributes.beacon`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BeaconCell {
    pub order: u32,
    pub interval_ns: u64,
    /// relative, absolute, or the compensation of an absolute grid (static, adaptive, hybrid).
    pub mode: String,
    pub cycles: u64,
    /// Mean and largest |observed interval − theoretical interval|, ns.
    pub mean_deviation_ns: f64,
    pub max_deviation_ns: i64,
    /// Last beacon − (start + cycles × interval), ns.
    pub drift_ns: i64,
    pub spin_total_ns: u64,
}

/// What a service series carries under `attributes.service`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServiceCell {
    pub design: String,
    pub compensation: String,
    pub timers: usize,
    pub tick_ns: u64,
    pub expiries: u64,
    /// Median and p99 per stage, ns: set-up (request → armed), event
    /// handling (hardware expiry → callback), return (callback → the
    /// application resumes), and the error (application resumes − deadline).
    pub setup_p50_ns: u64,
    pub setup_p99_ns: u64,
    pub handling_p50_ns: u64,
    pub handling_p99_ns: u64,
    pub return_p50_ns: u64,
    pub return_p99_ns: u64,
    pub error_p50_ns: i64,
    pub error_p99_ns: i64,
    pub error_max_ns: i64,
    pub abs_error_mean_ns: f64,
    /// Hardware timer expiries (ticks for polling, arms for hopping).
    pub hardware_expiries: u64,
}

fn cells<T: for<'de> Deserialize<'de>>(doc: &ResultDocument, key: &str) -> Vec<T> {
    doc.series
        .iter()
        .filter_map(|s| s.attributes.get(key))
        .filter_map(|v| serde_json::from_value(v.clone()).ok())
        .collect()
}

fn sus(ns: i64) -> String {
    us1(ns as f64)
}

/// The whole summary of a timer document.
pub fn report(doc: &ResultDocument, already_shown: &[String]) -> String {
    let mut out = String::new();
    let sweep: Vec<TimerCell> = cells(doc, "timer");
    if !sweep.is_empty() {
        out.push_str(&sweep_table(&sweep));
    }
    let beacon: Vec<BeaconCell> = cells(doc, "beacon");
    if !beacon.is_empty() {
        out.push_str(&beacon_table(&beacon));
    }
    let service: Vec<ServiceCell> = cells(doc, "service");
    if !service.is_empty() {
        out.push_str(&service_table(&service));
    }
    if sweep.is_empty() && beacon.is_empty() && service.is_empty() {
        out.push_str("\nno timer measurements (the run was stopped before the first cell)\n");
    }
    for w in doc.warnings.iter().filter(|w| !already_shown.contains(w)) {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

/// Keeps first-seen order.
fn uniq<'a>(it: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut v: Vec<&str> = Vec::new();
    for x in it {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

/// Table 1: one row per API × policy × request; per compensation the error
/// p50/p99/max (µs), and the spin share for the spinning ones.
pub fn sweep_table(cells: &[TimerCell]) -> String {
    let comps = uniq(cells.iter().map(|c| c.compensation.as_str()));
    let mut head = vec!["api".to_string(), "policy".into(), "request".into()];
    for c in &comps {
        head.push(format!("{c} p50/p99/max"));
        if *c == "adaptive" || *c == "hybrid" {
            head.push(format!("{c} spin"));
        }
    }
    let mut rows = vec![head];
    let keys = uniq(cells.iter().map(|c| c.api.as_str()));
    let pols = uniq(cells.iter().map(|c| c.policy.as_str()));
    for api in &keys {
        for pol in &pols {
            let mine: Vec<&TimerCell> = cells
                .iter()
                .filter(|c| c.api == *api && c.policy == *pol)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let mut reqs: Vec<u64> = mine.iter().map(|c| c.requested_ns).collect();
            reqs.sort_unstable();
            reqs.dedup();
            for r in &reqs {
                let mut row = vec![api.to_string(), pol.to_string(), format_ns(*r)];
                for comp in &comps {
                    match mine
                        .iter()
                        .find(|c| c.requested_ns == *r && c.compensation == *comp)
                    {
                        Some(c) => {
                            row.push(format!(
                                "{}/{}/{}",
                                sus(c.error_p50_ns),
                                sus(c.error_p99_ns),
                                sus(c.error_max_ns)
                            ));
                            if *comp == "adaptive" || *comp == "hybrid" {
                                row.push(format!("{:.1}%", c.spin_share * 100.0));
                            }
                        }
                        None => {
                            row.push("-".into());
                            if *comp == "adaptive" || *comp == "hybrid" {
                                row.push("-".into());
                            }
                        }
                    }
                }
                rows.push(row);
            }
        }
    }
    let verdicts = sweep_conclusions(cells);
    let mut out =
        String::from("\ntimer error = actual - requested wake, µs (p50/p99/max; spin: CPU spent spinning / time asleep):\n");
    out.push_str(&render(&rows));
    out.push('\n');
    out.push_str(&verdicts);
    out
}

/// The sweep's conclusions, one line each (what the terminal prints under
/// its table, and what the HTML report opens its timer section with): per
/// API × policy, how flat the uncompensated error is and what each
/// compensation made of the mean |error| and the p99.
pub fn sweep_conclusions(cells: &[TimerCell]) -> String {
    let comps = uniq(cells.iter().map(|c| c.compensation.as_str()));
    let mut out = String::new();
    for api in uniq(cells.iter().map(|c| c.api.as_str())) {
        for pol in uniq(cells.iter().map(|c| c.policy.as_str())) {
            let mine: Vec<&TimerCell> = cells
                .iter()
                .filter(|c| c.api == api && c.policy == pol)
                .collect();
            if !mine.is_empty() {
                out.push_str(&verdict(api, pol, &mine, &comps));
            }
        }
    }
    out
}

/// The sweep cells of a timer document (empty for beacon and service runs).
pub fn sweep_cells(doc: &ResultDocument) -> Vec<TimerCell> {
    cells(doc, "timer")
}

/// What the verdict lines say of one compensation's cells.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Pooled {
    /// Mean |error| over every wake of the cells, ns.
    mean_abs: f64,
    /// The cells' median |error|, averaged (absent when a cell lacks it).
    median_abs: Option<f64>,
    /// The cells' p99 error, averaged.
    p99: f64,
    /// How far the cells' mean errors lie apart.
    spread: f64,
}

fn pooled(cells: &[&TimerCell], comp: &str) -> Option<Pooled> {
    let c: Vec<&&TimerCell> = cells.iter().filter(|c| c.compensation == comp).collect();
    let n: u64 = c.iter().map(|c| c.wakes).sum();
    if n == 0 {
        return None;
    }
    let mean_abs = c
        .iter()
        .map(|c| c.abs_error_mean_ns * c.wakes as f64)
        .sum::<f64>()
        / n as f64;
    // The p99 and median of the cells, averaged (each cell has its own
    // distribution).
    let avg = |v: &dyn Fn(&TimerCell) -> f64| c.iter().map(|c| v(c)).sum::<f64>() / c.len() as f64;
    let p99 = avg(&|c| c.error_p99_ns as f64);
    let median_abs = c
        .iter()
        .all(|c| c.abs_error_p50_ns.is_some())
        .then(|| avg(&|c| c.abs_error_p50_ns.unwrap_or(0) as f64));
    let means: Vec<f64> = c.iter().map(|c| c.error_mean_ns).collect();
    let spread = means.iter().cloned().fold(f64::MIN, f64::max)
        - means.iter().cloned().fold(f64::MAX, f64::min);
    Some(Pooled {
        mean_abs,
        median_abs,
        p99,
        spread,
    })
}

/// One line per API × policy: how flat the uncompensated error is across the
/// requests, and what each compensation did to the mean |error| and the p99.
fn verdict(api: &str, pol: &str, mine: &[&TimerCell], comps: &[&str]) -> String {
    let mut out = String::new();
    let base = pooled(mine, "none");
    if let Some(b) = base {
        let reqs = mine.iter().filter(|c| c.compensation == "none").count();
        let median = b
            .median_abs
            .map(|m| format!(", median |error| {} µs", us1(m)))
            .unwrap_or_default();
        out.push_str(&format!(
            "{api} {pol}: uncompensated mean |error| {} µs{median}, p99 {} µs",
            us1(b.mean_abs),
            us1(b.p99)
        ));
        if reqs > 1 {
            out.push_str(&format!(
                "; the mean varies by {} µs across {reqs} requests",
                us1(b.spread)
            ));
        }
        out.push('\n');
    }
    for comp in comps.iter().filter(|c| **c != "none") {
        let Some(p) = pooled(mine, comp) else {
            continue;
        };
        let (m, p99) = (p.mean_abs, p.p99);
        let spin = {
            let c: Vec<&&TimerCell> = mine.iter().filter(|c| c.compensation == *comp).collect();
            let early: u64 = c.iter().map(|c| c.early).sum();
            let n: u64 = c.iter().map(|c| c.wakes).sum();
            let share = c.iter().map(|c| c.spin_share).sum::<f64>() / c.len().max(1) as f64;
            if comp == &"static" {
                format!(
                    "; {:.1}% of wakes early, median error {} µs",
                    early as f64 * 100.0 / n.max(1) as f64,
                    us1(static_median(&c))
                )
            } else {
                format!("; spin {:.1}% of the time asleep", share * 100.0)
            }
        };
        match base {
            Some(b) => {
                let median = match (b.median_abs, p.median_abs) {
                    (Some(bm), Some(pm)) => format!(
                        "; median |error| {} µs → {} µs, {}",
                        us1(bm),
                        us1(pm),
                        ratio(bm, pm)
                    ),
                    _ => String::new(),
                };
                out.push_str(&format!(
                    "{api} {pol}: {comp} compensation: mean |error| {} µs → {} µs, {}{median}; p99 {} µs → {} µs{spin}\n",
                    us1(b.mean_abs),
                    us1(m),
                    ratio(b.mean_abs, m),
                    us1(b.p99),
                    us1(p99)
                ))
            }
            None => out.push_str(&format!(
                "{api} {pol}: {comp} compensation: mean |error| {} µs{}, p99 {} µs{spin}\n",
                us1(m),
                p.median_abs
                    .map(|pm| format!(", median |error| {} µs", us1(pm)))
                    .unwrap_or_default(),
                us1(p99)
            )),
        }
        // A static offset leaves a median error of 0 while the lateness stays
        // as calibrated; what is left is how far it moved since.
        if let (true, Some(Pooled { mean_abs: bm, .. })) = (*comp == "static", base) {
            let c: Vec<&&TimerCell> = mine.iter().filter(|c| c.compensation == "static").collect();
            let med = static_median(&c);
            if med.abs() * 10.0 > bm {
                out.push_str(&format!(
                    "{api} {pol}: the lateness moved by {} µs between the calibration and the static cells, over a tenth of the error itself: a constant offset cannot follow that (adaptive and hybrid do)\n",
                    us1(med.abs())
                ));
            }
        }
    }
    out
}

/// The static cells' median error, averaged over the requests, ns.
fn static_median(cells: &[&&TimerCell]) -> f64 {
    cells.iter().map(|c| c.error_p50_ns as f64).sum::<f64>() / cells.len().max(1) as f64
}

/// How an |error| changed: `5.6× better`, `27× worse` (the larger over the
/// smaller, so a worsening does not read as `0.0×`), `no change`.
fn ratio(before: f64, after: f64) -> String {
    if before == after {
        return "no change".into();
    }
    let (r, word) = if after < before {
        (before / after, "better")
    } else {
        (after / before, "worse")
    };
    if !r.is_finite() {
        format!("∞× {word}")
    } else if r >= 10.0 {
        format!("{r:.0}× {word}")
    } else {
        format!("{r:.1}× {word}")
    }
}

/// Table 2: per order and mode, the theoretical interval, the mean and
/// largest deviation of an interval, and the drift after the cycles.
pub fn beacon_table(cells: &[BeaconCell]) -> String {
    let mut rows = vec![vec![
        "BO".to_string(),
        "interval".into(),
        "mode".into(),
        "cycles".into(),
        "mean |dev| µs".into(),
        "max |dev| µs".into(),
        "drift µs".into(),
        "spin ms".into(),
    ]];
    let mut sorted: Vec<&BeaconCell> = cells.iter().collect();
    sorted.sort_by_key(|c| c.order);
    for c in &sorted {
        rows.push(vec![
            c.order.to_string(),
            format_ns(c.interval_ns),
            c.mode.clone(),
            c.cycles.to_string(),
            us1(c.mean_deviation_ns),
            sus(c.max_deviation_ns),
            format!("{:+.1}", c.drift_ns as f64 / 1000.0),
            format!("{:.2}", c.spin_total_ns as f64 / 1e6),
        ]);
    }
    let mut out = String::from(
        "\nbeacon chain, interval = 15.36 ms × 2^BO (deviation = observed interval - theoretical; drift = last beacon - start - cycles × interval):\n",
    );
    out.push_str(&render(&rows));
    // The shape in one line per mode: drift at the smallest and largest order.
    let modes = uniq(cells.iter().map(|c| c.mode.as_str()));
    for m in modes {
        let mine: Vec<&&BeaconCell> = sorted.iter().filter(|c| c.mode == m).collect();
        if let (Some(a), Some(b)) = (mine.first(), mine.last()) {
            let worst = mine.iter().map(|c| c.drift_ns.abs()).max().unwrap_or(0);
            out.push_str(&format!(
                "{m}: drift {:+.1} µs at BO {} … {:+.1} µs at BO {} (largest |drift| {} µs)\n",
                a.drift_ns as f64 / 1000.0,
                a.order,
                b.drift_ns as f64 / 1000.0,
                b.order,
                sus(worst)
            ));
        }
    }
    out
}

/// The stages of the timer-service designs (the study's set-up, event
/// handling and return to the application).
pub fn service_table(cells: &[ServiceCell]) -> String {
    let mut rows = vec![vec![
        "design".to_string(),
        "compensation".into(),
        "timers".into(),
        "expiries".into(),
        "hw expiries".into(),
        "set-up p50/p99".into(),
        "handling p50/p99".into(),
        "return p50/p99".into(),
        "error p50/p99/max".into(),
        "mean |error|".into(),
    ]];
    for c in cells {
        rows.push(vec![
            if c.design == "polling" {
                format!("polling ({})", format_ns(c.tick_ns))
            } else {
                c.design.clone()
            },
            c.compensation.clone(),
            c.timers.to_string(),
            c.expiries.to_string(),
            c.hardware_expiries.to_string(),
            format!(
                "{}/{}",
                us1(c.setup_p50_ns as f64),
                us1(c.setup_p99_ns as f64)
            ),
            format!(
                "{}/{}",
                us1(c.handling_p50_ns as f64),
                us1(c.handling_p99_ns as f64)
            ),
            format!(
                "{}/{}",
                us1(c.return_p50_ns as f64),
                us1(c.return_p99_ns as f64)
            ),
            format!(
                "{}/{}/{}",
                sus(c.error_p50_ns),
                sus(c.error_p99_ns),
                sus(c.error_max_ns)
            ),
            us1(c.abs_error_mean_ns),
        ]);
    }
    let mut out =
        String::from("\ntimer service stages, µs (error = application resumes - deadline):\n");
    out.push_str(&render(&rows));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(comp: &str, req: u64, mean_abs: f64, p99: i64) -> TimerCell {
        TimerCell {
            api: "clock_nanosleep".into(),
            compensation: comp.into(),
            policy: "fifo".into(),
            requested_ns: req,
            wakes: 100,
            error_p50_ns: p99 / 2,
            error_p99_ns: p99,
            error_max_ns: p99 * 2,
            error_mean_ns: mean_abs,
            abs_error_mean_ns: mean_abs,
            ..Default::default()
        }
    }

    #[test]
    fn verdict_names_the_ratio_and_the_p99() {
        let cells = vec![
            cell("none", 500_000, 50_000.0, 80_000),
            cell("none", 1_000_000, 52_000.0, 82_000),
            cell("static", 500_000, 2_500.0, 30_000),
            cell("static", 1_000_000, 2_600.0, 31_000),
        ];
        let t = sweep_table(&cells);
        assert!(
            t.contains("static compensation: mean |error| 51.0 µs → 2.5 µs, 20× better; p99"),
            "{t}"
        );
        assert!(t.contains("p99 81.0 µs → 30.5 µs"), "{t}");
        assert!(
            t.contains("the mean varies by 2.0 µs across 2 requests"),
            "{t}"
        );
        assert!(t.contains("40.0/80.0/160.0"), "{t}");
        // The static cells' median error (15 and 15.5 µs) is over a tenth
        // of the uncompensated 51 µs: named as drift since the calibration.
        assert!(t.contains("wakes early, median error 15."), "{t}");
        assert!(
            t.contains("fifo: the lateness moved by 15.")
                && t.contains("a constant offset cannot follow that"),
            "{t}"
        );
        // A static cell centred on its calibration: no such line.
        let mut centred = cells.clone();
        for c in centred.iter_mut().filter(|c| c.compensation == "static") {
            c.error_p50_ns = 4_000;
        }
        let t = sweep_table(&centred);
        assert!(t.contains("median error 4.0 µs"), "{t}");
        assert!(!t.contains("the lateness moved"), "{t}");
        // Exactly a tenth (5.1 µs of 51 µs) is not over it.
        for c in centred.iter_mut().filter(|c| c.compensation == "static") {
            c.error_p50_ns = -5_100;
        }
        assert!(!sweep_table(&centred).contains("the lateness moved"));
        for c in centred.iter_mut().filter(|c| c.compensation == "static") {
            c.error_p50_ns = -5_200;
        }
        assert!(sweep_table(&centred).contains("the lateness moved by 5.2 µs"));
    }

    #[test]
    fn verdict_with_one_uncompensated_request_and_the_mean_spin() {
        let mut a1 = cell("adaptive", 500_000, 1_000.0, 5_000);
        a1.spin_share = 0.02;
        let mut a2 = cell("adaptive", 1_000_000, 1_000.0, 5_000);
        a2.spin_share = 0.04;
        // `none` at one request only: no "varies by" over one request.
        let t = sweep_table(&[cell("none", 500_000, 50_000.0, 80_000), a1, a2]);
        assert!(
            t.contains("fifo: uncompensated mean |error| 50.0 µs, p99 80.0 µs\n"),
            "{t}"
        );
        assert!(!t.contains("varies by"), "{t}");
        // The spin share is the mean of the cells'.
        assert!(t.contains("; spin 3.0% of the time asleep"), "{t}");
    }

    #[test]
    fn ratios_say_better_or_worse() {
        assert_eq!(ratio(51.0, 2.5), "20× better");
        assert_eq!(ratio(10.0, 2.0), "5.0× better");
        assert_eq!(ratio(20.0, 2.0), "10× better");
        assert_eq!(ratio(19.9, 2.0), "9.9× better");
        // The "0.0×": 27 times the error is 27× worse.
        assert_eq!(ratio(2.0, 54.0), "27× worse");
        assert_eq!(ratio(2.0, 3.0), "1.5× worse");
        assert_eq!(ratio(5.0, 0.0), "∞× better");
        assert_eq!(ratio(0.0, 5.0), "∞× worse");
        assert_eq!(ratio(4.0, 4.0), "no change");
        assert_eq!(ratio(0.0, 0.0), "no change");
    }

    /// The median |error| stands beside the mean, per line and pooled over
    /// the requests (averaged); a single stall in one cell moves the mean
    /// but not the median; a cell without it (an older document) leaves it out.
    #[test]
    fn verdict_lines_give_the_median_beside_the_mean() {
        let with = |comp: &str, req, mean: f64, median: u64| {
            let mut c = cell(comp, req, mean, 40_000);
            c.abs_error_p50_ns = Some(median);
            c
        };
        // A 0.3 s stall in one uncompensated cell: a mean of 3 ms.
        let cells = vec![
            with("none", 500_000, 3_000_000.0, 20_000),
            with("none", 1_000_000, 20_000.0, 22_000),
            with("adaptive", 500_000, 40_000.0, 1_000),
            with("adaptive", 1_000_000, 41_000.0, 1_000),
        ];
        let t = sweep_table(&cells);
        assert!(
            t.contains("fifo: uncompensated mean |error| 1510.0 µs, median |error| 21.0 µs, p99 40.0 µs; the mean varies by"),
            "{t}"
        );
        assert!(
            t.contains("adaptive compensation: mean |error| 1510.0 µs → 40.5 µs, 37× better; median |error| 21.0 µs → 1.0 µs, 21× better; p99 40.0 µs → 40.0 µs;"),
            "{t}"
        );
        // Worse: said as such, on the mean and the median.
        let cells = vec![
            with("none", 500_000, 2_000.0, 2_000),
            with("static", 500_000, 54_000.0, 3_000),
        ];
        let t = sweep_table(&cells);
        assert!(t.contains("mean |error| 2.0 µs → 54.0 µs, 27× worse; median |error| 2.0 µs → 3.0 µs, 1.5× worse;"), "{t}");
        // Without an uncompensated cell, the median beside the mean.
        let t = sweep_table(&[with("adaptive", 500_000, 40_000.0, 1_000)]);
        assert!(
            t.contains(
                "adaptive compensation: mean |error| 40.0 µs, median |error| 1.0 µs, p99 40.0 µs"
            ),
            "{t}"
        );
        // A cell without it: no median at all for that compensation.
        let mut cells = cells;
        cells[1].abs_error_p50_ns = None;
        let t = sweep_table(&cells);
        assert!(
            t.contains("fifo: uncompensated mean |error| 2.0 µs, median |error| 2.0 µs, p99"),
            "{t}"
        );
        assert!(
            t.contains("mean |error| 2.0 µs → 54.0 µs, 27× worse; p99"),
            "{t}"
        );
    }

    #[test]
    fn beacon_table_summarises_each_mode() {
        let b = |order, mode: &str, drift| BeaconCell {
            order,
            interval_ns: 15_360_000 << order,
            mode: mode.into(),
            cycles: 10,
            drift_ns: drift,
            ..Default::default()
        };
        let t = beacon_table(&[
            b(0, "relative", 700_000),
            b(3, "relative", 900_000),
            b(0, "absolute", 60_000),
        ]);
        assert!(
            t.contains("relative: drift +700.0 µs at BO 0 … +900.0 µs at BO 3"),
            "{t}"
        );
        assert!(t.contains("122.88ms"), "{t}");
    }
}
