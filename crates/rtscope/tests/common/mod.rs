//! Helpers shared by the integration-test binaries. A test starts rtscope
//! with [`Run`] (run.rs): its own temporary directory, every wait bounded, a
//! child killed and its stderr shown when a limit runs out, SIGINT, the
//! document read and validated. The rest: schemas, one-line errors, turns
//! (`alone`/`alongside`), tracefs look-ups, peers (`tool`, `chromium`, HTTP),
//! and the helpers of the tests that read results.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

mod run;
#[allow(unused_imports)]
pub use run::{Ran, Run, Spawned, LIMIT};

/// Path of the rtscope binary (for a test that starts it in a terminal).
pub fn rtscope_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("rtscope")
}

/// Validates a document against the JSON Schema `docs/<schema>`; panics with
/// every violation listed.
pub fn assert_valid(doc: &serde_json::Value, schema: &str) {
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(schema);
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&schema_path).expect("schema readable"))
            .expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "schema violations:\n{}",
        errors.join("\n")
    );
}

/// Reads and validates a result file.
pub fn read_result(path: &Path) -> serde_json::Value {
    read_valid(path, "result-schema.json")
}

/// Reads a JSON file and validates it against the JSON Schema `docs/<schema>`.
pub fn read_valid(path: &Path, schema: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
    assert_valid(&v, schema);
    v
}

/// Asserts that stderr is exactly one non-empty line.
pub fn assert_one_line(stderr: &[u8]) -> String {
    let s = String::from_utf8_lossy(stderr).to_string();
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr, got: {s:?}");
    s
}

/// Whether `taskset` runs here; with CI set, a missing one fails the test.
pub fn taskset_runs() -> bool {
    match std::process::Command::new("taskset").arg("-V").output() {
        Ok(_) => true,
        Err(e) => {
            assert!(std::env::var_os("CI").is_none(), "taskset: {e}");
            eprintln!("taskset not runnable here ({e}): skipped");
            false
        }
    }
}

/// Whether process `pid` has a handler for SIGINT (`SigCgt` in its status);
/// false once it is gone.
pub fn catches_sigint(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    let caught = status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    caught & (1 << (libc::SIGINT - 1)) != 0
}

/// Tests that fill every CPU with real-time threads take their turn alone
/// within their test binary ([`alone`]); the other tests of that binary run
/// alongside each other ([`alongside`]), never beside such a test, whose
/// threads would starve them (a checkpoint, a SIGINT, a time limit).
static EVERY_CPU: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// The turn of a test that fills every CPU: no other test of its binary that
/// takes [`alongside`] runs meanwhile.
pub fn alone() -> std::sync::RwLockWriteGuard<'static, ()> {
    EVERY_CPU.write().unwrap_or_else(|e| e.into_inner())
}

/// The turn of an ordinary test: with the others, never with one [`alone`].
pub fn alongside() -> std::sync::RwLockReadGuard<'static, ()> {
    EVERY_CPU.read().unwrap_or_else(|e| e.into_inner())
}

/// Online CPUs as a `-a` list (`0-1`).
pub fn every_cpu() -> String {
    rtscope_core::units::format_cpu_list(&rtscope_core::units::online_cpus())
}

/// The tracing directories of every tracefs mount this process sees.
fn tracefs_dirs() -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains(" - tracefs "))
        .map(|l| l.split_whitespace().nth(4).unwrap().to_string())
        .collect()
}

/// The trace instances process `pid` made (`rtscope-PID-*`) under any
/// tracefs mount: a test looks at its own child's, never at other runs'.
pub fn instances_of(pid: u32) -> Vec<String> {
    let prefix = format!("rtscope-{pid}-");
    let mut v = Vec::new();
    for m in tracefs_dirs() {
        if let Ok(rd) = std::fs::read_dir(format!("{m}/instances")) {
            v.extend(
                rd.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(&prefix)),
            );
        }
    }
    v
}

/// The private tracefs mounts process `pid` made and left mounted.
pub fn own_tracefs_mounts_of(pid: u32) -> Vec<String> {
    let prefix = rtscope_core::trace::own_mount_prefix(pid);
    tracefs_dirs()
        .into_iter()
        .filter(|m| {
            std::path::Path::new(m)
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
        })
        .collect()
}

/// Sends `request` to `addr` and reads the answer to its end (5 s at most
/// between reads): status (0 where none came), head, body.
pub fn http(addr: &str, request: &str) -> (u16, String, String) {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return (0, String::new(), String::new());
    };
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    if s.write_all(request.as_bytes()).is_err() {
        return (0, String::new(), String::new());
    }
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    let (head, body) = buf.split_once("\r\n\r\n").unwrap_or((&buf, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

/// A free loopback address (taken, released, given to a server).
pub fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// `rtscope serve --redact --listen ADDR DIR`, once it serves.
pub fn serve_redacted(dir: &Path, addr: &str) -> Spawned {
    let mut child = Run::new(["serve", "--redact", "--listen", addr])
        .arg(dir)
        .spawn();
    child.wait_for_line(false, std::time::Duration::from_secs(30), |l| {
        l.starts_with("serving the results").then_some(())
    });
    child
}

/// Whether a tool is on PATH; with CI set, a missing one fails the test
/// (.ci/run installs it: a skip there would hide a regression).
pub fn tool(name: &str) -> bool {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{name} is not installed, and CI is set (.ci/run installs it)"
        );
        eprintln!("skipped: {name} is not installed");
    }
    found
}

/// Makes a FIFO at `path`.
pub fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo {}", path.display());
}

/// What headless Chromium made of a page: its exit status, the serialised
/// DOM, and the console messages it logged.
pub struct Chromium {
    pub status: std::process::ExitStatus,
    pub dom: String,
    pub console: Vec<String>,
    pub stderr: String,
}

/// Loads `url` in headless Chromium (`program`) with `flags` besides the
/// usual ones; nothing is checked here.
pub fn chromium(program: &str, flags: &[&str], url: &str) -> Chromium {
    let o = std::process::Command::new(program)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .args(flags)
        .arg(url)
        .output()
        .expect("chromium runs");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    // Chromium logs every console message (errors, CSP violations, SVG
    // attribute errors) as `INFO:CONSOLE...] "text", source: URL (line)`.
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    Chromium {
        status: o.status,
        dom: String::from_utf8_lossy(&o.stdout).into_owned(),
        console,
        stderr,
    }
}

// The helpers of the tests that read results (report, compare, import).

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A finished run as text: exit code (-1 for a signal), stdout, stderr.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Ran> for Out {
    fn from(r: Ran) -> Out {
        Out {
            code: r.code(),
            stdout: r.stdout(),
            stderr: r.stderr(),
        }
    }
}

/// Runs rtscope with `args` (within [`LIMIT`]), whatever its exit.
pub fn run(args: &[&str]) -> Out {
    Run::new(args).ran().into()
}

/// Runs rtscope with `args` (within [`LIMIT`]) and checks exit 0 (its
/// stderr shown if not).
#[track_caller]
pub fn run_ok(args: &[&str]) -> Out {
    Run::new(args).exits(0).into()
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

pub fn import(kind: &str, input: &Path, out: &Path) -> rtscope_core::result::ResultDocument {
    let o = run_ok(&["import", "cyclictest", kind, s(input), "-o", s(out)]);
    assert!(o.stdout.contains("imported 3 series"), "{}", o.stdout);
    read_result(out);
    rtscope_core::result::ResultDocument::read(out).unwrap()
}

/// Runs rtscope `args` writing `-q --json DIR/NAME.json`; where it may not
/// use real-time priority (exit 1), again with `--no-rt`. Checks exit 0;
/// returns the document's path.
pub fn measured(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let json = dir.join(format!("{name}.json"));
    let run = || Run::new(args).arg("-q").arg("--json").arg(&json);
    let first = run().ran();
    if first.code() == 1 {
        run().arg("--no-rt").exits(0);
    } else {
        first.exits(0);
    }
    json
}

/// A real short cyclic run (SCHED_FIFO where allowed, else --no-rt).
pub fn real_run(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let mut args = vec!["cyclic", "-l", "400", "-i", "500us"];
    args.extend_from_slice(extra);
    measured(dir, name, &args)
}

pub fn one_line_usage_error(o: &Out) {
    assert_eq!(o.code, 2, "stdout {} stderr {}", o.stdout, o.stderr);
    assert_eq!(o.stderr.trim_end().lines().count(), 1, "{}", o.stderr);
    assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
}
