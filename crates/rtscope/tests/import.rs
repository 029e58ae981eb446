//! Integration tests of `rtscope import cyclictest`: real cyclictest
//! (rt-tests 2.40) outputs from `tests/fixtures/` (their commands are in
//! `tests/fixtures/README.md`), read back as rtscope's result documents.

mod common;

use std::path::Path;

use common::{fixture, import, one_line_usage_error, run, run_ok, s};
use rtscope_core::result::ResultDocument;
use serde_json::Value;

#[test]
fn import_cyclictest_json_with_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let d = import(
        "--json",
        &fixture("cyclictest-h150.json"),
        &dir.path().join("a.json"),
    );
    assert_eq!(d.experiment, "cyclic");
    assert_eq!(
        serde_json::to_value(d.end_reason).unwrap(),
        Value::from("imported")
    );
    assert_eq!(d.started_at, "2026-11-23T10:21:16Z");
    assert_eq!(d.system.hostname.as_deref(), Some("vm"));
    assert_eq!(d.system.kernel_release, "6.18.44-fc-v445");
    assert_eq!(d.system.preemption_model, "PREEMPT_DYNAMIC");
    assert!(d.command_line.iter().any(|a| a == "-h"));
    let labels: Vec<&str> = d.series.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["thread 0", "thread 1", "all"]);
    // The fixture's histogram text (same run) says 6 and 1 overflows, max 3768 and 397 us.
    let t0 = &d.series[0];
    assert_eq!(t0.stats.count, 2000);
    assert_eq!(t0.attributes["histogram_overflows"], Value::from(6));
    assert_eq!(t0.attributes["resolution_ns"], Value::from(1000));
    assert_eq!(t0.stats.max_ns, 3_768_500);
    assert_eq!(t0.stats.min_ns, 10_500);
    assert_eq!(
        d.series[1].attributes["histogram_overflows"],
        Value::from(1)
    );
    for s in &d.series {
        let sum: u64 = s.histogram.buckets.iter().map(|b| b[1]).sum();
        assert_eq!(sum, s.stats.count, "{}", s.label);
        assert!(s.stats.p50_ns >= s.stats.min_ns as u64);
        assert!(s.stats.p99_ns <= s.stats.max_ns as u64);
    }
    assert_eq!(d.series[2].stats.count, 4000);
    assert!(d.warnings.iter().any(|w| w.contains("1 us resolution")));
    assert!(d
        .warnings
        .iter()
        .any(|w| w.contains("7 samples were beyond")));
}

#[test]
fn histogram_text_import_matches_json_import_of_the_same_run() {
    let dir = tempfile::tempdir().unwrap();
    let j = import(
        "--json",
        &fixture("cyclictest-h150.json"),
        &dir.path().join("j.json"),
    );
    let h = import(
        "--histogram",
        &fixture("cyclictest-h150.txt"),
        &dir.path().join("h.json"),
    );
    // Without the Total line and without all-zero rows (older cyclictest, or
    // a file cleaned up for plotting): the same result.
    let text = std::fs::read_to_string(fixture("cyclictest-h150.txt")).unwrap();
    let stripped: String = text
        .lines()
        .filter(|l| !l.starts_with("# Total"))
        .filter(|l| {
            let mut it = l.split_whitespace();
            let first_is_bin = it.next().is_some_and(|b| b.parse::<u64>().is_ok());
            !(first_is_bin && it.all(|c| c.parse::<u64>() == Ok(0)))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        stripped.lines().count() + 50 < text.lines().count(),
        "zero rows were not removed"
    );
    let sp = dir.path().join("stripped.txt");
    std::fs::write(&sp, stripped).unwrap();
    let st = import("--histogram", &sp, &dir.path().join("s.json"));
    for other in [&h, &st] {
        for (a, b) in j.series.iter().zip(&other.series) {
            assert_eq!(a.label, b.label);
            assert_eq!(a.histogram, b.histogram, "{}", a.label);
            assert_eq!(a.stats.count, b.stats.count);
            assert_eq!(a.stats.min_ns, b.stats.min_ns);
            assert_eq!(a.stats.max_ns, b.stats.max_ns);
            assert_eq!(a.stats.p99_ns, b.stats.p99_ns);
            assert_eq!(
                a.attributes["histogram_overflows"],
                b.attributes["histogram_overflows"]
            );
        }
    }
    assert_eq!(h.plan["imported"]["total_line"], Value::from(true));
    assert_eq!(st.plan["imported"]["total_line"], Value::from(false));
}

#[test]
fn histogram_text_with_summary_column() {
    let dir = tempfile::tempdir().unwrap();
    let d = import(
        "--histogram",
        &fixture("cyclictest-H100.txt"),
        &dir.path().join("h.json"),
    );
    assert_eq!(d.series.len(), 3);
    assert_eq!(d.series[0].stats.count, 1000);
    assert_eq!(d.series[1].stats.count, 1000);
    assert_eq!(d.series[2].stats.count, 2000);
    assert!(d.warnings.iter().any(|w| w.contains("-H summary column")));
}

#[test]
fn malformed_imports_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, &[u8])> = vec![
        ("empty.txt", b""),
        ("garbage.bin", b"\x00\x01\xff\xfe not a histogram"),
        ("truncated.json", b"{\"thread\": {\"0\": {\"cycles\": 5"),
        ("other.json", b"{\"schema_version\": 1, \"series\": []}"),
        (
            "ragged.txt",
            b"# Histogram\n000000 000001 000002\n000001 000003\n",
        ),
    ];
    let out = dir.path().join("out.json");
    for (name, bytes) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        for kind in ["--json", "--histogram"] {
            let o = run(&["import", "cyclictest", kind, s(&p), "-o", s(&out)]);
            one_line_usage_error(&o);
            assert!(o.stderr.contains(name), "{}", o.stderr);
        }
    }
    assert!(!out.exists());
    let o = run(&[
        "import",
        "cyclictest",
        "--json",
        "/nonexistent/x.json",
        "-o",
        s(&out),
    ]);
    one_line_usage_error(&o);
    let f = s(&fixture("cyclictest-h150.json")).to_string();
    one_line_usage_error(&run(&[
        "import",
        "cyclictest",
        "--json",
        &f,
        "--histogram",
        &f,
        "-o",
        s(&out),
    ]));
    one_line_usage_error(&run(&["import", "cyclictest", "-o", s(&out)]));
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let bom = |src: &Path, dst: &Path| {
        let mut b = b"\xEF\xBB\xBF".to_vec();
        b.extend(std::fs::read(src).unwrap());
        std::fs::write(dst, b).unwrap();
    };
    let ct = dir.path().join("ct-bom.json");
    bom(&fixture("cyclictest-h150.json"), &ct);
    let doc = dir.path().join("doc.json");
    import("--json", &ct, &doc);
    let doc_bom = dir.path().join("doc-bom.json");
    bom(&doc, &doc_bom);
    run_ok(&["report", s(&doc_bom), "-o", s(&dir.path().join("r.html"))]);
    run_ok(&["compare", s(&doc_bom), s(&doc)]);
    assert_eq!(
        ResultDocument::read(&doc_bom).unwrap(),
        ResultDocument::read(&doc).unwrap()
    );
}

#[test]
fn a_truncated_histogram_is_imported_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("cyclictest-h150.txt")).unwrap();
    // Drop the rows of bins 15 and 16 (they hold samples), keep the # Total line.
    let cut: String = text
        .lines()
        .filter(|l| !l.starts_with("000015 ") && !l.starts_with("000016 "))
        .map(|l| format!("{l}\n"))
        .collect();
    let p = dir.path().join("cut.txt");
    std::fs::write(&p, cut).unwrap();
    let out = dir.path().join("cut.json");
    let o = run_ok(&["import", "cyclictest", "--histogram", s(&p), "-o", s(&out)]);
    let want = format!(
        "warning: {}: histogram holds 1784 samples but # Total says 3993: truncated?",
        s(&p)
    );
    assert_eq!(o.stderr.trim_end(), want, "{}", o.stderr);
    common::read_result(&out);
    let d = ResultDocument::read(&out).unwrap();
    assert!(
        d.warnings
            .iter()
            .any(|w| w == "histogram holds 1784 samples but # Total says 3993: truncated?"),
        "{:?}",
        d.warnings
    );
    // The complete file: no such warning.
    let o = run_ok(&[
        "import",
        "cyclictest",
        "--histogram",
        s(&fixture("cyclictest-h150.txt")),
        "-o",
        s(&out),
    ]);
    assert!(!o.stderr.contains("truncated"), "{}", o.stderr);
}

#[test]
fn a_histogram_cut_before_its_footer_is_refused() {
    // `head -c 2000`: rows only; its last bin is not the run's maximum.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read(fixture("cyclictest-h150.txt")).unwrap();
    let p = dir.path().join("head.txt");
    std::fs::write(&p, &text[..2000]).unwrap();
    let out = dir.path().join("head.json");
    let o = run(&["import", "cyclictest", "--histogram", s(&p), "-o", s(&out)]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert_eq!(
        o.stderr.trim_end(),
        format!(
            "error: {}: no '# Max Latencies:' line after 93 histogram rows: the footer is missing (truncated?); the run's maximum is unknown",
            s(&p)
        )
    );
    assert!(!out.exists());
}

#[test]
fn imports_have_a_measuring_time_or_say_they_have_none() {
    // Issue 36: a histogram import wrote duration_ns 0 even with a
    // --cmdline saying -D 2, and compare printed "9 above in 0.0s = ∞/h"
    // then "neither run went above the threshold".
    let dir = tempfile::tempdir().unwrap();
    let h = fixture("cyclictest-h150.txt");
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    run_ok(&["import", "cyclictest", "--histogram", s(&h), "-o", s(&a)]);
    let da = ResultDocument::read(&a).unwrap();
    assert_eq!(da.duration_ns, 0);
    assert!(
        da.warnings
            .iter()
            .any(|w| w.starts_with("the run's measuring time is not known")),
        "{:?}",
        da.warnings
    );
    run_ok(&[
        "import",
        "cyclictest",
        "--histogram",
        s(&h),
        "--cmdline",
        "cyclictest -m -p 90 -t 2 -a 0-1 -i 1000 -D 2 -q -h 150",
        "-o",
        s(&b),
    ]);
    let db = ResultDocument::read(&b).unwrap();
    // 2000 samples a thread at 1 ms: 2 s, as -D 2 asked.
    assert_eq!(db.duration_ns, 2_000_000_000);
    assert!(db
        .warnings
        .iter()
        .any(|w| w.starts_with("the measuring time (2s) is estimated from the command line")));
    assert!(!db
        .warnings
        .iter()
        .any(|w| w.starts_with("the run's measuring time is not known")));
    let text = run_ok(&["compare", s(&a), s(&b), "--tail-threshold", "100us"]).stdout;
    assert!(!text.contains("∞/h") && !text.contains("in 0.0s"), "{text}");
    assert!(!text.contains("neither run went above"), "{text}");
    assert!(text.contains("  a: "), "{text}");
    assert!(
        text.contains(" above (no measuring time recorded: no rate)\n"),
        "{text}"
    );
    assert!(
        text.contains("a has no measuring time (an import without the run's time), so no rate"),
        "{text}"
    );
    assert!(
        text.contains("  b: ") && text.contains(" above in 2.0s = "),
        "{text}"
    );
}

#[test]
fn a_json_import_without_histogram_has_no_distribution_to_compare() {
    // Issue 36: compare said "too few samples" of two runs of 500 (2000)
    // samples each that had no distribution at all.
    let dir = tempfile::tempdir().unwrap();
    let f = fixture("cyclictest-nohist.json");
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    run_ok(&["import", "cyclictest", "--json", s(&f), "-o", s(&a)]);
    run_ok(&["import", "cyclictest", "--json", s(&f), "-o", s(&b)]);
    let text = run_ok(&["compare", s(&a), s(&b)]).stdout;
    assert!(!text.contains("too few samples"), "{text}");
    assert!(
        text.contains("nothing to tell at p50, p99, p99.9: a run has no distribution"),
        "{text}"
    );
    assert!(
        text.contains("interval: none: no distribution recorded (p50, p99, p99.9)"),
        "{text}"
    );
    // Against an rtscope run, the import is not "written by an older rtscope".
    let r = common::measured(dir.path(), "r", &["cyclic", "-t", "1", "-l", "50"]);
    let text = run_ok(&["compare", s(&a), s(&r)]).stdout;
    assert!(!text.contains("older rtscope"), "{text}");
    assert!(
        text.contains("(imported: cyclictest does not record missed periods)"),
        "{text}"
    );
}
