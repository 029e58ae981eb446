//! Exit codes and the error kinds that map to them.
//!
//! 0 success, 1 the measurement could not run, 2 bad usage or bad input file,
//! 3 a gate failed (`--fail-if`, `--fail-above`; `compare --fail-if-worse`).

use std::fmt;

pub const EXIT_OK: i32 = 0;
pub const EXIT_RUN: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_THRESHOLD: i32 = 3;

/// Bad usage or bad input: reported in one line, exit code 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Shorthand: an `anyhow` error that exits with code 2.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// The exit code for an error.
pub fn exit_code(e: &anyhow::Error) -> i32 {
    if e.downcast_ref::<UsageError>().is_some() {
        EXIT_USAGE
    } else {
        EXIT_RUN
    }
}

/// The error as one line: its message and its causes, joined with ": ".
pub fn one_line(e: &anyhow::Error) -> String {
    let parts: Vec<String> = e.chain().map(|c| c.to_string()).collect();
    let mut out: Vec<String> = Vec::new();
    for p in parts {
        // Skip a cause that the previous message already includes.
        if out.last().is_some_and(|l| l.contains(&p)) {
            continue;
        }
        out.push(p);
    }
    out.join(": ").replace('\n', " ")
}

/// clap's error message on one line: its first line, and when that line
/// announces a list ("the following required arguments were not
/// provided:"), the indented items that follow it, joined.
pub fn clap_one_line(text: &str) -> String {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("error: bad usage").trim_end();
    // An invalid value of a fixed set: the set, on the same line (it was
    // cut, and the user had to open --help to learn it).
    if let Some(values) = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("[possible values:"))
    {
        return format!("{first} {values}");
    }
    if !first.ends_with(':') {
        return first.to_string();
    }
    let items: Vec<&str> = lines
        .take_while(|l| l.starts_with(' ') && !l.trim().is_empty())
        .map(str::trim)
        .collect();
    if items.is_empty() {
        first.to_string()
    } else {
        format!("{first} {}", items.join(", "))
    }
}

#[cfg(test)]
mod clap_tests {
    use super::clap_one_line;

    #[test]
    fn an_invalid_value_of_a_set_names_the_set() {
        let t = "error: invalid value 'foo' for '--wake <WAKE>'\n  [possible values: absolute, relative]\n\nFor more information, try '--help'.\n";
        assert_eq!(
            clap_one_line(t),
            "error: invalid value 'foo' for '--wake <WAKE>' [possible values: absolute, relative]"
        );
    }

    #[test]
    fn a_missing_argument_is_named() {
        let t = "error: the following required arguments were not provided:\n  --out <DIR>\n  <FILE>\n\nUsage: rtscope matrix --out <DIR>\n";
        assert_eq!(
            clap_one_line(t),
            "error: the following required arguments were not provided: --out <DIR>, <FILE>"
        );
        assert_eq!(
            clap_one_line("error: unexpected argument '-x' found\n\nUsage: ..."),
            "error: unexpected argument '-x' found"
        );
    }
}
