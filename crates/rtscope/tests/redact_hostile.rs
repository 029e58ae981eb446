//! `--redact`, `serve` and `--listen` against what a hostile or unlucky
//! user gives them: a machine named like one of rtscope's own words, device
//! serials outside the kernel command line, a served directory under the
//! user's home, `--allow-host` arguments that are no host, port 0.

mod common;

use std::path::Path;

use std::time::Duration;

use common::{http, measured, run, run_ok, s, Run, LIMIT};

/// A real two-thread run at `dir/NAME.json` whose host name is `host`.
fn run_on(dir: &Path, name: &str, host: &str) -> std::path::PathBuf {
    let p = measured(
        dir,
        name,
        &["cyclic", "-l", "200", "-i", "500us", "-t", "2"],
    );
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    v["system"]["hostname"] = host.into();
    v["warnings"]
        .as_array_mut()
        .unwrap()
        .push(format!("all threads ran on host={host}").into());
    std::fs::write(&p, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    p
}

/// A machine named `thread` or `all`: the series labels, the tool's words
/// and its prose stay in the redacted page and comparison; the host name
/// goes where it identifies.
#[test]
fn a_host_named_like_a_tool_word_leaves_labels_and_prose_alone() {
    let d = tempfile::tempdir().unwrap();
    for host in ["thread", "all"] {
        let a = run_on(d.path(), &format!("{host}-a"), host);
        let b = run_on(d.path(), &format!("{host}-b"), host);
        let page = d.path().join(format!("{host}.html"));
        run_ok(&["report", s(&a), "-o", s(&page), "--redact"]);
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(html.contains("thread 0"), "{host}: no `thread 0` label");
        for mangled in ["(host) 0", "(host) 1", "(host) threads"] {
            assert!(!html.contains(mangled), "{host}: {mangled} in the page");
        }
        assert!(html.contains("host=(host)"), "{host}: host=NAME kept");
        let o = run_ok(&["compare", s(&a), s(&b), "--redact"]);
        for label in ["thread 0", "thread 1", "all"] {
            assert!(
                o.stdout.lines().any(|l| l.trim_start().starts_with(label)),
                "{host}: no {label} row:\n{}",
                o.stdout
            );
        }
        assert!(!o.stdout.contains(&format!("{host}-a")), "{}", o.stdout);
        assert!(o.stdout.contains("(host)-a"), "{}", o.stdout);
        // Without --redact the name shows (the checks above can fail).
        let plain = run(&["compare", s(&a), s(&b)]);
        assert!(
            plain.stdout.contains(&format!("{host}-a")),
            "{}",
            plain.stdout
        );
    }
}

/// Serial numbers, disk ids and file system ids.
const SERIALS: [&str; 5] = [
    "ABC123XYZ",
    "S3Z9NB0K123456",
    "WCC6Y1234567",
    "5ecre7-uuid",
    "123e4567-e89b-12d3-a456-426614174000",
];

/// Device serials and root ids in the warnings, the command line, the
/// plan and the attributes (outside the kernel command line) are left out
/// of `report --redact` and `compare --redact`.
#[test]
fn device_serials_and_ids_are_left_out() {
    let d = tempfile::tempdir().unwrap();
    let a = measured(d.path(), "a", &["cyclic", "-l", "200", "-i", "500us"]);
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    let texts = [
        "disk serial=ABC123XYZ is slow",
        "SerialNumber: S3Z9NB0K123456",
        "/dev/disk/by-id/usb-Samsung_SSD_860_EVO_S3Z9NB0K123456-part1",
        "ata-WDC_WD10EZEX-08WN4A0_WD-WCC6Y1234567 and root=UUID=5ecre7-uuid ro",
        "root=PARTUUID=123e4567-e89b-12d3-a456-426614174000",
    ];
    for t in texts {
        v["warnings"].as_array_mut().unwrap().push(t.into());
        v["command_line"].as_array_mut().unwrap().push(t.into());
    }
    v["plan"]["disk"] = texts[2].into();
    v["series"][0]["attributes"]["disk_serial"] = "ABC123XYZ".into();
    std::fs::write(&a, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let page = d.path().join("a.html");
    let plain = d.path().join("plain.html");
    run_ok(&["report", s(&a), "-o", s(&plain)]);
    run_ok(&["report", s(&a), "-o", s(&page), "--redact"]);
    let shown = std::fs::read_to_string(&plain).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    for serial in SERIALS {
        assert!(shown.contains(serial), "{serial} not planted");
        assert!(!html.contains(serial), "report --redact shows {serial}");
    }
    let o = run_ok(&["compare", s(&a), s(&a), "--redact"]);
    for serial in SERIALS {
        assert!(!o.stdout.contains(serial), "compare --redact: {serial}");
    }
}

/// `serve --redact` prints nothing with the served directory's path (it
/// holds the user's home directory): neither its start line nor an error.
#[test]
fn serve_redact_prints_no_directory() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("home/carol/lab-results");
    std::fs::create_dir_all(&dir).unwrap();
    measured(&dir, "a", &["cyclic", "-l", "100", "-i", "500us"]);
    let addr = common::free_addr();
    let mut child = Run::new(["serve", "--redact", "--listen", &addr])
        .arg(&dir)
        .spawn();
    let line = child.wait_for_line(false, Duration::from_secs(30), |l| {
        l.starts_with("serving the results").then(|| l.to_string())
    });
    let get = |path: &str| {
        let (code, _, body) = http(
            &addr,
            &format!("GET /{path} HTTP/1.1\r\nHost: {addr}\r\n\r\n"),
        );
        assert_eq!(code, 200, "/{path}: {body}");
        body
    };
    // The list, and the run's page and JSON (its command line names the
    // file it was written to, in the directory).
    let mut bodies = vec![get("")];
    let alias = bodies[0]
        .split("href=\"")
        .filter_map(|r| r.split('"').next())
        .find_map(|l| l.strip_prefix("raw/"))
        .expect("a raw link")
        .to_string();
    bodies.push(get(&format!("raw/{alias}")));
    bodies.push(get(&format!("run/{alias}")));
    bodies.push(get(&format!("compare/{alias}/{alias}")));
    assert!(bodies[1].contains("DIR/a.json"), "{}", bodies[1]);
    let ran = child.interrupt(LIMIT).exits(0);
    let printed = [line.clone(), ran.stdout(), ran.stderr()];
    for shown in printed.iter().chain(&bodies) {
        for secret in ["carol", "lab-results", s(root.path())] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
    }
    assert!(line.contains(&format!("http://{addr}/")), "{line}");
    // An error about the directory does not name it either.
    let missing = root.path().join("home/carol/gone");
    let o = run(&[
        "serve",
        "--redact",
        "--listen",
        &common::free_addr(),
        s(&missing),
    ]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(!o.stderr.contains("carol"), "{}", o.stderr);
    // Without --redact the path is shown (the checks above can fail).
    let o = run(&["serve", "--listen", &common::free_addr(), s(&missing)]);
    assert!(o.stderr.contains("carol"), "{}", o.stderr);
}

/// `--allow-host` takes a host name or an IP address, optionally with a
/// port; anything else is one line and exit 2, for `serve` and `--listen`.
#[test]
fn allow_host_takes_only_names_and_addresses() {
    let long = ["a"; 127].join(".");
    assert_eq!(long.len(), 253);
    let too_long = format!("{long}b");
    let bad = [
        "",
        " ",
        "a b",
        "*",
        "*.example.org",
        "http://x",
        "a\u{1b}[2Jb",
        "a\tb",
        ".",
        "a..b",
        "-a",
        "a-",
        "a_b",
        "a.example:0",
        "a.example:65536",
        "1.2.3.999",
        "[::1]x",
        too_long.as_str(),
    ];
    for name in bad {
        let arg = format!("--allow-host={name}");
        for args in [
            vec!["serve", arg.as_str(), "."],
            vec![
                "cyclic",
                "--no-rt",
                "-l",
                "10",
                "--listen",
                "127.0.0.1:0",
                arg.as_str(),
            ],
        ] {
            let o = run(&args);
            common::one_line_usage_error(&o);
            assert!(o.stderr.contains("--allow-host"), "{args:?}: {}", o.stderr);
            assert!(!o.stderr.contains('\u{1b}'), "{args:?}: {}", o.stderr);
        }
    }
    // Names, addresses and ports are taken: the server starts and answers
    // the name at any port.
    let d = tempfile::tempdir().unwrap();
    measured(d.path(), "a", &["cyclic", "-l", "100", "-i", "500us"]);
    let addr = common::free_addr();
    let mut child = Run::new(["serve", "--listen", &addr])
        .args([
            "--allow-host",
            "Dash.Example.org:8443",
            "--allow-host",
            long.as_str(),
        ])
        .args([
            "--allow-host",
            "10.0.0.5:80",
            "--allow-host",
            "[fd00::5]:9464",
        ])
        .arg(d.path())
        .spawn();
    child.wait_for_line(false, Duration::from_secs(30), |l| {
        l.starts_with("serving the results").then_some(())
    });
    let get = |host: &str| http(&addr, &format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n")).0;
    assert_eq!(get("dash.example.org"), 200);
    assert_eq!(get("dash.example.org:8080"), 200);
    assert_eq!(get("[fd00::5]"), 200);
    assert_eq!(get("evil.example"), 421);
    child.interrupt(LIMIT).exits(0);
}

/// The address a `rtscope: listening on http://ADDR/` line names.
fn bound(l: &str) -> Option<String> {
    let rest = l.strip_prefix("rtscope: listening on http://")?;
    rest.strip_suffix('/').map(str::to_string)
}

/// `--listen HOST:0 -q` and `serve --listen HOST:0 -q` print the address
/// they bound (the only way to reach them): one line on stderr, and the
/// server answers there.
#[test]
fn port_zero_is_told_even_with_quiet() {
    let d = tempfile::tempdir().unwrap();
    measured(d.path(), "a", &["cyclic", "-l", "100", "-i", "500us"]);
    let mut serve = Run::new(["serve", "-q", "--listen", "127.0.0.1:0"])
        .arg(d.path())
        .spawn();
    let addr = serve.wait_for_line(true, Duration::from_secs(30), bound);
    assert_ne!(addr, "127.0.0.1:0");
    let (code, _, body) = http(&addr, &format!("GET / HTTP/1.1\r\nHost: {addr}\r\n\r\n"));
    assert_eq!(code, 200, "{body}");
    let ran = serve.interrupt(LIMIT).exits(0);
    assert_eq!(ran.stdout(), "", "serve -q prints no start line");
    assert_eq!(ran.stderr().lines().count(), 1, "{}", ran.stderr());

    let mut live = Run::new(["cyclic", "--no-rt", "-D", "60s", "-q"])
        .args(["--listen", "127.0.0.1:0"])
        .spawn();
    let addr = live.wait_for_line(true, Duration::from_secs(30), bound);
    let (code, _, body) = http(
        &addr,
        &format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n"),
    );
    assert_eq!(code, 200, "{body}");
    let ran = live.interrupt(LIMIT).exits(0);
    let err = ran.stderr();
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("listening")).collect();
    assert_eq!(lines.len(), 1, "{}", ran.stderr());
    // A port of its own choosing: -q prints nothing of it.
    let port = common::free_addr();
    let live = Run::new(["cyclic", "--no-rt", "-D", "60s", "-q", "--listen", &port]).spawn();
    let t0 = std::time::Instant::now();
    let (code, _, _) = loop {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{port} never listened"
        );
        if std::net::TcpStream::connect(&port).is_ok() {
            break http(&port, &format!("GET / HTTP/1.1\r\nHost: {port}\r\n\r\n"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(code, 200);
    let ran = live.interrupt(LIMIT).exits(0);
    assert!(!ran.stderr().contains("listening"), "{}", ran.stderr());
}

/// A host name or address joined to other words by `_` (an attribute key
/// `nic_prod-db-17_10.9.8.7`, a file `edge01_run.json`) is replaced in
/// `report --redact` and in the pages `serve --redact` serves.
#[test]
fn names_joined_by_underscores_are_left_out() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("home/bob.smith");
    std::fs::create_dir_all(&dir).unwrap();
    let a = run_on(&dir, "edge01_run", "edge01");
    let b = run_on(&dir, "db", "prod-db-17");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&b).unwrap()).unwrap();
    v["series"][0]["attributes"]["nic_prod-db-17_10.9.8.7"] = "up".into();
    std::fs::write(&b, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let page = d.path().join("r.html");
    run_ok(&["report", s(&a), s(&b), "-o", s(&page), "--redact"]);
    let html = std::fs::read_to_string(&page).unwrap();
    let secrets = ["prod-db-17", "10.9.8.7", "edge01", "bob.smith"];
    for secret in secrets {
        assert!(!html.contains(secret), "report --redact: {secret}");
    }
    let addr = common::free_addr();
    let child = common::serve_redacted(&dir, &addr);
    let get = |path: &str| {
        let req = format!("GET /{path} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        let (code, _, body) = http(&addr, &req);
        assert_eq!(code, 200, "/{path}: {body}");
        body
    };
    let index = get("");
    let mut bodies = vec![index.clone()];
    for link in index.split("href=\"").filter_map(|r| r.split('"').next()) {
        if link.starts_with("raw/") || link.starts_with("run/") {
            bodies.push(get(link));
        }
    }
    assert!(bodies.len() >= 5, "{index}");
    child.interrupt(LIMIT).exits(0);
    for body in &bodies {
        for secret in secrets {
            assert!(!body.contains(secret), "serve --redact: {secret} in {body}");
        }
    }
}

/// Runs from different hosts stay apart under `--redact`: each host is
/// `(host 1)`, `(host 2)` in order of first appearance.
#[test]
fn runs_from_different_hosts_stay_apart() {
    let d = tempfile::tempdir().unwrap();
    let a = run_on(d.path(), "board-a", "board-a");
    let b = run_on(d.path(), "board-b", "board-b");
    let o = run_ok(&["compare", s(&a), s(&b), "--redact"]);
    assert!(!o.stdout.contains("board-"), "{}", o.stdout);
    assert!(!o.stdout.contains("(host)"), "{}", o.stdout);
    assert!(o.stdout.contains("(host 1)"), "{}", o.stdout);
    assert!(o.stdout.contains("(host 2)"), "{}", o.stdout);
    let page = d.path().join("r.html");
    run_ok(&["report", s(&a), s(&b), "-o", s(&page), "--redact"]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("board-"));
    assert!(html.contains("(host 1)") && html.contains("(host 2)"));
    // One host alone is `(host)`.
    let o = run_ok(&["compare", s(&a), s(&a), "--redact"]);
    assert!(o.stdout.contains("(host)"), "{}", o.stdout);
    assert!(!o.stdout.contains("(host 1)"), "{}", o.stdout);
}

/// An error on stderr under `--redact` names neither the home directory's
/// user nor a host learned from the other inputs.
#[test]
fn errors_under_redact_name_no_host_or_user() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("home/dave/prod-db-17");
    std::fs::create_dir_all(&dir).unwrap();
    let a = run_on(&dir, "prod-db-17", "prod-db-17");
    let missing = dir.join("prod-db-17-missing.json");
    let o = run(&["report", s(&a), s(&missing), "--redact", "-o", "/dev/null"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.starts_with("error:"), "{}", o.stderr);
    for secret in ["prod-db-17", "dave"] {
        assert!(!o.stderr.contains(secret), "{secret}: {}", o.stderr);
    }
    let o = run(&["compare", s(&a), s(&missing), "--redact"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    for secret in ["prod-db-17", "dave"] {
        assert!(!o.stderr.contains(secret), "{secret}: {}", o.stderr);
    }
    // A missing file alone: its home directory's user is left out.
    let o = run(&["report", s(&missing), "--redact", "-o", "/dev/null"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(!o.stderr.contains("dave"), "{}", o.stderr);
    // Without --redact the path is shown (the checks above can fail).
    let o = run(&["report", s(&a), s(&missing), "-o", "/dev/null"]);
    assert!(o.stderr.contains("prod-db-17-missing"), "{}", o.stderr);
}

/// Cisco's and bare MAC addresses, `~NAME/` home directories and
/// `user=NAME` are left out of `report --redact`, the user's name wherever
/// else it stands.
#[test]
fn other_mac_and_user_forms_are_left_out() {
    let d = tempfile::tempdir().unwrap();
    let a = run_on(d.path(), "a", "box1");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    let texts = [
        "nic 5254.00ab.cdef up",
        "bridge 525400abcdef up",
        "wrote ~carol/lab/a.json",
        "ran as user=dave",
        "dave and carol share it",
    ];
    for t in texts {
        v["warnings"].as_array_mut().unwrap().push(t.into());
    }
    std::fs::write(&a, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let page = d.path().join("a.html");
    run_ok(&["report", s(&a), "-o", s(&page), "--redact"]);
    let html = std::fs::read_to_string(&page).unwrap();
    for secret in ["5254.00ab.cdef", "525400abcdef", "carol", "dave"] {
        assert!(!html.contains(secret), "report --redact: {secret}");
    }
    assert!(html.contains("~(user)/lab/a.json"));
}
