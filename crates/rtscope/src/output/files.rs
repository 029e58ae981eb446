//! The files a command writes: checked together before anything runs, so that
//! a run never starts only to lose its results at the end.
//!
//! - every path must be writable (a regular file is replaced atomically, a
//!   device or FIFO is written through, a symlink's target is written: see
//!   [`rtscope_core::file`]);
//! - two outputs may not name the same file (`--json x --report x` would keep
//!   only the last), except a device such as `/dev/null`;
//! - no output may name one of the command's inputs (`report in.json -o in.json`;
//!   see [`refuse_output_onto_input`]).

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::error::usage;

/// Refuses an output path that cannot be written, before anything is measured.
pub fn check_output(flag: &str, path: &Path) -> Result<()> {
    rtscope_core::file::check_writable(path).map_err(|e| {
        usage(format!(
            "{flag} {}: cannot write there: {e}",
            path.display()
        ))
    })
}

/// The same file, whether or not it exists yet: symlinks and `.`/`..`
/// resolved through the longest existing ancestor.
fn identity(path: &Path) -> PathBuf {
    identity_within(path, 40)
}

/// [`identity`], following at most `links` symbolic links (as the kernel's
/// limit: a loop ends as a path of its own, and the write then fails).
fn identity_within(path: &Path, links: u32) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    // A link to a file not made yet (`--junit y` with y -> x): the file
    // written is its target's.
    if links > 0 && abs.is_symlink() {
        if let Ok(target) = std::fs::read_link(&abs) {
            let target = match abs.parent() {
                Some(dir) if target.is_relative() => dir.join(target),
                _ => target,
            };
            return identity_within(&target, links - 1);
        }
    }
    match (abs.parent(), abs.file_name()) {
        (Some(dir), Some(name)) => identity_within(dir, links).join(name),
        _ => abs,
    }
}

/// Whether two paths name the same file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    identity(a) == identity(b)
}

/// The outputs (and inputs) of one command.
#[derive(Debug, Default)]
pub struct OutputPaths {
    outputs: Vec<(&'static str, PathBuf)>,
}

impl OutputPaths {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an output (if given): it must be writable and not already named
    /// by another output of the same command.
    pub fn add(&mut self, flag: &'static str, path: Option<&Path>) -> Result<()> {
        let Some(path) = path else { return Ok(()) };
        check_output(flag, path)?;
        if !rtscope_core::file::is_special(path) {
            if let Some((other, _)) = self.outputs.iter().find(|(_, p)| same_file(p, path)) {
                return Err(usage(format!(
                    "{flag} {} and {other} name the same file: give each output its own path",
                    path.display()
                )));
            }
        }
        self.outputs.push((flag, path.to_path_buf()));
        Ok(())
    }
}

/// Refuses an output path that names one of the inputs (`report in.json -o
/// in.json`, `./x` and `x`, a symbolic link to it): the input would be
/// replaced by the output. Paths are compared canonicalised; an output that
/// does not exist yet cannot be an input. Called before anything is written.
pub fn refuse_output_onto_input(flag: &str, output: &Path, inputs: &[&Path]) -> Result<()> {
    let Ok(out) = output.canonicalize() else {
        return Ok(());
    };
    for input in inputs {
        if input.canonicalize().is_ok_and(|i| i == out) {
            return Err(usage(format!(
                "{flag} {}: that is an input file ({}): write the output to another file",
                output.display(),
                input.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        let mut o = OutputPaths::new();
        o.add("--json", Some(&a)).unwrap();
        let dotted = dir.path().join(".").join("a.json");
        assert!(o.add("--report", Some(&dotted)).is_err());
        o.add("--report", Some(&dir.path().join("b.html"))).unwrap();
        o.add("--histogram", Some(Path::new("/dev/null"))).unwrap();
        o.add("--raw", Some(Path::new("/dev/null"))).unwrap();
    }

    #[test]
    fn a_link_to_a_file_not_made_yet_is_that_file() {
        let dir = tempfile::tempdir().unwrap();
        let x = dir.path().join("x.html");
        // y -> x (relative), z -> y, and x does not exist yet.
        std::os::unix::fs::symlink("x.html", dir.path().join("y.xml")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("y.xml"), dir.path().join("z")).unwrap();
        let mut o = OutputPaths::new();
        o.add("-o", Some(&x)).unwrap();
        let e = o
            .add("--junit", Some(&dir.path().join("y.xml")))
            .unwrap_err();
        assert!(e.to_string().contains("name the same file"), "{e}");
        assert!(o.add("--junit", Some(&dir.path().join("z"))).is_err());
        // A loop is a path of its own (the write fails there, not here).
        std::os::unix::fs::symlink("loop", dir.path().join("loop")).unwrap();
        assert!(!same_file(&dir.path().join("loop"), &x));
    }
}
