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
//! SIGSTKFLT) are caught from the first run on, so that what a run changed
//! in the kernel is given back ([`clean_up_now`]) before the process dies of
//! that signal, as it would have.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::Result;

use rtscope_core::sys;

/// SIGINT, SIGTERM and SIGHUP (a dropped terminal or ssh session) wired to a
/// stop flag while this value lives. A second stop signal ends the process
/// at once (exit 130), saying that the results were not written, when it
/// comes [`SAME_STOP`] or more after the first ([`is_exit_now`]); sooner, it
/// is the same stop delivered again. The other fatal signals
/// ([`FATAL_SIGNALS`]) give back the kernel state and end the process as
/// their default would.
///
/// The handlers and the thread that acts on them are installed with the
/// first value and stay for the life of the process: a stop between two
/// runs (`--repeat`, a matrix cell) or while the results are written is not
/// swallowed. With no run in progress, a stop ends the process at once
/// (unless it is the same stop as one a run took, within [`SAME_STOP`]); a
/// run that begins after a stop begins stopped. Each value has a fresh flag
/// of its own, dropped with it.
pub struct StopSignals {
    /// Raised by the first signal.
    pub flag: Arc<AtomicBool>,
}

/// The flags of the runs in progress (nested ones too: a matrix and its
/// cell), and when the process got its first stop.
struct State {
    active: Vec<Arc<AtomicBool>>,
    first_stop: Option<Instant>,
}

static STATE: Mutex<State> = Mutex::new(State {
    active: Vec::new(),
    first_stop: None,
});

/// Raised when the signal thread has begun to end the process (a second
/// stop, a stop with no run, a fatal signal): an error the main thread meets
/// meanwhile (the trace closing under it) is the signal's doing, and the
/// exit status is the signal thread's to give ([`wait_if_exiting`]).
static EXITING: AtomicBool = AtomicBool::new(false);

/// Whether the process is being ended by a signal; if so, waits for the
/// signal thread to end it (it exits within moments).
pub fn wait_if_exiting() {
    if EXITING.load(Ordering::SeqCst) {
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

/// Whether a stop signal has come (to this process, ever): a phase that
/// may take long after a run ended by itself (the trace's last read) cuts
/// itself short then.
pub fn stop_signalled() -> bool {
    state().first_stop.is_some()
}

/// Whether the signal thread runs.
static THREAD: Mutex<bool> = Mutex::new(false);

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
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

/// What a stop signal does, given the time since the process's first stop
/// (`None`: this is the first) and whether a run is in progress.
#[derive(Debug, PartialEq, Eq)]
enum Action {
    /// Raise the runs' flags: they end and write their results.
    Stop,
    /// The same stop delivered again: nothing more to do.
    Same,
    /// End the process now.
    Exit,
}

fn action(since_first: Option<Duration>, running: bool, pending: bool) -> Action {
    match since_first {
        Some(d) if !is_exit_now(d) => Action::Same,
        Some(_) => Action::Exit,
        // A run, or results of one still to be written (post-processing,
        // the files): the stop is taken, and what was measured is written.
        None if running || pending => Action::Stop,
        // Before any run (set-up) or in a command that runs none: nothing
        // to stop, nothing to lose.
        None => Action::Exit,
    }
}

/// Raised when a run has ended and its results are being made and written
/// ([`results_pending`]).
static RESULTS_PENDING: AtomicBool = AtomicBool::new(false);

/// Says that a run has ended and its results are being made and written
/// (`run::Run::finish`): from here on, a first stop is taken as a stop (the
/// results are still written; a run after it begins stopped) instead of
/// ending the process at once.
pub fn results_pending() {
    RESULTS_PENDING.store(true, Ordering::SeqCst);
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
    rtscope_core::file::remove_pending();
}

/// The thread that acts on the signals, for the life of the process.
fn start_thread() -> Result<()> {
    let all: Vec<i32> = STOP_SIGNALS.iter().chain(&FATAL_SIGNALS).copied().collect();
    let mut signals = signal_hook::iterator::Signals::new(&all)?;
    std::thread::Builder::new()
        .name("rtscope-signals".into())
        .spawn(move || {
            // The handlers run on other threads; this one only reads their pipe.
            let _ = sys::block_signals(&all);
            for sig in signals.forever() {
                if FATAL_SIGNALS.contains(&sig) {
                    EXITING.store(true, Ordering::SeqCst);
                    clean_up_now();
                    // Dies of the signal, as without the handler.
                    let _ = signal_hook::low_level::emulate_default_handler(sig);
                    std::process::exit(128 + sig);
                }
                let mut st = state();
                let since = st.first_stop.map(|t| t.elapsed());
                match action(
                    since,
                    !st.active.is_empty(),
                    RESULTS_PENDING.load(Ordering::SeqCst),
                ) {
                    Action::Stop => {
                        st.first_stop = Some(Instant::now());
                        for f in &st.active {
                            f.store(true, Ordering::SeqCst);
                        }
                    }
                    Action::Same => {}
                    Action::Exit => {
                        EXITING.store(true, Ordering::SeqCst);
                        let running = !st.active.is_empty();
                        drop(st);
                        if running {
                            eprintln!(
                                "rtscope: second {} signal: exiting at once; the results of this run were not written",
                                signal_name(sig)
                            );
                        } else {
                            eprintln!(
                                "rtscope: {} signal: exiting at once; results not yet written are lost",
                                signal_name(sig)
                            );
                        }
                        clean_up_now();
                        std::process::exit(130);
                    }
                }
            }
        })?;
    Ok(())
}

/// Registers the handlers and the thread that acts on them, once per
/// process. `main` does it before any command starts, so that a stop during
/// a run's set-up (before its [`StopSignals`]: a trace instance made, tracefs
/// mounted, a load started) gives back what was taken ([`clean_up_now`])
/// instead of killing the process with it.
pub fn install_handlers() -> Result<()> {
    let mut started = THREAD.lock().unwrap_or_else(|e| e.into_inner());
    if !*started {
        start_thread()?;
        *started = true;
    }
    Ok(())
}

impl StopSignals {
    /// Registers the handlers and the thread that acts on them (once), and
    /// a fresh flag for this run (raised at once after an earlier stop).
    pub fn install() -> Result<Self> {
        install_handlers()?;
        let mut st = state();
        let flag = Arc::new(AtomicBool::new(st.first_stop.is_some()));
        st.active.push(flag.clone());
        Ok(StopSignals { flag })
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
        state().active.retain(|f| !Arc::ptr_eq(f, &self.flag));
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
    fn a_stop_with_no_run_in_progress_exits_unless_it_is_the_same_stop() {
        let ms = |m| Some(Duration::from_millis(m));
        assert_eq!(action(None, true, false), Action::Stop);
        assert_eq!(action(ms(30), true, false), Action::Same);
        assert_eq!(action(ms(1500), true, false), Action::Exit);
        // Before any run: nothing to lose, the process ends.
        assert_eq!(action(None, false, false), Action::Exit);
        assert_eq!(action(ms(30), false, false), Action::Same);
        // While a run's results are made and written: the first stop is
        // taken (they are written), timeout's second delivery is the same
        // stop, a person's later one ends the process.
        assert_eq!(action(None, false, true), Action::Stop);
        assert_eq!(action(ms(30), false, true), Action::Same);
        assert_eq!(action(ms(1500), false, true), Action::Exit);
    }

    #[test]
    fn the_fatal_signals_can_be_caught_and_are_not_stops() {
        for s in FATAL_SIGNALS {
            assert!(!STOP_SIGNALS.contains(&s));
            assert!(!signal_hook::consts::FORBIDDEN.contains(&s));
        }
    }
}
