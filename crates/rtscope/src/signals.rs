//! The signals that stop a run (SIGINT, SIGTERM, SIGHUP), wired to a flag:
//! what every command that runs until stopped shares (experiments, `load`,
//! `serve`, `matrix`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Result;

use rtscope_core::sys;

/// SIGINT, SIGTERM and SIGHUP (a dropped terminal or ssh session) wired to a
/// stop flag while this value lives. A second signal ends the process at
/// once (exit 130), saying that the results were not written. The handlers
/// are removed on drop, so that a later run in the same process (a matrix
/// cell) starts with a fresh flag.
pub struct StopSignals {
    /// Raised by the first signal.
    pub flag: Arc<AtomicBool>,
    handle: signal_hook::iterator::Handle,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The signals that stop a run.
pub const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

impl StopSignals {
    /// Registers the handlers and the thread that acts on them.
    pub fn install() -> Result<Self> {
        let flag = Arc::new(AtomicBool::new(false));
        let mut signals = signal_hook::iterator::Signals::new(STOP_SIGNALS)?;
        let handle = signals.handle();
        let f = flag.clone();
        let thread = std::thread::Builder::new()
            .name("rtscope-signals".into())
            .spawn(move || {
                // The handlers run on other threads; this one only reads their pipe.
                let _ = sys::block_signals(&STOP_SIGNALS);
                let mut seen = false;
                for sig in signals.forever() {
                    if seen {
                        eprintln!(
                            "rtscope: second {} signal: exiting at once; the results of this run were not written",
                            signal_name(sig)
                        );
                        // Paused (SIGSTOPped) loads act on their
                        // parent-death SIGTERM only once continued.
                        crate::load::supervisor::continue_paused_groups();
                        // exit() unwinds nothing: the hwlat tracer of a
                        // run is given back here.
                        rtscope_core::hwlat::tracer::restore_active();
                        std::process::exit(130);
                    }
                    seen = true;
                    f.store(true, Ordering::SeqCst);
                }
            })?;
        Ok(StopSignals {
            flag,
            handle,
            thread: Some(thread),
        })
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "interrupt (SIGINT)",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "hangup (SIGHUP)",
        _ => "stop",
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
