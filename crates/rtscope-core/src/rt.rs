//! The real-time environment of a measurement: scheduling policy and priority,
//! CPU affinity, memory locking, `/dev/cpu_dma_latency`, timer slack and
//! signal masking.
//!
//! [`ThreadSetup::apply`] is called by each measurement thread on itself before
//! it starts measuring; it returns what is really in force (read back from the
//! kernel), which goes into the result document.

use std::fs::File;
use std::io::{self, Write};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::sys;

/// A Linux scheduling policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    Fifo,
    Rr,
    Other,
    Batch,
    Idle,
}

impl Policy {
    /// The libc constant.
    pub fn as_raw(self) -> i32 {
        match self {
            Policy::Fifo => libc::SCHED_FIFO,
            Policy::Rr => libc::SCHED_RR,
            Policy::Other => libc::SCHED_OTHER,
            Policy::Batch => libc::SCHED_BATCH,
            Policy::Idle => libc::SCHED_IDLE,
        }
    }

    /// From the libc constant.
    pub fn from_raw(p: i32) -> Option<Policy> {
        Some(match p {
            libc::SCHED_FIFO => Policy::Fifo,
            libc::SCHED_RR => Policy::Rr,
            libc::SCHED_OTHER => Policy::Other,
            libc::SCHED_BATCH => Policy::Batch,
            libc::SCHED_IDLE => Policy::Idle,
            _ => return None,
        })
    }

    /// Whether this is a real-time policy (takes a priority 1..=99).
    pub fn is_rt(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }
}

crate::named_enum!(Policy, "policy", {
    Policy::Fifo => "fifo",
    Policy::Rr => "rr",
    Policy::Other => "other",
    Policy::Batch => "batch",
    Policy::Idle => "idle",
});

/// Why the real-time environment could not be set up.
#[derive(Debug, Error)]
pub enum RtError {
    #[error("{0}")]
    Permission(String),
    #[error("cannot pin thread to CPUs {cpus}: {source}")]
    Affinity {
        cpus: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot set scheduling policy {policy} priority {priority}: {source}")]
    Scheduler {
        policy: &'static str,
        priority: i32,
        #[source]
        source: io::Error,
    },
}

/// Explains how to obtain the right to use a real-time policy.
pub fn permission_advice(policy: Policy, priority: i32) -> String {
    let (soft, _) = sys::rlimit_rtprio();
    let mut s = format!(
        "not allowed to use SCHED_{} priority {priority}",
        policy.name().to_uppercase()
    );
    if sys::geteuid() == 0 {
        s.push_str(
            " although running as root: the cgroup has no real-time budget \
             (give it one: cpu.rt_runtime_us in cgroup v1, or run outside the container \
             / with --cpu-rt-runtime); or use --no-rt",
        );
    } else {
        s.push_str(&format!(
            " (RLIMIT_RTPRIO is {soft}): run as root, grant CAP_SYS_NICE \
             (setcap cap_sys_nice+ep $(which rtscope)), raise RLIMIT_RTPRIO \
             ('ulimit -r {priority}' or rtprio in /etc/security/limits.conf), \
             or use --no-rt"
        ));
    }
    s
}

/// What a measurement thread asks for; [`ThreadSetup::apply`] puts it in
/// force on the calling thread and reads back what the kernel granted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadSetup {
    /// Scheduling policy (`Fifo` and `Rr` need root, CAP_SYS_NICE or RLIMIT_RTPRIO).
    pub policy: Policy,
    /// Real-time priority 1-99 for `Fifo`/`Rr`; ignored (0) for the others.
    pub priority: i32,
    /// CPUs to pin to; empty = leave the affinity as inherited.
    pub cpus: Vec<usize>,
    /// Timer slack to set, ns; `None` leaves it alone (`--default-system`).
    pub timer_slack_ns: Option<u64>,
    /// Bytes of stack to fault in before measuring.
    pub prefault_stack: usize,
    /// Signals to block in the measurement thread.
    pub block_signals: Vec<i32>,
}

/// What is really in force on a thread, read back after setup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadState {
    pub tid: i32,
    pub policy: String,
    pub priority: i32,
    pub cpus: Vec<usize>,
    pub timer_slack_ns: u64,
}

impl ThreadSetup {
    /// Applies the setup to the calling thread.
    pub fn apply(&self) -> Result<ThreadState, RtError> {
        if !self.block_signals.is_empty() {
            // Blocking signals can only fail on invalid numbers, which are constants here.
            let _ = sys::block_signals(&self.block_signals);
        }
        if !self.cpus.is_empty() {
            sys::set_affinity(&self.cpus).map_err(|source| RtError::Affinity {
                cpus: crate::units::format_cpu_list(&self.cpus),
                source,
            })?;
        }
        let prio = if self.policy.is_rt() {
            self.priority
        } else {
            0
        };
        if let Err(e) = sys::set_scheduler(self.policy.as_raw(), prio) {
            if e.raw_os_error() == Some(libc::EPERM) {
                return Err(RtError::Permission(permission_advice(self.policy, prio)));
            }
            return Err(RtError::Scheduler {
                policy: self.policy.name(),
                priority: prio,
                source: e,
            });
        }
        if let Some(ns) = self.timer_slack_ns {
            let _ = sys::set_timer_slack(ns.max(1));
        }
        if self.prefault_stack > 0 {
            sys::prefault_stack(self.prefault_stack);
        }
        let (pol, pr) = sys::get_scheduler().unwrap_or((self.policy.as_raw(), prio));
        Ok(ThreadState {
            tid: sys::gettid(),
            policy: Policy::from_raw(pol)
                .map_or("unknown", Policy::name)
                .to_string(),
            priority: pr,
            cpus: self.cpus.clone(),
            timer_slack_ns: sys::timer_slack(),
        })
    }
}

/// Holds `/dev/cpu_dma_latency` open with a target of 0 µs, which keeps CPUs out
/// of deep idle states while it is open. Released on drop.
#[derive(Debug)]
pub struct DmaLatencyGuard {
    _file: File,
}

impl DmaLatencyGuard {
    /// Opens `/dev/cpu_dma_latency` and writes the target (µs).
    pub fn acquire(target_us: i32) -> io::Result<Self> {
        let mut f = File::options().write(true).open("/dev/cpu_dma_latency")?;
        f.write_all(&target_us.to_ne_bytes())?;
        Ok(DmaLatencyGuard { _file: f })
    }
}

/// Locks memory (current and future), returning an error text when it fails
/// or would be unsafe.
///
/// Without root, `mlockall(MCL_FUTURE)` under a finite `RLIMIT_MEMLOCK` turns
/// every later allocation past the limit into an out-of-memory failure (thread
/// stacks, rings, histograms), so memory is then left unlocked and the caller
/// is told how to raise the limit.
pub fn lock_memory() -> Result<(), String> {
    let (soft, _) = sys::rlimit_memlock();
    if sys::geteuid() != 0 && soft != u64::MAX {
        return Err(format!(
            "memory not locked: RLIMIT_MEMLOCK is {} KiB (raise it with 'ulimit -l unlimited' \
             or run as root)",
            soft / 1024
        ));
    }
    sys::mlockall().map_err(|e| format!("mlockall failed: {e}"))
}

/// The signal that interrupts a measurement thread's blocking wait when a run
/// stops: `SIGRTMIN + 2` (`SIGRTMIN + 1` is [`crate::cyclic::timer_signal`]).
pub fn wake_signal() -> i32 {
    libc::SIGRTMIN() + 2
}

/// Makes the calling thread's blocking waits interruptible by [`wake_thread`],
/// and returns its thread id (what [`wake_thread`] takes).
///
/// Installs (process-wide, idempotent) a handler for [`wake_signal`] that does
/// nothing and has no `SA_RESTART`, and unblocks the signal in this thread
/// only. Call it on the measurement thread after [`ThreadSetup::apply`] (which
/// may block other signals), before measuring. Threads that never call it are
/// not affected: the signal is only ever sent to a given thread.
pub fn accept_wake() -> io::Result<i32> {
    sys::install_noop_handler(wake_signal())?;
    sys::unblock_signals(&[wake_signal()])?;
    Ok(sys::gettid())
}

/// Interrupts the blocking wait of thread `tid` of this process (one that
/// called [`accept_wake`]): its `clock_nanosleep`, `nanosleep`, `read`,
/// `sigwaitinfo`, `futex` wait ... returns EINTR at once. Raise the thread's
/// stop flag first: the thread then sees it and ends. A thread that has ended
/// already is not an error.
///
/// One signal can arrive just after the thread checked its flag and before it
/// entered the wait (the handler then runs without effect and the wait goes on
/// in full); [`wake_until_ended`] repeats the signal to close that window.
pub fn wake_thread(tid: i32) -> io::Result<()> {
    if tid <= 0 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    match sys::tgkill(sys::getpid(), tid, wake_signal()) {
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
        r => r,
    }
}

/// How often [`wake_until_ended`] repeats the wake-up.
pub const WAKE_RETRY: Duration = Duration::from_millis(10);

/// After the stop flag was raised: wakes each thread `tids[i]` for which
/// `running(i)` is still true, every [`WAKE_RETRY`], until none runs. Returns
/// when every thread has ended (join them afterwards). A tid of 0 (a thread
/// that never reported one) is only waited for.
pub fn wake_until_ended(tids: &[i32], mut running: impl FnMut(usize) -> bool) {
    loop {
        let mut any = false;
        for (i, &tid) in tids.iter().enumerate() {
            if running(i) {
                any = true;
                if tid > 0 {
                    let _ = wake_thread(tid);
                }
            }
        }
        if !any {
            return;
        }
        std::thread::sleep(WAKE_RETRY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_round_trip() {
        for p in [
            Policy::Fifo,
            Policy::Rr,
            Policy::Other,
            Policy::Batch,
            Policy::Idle,
        ] {
            assert_eq!(Policy::from_raw(p.as_raw()), Some(p));
        }
        assert!(Policy::Fifo.is_rt() && !Policy::Other.is_rt());
    }

    /// A thread that accepted the wake signal, sleeping for 30 s, is woken
    /// at once; a thread that did not is not disturbed by others' wake-ups.
    #[test]
    fn wake_thread_interrupts_a_long_sleep() {
        use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
        let tid = AtomicI32::new(0);
        let stop = AtomicBool::new(false);
        let t0 = std::time::Instant::now();
        let slept_in_full = std::thread::scope(|s| {
            let h = s.spawn(|| {
                tid.store(accept_wake().unwrap(), Ordering::SeqCst);
                loop {
                    let done = sys::sleep_for_interruptible(libc::CLOCK_MONOTONIC, 30_000_000_000)
                        .unwrap();
                    if done || stop.load(Ordering::SeqCst) {
                        return done;
                    }
                }
            });
            while tid.load(Ordering::SeqCst) == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            stop.store(true, Ordering::SeqCst);
            wake_until_ended(&[tid.load(Ordering::SeqCst)], |_| !h.is_finished());
            h.join().unwrap()
        });
        assert!(!slept_in_full);
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
        assert!(wake_thread(0).is_err());
    }

    #[test]
    fn other_policy_applies_without_privilege() {
        let st = std::thread::spawn(|| {
            ThreadSetup {
                policy: Policy::Other,
                priority: 0,
                cpus: vec![],
                timer_slack_ns: Some(1),
                prefault_stack: 64 * 1024,
                block_signals: vec![libc::SIGINT],
            }
            .apply()
        })
        .join()
        .unwrap()
        .unwrap();
        assert_eq!(st.policy, "other");
        assert_eq!(st.timer_slack_ns, 1);
    }
}
