//! The documentation's examples, run.
//!
//! Every `rtscope ...` command in README.md and docs/*.md is extracted from the
//! markdown and run against the binary, shortened (durations, loop counts and
//! long periods are cut down by the rules in [`shorten`], so the whole file
//! runs in seconds). Where a code block shows a session — `$ rtscope ...`
//! followed by the output — the output's shape is checked too: every line
//! shown must appear in the real output, in the same order, once numbers are
//! redacted (`14.8`, `193.1k`, `-3` all become `#`) and runs of spaces are
//! collapsed. Headers, column names, units and series names therefore have to
//! match; values do not. Lines starting with `warning:` are not required (they
//! depend on the machine), and a shown block may be an excerpt (lines of the
//! real output may be left out, marked `...` or not, but not changed).
//!
//! A command that no longer parses, fails, runs longer than [`LIMIT`] once
//! shortened, or whose output no longer has the documented shape fails this
//! test, naming the file and line of the example.
//!
//! Not run: synopsis lines (`[OPTION]`, `A|B`, `...`), `cargo` commands (the
//! build, the tests, the library example) and commands of other tools.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The longest one shortened example may run.
const LIMIT: Duration = Duration::from_secs(30);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One example found in a markdown file.
#[derive(Debug)]
struct Example {
    file: String,
    line: usize,
    /// The first line of its code block: a block's examples run in order
    /// (a session may read what the command before it wrote).
    block: usize,
    /// The command line as written (continuations joined, comment removed).
    command: String,
    /// The output shown below a `$ command`, if any.
    shown: Option<Vec<String>>,
}

/// Every markdown file whose examples are run.
fn markdown_files() -> Vec<PathBuf> {
    let root = repo_root();
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ readable")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// Removes a trailing `# comment` (a `#` after whitespace).
fn strip_comment(line: &str) -> &str {
    match line.find(" #") {
        Some(i) => line[..i].trim_end(),
        None => line.trim_end(),
    }
}

fn is_command(line: &str) -> bool {
    let l = line.trim_start();
    l.starts_with("rtscope ") || l == "rtscope" || l.starts_with("sudo rtscope")
}

/// A synopsis line (`rtscope clock [--mode a|b] ...`), not a command to run.
fn is_synopsis(cmd: &str) -> bool {
    cmd.contains('[') || cmd.contains('|') || cmd.contains("...") || cmd.contains('<')
}

/// Joins `\` continuation lines starting at `lines[i]`; returns the joined
/// line and the index of the next line.
fn joined(lines: &[&str], mut i: usize) -> (String, usize) {
    let mut out = String::new();
    loop {
        let l = strip_comment(lines[i]);
        i += 1;
        if let Some(head) = l.strip_suffix('\\') {
            out.push_str(head.trim());
            out.push(' ');
            if i < lines.len() {
                continue;
            }
        } else {
            out.push_str(l.trim());
        }
        return (out, i);
    }
}

/// Extracts the examples of one markdown file.
fn examples_of(path: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(path).expect("markdown readable");
    let name = path
        .strip_prefix(repo_root())
        .unwrap_or(path)
        .display()
        .to_string();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].starts_with("```") {
            i += 1;
            continue;
        }
        let lang = lines[i].trim_start_matches('`').trim();
        let start = i + 1;
        let mut end = start;
        while end < lines.len() && !lines[end].starts_with("```") {
            end += 1;
        }
        let block = &lines[start..end];
        i = end + 1;
        if !matches!(lang, "" | "sh" | "text" | "console") {
            continue;
        }
        let first = block.iter().find(|l| !l.trim().is_empty());
        if first.is_some_and(|l| l.starts_with("$ ")) {
            // A session: `$ command` lines, each followed by its output.
            let mut j = 0;
            while j < block.len() {
                if let Some(rest) = block[j].strip_prefix("$ ") {
                    let mut cmd_lines: Vec<&str> = vec![rest];
                    let mut k = j + 1;
                    while cmd_lines
                        .last()
                        .is_some_and(|l| l.trim_end().ends_with('\\'))
                        && k < block.len()
                    {
                        cmd_lines.push(block[k]);
                        k += 1;
                    }
                    let (command, _) = joined(&cmd_lines, 0);
                    let mut shown = Vec::new();
                    while k < block.len() && !block[k].starts_with("$ ") {
                        shown.push(block[k].to_string());
                        k += 1;
                    }
                    if is_command(&command) && !is_synopsis(&command) {
                        out.push(Example {
                            file: name.clone(),
                            line: start + j + 1,
                            block: start,
                            command,
                            shown: Some(shown),
                        });
                    }
                    j = k;
                } else {
                    j += 1;
                }
            }
            continue;
        }
        // A block of commands: every non-blank line is a command, a comment or a
        // continuation. Anything else (file contents, output) is not run.
        let mut cmds = Vec::new();
        let mut j = 0;
        let mut all_commands = true;
        while j < block.len() {
            let l = block[j].trim();
            if l.is_empty() || l.starts_with('#') {
                j += 1;
                continue;
            }
            // Other tools' command lines (the build, peers) are part of a
            // block of commands, but only rtscope's are run.
            let other = ["cargo ", "sudo ", "cyclictest ", "stress-ng ", "perf "];
            if is_command(l) || other.iter().any(|o| l.starts_with(o)) {
                let (command, next) = joined(block, j);
                cmds.push((start + j + 1, command));
                j = next;
            } else {
                all_commands = false;
                break;
            }
        }
        if !all_commands {
            continue;
        }
        for (line, command) in cmds {
            if is_command(&command) && !is_synopsis(&command) {
                out.push(Example {
                    file: name.clone(),
                    line,
                    block: start,
                    command,
                    shown: None,
                });
            }
        }
    }
    out
}

fn parse_duration_ns(s: &str) -> Option<u64> {
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.')?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    let mult = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" => 60e9,
        "h" => 3600e9,
        _ => return None,
    };
    Some((v * mult) as u64)
}

/// The option's value, if `args[i]` is one of `names`.
fn is_opt(args: &[String], i: usize, names: &[&str]) -> bool {
    names.contains(&args[i].as_str()) && i + 1 < args.len()
}

fn has_opt(args: &[String], names: &[&str]) -> bool {
    args.iter().any(|a| names.contains(&a.as_str()))
}

fn cap(v: &str, max: u64) -> String {
    match v.parse::<u64>() {
        Ok(n) if n > max => max.to_string(),
        _ => v.to_string(),
    }
}

/// Periods of 5 ms and more are divided by 50 (10ms → 200us), shorter ones kept.
fn short_periods(list: &str) -> String {
    list.split(',')
        .map(|p| match parse_duration_ns(p) {
            Some(ns) if ns >= 5_000_000 => format!("{}us", ns / 50 / 1000),
            _ => p.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The example's arguments, cut down to run in a second or two: the shape of
/// the output (series, columns, cells) stays what the documented command gives.
fn shorten(mut args: Vec<String>) -> Vec<String> {
    let sub = args.first().cloned().unwrap_or_default();
    if sub == "cyclictest" {
        return shorten_cyclictest(args);
    }
    let mut i = 1;
    while i < args.len() {
        let v = args.get(i + 1).cloned().unwrap_or_default();
        let new = if is_opt(&args, i, &["-D", "--duration"]) {
            Some("300ms".to_string())
        } else if is_opt(&args, i, &["--hwlat-duration"]) {
            Some("1s".to_string())
        } else if is_opt(&args, i, &["--listen"]) {
            // Any free loopback port: a documented port may be taken here.
            Some("127.0.0.1:0".to_string())
        } else if is_opt(&args, i, &["--checkpoint"]) {
            Some("100ms".to_string())
        } else if is_opt(&args, i, &["--every"]) {
            Some(v.split(',').map(|_| "1ms").collect::<Vec<_>>().join(","))
        } else if is_opt(&args, i, &["--pairs"]) {
            Some(cap(&v, 5))
        } else if is_opt(&args, i, &["-n", "--reads"]) {
            Some(cap(&v, 2000))
        } else if is_opt(&args, i, &["--repetitions"]) {
            Some(cap(&v, 2))
        } else if is_opt(&args, i, &["--cycles"]) && sub == "timer" {
            Some(cap(&v, 1))
        } else if is_opt(&args, i, &["--orders"]) {
            Some("0..1".to_string())
        } else if is_opt(
            &args,
            i,
            &["-l", "--loops", "--samples", "--cycles", "--wakes"],
        ) {
            Some(cap(
                &v,
                match sub.as_str() {
                    "cyclic" => 300,
                    "matrix" => 20,
                    "timer" => 3,
                    "ipc" => 20,
                    _ => 50,
                },
            ))
        } else if is_opt(&args, i, &["--periods"]) && v.split(',').count() > 2 {
            // Matrix cells multiply: one period shows the tables' shape.
            Some(short_periods(v.split(',').next().unwrap_or("1ms")))
        } else if is_opt(&args, i, &["-i", "--period"]) {
            Some(short_periods(&v))
        } else {
            None
        };
        if let Some(n) = new {
            args[i + 1] = n;
            i += 2;
        } else {
            i += 1;
        }
    }
    let counted = has_opt(
        &args,
        &["-l", "--loops", "--cycles", "--wakes", "--samples"],
    );
    match sub.as_str() {
        "cyclic" | "load" if !counted && !has_opt(&args, &["-D", "--duration"]) => {
            args.extend(["-D".into(), "300ms".into()]);
        }
        "period" if !counted => {
            args.extend(["-l".into(), "50".into()]);
        }
        "ipc" if !counted && !has_opt(&args, &["--list", "--cleanup"]) => {
            args.extend(["-l".into(), "20".into()]);
        }
        "timer" if !counted => {
            args.extend(["-l".into(), "3".into()]);
        }
        "matrix" if !counted => {
            args.extend(["-l".into(), "20".into()]);
        }
        "clock" if !has_opt(&args, &["-n", "--reads", "--mode", "--list"]) => {
            args.extend(["-n".into(), "2000".into()]);
        }
        _ => {}
    }
    // A shorter calibration where one is measured (rtscope refuses
    // --calibration-wakes where nothing is calibrated).
    let compensates = match args.iter().position(|a| a == "--compensate") {
        Some(i) => args
            .get(i + 1)
            .is_some_and(|v| v.split(',').any(|c| c != "none")),
        None => has_opt(&args, &["--beacon"]),
    };
    if sub == "timer"
        && compensates
        && !has_opt(
            &args,
            &["--calibration-wakes", "--no-calibrate", "--calibration"],
        )
    {
        args.extend(["--calibration-wakes".into(), "10".into()]);
    }
    if matches!(sub.as_str(), "clock" | "period") && !has_opt(&args, &["--calibrate", "--list"]) {
        args.extend(["--calibrate".into(), "100ms".into()]);
    }
    args
}

/// `rtscope cyclictest` reads cyclictest's options: `-D` is seconds (a
/// suffix m, h or d), `-l` may be bundled (`-l100000000`). Loops are capped
/// at 300, a duration becomes 1 s, and a line with neither gets `-D 1`.
fn shorten_cyclictest(args: Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut ends = false;
    let mut it = args.into_iter().peekable();
    while let Some(a) = it.next() {
        let loops = a
            .strip_prefix("-l")
            .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        // A duration as cyclictest reads one (a misread one is kept: its example shows the error).
        let valid = |v: &str| {
            let n = v.trim_end_matches(['s', 'm', 'h', 'd', 'S', 'M', 'H', 'D']);
            !n.is_empty() && n.len() + 1 >= v.len() && n.chars().all(|c| c.is_ascii_digit())
        };
        let bundled = a
            .strip_prefix("--duration=")
            .or_else(|| a.strip_prefix("-D").filter(|v| !v.is_empty()));
        if (a == "-D" || a == "--duration") && it.peek().is_some_and(|v| valid(v)) {
            it.next();
            out.extend([a, "1".to_string()]);
            ends = true;
        } else if bundled.is_some_and(valid) {
            out.push("--duration=1".into());
            ends = true;
        } else if a == "-l" || a == "--loops" {
            let v = it.next().unwrap_or_default();
            out.extend([a, cap(&v, 300)]);
            ends = true;
        } else if let Some(n) = loops.or_else(|| a.strip_prefix("--loops=")) {
            out.push(format!("--loops={}", cap(n, 300)));
            ends = true;
        } else {
            out.push(a);
        }
    }
    if !ends {
        out.extend(["-D".into(), "1".into()]);
    }
    out
}

/// Splits the command into arguments after `rtscope` (a "quoted" word keeps
/// its blanks); `$(uname -r)` becomes a fixed name.
fn arguments(command: &str) -> Vec<String> {
    let command = command.replace("$(uname -r)", "kernel");
    let mut split = Vec::new();
    for (i, part) in command.split('"').enumerate() {
        if i % 2 == 1 {
            split.push(part.to_string());
        } else {
            split.extend(part.split_whitespace().map(str::to_string));
        }
    }
    let mut words = split.into_iter().peekable();
    if words.peek().map(String::as_str) == Some("sudo") {
        words.next();
    }
    assert_eq!(words.next().as_deref(), Some("rtscope"), "{command}");
    words.collect()
}

/// Numbers become `#` (with a k/M/G suffix, a sign, a decimal part, thousands
/// separators), and so does a lone `–` (a table's "not measured": a stage that
/// no sample of a short run reached); runs of whitespace become one space.
fn redact(line: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '–'
            && (i == 0 || chars[i - 1].is_whitespace())
            && chars.get(i + 1).is_none_or(|n| n.is_whitespace())
        {
            out.push('#');
            i += 1;
            continue;
        }
        let starts_number = c.is_ascii_digit()
            || (matches!(c, '-' | '+')
                && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())
                && (i == 0 || !chars[i - 1].is_alphanumeric()));
        if starts_number && (i == 0 || !chars[i - 1].is_alphabetic() || c.is_ascii_digit()) {
            i += 1;
            while i < chars.len()
                && (chars[i].is_ascii_digit()
                    || ((chars[i] == '.' || chars[i] == ',')
                        && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())))
            {
                i += 1;
            }
            // An SI multiplier right after the digits (not a unit such as ms).
            if i < chars.len()
                && matches!(chars[i], 'k' | 'M' | 'G')
                && !chars.get(i + 1).is_some_and(|d| d.is_alphabetic())
            {
                i += 1;
            }
            // A duration keeps its kind, not its unit: `5s` and `320.0ms` match.
            let rest: String = chars[i..].iter().take(3).collect();
            for unit in ["ns", "us", "µs", "ms", "s", "m", "h"] {
                if rest.starts_with(unit)
                    && !rest[unit.len()..]
                        .chars()
                        .next()
                        .is_some_and(|d| d.is_alphanumeric())
                {
                    i += unit.chars().count();
                    out.push_str("#t");
                    break;
                }
            }
            if !out.ends_with("#t") {
                out.push('#');
            }
            continue;
        }
        if c.is_whitespace() {
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            // Padding inside a parenthesis (cyclictest's `(%5d)` thread id).
            if !out.ends_with('(') {
                out.push(' ');
            }
            continue;
        }
        out.push(c);
        i += 1;
    }
    out.trim().to_string()
}

/// Input files some examples read: made once, copied under each name used.
struct Inputs {
    dir: PathBuf,
    result: PathBuf,
}

impl Inputs {
    fn new(dir: &Path) -> Inputs {
        let result = dir.join("base-result.json");
        common::Run::new(["cyclic", "-D", "300ms", "-q", "--json"])
            .arg(&result)
            .current_dir(dir)
            .exits(0);
        Inputs {
            dir: dir.to_path_buf(),
            result,
        }
    }

    /// Creates the files an example reads that no earlier example wrote.
    fn provide(&self, args: &[String]) {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let sub = args.first().map(String::as_str).unwrap_or("");
        for (i, a) in args.iter().enumerate() {
            let prev = if i > 0 { args[i - 1].as_str() } else { "" };
            let outputs: &[&str] = if sub == "import" {
                &["-o", "--out"]
            } else {
                &["-o", "--html", "--json", "--out", "--report", "--histogram"]
            };
            if outputs.contains(&prev) {
                continue;
            }
            let target = self.dir.join(a);
            if target.exists() {
                continue;
            }
            let source = match (sub, prev, Path::new(a).extension()) {
                ("import", "--json", _) => fixtures.join("cyclictest-h150.json"),
                ("import", "--histogram", _) if a.starts_with("notes") => {
                    std::fs::write(&target, "hello\n").expect("write input");
                    continue;
                }
                ("import", "--histogram", _) if a.starts_with("head") => {
                    // `head -c 2000` of a histogram: cut before its footer.
                    let text = std::fs::read(fixtures.join("cyclictest-h150.txt")).unwrap();
                    std::fs::write(&target, &text[..2000]).expect("write input");
                    continue;
                }
                ("import", "--histogram", _) => fixtures.join("cyclictest-h150.txt"),
                ("report", _, None) if a == "ff" => {
                    // A FIFO nobody writes to (the runner's input wait is short).
                    let ok = std::process::Command::new("mkfifo").arg(&target).status();
                    assert!(ok.is_ok_and(|s| s.success()), "mkfifo {a}");
                    continue;
                }
                ("report" | "compare", _, Some(e)) if e == "json" => self.result.clone(),
                _ => continue,
            };
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).expect("input dir");
            }
            std::fs::copy(&source, &target).expect("copy input");
        }
    }
}

struct Ran {
    code: Option<i32>,
    output: String,
    took: Duration,
}

fn run(dir: &Path, args: &[String]) -> Ran {
    let t0 = Instant::now();
    let out = common::Run::new(args)
        .current_dir(dir)
        // An example that reads a FIFO nobody writes to ends in 1 s, not 60.
        .env("RTSCOPE_INPUT_WAIT", "1s")
        .spawn()
        .end_within(LIMIT);
    let took = t0.elapsed();
    // Shown sessions interleave stderr (header, warnings) and stdout (summary):
    // stderr's lines come first in a run, so they are checked first.
    let mut output = String::from_utf8_lossy(&out.stderr).to_string();
    output.push_str(&String::from_utf8_lossy(&out.stdout));
    Ran {
        code: out.status.code(),
        output,
        took,
    }
}

/// The shown lines missing from `real` (numbers redacted). A shown line may
/// match any real line not matched yet: tables sorted by a measured value
/// (ipc by median) come out in a different order from run to run. `...` marks
/// left-out lines.
fn missing_lines(shown: &[String], real: &str) -> Vec<String> {
    let mut real: Vec<Option<String>> = real.lines().map(|l| Some(redact(l))).collect();
    let mut missing = Vec::new();
    for line in shown {
        let want = redact(line);
        if want.is_empty() || want == "..." || want.starts_with("warning:") {
            continue;
        }
        match real
            .iter()
            .position(|r| r.as_deref() == Some(want.as_str()))
        {
            Some(p) => real[p] = None,
            None => missing.push(line.clone()),
        }
    }
    missing
}

#[test]
fn redaction_keeps_words_and_units() {
    assert_eq!(
        redact("thread 0   5998  15.6  -43.5  1,129.5 193.1k (60.1k/s) 500us"),
        "thread # # # # # # (#/s) #t"
    );
    assert_eq!(redact("cpu0->cpu1 1ms p99.9"), "cpu#->cpu# #t p#");
    assert_eq!(
        redact("cyclic run, 5.019s (duration)"),
        redact("cyclic run, 320.0ms (duration)")
    );
    assert_eq!(redact("series (us)  count"), "series (us) count");
    // Unmeasured cells match measured ones; a dash inside words stays.
    assert_eq!(
        redact("stage sched   0     –     –  0"),
        redact("stage sched   1999  4.1   7.2  0")
    );
    assert_eq!(redact("passed – rtscope–kernel"), "passed # rtscope–kernel");
    // A right-aligned number in parentheses matches at any width.
    assert_eq!(
        redact("T: 0 ( 2054) P:80 I:10000 C:  10000"),
        redact("T: 1 (124054) P:80 I:1000 C:      5")
    );
}

#[test]
fn shortening_keeps_the_shape() {
    let s = |c: &str| shorten(arguments(c)).join(" ");
    assert_eq!(
        s("rtscope cyclic -D 24h --json a.json"),
        "cyclic -D 300ms --json a.json"
    );
    assert_eq!(s("rtscope cyclic -l 100000"), "cyclic -l 300");
    assert_eq!(
        s("rtscope ipc --period 10ms,30ms,50ms --repetitions 50 -l 100"),
        "ipc --period 200us,600us,1000us --repetitions 2 -l 20"
    );
    assert_eq!(s("sudo rtscope cyclic"), "cyclic -D 300ms");
    assert_eq!(
        s("rtscope cyclictest -l100000000 -m -Sp99 -i200 -h400 -q"),
        "cyclictest --loops=300 -m -Sp99 -i200 -h400 -q"
    );
    assert_eq!(
        s("rtscope cyclictest -m -S -p 95 -D 2m"),
        "cyclictest -m -S -p 95 -D 1"
    );
    assert_eq!(
        s("rtscope cyclictest -a -t -p99"),
        "cyclictest -a -t -p99 -D 1"
    );
    assert_eq!(
        s("rtscope cyclictest -l 50 -D2h"),
        "cyclictest -l 50 --duration=1"
    );
    assert_eq!(s("rtscope cyclictest -D 10ms"), "cyclictest -D 10ms -D 1");
    assert_eq!(
        arguments("rtscope import cyclictest --cmdline \"cyclictest -m -q\" -o x.json"),
        [
            "import",
            "cyclictest",
            "--cmdline",
            "cyclictest -m -q",
            "-o",
            "x.json"
        ]
    );
    assert_eq!(
        s("rtscope cyclic -D 30d --listen 127.0.0.1:9464"),
        "cyclic -D 300ms --listen 127.0.0.1:0"
    );
}

/// Runs one example and checks its exit code and shown output.
fn check(dir: &Path, ex: &Example, args: &[String]) -> Result<(), String> {
    let ran = run(dir, args);
    let wants_error = ex
        .shown
        .as_ref()
        .is_some_and(|s| s.iter().any(|l| l.starts_with("error:")));
    let ok_codes: &[i32] = if wants_error {
        &[2]
    } else if args.iter().any(|a| a == "--fail-above" || a == "--fail-if") {
        &[0, 3]
    } else if args.first().is_some_and(|a| a == "qualify") {
        // The verdict: 0 PASS, 3 FAIL.
        &[0, 3]
    } else if args.first().is_some_and(|a| a == "check") {
        // The audit's verdict: 0 ready, 1 warnings, 3 a failed check.
        &[0, 1, 3]
    } else {
        &[0]
    };
    let place = format!(
        "{}:{}: `{}` (run as `rtscope {}`)",
        ex.file,
        ex.line,
        ex.command,
        args.join(" ")
    );
    eprintln!("{:5.2}s {place}", ran.took.as_secs_f64());
    if ran.took >= LIMIT {
        return Err(format!(
            "{place}: still running after {LIMIT:?}: shorten it"
        ));
    }
    if !ran.code.is_some_and(|c| ok_codes.contains(&c)) {
        return Err(format!(
            "{place}: exit code {:?}, expected {ok_codes:?}:\n{}",
            ran.code, ran.output
        ));
    }
    if let Some(shown) = &ex.shown {
        let missing = missing_lines(shown, &ran.output);
        if !missing.is_empty() {
            return Err(format!(
                "{place}: the documented output has lines the real output does not (numbers redacted):\n  {}\nreal output:\n{}",
                missing.join("\n  "),
                ran.output
            ));
        }
    }
    Ok(())
}

#[test]
fn examples_in_the_docs_run_and_show_the_real_shape() {
    let examples: Vec<Example> = markdown_files()
        .iter()
        .flat_map(|f| examples_of(f))
        .collect();
    // The extractor must find the examples: a change to the markdown layout
    // that hides them all must not pass silently.
    assert!(
        examples.len() >= 45,
        "only {} examples found",
        examples.len()
    );
    assert!(examples.iter().filter(|e| e.shown.is_some()).count() >= 12);

    let dir = tempfile::tempdir().expect("tempdir");
    let inputs = Inputs::new(dir.path());
    let t0 = Instant::now();
    // The same command shown twice (README and its page) runs once, unless
    // an output is shown for it.
    let mut seen = std::collections::HashSet::new();
    let mut groups: Vec<Vec<(&Example, Vec<String>)>> = Vec::new();
    for ex in &examples {
        let args = shorten(arguments(&ex.command));
        if ex.shown.is_none() && !seen.insert(args.clone()) {
            continue;
        }
        match groups.last_mut() {
            Some(g) if g[0].0.file == ex.file && g[0].0.block == ex.block => g.push((ex, args)),
            _ => groups.push(vec![(ex, args)]),
        }
    }
    // Blocks run on three workers; a block's examples in order.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let provide = std::sync::Mutex::new(());
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| loop {
                let g = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(group) = groups.get(g) else { break };
                for (ex, args) in group {
                    {
                        let _one_at_a_time = provide.lock().unwrap();
                        inputs.provide(args);
                    }
                    if let Err(f) = check(dir.path(), ex, args) {
                        failures.lock().unwrap().push(f);
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    eprintln!(
        "{} examples in {:.1}s",
        examples.len(),
        t0.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} of {} documented examples drifted:\n\n{}",
        failures.len(),
        examples.len(),
        failures.join("\n\n")
    );
}

/// Options every experiment shares, documented once (cyclic.md, loads.md).
const COMMON_OPTIONS: &[&str] = &[
    "--help",
    "--version",
    "--quiet",
    "--load",
    "--load-cpus",
    "--json",
    "--report",
    "--priority",
    "--policy",
    "--no-rt",
    "--default-system",
    // CI gates: docs/ci-gates.md.
    "--fail-if",
    "--junit",
];

/// Whether `page` mentions the option: its long form, or its short form as a
/// word (`-l 1000`, `` `-a` ``, `[-i 1ms]`).
fn documented(page: &str, short: Option<&str>, long: &str) -> bool {
    let word_end = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '-'));
    let has_word = |w: &str| {
        page.match_indices(w).any(|(i, _)| {
            let before = page[..i].chars().next_back();
            let after = page[i + w.len()..].chars().next();
            before.is_none_or(|c| !(c.is_alphanumeric() || c == '-')) && word_end(after)
        })
    };
    has_word(long) || short.is_some_and(has_word)
}

#[test]
fn every_option_is_on_its_page() {
    let pages = [
        ("cyclic", "cyclic.md"),
        ("cyclictest", "cyclictest.md"),
        ("ipc", "ipc.md"),
        ("clock", "clock.md"),
        ("period", "clock.md"),
        ("timer", "timer.md"),
        ("load", "loads.md"),
        ("matrix", "loads.md"),
        ("check", "check.md"),
        ("qualify", "qualify.md"),
        ("hwlat", "hwlat.md"),
        ("report", "report.md"),
        ("compare", "report.md"),
        ("serve", "live.md"),
        ("import", "report.md"),
    ];
    let mut missing = Vec::new();
    for (sub, page) in pages {
        let text = std::fs::read_to_string(repo_root().join("docs").join(page)).expect("page");
        let help = common::Run::new([sub, "--help"]).ran().stdout();
        for line in help.lines() {
            let t = line.trim_start();
            if !t.starts_with('-') || line.len() - t.len() > 6 {
                continue;
            }
            let mut words = t.split([' ', ',', '=']).filter(|w| w.starts_with('-'));
            let first = words.next().unwrap_or("");
            let (short, long) = if first.starts_with("--") {
                (None, first)
            } else {
                (Some(first), words.next().unwrap_or(""))
            };
            if long.is_empty() || COMMON_OPTIONS.contains(&long) {
                continue;
            }
            if !documented(&text, short, long) {
                missing.push(format!("rtscope {sub} {long}: not in docs/{page}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "undocumented options:\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_drifted_header_or_unit_is_reported() {
    let real = "series (us)  count  min\nthread 0  5998  15.6\n";
    let shown = |s: &str| s.lines().map(str::to_string).collect::<Vec<_>>();
    assert!(missing_lines(&shown("series (us) count min\n...\nthread 1 12 3.5"), real).is_empty());
    assert_eq!(
        missing_lines(&shown("series (ns) count min"), real),
        ["series (ns) count min"]
    );
    assert_eq!(
        missing_lines(&shown("series (us) count min overruns"), real).len(),
        1
    );
}
