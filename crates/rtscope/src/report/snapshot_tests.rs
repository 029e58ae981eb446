//! Snapshot tests (insta) of the text tables, the SVG charts and the report's
//! structure, on fixed, generated inputs. Review changes with `cargo insta
//! review` (or compare the `.snap.new` files by hand).

use std::path::PathBuf;

use rtscope_core::record::SeriesRecorder;
use rtscope_core::result::{EndReason, ResultDocument, Tool, SCHEMA_VERSION};
use rtscope_core::sample::Sample;
use rtscope_core::system::SystemSnapshot;

use super::charts::{self, Plotted};
use super::compare;
use super::html;
use super::svg::color;
use super::Run;

/// A deterministic run: 20 000 samples at 1 ms, latency 10-15 µs (+ `shift_ns`),
/// a 200 µs spike every 4999 samples.
pub fn fixed_doc(host: &str, shift_ns: i64) -> ResultDocument {
    fixed_doc_with_spike(host, shift_ns, 200_000)
}

/// [`fixed_doc`] with spikes of `spike_ns`.
pub fn fixed_doc_with_spike(host: &str, shift_ns: i64, spike_ns: i64) -> ResultDocument {
    let origin = 1_000_000_000u64;
    let mut t0 = SeriesRecorder::new(origin, 5, None);
    let mut all = SeriesRecorder::new(origin, 5, None);
    let mut x: u64 = 12345;
    for i in 0..20_000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut lat = 10_000 + ((x >> 33) % 5000) as i64 + shift_ns;
        if i % 4999 == 4998 {
            lat = spike_ns + shift_ns;
        }
        let s = Sample {
            seq: i,
            t_ns: origin + i * 1_000_000 + lat as u64,
            latency_ns: lat,
            overruns: 0,
            cpu: 3,
        };
        t0.record(&s);
        all.record(&s);
    }
    ResultDocument {
        schema_version: SCHEMA_VERSION,
        tool: Tool {
            name: "rtscope".into(),
            version: "0.0.0-test".into(),
        },
        experiment: "cyclic".into(),
        command_line: vec![
            "rtscope".into(),
            "cyclic".into(),
            "-l".into(),
            "20000".into(),
        ],
        started_at: "2026-01-02T03:04:05Z".into(),
        ended_at: "2026-01-02T03:04:25Z".into(),
        start_clock_ns: origin,
        duration_ns: 20_000_000_000,
        end_reason: EndReason::Loops,
        plan: serde_json::json!({"period_ns": 1_000_000, "mlocked": true, "rt": {"policy": "fifo"}}),
        system: SystemSnapshot {
            hostname: Some(host.into()),
            arch: "aarch64".into(),
            kernel_release: "6.6.0-rt15".into(),
            kernel_version: "#1 SMP PREEMPT_RT".into(),
            preemption_model: "PREEMPT_RT".into(),
            preempt_rt: true,
            cmdline: Some("isolcpus=3 <script>alert(1)</script>".into()),
            isolcpus: Some("3".into()),
            cpu_model: Some("Cortex-A53".into()),
            online_cpus: "0-3".into(),
            cpu_count: 4,
            sched_rt_runtime_us: Some(-1),
            ..Default::default()
        },
        environment: None,
        series: vec![t0.to_series("thread 0", 0), all.to_series("all", 0)],
        loads: vec![rtscope_core::result::LoadReport {
            name: "cpu".into(),
            instances: 4,
            achieved_cpu_percent_mean: 97.0,
            ..Default::default()
        }],
        break_event: None,
        threshold: None,
        gates: None,
        warnings: vec![],
        trace: None,
    }
}

fn run(name: &str, doc: ResultDocument) -> Run {
    Run {
        name: name.into(),
        path: PathBuf::from(format!("{name}.json")),
        doc,
    }
}

fn lines(svg: &str) -> String {
    svg.replace("><", ">\n<")
}

/// The page's elements in order, as `tag.class[data-chart]`, runs of the
/// same element collapsed with a count: its structure without the numbers.
fn structure(page: &str) -> String {
    let mut out: Vec<(String, usize)> = Vec::new();
    let mut rest = page;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        let end = rest.find('>').unwrap_or(rest.len());
        let tag = &rest[..end];
        if tag.starts_with('/') || tag.starts_with('!') {
            continue;
        }
        let name: String = tag
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        let attr = |a: &str| {
            tag.find(&format!(" {a}=\""))
                .map(|p| {
                    let v = &tag[p + a.len() + 3..];
                    v[..v.find('"').unwrap_or(0)].to_string()
                })
                .unwrap_or_default()
        };
        let mut e = name;
        let class = attr("class");
        if !class.is_empty() {
            e.push('.');
            e.push_str(&class.replace(' ', "."));
        }
        let chart = attr("data-chart");
        if !chart.is_empty() {
            e.push_str(&format!("[{chart}]"));
        }
        match out.last_mut() {
            Some((l, n)) if *l == e => *n += 1,
            _ => out.push((e, 1)),
        }
    }
    out.iter()
        .map(|(e, n)| {
            if *n > 1 {
                format!("{e} x{n}")
            } else {
                e.clone()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn compare_text_table() {
    let runs = vec![
        run("board-a", fixed_doc("a", 0)),
        run("board-b", fixed_doc("b", 3000)),
    ];
    let c = compare::build(String::new(), runs, &[]).unwrap();
    insta::assert_snapshot!(compare::text(&c));
}

#[test]
fn compare_text_same_run() {
    let runs = vec![run("x", fixed_doc("a", 0)), run("y", fixed_doc("a", 0))];
    let c = compare::build(String::new(), runs, &["all=thread 0".into()]).unwrap();
    insta::assert_snapshot!(compare::text(&c));
}

/// A run whose load fell short is said in the comparison, by its name.
#[test]
fn compare_text_warns_of_a_load_that_fell_short() {
    let mut short = fixed_doc("b", 3000);
    short.loads[0].spec = "cpu:50".into();
    short.loads[0].fell_short = true;
    let runs = vec![run("board-a", fixed_doc("a", 0)), run("board-b", short)];
    let c = compare::build(String::new(), runs, &[]).unwrap();
    let t = compare::text(&c);
    let w: Vec<&str> = t.lines().filter(|l| l.contains("fell short")).collect();
    assert_eq!(
        w,
        [
            "warning: board-b: load cpu:50 fell short of what it was asked for: \
          a verdict on this run compares against a load that did not happen"
        ],
        "{t}"
    );
}

#[test]
fn summary_table_html() {
    let d = fixed_doc("a", 0);
    insta::assert_snapshot!(html::summary_table(
        &d.series,
        html::doc_unit(std::slice::from_ref(&d))
    ));
}

fn plotted(d: &ResultDocument) -> Vec<Plotted<'_>> {
    d.series
        .iter()
        .enumerate()
        .map(|(i, s)| Plotted {
            label: s.label.clone(),
            color: color(i),
            series: s,
            start_clock_ns: d.start_clock_ns,
        })
        .collect()
}

#[test]
fn histogram_svg() {
    let d = fixed_doc("a", 0);
    let p = plotted(&d);
    insta::assert_snapshot!(lines(
        &charts::histogram("Latency histogram", &p, &p, 600, 300).render()
    ));
}

#[test]
fn long_tail_switches_to_log_axes() {
    let d = fixed_doc_with_spike("a", 0, 3_000_000);
    let p = plotted(&d);
    let h = charts::histogram("Latency histogram", &p, &p, 600, 300);
    assert!(matches!(h.x.scale, super::svg::Scale::Log { .. }));
    insta::assert_snapshot!(lines(&h.render()));
    let q = charts::percentiles("Percentiles", &p, &p, 600, 300);
    assert!(matches!(q.y.scale, super::svg::Scale::Log { .. }));
    let short = fixed_doc("a", 0);
    let p = plotted(&short);
    let h = charts::histogram("Latency histogram", &p, &p, 600, 300);
    assert!(matches!(h.x.scale, super::svg::Scale::Linear { .. }));
}

#[test]
fn percentiles_svg() {
    let d = fixed_doc("a", 0);
    let p = plotted(&d);
    insta::assert_snapshot!(lines(
        &charts::percentiles("Percentiles", &p, &p, 600, 300).render()
    ));
}

#[test]
fn timeline_svg() {
    let d = fixed_doc("a", 0);
    let p = plotted(&d);
    insta::assert_snapshot!(lines(
        &charts::timeline("Latency over time", &p, &p, 600, 300).render()
    ));
}

#[test]
fn report_structure() {
    let page = html::report_page(&[run("board-a", fixed_doc("a", 0))]);
    assert!(!page.contains("<script"));
    assert!(page.contains("isolcpus=3 &lt;script&gt;alert(1)&lt;/script&gt;"));
    insta::assert_snapshot!(structure(&page));
}

#[test]
fn small_multiples_beyond_six_series() {
    let mut d = fixed_doc("a", 0);
    let s = d.series[0].clone();
    d.series = (0..8)
        .map(|i| {
            let mut x = s.clone();
            x.label = format!("thread {i}");
            x
        })
        .collect();
    let page = html::report_page(&[run("many", d)]);
    assert_eq!(page.matches("data-chart=\"histogram\"").count(), 8);
    assert_eq!(page.matches("data-chart=\"percentiles\"").count(), 8);
    assert!(page.contains("one small chart each"));
}

#[test]
fn many_series_chart_the_union_and_the_worst_but_table_every_one() {
    let mut d = fixed_doc("a", 0);
    let (t, all) = (d.series[0].clone(), d.series[1].clone());
    assert_eq!(all.label, "all");
    let mut series: Vec<_> = (0..40u64)
        .map(|i| {
            let mut x = t.clone();
            x.label = format!("thread {i}");
            // Threads 30..39 are the worst by p99; thread 5 has the worst max.
            x.stats.p99_ns = if i >= 30 { 100_000 + i } else { 20_000 };
            if i == 5 {
                x.stats.max_ns = 9_000_000;
            }
            x
        })
        .collect();
    series.push(all);
    d.series = series;
    let page = html::report_page(&[run("many", d)]);
    for kind in ["histogram", "timeline", "percentiles"] {
        assert_eq!(
            page.matches(&format!("data-chart=\"{kind}\"")).count(),
            html::CHART_SERIES_MAX,
            "{kind}"
        );
    }
    assert!(page.contains("Charts show 12 of 41 series"), "no note");
    assert!(page.contains("Every series is in the summary table"));
    for shown in ["all", "thread 5", "thread 30", "thread 39"] {
        assert!(
            page.contains(&format!("aria-label=\"{shown}\"")),
            "{shown} not charted"
        );
    }
    assert!(!page.contains("aria-label=\"thread 0\""));
    let table = page.split("<table class=\"summary\">").nth(1).unwrap();
    let table = table.split("</table>").next().unwrap();
    assert_eq!(table.matches("<tr>").count(), 42, "header + 41 rows");
}

#[test]
fn compare_html_has_one_colour_per_run() {
    let runs = vec![
        run("a", fixed_doc("a", 0)),
        run("b", fixed_doc("b", 3000)),
        run("c", fixed_doc("c", -2000)),
    ];
    let c = compare::build(String::new(), runs, &[]).unwrap();
    let page = compare::html_page(&[c]);
    for col in [color(0), color(1), color(2)] {
        assert!(page.contains(&format!("stroke=\"{col}\"")), "{col}");
    }
    assert!(page.contains("class=\"verdict worse\""));
    assert!(page.contains("class=\"verdict better\""));
    assert!(!page.contains("<script"));
}
