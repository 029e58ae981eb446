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
    /// `SCHED_FIFO`: real-time, first in first out within a priority.
    Fifo,
    /// `SCHED_RR`: real-time, round robin within a priority.
    Rr,
    /// `SCHED_OTHER`: the default time-sharing policy (CFS/EEVDF).
    Other,
    /// `SCHED_BATCH`: time-sharing, for CPU-bound work.
    Batch,
    /// `SCHED_IDLE`: runs only when nothing else wants the CPU.
    Idle,
    /// SCHED_DEADLINE: runtime, deadline and period instead of a priority
    /// ([`crate::deadline`]); [`ThreadSetup::apply`] does not set it.
    Deadline,
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
            Policy::Deadline => libc::SCHED_DEADLINE,
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
            libc::SCHED_DEADLINE => Policy::Deadline,
            _ => return None,
        })
    }

    /// Whether this is a real-time policy (takes a priority 1..=99).
    pub fn is_rt(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }

    /// Whether threads of this policy run before every normal thread: the
    /// real-time policies and SCHED_DEADLINE (which takes no priority).
    pub fn is_real_time(self) -> bool {
        self.is_rt() || self == Policy::Deadline
    }
}

crate::named_enum!(Policy, "policy", {
    Policy::Fifo => "fifo",
    Policy::Rr => "rr",
    Policy::Other => "other",
    Policy::Batch => "batch",
    Policy::Idle => "idle",
    Policy::Deadline => "deadline",
});

/// Why the real-time environment could not be set up.
#[derive(Debug, Error)]
pub enum RtError {
    #[error("{0}")]
    /// The policy needs a privilege the process lacks; the text says how to get it.
    Permission(String),
    #[error("cannot pin thread to CPUs {cpus}: {source}")]
    /// `sched_setaffinity` refused the CPU list.
    Affinity {
        /// The CPU list asked for, as a user types it (`0-3,6`).
        cpus: String,
        #[source]
        /// What the kernel answered.
        source: io::Error,
    },
    #[error("cannot set scheduling policy {policy} priority {priority}: {source}")]
    /// `sched_setscheduler` refused the policy or priority.
    Scheduler {
        /// The policy's name (`fifo`, `rr`, ...).
        policy: &'static str,
        /// The priority asked for.
        priority: i32,
        #[source]
        /// What the kernel answered.
        source: io::Error,
    },
}

/// Explains how to obtain the right to use a real-time policy. What the
/// kernel checks is the capability CAP_SYS_NICE (or RLIMIT_RTPRIO), not the
/// user id: a root whose CAP_SYS_NICE was dropped (a container, a unit's
/// CapabilityBoundingSet) is told so; a process that holds it and is still
/// refused has a cgroup without a real-time budget.
pub fn permission_advice(policy: Policy, priority: i32) -> String {
    let (soft, _) = sys::rlimit_rtprio();
    let mut s = format!(
        "not allowed to use SCHED_{} priority {priority}",
        policy.name().to_uppercase()
    );
    let capable = has_sys_nice().unwrap_or(sys::geteuid() == 0);
    let limit_allows = soft >= priority.max(1) as u64;
    if capable || limit_allows {
        s.push_str(&format!(
            "{}: the cgroup has no real-time budget \
             (give it one: cpu.rt_runtime_us in cgroup v1, or run outside the container \
             / with --cpu-rt-runtime); or use --no-rt",
            if capable {
                " although this process holds CAP_SYS_NICE"
            } else {
                " although RLIMIT_RTPRIO allows it"
            }
        ));
    } else if sys::geteuid() == 0 {
        s.push_str(&format!(
            ": running as root without the capability CAP_SYS_NICE (RLIMIT_RTPRIO is {soft}): \
             the container or service dropped it; grant it back (docker run --cap-add \
             SYS_NICE, AmbientCapabilities=CAP_SYS_NICE in the unit), or use --no-rt"
        ));
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

/// Whether the calling thread's effective capability set holds
/// CAP_SYS_NICE (`capget`); `None` where the kernel does not say.
pub fn has_sys_nice() -> Option<bool> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Default, Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    const CAP_SYS_NICE: u32 = 23;
    let mut header = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: a version-3 header and the two data structs that version
    // fills, both live for the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut Header,
            data.as_mut_ptr(),
        )
    };
    (rc == 0).then(|| data[0].effective & (1 << CAP_SYS_NICE) != 0)
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
    /// The thread's id (`gettid`).
    pub tid: i32,
    /// Its policy, as [`Policy`] names it (`fifo`, `other`, ...).
    pub policy: String,
    /// Its real-time priority (0 for the time-sharing policies).
    pub priority: i32,
    /// The CPUs it may run on.
    pub cpus: Vec<usize>,
    /// Its timer slack, ns (`PR_GET_TIMERSLACK`).
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
        if self.policy == Policy::Deadline {
            // Its parameters are not here: DeadlineParams::apply sets it.
            return Err(RtError::Scheduler {
                policy: self.policy.name(),
                priority: 0,
                source: io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "SCHED_DEADLINE takes a runtime, deadline and period \
                     (rtscope_core::deadline::DeadlineParams::apply), not a priority",
                ),
            });
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

/// Bounds the calling thread's blocking waits by an end time: arms a timer
/// that sends [`wake_signal`] to this thread at `end_ns` (absolute, on
/// `clock`) and again every [`WAKE_RETRY`] after it, until the returned timer
/// is dropped. A `read` of a device that may never deliver (an RTC, a GPIO
/// line) then returns EINTR at the end, and the thread sees from its clock
/// that its time is up: it needs no other thread to wake it (a thread of
/// normal priority may never run while real-time threads take every CPU).
/// The repeats close the window where the signal comes between the thread's
/// look at its clock and its next wait. Call [`accept_wake`] first.
pub fn end_alarm(clock: sys::ClockId, end_ns: u64) -> io::Result<sys::ThreadTimer> {
    sys::ThreadTimer::periodic(
        clock,
        wake_signal(),
        sys::gettid(),
        end_ns,
        WAKE_RETRY.as_nanos() as u64,
    )
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
            Policy::Deadline,
        ] {
            assert_eq!(Policy::from_raw(p.as_raw()), Some(p));
        }
        assert_eq!(Policy::Deadline.as_raw(), 6);
        assert_eq!(Policy::from_raw(7), None);
        assert!(Policy::Fifo.is_rt() && !Policy::Other.is_rt());
        // Deadline takes no priority, but is real-time.
        assert!(!Policy::Deadline.is_rt());
        let real_time: Vec<Policy> = Policy::ALL
            .iter()
            .copied()
            .filter(|p| p.is_real_time())
            .collect();
        assert_eq!(real_time, [Policy::Fifo, Policy::Rr, Policy::Deadline]);
    }

    /// SCHED_DEADLINE needs its parameters: ThreadSetup refuses it, before
    /// touching the thread.
    #[test]
    fn thread_setup_refuses_deadline() {
        let (r, after) = std::thread::spawn(|| {
            let r = ThreadSetup {
                policy: Policy::Deadline,
                priority: 0,
                cpus: vec![],
                timer_slack_ns: None,
                prefault_stack: 0,
                block_signals: vec![],
            }
            .apply();
            (r, sys::get_scheduler().unwrap())
        })
        .join()
        .unwrap();
        let e = r.unwrap_err();
        assert!(
            e.to_string().starts_with(
                "cannot set scheduling policy deadline priority 0: SCHED_DEADLINE takes a runtime"
            ),
            "{e}"
        );
        assert_eq!(after, (libc::SCHED_OTHER, 0));
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

    /// A thread blocked in a wait that would last 30 s, with nobody to wake
    /// it: its end alarm interrupts the wait at the end, and again every
    /// WAKE_RETRY (a wait entered after the first signal is not left hanging).
    #[test]
    fn end_alarm_interrupts_blocking_waits_from_the_end_on() {
        let clock = libc::CLOCK_MONOTONIC;
        let t0 = std::time::Instant::now();
        let (woke, before_end, again, after) = std::thread::spawn(move || {
            accept_wake().unwrap();
            let end = sys::clock_ns(clock) + 50_000_000;
            let alarm = end_alarm(clock, end).unwrap();
            let far = sys::clock_ns(clock) + 30_000_000_000;
            let first = sys::sleep_until_interruptible(clock, far).unwrap();
            let woke = sys::clock_ns(clock);
            let second = sys::sleep_until_interruptible(clock, far).unwrap();
            let again = sys::clock_ns(clock);
            drop(alarm);
            // Without the alarm, a short sleep is not interrupted any more.
            let after = sys::sleep_for_interruptible(clock, 30_000_000).unwrap();
            assert!(!first && !second);
            (woke, end, again, after)
        })
        .join()
        .unwrap();
        assert!(woke >= before_end, "woken {} ns early", before_end - woke);
        // The repeat: within WAKE_RETRY of the first, never a latency bound
        // (a hang would be 30 s).
        assert!(again > woke);
        assert!(after, "a wake signal came after the alarm was dropped");
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
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

    /// Runs `f` on a new thread whose user ids are `nobody`'s, by the raw
    /// system call, which changes only the calling thread's credentials
    /// (libc's setresuid would change every thread's) and clears its
    /// effective capabilities. `None` where this process is not root.
    fn as_nobody<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        if sys::geteuid() != 0 {
            return None;
        }
        std::thread::spawn(move || {
            // SAFETY: integer arguments; the credentials die with this thread.
            let rc = unsafe { libc::syscall(libc::SYS_setresuid, 65534, 65534, 65534) };
            assert_eq!(rc, 0, "{}", io::Error::last_os_error());
            assert_eq!(sys::geteuid(), 65534);
            f()
        })
        .join()
        .ok()
    }

    fn setup(policy: Policy, priority: i32) -> ThreadSetup {
        ThreadSetup {
            policy,
            priority,
            cpus: vec![],
            timer_slack_ns: None,
            prefault_stack: 0,
            block_signals: vec![],
        }
    }

    /// Applies `s` on a new thread: its state, and the thread's signal mask
    /// and affinity afterwards.
    fn apply_on_thread(
        s: ThreadSetup,
    ) -> (Result<ThreadState, RtError>, libc::sigset_t, Vec<usize>) {
        std::thread::spawn(move || {
            sys::set_timer_slack(12_345).unwrap();
            let r = s.apply();
            // SAFETY: sigset_t is POD; pthread_sigmask only writes the old set.
            let mut mask: libc::sigset_t = unsafe { std::mem::zeroed() };
            unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask) };
            (r, mask, affinity())
        })
        .join()
        .unwrap()
    }

    /// The calling thread's CPUs.
    fn affinity() -> Vec<usize> {
        // SAFETY: cpu_set_t is POD; sched_getaffinity fills it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
        assert_eq!(rc, 0);
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: c is below CPU_SETSIZE.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    }

    fn is_blocked(mask: &libc::sigset_t, sig: i32) -> bool {
        // SAFETY: `mask` is an initialised set.
        unsafe { libc::sigismember(mask, sig) == 1 }
    }

    #[test]
    fn apply_puts_the_setup_in_force_and_reads_it_back() {
        let mut s = setup(Policy::Other, 7);
        s.cpus = vec![0];
        s.timer_slack_ns = Some(0);
        s.block_signals = vec![libc::SIGUSR2];
        let (st, mask, cpus) = apply_on_thread(s);
        let st = st.unwrap();
        // A priority is only for the real-time policies.
        assert_eq!((st.policy.as_str(), st.priority), ("other", 0));
        assert_eq!(st.cpus, [0]);
        assert_eq!(cpus, [0]);
        // A slack of 0 would restore the thread's default: 1 ns is the least.
        assert_eq!(st.timer_slack_ns, 1);
        assert!(is_blocked(&mask, libc::SIGUSR2));
        // The id is the applying thread's, not this one's.
        assert_ne!(st.tid, sys::gettid());

        // Nothing asked, nothing changed: slack and mask as they were.
        let (st, mask, cpus) = apply_on_thread(setup(Policy::Batch, 0));
        let st = st.unwrap();
        assert_eq!(st.policy, "batch");
        assert_eq!(st.timer_slack_ns, 12_345);
        assert!(!is_blocked(&mask, libc::SIGUSR2));
        assert!(st.cpus.is_empty());
        assert_eq!(cpus, affinity());
    }

    /// The stack is faulted in as far as asked (on a fresh thread's stack,
    /// which nothing has touched).
    #[test]
    fn apply_prefaults_the_stack() {
        let _one_at_a_time = sys::MLOCK_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let faults = std::thread::Builder::new()
            .stack_size(4 << 20)
            .spawn(|| {
                let minflt = || {
                    // SAFETY: rusage is POD; getrusage fills it.
                    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
                    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
                    ru.ru_minflt
                };
                let mut s = setup(Policy::Other, 0);
                s.prefault_stack = 1 << 20;
                sys::forget_stack_below(2 << 20);
                let before = minflt();
                s.apply().unwrap();
                minflt() - before
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(
            faults as usize >= (1 << 20) / sys::page_size() / 2,
            "{faults} faults"
        );
    }

    #[test]
    fn a_real_time_policy_is_read_back_with_its_priority() {
        let (st, _, _) = apply_on_thread(setup(Policy::Fifo, 3));
        match st {
            Ok(st) => assert_eq!((st.policy.as_str(), st.priority), ("fifo", 3)),
            // A container without a real-time budget (root, but EPERM).
            Err(RtError::Permission(m)) => {
                assert!(std::env::var_os("CI").is_none(), "{m}");
                eprintln!("skipped: {m}");
            }
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn refusals_say_what_was_asked() {
        let mut s = setup(Policy::Other, 0);
        s.cpus = vec![100_000];
        let e = apply_on_thread(s).0.unwrap_err();
        assert!(matches!(e, RtError::Affinity { .. }), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("cannot pin thread to CPUs 100000: "),
            "{e}"
        );
        // 100 is no real-time priority: invalid, not forbidden.
        let e = apply_on_thread(setup(Policy::Rr, 100)).0.unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot set scheduling policy rr priority 100: "),
            "{e}"
        );
    }

    /// Root without CAP_SYS_NICE (before: told "the cgroup has no
    /// real-time budget" though the cgroup had one): told of the
    /// capability. The capability is dropped from one thread's effective
    /// set (capabilities are per thread); where RLIMIT_RTPRIO would allow
    /// the priority anyway, there is nothing to check.
    #[test]
    fn root_without_cap_sys_nice_is_told_of_the_capability() {
        if sys::geteuid() != 0 || has_sys_nice() != Some(true) || sys::rlimit_rtprio().0 >= 80 {
            return;
        }
        let (advice, refused, held) = std::thread::spawn(|| {
            #[repr(C)]
            struct Header {
                version: u32,
                pid: libc::c_int,
            }
            let mut h = Header {
                version: 0x2008_0522,
                pid: 0,
            };
            let mut d = [[0u32; 3]; 2];
            // SAFETY: version-3 header and data, live for the calls; only
            // this thread's capabilities change, and it ends here.
            unsafe {
                assert_eq!(
                    libc::syscall(libc::SYS_capget, &mut h as *mut Header, d.as_mut_ptr()),
                    0
                );
                d[0][0] &= !(1 << 23);
                assert_eq!(
                    libc::syscall(libc::SYS_capset, &mut h as *mut Header, d.as_ptr()),
                    0
                );
            }
            (
                permission_advice(Policy::Fifo, 80),
                ThreadSetup::apply(&setup(Policy::Fifo, 80)).err(),
                has_sys_nice(),
            )
        })
        .join()
        .unwrap();
        assert_eq!(held, Some(false));
        assert!(
            advice.contains("running as root without the capability CAP_SYS_NICE")
                && !advice.contains("cgroup"),
            "{advice}"
        );
        match refused {
            Some(RtError::Permission(m)) => assert!(m.contains("without the capability"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn permission_advice_fits_who_asks() {
        let root = permission_advice(Policy::Fifo, 80);
        assert!(
            root.starts_with("not allowed to use SCHED_FIFO priority 80"),
            "{root}"
        );
        if has_sys_nice() == Some(true) {
            assert!(root.contains("cgroup has no real-time budget"), "{root}");
        }
        let Some((advice, refused)) = as_nobody(|| {
            (
                permission_advice(Policy::Rr, 5),
                ThreadSetup::apply(&setup(Policy::Fifo, 5)).err(),
            )
        }) else {
            return;
        };
        let (soft, _) = sys::rlimit_rtprio();
        assert!(
            advice.starts_with(&format!(
                "not allowed to use SCHED_RR priority 5 (RLIMIT_RTPRIO is {soft}): run as root"
            )),
            "{advice}"
        );
        if soft < 5 {
            match refused {
                Some(RtError::Permission(m)) => {
                    assert!(m.contains("SCHED_FIFO priority 5 (RLIMIT"), "{m}")
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn memory_is_locked_only_where_that_is_safe() {
        let (soft, _) = sys::rlimit_memlock();
        if soft != u64::MAX {
            let r = as_nobody(lock_memory);
            if let Some(r) = r {
                assert_eq!(
                    r.unwrap_err(),
                    format!(
                        "memory not locked: RLIMIT_MEMLOCK is {} KiB (raise it with 'ulimit -l \
                         unlimited' or run as root)",
                        soft / 1024
                    )
                );
            }
        }
        if sys::geteuid() == 0 {
            let _one_at_a_time = sys::MLOCK_TESTS.lock().unwrap_or_else(|e| e.into_inner());
            let r = lock_memory();
            sys::munlockall();
            assert_eq!(r, Ok(()));
        }
    }

    #[test]
    fn the_wake_signal_is_a_real_time_signal_of_its_own() {
        let w = wake_signal();
        assert!((libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&w), "{w}");
        assert_ne!(w, crate::cyclic::timer_signal());
        assert_eq!(w, libc::SIGRTMIN() + 2);
    }

    /// The wake-ups go on, round after round, until no thread runs; a tid of
    /// 0 is only waited for.
    #[test]
    fn wakes_repeat_until_every_thread_has_ended() {
        let mut calls = [0; 2];
        wake_until_ended(&[0, 0], |i| {
            calls[i] += 1;
            calls[i] <= 3 - i
        });
        // Thread 0 runs for 3 rounds, thread 1 for 2: every thread is asked
        // in each round, and the 4th finds none running.
        assert_eq!(calls, [4, 4]);
    }

    #[test]
    fn waking_a_thread_that_has_ended_is_no_error() {
        let tid = std::thread::spawn(sys::gettid).join().unwrap();
        assert!(wake_thread(tid).is_ok());
        assert_eq!(
            wake_thread(-5).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
    }

    /// The guard holds the target while it lives (the device reads back the
    /// lowest target any holder asks for).
    #[test]
    fn the_dma_latency_target_is_held() {
        let read = || -> Option<i32> {
            let b = std::fs::read("/dev/cpu_dma_latency").ok()?;
            Some(i32::from_ne_bytes(b.get(..4)?.try_into().ok()?))
        };
        let Some(before) = read() else {
            return;
        };
        let g = DmaLatencyGuard::acquire(7).unwrap();
        let held = read().unwrap();
        drop(g);
        assert_eq!(held, before.min(7));
    }
}
