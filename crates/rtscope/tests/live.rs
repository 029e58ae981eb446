//! Integration tests of watching a run live: `--stream`, `--listen`. They
//! check line schemas, HTTP status codes and metric names, never a latency.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::{mkfifo, read_result, rtscope_path, tool, Run, LIMIT};

fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn stream_jsonl_has_a_run_line_snapshots_and_an_end() {
    let out = Run::new([
        "cyclic",
        "--no-rt",
        "-t",
        "2",
        "-D",
        "2500ms",
        "-q",
        "--stream-every",
        "500ms",
    ])
    .out("--stream", "s.jsonl")
    .json()
    .exits(0);
    let l = lines(&out.path("s.jsonl"));
    let v: Vec<serde_json::Value> = l.iter().map(|x| serde_json::from_str(x).unwrap()).collect();
    assert_eq!(v[0]["type"], "run");
    assert_eq!(v[0]["run"]["experiment"], "cyclic");
    assert!(v[0]["run"]["kernel"].is_string());
    assert_eq!(v.last().unwrap()["type"], "end");
    let snaps: Vec<_> = v.iter().filter(|x| x["type"] == "snapshot").collect();
    assert!(snaps.len() >= 3, "{l:?}");
    assert_eq!(snaps.last().unwrap()["state"], "finished");
    for (i, s) in snaps.iter().enumerate() {
        assert_eq!(s["seq"], i as u64 + 1);
        let series = s["series"].as_array().unwrap();
        let labels: Vec<_> = series
            .iter()
            .map(|x| x["label"].as_str().unwrap())
            .collect();
        assert_eq!(labels, ["thread 0", "thread 1", "all"]);
        for x in series {
            for k in ["count", "overruns", "dropped"] {
                assert!(x[k].is_u64(), "{k} in {x}");
            }
            for k in [
                "min_ns", "mean_ns", "p50_ns", "p99_ns", "p999_ns", "max_ns", "act_ns",
            ] {
                assert!(x.get(k).is_some(), "{k} in {x}");
            }
            for k in ["count", "min_ns", "mean_ns", "p99_ns", "max_ns"] {
                assert!(x["interval"].get(k).is_some(), "interval {k} in {x}");
            }
        }
        // The run's warnings ride along, from the first snapshot on (this
        // one it starts with: --no-rt).
        assert!(
            s["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().contains("without real-time priority")),
            "{s}"
        );
        // The interval counts add up to the count.
        let all = &series[2];
        assert_eq!(
            all["count"],
            series[0]["count"].as_u64().unwrap() + series[1]["count"].as_u64().unwrap()
        );
    }
    let total: u64 = snaps
        .iter()
        .map(|s| s["series"][2]["interval"]["count"].as_u64().unwrap())
        .sum();
    let last = snaps.last().unwrap();
    assert_eq!(total, last["series"][2]["count"].as_u64().unwrap());
    // The stream's final count is the result's.
    let doc = out.document();
    let all = doc["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["label"] == "all")
        .unwrap();
    assert_eq!(all["stats"]["count"], last["series"][2]["count"]);
}

#[test]
fn stream_csv_and_raw_samples() {
    let out = Run::new([
        "cyclic",
        "--no-rt",
        "-t",
        "1",
        "-D",
        "1500ms",
        "-q",
        "--stream-format",
        "csv",
    ])
    .args(["--stream-every", "500ms"])
    .out("--stream", "s.csv")
    .exits(0);
    let l = lines(&out.path("s.csv"));
    assert!(l[0].starts_with("elapsed_s,series,count,min_ns"), "{l:?}");
    let cols = l[0].split(',').count();
    assert!(l.len() >= 5);
    for row in &l[1..] {
        assert_eq!(row.split(',').count(), cols, "{row}");
    }

    // --stream-every 0: every sample, to stdout; the summary to stderr.
    let ran = Run::new([
        "cyclic", "--no-rt", "-t", "1", "-l", "300", "-q", "--stream", "-",
    ])
    .args(["--stream-every", "0"])
    .exits(0);
    let text = ran.stdout();
    let samples: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v["type"] == "sample")
        .collect();
    // Each sample twice: its thread and `all`.
    assert_eq!(samples.len(), 600, "{text}");
    assert!(samples
        .iter()
        .all(|s| s["latency_ns"].is_i64() && s["seq"].is_u64()));
    assert!(!text.contains("series "), "no summary on stdout: {text}");
    assert!(
        ran.stderr().contains("series"),
        "the summary: {}",
        ran.stderr()
    );
}

#[test]
fn bad_live_options_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<Vec<String>> = vec![
        vec!["--listen".into(), "192.0.2.1:9100".into()],
        vec!["--listen".into(), "no-port".into()],
        vec!["--listen-any".into()],
        vec![
            "--stream".into(),
            dir.path().join("x").display().to_string(),
            "--baud".into(),
            "9600".into(),
        ],
        vec![
            "--stream".into(),
            "/dev/null".into(),
            "--baud".into(),
            "12345".into(),
        ],
        vec!["--stream".into(), dir.path().display().to_string()],
        vec!["--stream".into(), "/nonexistent-dir/s.jsonl".into()],
        vec!["--stream".into(), "-".into(), "--live".into()],
        vec![
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--repeat".into(),
            "2".into(),
            "-D".into(),
            "1s".into(),
        ],
    ];
    for c in cases {
        let out = Run::new(["cyclic", "--no-rt", "-l", "10"])
            .args(&c)
            .exits(2);
        out.one_line();
        assert!(out.stdout.is_empty(), "{c:?}: nothing measured");
    }
    // A used port, before anything is measured.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let line = Run::new(["cyclic", "--no-rt", "-l", "10", "--listen", &addr])
        .exits(2)
        .one_line();
    assert!(line.contains("--listen"), "{line}");
}

/// `request` to `addr`: status, head, body.
fn get(addr: &str, request: &str) -> (u16, String, String) {
    common::http(addr, request)
}

#[test]
fn listen_serves_metrics_snapshot_and_page() {
    let mut child = Run::new([
        "cyclic",
        "--no-rt",
        "-t",
        "1",
        "-D",
        "4s",
        "--listen",
        "127.0.0.1:0",
    ])
    .spawn();
    let addr = child.listening_on();
    std::thread::sleep(Duration::from_millis(1500));
    // OpenMetrics when asked for, the text format otherwise.
    let (code, head, body) = get(
        &addr,
        "GET /metrics HTTP/1.1\r\nHost: localhost\r\nAccept: application/openmetrics-text\r\n\r\n",
    );
    assert_eq!(code, 200, "{head}");
    assert!(head.contains("application/openmetrics-text; version=1.0.0; charset=utf-8"));
    assert!(body.ends_with("# EOF\n"), "{body}");
    assert!(body.contains("# TYPE rtscope_samples counter\n"), "{body}");
    let (code, head, body) = get(&addr, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(code, 200, "{head}");
    assert!(
        head.contains("text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    assert!(!body.contains("# EOF"), "{body}");
    for needle in [
        "# TYPE rtscope_latency_seconds histogram",
        "# TYPE rtscope_samples_total counter",
        "rtscope_latency_seconds_bucket{series=\"thread 0\",le=\"0.000001\"}",
        "rtscope_latency_seconds_bucket{series=\"thread 0\",le=\"+Inf\"}",
        "rtscope_latency_seconds_count{series=\"thread 0\"}",
        "rtscope_samples_total{series=\"thread 0\"}",
        "rtscope_overruns_total{series=\"thread 0\"}",
        "rtscope_dropped_total{series=\"thread 0\"}",
        "rtscope_latency_max_seconds{series=\"thread 0\"}",
        "rtscope_window_latency_max_seconds{series=\"thread 0\"}",
        "rtscope_window_latency_p99_seconds{series=\"thread 0\"}",
        "rtscope_run_info{experiment=\"cyclic\"",
    ] {
        assert!(body.contains(needle), "{needle} missing from\n{body}");
    }
    // The union of the threads is PromQL's sum, not a series of its own.
    assert!(!body.contains("series=\"all\""), "{body}");
    let (code, head, body) = get(&addr, "GET /api/snapshot HTTP/1.1\r\n\r\n");
    assert_eq!(code, 200, "{head}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["series"][1]["label"], "all");
    assert!(v["series"][1]["count"].as_u64().unwrap() > 0);
    // The intervals so far, for a page opened late: one point per snapshot,
    // each with every series' interval max and p99.
    let (code, head, body) = get(&addr, "GET /api/history HTTP/1.1\r\n\r\n");
    assert_eq!(code, 200, "{head}");
    let h: serde_json::Value = serde_json::from_str(&body).unwrap();
    let points = h["points"].as_array().unwrap();
    assert!(!points.is_empty(), "{body}");
    let last = &points[points.len() - 1];
    assert!(last["t"].as_f64().unwrap() > 0.0);
    assert_eq!(last["series"][1][0], "all");
    assert!(last["series"][1][1].as_i64().unwrap() > 0, "{body}");
    let (code, head, body) = get(&addr, "GET / HTTP/1.0\r\n\r\n");
    assert_eq!(code, 200, "{head}");
    assert!(body.contains("<svg") && body.contains("api/snapshot") && body.contains("api/history"));
    assert!(
        !body.contains("http://") && !body.contains("https://"),
        "no external request"
    );
    assert_eq!(get(&addr, "GET /nope HTTP/1.1\r\n\r\n").0, 404);
    assert_eq!(get(&addr, "POST /metrics HTTP/1.1\r\n\r\n").0, 405);
    assert_eq!(get(&addr, "garbage\r\n\r\n").0, 400);
    assert_eq!(
        get(
            &addr,
            &format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(20000))
        )
        .0,
        431
    );
    let out = child.wait_within(LIMIT).exits(0);
    assert!(out.stdout().contains("series"));
}

#[test]
fn live_without_a_terminal_falls_back_to_status_lines() {
    let out = Run::new(["cyclic", "--no-rt", "-t", "1", "-l", "200", "--live"]).exits(0);
    let err = out.stderr();
    assert!(err.contains("note: --live needs a terminal"), "{err}");
    assert!(out.stdout().contains("series"));
}

/// A tmux server of the test's own (its socket in the test's directory),
/// killed when dropped.
struct Tmux {
    sock: String,
}

impl Tmux {
    fn new(dir: &Path) -> Tmux {
        let sock = dir.join("tmux.sock").to_str().unwrap().to_string();
        Tmux { sock }
    }

    /// `tmux -S SOCK args`: its stdout.
    fn run(&self, args: &[&str]) -> String {
        let o = std::process::Command::new("tmux")
            .args(["-S", &self.sock])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).to_string()
    }

    /// A detached session `name` of `cols`×`rows` running `cmd`.
    fn open(&self, name: &str, cols: u16, rows: u16, cmd: &str) {
        let (cols, rows) = (cols.to_string(), rows.to_string());
        self.run(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            &cols,
            "-y",
            &rows,
            cmd,
        ]);
    }

    /// What session `name` shows.
    fn capture(&self, name: &str) -> String {
        self.run(&["capture-pane", "-p", "-t", name])
    }

    /// What session `name` shows once it shows `pattern` (within 10 s).
    fn screen(&self, name: &str, pattern: &str) -> String {
        for _ in 0..100 {
            let s = self.capture(name);
            if s.contains(pattern) {
                return s;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{pattern:?} never shown:\n{}", self.capture(name));
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

/// Starts `rtscope ARGS --json DIR/r.json` in a terminal of `cols`×`rows`,
/// DIR a new temporary directory: session `rtscope-TAG-PID` of a tmux server
/// of its own there. The exit code goes to `DIR/done`, and the terminal
/// stays (its screen can be read). `None` where tmux is missing (an error
/// with CI set).
fn live_in_tmux(
    tag: &str,
    cols: u16,
    rows: u16,
    args: &str,
) -> Option<(tempfile::TempDir, Tmux, String)> {
    if !tool("tmux") {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let (json, done) = (dir.path().join("r.json"), dir.path().join("done"));
    let cmd = format!(
        "{} {args} --json {}; echo $? > {}; sleep 30",
        rtscope_path().display(),
        json.display(),
        done.display()
    );
    let (tmux, session) = (
        Tmux::new(dir.path()),
        format!("rtscope-{tag}-{}", std::process::id()),
    );
    tmux.open(&session, cols, rows, &cmd);
    Some((dir, tmux, session))
}

#[test]
fn live_view_in_tmux_shows_the_table_and_q_stops_with_results() {
    let args = "cyclic --no-rt -t 2 -D 60s --live";
    let Some((dir, tmux, session)) = live_in_tmux("live", 120, 35, args) else {
        return;
    };
    let (json, done) = (dir.path().join("r.json"), dir.path().join("done"));
    let screen = |pattern: &str| tmux.screen(&session, pattern);
    let s = screen("thread 1");
    for needle in [
        "series",
        "count",
        "p99.9",
        "act",
        "avg",
        "missed",
        "dropped",
        "all",
        "max and p99",
        "[q] stop",
    ] {
        assert!(s.contains(needle), "{needle} not on\n{s}");
    }
    tmux.run(&["send-keys", "-t", &session, "p"]);
    screen("PAUSED");
    tmux.run(&["send-keys", "-t", &session, "Tab"]);
    tmux.run(&["send-keys", "-t", &session, "q"]);
    // The normal end: the terminal back, the summary printed, the result written.
    let s = screen("result: ");
    assert!(s.contains("(interrupted)"), "{s}");
    for _ in 0..50 {
        if done.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(std::fs::read_to_string(&done).unwrap().trim(), "0");
    let doc = read_result(&json);
    assert_eq!(doc["end_reason"], "interrupted");

    // The terminal hangs up (the window closes): the run stops as on SIGHUP
    // and its results are still written.
    let json2 = dir.path().join("hup.json");
    let cmd = format!(
        "{} cyclic --no-rt -t 1 -D 60s --live --json {}",
        rtscope_path().display(),
        json2.display()
    );
    let s2 = format!("{session}-hup");
    tmux.open(&s2, 100, 30, &cmd);
    for _ in 0..100 {
        if tmux.capture(&s2).contains("[q] stop") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    tmux.run(&["kill-session", "-t", &s2]);
    for _ in 0..100 {
        if json2.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(tmux);
    assert_eq!(read_result(&json2)["end_reason"], "interrupted");
}

/// A latency label or cell of the terminal view in ns: `5ms`, `200µs`,
/// `1s`, or a bare number of µs (the table's cells).
fn shown_ns(tok: &str) -> Option<f64> {
    let (num, scale) = if let Some(n) = tok.strip_suffix("µs") {
        (n, 1e3)
    } else if let Some(n) = tok.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = tok.strip_suffix('s') {
        (n, 1e9)
    } else {
        (tok, 1e3)
    };
    num.parse::<f64>().ok().map(|v| v * scale)
}

/// From a capture of the view: the histogram's bound labels (ns, the row
/// above its bottom border, inside the left box) and the `all` row's max.
fn axis_and_max(screen: &str) -> (Vec<f64>, f64) {
    let lines: Vec<&str> = screen.lines().collect();
    let bottom = lines
        .iter()
        .rposition(|l| l.starts_with('└'))
        .unwrap_or_else(|| panic!("no box bottom in\n{screen}"));
    let inside: String = lines[bottom - 1]
        .chars()
        .skip(1)
        .take_while(|&c| c != '│')
        .collect();
    let axis: Vec<f64> = inside
        .split_whitespace()
        .map(|t| shown_ns(t).unwrap_or_else(|| panic!("{t:?} on the axis of\n{screen}")))
        .collect();
    let header: Vec<&str> = lines
        .iter()
        .find(|l| l.contains("series") && l.contains(" act "))
        .unwrap_or_else(|| panic!("no table header in\n{screen}"))
        .trim_matches(|c| c == '│' || c == ' ')
        .split_whitespace()
        .collect();
    let all: Vec<&str> = lines
        .iter()
        .find(|l| l.starts_with("│all "))
        .unwrap_or_else(|| panic!("no `all` row in\n{screen}"))
        .trim_matches(|c| c == '│' || c == ' ')
        .split_whitespace()
        .collect();
    let at = header.iter().position(|&h| h == "max").unwrap();
    (axis, shown_ns(all[at]).unwrap())
}

/// `--live` at 80×24: the histogram's axis reaches the max (its last bound
/// label is at least the max the table shows beside it), the table has
/// cyclictest's act and avg columns, and a warning the run's counters
/// raise (a 1 µs period: no machine serves it, most periods are missed) is
/// on screen while the run goes on, not only in the summary after it.
#[test]
fn live_view_at_80x24_shows_the_tail_the_columns_and_warnings_while_running() {
    let args = "cyclic --no-rt -t 1 -i 1us -D 4s --live";
    let Some((dir, tmux, session)) = live_in_tmux("80x24", 80, 24, args) else {
        return;
    };
    let (json, done) = (dir.path().join("r.json"), dir.path().join("done"));
    // Captures of the view while the run goes on (its key line is shown).
    let mut views = Vec::new();
    for _ in 0..150 {
        let s = tmux.capture(&session);
        // A whole frame only: a capture taken while the terminal is being
        // redrawn mixes two frames (under load the full suite caught a new
        // table's max beside the previous frame's histogram); two captures
        // in a row that agree are one frame.
        let whole = s == tmux.capture(&session);
        if whole && s.contains("[q] stop") && s.contains("│all ") {
            views.push(s);
        } else if done.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let summary = tmux.capture(&session);
    drop(tmux);
    assert!(
        views.len() >= 3,
        "the view was seen {} times:\n{summary}",
        views.len()
    );
    assert_eq!(
        std::fs::read_to_string(&done).unwrap().trim(),
        "0",
        "{summary}"
    );
    for s in &views {
        assert_eq!(s.lines().count(), 24, "{s}");
        assert!(s.lines().all(|l| l.chars().count() <= 80), "{s}");
        let (axis, max) = axis_and_max(s);
        assert!(!axis.is_empty(), "{s}");
        assert!(axis.windows(2).all(|w| w[0] < w[1]), "{axis:?} in\n{s}");
        assert!(
            *axis.last().unwrap() >= max,
            "axis {axis:?} < max {max} in\n{s}"
        );
        for col in ["min", "act", "avg", "max", "p99", "missed"] {
            assert!(
                s.lines().any(|l| l
                    .split_whitespace()
                    .any(|t| t == col || t == format!("│{col}"))),
                "no {col} column in\n{s}"
            );
        }
    }
    let warned = views
        .iter()
        .find(|s| s.contains("warning: ") && s.contains("of the periods were missed"));
    assert!(
        warned.is_some(),
        "no warning while running:\n{}",
        views.join("\n")
    );
    // The result says what the view said, and the run's max is no smaller
    // than the last max the view showed.
    let doc = read_result(&json);
    assert_eq!(doc["end_reason"], "duration");
    let all = doc["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["label"] == "all")
        .unwrap();
    let max = all["stats"]["max_ns"].as_f64().unwrap();
    let (axis, shown) = axis_and_max(views.last().unwrap());
    assert!(max + 500.0 >= shown, "{max} {shown}");
    if max < shown + 500.0 {
        // The max came before the last capture (the usual case): the
        // axis of that capture reaches the run's max.
        assert!(*axis.last().unwrap() >= max, "{axis:?} {max}");
    }
    assert!(doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("of the periods were missed")));
}

#[test]
fn serve_lists_results_and_renders_reports() {
    let made = Run::new(["cyclic", "--no-rt", "-t", "1", "-l", "100", "-q"])
        .out("--json", "run one.json")
        .exits(0);
    let dir = made.dir();
    std::fs::write(dir.join("other.json"), "{\"not\": \"a result\"}").unwrap();
    // A free port (taken, released, given to serve).
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let mut child = Run::new(["serve", "--listen", &addr]).arg(dir).spawn();
    let line = child.wait_for_line(false, Duration::from_secs(30), |l| Some(l.to_string()));
    assert!(line.starts_with("serving the results in"), "{line}");
    let (code, _, body) = get(&addr, "GET / HTTP/1.1\r\n\r\n");
    assert_eq!(code, 200);
    assert!(
        body.contains("run%20one.json") && body.contains("cyclic"),
        "{body}"
    );
    assert!(
        !body.contains("other.json"),
        "only result documents are listed"
    );
    let (code, _, body) = get(&addr, "GET /run/run%20one.json HTTP/1.1\r\n\r\n");
    assert_eq!(code, 200);
    assert!(body.contains("<svg") || body.contains("<table"), "a report");
    let (code, _, body) = get(&addr, "GET /raw/run%20one.json HTTP/1.1\r\n\r\n");
    assert_eq!(code, 200);
    assert!(serde_json::from_str::<serde_json::Value>(&body).is_ok());
    for bad in [
        "/run/..%2F..%2Fetc%2Fpasswd",
        "/run/../x.json",
        "/raw/%2e%2e%2f",
    ] {
        let (code, _, _) = get(&addr, &format!("GET {bad} HTTP/1.1\r\n\r\n"));
        assert!((400..500).contains(&code), "{bad}: {code}");
    }
    // Not a result, so not listed: not served either (tests/serve.rs).
    assert_eq!(get(&addr, "GET /run/other.json HTTP/1.1\r\n\r\n").0, 404);
    assert_eq!(get(&addr, "GET /run/none.json HTTP/1.1\r\n\r\n").0, 404);
    child.interrupt(LIMIT).exits(0);
    // Not a directory, a used port: exit 2.
    Run::new(["serve", "/nonexistent-dir"]).exits(2);
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let used = l.local_addr().unwrap().to_string();
    Run::new(["serve", "--listen", &used])
        .arg(dir)
        .exits(2)
        .one_line();
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A real Prometheus scrapes `--listen` (the package's binary, when
/// installed; CI installs it): samples and histogram buckets arrive.
#[test]
fn prometheus_scrapes_listen() {
    if !tool("prometheus") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (rt_port, prom_port) = (free_port(), free_port());
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: rtscope\n    static_configs:\n      - targets: ['127.0.0.1:{rt_port}']\n"
        ),
    )
    .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _prom = Kill(
        std::process::Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let prom = format!("127.0.0.1:{prom_port}");
    // Prometheus first, until it answers ready (a cold start takes seconds).
    let get = |path: &str| -> String {
        let Ok(mut s) = TcpStream::connect(&prom) else {
            return String::new();
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(3)));
        let req = format!("GET {path} HTTP/1.0\r\nHost: {prom}\r\n\r\n");
        if s.write_all(req.as_bytes()).is_err() {
            return String::new();
        }
        let mut buf = String::new();
        let _ = s.read_to_string(&mut buf);
        buf
    };
    let t0 = std::time::Instant::now();
    while get("/-/ready").split_whitespace().nth(1) != Some("200") {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "Prometheus did not become ready"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    // A run long enough for any scrape timing; stopped with SIGINT once seen.
    let rt = Run::new(["cyclic", "--no-rt", "-t", "1", "-D", "60s", "-q"])
        .args(["--listen", &format!("127.0.0.1:{rt_port}")])
        .spawn();
    let query = |q: &str| -> Vec<serde_json::Value> {
        let buf = get(&format!("/api/v1/query?query={q}"));
        let body = buf.split_once("\r\n\r\n").map_or("", |x| x.1);
        serde_json::from_str::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v["data"]["result"].as_array().cloned())
            .unwrap_or_default()
    };
    let t0 = std::time::Instant::now();
    let (mut samples, mut buckets) = (vec![], vec![]);
    while t0.elapsed() < Duration::from_secs(40) {
        samples = query("rtscope_samples_total");
        buckets = query("rtscope_latency_seconds_bucket");
        let counted = samples.iter().any(|r| {
            r["value"][1]
                .as_str()
                .and_then(|v| v.parse::<f64>().ok())
                .is_some_and(|v| v > 0.0)
        });
        if counted && !buckets.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    // Prometheus asked for OpenMetrics and got it: the run is an `info`
    // family in its metadata (the text format would make it a gauge named
    // rtscope_run_info).
    let metadata = |name: &str| -> serde_json::Value {
        let buf = get(&format!("/api/v1/metadata?metric={name}"));
        let body = buf.split_once("\r\n\r\n").map_or("", |x| x.1);
        serde_json::from_str::<serde_json::Value>(body).unwrap_or_default()["data"][name][0].clone()
    };
    let mut run_meta = serde_json::Value::Null;
    while t0.elapsed() < Duration::from_secs(40) {
        run_meta = metadata("rtscope_run");
        if !run_meta.is_null() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(run_meta["type"], "info", "{run_meta}");
    assert_eq!(metadata("rtscope_latency_seconds")["unit"], "seconds");
    rt.interrupt(LIMIT).exits(0);
    assert!(
        !samples.is_empty(),
        "Prometheus has no rtscope_samples_total"
    );
    let series: Vec<_> = samples
        .iter()
        .map(|r| r["metric"]["series"].as_str().unwrap_or("").to_string())
        .collect();
    // One series per thread; the union is left to PromQL.
    assert_eq!(series, vec!["thread 0".to_string()], "{series:?}");
    assert!(samples.iter().all(|r| r["metric"]["job"] == "rtscope"));
    // 16 bounds and +Inf, for the thread.
    assert_eq!(buckets.len(), 17, "{buckets:?}");
    assert!(buckets.iter().any(|r| r["metric"]["le"] == "+Inf"));
    // The 1 µs bound, as exposed (newer Prometheus versions normalise it).
    assert!(buckets
        .iter()
        .any(|r| r["metric"]["le"] == "0.000001" || r["metric"]["le"] == "1e-06"));
}

#[test]
fn stream_to_a_fifo_with_a_reader_without_one_and_with_a_stalled_one() {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("f");
    mkfifo(&fifo);
    let base = ["cyclic", "--no-rt", "-t", "1", "-D", "1s", "-q", "--stream"];

    // A reader that comes after the run started gets the lines.
    let f2 = fifo.clone();
    let reader = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        std::fs::read_to_string(&f2).unwrap()
    });
    Run::new(base).arg(&fifo).exits(0);
    let text = reader.join().unwrap();
    assert!(
        text.lines().any(|l| l.contains("\"type\":\"snapshot\"")),
        "{text}"
    );

    // No reader at all: the run ends, says so, and writes its results.
    let out = Run::new(base).arg(&fifo).json().exits(0);
    assert!(out.stderr().contains("no reader"));
    out.document();

    // A reader that never reads: the pipe fills, the run still ends.
    let _stalled = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let t0 = std::time::Instant::now();
    let out = Run::new(base)
        .arg(&fifo)
        .args(["--stream-every", "0"])
        .json()
        .exits(0);
    assert!(t0.elapsed() < Duration::from_secs(15));
    let doc = out.document();
    assert!(doc["series"][0]["stats"]["count"].as_u64().unwrap() > 0);
    let err = out.stderr();
    assert!(
        err.contains("left behind") || err.contains("dropped"),
        "{err}"
    );
}

/// The live page of a real run, in headless Chromium (CI installs it): the
/// table fills from /api/snapshot, the chart is drawn, no script error.
#[test]
fn browser_shows_the_live_page() {
    if !tool("chromium") {
        return;
    }
    let port = free_port();
    let child = Run::new(["cyclic", "--no-rt", "-t", "1", "-D", "6s", "-q"])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .spawn();
    std::thread::sleep(Duration::from_millis(1500));
    let c = common::chromium(
        "chromium",
        &["--virtual-time-budget=3000"],
        &format!("http://127.0.0.1:{port}/"),
    );
    child.wait_within(LIMIT);
    let (dom, console) = (c.dom, c.console);
    assert!(console.is_empty(), "console: {console:?}");
    assert!(
        dom.contains("<td>thread 0</td>") && dom.contains("<td>all</td>"),
        "{dom}"
    );
    assert!(
        dom.contains("<path class=\"max\" d=\"M"),
        "the chart is drawn: {dom}"
    );
}
