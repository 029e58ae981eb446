//! One way to start rtscope in a test, signal it and read what it made.
//!
//! [`Run`] says what to start (arguments, environment, a wrapper such as
//! `taskset`) and owns a fresh temporary directory for the files the run
//! writes ([`Run::json`], [`Run::out`], [`Run::path`]). [`Run::spawn`] starts
//! it as a [`Spawned`] child, which a test can signal ([`Spawned::sigint`],
//! [`Spawned::sigint_after`]) and wait on ([`Spawned::wait_for`],
//! [`Spawned::wait_for_line`], [`Spawned::wait_within`]); a finished run is a
//! [`Ran`]: its [`Output`] (through `Deref`), its exit code checked with
//! [`Ran::exits`], its document read and validated with [`Ran::document`].
//!
//! Nothing here hangs: every wait has a limit ([`LIMIT`] where the test names
//! none), and when one runs out the child is killed and the test fails with
//! the command and what the child wrote to stderr so far. A [`Spawned`] that
//! is dropped while its child runs (a failed assertion) kills the child.
//! Stdout and stderr are read as the child writes them, so a child that
//! writes much never blocks on a full pipe, and a test can wait for a line.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a run may take where the test names no limit: the bound of a
/// hang, far above what any of these short runs takes on a busy machine.
pub const LIMIT: Duration = Duration::from_secs(300);

/// How long a run may take to catch SIGINT once started (a loaded machine
/// can take seconds to start it).
const CATCH_LIMIT: Duration = Duration::from_secs(30);

/// How long the child's output may stay open after it ended (held by a
/// process it started that outlives it).
const OUTPUT_LIMIT: Duration = Duration::from_secs(30);

/// How often the waits look again.
const POLL: Duration = Duration::from_millis(10);

/// The file [`Run::json`] names.
const RESULT: &str = "result.json";

/// A change to the [`Command`] before it starts.
type Setup = Box<dyn FnOnce(&mut Command)>;

/// What to start: rtscope with arguments, in its own temporary directory.
pub struct Run {
    wrapper: Vec<OsString>,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    stdout_closed: bool,
    current_dir: Option<PathBuf>,
    setup: Vec<Setup>,
    dir: tempfile::TempDir,
    json: Option<PathBuf>,
}

impl Run {
    /// rtscope with `args`, and a fresh temporary directory.
    pub fn new<I, S>(args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Run {
            wrapper: Vec::new(),
            args: args.into_iter().map(|a| a.as_ref().to_owned()).collect(),
            envs: Vec::new(),
            stdout_closed: false,
            current_dir: None,
            setup: Vec::new(),
            dir: tempfile::tempdir().expect("temporary directory"),
            json: None,
        }
    }

    /// One argument more.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Run {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Arguments more.
    pub fn args<I, S>(mut self, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// `--json DIR/result.json`: the document [`Ran::document`] reads.
    pub fn json(self) -> Run {
        let path = self.path(RESULT);
        let mut run = self.arg("--json").arg(&path);
        run.json = Some(path);
        run
    }

    /// `flag DIR/name`: an output file in the run's directory, read back
    /// with [`Ran::path`] (or [`Ran::read`]).
    pub fn out(self, flag: &str, name: &str) -> Run {
        let path = self.path(name);
        self.arg(flag).arg(path)
    }

    /// An environment variable for the child.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Run {
        self.envs
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Closes the reading end of the child's stdout at once: its writes
    /// there fail (EPIPE), as when a pipe's reader has gone. (Its stdin is
    /// always empty, `/dev/null`.)
    pub fn stdout_closed(mut self) -> Run {
        self.stdout_closed = true;
        self
    }

    /// The child's working directory.
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Run {
        self.current_dir = Some(dir.as_ref().to_owned());
        self
    }

    /// Starts rtscope through `wrapper` (`["taskset", "-c", "0"]`): the
    /// wrapper's words, then rtscope's path and arguments.
    pub fn under<I, S>(mut self, wrapper: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.wrapper = wrapper.into_iter().map(|a| a.as_ref().to_owned()).collect();
        self
    }

    /// Starts rtscope as the user nobody (`setpriv`, no groups): no
    /// privilege, no real-time priority.
    pub fn by_nobody(self) -> Run {
        self.under([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ])
    }

    /// Anything else the [`Command`] needs before it starts (its own process
    /// group, a `pre_exec`).
    pub fn setup(mut self, f: impl FnOnce(&mut Command) + 'static) -> Run {
        self.setup.push(Box::new(f));
        self
    }

    /// The run's own temporary directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `name` in the run's own temporary directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Where [`Run::json`] has the document written.
    pub fn json_path(&self) -> PathBuf {
        self.path(RESULT)
    }

    /// The command line, for messages.
    fn what(&self) -> String {
        let words: Vec<String> = self
            .wrapper
            .iter()
            .chain(std::iter::once(&OsString::from("rtscope")))
            .chain(&self.args)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        words.join(" ")
    }

    /// Starts the child, its stdout and stderr read as it writes them.
    pub fn spawn(self) -> Spawned {
        let what = self.what();
        let mut cmd = match self.wrapper.split_first() {
            Some((program, words)) => {
                let mut c = Command::new(program);
                c.args(words).arg(super::rtscope_path());
                c
            }
            None => Command::new(super::rtscope_path()),
        };
        // Each run its own user-space hwlat lock: another test's run (or
        // another `cargo test` beside this one) is not refused as a second
        // run. A test that means to share one sets it with `env`.
        cmd.args(&self.args)
            .env(
                "RTSCOPE_HWLAT_LOCK",
                self.dir.path().join("hwlat-user.lock"),
            )
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(d) = &self.current_dir {
            cmd.current_dir(d);
        }
        for f in self.setup {
            f(&mut cmd);
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let out_pipe = child.stdout.take().expect("stdout piped");
        let mut readers = vec![collect(child.stderr.take().expect("stderr piped"), &stderr)];
        if self.stdout_closed {
            drop(out_pipe);
        } else {
            readers.push(collect(out_pipe, &stdout));
        }
        Spawned {
            pid: child.id(),
            child: Some(child),
            what,
            stdout,
            stderr,
            readers,
            dir: Some(self.dir),
            json: self.json,
        }
    }

    /// Starts the run and waits for it at most `limit`.
    pub fn wait_within(self, limit: Duration) -> Ran {
        self.spawn().wait_within(limit)
    }

    /// Runs it (within [`LIMIT`]) and asserts that it exited with `code`,
    /// showing its stderr if not.
    #[track_caller]
    pub fn exits(self, code: i32) -> Ran {
        self.wait_within(LIMIT).exits(code)
    }

    /// Runs it (within [`LIMIT`]), whatever its exit.
    pub fn ran(self) -> Ran {
        self.wait_within(LIMIT)
    }

    /// Starts it, sends SIGINT `after` it catches SIGINT, and waits at most
    /// `limit` for it to end; also how long it took to end after the signal.
    pub fn interrupt_after(self, after: Duration, limit: Duration) -> (Ran, Duration) {
        let mut child = self.spawn();
        let sent = child.sigint_after(after);
        let ran = child.wait_within(limit);
        (ran, sent.elapsed())
    }
}

/// Appends what `from` yields to `to` until its end, in a thread.
fn collect(mut from: impl Read + Send + 'static, to: &Arc<Mutex<Vec<u8>>>) -> JoinHandle<()> {
    let to = Arc::clone(to);
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            to.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    })
}

/// A started rtscope child. Dropped while it runs, it is killed.
pub struct Spawned {
    child: Option<Child>,
    pid: u32,
    what: String,
    stdout: Arc<Mutex<Vec<u8>>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    readers: Vec<JoinHandle<()>>,
    dir: Option<tempfile::TempDir>,
    json: Option<PathBuf>,
}

impl Spawned {
    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// The child's process id, as `kill` takes it.
    pub fn pid(&self) -> i32 {
        self.pid as i32
    }

    /// `name` in the run's own temporary directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.as_ref().expect("directory kept").path().join(name)
    }

    /// Where [`Run::json`] has the document written.
    pub fn json_path(&self) -> PathBuf {
        self.path(RESULT)
    }

    /// The document as it stands now (a checkpoint), validated.
    pub fn document(&self) -> serde_json::Value {
        super::read_result(self.json.as_ref().expect("the run was given .json()"))
    }

    /// What the child wrote to stdout so far.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout.lock().unwrap()).into_owned()
    }

    /// What the child wrote to stderr so far.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// Sends `signal` to the child.
    pub fn signal(&self, signal: i32) {
        rtscope_core::sys::kill(self.pid(), signal)
            .unwrap_or_else(|e| panic!("{}: signal {signal}: {e}", self.what));
    }

    /// Sends SIGINT to the child.
    pub fn sigint(&self) {
        self.signal(libc::SIGINT);
    }

    /// Waits until the child catches SIGINT (a signal before that would
    /// kill it), at most 30 s.
    pub fn catches_sigint(&mut self) {
        let pid = self.pid;
        self.wait_for("a SIGINT handler", CATCH_LIMIT, || {
            super::catches_sigint(pid)
        });
    }

    /// Sends SIGINT `after` the child catches SIGINT (counted from then: on
    /// a loaded machine the start alone can take longer); returns when it
    /// was sent.
    pub fn sigint_after(&mut self, after: Duration) -> Instant {
        self.catches_sigint();
        std::thread::sleep(after);
        let sent = Instant::now();
        self.sigint();
        sent
    }

    /// Whether the child has ended (reaped then, its status kept).
    fn ended(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .expect("not yet waited on")
            .try_wait()
            .unwrap_or_else(|e| panic!("{}: wait: {e}", self.what))
    }

    /// Whether the child still runs.
    pub fn running(&mut self) -> bool {
        self.ended().is_none()
    }

    /// Kills the child and fails the test, naming the command, `why`, and
    /// what the child wrote to stderr.
    #[track_caller]
    fn fail(&mut self, why: &str) -> ! {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
        panic!("{}: {why}\nstderr:\n{}", self.what, self.stderr());
    }

    /// Polls `ready` until it holds, while the child runs, at most `limit`;
    /// fails (the child killed, its stderr shown) if the child ends first or
    /// the limit runs out.
    #[track_caller]
    pub fn wait_for(&mut self, what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
        let t0 = Instant::now();
        loop {
            if ready() {
                return;
            }
            if let Some(status) = self.ended() {
                // It may have become true just before the end.
                if ready() {
                    return;
                }
                self.fail(&format!("ended ({status}) before {what}"));
            }
            if t0.elapsed() > limit {
                self.fail(&format!("no {what} within {limit:?}"));
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits (at most `limit`) until `path` exists.
    #[track_caller]
    pub fn wait_for_file(&mut self, path: &Path, limit: Duration) {
        let what = format!("file {}", path.display());
        self.wait_for(&what, limit, || path.exists());
    }

    /// Waits (at most `limit`) for a line of stderr (`on_stderr`) or stdout
    /// for which `pick` gives a value, and returns that value.
    #[track_caller]
    pub fn wait_for_line<T>(
        &mut self,
        on_stderr: bool,
        limit: Duration,
        mut pick: impl FnMut(&str) -> Option<T>,
    ) -> T {
        let stream = Arc::clone(if on_stderr {
            &self.stderr
        } else {
            &self.stdout
        });
        let mut found = None;
        self.wait_for("the line waited for", limit, || {
            let text = String::from_utf8_lossy(&stream.lock().unwrap()).into_owned();
            // Only whole lines: one being written may not say all yet.
            found = text
                .split_inclusive('\n')
                .filter(|l| l.ends_with('\n'))
                .find_map(|l| pick(l.trim_end_matches('\n')));
            found.is_some()
        });
        found.expect("found")
    }

    /// The address (`127.0.0.1:PORT`) of the child's `listening on
    /// http://ADDR/` line on stderr, waited for at most 30 s.
    #[track_caller]
    pub fn listening_on(&mut self) -> String {
        self.wait_for_line(true, Duration::from_secs(30), |l| {
            let rest = l.strip_prefix("listening on http://")?;
            rest.contains('/')
                .then(|| rest.split('/').next().unwrap_or_default().to_string())
        })
    }

    /// Waits for the child to end, at most `limit`, and for its output;
    /// past the limit the child is killed and the test fails.
    #[track_caller]
    pub fn wait_within(self, limit: Duration) -> Ran {
        self.finish(limit, false)
    }

    /// Waits for the child to end, at most `limit`; past it the child is
    /// killed (SIGKILL, which its status then says), and how it ended is
    /// returned all the same, for a test that reports an overrun itself.
    #[track_caller]
    pub fn end_within(self, limit: Duration) -> Ran {
        self.finish(limit, true)
    }

    #[track_caller]
    fn finish(mut self, limit: Duration, kill_at_limit: bool) -> Ran {
        let t0 = Instant::now();
        let status = loop {
            if let Some(status) = self.ended() {
                break status;
            }
            if t0.elapsed() > limit {
                if !kill_at_limit {
                    self.fail(&format!("still running after {limit:?}"));
                }
                let c = self.child.as_mut().expect("not yet waited on");
                let _ = c.kill();
                break c.wait().expect("wait for the killed child");
            }
            std::thread::sleep(POLL);
        };
        // Its output ends when every process that holds the pipes has
        // (at once where nothing it started outlives it).
        let ended = Instant::now();
        while !self.readers.iter().all(JoinHandle::is_finished) {
            if ended.elapsed() > OUTPUT_LIMIT {
                panic!(
                    "{}: ended ({status}), but something it started still holds its output {OUTPUT_LIMIT:?} later\nstderr:\n{}",
                    self.what,
                    self.stderr()
                );
            }
            std::thread::sleep(POLL);
        }
        for r in self.readers.drain(..) {
            r.join().expect("output reader");
        }
        self.child = None;
        let out = Output {
            status,
            stdout: std::mem::take(&mut *self.stdout.lock().unwrap()),
            stderr: std::mem::take(&mut *self.stderr.lock().unwrap()),
        };
        Ran {
            out,
            pid: self.pid,
            what: std::mem::take(&mut self.what),
            dir: self.dir.take().expect("directory kept"),
            json: self.json.take(),
        }
    }

    /// Sends SIGINT and waits at most `limit` for the end.
    #[track_caller]
    pub fn interrupt(self, limit: Duration) -> Ran {
        self.sigint();
        self.wait_within(limit)
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A finished run: its output (`Deref` to [`Output`]), its directory and
/// document.
pub struct Ran {
    pub out: Output,
    pid: u32,
    what: String,
    dir: tempfile::TempDir,
    json: Option<PathBuf>,
}

impl Deref for Ran {
    type Target = Output;
    fn deref(&self) -> &Output {
        &self.out
    }
}

impl Ran {
    /// Asserts that it exited with `code`, showing the command and its
    /// stderr if not.
    #[track_caller]
    pub fn exits(self, code: i32) -> Ran {
        assert_eq!(
            self.out.status.code(),
            Some(code),
            "{}: {}\nstderr:\n{}",
            self.what,
            self.out.status,
            self.stderr()
        );
        self
    }

    /// Asserts that stderr is exactly one line, not empty and no panic;
    /// returns stderr.
    #[track_caller]
    pub fn one_line(&self) -> String {
        let e = super::assert_one_line(&self.out.stderr);
        assert_eq!(e.trim_end().lines().count(), 1, "{}: {e}", self.what);
        assert!(!e.contains("panicked"), "{}: {e}", self.what);
        e
    }

    /// Its exit code (-1 if a signal ended it).
    pub fn code(&self) -> i32 {
        self.out.status.code().unwrap_or(-1)
    }

    /// Its stdout.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }

    /// Its stderr.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }

    /// The process id it had.
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// The document of [`Run::json`], read and validated against
    /// docs/result-schema.json.
    #[track_caller]
    pub fn document(&self) -> serde_json::Value {
        super::read_result(self.json.as_ref().expect("the run was given .json()"))
    }

    /// The run's own temporary directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `name` in the run's own temporary directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Where [`Run::json`] had the document written.
    pub fn json_path(&self) -> PathBuf {
        self.path(RESULT)
    }

    /// The text of `name` in the run's directory.
    #[track_caller]
    pub fn read(&self, name: &str) -> String {
        let p = self.path(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }
}
