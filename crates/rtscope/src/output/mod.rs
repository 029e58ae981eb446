//! Sinks: each turns results into bytes for a person or another tool.

pub mod clock;
pub mod cyclictest;
pub mod files;
pub mod histogram;
pub mod hwlat;
pub mod ipc;
pub mod live;
pub mod loads;
pub mod matrix;
pub mod noise;
pub mod period;
pub mod progress;
pub mod summary;
pub mod timer;
pub mod trace;

/// ns as µs with one decimal (`12.3`).
/// What a table shows for a value that was not measured (`null` in the
/// document): no samples, or an import without a histogram.
pub const UNKNOWN: &str = "–";

/// `us1(ns)` when `known`, else [`UNKNOWN`].
pub fn us1_if(known: bool, ns: f64) -> String {
    if known {
        us1(ns)
    } else {
        UNKNOWN.to_string()
    }
}

pub fn us1(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

/// Whether stdout carries a machine-read stream (`--stream -`): what
/// [`say`] writes for a person then goes to stderr.
static HUMAN_ON_STDERR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From now on, what [`say`] writes goes to stderr: stdout is the JSON-lines
/// or CSV stream of `--stream -`, which a summary would corrupt.
pub fn human_to_stderr() {
    HUMAN_ON_STDERR.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Writes `text` to stdout (stderr after [`human_to_stderr`]), ignoring a
/// closed pipe (`rtscope ... | head`).
pub fn say(text: &str) {
    use std::io::Write;
    if HUMAN_ON_STDERR.load(std::sync::atomic::Ordering::Relaxed) {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        // A closed pipe is the reader's choice (`| head`); anything else (a
        // full disk, an I/O error) loses output, and the exit says so.
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let _ = STDOUT_ERROR.set(e.to_string());
        }
    }
}

/// The first error writing stdout other than a closed pipe.
static STDOUT_ERROR: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Why stdout could not be written (not a closed pipe), if it could not:
/// `main` says so and exits 1 rather than 0.
pub fn stdout_error() -> Option<&'static str> {
    STDOUT_ERROR.get().map(String::as_str)
}

/// `print!` that never panics on a closed stdout (see [`say`]).
macro_rules! out {
    ($($t:tt)*) => { $crate::output::say(&format!($($t)*)) };
}

/// `println!` that never panics on a closed stdout (see [`say`]).
macro_rules! outln {
    () => { $crate::output::say("\n") };
    ($($t:tt)*) => { $crate::output::say(&format!("{}\n", format!($($t)*))) };
}

pub(crate) use {out, outln};

/// Text from a file (host names, labels, command lines of a result document)
/// made safe to print on a terminal: control characters (ESC, CR, BEL,
/// backspace, NUL, the C1 range, ... and also newline and tab) become `?`, so
/// that a document cannot move the cursor, recolour the terminal, set its
/// title or hide text. Unicode bidirectional overrides are replaced too.
/// Borrows when there is nothing to replace.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| {
        c.is_control()
            || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}')
    };
    if s.chars().any(bad) {
        std::borrow::Cow::Owned(s.chars().map(|c| if bad(c) { '?' } else { c }).collect())
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

#[cfg(test)]
mod printable_tests {
    use super::printable;

    #[test]
    fn control_characters_are_replaced() {
        assert_eq!(printable("host-1 µs"), "host-1 µs");
        assert!(matches!(printable("plain"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(
            printable("a\u{1b}[31mred\u{7}\r\nb\u{9b}c\u{202e}d"),
            "a?[31mred???b?c?d"
        );
    }
}
