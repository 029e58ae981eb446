//! Version information for `rtscope --version`: the git commit the binary was
//! built from and the target it was built for.
//!
//! The commit comes from, in order: the `RTSCOPE_GIT_COMMIT` environment
//! variable (for packagers building from a tarball), `git rev-parse HEAD` when
//! the source is a git checkout, else "unknown". Nothing here fails the build.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(std::env::var_os("CARGO_MANIFEST_DIR")?)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-env-changed=RTSCOPE_GIT_COMMIT");
    let commit = match std::env::var("RTSCOPE_GIT_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => {
            let c = git(&["rev-parse", "--short=12", "HEAD"]);
            if c.is_some() {
                // Rebuild the version when HEAD moves: HEAD itself (another
                // branch) and the ref it names (a new commit on it).
                for p in [
                    git(&["rev-parse", "--git-path", "HEAD"]),
                    git(&["symbolic-ref", "-q", "HEAD"])
                        .and_then(|r| git(&["rev-parse", "--git-path", &r])),
                    git(&["rev-parse", "--git-path", "packed-refs"]),
                ]
                .into_iter()
                .flatten()
                {
                    let mut path = PathBuf::from(&p);
                    if path.is_relative() {
                        path = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap())
                            .join(path);
                    }
                    if path.exists() {
                        println!("cargo:rerun-if-changed={}", path.display());
                    }
                }
            }
            c.unwrap_or_else(|| "unknown".into())
        }
    };
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-env=RTSCOPE_GIT_COMMIT={commit}");
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=RTSCOPE_TARGET={target}");
}
