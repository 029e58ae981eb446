//! System V objects that a killed run leaves behind, and their removal.
//!
//! A SysV semaphore set or message queue outlives every process that uses it,
//! and unlike a FIFO path or a POSIX queue name it cannot be removed while in
//! use: `IPC_RMID` takes the id away at once. So each one a run creates is
//! recorded in a state file, `STATE_DIR/ipc-PID.state`, with the run's pid and
//! start time and the object's id, key and creation time; the record is
//! dropped as soon as the object is gone, and the file with the last record.
//! A file that stays names objects of a run that was killed (`kill -9`, a
//! second Ctrl-C) or whose thread was left behind.
//!
//! A later `rtscope ipc` run, and `rtscope ipc --cleanup`, remove the objects
//! of every state file whose run is no longer alive, but only those they can
//! prove are that run's: same id, same key, same creator (this user) and same
//! creation time. An object that does not match (its id reused by someone
//! else) is left alone and its record dropped.
//!
//! STATE_DIR is `$XDG_RUNTIME_DIR/rtscope` when that variable is set,
//! otherwise `/run/rtscope` when it can be created (root), otherwise
//! `$TMPDIR/rtscope-UID`; it must be a directory of this user that no one
//! else can write to, and only files of this user in it are read.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use rtscope_core::sys::{self, SysvKind};

const MAGIC: &str = "rtscope ipc state v1";

/// One recorded object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub kind: SysvKind,
    pub id: i32,
    pub key: i32,
    pub ctime: i64,
}

impl Record {
    fn describe(&self) -> String {
        match self.kind {
            SysvKind::Sem => format!("SysV semaphore set {}", self.id),
            SysvKind::Msg => format!("SysV message queue {}", self.id),
        }
    }
}

fn kind_name(k: SysvKind) -> &'static str {
    match k {
        SysvKind::Sem => "sysv_sem",
        SysvKind::Msg => "sysv_msg",
    }
}

/// The contents of a state file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub pid: i32,
    /// The owner's start time (`/proc/PID/stat` field 22), so that a reused
    /// pid does not pass for the owner.
    pub start: u64,
    pub records: Vec<Record>,
}

impl State {
    pub fn to_text(&self) -> String {
        let mut s = format!("{MAGIC}\nowner {} {}\n", self.pid, self.start);
        for r in &self.records {
            let _ = writeln!(s, "{} {} {} {}", kind_name(r.kind), r.id, r.key, r.ctime);
        }
        s
    }

    /// `None` unless `text` is a complete state file.
    pub fn parse(text: &str) -> Option<State> {
        let mut lines = text.lines();
        if lines.next()? != MAGIC {
            return None;
        }
        let owner: Vec<&str> = lines.next()?.split(' ').collect();
        let (pid, start) = match owner[..] {
            ["owner", p, s] => (p.parse().ok()?, s.parse().ok()?),
            _ => return None,
        };
        let mut records = Vec::new();
        for l in lines {
            let w: Vec<&str> = l.split(' ').collect();
            let [k, id, key, ctime] = w[..] else {
                return None;
            };
            let kind = match k {
                "sysv_sem" => SysvKind::Sem,
                "sysv_msg" => SysvKind::Msg,
                _ => return None,
            };
            records.push(Record {
                kind,
                id: id.parse().ok()?,
                key: key.parse().ok()?,
                ctime: ctime.parse().ok()?,
            });
        }
        Some(State {
            pid,
            start,
            records,
        })
    }
}

/// Start time of process `pid` in clock ticks since boot; `None` when it does
/// not exist.
fn start_time(pid: &str) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22; fields 3.. follow the command name, which ends at the last ')'.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// Whether the run that wrote `s` is still alive.
fn owner_alive(s: &State) -> bool {
    start_time(&s.pid.to_string()) == Some(s.start)
}

/// The state directory (see the module documentation); created if missing.
pub fn state_dir() -> io::Result<PathBuf> {
    let uid = sys::geteuid();
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x).join("rtscope"),
        None if uid == 0 && ensure_dir(Path::new("/run/rtscope")).is_ok() => {
            return Ok(PathBuf::from("/run/rtscope"))
        }
        None => std::env::temp_dir().join(format!("rtscope-{uid}")),
    };
    ensure_dir(&dir)?;
    Ok(dir)
}

/// Creates `dir` (mode 0700) if missing and checks that it is a directory of
/// this user that no one else can write to.
fn ensure_dir(dir: &Path) -> io::Result<()> {
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let m = fs::symlink_metadata(dir)?;
    if !m.is_dir() || m.uid() != sys::geteuid() || m.mode() & 0o022 != 0 {
        return Err(io::Error::other(format!(
            "{} is not a private directory of this user",
            dir.display()
        )));
    }
    Ok(())
}

fn write_state(path: &Path, s: &State) -> io::Result<()> {
    if s.records.is_empty() {
        return match fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
    }
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, s.to_text())?;
    fs::rename(&tmp, path)
}

/// The objects this process created and has not yet seen removed.
struct Ledger {
    path: PathBuf,
    state: State,
}

static LEDGER: Mutex<Option<Ledger>> = Mutex::new(None);
static WARNED: AtomicBool = AtomicBool::new(false);

fn with_ledger<T>(f: impl FnOnce(&mut Option<Ledger>) -> T) -> T {
    let mut g = LEDGER.lock().unwrap_or_else(|p| p.into_inner());
    f(&mut g)
}

/// Records a SysV object this process just created, before it is used.
/// Failing to record is not fatal (the run goes on; a note says what a kill
/// could then leave behind).
pub fn record(kind: SysvKind, id: i32) {
    let r = (|| -> io::Result<()> {
        let st =
            sys::sysv_stat(kind, id)?.ok_or_else(|| io::Error::from_raw_os_error(libc::EIDRM))?;
        let pid = sys::getpid();
        with_ledger(|l| {
            if l.is_none() {
                let start = start_time("self")
                    .ok_or_else(|| io::Error::other("cannot read /proc/self/stat"))?;
                *l = Some(Ledger {
                    path: state_dir()?.join(format!("ipc-{pid}.state")),
                    state: State {
                        pid,
                        start,
                        records: Vec::new(),
                    },
                });
            }
            let l = l.as_mut().expect("just set");
            l.state.records.push(Record {
                kind,
                id,
                key: st.key,
                ctime: st.ctime,
            });
            write_state(&l.path, &l.state)
        })
    })();
    if let Err(e) = r {
        if !WARNED.swap(true, Ordering::Relaxed) {
            eprintln!(
                "warning: cannot record SysV object ids for a later clean-up ({e}); \
                 if this run is killed, `ipcs` shows what it left"
            );
        }
    }
}

/// Drops the records of objects that are gone (removed when their
/// experiment ended); removes the state file with the last one.
pub fn settle() {
    with_ledger(|l| {
        if let Some(l) = l.as_mut() {
            l.state.records.retain(|r| matches_live(r) != Some(false));
            let _ = write_state(&l.path, &l.state);
        }
    });
}

/// `Some(true)`: the recorded object exists and is the one recorded;
/// `Some(false)`: it is gone, or its id now names another object;
/// `None`: cannot tell (IPC_STAT failed).
fn matches_live(r: &Record) -> Option<bool> {
    match sys::sysv_stat(r.kind, r.id) {
        Ok(None) => Some(false),
        Ok(Some(st)) => Some(st.key == r.key && st.ctime == r.ctime && st.cuid == sys::geteuid()),
        Err(_) => None,
    }
}

/// What one clean-up did: one line per removed object, one per failure.
#[derive(Debug, Default)]
pub struct Cleaned {
    pub removed: Vec<String>,
    pub failed: Vec<String>,
}

/// Removes the recorded objects of every run that is no longer alive (see
/// the module documentation).
pub fn clean_stale() -> Cleaned {
    let mut out = Cleaned::default();
    let dir = match state_dir() {
        Ok(d) => d,
        Err(e) => {
            out.failed
                .push(format!("cannot use the state directory: {e}"));
            return out;
        }
    };
    // Without /proc every owner would look dead: remove nothing.
    if start_time("self").is_none() {
        out.failed
            .push("cannot read /proc/self/stat: cannot tell which runs are alive".into());
        return out;
    }
    let Ok(entries) = fs::read_dir(&dir) else {
        return out;
    };
    let me = sys::getpid();
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if !(name.starts_with("ipc-") && name.ends_with(".state")) {
            continue;
        }
        let Ok(m) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !m.is_file() || m.uid() != sys::geteuid() {
            continue;
        }
        let Some(mut state) = fs::read_to_string(&path)
            .ok()
            .and_then(|t| State::parse(&t))
        else {
            continue;
        };
        if state.pid == me || owner_alive(&state) {
            continue;
        }
        let pid = state.pid;
        state.records.retain(|r| match matches_live(r) {
            Some(false) => false,
            None => true,
            Some(true) => match sys::sysv_remove(r.kind, r.id) {
                Ok(_) => {
                    out.removed.push(format!(
                        "removed {} (left by rtscope ipc, pid {pid})",
                        r.describe()
                    ));
                    false
                }
                Err(e) => {
                    out.failed.push(format!(
                        "cannot remove {} (left by rtscope ipc, pid {pid}): {e}",
                        r.describe()
                    ));
                    true
                }
            },
        });
        if let Err(e) = write_state(&path, &state) {
            out.failed
                .push(format!("cannot update {}: {e}", path.display()));
        }
    }
    out
}

/// `rtscope ipc --cleanup`: prints what it removed, one line each, or
/// "nothing to clean up"; failures go to stderr (exit 1).
pub fn cleanup_command() -> i32 {
    let c = clean_stale();
    let mut text = String::new();
    for l in &c.removed {
        let _ = writeln!(text, "{l}");
    }
    if c.removed.is_empty() && c.failed.is_empty() {
        text.push_str("nothing to clean up\n");
    }
    crate::output::say(&text);
    for e in &c.failed {
        eprintln!("error: {e}");
    }
    if c.failed.is_empty() {
        crate::error::EXIT_OK
    } else {
        crate::error::EXIT_RUN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_text_round_trips_and_rejects_anything_else() {
        let s = State {
            pid: 42,
            start: 123456,
            records: vec![
                Record {
                    kind: SysvKind::Sem,
                    id: 7,
                    key: 0,
                    ctime: 1_700_000_000,
                },
                Record {
                    kind: SysvKind::Msg,
                    id: 32769,
                    key: -5,
                    ctime: 1_700_000_001,
                },
            ],
        };
        assert_eq!(State::parse(&s.to_text()), Some(s.clone()));
        for bad in [
            "",
            "rtscope ipc state v2\nowner 1 2\n",
            "rtscope ipc state v1\n",
            "rtscope ipc state v1\nowner 1\n",
            "rtscope ipc state v1\nowner 1 2\nsysv_shm 1 0 5\n",
            "rtscope ipc state v1\nowner 1 2\nsysv_sem 1 0\n",
            "rtscope ipc state v1\nowner 1 2\nsysv_sem x 0 5\n",
        ] {
            assert_eq!(State::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_dead_or_reused_pid_is_not_the_owner() {
        let me = sys::getpid();
        let start = start_time("self").unwrap();
        let alive = State {
            pid: me,
            start,
            records: vec![],
        };
        assert!(owner_alive(&alive));
        assert!(!owner_alive(&State {
            start: start + 1,
            ..alive.clone()
        }));
        assert!(!owner_alive(&State {
            pid: i32::MAX,
            ..alive
        }));
    }
}
