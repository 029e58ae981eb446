//! The worker side of a load: `rtscope __load-worker SPEC` (hidden subcommand).
//!
//! The worker makes sure it dies with its parent (`PR_SET_PDEATHSIG`, then a
//! check that the parent is still the one that started it), unblocks and
//! catches SIGTERM/SIGINT/SIGHUP into a stop flag, runs as SCHED_OTHER on its
//! CPUs, runs the load until the flag is raised, and prints one JSON line on
//! stdout: `{"counters": {...}, "error": null}`. Loads check the flag at least
//! every slice (at most 6 ms), so a worker exits within milliseconds of SIGTERM.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use rtscope_core::sys;

use super::{parse_spec, LoadSpec};

/// The work counters of one worker, shared with its threads.
#[derive(Debug)]
pub struct Counters(Vec<AtomicU64>);

impl Counters {
    pub fn new(n: usize) -> Self {
        Counters((0..n).map(|_| AtomicU64::new(0)).collect())
    }

    /// Adds `n` to counter `i` (the index in the load's `COUNTERS`).
    #[inline]
    pub fn add(&self, i: usize, n: u64) {
        if let Some(c) = self.0.get(i) {
            c.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Current values.
    pub fn values(&self) -> Vec<u64> {
        self.0.iter().map(|c| c.load(Ordering::Relaxed)).collect()
    }
}

/// What a load's `run` function gets.
pub struct Ctx {
    pub spec: LoadSpec,
    /// Raised by SIGTERM/SIGINT/SIGHUP: return promptly.
    pub stop: Arc<AtomicBool>,
    pub counters: Arc<Counters>,
    /// Instance number (0-based) of this worker within its load.
    pub instance: usize,
}

impl Ctx {
    /// Whether the load must stop.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Adds `n` to counter `i`.
    #[inline]
    pub fn add(&self, i: usize, n: u64) {
        self.counters.add(i, n);
    }
}

/// Runs a worker; returns the process exit code (0 ok, 1 the load failed).
pub fn main(spec_text: &str, instance: usize, parent: i32, cpus: Option<&[usize]>) -> i32 {
    // Die with the parent, even if it is killed with SIGKILL.
    let _ = sys::set_parent_death_signal(libc::SIGTERM);
    if sys::getppid() != parent {
        return 1;
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        if let Err(e) = signal_hook::flag::register(sig, stop.clone()) {
            return report(&[], &[], Some(format!("cannot catch signal {sig}: {e}")));
        }
    }
    let _ = sys::unblock_signals(&[libc::SIGTERM, libc::SIGINT, libc::SIGHUP]);
    let spec = match parse_spec(spec_text) {
        Ok(s) => s,
        Err(e) => return report(&[], &[], Some(e)),
    };
    let def = spec.def();
    if let Err(e) = sys::set_scheduler(libc::SCHED_OTHER, 0) {
        return report(&[], &[], Some(format!("cannot set SCHED_OTHER: {e}")));
    }
    if let Some(c) = cpus.filter(|c| !c.is_empty()) {
        if let Err(e) = sys::set_affinity(c) {
            return report(&[], &[], Some(format!("cannot pin to CPUs {c:?}: {e}")));
        }
    }
    let counters = Arc::new(Counters::new(def.counters.len()));
    let ctx = Ctx {
        spec,
        stop,
        counters: counters.clone(),
        instance,
    };
    let res = (def.run)(&ctx);
    report(
        def.counters,
        &counters.values(),
        res.err().map(|e| format!("{e:#}")),
    )
}

fn report(names: &[&str], values: &[u64], error: Option<String>) -> i32 {
    let counters: serde_json::Map<String, serde_json::Value> = names
        .iter()
        .zip(values)
        .map(|(n, v)| (n.to_string(), serde_json::json!(v)))
        .collect();
    let line = serde_json::json!({ "counters": counters, "error": error });
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
    if error.is_some() {
        1
    } else {
        0
    }
}
