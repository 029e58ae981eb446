//! Sinks: each turns results into bytes for a person or another tool.

pub mod clock;
pub mod files;
pub mod histogram;
pub mod ipc;
pub mod live;
pub mod loads;
pub mod matrix;
pub mod period;
pub mod summary;

/// ns as µs with one decimal (`12.3`).
pub fn us1(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

/// Writes `text` to stdout, ignoring a closed pipe (`rtscope ... | head`).
pub fn say(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// Text from a file or the system (host names, labels, command lines) made
/// safe for a terminal: control characters (escape sequences, carriage
/// returns, bells, ...) become `?`; tabs stay.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    if s.chars().all(|c| !c.is_control() || c == '\t') {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(
        s.chars()
            .map(|c| if c.is_control() && c != '\t' { '?' } else { c })
            .collect(),
    )
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

#[cfg(test)]
mod tests {
    #[test]
    fn printable_strips_control_characters() {
        assert_eq!(super::printable("host\x1b[2Jname\r\x07"), "host?[2Jname??");
        assert_eq!(super::printable("a\tb"), "a\tb");
        assert!(matches!(
            super::printable("plain"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
