//! The end of an `rtscope cyclictest` run, from plain inputs: which files
//! are written where, and what goes to stdout in which order.

use super::*;

fn args(line: &str) -> args::CtArgs {
    args::parse(
        &line
            .split_whitespace()
            .map(String::from)
            .collect::<Vec<_>>(),
    )
    .unwrap()
}

fn plan_of(a: &args::CtArgs) -> CyclicPlan {
    let r = resolve::resolve(a, &resolve::Machine::this()).unwrap();
    cyclic::plan(&r.options).unwrap()
}

fn finished(threads: usize) -> Finished {
    let mut series: Vec<rtscope_core::result::Series> = (0..threads)
        .map(|i| rtscope_core::result::Series {
            label: format!("thread {i}"),
            ..Default::default()
        })
        .collect();
    series.push(rtscope_core::result::Series {
        label: "all".into(),
        ..Default::default()
    });
    for s in &mut series {
        (
            s.stats.count,
            s.stats.min_ns,
            s.stats.max_ns,
            s.stats.mean_ns,
        ) = (2, 1_500, 2_500, 2_000.0);
    }
    let mut doc = ResultDocument::new(
        "cyclic",
        serde_json::json!({}),
        rtscope_core::system::SystemSnapshot::default(),
        series,
    );
    doc.started_at = "2026-11-25T23:10:49Z".into();
    let bins = (0..threads)
        .map(|_| {
            let mut b = MicrosecondBins::new(3, 3);
            b.record(1_500, 0);
            b.record(2_500, 1);
            let mut s = RunningStats::default();
            s.push(1_500);
            s.push(2_500);
            (b, s)
        })
        .collect();
    let status = (0..threads)
        .map(|i| ThreadStatus {
            index: i,
            tid: 1000 + i as i32,
            priority: 80,
            period_ns: 1_000_000,
            count: 2,
            min_ns: 1_500,
            act_ns: 2_500,
            mean_ns: 2_000.0,
            max_ns: 2_500,
            overruns: 0,
        })
        .collect();
    Finished {
        doc,
        bins,
        status,
        thread_errors: vec![],
    }
}

/// Runs `deliver`; its stdout and exit code.
fn deliver_to(breaktrace: bool, plan: &CyclicPlan, out: &Finished, files: &Files) -> (String, i32) {
    let mut text = String::new();
    let code = deliver(breaktrace, plan, out, files, &mut |s| text.push_str(s));
    (text, code)
}

#[test]
fn paths_are_checked_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let default = p("default.json");
    let f = Files::of(&args("-q"), default.clone()).unwrap();
    assert_eq!(
        f,
        Files {
            rtscope_json: Some(default.clone()),
            report: None,
            json: None,
            histfile: None,
        }
    );
    let line = format!(
        "-h 5 --histfile={} --json={} --rtscope-json={} --rtscope-report={}",
        p("h.txt").display(),
        p("ct.json").display(),
        p("r.json").display(),
        p("r.html").display()
    );
    let f = Files::of(&args(&line), default.clone()).unwrap();
    assert_eq!(f.rtscope_json, Some(p("r.json")));
    assert_eq!(f.report, Some(p("r.html")));
    assert_eq!(f.json, Some(p("ct.json")));
    assert_eq!(f.histfile, Some(p("h.txt")));
    // --histfile without -h: no file; --json=-: stdout, not a path.
    let f = Files::of(
        &args(&format!("--histfile={} --json=-", p("h.txt").display())),
        default.clone(),
    )
    .unwrap();
    assert_eq!((f.histfile, f.json), (None, Some(PathBuf::from("-"))));
    assert_eq!(
        Files::of(&args("--no-rtscope-json"), default.clone())
            .unwrap()
            .rtscope_json,
        None
    );
    // The default where it cannot be written: left out, the run goes on.
    let nowhere = p("missing/dir/x.json");
    assert_eq!(
        Files::of(&args("-q"), nowhere.clone())
            .unwrap()
            .rtscope_json,
        None
    );
    // A path given that cannot be written, or twice: refused.
    let bad = format!("--rtscope-json={}", nowhere.display());
    assert!(Files::of(&args(&bad), default.clone()).is_err());
    let twice = format!(
        "--json={} --rtscope-json={}",
        p("a.json").display(),
        p("a.json").display()
    );
    assert!(Files::of(&args(&twice), default.clone()).is_err());
    let e = Files::of(&args(&format!("--json={}", nowhere.display())), default).unwrap_err();
    assert!(e.to_string().starts_with("--json "), "{e}");
}

/// `-q -h -b`: the files, then the histogram and the break lines on stdout,
/// no status lines (cyclictest prints none with -h).
#[test]
fn quiet_histogram_and_break() {
    let dir = tempfile::tempdir().unwrap();
    let a = args("-t 2 -p 80 -h 3 -q -b 1");
    let plan = plan_of(&a);
    let out = finished(2);
    let files = Files {
        rtscope_json: Some(dir.path().join("r.json")),
        report: None,
        json: Some(dir.path().join("ct.json")),
        histfile: None,
    };
    let (text, code) = deliver_to(true, &plan, &out, &files);
    assert_eq!(code, 0);
    assert!(
        text.starts_with("# Histogram\n000000 000000\t000000\n000001 000001\t000001\n"),
        "{text}"
    );
    assert!(text.ends_with("\n\n# Thread Ids: 01000 01001\n"), "{text}");
    assert!(!text.contains("T: 0"));
    let doc = ResultDocument::read(&dir.path().join("r.json")).unwrap();
    assert_eq!(doc.series.len(), 3);
    let ct: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("ct.json")).unwrap())
            .unwrap();
    assert_eq!(ct["num_threads"], 2);
    assert_eq!(ct["thread"]["1"]["histogram"]["2"], 1);
    assert_eq!(ct["return_code"], 0);
    // Without -b: no break lines.
    let (text, _) = deliver_to(false, &plan, &out, &files);
    assert!(!text.contains("# Thread Ids"));
}

#[test]
fn quiet_without_histogram_prints_the_status_lines() {
    let a = args("-t 2 -p 80 -q");
    let (text, code) = deliver_to(
        false,
        &plan_of(&a),
        &finished(2),
        &Files::of(&args("--no-rtscope-json"), PathBuf::new()).unwrap(),
    );
    assert_eq!(code, 0);
    assert_eq!(
        text,
        "T: 0 ( 1000) P:80 I:1000 C:      2 Min:      1 Act:    2 Avg:    2 Max:       2\n\
         T: 1 ( 1001) P:80 I:1000 C:      2 Min:      1 Act:    2 Avg:    2 Max:       2\n"
    );
    // Not quiet: the live display already showed them; nothing more.
    let (text, _) = deliver_to(
        false,
        &plan_of(&args("-t 2 -p 80")),
        &finished(2),
        &Files::of(&args("--no-rtscope-json"), PathBuf::new()).unwrap(),
    );
    assert_eq!(text, "");
}

#[test]
fn histfile_json_to_stdout_and_the_summary_column() {
    let dir = tempfile::tempdir().unwrap();
    let a = args("-t 2 -p 80 -H 3 -q");
    let files = Files {
        rtscope_json: None,
        report: Some(dir.path().join("r.html")),
        json: Some(PathBuf::from("-")),
        histfile: Some(dir.path().join("h.txt")),
    };
    let (text, code) = deliver_to(false, &plan_of(&a), &finished(2), &files);
    assert_eq!(code, 0);
    // The JSON on stdout; the histogram in its file, with -H's column.
    assert!(text.starts_with("{\n  \"file_version\": 1,\n"), "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["num_threads"], 2);
    let h = std::fs::read_to_string(dir.path().join("h.txt")).unwrap();
    assert!(h.contains("000001 000001\t000001\t000002\n"), "{h}");
    assert!(!h.starts_with("# /dev/cpu_dma_latency"));
    assert!(dir.path().join("r.html").exists());
}

/// A file that cannot be written and a thread that failed: exit 1, the
/// other files still written.
#[test]
fn failures_are_exit_1_and_the_other_files_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let a = args("-p 80 -q");
    let files = Files {
        rtscope_json: Some(dir.path().join("gone/r.json")),
        report: None,
        json: Some(dir.path().join("ct.json")),
        histfile: None,
    };
    let (text, code) = deliver_to(false, &plan_of(&a), &finished(1), &files);
    assert_eq!(code, 1);
    assert!(dir.path().join("ct.json").exists());
    assert!(text.starts_with("T: 0"));
    let mut out = finished(1);
    out.thread_errors.push("thread 0: it broke".into());
    let files = Files {
        rtscope_json: Some(dir.path().join("r.json")),
        report: None,
        json: Some(dir.path().join("ct.json")),
        histfile: None,
    };
    let (_, code) = deliver_to(false, &plan_of(&a), &out, &files);
    assert_eq!(code, 1);
    let ct: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("ct.json")).unwrap())
            .unwrap();
    assert_eq!(ct["return_code"], 1);
    assert!(dir.path().join("r.json").exists());
}
