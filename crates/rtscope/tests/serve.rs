//! `rtscope serve` and `--listen` as a server one could expose on a fleet's
//! dashboard host: only result documents are served, files are
//! streamed within a size cap, DNS-rebinding `Host` headers are refused,
//! `/metrics` names the run from its first scrape; and the outputs a fleet
//! reads: `--stream -` is nothing but JSON lines on stdout, result documents
//! are written with the umask's mode. Each test looks only at the rtscope it
//! started; none checks a timing.

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use common::{http, Run, Spawned, LIMIT};

use common::free_addr;

/// `rtscope serve DIR` with `extra` options, once it says it serves.
fn serving(dir: &Path, extra: &[&str]) -> (Spawned, String) {
    let addr = free_addr();
    let mut child = Run::new(["serve", "--listen", &addr])
        .args(extra)
        .arg(dir)
        .spawn();
    let line = child.wait_for_line(false, Duration::from_secs(30), |l| Some(l.to_string()));
    assert!(line.starts_with("serving the results in"), "{line}");
    (child, addr)
}

fn get(addr: &str, path: &str) -> (u16, String, String) {
    http(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n"),
    )
}

/// A short real run's document, `NAME.json` in `dir`.
fn result_in(dir: &Path, name: &str) -> std::path::PathBuf {
    let p = dir.join(format!("{name}.json"));
    Run::new(["cyclic", "--no-rt", "-t", "1", "-l", "100", "-q", "--json"])
        .arg(&p)
        .exits(0);
    p
}

#[test]
fn only_the_results_the_list_shows_are_served() {
    let d = tempfile::tempdir().unwrap();
    let run = result_in(d.path(), "run");
    // Valid JSON that is no result document, as a secret would be kept.
    std::fs::write(
        d.path().join("notes.json"),
        "{\"note\": \"secret-token=hunter2\"}",
    )
    .unwrap();
    std::fs::write(d.path().join("broken.json"), "{\"schema_version\": 3,").unwrap();
    // A symlink to a result, in DIR: the list leaves it out, so must the rest.
    std::os::unix::fs::symlink(&run, d.path().join("link.json")).unwrap();
    let (child, addr) = serving(d.path(), &[]);
    let (code, _, list) = get(&addr, "/");
    assert_eq!(code, 200);
    assert!(list.contains("run.json"), "{list}");
    for hidden in ["notes.json", "broken.json", "link.json"] {
        assert!(!list.contains(hidden), "{hidden} listed: {list}");
        for page in ["raw", "run", "base"] {
            let (code, _, body) = get(&addr, &format!("/{page}/{hidden}"));
            assert_eq!(code, 404, "/{page}/{hidden}: {body}");
            assert!(!body.contains("hunter2"), "/{page}/{hidden}: {body}");
        }
        let (code, _, _) = get(&addr, &format!("/compare/run.json/{hidden}"));
        assert_eq!(code, 404, "/compare/run.json/{hidden}");
    }
    // The result itself, byte for byte, with its length.
    let (code, head, body) = get(&addr, "/raw/run.json");
    assert_eq!(code, 200);
    let file = std::fs::read_to_string(&run).unwrap();
    assert_eq!(body, file);
    assert!(
        head.contains(&format!("\r\nContent-Length: {}", file.len())),
        "{head}"
    );
    // A file rewritten as a non-result after it was listed is not served.
    std::fs::write(&run, "{\"token\": \"hunter2\", \"padding\": 1}").unwrap();
    let (code, _, body) = get(&addr, "/raw/run.json");
    assert_eq!(code, 404, "{body}");
    assert!(!body.contains("hunter2"));
    child.interrupt(LIMIT).exits(0);
}

#[test]
fn a_file_over_256_mib_is_neither_read_nor_served() {
    let d = tempfile::tempdir().unwrap();
    result_in(d.path(), "small");
    // Sparse: 2 GiB that take no disk (and, served, would take 2 GiB of
    // memory if read whole).
    let big = std::fs::File::create(d.path().join("big.json")).unwrap();
    (&big)
        .write_all(b"{\"schema_version\": 3, \"x\": \"")
        .unwrap();
    big.set_len(2 << 30).unwrap();
    let (child, addr) = serving(d.path(), &[]);
    let (code, _, list) = get(&addr, "/");
    assert_eq!(code, 200);
    assert!(list.contains("small.json"), "{list}");
    assert!(!list.contains("big.json"), "{list}");
    assert!(list.contains("1 file over 256 MiB left out"), "{list}");
    for page in [
        "/raw/big.json",
        "/run/big.json",
        "/compare/small.json/big.json",
    ] {
        let (code, _, body) = get(&addr, page);
        assert_eq!(code, 413, "{page}: {body}");
        assert_eq!(
            body,
            "too large: result documents over 256 MiB are not served\n"
        );
    }
    child.interrupt(LIMIT).exits(0);
}

/// A client that asks for a file and reads only its beginning leaves the
/// server answering others; the file it gets is the file.
#[test]
fn a_raw_file_is_streamed_to_a_slow_reader() {
    let d = tempfile::tempdir().unwrap();
    let run = result_in(d.path(), "run");
    let want = std::fs::read(&run).unwrap();
    let (child, addr) = serving(d.path(), &[]);
    let mut slow = std::net::TcpStream::connect(&addr).unwrap();
    slow.write_all(b"GET /raw/run.json HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut first = [0u8; 64];
    slow.read_exact(&mut first).unwrap();
    assert!(first.starts_with(b"HTTP/1.1 200"));
    assert_eq!(get(&addr, "/").0, 200);
    let mut rest = vec![];
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    slow.read_to_end(&mut rest).unwrap();
    let all = [&first[..], &rest[..]].concat();
    let at = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(&all[at..], &want[..]);
    child.interrupt(LIMIT).exits(0);
}

#[test]
fn dns_rebinding_host_headers_are_refused() {
    let d = tempfile::tempdir().unwrap();
    result_in(d.path(), "run");
    let (child, addr) = serving(d.path(), &["--allow-host", "dash.example.org"]);
    let port = addr.rsplit(':').next().unwrap();
    let with_host = |path: &str, host: &str| {
        http(
            &addr,
            &format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n"),
        )
    };
    for ok in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        "localhost".into(),
        "dash.example.org".into(),
    ] {
        let (code, _, body) = with_host("/raw/run.json", &ok);
        assert_eq!(code, 200, "{ok}: {body}");
    }
    for bad in [
        format!("evil.example:{port}"),
        "attacker.example".into(),
        format!("192.0.2.7:{port}"),
        "dash.example.org.evil.example".into(),
    ] {
        for path in ["/", "/raw/run.json"] {
            let (code, _, body) = with_host(path, &bad);
            assert_eq!(code, 421, "{bad} {path}: {body}");
            assert!(!body.contains("run.json") && !body.contains("schema_version"));
        }
    }
    child.interrupt(LIMIT).exits(0);

    // The live endpoint of a run, the same.
    let mut run = Run::new([
        "cyclic",
        "--no-rt",
        "-t",
        "1",
        "-D",
        "60s",
        "--listen",
        "127.0.0.1:0",
    ])
    .spawn();
    let addr = run.listening_on();
    let (code, _, body) = http(&addr, "GET /metrics HTTP/1.1\r\nHost: evil.example\r\n\r\n");
    assert_eq!(code, 421, "{body}");
    assert!(!body.contains("rtscope_"), "{body}");
    let (code, _, _) = http(&addr, "GET /metrics HTTP/1.1\r\nHost: [::1]\r\n\r\n");
    assert_eq!(code, 200);
    run.interrupt(LIMIT).exits(0);

    // Bad --allow-host: one line, exit 2.
    for bad in [
        vec!["serve", "--allow-host", "a.example:99999", "."],
        vec!["serve", "--allow-host", "a b", "."],
        vec!["cyclic", "--no-rt", "-l", "10", "--allow-host", "a.example"],
    ] {
        let o = Run::new(&bad).exits(2);
        assert_eq!(
            o.stderr().trim_end().lines().count(),
            1,
            "{bad:?}: {}",
            o.stderr()
        );
        assert!(o.stderr().contains("--allow-host"), "{}", o.stderr());
    }
}

/// The first scrape, as soon as the server listens (before the run's first
/// snapshot): the run and its series, counters at 0, not an empty answer.
#[test]
fn metrics_name_the_run_from_the_first_scrape() {
    for (accept, end) in [
        ("", ""),
        ("Accept: application/openmetrics-text\r\n", "# EOF\n"),
    ] {
        let mut run = Run::new([
            "cyclic",
            "--no-rt",
            "-t",
            "1",
            "-D",
            "60s",
            "--listen",
            "127.0.0.1:0",
        ])
        .spawn();
        let addr = run.listening_on();
        let (code, _, body) = http(
            &addr,
            &format!("GET /metrics HTTP/1.1\r\nHost: localhost\r\n{accept}\r\n"),
        );
        assert_eq!(code, 200);
        assert!(
            body.contains("\nrtscope_run_info{experiment=\"cyclic\",host=\""),
            "{body}"
        );
        assert!(
            body.contains("\nrtscope_samples_total{series=\"thread 0\"} "),
            "{body}"
        );
        assert!(
            body.contains("\nrtscope_overruns_total{series=\"thread 0\"} "),
            "{body}"
        );
        assert!(body.ends_with(end), "{body}");
        run.interrupt(LIMIT).exits(0);
    }
}

/// `rtscope cyclic --stream - | jq`: every line of stdout is a JSON object
/// (snapshots, then the final one); the summary is on stderr.
#[test]
fn stream_to_stdout_is_nothing_but_json_lines() {
    for every in ["200ms", "0"] {
        let r = Run::new([
            "cyclic", "--no-rt", "-t", "1", "-l", "400", "-i", "1ms", "--stream", "-",
        ])
        .args(["--stream-every", every])
        .exits(0);
        let out = r.stdout();
        assert!(out.lines().count() >= 2, "{every}: {out}");
        for (i, line) in out.lines().enumerate() {
            let v: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{every}: line {} is not JSON ({e}): {line:?}", i + 1));
            assert!(v.is_object(), "{line}");
        }
        assert!(out.ends_with('\n'));
        assert!(
            r.stderr().contains("cyclic run,") && r.stderr().contains("thread 0"),
            "the summary goes to stderr: {}",
            r.stderr()
        );
    }
}

/// The mode of a file.
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// Result documents and reports are created 0666 less the umask, as any
/// file: with the unit's `UMask=0027` they are not readable by others.
#[test]
fn result_files_honour_the_umask() {
    for (umask, want) in [(0o027u32, 0o640u32), (0o022, 0o644), (0o077, 0o600)] {
        let r = Run::new(["cyclic", "--no-rt", "-t", "1", "-l", "50", "-q"])
            .out("--json", "r.json")
            .out("--report", "r.html")
            .setup(move |c| {
                use std::os::unix::process::CommandExt;
                // SAFETY: umask is async-signal-safe and touches only the child.
                unsafe {
                    c.pre_exec(move || {
                        libc::umask(umask as libc::mode_t);
                        Ok(())
                    });
                }
            })
            .exits(0);
        for f in ["r.json", "r.html"] {
            assert_eq!(
                mode(&r.path(f)),
                want,
                "{f} under umask {umask:03o}: {:03o}",
                mode(&r.path(f))
            );
        }
    }
}
