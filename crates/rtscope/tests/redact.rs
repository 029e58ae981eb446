//! `--redact` tested the way it failed: a corpus of planted
//! identifiers (the host name in several cases, a user name and home
//! directory, IPv4 and IPv6 addresses in every syntax redaction covers, a
//! MAC and an e-mail address, a disk serial in the kernel command line)
//! put into every kind of field, object key, file name and directory path
//! of real result documents, then looked for in every page, download and
//! text output of `report --redact` (page, fail lines, JUnit file),
//! `compare --redact` (text and `--html`) and `serve --redact` (index,
//! baseline pages, run pages, comparisons, raw downloads, error pages). Without `--redact` each
//! identifier shows up somewhere, so the corpus is seen to be planted.

mod common;

use std::path::{Path, PathBuf};

use common::{http, measured, run, s, LIMIT};

/// What must not be left (looked for in lower case).
const PLANTED: &[&str] = &[
    "prod-db-17",
    "alice",
    "10.20.30.40",
    "10.20.30.1",
    "10.1.2.3",
    "2001:db8::1",
    "fd00::5",
    "2600::1",
    "fe80::1",
    "52:54:00:ab:cd:ef",
    "alice.smith@corp.example.com",
    "corp.example.com",
    "wd-5ecre7",
];

/// Texts carrying the identifiers, in every syntax.
fn texts() -> Vec<String> {
    [
        "PROD-DB-17 booted with ip=10.20.30.40::10.20.30.1:255.255.255.0:prod-db-17:eth0:off",
        "peer 10.1.2.3:eth0 and 10.1.2.3:8080:x",
        "route 2001:db8::1:eth0 via fd00::5, 2600::1 and fe80::1%eth0",
        "nic 52:54:00:ab:cd:ef of Prod-Db-17.corp.example.com",
        "mail alice.smith@corp.example.com, owner alice, ALICE",
        "/home/alice/results/prod-db-17.json",
    ]
    .iter()
    .map(|t| t.to_string())
    .collect()
}

/// Plants the corpus into the document at `p`: host name, kernel command
/// line, command line, warnings, plan (values and keys), series attributes
/// (values and keys), labels of loads.
fn plant(p: &Path) {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    let texts = texts();
    v["system"]["hostname"] = "prod-db-17.corp.example.com".into();
    v["system"]["cmdline"] =
        "root=/dev/disk/by-id/wd-5ecre7 ip=10.20.30.40::10.20.30.1:255.255.255.0:prod-db-17:eth0:off"
            .into();
    let cl = v["command_line"].as_array_mut().unwrap();
    cl.extend(texts.iter().map(|t| serde_json::Value::from(t.as_str())));
    let w = v["warnings"].as_array_mut().unwrap();
    w.extend(texts.iter().map(|t| serde_json::Value::from(t.as_str())));
    let plan = v["plan"].as_object_mut().unwrap();
    for (i, t) in texts.iter().enumerate() {
        plan.insert(format!("note{i}"), t.as_str().into());
    }
    plan.insert("PROD-DB-17".into(), "alice".into());
    plan.insert("alice@corp.example.com".into(), "10.1.2.3".into());
    for series in v["series"].as_array_mut().unwrap() {
        let a = series["attributes"].as_object_mut().unwrap();
        a.insert("prod-db-17".into(), texts[0].as_str().into());
        a.insert("fe80::1%eth0".into(), texts[2].as_str().into());
        a.insert("nic".into(), texts[3].as_str().into());
    }
    std::fs::write(p, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

/// The identifiers found in `text` (`what` names it in the failure).
fn leaks(text: &str) -> Vec<&'static str> {
    let t = text.to_lowercase();
    PLANTED.iter().copied().filter(|p| t.contains(p)).collect()
}

#[track_caller]
fn assert_clean(what: &str, text: &str, checked: &mut usize) {
    *checked += 1;
    let found = leaks(text);
    assert!(found.is_empty(), "{what} shows {found:?}:\n{text}");
}

/// The planted documents: a served directory whose path holds the user
/// name and the host name, files named after the host in several cases
/// and after the user.
fn corpus(root: &Path) -> (PathBuf, Vec<PathBuf>) {
    let dir = root.join("home/alice/prod-db-17-results");
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for name in ["prod-db-17", "PROD-DB-17-load", "alice-idle"] {
        let p = measured(&dir, name, &["cyclic", "-l", "300", "-i", "500us"]);
        plant(&p);
        files.push(p);
    }
    (dir, files)
}

#[test]
fn planted_identifiers_leave_no_trace_in_report_and_compare() {
    let root = tempfile::tempdir().unwrap();
    let (dir, files) = corpus(root.path());
    let out = root.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let f: Vec<&str> = files.iter().map(|p| s(p)).collect();
    let mut checked = 0;
    // Without --redact the corpus shows (so the checks below can fail).
    let html = out.join("plain.html");
    let o = run(&[&["report"], &f[..], &["-o", s(&html)]].concat());
    assert_eq!(o.code, 0, "{}", o.stderr);
    let plain = std::fs::read_to_string(&html).unwrap();
    let o = run(&[&["compare"], &f[..2]].concat());
    let seen = format!("{plain}{}", o.stdout);
    for p in PLANTED {
        assert!(
            seen.to_lowercase().contains(p),
            "{p} is not in the unredacted outputs"
        );
    }
    // report --redact: the page, its stdout and stderr; with a gate that
    // fails, its fail lines too.
    let html = out.join("report.html");
    let o = run(&[&["report", "--redact"], &f[..], &["-o", s(&html)]].concat());
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_clean(
        "report --redact page",
        &std::fs::read_to_string(&html).unwrap(),
        &mut checked,
    );
    assert_clean("report --redact stderr", &o.stderr, &mut checked);
    let junit = out.join("junit.xml");
    let o = run(&[
        &["report", "--redact"],
        &f[..],
        &["--fail-if", "max>1ns", "--junit", s(&junit)],
    ]
    .concat());
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert_clean("report --redact --fail-if stdout", &o.stdout, &mut checked);
    assert_clean("report --redact --fail-if stderr", &o.stderr, &mut checked);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_clean("report --redact --junit file", &xml, &mut checked);
    // compare --redact: text, and the page; every pair, and a run with a
    // copy of itself in another directory (named by its whole path then).
    let copy = root.path().join("home/alice/again");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(&files[0], copy.join("prod-db-17.json")).unwrap();
    let again = copy.join("prod-db-17.json");
    let mut pairs: Vec<[&str; 2]> = vec![[f[0], s(&again)]];
    for a in &f {
        for b in &f {
            if a != b {
                pairs.push([a, b]);
            }
        }
    }
    for pair in &pairs {
        let o = run(&[&["compare", "--redact"], &pair[..]].concat());
        assert!(o.code == 0, "{}", o.stderr);
        assert_clean("compare --redact stdout", &o.stdout, &mut checked);
        assert_clean("compare --redact stderr", &o.stderr, &mut checked);
        let html = out.join("compare.html");
        let o = run(&[&["compare", "--redact", "--html", s(&html)], &pair[..]].concat());
        assert!(o.code == 0, "{}", o.stderr);
        let page = std::fs::read_to_string(&html).unwrap();
        assert_clean("compare --redact --html page", &page, &mut checked);
        assert_clean("compare --redact --html stdout", &o.stdout, &mut checked);
    }
    eprintln!(
        "{} identifiers planted in {} documents in {}; {checked} outputs checked",
        PLANTED.len(),
        files.len(),
        dir.display()
    );
}

/// The `href="..."` targets of `page`.
fn links(page: &str) -> Vec<String> {
    page.split("href=\"")
        .skip(1)
        .filter_map(|r| r.split('"').next())
        .map(|l| l.trim_start_matches("../").to_string())
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.contains("://"))
        .collect()
}

#[test]
fn planted_identifiers_leave_no_trace_in_serve() {
    let root = tempfile::tempdir().unwrap();
    let (dir, files) = corpus(root.path());
    // A file the list skips, named after the host; and a plain copy.
    std::fs::write(dir.join("prod-db-17-broken.json"), "{\"x\": ").unwrap();
    let addr = common::free_addr();
    let child = common::serve_redacted(&dir, &addr);
    let get = |path: &str| {
        http(
            &addr,
            &format!("GET /{path} HTTP/1.1\r\nHost: {addr}\r\n\r\n"),
        )
    };
    let mut checked = 0;
    let mut seen = std::collections::BTreeSet::new();
    let mut todo = vec![String::new()];
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    while let Some(path) = todo.pop() {
        if !seen.insert(path.clone()) {
            continue;
        }
        let (code, head, body) = get(&path);
        assert_eq!(code, 200, "/{path}: {body}");
        assert_clean(&format!("/{path} head"), &head, &mut checked);
        assert_clean(&format!("/{path}"), &body, &mut checked);
        *kinds
            .entry(path.split('/').next().unwrap_or_default().to_string())
            .or_default() += 1;
        if head.contains("text/html") {
            todo.extend(links(&body).into_iter().filter(|l| !seen.contains(l)));
        }
    }
    for kind in ["", "base", "run", "raw", "compare"] {
        assert!(
            kinds.contains_key(kind),
            "no /{kind} page reached: {kinds:?}"
        );
    }
    assert!(
        kinds["compare"] >= files.len() * (files.len() - 1),
        "{kinds:?}"
    );
    // Error pages: the real names (no oracle for guessed host names), a
    // path outside, an unknown route.
    for path in [
        "run/prod-db-17.json",
        "raw/prod-db-17-broken.json",
        "compare/prod-db-17.json/alice-idle.json",
        "run/..%2F..%2Fprod-db-17-results%2Fprod-db-17.json",
        "nope/prod-db-17",
    ] {
        let (code, head, body) = get(path);
        assert!((400..500).contains(&code), "/{path}: {code}");
        assert_clean(&format!("/{path} head"), &head, &mut checked);
        // The answer may repeat the request's own path, not more.
        assert_clean(&format!("/{path}"), &body.replace(path, ""), &mut checked);
    }
    child.interrupt(LIMIT).exits(0);
    eprintln!("{} pages and errors checked: {kinds:?}", checked / 2);
}
