//! `--live`: the full-screen terminal UI.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::Subscription;

/// Whether a full-screen UI can run (stdout and stderr are terminals).
pub fn available() -> bool {
    false
}

pub fn install_panic_hook() {}

pub fn run(
    _sub: Subscription,
    _done: Arc<AtomicBool>,
    _stop: Arc<AtomicBool>,
    _labels: Vec<String>,
) -> Option<String> {
    None
}
