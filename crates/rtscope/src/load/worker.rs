//! The worker side of a load: `rtscope __load-worker SPEC` (hidden subcommand).
//!
//! The worker makes sure it dies with its parent (`PR_SET_PDEATHSIG`, then a
//! check that the parent is still the one that started it), unblocks and
//! catches SIGTERM/SIGINT/SIGHUP into a stop flag, names itself
//! `rtscope-LOAD` (its comm, so that a trace names it recognisably), runs as
//! SCHED_OTHER on its CPUs (or, once pinned, under a real-time `policy=`),
//! runs the load until the flag is raised, and prints one JSON line on
//! stdout: `{"counters": {...}, "error": null}`. Loads check the flag at least
//! every slice (at most 6 ms), so a worker exits within milliseconds of SIGTERM.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use rtscope_core::rt::Policy;
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
    // Best effort: the name only helps a reader of a trace or of `ps`.
    let _ = std::fs::write("/proc/thread-self/comm", comm_of(def.name));
    if let Err(e) = sys::set_scheduler(libc::SCHED_OTHER, 0) {
        return report(&[], &[], Some(format!("cannot set SCHED_OTHER: {e}")));
    }
    if let Some(c) = cpus.filter(|c| !c.is_empty()) {
        if let Err(e) = sys::set_affinity(c) {
            return report(&[], &[], Some(format!("cannot pin to CPUs {c:?}: {e}")));
        }
    }
    // Real-time only once pinned, so that it never spins on another CPU.
    if let Some((policy, prio)) = spec.real_time() {
        if let Err(e) = sys::set_scheduler(policy.as_raw(), i32::from(prio)) {
            return report(&[], &[], Some(rt_refusal(policy, prio, &e)));
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

/// The comm of a worker of load `name`: `rtscope-NAME`, cut to the 15
/// bytes the kernel keeps (at a character boundary).
pub fn comm_of(name: &str) -> String {
    let mut s = format!("rtscope-{name}");
    let mut end = s.len().min(15);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s
}

/// The one-line error of a refused real-time policy: with the fix where
/// the kernel said EPERM.
pub fn rt_refusal(policy: Policy, prio: u8, e: &std::io::Error) -> String {
    if e.raw_os_error() == Some(libc::EPERM) {
        let advice = rtscope_core::rt::permission_advice(policy, i32::from(prio));
        // `--no-rt` concerns the measurement threads; a load's way out is its policy.
        let advice = advice
            .strip_suffix("or use --no-rt")
            .map(|a| format!("{a}or use policy=other"))
            .unwrap_or(advice);
        return advice.replace('\n', " ");
    }
    format!(
        "cannot set SCHED_{} priority {prio}: {e}",
        policy.name().to_uppercase()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comms() {
        assert_eq!(comm_of("cpu"), "rtscope-cpu");
        assert_eq!(comm_of("mem-access"), "rtscope-mem-acc");
        assert_eq!(comm_of("messaging").len(), 15);
        assert_eq!(comm_of("mé-é-é-é"), "rtscope-mé-é-");
    }

    #[test]
    fn refusals_are_one_line_with_the_way_out() {
        let e = std::io::Error::from_raw_os_error(libc::EPERM);
        let m = rt_refusal(Policy::Fifo, 99, &e);
        assert!(
            m.starts_with("not allowed to use SCHED_FIFO priority 99"),
            "{m}"
        );
        assert!(m.ends_with("or use policy=other"), "{m}");
        assert!(!m.contains('\n') && !m.contains("--no-rt"), "{m}");
        let e = std::io::Error::from_raw_os_error(libc::EINVAL);
        let m = rt_refusal(Policy::Rr, 5, &e);
        assert!(m.starts_with("cannot set SCHED_RR priority 5: "), "{m}");
    }
}
