//! Sinks: each turns results into bytes for a person or another tool.

pub mod histogram;
pub mod live;
pub mod loads;
pub mod matrix;
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
