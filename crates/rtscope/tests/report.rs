//! Integration tests of `rtscope report`, `rtscope compare` and `rtscope
//! cyclic --report` (imports: tests/import.rs), driving the real binary, plus a
//! browser test that loads a real report in headless Chromium.
//!
//! The fixtures under `tests/fixtures/` are real cyclictest (rt-tests 2.40)
//! outputs; see `tests/fixtures/README.md` for the commands that made them.

mod common;

use std::path::Path;

use common::{fixture, import, one_line_usage_error, real_run, run, run_ok, s, Out, Run};
use rtscope_core::result::ResultDocument;
use serde_json::Value;

#[test]
fn json_without_histogram_reports_and_compares() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("n.json");
    run_ok(&[
        "import",
        "cyclictest",
        "--json",
        s(&fixture("cyclictest-nohist.json")),
        "-o",
        s(&p),
    ]);
    common::read_result(&p);
    let d = ResultDocument::read(&p).unwrap();
    assert_eq!(d.series.len(), 2);
    assert!(d.series[0].histogram.buckets.is_empty());
    assert_eq!(d.series[0].stats.count, 500);
    // Unknown is not zero: no percentiles, no stddev without a histogram.
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    let st = &v["series"][0]["stats"];
    for k in [
        "p50_ns",
        "p90_ns",
        "p99_ns",
        "p99_9_ns",
        "p99_99_ns",
        "p99_999_ns",
        "stddev_ns",
    ] {
        assert!(st[k].is_null(), "{k}: {st}");
    }
    assert!(st["min_ns"].as_i64().unwrap() > 0, "{st}");
    assert!(st["mean_ns"].as_f64().unwrap() > 0.0, "{st}");
    assert!(!d.series[0].stats.has_percentiles());
    let html = dir.path().join("n.html");
    run_ok(&["report", s(&p), "-o", s(&html)]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("without -h"));
    assert!(
        page.contains("title=\"not measured\">–</td>"),
        "no – in the summary"
    );
    assert!(page.contains("data-chart-missing=\"histogram\""));
    let j = dir.path().join("j.json");
    import("--json", &fixture("cyclictest-h150.json"), &j);
    let o = run_ok(&["compare", s(&j), s(&p)]);
    // No distribution is not "too few samples".
    assert!(
        o.stdout
            .contains("nothing to tell at p50, p99, p99.9: a run has no distribution"),
        "{}",
        o.stdout
    );
    assert!(
        !o.stdout.contains("too few samples to tell"),
        "{}",
        o.stdout
    );
}

/// Rewrites a result document with hostile strings where the system and the
/// user put text: the command line, the kernel cmdline, host, CPU model, a label.
fn make_hostile(p: &Path) {
    let mut v: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    let evil = "<script>alert('x')</script>";
    v["command_line"]
        .as_array_mut()
        .unwrap()
        .push(Value::from(evil));
    v["system"]["cmdline"] = Value::from(format!("quiet {evil}"));
    v["system"]["hostname"] = Value::from("host\"><img src=x onerror=alert(1)>");
    v["system"]["cpu_model"] = Value::from("CPU & <b>bold</b>");
    v["series"][0]["label"] = Value::from("thread <i>0</i>");
    std::fs::write(p, serde_json::to_vec(&v).unwrap()).unwrap();
}

#[test]
fn report_of_a_real_run_escapes_everything() {
    let dir = tempfile::tempdir().unwrap();
    let html1 = dir.path().join("direct.html");
    let json = real_run(dir.path(), "run", &["--report", s(&html1)]);
    let page = std::fs::read_to_string(&html1).unwrap();
    for kind in ["histogram", "timeline", "percentiles"] {
        assert!(page.contains(&format!("data-chart=\"{kind}\"")), "{kind}");
    }
    // Self-contained: no external reference at all (the SVG namespace is a name, not a request).
    let no_ns = page.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for bad in [
        "http://", "https://", "src=", "<link", "@import", "url(", "<script",
    ] {
        assert!(!no_ns.contains(bad), "{bad} in the report");
    }
    make_hostile(&json);
    let html2 = dir.path().join("r.html");
    let o = run_ok(&["report", s(&json), "-o", s(&html2)]);
    assert!(o.stdout.contains("report: "));
    let page = std::fs::read_to_string(&html2).unwrap();
    assert!(!page.contains("<script"), "unescaped script");
    assert!(!page.contains("<img"), "unescaped img");
    assert!(!page.contains("<b>") && !page.contains("<i>"));
    assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
    assert!(page.contains("thread &lt;i&gt;0&lt;/i&gt;"));
}

#[test]
fn report_and_compare_refuse_bad_documents() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, b"{\"schema_version\": 99}").unwrap();
    let out = dir.path().join("r.html");
    one_line_usage_error(&run(&["report", s(&bad), "-o", s(&out)]));
    one_line_usage_error(&run(&["report", "/nonexistent.json", "-o", s(&out)]));
    one_line_usage_error(&run(&["compare", s(&bad), s(&bad)]));
    one_line_usage_error(&run(&["compare", s(&bad)]));
    assert!(!out.exists());
}

/// The document with every latency multiplied by `factor`.
fn scaled(src: &Path, dst: &Path, factor: u64) {
    let mut d = ResultDocument::read(src).unwrap();
    for s in &mut d.series {
        let mut h = rtscope_core::record::LatencyHistogram::new();
        for b in &s.histogram.buckets {
            h.record_n(b[0] * factor, b[1]);
        }
        s.histogram = h.export();
        let st = &mut s.stats;
        st.min_ns *= factor as i64;
        st.max_ns *= factor as i64;
        st.mean_ns *= factor as f64;
        for p in [
            &mut st.p50_ns,
            &mut st.p90_ns,
            &mut st.p99_ns,
            &mut st.p99_9_ns,
        ] {
            *p *= factor;
        }
    }
    d.write(dst).unwrap();
}

#[test]
fn compare_verdicts_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("before.json");
    import("--json", &fixture("cyclictest-h150.json"), &a);
    let b = dir.path().join("after.json");
    scaled(&a, &b, 3);
    let o = run_ok(&["compare", s(&a), s(&b)]);
    assert!(
        o.stdout.contains(
            "verdict: after is worse than before at p50 +200% [+190%, +210%], p99 +200% ["
        ),
        "{}",
        o.stdout
    );
    // Imports have no block histograms: labelled, and the method says why.
    assert!(o
        .stdout
        .contains("  interval: independence assumed (p50, p99, p99.9)\n"));
    assert!(o
        .stdout
        .contains("order statistics with independence assumed"));
    assert!(o.stdout.contains("3.00x"));
    let o = run(&["compare", "--fail-if-worse", s(&a), s(&b)]);
    assert_eq!(o.code, 3, "{}", o.stdout);
    let o = run_ok(&["compare", "--fail-if-worse", s(&b), s(&a)]);
    assert!(
        o.stdout.contains("before is better than after"),
        "{}",
        o.stdout
    );
    let o = run_ok(&["compare", "--fail-if-worse", s(&a), s(&a)]);
    assert!(
        o.stdout
            .contains("verdict: no clear difference at p99 +0.0% [-19%, +24%]; same within ±5% at p50 +0.0% [-4.3%, +4.4%]"),
        "{}",
        o.stdout
    );
    // A wider threshold: the same interval now lies wholly inside it.
    let o = run_ok(&["compare", "--min-effect", "30%", s(&a), s(&a)]);
    assert!(
        o.stdout.contains(
            "verdict: same within ±30% at p50 +0.0% [-4.3%, +4.4%], p99 +0.0% [-19%, +24%]"
        ),
        "{}",
        o.stdout
    );
    one_line_usage_error(&run(&["compare", "--min-effect", "100", s(&a), s(&a)]));
    one_line_usage_error(&run(&["compare", "--min-effect", "five", s(&a), s(&a)]));

    // --match pairs series explicitly; a wrong label is a usage error.
    let o = run_ok(&["compare", s(&a), s(&b), "--match", "thread 0=thread 1"]);
    assert!(
        o.stdout.contains("thread 0 = thread 1 (µs)"),
        "{}",
        o.stdout
    );
    assert!(!o.stdout.contains("\nall (µs)"));
    one_line_usage_error(&run(&["compare", s(&a), s(&b), "--match", "thread 9=all"]));
    one_line_usage_error(&run(&["compare", s(&a), s(&b), "--match", "all"]));

    // --html: one page, one colour per run, charts overlaid.
    let html = dir.path().join("c.html");
    run_ok(&["compare", s(&a), s(&b), "--html", s(&html)]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("data-chart=\"histogram\"").count(), 3);
    assert_eq!(page.matches("data-chart=\"percentiles\"").count(), 3);
    assert!(page.contains("class=\"verdict worse\""));
}

#[test]
fn compare_matrix_directories_cell_by_cell() {
    let dir = tempfile::tempdir().unwrap();
    let (da, db) = (dir.path().join("vanilla"), dir.path().join("rt"));
    for d in [&da, &db] {
        std::fs::create_dir_all(d.join("load-cpu")).unwrap();
    }
    let src = dir.path().join("src.json");
    import("--json", &fixture("cyclictest-h150.json"), &src);
    std::fs::copy(&src, da.join("idle.json")).unwrap();
    std::fs::copy(&src, da.join("load-cpu/p1000.json")).unwrap();
    scaled(&src, &db.join("idle.json"), 2);
    std::fs::copy(&src, db.join("load-cpu/p1000.json")).unwrap();
    std::fs::copy(&src, db.join("only-here.json")).unwrap();
    std::fs::write(db.join("notes.json"), b"{\"not\": \"a result\"}").unwrap();
    let o = run_ok(&["compare", s(&da), s(&db)]);
    assert!(o.stdout.contains("== idle.json =="), "{}", o.stdout);
    assert!(
        o.stdout.contains("== load-cpu/p1000.json =="),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("rt is worse than vanilla"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("1 result files are not in every directory"),
        "{}",
        o.stdout
    );
    one_line_usage_error(&run(&["compare", s(&da), s(&src)]));
}

/// Loads `url` in headless Chromium; returns (serialised DOM, console lines).
fn chromium(url: &str) -> (String, Vec<String>) {
    let c = common::chromium("/usr/bin/chromium", &[], url);
    assert!(c.status.success(), "chromium failed: {}", c.stderr);
    (c.dom, c.console)
}

#[test]
fn browser_loads_the_report_of_a_real_run() {
    if !Path::new("/usr/bin/chromium").exists() {
        // CI installs chromium: there a skip would hide a regression.
        assert!(
            std::env::var_os("CI").is_none(),
            "/usr/bin/chromium is missing with CI set"
        );
        println!("SKIPPED: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = real_run(dir.path(), "run", &[]);
    make_hostile(&json);
    let html = dir.path().join("report.html");
    run_ok(&["report", s(&json), "-o", s(&html)]);

    let (dom, console) = chromium(&format!("file://{}", html.display()));
    // The page has no script: any console message is an error.
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(dom.contains("</html>"), "no DOM dumped");
    for kind in ["histogram", "timeline", "percentiles"] {
        let at = dom
            .find(&format!("data-chart=\"{kind}\""))
            .unwrap_or_else(|| panic!("no {kind} chart in the rendered DOM"));
        let svg = &dom[at..at + dom[at..].find("</svg>").unwrap()];
        assert!(svg.contains("class=\"series\""), "{kind} chart has no data");
    }
    // The hostile command line is text, not an element.
    assert!(
        !dom.contains("<script"),
        "a script element made it into the DOM"
    );
    assert!(!dom.contains("<img"), "an img element made it into the DOM");
    assert!(
        dom.contains("&lt;script&gt;alert('x')&lt;/script&gt;"),
        "hostile cmdline not shown as text"
    );

    // Negative control: the same page with a remote image and a script must
    // produce console errors (the CSP blocks both), so the check above can fail.
    let page = std::fs::read_to_string(&html).unwrap();
    let broken = page.replace(
        "</body>",
        "<img src=\"http://example.invalid/x.png\"><script>console.error('boom')</script></body>",
    );
    let bp = dir.path().join("broken.html");
    std::fs::write(&bp, broken).unwrap();
    let (_, console) = chromium(&format!("file://{}", bp.display()));
    assert!(
        console.len() >= 2,
        "the console check did not see the injected errors: {console:#?}"
    );
}

/// Runs rtscope in `dir` (for relative paths such as `./x.json`).
fn run_in(dir: &Path, args: &[&str]) -> Out {
    Run::new(args).current_dir(dir).ran().into()
}

#[test]
fn documents_without_a_schema_version_are_not_result_documents() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    for (name, text) in [
        ("empty-object.json", "{}"),
        ("no-version.json", r#"{"series": []}"#),
        ("null-version.json", r#"{"schema_version": null}"#),
        ("string-version.json", r#"{"schema_version": "1"}"#),
        ("float-version.json", r#"{"schema_version": 1.5}"#),
        ("array.json", "[1, 2]"),
        ("number.json", "42"),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        for o in [
            run(&["report", s(&p), "-o", s(&out)]),
            run(&["compare", s(&p), s(&p)]),
        ] {
            one_line_usage_error(&o);
            assert!(
                o.stderr
                    .contains(&format!("{}: not an rtscope result document", s(&p))),
                "{name}: {}",
                o.stderr
            );
            assert!(!o.stderr.contains("schema_version 0"), "{}", o.stderr);
        }
    }
    // A real other version still says which version it is.
    let p = dir.path().join("v9.json");
    std::fs::write(&p, r#"{"schema_version": 9}"#).unwrap();
    let o = run(&["report", s(&p), "-o", s(&out)]);
    one_line_usage_error(&o);
    assert!(o.stderr.contains("schema_version 9"), "{}", o.stderr);
    assert!(!out.exists());
}

#[test]
fn devices_and_binary_files_end_in_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    let html = dir.path().join("r.html");
    // A long binary file without newlines (no line end for a line reader to stop at).
    let bin = dir.path().join("blob.bin");
    std::fs::write(&bin, vec![0xA5u8; 3 << 20]).unwrap();
    for input in ["/dev/zero", s(&bin)] {
        for o in [
            run(&["report", input, "-o", s(&html)]),
            run(&["compare", input, input]),
            run(&["import", "cyclictest", "--json", input, "-o", s(&out)]),
            run(&["import", "cyclictest", "--histogram", input, "-o", s(&out)]),
        ] {
            one_line_usage_error(&o);
            assert!(o.stderr.contains(input), "{}", o.stderr);
        }
    }
    assert!(!out.exists() && !html.exists());
}

#[test]
fn a_fifo_nobody_writes_to_is_an_error_not_a_hang() {
    // Every command that reads a document or an import: with a short wait
    // they end in one line and exit 2 (a hang is killed at 30 s).
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&f)
        .status()
        .unwrap()
        .success());
    let out = dir.path().join("out");
    for args in [
        vec!["report", s(&f), "-o", s(&out)],
        vec!["compare", s(&f), s(&f)],
        vec!["import", "cyclictest", "--json", s(&f), "-o", s(&out)],
        vec!["import", "cyclictest", "--histogram", s(&f), "-o", s(&out)],
    ] {
        let e = Run::new(&args)
            .env("RTSCOPE_INPUT_WAIT", "300ms")
            .wait_within(std::time::Duration::from_secs(30))
            .exits(2)
            .one_line();
        assert!(
            e.contains(&format!("{}: ", s(&f)))
                && e.contains("not a regular file, and no data came in 300ms"),
            "{args:?}: {e}"
        );
        assert!(!out.exists());
    }
    let e = Run::new(["report", s(&f), "-o", s(&out)])
        .env("RTSCOPE_INPUT_WAIT", "later")
        .wait_within(std::time::Duration::from_secs(30))
        .exits(2)
        .one_line();
    assert!(
        e.contains("RTSCOPE_INPUT_WAIT=later: not a duration"),
        "{e}"
    );
}

#[test]
fn compare_without_series_in_common_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    import("--json", &fixture("cyclictest-h150.json"), &a);
    let mut d = ResultDocument::read(&a).unwrap();
    for s in &mut d.series {
        s.label = format!("cpu {}", s.label);
    }
    let b = dir.path().join("b.json");
    d.write(&b).unwrap();
    let o = run(&["compare", s(&a), s(&b)]);
    one_line_usage_error(&o);
    assert!(o.stderr.contains("no series in common"), "{}", o.stderr);
    assert!(o.stdout.is_empty(), "{}", o.stdout);
    let o = run(&["compare", "--fail-if-worse", s(&a), s(&b)]);
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert_eq!(o.stderr.trim_end().lines().count(), 1, "{}", o.stderr);
    assert!(o.stderr.contains("no series in common"), "{}", o.stderr);
    // Paired explicitly, they compare.
    run_ok(&["compare", s(&a), s(&b), "--match", "all=cpu all"]);
    // Another experiment's run is said to be one (not "pair with --match").
    d.experiment = "noise".into();
    let n = dir.path().join("n.json");
    d.write(&n).unwrap();
    let o = run(&["compare", s(&a), s(&n)]);
    one_line_usage_error(&o);
    assert!(
        o.stderr
            .contains("a is a cyclic run, n a noise run: they measure different things"),
        "{}",
        o.stderr
    );
}

#[test]
fn an_input_is_never_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = d.join("x.json");
    import("--json", &fixture("cyclictest-h150.json"), &x);
    let before = std::fs::read(&x).unwrap();
    let hist = d.join("h.txt");
    std::fs::copy(fixture("cyclictest-h150.txt"), &hist).unwrap();
    let hist_before = std::fs::read(&hist).unwrap();
    let ct = d.join("ct.json");
    std::fs::copy(fixture("cyclictest-h150.json"), &ct).unwrap();
    let ct_before = std::fs::read(&ct).unwrap();
    for args in [
        vec!["report", "x.json", "-o", "x.json"],
        vec!["report", "x.json", "-o", "./x.json"],
        vec!["report", "./x.json", "x.json", "-o", "x.json"],
        vec!["compare", "x.json", "x.json", "--html", "./x.json"],
        vec![
            "import",
            "cyclictest",
            "--json",
            "ct.json",
            "-o",
            "./ct.json",
        ],
        vec![
            "import",
            "cyclictest",
            "--histogram",
            "h.txt",
            "-o",
            "h.txt",
        ],
    ] {
        let o = run_in(d, &args);
        one_line_usage_error(&o);
        assert!(o.stderr.contains("input"), "{args:?}: {}", o.stderr);
    }
    assert_eq!(std::fs::read(&x).unwrap(), before);
    assert_eq!(std::fs::read(&hist).unwrap(), hist_before);
    assert_eq!(std::fs::read(&ct).unwrap(), ct_before);
    // Nothing else was left beside them (no temporary or probe file).
    assert_eq!(std::fs::read_dir(d).unwrap().count(), 3);
}

#[test]
fn compare_text_strips_control_characters_from_documents() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    import("--json", &fixture("cyclictest-h150.json"), &a);
    let mut d = ResultDocument::read(&a).unwrap();
    d.system.hostname = Some("evil\u{1b}]0;pwned\u{7}host\r".into());
    d.system.kernel_release = "6.1\u{1b}[2J".into();
    d.experiment = "cyc\u{8}lic".into();
    for s in &mut d.series {
        s.label = format!("{}\u{1b}[31m", s.label);
    }
    d.write(&a).unwrap();
    let b = dir.path().join("b.json");
    d.write(&b).unwrap();
    let o = run_ok(&["compare", s(&a), s(&b)]);
    for bad in ['\u{1b}', '\u{7}', '\r', '\u{8}'] {
        assert!(!o.stdout.contains(bad), "{bad:?} in {:?}", o.stdout);
    }
    assert!(o.stdout.contains("evil?]0;pwned?host?"), "{}", o.stdout);
    // --match errors list the labels: stripped too.
    let o = run(&["compare", s(&a), s(&b), "--match", "x=y"]);
    one_line_usage_error(&o);
    assert!(!o.stderr.contains('\u{1b}'), "{:?}", o.stderr);
}

/// Attribute `name` of the first element in `s` (`cx="12.5"` → 12.5).
fn attr(s: &str, name: &str) -> f64 {
    let key = format!(" {name}=\"");
    let at = s.find(&key).unwrap_or_else(|| panic!("no {name} in {s}")) + key.len();
    s[at..at + s[at..].find('"').unwrap()].parse().unwrap()
}

/// The points of the `<path class="series">` whose title is `title`.
fn path_points(svg: &str, title: &str) -> Vec<(f64, f64)> {
    let t = svg
        .find(&format!("<title>{title}</title>"))
        .unwrap_or_else(|| panic!("no path {title}"));
    let start = svg[..t].rfind("<path").unwrap();
    let d = &svg[start..t];
    let d = &d[d.find(" d=\"").unwrap() + 4..];
    let d = &d[..d.find('"').unwrap()];
    d.split(['M', 'L'])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut xy = p.split_whitespace().map(|v| v.parse::<f64>().unwrap());
            (xy.next().unwrap(), xy.next().unwrap())
        })
        .collect()
}

#[test]
fn browser_timeline_puts_a_spike_at_its_time_and_the_mean_in_sight() {
    if !Path::new("/usr/bin/chromium").exists() {
        println!("SKIPPED: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    }
    // A real document whose thread 0 gets a known 10 s timeline: 20 µs mean,
    // 50 µs max per second, and one 14.8 ms sample at 3.09 s.
    let dir = tempfile::tempdir().unwrap();
    let json = real_run(dir.path(), "run", &["-t", "1", "-a", "0"]);
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let start = v["start_clock_ns"].as_u64().unwrap();
    v["duration_ns"] = 10_000_000_000u64.into();
    let series = v["series"].as_array_mut().unwrap();
    series.retain(|s| s["label"] == "thread 0");
    let th = &mut series[0];
    let points: Vec<Value> = (0..10u64)
        .map(|i| {
            let max: u64 = if i == 3 { 14_800_000 } else { 50_000 };
            serde_json::json!({"t_ns": i * 1_000_000_000, "count": 1000,
                               "min_ns": 10_000, "mean_ns": 20_000.0, "max_ns": max})
        })
        .collect();
    th["timeline"] = serde_json::json!({"interval_ns": 1_000_000_000u64, "points": points});
    th["spikes"] = serde_json::json!([{"latency_ns": 14_800_000, "t_ns": start + 3_090_000_000u64,
                                      "seq": 3090, "cpu": 0}]);
    std::fs::write(&json, v.to_string()).unwrap();
    let html = dir.path().join("spike.html");
    run_ok(&["report", s(&json), "-o", s(&html)]);

    let (dom, console) = chromium(&format!("file://{}", html.display()));
    assert!(console.is_empty(), "console messages: {console:#?}");
    let at = dom.find("data-chart=\"timeline\"").expect("timeline chart");
    let svg = &dom[at..at + dom[at..].find("</svg>").unwrap()];

    // The time axis from its tick labels (the ticks on the lowest row).
    let ticks: Vec<(f64, f64, f64)> = svg
        .match_indices("<text class=\"tick\"")
        .map(|(i, _)| {
            let t = &svg[i..];
            let label = &t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()];
            (
                attr(t, "x"),
                attr(t, "y"),
                label.parse::<f64>().unwrap_or(f64::NAN),
            )
        })
        .collect();
    let bottom_row = ticks.iter().map(|t| t.1).fold(f64::MIN, f64::max);
    let xt: Vec<(f64, f64)> = ticks
        .iter()
        .filter(|t| t.1 == bottom_row && t.2.is_finite())
        .map(|t| (t.0, t.2))
        .collect();
    assert!(xt.len() >= 2, "time ticks: {xt:?}");
    let (a, b) = (xt[0], xt[xt.len() - 1]);
    let time_at = |x: f64| a.1 + (x - a.0) * (b.1 - a.1) / (b.0 - a.0);

    // The spike's marker sits at 3.09 s ...
    let title = svg.find("at 3.090 s").expect("the spike's marker");
    let circle = &svg[svg[..title].rfind("<circle").unwrap()..title];
    let (cx, cy) = (attr(circle, "cx"), attr(circle, "cy"));
    assert!(
        (time_at(cx) - 3.09).abs() < 0.05,
        "marker at {} s",
        time_at(cx)
    );
    // ... on the max line's step over [3 s, 4 s), not on a peak at a midpoint.
    let max = path_points(svg, "thread 0 max");
    let step = max
        .windows(2)
        .find(|w| (w[0].1 - cy).abs() < 1.0 && (w[1].1 - cy).abs() < 1.0);
    let step = step.unwrap_or_else(|| panic!("no step at the spike's height: {max:?}"));
    let (x0, x1) = (time_at(step[0].0), time_at(step[1].0));
    assert!(
        (x0 - 3.0).abs() < 0.05 && (x1 - 4.0).abs() < 0.05,
        "step from {x0} s to {x1} s"
    );

    // The mean (20 µs under a 14.8 ms maximum) is well off the bottom of the
    // plot and apart from the max line: on a linear axis it would sit at 0.1 %.
    let frame = &svg[svg.find("<rect class=\"frame\"").unwrap()..];
    let (top, height) = (attr(frame, "y"), attr(frame, "height"));
    let bottom = top + height;
    let mean = path_points(svg, "thread 0 mean");
    let mean_y = mean.iter().map(|p| p.1).fold(f64::MIN, f64::max);
    let quiet_max_y = max.iter().map(|p| p.1).fold(f64::MIN, f64::max);
    assert!(
        bottom - mean_y > 0.05 * height,
        "mean at {mean_y}, bottom {bottom}"
    );
    assert!(
        mean_y - quiet_max_y > 0.05 * height,
        "mean {mean_y} vs max {quiet_max_y}"
    );
    assert!(quiet_max_y - cy > 0.2 * height, "the spike stands out");
}

#[test]
fn compare_of_unlike_runs_shows_the_plan_differences_and_warns() {
    let dir = tempfile::tempdir().unwrap();
    let a = real_run(dir.path(), "a", &[]);
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    // The same run under another output name: alike.
    v["plan"]["json"] = "same.json".into();
    let same = dir.path().join("same.json");
    std::fs::write(&same, v.to_string()).unwrap();
    // Another period and wake method: unlike.
    v["plan"]["period_ns"] = 1_000_000.into();
    v["plan"]["wake"] = "timerfd".into();
    let other = dir.path().join("other.json");
    std::fs::write(&other, v.to_string()).unwrap();

    let o = run_ok(&["compare", s(&a), s(&same)]);
    assert!(!o.stdout.contains("plan differences"), "{}", o.stdout);
    assert!(
        !o.stdout.contains("warning: the runs differ"),
        "{}",
        o.stdout
    );

    let html = dir.path().join("c.html");
    let o = run_ok(&["compare", s(&a), s(&other), "--html", s(&html)]);
    let head: Vec<&str> = o.stdout.lines().take(8).collect();
    let head = head.join("\n");
    assert!(head.contains("plan differences:"), "{head}");
    assert!(
        head.contains("period_ns   500us  1ms") || head.contains("500us"),
        "{head}"
    );
    assert!(
        head.contains("warning: the runs differ in period_ns, wake"),
        "{head}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    // The page: the warning with the verdicts, the settings among what differs.
    let differs = page
        .find("<h3>What differs between the runs</h3>")
        .expect("what differs");
    let warning = page.find("the runs differ in period_ns, wake").unwrap();
    assert!(warning < differs, "the warning leads");
    assert!(page[differs..].contains("<td class=\"l\">plan · period_ns</td>"));
}

/// `rtscope pool` of noise runs of one command: their calibrations differ,
/// their settings do not (before: refused for 'counter_hz'); a run whose
/// series differ is refused, not dropped while its duration counts.
#[test]
fn pool_takes_measured_values_for_what_they_are() {
    let _turn = common::alongside();
    let dir = tempfile::tempdir().unwrap();
    let cpu = rtscope_core::units::online_cpus()
        .last()
        .copied()
        .unwrap()
        .to_string();
    let mut runs = Vec::new();
    for n in ["n1", "n2"] {
        runs.push(common::measured(
            dir.path(),
            n,
            &["noise", "-a", &cpu, "-D", "200ms"],
        ));
    }
    let out = dir.path().join("pooled.json");
    run_ok(&["pool", s(&runs[0]), s(&runs[1]), "-o", s(&out)]);
    let d = ResultDocument::read(&out).unwrap();
    assert_eq!(d.series[0].repetitions.len(), 2);
    // One without series: refused, one line.
    let mut empty = ResultDocument::read(&runs[1]).unwrap();
    empty.series.clear();
    let e = dir.path().join("empty.json");
    empty.write(&e).unwrap();
    let o = run(&["pool", s(&runs[0]), s(&e), "-o", s(&out)]);
    one_line_usage_error(&o);
    assert!(o.stderr.contains("have other series ("), "{}", o.stderr);
}
