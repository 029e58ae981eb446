//! The file-system root every check reads through, so that tests (and
//! `--root DIR`) can feed a fake `/proc` and `/sys` tree.

use std::path::{Path, PathBuf};

/// A directory standing in for `/`.
#[derive(Debug, Clone)]
pub struct Root {
    base: PathBuf,
}

impl Root {
    /// `base` stands for `/`.
    pub fn new(base: impl Into<PathBuf>) -> Self {
        Root { base: base.into() }
    }

    /// Whether this is the running system's own root (probes that are not
    /// files — SCHED_FIFO, measurements — only make sense there).
    pub fn is_live(&self) -> bool {
        self.base == Path::new("/")
    }

    /// The directory standing for `/`.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// `abs` (an absolute path such as `/proc/cmdline`) under this root.
    pub fn path(&self, abs: &str) -> PathBuf {
        self.base.join(abs.trim_start_matches('/'))
    }

    /// The file's text, unchanged; `None` when it cannot be read.
    pub fn read_raw(&self, abs: &str) -> Option<String> {
        std::fs::read(self.path(abs))
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    /// The file's text trimmed; `None` when missing, unreadable or empty.
    pub fn read(&self, abs: &str) -> Option<String> {
        self.read_raw(abs)
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    /// The file as an integer.
    pub fn read_i64(&self, abs: &str) -> Option<i64> {
        self.read(abs).and_then(|s| s.parse().ok())
    }

    /// A symbolic link's target (`/proc/self/ns/pid` -> `pid:[...]`).
    pub fn read_link(&self, abs: &str) -> Option<String> {
        std::fs::read_link(self.path(abs))
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
    }

    pub fn exists(&self, abs: &str) -> bool {
        self.path(abs).exists()
    }

    /// The entries of a directory, sorted (empty when it cannot be read).
    pub fn list(&self, abs: &str) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.path(abs))
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Numeric directory entries (`/proc/<pid>`, `/proc/irq/<n>`), ascending.
    pub fn numeric_entries(&self, abs: &str) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .list(abs)
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect();
        v.sort_unstable();
        v
    }
}
