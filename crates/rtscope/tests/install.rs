//! Integration tests of what installing rtscope needs: `rtscope completions`,
//! `rtscope man` and the version line.

mod common;

use common::Run;

/// `rtscope ARGS`: its stdout (exit 0, nothing on stderr).
fn stdout_of(args: &[&str]) -> String {
    quiet_stdout(Run::new(args))
}

/// The stdout of `run`, which exits 0 and says nothing on stderr.
fn quiet_stdout(run: Run) -> String {
    let out = run.exits(0);
    assert!(out.stderr.is_empty(), "{}", out.stderr());
    String::from_utf8(out.out.stdout).unwrap()
}

#[test]
fn completions_for_each_shell_name_the_subcommands_and_options() {
    let bash = stdout_of(&["completions", "bash"]);
    assert!(bash.contains("_rtscope()"), "{bash}");
    assert!(bash.contains("complete -F _rtscope"), "{bash}");
    for word in ["cyclic", "clock", "period", "ipc", "--no-rt", "--period"] {
        assert!(bash.contains(word), "bash: {word} missing");
    }
    assert!(
        !bash.contains("__load-worker"),
        "hidden subcommand completed"
    );

    let zsh = stdout_of(&["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef rtscope"), "{zsh}");
    assert!(
        zsh.contains("'--no-rt[") || zsh.contains("--no-rt"),
        "{zsh}"
    );

    let fish = stdout_of(&["completions", "fish"]);
    assert!(fish.contains("complete -c rtscope"), "{fish}");
    assert!(
        fish.contains("__fish_seen_subcommand_from cyclic"),
        "{fish}"
    );
}

#[test]
fn completions_refuse_an_unknown_shell_in_one_line() {
    let out = Run::new(["completions", "tcsh"]).exits(2);
    assert!(out.stdout.is_empty());
    let e = out.one_line();
    assert!(e.contains("tcsh"), "{e}");
}

/// `rtscope ARGS` with SOURCE_DATE_EPOCH set to `epoch`: its stdout (exit 0).
fn stdout_dated(args: &[&str], epoch: &str) -> String {
    quiet_stdout(Run::new(args).env("SOURCE_DATE_EPOCH", epoch))
}

#[test]
fn man_prints_the_main_page() {
    // Upper-case title and SOURCE_DATE_EPOCH's date (mandoc -Tlint clean).
    let page = stdout_dated(&["man"], "86400");
    let th = format!(
        ".TH RTSCOPE 1 1970-01-02 \"rtscope {}\" \"rtscope manual\"",
        env!("CARGO_PKG_VERSION")
    );
    assert!(page.contains(&th), "{page}");
    assert!(page.contains(".SH SYNOPSIS"), "{page}");
    assert!(page.contains("rtscope\\-cyclic(1)"), "{page}");
}

#[test]
fn man_dir_writes_one_page_per_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("man1");
    let said = stdout_dated(&["man", out_dir.to_str().unwrap()], "1795000000");
    assert!(said.starts_with("man: "), "{said}");
    let mut names: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for want in [
        "rtscope.1",
        "rtscope-cyclic.1",
        "rtscope-clock.1",
        "rtscope-period.1",
        "rtscope-ipc.1",
        "rtscope-import-cyclictest.1",
    ] {
        assert!(names.iter().any(|n| n == want), "{want}: {names:?}");
    }
    assert!(said.contains(&format!("{} pages", names.len())), "{said}");
    let cyclic = std::fs::read_to_string(out_dir.join("rtscope-cyclic.1")).unwrap();
    assert!(
        cyclic.contains(&format!(
            ".TH RTSCOPE-CYCLIC 1 2026-11-18 \"rtscope {}\" \"rtscope manual\"",
            env!("CARGO_PKG_VERSION")
        )),
        "{cyclic}"
    );
    assert!(cyclic.contains("\\fB\\-\\-no\\-rt\\fR"), "{cyclic}");
}

#[test]
fn man_refuses_a_file_as_directory() {
    let f = tempfile::NamedTempFile::new().unwrap();
    let e = Run::new(["man", f.path().to_str().unwrap()])
        .exits(2)
        .one_line();
    assert!(e.contains("not a directory"), "{e}");
}

#[test]
fn man_refuses_a_source_date_epoch_that_is_no_number() {
    let dir = tempfile::tempdir().unwrap();
    let e = Run::new(["man", dir.path().to_str().unwrap()])
        .env("SOURCE_DATE_EPOCH", "yesterday")
        .exits(2)
        .one_line();
    assert!(e.contains("SOURCE_DATE_EPOCH='yesterday'"), "{e}");
}

#[test]
fn version_names_the_commit_and_the_target() {
    let v = stdout_of(&["--version"]);
    let line = v.trim_end();
    assert!(
        line.starts_with(&format!("rtscope {} (", env!("CARGO_PKG_VERSION"))),
        "{line}"
    );
    // The target triple this test binary was built for is the binary's too.
    let target = if cfg!(target_arch = "x86_64") {
        "x86_64-"
    } else if cfg!(target_arch = "aarch64") {
        "aarch64-"
    } else {
        ""
    };
    assert!(line.contains(target) && line.ends_with(')'), "{line}");
    let inside = &line[line.find('(').unwrap() + 1..line.len() - 1];
    let commit = inside.split(' ').next().unwrap();
    assert!(!commit.is_empty() && !commit.contains(')'), "{line}");
}
