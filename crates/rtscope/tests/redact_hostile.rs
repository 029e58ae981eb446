//! `--redact`, `serve` and `--listen` against what a hostile or unlucky
//! user gives them: a machine named like one of rtscope's own words, device
//! serials outside the kernel command line, a served directory under the
//! user's home, `--allow-host` arguments that are no host, port 0.

mod common;

use std::path::Path;

use common::{measured, run, run_ok, s};

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
