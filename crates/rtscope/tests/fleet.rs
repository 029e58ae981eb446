//! The fleet endpoint (`--listen`) as the tools of a fleet see it: both
//! exposition formats through promtool and the Python parsers, the Grafana
//! dashboard's queries against a real scrape, scrapes answered while hostile
//! clients pile up, and the server's thread off the measured CPUs. Each test
//! looks only at the rtscope it started; none checks a latency.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{tool, Ran, Spawned, LIMIT};

/// A Python with `prometheus_client` (Debian's python3-prometheus-client
/// installs it for /usr/bin/python3); with CI set, none fails the test.
fn python_with_prometheus_client() -> Option<&'static str> {
    let found = ["/usr/bin/python3", "python3"].into_iter().find(|p| {
        std::process::Command::new(p)
            .args(["-c", "import prometheus_client"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "no python3 with prometheus_client, and CI is set (.ci/run installs python3-prometheus-client)"
        );
        eprintln!("skipped: no python3 with prometheus_client");
    }
    found
}

/// A `cyclic --listen 127.0.0.1:0` run of this test (killed when dropped),
/// and its address once it has published a snapshot.
struct Listening {
    child: Spawned,
    addr: String,
}

impl Listening {
    fn start(extra: &[&str]) -> Listening {
        let mut child =
            common::Run::new(["cyclic", "--no-rt", "-D", "120s", "--listen", "127.0.0.1:0"])
                .args(extra)
                .spawn();
        let addr = child.listening_on();
        child.wait_for("a snapshot", Duration::from_secs(30), || {
            get(&addr, "/api/snapshot", "").0 == 200
        });
        Listening { child, addr }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `GET path` with extra header lines; status, head, body.
    fn get(&self, path: &str, headers: &str) -> (u16, String, String) {
        get(&self.addr, path, headers)
    }

    /// Ends the run with SIGINT; how it ended (exit 0 checked).
    fn stop(self) -> Ran {
        self.child.interrupt(LIMIT).exits(0)
    }
}

/// `GET path` from `addr` with extra header lines; status, head, body.
fn get(addr: &str, path: &str, headers: &str) -> (u16, String, String) {
    common::http(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{headers}\r\n"),
    )
}

const OM_ACCEPT: &str = "Accept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n";

/// The names of the samples of a text-format exposition.
fn sample_names(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(['{', ' ']).next().unwrap().to_string())
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn metrics_in_both_formats_pass_promtool_and_the_python_parsers() {
    let run = Listening::start(&["-t", "2"]);
    // The text format: no Accept header, curl's, promtool's.
    let (code, head, text) = run.get("/metrics", "");
    assert_eq!(code, 200, "{head}");
    assert!(
        head.contains("\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    assert!(head.contains("\r\nVary: Accept"), "{head}");
    assert!(
        !text.contains("# EOF") && !text.contains("# UNIT"),
        "{text}"
    );
    let (code, head, text2) = run.get("/metrics", "Accept: text/plain;version=0.0.4\r\n");
    assert_eq!(code, 200);
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    assert_eq!(sample_names(&text), sample_names(&text2));
    // OpenMetrics, asked for the way Prometheus asks.
    let (code, head, om) = run.get("/metrics", OM_ACCEPT);
    assert_eq!(code, 200);
    assert!(
        head.contains(
            "\r\nContent-Type: application/openmetrics-text; version=1.0.0; charset=utf-8"
        ),
        "{head}"
    );
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert_eq!(sample_names(&text), sample_names(&om));
    // One series per thread, no union: a sum counts each sample once.
    for needle in [
        "rtscope_latency_seconds_count{series=\"thread 0\"}",
        "rtscope_latency_seconds_count{series=\"thread 1\"}",
        "rtscope_window_latency_max_seconds{series=\"thread 1\"}",
        "rtscope_window_latency_p99_seconds{series=\"thread 0\"}",
    ] {
        assert!(text.contains(needle), "{needle} not in\n{text}");
    }
    assert!(!text.contains("series=\"all\""), "{text}");
    run.stop();

    let dir = tempfile::tempdir().unwrap();
    let (tp, op) = (dir.path().join("text.prom"), dir.path().join("om.prom"));
    std::fs::write(&tp, &text).unwrap();
    std::fs::write(&op, &om).unwrap();
    if tool("promtool") {
        // promtool reads the text format (it has no OpenMetrics parser:
        // `info` and `# EOF` are errors to it), and lints names and help.
        let out = std::process::Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(std::fs::File::open(&tp).unwrap())
            .output()
            .unwrap();
        assert!(
            out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
            "promtool check metrics: {}{}\n{text}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    if let Some(py) = python_with_prometheus_client() {
        // The text parser, and the strict OpenMetrics parser (it refuses a
        // missing # EOF, a counter sample without _total, buckets out of
        // order, a +Inf bucket other than the count...).
        let script = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families as text
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om
def dump(families):
    return sorted([f.name, f.type, s.name, sorted(s.labels.items())]
                  for f in families for s in f.samples)
print(json.dumps({"text": dump(text(open(sys.argv[1]).read())),
                  "om": dump(om(open(sys.argv[2]).read()))}))
"#;
        let out = std::process::Command::new(py)
            .args(["-c", script])
            .arg(&tp)
            .arg(&op)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "python parsers: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let types = |which: &str| -> Vec<(String, String)> {
            let mut t: Vec<(String, String)> = v[which]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| {
                    (
                        x[0].as_str().unwrap().to_string(),
                        x[1].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            t.dedup();
            t
        };
        let om_types = types("om");
        for want in [
            ("rtscope_run", "info"),
            ("rtscope_latency_seconds", "histogram"),
            ("rtscope_samples", "counter"),
            ("rtscope_overruns", "counter"),
            ("rtscope_dropped", "counter"),
            ("rtscope_latency_max_seconds", "gauge"),
            ("rtscope_window_latency_max_seconds", "gauge"),
            ("rtscope_window_latency_p99_seconds", "gauge"),
        ] {
            assert!(
                om_types.contains(&(want.0.into(), want.1.into())),
                "{want:?} not in {om_types:?}"
            );
        }
        let text_types = types("text");
        assert!(
            text_types.contains(&("rtscope_run_info".into(), "gauge".into())),
            "{text_types:?}"
        );
        assert!(
            text_types.contains(&("rtscope_latency_seconds".into(), "histogram".into())),
            "{text_types:?}"
        );
        // The same samples (names and labels) in both.
        let samples = |which: &str| -> Vec<String> {
            let mut s: Vec<String> = v[which]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| format!("{} {}", x[2], x[3]))
                .collect();
            s.sort();
            s
        };
        assert_eq!(samples("text"), samples("om"));
    }
}

/// Every `expr` of a Grafana dashboard (any depth).
fn exprs(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("expr", serde_json::Value::String(s)) => out.push(s.clone()),
                    _ => exprs(x, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| exprs(x, out)),
        _ => {}
    }
}

/// The PromQL of a markdown page's tables: the last cell of each row, when
/// it is one code span naming an `rtscope_` metric.
fn promql_of_tables(md: &str) -> Vec<String> {
    md.lines()
        .filter(|l| l.starts_with('|'))
        .filter_map(|l| {
            let cell = l
                .trim_end()
                .trim_end_matches('|')
                .rsplit(" | ")
                .next()?
                .trim();
            let code = cell.strip_prefix('`')?.strip_suffix('`')?;
            code.contains("rtscope_").then(|| code.to_string())
        })
        .collect()
}

/// The `label="value"` equality matchers of an expression.
fn equal_matchers(expr: &str) -> Vec<String> {
    let mut out = vec![];
    let mut rest = expr;
    while let Some(i) = rest.find("=\"") {
        let before = &rest[..i];
        let key_start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |k| k + 1);
        let key = &before[key_start..];
        let after = &rest[i + 2..];
        let end = after.find('"').unwrap_or(after.len());
        // `!=` and `=~` are not equality matchers.
        if !key.is_empty() && !before.ends_with('!') {
            out.push(format!("{key}=\"{}\"", &after[..end]));
        }
        rest = &after[end.min(after.len())..];
        rest = rest.strip_prefix('"').unwrap_or(rest);
    }
    out
}

/// The names an expression selects: identifiers followed by `{`, and every
/// `rtscope_...` identifier.
fn selected_names(expr: &str) -> Vec<String> {
    let b = expr.as_bytes();
    let mut names = vec![];
    let mut i = 0;
    while i < b.len() {
        let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b':';
        if ident(b[i]) && (i == 0 || !ident(b[i - 1])) {
            let start = i;
            while i < b.len() && ident(b[i]) {
                i += 1;
            }
            let name = &expr[start..i];
            let quoted = expr[..start].matches('"').count() % 2 == 1;
            if !quoted && (name.starts_with("rtscope_") || b.get(i) == Some(&b'{')) {
                names.push(name.to_string());
            }
        } else {
            i += 1;
        }
    }
    names
}

#[test]
fn the_dashboard_queries_only_what_metrics_exposes() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/grafana-dashboard.json");
    let dash: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut all = vec![];
    exprs(&dash, &mut all);
    assert!(all.len() >= 6, "{all:?}");
    // Grafana's variables as Prometheus would get them.
    // And the queries docs/fleet.md lists (its tables' PromQL column).
    let fleet_md =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/fleet.md"))
            .unwrap();
    let documented = promql_of_tables(&fleet_md);
    assert!(documented.len() >= 8, "{documented:?}");
    all.extend(documented);
    let exprs: Vec<String> = all
        .iter()
        .map(|e| {
            let e = e
                .replace("$__rate_interval", "1m")
                .replace("$__interval", "1m")
                .replace("$__range", "1h")
                .replace("$instance", ".*");
            assert!(!e.contains('$'), "a variable this test does not know: {e}");
            e
        })
        .collect();
    let run = Listening::start(&["-t", "1"]);
    let (code, _, text) = run.get("/metrics", "");
    assert_eq!(code, 200);
    run.stop();
    let exposed = sample_names(&text);
    // The variable's query.
    let var = dash["templating"]["list"][0]["query"].as_str().unwrap();
    let metric = var
        .strip_prefix("label_values(")
        .and_then(|x| x.split(',').next())
        .unwrap();
    assert!(exposed.contains(&metric.to_string()), "{var}");
    for e in &exprs {
        // A label value the scrape never has selects nothing.
        for m in equal_matchers(e) {
            assert!(text.contains(&m), "{m} (in {e}) matches nothing in\n{text}");
        }
        let names = selected_names(e);
        assert!(!names.is_empty(), "selects nothing: {e}");
        for n in names {
            assert!(
                exposed.contains(&n),
                "{n} (in {e}) is not exposed by /metrics: {exposed:?}"
            );
        }
    }
    if tool("promtool") {
        // Each as a recording rule: promtool parses every expression.
        let rules = serde_json::json!({
            "groups": [{
                "name": "grafana-dashboard",
                "rules": exprs.iter().enumerate().map(|(i, e)| serde_json::json!({
                    "record": format!("rtscope:dashboard_panel_{i}"),
                    "expr": e,
                })).collect::<Vec<_>>(),
            }]
        });
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("dashboard.rules.yml");
        std::fs::write(&f, rules.to_string()).unwrap();
        let out = std::process::Command::new("promtool")
            .args(["check", "rules"])
            .arg(&f)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && said.contains(&format!("SUCCESS: {} rules found", exprs.len())),
            "promtool check rules: {said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn promql_is_taken_from_the_tables() {
    let md = "| q | PromQL |\n|---|---|\n| a | `sum(rtscope_x_total)` |\n| b | `rtscope_run_info` |\n| c | not code |\n| d | `other` |\ntext `rtscope_y`\n";
    assert_eq!(
        promql_of_tables(md),
        vec!["sum(rtscope_x_total)", "rtscope_run_info"]
    );
}

#[test]
fn equal_matchers_are_found_and_others_left() {
    assert_eq!(
        equal_matchers("a{series=\"all\",instance=~\"x\",job!=\"y\",le=\"0.0001\"} + b{k=\"\"}"),
        vec!["series=\"all\"", "le=\"0.0001\"", "k=\"\""]
    );
    assert!(equal_matchers("rate(a[1m])").is_empty());
}

#[test]
fn selected_names_finds_metrics_not_functions_labels_or_values() {
    assert_eq!(
        selected_names("histogram_quantile(0.99, sum by (instance, le) (rate(rtscope_latency_seconds_bucket{instance=~\".*\"}[1m])))"),
        vec!["rtscope_latency_seconds_bucket"]
    );
    assert_eq!(
        selected_names("up{job=\"rtscope_x\"} + rtscope_run_info"),
        vec!["up", "rtscope_run_info"]
    );
}

/// Sockets the process `pid` has open.
fn sockets_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| {
                    std::fs::read_link(e.path())
                        .is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
                })
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn scrapes_are_answered_within_a_second_whatever_clients_pile_up() {
    let run = Listening::start(&["-t", "1"]);
    let addr = run.addr.clone();
    // 500 idle connections (more than the server keeps: the oldest are
    // closed as new ones come).
    let idle: Vec<TcpStream> = (0..500)
        .filter_map(|_| TcpStream::connect(&addr).ok())
        .collect();
    assert!(idle.len() >= 450, "{} connected", idle.len());
    // 20 clients sending their head a byte every 100 ms, for 5 s at most.
    let slow: Vec<_> = (0..20)
        .map(|_| {
            let a = addr.clone();
            std::thread::spawn(move || {
                let Ok(mut s) = TcpStream::connect(&a) else {
                    return;
                };
                let t0 = Instant::now();
                for c in b"GET /metrics HTTP/1.1\r\nHost: slooooooooooooooooooooooooooooooooooooooooooooow" {
                    if t0.elapsed() > Duration::from_secs(5) || s.write_all(&[*c]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        })
        .collect();
    // 2 MB requests: a head of 2 MB, and a 2 MB body.
    let big = |req: Vec<u8>| {
        let a = addr.clone();
        std::thread::spawn(move || {
            if let Ok(mut s) = TcpStream::connect(&a) {
                let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
                let _ = s.write_all(&req);
            }
        })
    };
    let mb2 = 2 * 1024 * 1024;
    let mut head = b"GET /metrics HTTP/1.1\r\nX-Big: ".to_vec();
    head.resize(head.len() + mb2, b'a');
    head.extend_from_slice(b"\r\n\r\n");
    let mut body = format!("POST /metrics HTTP/1.1\r\nContent-Length: {mb2}\r\n\r\n").into_bytes();
    body.resize(body.len() + mb2, b'b');
    let bigs = [big(head), big(body)];
    std::thread::sleep(Duration::from_millis(300));
    // While all that is going on: the scrapes.
    for path in ["/metrics", "/api/snapshot", "/metrics"] {
        let t0 = Instant::now();
        let (code, head, body) = run.get(path, "");
        let took = t0.elapsed();
        assert_eq!(code, 200, "{path}: {head}");
        assert!(!body.is_empty());
        assert!(took < Duration::from_secs(1), "{path} took {took:?}");
    }
    // The server keeps at most 256 connections (and the listener).
    let open = sockets_of(run.pid());
    assert!(open <= 256 + 4, "{open} sockets open");
    for t in slow.into_iter().chain(bigs) {
        let _ = t.join();
    }
    drop(idle);
    let out = run.stop();
    assert!(String::from_utf8_lossy(&out.stdout).contains("all"));
}

#[test]
fn the_server_thread_keeps_off_the_measured_cpu() {
    let online = rtscope_core::units::online_cpus();
    if online.len() < 2 {
        eprintln!("skipped: one CPU");
        return;
    }
    let measured = online[online.len() - 1];
    let run = Listening::start(&["-a", &measured.to_string()]);
    let pid = run.pid();
    let mut allowed = String::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let p = t.unwrap().path();
        if std::fs::read_to_string(p.join("comm")).is_ok_and(|c| c.trim() == "rtscope-http") {
            let status = std::fs::read_to_string(p.join("status")).unwrap();
            allowed = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .unwrap()
                .trim()
                .to_string();
        }
    }
    run.stop();
    let cpus = rtscope_core::units::parse_cpu_list(&allowed).unwrap();
    assert!(!cpus.is_empty(), "no rtscope-http thread");
    assert!(!cpus.contains(&measured), "{allowed}");
}
