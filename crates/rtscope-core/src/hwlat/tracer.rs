//! The kernel's hwlat tracer, taken for one run and given back as it was.
//!
//! hwlat runs only as the top-level tracer (`current_tracer`), one for the
//! whole machine, so rtscope never takes it from someone else: another tracer
//! (anything but `nop`), or trace events enabled at the top level, is a
//! refusal that names it ([`HwlatError::Busy`], [`HwlatError::EventsEnabled`]).
//!
//! [`Tracer::start`] reads every file it is going to change, writes them to a
//! state file (so that the next run can give back what a run killed outright
//! left: [`Tracefs::recover`]), registers them for [`restore_active`] (a
//! second Ctrl-C ends the process without unwinding: the signal handler calls
//! it before `exit`), then sets the tracer up:
//!
//! ```text
//! tracing_on 0 ─► current_tracer hwlat ─► tracing_thresh ─► hwlat_detector/{width,window}
//!   ─► hwlat_detector/mode ─► tracing_cpumask ─► tracing_max_latency 0 ─► tracing_on 1
//! ```
//!
//! (`tracing_thresh` after the tracer: setting hwlat saves the threshold in
//! force and puts it back when the tracer is unset.) [`Tracer::finish`], or
//! dropping the tracer on any other way out (an error, a panic that
//! unwinds), writes every saved value back in the reverse order and reads the
//! files again to check ([`Restored`]). Samples are read from the per-CPU
//! `trace_pipe` files without blocking ([`Tracer::read`]).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::{parse_line, split_lines, Line};
use crate::trace::{cpumask, TracefsMount};

/// Why the tracer could not be used.
#[derive(Debug, thiserror::Error)]
pub enum HwlatError {
    #[error("tracefs is not available: {0}")]
    /// tracefs is neither mounted nor mountable.
    NoTracefs(String),
    #[error(
        "this kernel has no hwlat tracer: it needs CONFIG_HWLAT_TRACER; available_tracers: {0}"
    )]
    /// The kernel has no hwlat tracer.
    NoTracer(String),
    #[error("the kernel's tracer is in use: current_tracer is '{0}'{1}; rtscope hwlat takes it only when it is 'nop', and never from someone else")]
    /// Another tracer is in use: its name, and what is known of its user.
    Busy(String, String),
    #[error("trace events are enabled at the top level ({0}): someone is tracing, and hwlat would change their trace (rtscope hwlat takes the tracer only when nothing else uses it)")]
    /// Trace events are enabled at the top level.
    EventsEnabled(String),
    #[error("--mode {0}: this kernel's hwlat tracer has no hwlat_detector/mode (Linux 5.14 added it): it samples the CPUs round-robin only")]
    /// `--mode` asked for, without `hwlat_detector/mode`.
    NoMode(String),
    #[error("{0}: {1}")]
    /// A tracefs file could not be written.
    Setting(String, io::Error),
}

impl From<crate::trace::TraceError> for HwlatError {
    /// tracefs not found or not mountable: its reason, said once ("tracefs is
    /// not available: ..."), not wrapped in a second such prefix.
    fn from(e: crate::trace::TraceError) -> Self {
        match e {
            crate::trace::TraceError::NoTracefs(why) => HwlatError::NoTracefs(why),
            other => HwlatError::NoTracefs(other.to_string()),
        }
    }
}

/// What the run asks of the tracer (the kernel's units: µs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `hwlat_detector/window`: one sample per window.
    pub window_us: u64,
    /// `hwlat_detector/width`: the part of the window the CPU spins with
    /// interrupts off.
    pub width_us: u64,
    /// `tracing_thresh`: gaps at or below it are no sample.
    pub threshold_us: u64,
    /// `tracing_cpumask`: the CPUs the tracer visits.
    pub cpus: Vec<usize>,
    /// `hwlat_detector/mode` (`round-robin`, `per-cpu`); `None`: left as it
    /// is (a kernel without the file samples round-robin).
    pub mode: Option<String>,
}

/// The files a run changes or may see changed, relative to the tracefs
/// root, in the order they are read; the before/after check reads them all.
pub const WATCHED: [&str; 10] = [
    "current_tracer",
    "tracing_on",
    "tracing_thresh",
    "tracing_max_latency",
    "tracing_cpumask",
    "hwlat_detector/width",
    "hwlat_detector/window",
    "hwlat_detector/mode",
    "buffer_size_kb",
    "set_event",
];

/// The files a run writes (a subset of [`WATCHED`]).
const WRITTEN: [&str; 8] = [
    "current_tracer",
    "tracing_on",
    "tracing_thresh",
    "tracing_max_latency",
    "tracing_cpumask",
    "hwlat_detector/width",
    "hwlat_detector/window",
    "hwlat_detector/mode",
];

/// A snapshot of [`WATCHED`]: each file's text, `None` where it does not exist.
pub type Snapshot = BTreeMap<String, Option<String>>;

/// Reads every watched file under `root`.
pub fn snapshot(root: &Path) -> Snapshot {
    WATCHED
        .iter()
        .map(|f| (f.to_string(), std::fs::read_to_string(root.join(f)).ok()))
        .collect()
}

/// The value to write back for a file's text as read: the bracketed choice of
/// a multiple-choice file (`none [round-robin] per-cpu`), else the text.
fn writable(file: &str, text: &str) -> String {
    let t = text.trim();
    if file == "hwlat_detector/mode" {
        if let Some(c) = mode_in_force(t) {
            return c;
        }
    }
    t.to_string()
}

/// The choice in force of a multiple-choice file such as
/// `hwlat_detector/mode` (`none [round-robin] per-cpu`); a single word is
/// the choice itself.
pub fn mode_in_force(text: &str) -> Option<String> {
    let mut words = text.split_whitespace();
    if let (Some(one), None) = (words.next(), words.next()) {
        return Some(one.trim_matches(|c| c == '[' || c == ']').to_string());
    }
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .map(str::to_string)
}

/// The differences between two snapshots, one line each (`file: before ->
/// after`), and whether each is the kernel's own one-way step: a ring buffer
/// never used since boot (`7 (expanded: 1408)`) is expanded to its full size
/// when a tracer is first set, and stays so.
pub fn differences(before: &Snapshot, after: &Snapshot) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for (f, b) in before {
        let a = after.get(f).cloned().flatten();
        let (bt, at) = (b.as_deref().map(str::trim), a.as_deref().map(str::trim));
        // A multiple-choice file by its choice (a fake tree keeps the name written).
        if bt.map(|t| writable(f, t)) == at.map(|t| writable(f, t)) {
            continue;
        }
        let expanded = f == "buffer_size_kb" && bt.is_some_and(|t| t.contains("(expanded:"));
        out.push((
            format!(
                "{f}: {} -> {}",
                bt.unwrap_or("(missing)"),
                at.unwrap_or("(missing)")
            ),
            expanded,
        ));
    }
    out
}

/// Whether width must be written before window for both to change without
/// a write the kernel refuses (it keeps width <= window at every write):
/// when the new window is not above the current width.
pub fn width_first(current_width_us: u64, new_window_us: u64) -> bool {
    new_window_us <= current_width_us
}

/// Where the tracer is: the tracefs root (found, mounted here, or given),
/// and the state file of the run that holds it.
pub struct Tracefs {
    /// The tracefs root.
    pub root: PathBuf,
    /// Whether rtscope mounted tracefs for this run.
    pub mounted: bool,
    state: PathBuf,
    _mount: Option<TracefsMount>,
}

/// The environment variable that names a directory to use as tracefs
/// (the tests' fake trees; a tracefs mountinfo does not show).
pub const TRACEFS_ENV: &str = "RTSCOPE_HWLAT_TRACEFS";

/// The state file of a real tracefs: `/run/rtscope-hwlat.state`, or in
/// `/tmp` where there is no `/run`.
fn default_state() -> PathBuf {
    if Path::new("/run").is_dir() {
        PathBuf::from("/run/rtscope-hwlat.state")
    } else {
        PathBuf::from("/tmp/rtscope-hwlat.state")
    }
}

/// What the state file holds: who holds the tracer, what it found and what
/// it set.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct State {
    pid: i32,
    root: PathBuf,
    saved: Vec<(String, String)>,
    set: Vec<(String, String)>,
}

/// What the probe of a tracefs found (read only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The tracers this kernel has.
    pub available: Vec<String>,
    /// `current_tracer`.
    pub current: String,
    /// Whether `hwlat_detector/mode` exists.
    pub has_mode: bool,
}

impl Probe {
    /// Whether this kernel has the hwlat tracer.
    pub fn has_hwlat(&self) -> bool {
        self.available.iter().any(|t| t == "hwlat")
    }
}

impl Tracefs {
    /// The tracefs of this machine: [`TRACEFS_ENV`] when set, else where
    /// mountinfo says, else mounted in a temporary directory of this
    /// process's own (unmounted when this value drops).
    pub fn open() -> Result<Tracefs, HwlatError> {
        Tracefs::open_from(std::env::var_os(TRACEFS_ENV))
    }

    /// [`open`](Self::open) with `env` as the value of [`TRACEFS_ENV`].
    fn open_from(env: Option<std::ffi::OsString>) -> Result<Tracefs, HwlatError> {
        if let Some(d) = env {
            let d = PathBuf::from(d);
            if !d.join("available_tracers").is_file() {
                return Err(HwlatError::NoTracefs(format!(
                    "{TRACEFS_ENV}={} is no tracefs (no available_tracers)",
                    d.display()
                )));
            }
            return Ok(Tracefs::at(d));
        }
        let (root, mount) = crate::trace::find_or_mount_tracefs().map_err(HwlatError::from)?;
        Ok(Tracefs {
            root,
            mounted: mount.is_some(),
            state: default_state(),
            _mount: mount,
        })
    }

    /// A directory used as tracefs, its state file inside it (tests).
    pub fn at(root: PathBuf) -> Tracefs {
        Tracefs {
            state: root.join(".rtscope-hwlat.state"),
            root,
            mounted: false,
            _mount: None,
        }
    }

    fn read(&self, f: &str) -> Result<String, HwlatError> {
        std::fs::read_to_string(self.root.join(f)).map_err(|e| HwlatError::Setting(f.into(), e))
    }

    /// Reads what the tracer needs to know (changes nothing).
    pub fn probe(&self) -> Result<Probe, HwlatError> {
        let available = self
            .read("available_tracers")?
            .split_whitespace()
            .map(str::to_string)
            .collect();
        Ok(Probe {
            available,
            current: self.read("current_tracer")?.trim().to_string(),
            has_mode: self.root.join("hwlat_detector/mode").exists(),
        })
    }

    /// Refuses what would take the tracer from someone: no hwlat, another
    /// tracer (or another run's hwlat), top-level events; `--mode` on a
    /// kernel without modes.
    pub fn check(&self, s: &Settings) -> Result<Probe, HwlatError> {
        let p = self.probe()?;
        if !p.has_hwlat() {
            return Err(HwlatError::NoTracer(p.available.join(" ")));
        }
        if p.current != "nop" {
            let whose = match self.state_file() {
                Some(st) if p.current == "hwlat" && crate::sys::pid_alive(st.pid) => {
                    format!(" (another rtscope hwlat run, pid {})", st.pid)
                }
                _ => String::new(),
            };
            return Err(HwlatError::Busy(p.current.clone(), whose));
        }
        let events: Vec<String> = self
            .read("set_event")
            .unwrap_or_default()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        if !events.is_empty() {
            let more = if events.len() > 3 {
                format!(", ... {} in all", events.len())
            } else {
                String::new()
            };
            return Err(HwlatError::EventsEnabled(format!(
                "{}{more}",
                events[..events.len().min(3)].join(", ")
            )));
        }
        if let Some(m) = &s.mode {
            if !p.has_mode {
                return Err(HwlatError::NoMode(m.clone()));
            }
        }
        Ok(p)
    }

    fn state_file(&self) -> Option<State> {
        let text = std::fs::read_to_string(&self.state).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Gives back what a run killed outright (its state file names a pid
    /// that is gone) left set: when each of the tracer's files still holds
    /// what that run set, or its value from before (a run killed half-way
    /// through setting them), its saved values are written back. Returns the dead run's
    /// pid when it did. A state file of a gone run whose settings someone
    /// changed since is removed, and the files are left alone. (Every mount
    /// of tracefs shows the same tracer: the state of a run that mounted its
    /// own, gone since, holds for this one.)
    pub fn recover(&self) -> Option<i32> {
        let st = self.state_file()?;
        if crate::sys::pid_alive(st.pid) {
            return None;
        }
        // The CPU mask as the kernel prints it may differ in form from the
        // one written (zero-padded words): the other settings tell.
        let still = st
            .set
            .iter()
            .filter(|(f, _)| f != "tracing_cpumask")
            .all(|(f, v)| {
                std::fs::read_to_string(self.root.join(f)).is_ok_and(|now| {
                    let now = writable(f, &now);
                    now == writable(f, v) || value(&st.saved, f).is_some_and(|old| now == old)
                })
            });
        let _ = std::fs::remove_file(&self.state);
        if !still {
            return None;
        }
        restore(&self.root, &st.saved).ok()?;
        Some(st.pid)
    }
}

/// What a run holding the tracer registers for [`restore_active`]: the
/// tracefs root, the saved values, the state file.
type Active = (PathBuf, Vec<(String, String)>, PathBuf);

/// The run holding the tracer.
static ACTIVE: Mutex<Option<Active>> = Mutex::new(None);

/// Gives the tracer back now, from any thread (the stop-signal handler calls
/// it before the process exits without unwinding). Returns whether a run held it.
pub fn restore_active() -> bool {
    // The lock is held while writing: a run giving the tracer back at the
    // same moment waits, then finds it given back (and the process may end
    // as soon as this returns, never half-way through the run's own writes).
    let mut a = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
    match a.take() {
        Some((root, saved, state)) => {
            if restore(&root, &saved).is_ok() {
                let _ = std::fs::remove_file(state);
            }
            true
        }
        None => false,
    }
}

fn write(root: &Path, f: &str, v: &str) -> Result<(), HwlatError> {
    OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(root.join(f))
        .and_then(|mut file| file.write_all(v.as_bytes()))
        .map_err(|e| HwlatError::Setting(format!("{f} <- {v}"), e))
}

fn value<'a>(saved: &'a [(String, String)], f: &str) -> Option<&'a str> {
    saved.iter().find(|(k, _)| k == f).map(|(_, v)| v.as_str())
}

/// Writes width and window so that the kernel accepts each write.
fn write_width_window(root: &Path, width: &str, window: &str) -> Result<(), HwlatError> {
    let cur_width = std::fs::read_to_string(root.join("hwlat_detector/width"))
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(u64::MAX);
    let new_window = window.parse::<u64>().unwrap_or(0);
    if width_first(cur_width, new_window) {
        write(root, "hwlat_detector/width", width)?;
        write(root, "hwlat_detector/window", window)
    } else {
        write(root, "hwlat_detector/window", window)?;
        write(root, "hwlat_detector/width", width)
    }
}

/// Writes `saved` back: tracing off, the tracer unset (the kernel puts its
/// saved threshold back), then every value; tracing_on last. Every write is
/// tried; the first error is returned.
fn restore(root: &Path, saved: &[(String, String)]) -> Result<(), HwlatError> {
    let mut first: Option<HwlatError> = None;
    let mut note = |r: Result<(), HwlatError>| {
        if let Err(e) = r {
            first.get_or_insert(e);
        }
    };
    note(write(root, "tracing_on", "0"));
    for f in ["current_tracer", "tracing_thresh"] {
        if let Some(v) = value(saved, f) {
            note(write(root, f, v));
        }
    }
    if let (Some(w), Some(win)) = (
        value(saved, "hwlat_detector/width"),
        value(saved, "hwlat_detector/window"),
    ) {
        note(write_width_window(root, w, win));
    }
    for f in [
        "hwlat_detector/mode",
        "tracing_cpumask",
        "tracing_max_latency",
        "tracing_on",
    ] {
        if let Some(v) = value(saved, f) {
            note(write(root, f, v));
        }
    }
    first.map_or(Ok(()), Err)
}

/// What giving the tracer back found: the files read before the run and
/// after the restore, and how they differ.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Restored {
    /// Every watched file as the run found it.
    pub before: BTreeMap<String, Option<String>>,
    /// Differences after the restore, `file: before -> after`: none when
    /// tracefs is as it was.
    pub differences: Vec<String>,
    /// Of those, the kernel's one-way expansion of a never-used ring buffer.
    pub kernel_expanded_buffer: bool,
    /// An error while writing a value back.
    pub error: Option<String>,
}

impl Restored {
    /// Whether every file is as it was (the kernel's buffer expansion aside).
    pub fn as_before(&self) -> bool {
        self.error.is_none()
            && (self.differences.is_empty()
                || self.kernel_expanded_buffer && self.differences.len() == 1)
    }
}

/// The hwlat tracer, held for a run.
pub struct Tracer {
    fs: Tracefs,
    before: Snapshot,
    saved: Vec<(String, String)>,
    readers: Vec<(usize, File, String)>,
    buf: Vec<u8>,
    restored: bool,
    /// Samples read, and events the kernel said it lost.
    pub samples: u64,
    /// Events the kernel said it lost.
    pub lost: u64,
    /// The pid of a killed run whose settings were given back first.
    pub recovered: Option<i32>,
}

impl Tracer {
    /// Takes the tracer and starts it with `s` (see the module's text).
    pub fn start(fs: Tracefs, s: &Settings) -> Result<Tracer, HwlatError> {
        let recovered = fs.recover();
        fs.check(s)?;
        let before = snapshot(&fs.root);
        let saved: Vec<(String, String)> = WRITTEN
            .iter()
            .filter_map(|f| {
                let t = before.get(*f).cloned().flatten()?;
                Some((f.to_string(), writable(f, &t)))
            })
            .collect();
        for f in ["current_tracer", "tracing_on", "tracing_thresh"] {
            if value(&saved, f).is_none() {
                return Err(HwlatError::Setting(
                    f.into(),
                    io::Error::new(io::ErrorKind::NotFound, "not readable"),
                ));
            }
        }
        let mask = cpumask(&s.cpus);
        let mut set = vec![
            ("current_tracer".to_string(), "hwlat".to_string()),
            ("tracing_thresh".into(), s.threshold_us.to_string()),
            ("hwlat_detector/width".into(), s.width_us.to_string()),
            ("hwlat_detector/window".into(), s.window_us.to_string()),
            ("tracing_cpumask".into(), mask.clone()),
        ];
        if let Some(m) = &s.mode {
            set.push(("hwlat_detector/mode".into(), m.clone()));
        }
        let state = State {
            pid: std::process::id() as i32,
            root: fs.root.clone(),
            saved: saved.clone(),
            set,
        };
        std::fs::write(&fs.state, serde_json::to_string(&state).unwrap_or_default())
            .map_err(|e| HwlatError::Setting(fs.state.display().to_string(), e))?;
        *ACTIVE.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((fs.root.clone(), saved.clone(), fs.state.clone()));
        // From here on, an error drops the tracer, which gives everything back.
        let mut t = Tracer {
            fs,
            before,
            saved,
            readers: Vec::new(),
            buf: vec![0; 64 * 1024],
            restored: false,
            samples: 0,
            lost: 0,
            recovered,
        };
        let root = t.fs.root.clone();
        write(&root, "tracing_on", "0")?;
        write(&root, "current_tracer", "hwlat")?;
        write(&root, "tracing_thresh", &s.threshold_us.to_string())?;
        write_width_window(&root, &s.width_us.to_string(), &s.window_us.to_string())?;
        if let Some(m) = &s.mode {
            write(&root, "hwlat_detector/mode", m)?;
        }
        write(&root, "tracing_cpumask", &mask)?;
        write(&root, "tracing_max_latency", "0")?;
        for &c in &s.cpus {
            let p = format!("per_cpu/cpu{c}/trace_pipe");
            let f = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(root.join(&p))
                .map_err(|e| HwlatError::Setting(p.clone(), e))?;
            t.readers.push((c, f, String::new()));
        }
        write(&root, "tracing_on", "1")?;
        Ok(t)
    }

    /// The tracefs root in use.
    pub fn root(&self) -> &Path {
        &self.fs.root
    }

    /// Whether rtscope mounted tracefs for this run.
    pub fn mounted(&self) -> bool {
        self.fs.mounted
    }

    /// Reads what the per-CPU pipes hold now, without blocking, and calls
    /// `f` with each sample and its CPU (the aggregator's thread, never a
    /// measuring one).
    pub fn read(&mut self, mut f: impl FnMut(usize, &super::Sample)) {
        for (cpu, file, pending) in &mut self.readers {
            // Bounded: a pipe that keeps giving cannot hold the caller.
            for _ in 0..64 {
                let n = match file.read(&mut self.buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                let text = String::from_utf8_lossy(&self.buf[..n]);
                let (samples, lost) = (&mut self.samples, &mut self.lost);
                split_lines(pending, &text, |l| match parse_line(l) {
                    Line::Sample(s) => {
                        *samples += 1;
                        f(*cpu, &s);
                    }
                    Line::Lost(n) => *lost += n,
                    Line::Other => {}
                });
            }
        }
    }

    /// `tracing_max_latency` now: the largest sample the kernel saw, µs.
    pub fn max_latency_us(&self) -> Option<u64> {
        std::fs::read_to_string(self.fs.root.join("tracing_max_latency"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
    }

    /// Stops sampling (what is buffered can still be read).
    pub fn stop(&self) {
        let _ = write(&self.fs.root, "tracing_on", "0");
    }

    /// Gives the tracer back: every saved value written, the files read again.
    pub fn finish(mut self) -> Restored {
        self.give_back()
    }

    fn give_back(&mut self) -> Restored {
        self.restored = true;
        self.readers.clear();
        let err = {
            let mut a = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
            match a.as_ref() {
                // Given back already, by restore_active (a second signal:
                // the process is ending): not written again.
                None => None,
                Some(x) if x.0 == self.fs.root => {
                    let e = restore(&self.fs.root, &self.saved).err();
                    *a = None;
                    e
                }
                Some(_) => restore(&self.fs.root, &self.saved).err(),
            }
        };
        if err.is_none() {
            let _ = std::fs::remove_file(&self.fs.state);
        }
        let after = snapshot(&self.fs.root);
        let diffs = differences(&self.before, &after);
        Restored {
            before: self.before.clone(),
            kernel_expanded_buffer: diffs.iter().any(|d| d.1),
            differences: diffs.into_iter().map(|d| d.0).collect(),
            error: err.map(|e| e.to_string()),
        }
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        if self.restored {
            return;
        }
        let r = self.give_back();
        if let Some(e) = &r.error {
            // Nobody else can say it: the tracer may still be running with
            // interrupts off for most of every window.
            eprintln!(
                "rtscope: could not give the hwlat tracer back ({e}): check {}",
                self.fs.root.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake tracefs as the 6.1 RT guest shows it at boot.
    fn fake() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let files = [
            (
                "available_tracers",
                "timerlat osnoise hwlat blk function nop\n",
            ),
            ("current_tracer", "nop\n"),
            ("tracing_on", "1\n"),
            ("tracing_thresh", "0\n"),
            ("tracing_max_latency", "0\n"),
            ("tracing_cpumask", "3\n"),
            ("buffer_size_kb", "1410\n"),
            ("set_event", ""),
            ("hwlat_detector/width", "500000\n"),
            ("hwlat_detector/window", "1000000\n"),
            ("hwlat_detector/mode", "none [round-robin] per-cpu\n"),
            ("per_cpu/cpu0/trace_pipe", ""),
            ("per_cpu/cpu1/trace_pipe", ""),
        ];
        for (f, v) in files {
            let p = d.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, v).unwrap();
        }
        d
    }

    fn settings() -> Settings {
        Settings {
            window_us: 2_000_000,
            width_us: 950_000,
            threshold_us: 10,
            cpus: vec![1],
            mode: Some("per-cpu".into()),
        }
    }

    fn read(d: &Path, f: &str) -> String {
        std::fs::read_to_string(d.join(f)).unwrap()
    }

    /// The tests share [`ACTIVE`]: one at a time.
    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        static LOCK: Mutex<()> = Mutex::new(());
        LOCK.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[test]
    fn start_sets_the_tracer_and_finish_gives_it_back() {
        let _one = one_at_a_time();
        let d = fake();
        let before = snapshot(d.path());
        let t = Tracer::start(Tracefs::at(d.path().into()), &settings()).unwrap();
        assert_eq!(read(d.path(), "current_tracer"), "hwlat");
        assert_eq!(read(d.path(), "tracing_thresh"), "10");
        assert_eq!(read(d.path(), "hwlat_detector/width"), "950000");
        assert_eq!(read(d.path(), "hwlat_detector/window"), "2000000");
        assert_eq!(read(d.path(), "hwlat_detector/mode"), "per-cpu");
        assert_eq!(read(d.path(), "tracing_cpumask"), "2");
        assert_eq!(read(d.path(), "tracing_on"), "1");
        // The state file names this run and what it found.
        let st: State = serde_json::from_str(&read(d.path(), ".rtscope-hwlat.state")).unwrap();
        assert_eq!(st.pid, std::process::id() as i32);
        assert!(st
            .saved
            .contains(&("hwlat_detector/mode".into(), "round-robin".into())));
        let r = t.finish();
        assert!(r.as_before(), "{r:?}");
        assert!(r.differences.is_empty());
        assert_eq!(r.before, before);
        // Every value as it was (the mode by its name, as the kernel takes it).
        let after = snapshot(d.path());
        assert_eq!(read(d.path(), "hwlat_detector/mode"), "round-robin");
        for f in WATCHED {
            if f != "hwlat_detector/mode" {
                assert_eq!(
                    before[f].as_deref().map(str::trim),
                    after[f].as_deref().map(str::trim),
                    "{f}"
                );
            }
        }
        assert!(!d.path().join(".rtscope-hwlat.state").exists());
        assert!(!restore_active(), "the run unregistered");
    }

    #[test]
    fn dropping_on_an_error_or_a_panic_gives_it_back() {
        let _one = one_at_a_time();
        let d = fake();
        let before = snapshot(d.path());
        // A CPU without a pipe: start fails half-way and gives back what it set.
        let mut s = settings();
        s.cpus = vec![0, 7];
        let e = Tracer::start(Tracefs::at(d.path().into()), &s)
            .err()
            .unwrap();
        assert!(e.to_string().contains("per_cpu/cpu7/trace_pipe"), "{e}");
        assert_eq!(read(d.path(), "current_tracer").trim(), "nop");
        assert_eq!(read(d.path(), "hwlat_detector/width").trim(), "500000");
        // A panic while it runs.
        let root = d.path().to_path_buf();
        let r = std::panic::catch_unwind(|| {
            let _t = Tracer::start(Tracefs::at(root), &settings()).unwrap();
            panic!("in the middle of the run");
        });
        assert!(r.is_err());
        assert_eq!(differences(&before, &snapshot(d.path())), []);
        assert_eq!(read(d.path(), "tracing_thresh"), "0");
        assert!(!restore_active());
    }

    #[test]
    fn restore_active_gives_it_back_from_another_thread() {
        let _one = one_at_a_time();
        let d = fake();
        let t = Tracer::start(Tracefs::at(d.path().into()), &settings()).unwrap();
        assert!(std::thread::spawn(restore_active).join().unwrap());
        assert_eq!(read(d.path(), "current_tracer"), "nop");
        assert_eq!(read(d.path(), "hwlat_detector/width"), "500000");
        assert_eq!(read(d.path(), "tracing_on"), "1");
        assert!(!d.path().join(".rtscope-hwlat.state").exists());
        // The run's own restore afterwards writes nothing again (the process
        // is ending; a write half-way would be cut).
        std::fs::write(d.path().join("tracing_thresh"), "77").unwrap();
        let r = t.finish();
        assert_eq!(read(d.path(), "tracing_thresh"), "77");
        assert_eq!(r.differences, ["tracing_thresh: 0 -> 77"]);
        assert!(r.error.is_none());
    }

    #[test]
    fn the_state_file_and_the_environments_tracefs() {
        let _one = one_at_a_time();
        let st = default_state();
        assert!(st.ends_with("rtscope-hwlat.state"), "{st:?}");
        assert!(st.starts_with("/run") || st.starts_with("/tmp"), "{st:?}");
        // RTSCOPE_HWLAT_TRACEFS names a tracefs (a tree with
        // available_tracers), or is refused as none.
        let d = fake();
        let fs = Tracefs::open_from(Some(d.path().into()));
        let none = Tracefs::open_from(Some(d.path().join("hwlat_detector").into()));
        let fs = fs.unwrap();
        assert_eq!(fs.root, d.path());
        assert_eq!(fs.state, d.path().join(".rtscope-hwlat.state"));
        assert!(!fs.mounted);
        let e = none.err().unwrap();
        assert!(
            matches!(&e, HwlatError::NoTracefs(m) if m.ends_with("is no tracefs (no available_tracers)")),
            "{e}"
        );
    }

    #[test]
    fn another_tracer_or_top_level_events_are_refused() {
        let _one = one_at_a_time();
        let d = fake();
        // Another tracer with a live rtscope's state file: not that run's
        // hwlat, so no pid is named.
        std::fs::write(
            d.path().join(".rtscope-hwlat.state"),
            serde_json::to_string(&State {
                pid: std::process::id() as i32,
                root: d.path().into(),
                saved: vec![],
                set: vec![],
            })
            .unwrap(),
        )
        .unwrap();
        std::fs::write(d.path().join("current_tracer"), "wakeup_rt\n").unwrap();
        let e = Tracefs::at(d.path().into()).check(&settings()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the kernel's tracer is in use: current_tracer is 'wakeup_rt'; rtscope hwlat takes it only when it is 'nop', and never from someone else"
        );
        std::fs::remove_file(d.path().join(".rtscope-hwlat.state")).unwrap();
        // Three events: named, no count.
        std::fs::write(d.path().join("current_tracer"), "nop\n").unwrap();
        std::fs::write(d.path().join("set_event"), "a:b\nc:d\ne:f\n").unwrap();
        let e = Tracefs::at(d.path().into()).check(&settings()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("trace events are enabled at the top level (a:b, c:d, e:f): "),
            "{e}"
        );
        std::fs::write(d.path().join("set_event"), "").unwrap();
        std::fs::write(d.path().join("current_tracer"), "function\n").unwrap();
        let e = Tracer::start(Tracefs::at(d.path().into()), &settings())
            .err()
            .unwrap();
        assert!(
            matches!(&e, HwlatError::Busy(t, w) if t == "function" && w.is_empty()),
            "{e}"
        );
        assert!(
            e.to_string().contains("current_tracer is 'function'"),
            "{e}"
        );
        // Nothing was touched.
        assert_eq!(read(d.path(), "hwlat_detector/width"), "500000\n");
        assert!(!d.path().join(".rtscope-hwlat.state").exists());
        std::fs::write(d.path().join("current_tracer"), "nop\n").unwrap();
        std::fs::write(
            d.path().join("set_event"),
            "sched:sched_switch\nirq:irq_handler_entry\nirq:irq_handler_exit\nirq:softirq_entry\n",
        )
        .unwrap();
        let e = Tracer::start(Tracefs::at(d.path().into()), &settings())
            .err()
            .unwrap();
        assert_eq!(
            e.to_string()
                .split(" (")
                .nth(1)
                .unwrap()
                .split(')')
                .next()
                .unwrap(),
            "sched:sched_switch, irq:irq_handler_entry, irq:irq_handler_exit, ... 4 in all"
        );
        std::fs::write(d.path().join("set_event"), "\n").unwrap();
        // No hwlat in this kernel.
        std::fs::write(d.path().join("available_tracers"), "blk function nop\n").unwrap();
        let e = Tracer::start(Tracefs::at(d.path().into()), &settings())
            .err()
            .unwrap();
        assert!(
            matches!(&e, HwlatError::NoTracer(a) if a == "blk function nop"),
            "{e}"
        );
        // No mode file: --mode is refused, none asked is fine.
        std::fs::write(d.path().join("available_tracers"), "hwlat nop\n").unwrap();
        std::fs::remove_file(d.path().join("hwlat_detector/mode")).unwrap();
        let e = Tracer::start(Tracefs::at(d.path().into()), &settings())
            .err()
            .unwrap();
        assert!(matches!(&e, HwlatError::NoMode(m) if m == "per-cpu"), "{e}");
        let mut s = settings();
        s.mode = None;
        let t = Tracer::start(Tracefs::at(d.path().into()), &s).unwrap();
        assert!(t.finish().as_before());
    }

    #[test]
    fn a_killed_runs_settings_are_given_back_by_the_next_run() {
        let _one = one_at_a_time();
        let d = fake();
        let before = snapshot(d.path());
        let st = killed_run(d.path());
        let fs = Tracefs::at(d.path().into());
        // A live pid's hwlat is someone's run: refused, named.
        let mut live = st.clone();
        live.pid = std::process::id() as i32;
        write_state(d.path(), &live);
        let e = Tracer::start(Tracefs::at(d.path().into()), &settings())
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("another rtscope hwlat run, pid"),
            "{e}"
        );
        write_state(d.path(), &st);
        assert_eq!(fs.recover(), Some(i32::MAX));
        assert_eq!(read(d.path(), "current_tracer"), "nop");
        assert_eq!(differences(&before, &snapshot(d.path())), []);
        assert!(!d.path().join(".rtscope-hwlat.state").exists());
        // A gone run whose settings someone changed since: left alone.
        let st = killed_run(d.path());
        std::fs::write(d.path().join("tracing_thresh"), "50").unwrap();
        assert_eq!(fs.recover(), None);
        assert_eq!(read(d.path(), "current_tracer"), "hwlat");
        assert!(!d.path().join(".rtscope-hwlat.state").exists());
        // Killed half-way through its settings: the tracer set, the width
        // not yet: given back all the same.
        std::fs::write(
            d.path().join("tracing_thresh"),
            value_of(&st.saved, "tracing_thresh"),
        )
        .unwrap();
        let width = value_of(&st.saved, "hwlat_detector/width");
        std::fs::write(d.path().join("hwlat_detector/width"), &width).unwrap();
        write_state(d.path(), &st);
        assert_eq!(fs.recover(), Some(i32::MAX));
        assert_eq!(read(d.path(), "current_tracer"), "nop");
        assert_eq!(differences(&before, &snapshot(d.path())), []);
        // Recovered, the state file is gone: a second call has nothing to do.
        assert_eq!(fs.recover(), None);
    }

    /// A run started on the fake tree at `dir`, then as if killed: nothing
    /// restored, its state file left, naming a pid that is gone.
    fn killed_run(dir: &Path) -> State {
        let t = Tracer::start(Tracefs::at(dir.into()), &settings()).unwrap();
        std::mem::forget(t);
        ACTIVE.lock().unwrap().take();
        let mut st: State = serde_json::from_str(&read(dir, ".rtscope-hwlat.state")).unwrap();
        st.pid = i32::MAX;
        write_state(dir, &st);
        st
    }

    fn write_state(dir: &Path, st: &State) {
        std::fs::write(
            dir.join(".rtscope-hwlat.state"),
            serde_json::to_string(st).unwrap(),
        )
        .unwrap();
    }

    fn value_of(saved: &[(String, String)], f: &str) -> String {
        value(saved, f).unwrap().to_string()
    }

    #[test]
    fn a_gone_runs_state_with_a_third_value_is_dropped() {
        let _one = one_at_a_time();
        let d = fake();
        let fs = Tracefs::at(d.path().into());
        killed_run(d.path());
        // Neither the run's width nor the one before it: someone else's.
        std::fs::write(d.path().join("hwlat_detector/width"), "123").unwrap();
        assert_eq!(fs.recover(), None);
        assert_eq!(read(d.path(), "current_tracer"), "hwlat");
        assert!(!d.path().join(".rtscope-hwlat.state").exists());
    }

    #[test]
    fn samples_are_read_from_the_per_cpu_pipes() {
        let _one = one_at_a_time();
        let d = fake();
        std::fs::write(
            d.path().join("per_cpu/cpu1/trace_pipe"),
            "           <...>-167     [001] dn.....     7.768887: #3     inner/outer(us): 108190/14203 ts:1795648608.452362880 count:219 nmi-total:10297 nmi-count:3\nCPU:1 [LOST 2 EVENTS]\n#4 inner/outer(us): 5/6 ts:1.0\n",
        )
        .unwrap();
        let mut t = Tracer::start(Tracefs::at(d.path().into()), &settings()).unwrap();
        let mut got = Vec::new();
        t.read(|c, s| got.push((c, s.seq, s.latency_ns())));
        assert_eq!(got, [(1, 3, 108_190_000), (1, 4, 6_000)]);
        assert_eq!((t.samples, t.lost), (2, 2));
        assert_eq!(t.max_latency_us(), Some(0));
        // The kernel's own maximum, as it reads at the end.
        std::fs::write(d.path().join("tracing_max_latency"), "157\n").unwrap();
        assert_eq!(t.max_latency_us(), Some(157));
        assert_eq!(t.root(), d.path());
        assert!(!t.mounted());
        // Stopped: sampling off, what is buffered still readable.
        t.stop();
        assert_eq!(read(d.path(), "tracing_on"), "0");
        assert!(t.finish().as_before());
        // A tracefs this run mounted says so.
        let d = fake();
        let mut fs = Tracefs::at(d.path().into());
        fs.mounted = true;
        let t = Tracer::start(fs, &settings()).unwrap();
        assert!(t.mounted());
        assert!(t.finish().as_before());
    }

    /// Two runs at once in one process (never done, but safe): each gives its
    /// own tracefs back, and the registration stays the later one's.
    #[test]
    fn each_run_gives_back_its_own() {
        let _one = one_at_a_time();
        let (a, b) = (fake(), fake());
        let ta = Tracer::start(Tracefs::at(a.path().into()), &settings()).unwrap();
        let tb = Tracer::start(Tracefs::at(b.path().into()), &settings()).unwrap();
        assert!(ta.finish().as_before());
        assert_eq!(read(a.path(), "current_tracer"), "nop");
        assert_eq!(read(b.path(), "current_tracer"), "hwlat");
        // b is still registered: a second signal now gives it back.
        assert!(restore_active());
        assert_eq!(read(b.path(), "current_tracer"), "nop");
        std::mem::forget(tb);
    }

    #[test]
    fn width_and_window_are_written_in_an_order_the_kernel_takes() {
        // Growing the window beyond the current width: window first.
        assert!(!width_first(500_000, 2_000_000));
        // A window at or below the current width: width first.
        assert!(width_first(500_000, 500_000));
        assert!(width_first(500_000, 200_000));
        let d = fake();
        write_width_window(d.path(), "100000", "200000").unwrap();
        assert_eq!(read(d.path(), "hwlat_detector/width"), "100000");
        assert_eq!(read(d.path(), "hwlat_detector/window"), "200000");
    }

    #[test]
    fn the_differences_and_the_kernels_buffer_expansion() {
        // A buffer size someone changed is no expansion of the kernel's.
        let mut b = Snapshot::new();
        b.insert("buffer_size_kb".into(), Some("1410\n".into()));
        let mut a = b.clone();
        a.insert("buffer_size_kb".into(), Some("2048\n".into()));
        assert_eq!(
            differences(&b, &a),
            [("buffer_size_kb: 1410 -> 2048".to_string(), false)]
        );
        let mut b = Snapshot::new();
        b.insert("buffer_size_kb".into(), Some("7 (expanded: 1408)\n".into()));
        b.insert("tracing_on".into(), Some("1\n".into()));
        b.insert("set_event".into(), None);
        let mut a = b.clone();
        assert!(differences(&b, &a).is_empty());
        a.insert("buffer_size_kb".into(), Some("1410\n".into()));
        let d = differences(&b, &a);
        assert_eq!(
            d,
            [(
                "buffer_size_kb: 7 (expanded: 1408) -> 1410".to_string(),
                true
            )]
        );
        let r = Restored {
            differences: vec![d[0].0.clone()],
            kernel_expanded_buffer: true,
            ..Default::default()
        };
        assert!(r.as_before());
        a.insert("tracing_on".into(), Some("0".into()));
        a.insert("set_event".into(), Some("x".into()));
        let d = differences(&b, &a);
        assert_eq!(d.len(), 3);
        assert!(d.contains(&("tracing_on: 1 -> 0".to_string(), false)));
        assert!(d.contains(&("set_event: (missing) -> x".to_string(), false)));
        let r = Restored {
            differences: d.into_iter().map(|x| x.0).collect(),
            kernel_expanded_buffer: true,
            ..Default::default()
        };
        assert!(!r.as_before());
        assert!(!Restored {
            error: Some("x".into()),
            ..Default::default()
        }
        .as_before());
        assert_eq!(
            writable("hwlat_detector/mode", "none [per-cpu] x\n"),
            "per-cpu"
        );
        assert_eq!(writable("tracing_cpumask", "ff,ffffffff\n"), "ff,ffffffff");
        assert_eq!(
            mode_in_force("none round-robin [per-cpu]").as_deref(),
            Some("per-cpu")
        );
        assert_eq!(
            mode_in_force("round-robin\n").as_deref(),
            Some("round-robin")
        );
        assert_eq!(mode_in_force("[per-cpu]").as_deref(), Some("per-cpu"));
        assert_eq!(mode_in_force("none round-robin per-cpu"), None);
        assert_eq!(mode_in_force(""), None);
    }
}
