//! What installing rtscope needs besides the binary: shell completions and
//! man pages, both generated from the clap definitions in `cli.rs` so that
//! they never drift from the options the binary takes.
//!
//! - `rtscope completions bash|zsh|fish|elvish|powershell`: the script on stdout.
//! - `rtscope man`: the page `rtscope(1)` on stdout (`rtscope man | man -l -`).
//! - `rtscope man DIR`: `rtscope.1` and one page per subcommand
//!   (`rtscope-cyclic.1`, `rtscope-import-cyclictest.1`, ...) written to DIR.
//!
//! `packaging/build-deb.sh` installs both in the Debian package.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Command, CommandFactory};

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::error::usage;

/// The clap command tree, as the completions and man pages see it (man pages
/// carry the plain semantic version, not the commit and target).
fn command() -> Command {
    Cli::command().version(env!("CARGO_PKG_VERSION"))
}

/// The command tree without hidden subcommands (`__load-worker`): clap_complete's
/// bash script would offer them otherwise.
fn visible_command() -> Command {
    let full = command();
    let visible: Vec<Command> = full
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    let mut cmd = Command::new("rtscope")
        .version(env!("CARGO_PKG_VERSION"))
        .propagate_version(true)
        .subcommand_required(true)
        .subcommands(visible);
    if let Some(about) = full.get_about() {
        cmd = cmd.about(about.clone());
    }
    cmd
}

/// `rtscope completions SHELL`.
pub fn run_completions(a: CompletionsArgs) -> Result<i32> {
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut visible_command(), "rtscope", &mut buf);
    crate::output::say(&String::from_utf8_lossy(&buf));
    Ok(crate::error::EXIT_OK)
}

/// `rtscope man [DIR]`.
pub fn run_man(a: ManArgs) -> Result<i32> {
    match a.dir {
        None => {
            let mut buf = Vec::new();
            clap_mangen::Man::new(command())
                .manual("rtscope manual")
                .render(&mut buf)?;
            crate::output::say(&String::from_utf8_lossy(&buf));
        }
        Some(dir) => {
            let pages = write_pages(&dir)?;
            crate::output::outln!("man: {} pages in {}", pages.len(), dir.display());
        }
    }
    Ok(crate::error::EXIT_OK)
}

/// Writes `rtscope.1` and a page per visible subcommand (nested ones
/// included, hidden ones left out) to `dir`, created if missing. Returns the
/// files written.
pub fn write_pages(dir: &Path) -> Result<Vec<PathBuf>> {
    if dir.exists() && !dir.is_dir() {
        return Err(usage(format!("{}: not a directory", dir.display())));
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // Built once with clap's `help` subcommand off (no page for it): clap then
    // names each subcommand `rtscope-cyclic`, `rtscope-import-cyclictest`, ...
    // (its display name, which is also the page's name and title).
    let mut cmd = command().disable_help_subcommand(true);
    cmd.build();
    let mut written = Vec::new();
    pages(&cmd, dir, &mut written)?;
    Ok(written)
}

/// The page of `cmd`, then those of its visible subcommands.
fn pages(cmd: &Command, dir: &Path, written: &mut Vec<PathBuf>) -> Result<()> {
    let man = clap_mangen::Man::new(cmd.clone())
        .source(concat!("rtscope ", env!("CARGO_PKG_VERSION")))
        .manual("rtscope manual");
    let path = dir.join(man.get_filename());
    let mut buf = Vec::new();
    man.render(&mut buf)?;
    std::fs::write(&path, buf).with_context(|| format!("writing {}", path.display()))?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages(sub, dir, written)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_visible_subcommand_gets_a_page() {
        let dir = tempfile::tempdir().unwrap();
        let pages = write_pages(dir.path()).unwrap();
        let names: Vec<String> = pages
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        for want in [
            "rtscope.1",
            "rtscope-cyclic.1",
            "rtscope-clock.1",
            "rtscope-period.1",
            "rtscope-ipc.1",
            "rtscope-import-cyclictest.1",
            "rtscope-man.1",
            "rtscope-completions.1",
        ] {
            assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
        }
        assert!(
            !names.iter().any(|n| n.contains("load-worker")),
            "{names:?}"
        );
        assert!(!names.iter().any(|n| n.contains("-help")), "{names:?}");
        let cyclic = std::fs::read_to_string(dir.path().join("rtscope-cyclic.1")).unwrap();
        assert!(
            cyclic.starts_with(".ie") || cyclic.contains(".TH"),
            "{cyclic}"
        );
        assert!(cyclic.contains("rtscope\\-cyclic"), "{cyclic}");
        assert!(cyclic.contains("\\-\\-no\\-rt"), "{cyclic}");
    }

    #[test]
    fn a_file_is_not_a_man_directory() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let e = write_pages(f.path()).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
    }
}
