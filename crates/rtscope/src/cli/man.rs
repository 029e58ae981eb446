//! What installing rtscope needs besides the binary: shell completions and
//! man pages, both generated from the clap definitions in `cli/` so that
//! they never drift from the options the binary takes.
//!
//! - `rtscope completions bash|zsh|fish|elvish|powershell`: the script on stdout.
//! - `rtscope man`: the page `rtscope(1)` on stdout (`rtscope man | man -l -`).
//! - `rtscope man DIR`: `rtscope.1` and one page per subcommand
//!   (`rtscope-cyclic.1`, `rtscope-import-cyclictest.1`, ...) written to DIR.
//!
//! `packaging/build-deb.sh` installs both in the Debian package. The pages
//! pass `mandoc -Tlint -W warning` (CI): an upper-case title, a date (from
//! `SOURCE_DATE_EPOCH` when set, as for reproducible builds, else today), and
//! clap's blank-line paragraph breaks as one `.sp`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Command, CommandFactory};

use super::{Cli, CompletionsArgs, ManArgs};
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
            let date = man_date(std::env::var("SOURCE_DATE_EPOCH").ok().as_deref())?;
            let mut buf = Vec::new();
            clap_mangen::Man::new(command())
                .title("RTSCOPE")
                .date(date)
                .manual("rtscope manual")
                .render(&mut buf)?;
            crate::output::say(&tidy_roff(&String::from_utf8_lossy(&buf)));
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
    let date = man_date(std::env::var("SOURCE_DATE_EPOCH").ok().as_deref())?;
    let mut written = Vec::new();
    pages_under(&cmd, None, &date, dir, &mut written)?;
    Ok(written)
}

/// The date on the pages, `YYYY-MM-DD` (UTC): that of `source_date_epoch`
/// (seconds since 1970, the `SOURCE_DATE_EPOCH` of reproducible builds) when
/// given, else today's. An epoch that is not a number of seconds is a usage
/// error, as the reproducible-builds specification asks.
fn man_date(source_date_epoch: Option<&str>) -> Result<String> {
    let t = match source_date_epoch {
        Some(s) => {
            let secs: u64 = s.trim().parse().map_err(|_| {
                usage(format!(
                    "SOURCE_DATE_EPOCH='{s}': not a number of seconds since 1970"
                ))
            })?;
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs)
        }
        None => std::time::SystemTime::now(),
    };
    let stamp = humantime::format_rfc3339_seconds(t).to_string();
    Ok(stamp[..10].to_string())
}

/// clap_mangen's roff as `mandoc -Tlint` wants it: a blank line between two
/// `.br` (clap's paragraph break in a long help) becomes one `.sp` (the same
/// output, without the paragraph macros mandoc skips), and trailing blanks
/// go (not an escaped `\ `).
fn tidy_roff(page: &str) -> String {
    let page = page.replace("\n.br\n\n.br\n", "\n.sp\n");
    let mut out = String::with_capacity(page.len());
    for line in page.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let mut end = body.trim_end_matches(' ').len();
        if end < body.len() && body[..end].ends_with('\\') {
            end += 1;
        }
        out.push_str(&body[..end]);
        out.push_str(nl);
    }
    out
}

/// Examples for each page, by the page's name: a comment and a command line
/// that runs as shown (the unit tests parse every one with the real parser).
const EXAMPLES: &[(&str, &[(&str, &str)])] = &[
    ("rtscope", &[
        ("Is this machine ready for real-time work?", "rtscope check --measure"),
        ("Wake-up latency for ten minutes, with a document and a report", "rtscope cyclic -D 10m --json run.json --report run.html"),
        ("Two runs side by side, with confidence intervals", "rtscope compare before.json after.json --html compare.html"),
    ]),
    ("rtscope-cyclic", &[
        ("One measuring thread per CPU at 1 ms, SCHED_FIFO 95, for an hour", "rtscope cyclic -i 1ms -D 1h --json run.json"),
        ("The same under a 50 % CPU load, stopping at the first wake-up over 500 us", "rtscope cyclic -D 10m --load cpu:50 --break-above 500us"),
        ("Which kernel stage the worst wake-ups lost their time in", "rtscope cyclic -D 1m --trace-outliers 100us"),
        ("A CI gate: exit 3 when the worst wake-up exceeds 200 us", "rtscope cyclic -D 5m -q --fail-above 200us"),
    ]),
    ("rtscope-cyclictest", &[
        ("A cyclictest command line, unchanged: its output, and rtscope's document beside it", "rtscope cyclictest -m -S -p 95 -i 1000 -h 400 -D 2m"),
        ("The OSADL-style long run, quiet, with its histogram", "rtscope cyclictest -l100000000 -m -Sp99 -i200 -h400 -q"),
    ]),
    ("rtscope-clock", &[
        ("What reading each time source costs", "rtscope clock"),
        ("Sparse reads, as a program that reads the clock now and then sees it", "rtscope clock --mode sparse --every 100ms --pairs 20"),
    ]),
    ("rtscope-period", &[
        ("A loop's period at 100 us and 1 ms as every time source sees it", "rtscope period -i 100us,1ms -l 10000"),
    ]),
    ("rtscope-load", &[
        ("Two loads on CPU 1 for 10 s, and what they achieved", "rtscope load cpu:50 mem-churn:50 --load-cpus 1 -D 10"),
        ("The loads and their parameters", "rtscope load --list"),
    ]),
    ("rtscope-matrix", &[
        ("Two periods without and with a 50 % CPU load", "rtscope matrix --periods 300us,1ms --loads none,cpu --levels 50 --samples 1000 --out matrix"),
    ]),
    ("rtscope-ipc", &[
        ("Handoff latency of every mechanism between two threads", "rtscope ipc"),
        ("Futex and POSIX queues between two processes, round trip", "rtscope ipc --mech futex,posix-mq --between processes --pattern roundtrip"),
        ("Remove what killed ipc runs left behind", "rtscope ipc --cleanup"),
    ]),
    ("rtscope-timer", &[
        ("Sleep error of clock_nanosleep with each compensation", "rtscope timer --api clock_nanosleep --compensate none,static,adaptive,hybrid -l 100"),
        ("The beacon chains of orders 0 to 4", "rtscope timer --beacon --orders 0..4 --cycles 5"),
    ]),
    ("rtscope-check", &[
        ("The readiness audit, with short measurements", "rtscope check --measure"),
        ("The audit as JSON, and a script of the fixes it suggests", "rtscope check --json check.json --fix-script fix.sh"),
    ]),
    ("rtscope-noise", &[
        ("OS noise on CPU 1 for 30 s, each gap attributed", "rtscope noise -a 1 -D 30s --trace"),
    ]),
    ("rtscope-hwlat", &[
        ("Hardware stalls for 10 s, in hwlatdetect's terms: a 950 ms spin of every 1 s window", "rtscope hwlat -D 10s --window 1s --width 950ms --threshold 10us --json hwlat.json"),
        ("The same on CPU 2 only", "rtscope hwlat -a 2 -D 1m"),
        ("Where the kernel has no hwlat tracer: from user space on CPU 1 (an upper bound)", "rtscope hwlat --method user-space -a 1 -D 30s"),
    ]),
    ("rtscope-qualify", &[
        ("Is this machine good for a 100 µs deadline? check, hwlat, then every CPU for 10 min under the standard load, each outlier's cause named", "rtscope qualify --max 100us -D 10m --report qualify.html --junit qualify.xml"),
        ("CPUs 2-3 only, no background load, a checkpoint every 15 min of a 12 h run", "rtscope qualify --max 50us --cpus 2-3 --load none -D 12h --checkpoint 15m --json q.json"),
    ]),
    ("rtscope-irq", &[
        ("Timer interrupt to task, split into its kernel stages", "rtscope irq --source timer -D 60s"),
        ("UDP packets on loopback: kernel receive stamp to task", "rtscope irq --source net --rate 2000 -D 60s"),
    ]),
    ("rtscope-report", &[
        ("One self-contained HTML report of two runs", "rtscope report run.json other.json -o report.html"),
    ]),
    ("rtscope-compare", &[
        ("A baseline and a candidate, in the terminal and as a page", "rtscope compare base.json new.json --html compare.html"),
        ("A CI gate: exit 3 when the candidate is worse", "rtscope compare base.json new.json --fail-if-worse"),
    ]),
    ("rtscope-serve", &[
        ("Every result of a directory over HTTP on loopback", "rtscope serve results --listen 127.0.0.1:8080"),
    ]),
    ("rtscope-pool", &[
        ("Runs of one setting, made alternately with another, as one document", "rtscope pool a1.json a2.json a3.json -o a.json"),
    ]),
    ("rtscope-import", &[
        ("A cyclictest JSON output as an rtscope document", "rtscope import cyclictest --json ct.json -o ct-rtscope.json"),
    ]),
    ("rtscope-import-cyclictest", &[
        ("cyclictest's --json output", "rtscope import cyclictest --json ct.json -o ct-rtscope.json"),
        ("cyclictest's -h histogram text", "rtscope import cyclictest --histogram ct-hist.txt -o ct-hist-rtscope.json"),
    ]),
    ("rtscope-completions", &[
        ("Bash completion for the current shell", "rtscope completions bash"),
    ]),
    ("rtscope-man", &[
        ("Every page into a directory, then read one", "rtscope man pages"),
    ]),
];

/// The exit status section: the same codes for every command.
const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "The command did what was asked: a measurement ran to its end, or was stopped with Ctrl-C or SIGTERM, and its results were written; check found every item ready."),
    ("1", "A run error: the machine refused something the run needs (a real-time priority, a trace instance, a device), or the run failed part way; what was measured is still written. check: an item warns."),
    ("2", "Refused input: a bad option, value or input file, said in one line on stderr before anything ran."),
    ("3", "A gate failed: --fail-if or --fail-above (the experiments, report) or --fail-if-worse (compare); check: an item fails."),
    ("130", "A second SIGINT or SIGTERM ended the process at once."),
];

/// The `.SH` sections rtscope adds after clap's: EXAMPLES, EXIT STATUS and
/// SEE ALSO, as roff text.
fn extra_sections(name: &str, siblings: &[String]) -> String {
    use clap_mangen::roff::{roman, Roff};
    let mut r = Roff::new();
    if let Some((_, examples)) = EXAMPLES.iter().find(|(n, _)| *n == name) {
        r.control("SH", ["EXAMPLES"]);
        for (what, cmd) in *examples {
            r.control("TP", []);
            r.text([roman(*what)]);
            r.control("RS", []);
            r.control("EX", []);
            r.text([roman(*cmd)]);
            r.control("EE", []);
            r.control("RE", []);
        }
    }
    r.control("SH", ["EXIT STATUS"]);
    for (code, what) in EXIT_STATUS {
        r.control("TP", []);
        r.text([roman(*code)]);
        r.text([roman(*what)]);
    }
    r.control("SH", ["SEE ALSO"]);
    let mut refs: Vec<String> = siblings.iter().map(|s| format!("{s}(1)")).collect();
    if name.starts_with("rtscope-cyclic") || name.starts_with("rtscope-import") {
        refs.push("cyclictest(8)".into());
    }
    r.text([roman(refs.join(", "))]);
    r.control("PP", []);
    r.text([roman(
        "The docs/ directory of the rtscope source: a page per experiment, the result document's schema, and how each figure is measured.",
    )]);
    // The apostrophe preamble is at the top of the page already.
    let text = r.render();
    match text.find(".SH") {
        Some(i) => text[i..].to_string(),
        None => text,
    }
}

/// The page of `cmd`, then those of its visible subcommands. `parent`: the
/// page that lists this one (none for `rtscope` itself); `date`: the
/// pages' date.
fn pages_under(
    cmd: &Command,
    parent: Option<&str>,
    date: &str,
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> Result<()> {
    let name = cmd.get_display_name().unwrap_or(cmd.get_name()).to_string();
    let man = clap_mangen::Man::new(cmd.clone())
        .title(name.to_uppercase())
        .date(date)
        .source(concat!("rtscope ", env!("CARGO_PKG_VERSION")))
        .manual("rtscope manual");
    let path = dir.join(man.get_filename());
    let subs: Vec<&Command> = cmd.get_subcommands().filter(|s| !s.is_hide_set()).collect();
    // SEE ALSO: the parent page, then the pages this one leads to.
    let mut see: Vec<String> = parent.map(str::to_string).into_iter().collect();
    see.extend(
        subs.iter()
            .map(|s| s.get_display_name().unwrap_or(s.get_name()).to_string()),
    );
    // clap's page, with rtscope's sections before the version (the last).
    let mut buf = Vec::new();
    man.render(&mut buf)?;
    let page = String::from_utf8_lossy(&buf).into_owned();
    let extra = extra_sections(&name, &see);
    let page = match page.find(".SH VERSION") {
        Some(i) => format!("{}{extra}{}", &page[..i], &page[i..]),
        None => page + &extra,
    };
    let buf = tidy_roff(&page).into_bytes();
    std::fs::write(&path, buf).with_context(|| format!("writing {}", path.display()))?;
    written.push(path);
    for sub in subs {
        pages_under(sub, Some(&name), date, dir, written)?;
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
    fn every_page_has_examples_that_parse_exit_status_and_see_also() {
        use clap::Parser;
        let dir = tempfile::tempdir().unwrap();
        let pages = write_pages(dir.path()).unwrap();
        for p in &pages {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(p).unwrap();
            let at = |h: &str| text.find(h).unwrap_or_else(|| panic!("{name}: no {h}"));
            // After clap's sections, before the version.
            assert!(at(".SH OPTIONS") < at(".SH EXAMPLES"), "{name}");
            assert!(at(".SH EXAMPLES") < at(".SH \"EXIT STATUS\""), "{name}");
            assert!(at(".SH \"EXIT STATUS\"") < at(".SH \"SEE ALSO\""), "{name}");
            assert!(at(".SH \"SEE ALSO\"") < at(".SH VERSION"), "{name}");
            assert_eq!(
                text.matches(".ie \\n(.g").count(),
                1,
                "{name}: one preamble"
            );
            for code in ["0", "1", "2", "3", "130"] {
                assert!(
                    text.contains(&format!("\n.TP\n{code}\n")),
                    "{name}: exit {code}"
                );
            }
            if name != "rtscope" {
                assert!(
                    text.contains("rtscope(1)") || name.starts_with("rtscope-import-"),
                    "{name}"
                );
            }
        }
        assert_eq!(
            pages.len(),
            EXAMPLES.len(),
            "a page without examples, or examples without a page"
        );
        for (page, examples) in EXAMPLES {
            assert!(!examples.is_empty(), "{page}");
            assert!(
                pages
                    .iter()
                    .any(|p| p.file_stem().unwrap().to_string_lossy() == *page),
                "{page}: no such page"
            );
            for (what, cmd) in *examples {
                assert!(!what.is_empty());
                // The command names its page's subcommand and parses.
                let words: Vec<&str> = cmd.split_whitespace().collect();
                let sub = page.trim_start_matches("rtscope").replace('-', " ");
                assert!(cmd.starts_with(&format!("rtscope{sub}")), "{page}: {cmd}");
                if let Err(e) = super::Cli::try_parse_from(&words) {
                    panic!("{page}: {cmd}: {e}");
                }
            }
        }
        let cyclic = std::fs::read_to_string(dir.path().join("rtscope-cyclic.1")).unwrap();
        assert!(cyclic.contains("cyclictest(8)"), "{cyclic}");
        let import =
            std::fs::read_to_string(dir.path().join("rtscope-import-cyclictest.1")).unwrap();
        assert!(import.contains("rtscope\\-import(1)"), "{import}");
    }

    #[test]
    fn the_date_is_source_date_epochs_or_today() {
        assert_eq!(man_date(Some("0")).unwrap(), "1970-01-01");
        assert_eq!(man_date(Some("1795000000")).unwrap(), "2026-11-18");
        assert_eq!(man_date(Some(" 86399\n")).unwrap(), "1970-01-01");
        let e = man_date(Some("yesterday")).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        assert!(e.to_string().contains("SOURCE_DATE_EPOCH"), "{e}");
        let today = man_date(None).unwrap();
        assert_eq!(today.len(), 10, "{today}");
        assert!(today.as_str() > "2026-01-01", "{today}");
    }

    #[test]
    fn tidy_roff_merges_breaks_and_drops_trailing_blanks() {
        let page = ".TP\nHow to read\n.br\n\n.br\n\\fIPossible values:\\fR\nkeep\\ \n[\\fB\\-h\\fR] \n.br\nlast";
        assert_eq!(
            tidy_roff(page),
            ".TP\nHow to read\n.sp\n\\fIPossible values:\\fR\nkeep\\ \n[\\fB\\-h\\fR]\n.br\nlast"
        );
        // A lone .br is a break of its own, kept.
        assert_eq!(tidy_roff("a\n.br\nb\n"), "a\n.br\nb\n");
        // A line ending in a backslash (no blank after it) is left whole.
        assert_eq!(tidy_roff("x\\\nnext"), "x\\\nnext");
    }

    #[test]
    fn man_dir_writes_the_tidy_pages() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("man");
        let code = run_man(ManArgs {
            dir: Some(out.clone()),
        })
        .unwrap();
        assert_eq!(code, crate::error::EXIT_OK);
        let page = std::fs::read_to_string(out.join("rtscope-cyclic.1")).unwrap();
        assert!(page.contains(".TH RTSCOPE-CYCLIC 1 "), "{page}");
        assert!(!page.contains("\n.br\n\n.br\n"));
    }

    #[test]
    fn pages_have_an_upper_case_title_and_a_date() {
        let dir = tempfile::tempdir().unwrap();
        write_pages(dir.path()).unwrap();
        let cyclic = std::fs::read_to_string(dir.path().join("rtscope-cyclic.1")).unwrap();
        let th = cyclic.lines().find(|l| l.starts_with(".TH ")).unwrap();
        let date = man_date(std::env::var("SOURCE_DATE_EPOCH").ok().as_deref()).unwrap();
        assert_eq!(
            th,
            format!(
                ".TH RTSCOPE-CYCLIC 1 {date} \"rtscope {}\" \"rtscope manual\"",
                env!("CARGO_PKG_VERSION")
            )
        );
        assert!(!cyclic.contains("\n.br\n\n.br\n"));
        assert!(!cyclic.lines().any(|l| l.ends_with(' ')));
    }

    #[test]
    fn a_file_is_not_a_man_directory() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let e = write_pages(f.path()).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
    }
}
