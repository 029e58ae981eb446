//! One user-space hwlat run at a time on a machine.
//!
//! The tracer method allows one run at a time: the machine has one
//! `current_tracer`, and a second run finds it taken. The user-space method
//! runs a real-time busy loop per CPU; two such runs at once measure each
//! other (one run's loops starve the other's helpers, and RT throttling, a
//! machine-wide budget, stalls both), so a second one is refused the same
//! way. The runs hold an exclusive `flock` on a lock file while they measure;
//! the kernel drops it when the process ends, however it ends, so nothing is
//! left to clean up. The file holds the holder's pid, for the refusal.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// Overrides where the lock file is (tests that run beside each other).
pub const USER_LOCK_ENV: &str = "RTSCOPE_HWLAT_LOCK";

/// The lock of a user-space run; released on drop (or when the process ends).
#[derive(Debug)]
pub struct UserSpaceLock {
    _file: File,
}

fn default_path() -> PathBuf {
    if let Some(p) = std::env::var_os(USER_LOCK_ENV) {
        return PathBuf::from(p);
    }
    if Path::new("/run").is_dir() {
        PathBuf::from("/run/rtscope-hwlat-user.lock")
    } else {
        PathBuf::from("/tmp/rtscope-hwlat-user.lock")
    }
}

impl UserSpaceLock {
    /// Takes the lock at its usual place ([`USER_LOCK_ENV`], else
    /// `/run/rtscope-hwlat-user.lock`).
    pub fn take() -> Result<UserSpaceLock, String> {
        UserSpaceLock::take_at(&default_path())
    }

    /// Takes the lock file `path`. The error says who holds it, or why the
    /// file could not be used.
    pub fn take_at(path: &Path) -> Result<UserSpaceLock, String> {
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        match crate::sys::try_lock_exclusive(&f) {
            Ok(true) => {
                let _ = f.set_len(0);
                let _ = f.rewind();
                let _ = write!(f, "{}", std::process::id());
                Ok(UserSpaceLock { _file: f })
            }
            Ok(false) => {
                let mut text = String::new();
                let _ = f.read_to_string(&mut text);
                let who = match text.trim().parse::<u32>() {
                    Ok(pid) => format!("pid {pid}"),
                    Err(_) => "its pid not yet written".into(),
                };
                Err(format!(
                    "another rtscope hwlat run measures from user space ({who}): two at once would measure each other's busy loops, so rtscope runs one at a time, as the tracer does"
                ))
            }
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("lock");
        let first = UserSpaceLock::take_at(&p).unwrap();
        // Another open file description of the same file: another run.
        let e = UserSpaceLock::take_at(&p).unwrap_err();
        assert!(e.contains(&format!("(pid {})", std::process::id())), "{e}");
        drop(first);
        let again = UserSpaceLock::take_at(&p).unwrap();
        drop(again);
    }
}
