//! The signals that stop a run (SIGINT, SIGTERM, SIGHUP), wired to a flag:
//! what every command that runs until stopped shares (experiments, `load`,
//! `serve`, `matrix`).
//!
//! One stop is often delivered twice: GNU `timeout` sends its signal to the
//! child and then to its own process group (`kill(pid)` then `kill(0)`), and
//! rteval and systemd do the like. Those deliveries come within
//! milliseconds of each other and mean one stop, so a stop signal within
//! [`SAME_STOP`] (1 s) of the first is the same stop. Only a stop that comes
//! later, which a person could have sent ("I meant it"), ends the process at
//! once, without the results.
//!
//! The other signals whose default is to end the process (SIGQUIT, SIGUSR1,
//! SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ, SIGIO, SIGPWR,
//! SIGSTKFLT) are caught while a run lives, so that what the run changed in
//! the kernel is given back ([`clean_up_now`]) before the process dies of
//! that signal, as it would have.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use rtscope_core::sys;

/// SIGINT, SIGTERM and SIGHUP (a dropped terminal or ssh session) wired to a
/// stop flag while this value lives. A second stop signal ends the process
/// at once (exit 130), saying that the results were not written, when it
/// comes [`SAME_STOP`] or more after the first ([`is_exit_now`]); sooner, it
/// is the same stop delivered again. The other fatal signals
/// ([`FATAL_SIGNALS`]) give back the kernel state and end the process as
/// their default would. The handlers are removed on drop, so that a later
/// run in the same process (a matrix cell) starts with a fresh flag.
pub struct StopSignals {
    /// Raised by the first signal.
    pub flag: Arc<AtomicBool>,
    handle: signal_hook::iterator::Handle,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The signals that stop a run.
pub const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The other signals whose default action ends the process and that a
/// handler can catch (SIGPIPE is ignored by the Rust runtime; SIGKILL,
/// SIGSEGV and the like cannot be handled).
pub const FATAL_SIGNALS: [i32; 11] = [
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGVTALRM,
    libc::SIGPROF,
    libc::SIGXCPU,
    libc::SIGXFSZ,
    libc::SIGIO,
    libc::SIGPWR,
    libc::SIGSTKFLT,
];

/// Stop signals this close to the first are one stop delivered more than
/// once (`timeout`'s `kill(pid)` then `kill(0)`); a person's second Ctrl-C
/// to end the process at once comes later than this.
pub const SAME_STOP: Duration = Duration::from_secs(1);

/// Whether a stop signal `since_first` after the first one ends the process
/// at once: only when it comes [`SAME_STOP`] or later after it.
pub fn is_exit_now(since_first: Duration) -> bool {
    since_first >= SAME_STOP
}

/// Gives back what the run changed outside the process, for a way out that
/// does not unwind (a second stop, a fatal signal): continues paused load
/// groups (a stopped worker acts on its parent-death SIGTERM only once
/// continued), gives the hwlat tracer back and removes the run's trace
/// instances.
pub fn clean_up_now() {
    crate::load::supervisor::continue_paused_groups();
    rtscope_core::hwlat::tracer::restore_active();
    rtscope_core::trace::remove_open_instances();
}

impl StopSignals {
    /// Registers the handlers and the thread that acts on them.
    pub fn install() -> Result<Self> {
        let flag = Arc::new(AtomicBool::new(false));
        let all: Vec<i32> = STOP_SIGNALS.iter().chain(&FATAL_SIGNALS).copied().collect();
        let mut signals = signal_hook::iterator::Signals::new(&all)?;
        let handle = signals.handle();
        let f = flag.clone();
        let thread = std::thread::Builder::new()
            .name("rtscope-signals".into())
            .spawn(move || {
                // The handlers run on other threads; this one only reads their pipe.
                let _ = sys::block_signals(&all);
                let mut first: Option<Instant> = None;
                for sig in signals.forever() {
                    if FATAL_SIGNALS.contains(&sig) {
                        clean_up_now();
                        // Dies of the signal, as without the handler.
                        let _ = signal_hook::low_level::emulate_default_handler(sig);
                        std::process::exit(128 + sig);
                    }
                    match first {
                        None => {
                            first = Some(Instant::now());
                            f.store(true, Ordering::SeqCst);
                        }
                        Some(t) if is_exit_now(t.elapsed()) => {
                            eprintln!(
                                "rtscope: second {} signal: exiting at once; the results of this run were not written",
                                signal_name(sig)
                            );
                            clean_up_now();
                            std::process::exit(130);
                        }
                        // The same stop, delivered again.
                        Some(_) => {}
                    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_delivered_twice_at_once_is_one_stop() {
        // timeout's kill(pid) then kill(0): microseconds to milliseconds apart.
        for ms in [0, 1, 30, 500, 999] {
            assert!(!is_exit_now(Duration::from_millis(ms)), "{ms} ms");
        }
        // A person's second Ctrl-C, a second or more later.
        for ms in [1000, 1500, 60_000] {
            assert!(is_exit_now(Duration::from_millis(ms)), "{ms} ms");
        }
    }

    #[test]
    fn the_fatal_signals_can_be_caught_and_are_not_stops() {
        for s in FATAL_SIGNALS {
            assert!(!STOP_SIGNALS.contains(&s));
            assert!(!signal_hook::consts::FORBIDDEN.contains(&s));
        }
    }
}
