//! Runs one experiment: the periodic driver (the sender, always a thread of
//! this process) and the receiver (a thread, or a forked child process).
//!
//! The two sides share a small control block and the latency array in
//! anonymous shared memory (mapped before the fork), so the same code serves
//! both placements. Protocol:
//! 1. each side applies its real-time setup and prepares its channel ends,
//!    then raises its ready word (1) or its failure (2) and waits for the other;
//! 2. the driver sleeps to each absolute deadline, records its activation
//!    latency, and does one exchange: handoff — stamp and send, the receiver
//!    records wake − stamp; round trip — stamp, send, wait for the reply, record
//!    reply wake − stamp;
//! 3. at the end (or on SIGINT) the driver waits until the receiver has taken
//!    every message, raises STOP and sends once more; the receiver sees STOP
//!    after that wake-up and leaves. A child process is then reaped (killed
//!    after a grace period if it does not leave).
//!
//! Nothing on the measuring path allocates: every buffer is sized before the
//! start.

use std::cell::RefCell;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use rtscope_core::rt::{self, permission_advice, RtError, ThreadSetup, ThreadState};
use rtscope_core::sys::{self, ChildExit, SharedArray};

use super::{find, signal, ChannelEnv, IpcPlan, Pattern, Rx, Session, Tx, CLOCK};
use crate::experiment::run::RunEnv;

// Control block words.
const RX_READY: usize = 0;
const TX_READY: usize = 1;
const STOP: usize = 2;
const RECEIVED: usize = 3;
const RX_ERR: usize = 4;
const RX_DONE: usize = 5;
/// Raised by the parent when a receiver process died: the driver gives up.
const ABANDON: usize = 6;
const CTL_LEN: usize = 8;

// Failure stages of the receiver (high half of RX_ERR; the low half is errno).
const STAGE_PERMISSION: u64 = 1;
const STAGE_SETUP: u64 = 2;
const STAGE_PREPARE: u64 = 3;
const STAGE_RECV: u64 = 4;
const STAGE_REPLY: u64 = 5;

const READY_TIMEOUT: Duration = Duration::from_secs(10);
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

type Ctl = Arc<SharedArray<AtomicU64>>;

/// What one experiment produced.
#[derive(Debug, Default)]
pub struct SessionData {
    /// Mechanism latency per exchange (handoff: wake − send; round trip: the trip).
    pub lat: Vec<i64>,
    /// Driver wake-up time per exchange.
    pub t: Vec<u64>,
    /// Driver activation latency per exchange.
    pub jitter: Vec<i64>,
    /// Periods skipped after each exchange.
    pub overruns: Vec<u32>,
    /// Exchanges the driver completed.
    pub done: usize,
    /// Exchanges with a valid latency.
    pub valid: usize,
    /// Times the driver found the receiver still busy with the previous handoff.
    pub behind: u64,
    pub sender: Option<ThreadState>,
    /// SysV objects created (removed at the end).
    pub objects: Vec<String>,
    pub interrupted: bool,
    pub error: Option<String>,
    /// The real-time setup failed (every later experiment would fail too).
    pub setup_failed: bool,
    /// A thread of this experiment did not leave and was left behind (no fork
    /// is safe afterwards).
    pub thread_left: bool,
}

fn ctl_get(ctl: &Ctl, i: usize) -> u64 {
    ctl.as_slice()[i].load(Ordering::Acquire)
}

fn ctl_set(ctl: &Ctl, i: usize, v: u64) {
    ctl.as_slice()[i].store(v, Ordering::Release);
}

/// Polls word `i` until it is non-zero or `timeout` passes (then 0).
fn wait_word(ctl: &Ctl, i: usize, timeout: Duration) -> u64 {
    let t0 = Instant::now();
    loop {
        let v = ctl_get(ctl, i);
        if v != 0 || t0.elapsed() > timeout {
            return v;
        }
        let _ = sys::nanosleep(200_000);
    }
}

fn errno_of(e: &io::Error) -> u64 {
    e.raw_os_error().unwrap_or(0).max(0) as u64
}

fn describe_rx_error(code: u64, plan: &IpcPlan) -> String {
    let stage = code >> 32;
    let errno = (code & 0xffff_ffff) as i32;
    let err = io::Error::from_raw_os_error(errno);
    match stage {
        STAGE_PERMISSION => format!(
            "receiver: {}",
            permission_advice(plan.run.rt.policy, plan.receiver_priority)
        ),
        STAGE_SETUP => format!("receiver: real-time setup failed: {err}"),
        STAGE_PREPARE => format!("receiver: cannot prepare its channel: {err}"),
        STAGE_RECV => format!("receiver: receive failed: {err}"),
        STAGE_REPLY => format!("receiver: reply failed: {err}"),
        _ => "receiver failed".to_string(),
    }
}

fn setup_for(plan: &IpcPlan, cpu: Option<usize>, priority: i32) -> ThreadSetup {
    ThreadSetup {
        policy: plan.run.rt.policy,
        priority,
        cpus: cpu.into_iter().collect(),
        timer_slack_ns: if plan.run.rt.default_system {
            None
        } else {
            Some(1)
        },
        prefault_stack: 64 * 1024,
        block_signals: vec![libc::SIGINT, libc::SIGTERM, libc::SIGHUP, signal::SIGNAL],
    }
}

/// The receiving side.
struct Server {
    rx: Box<dyn Rx>,
    back: Option<Box<dyn Tx>>,
    setup: ThreadSetup,
    ctl: Ctl,
    lat: Arc<SharedArray<AtomicU64>>,
    pattern: Pattern,
}

impl Server {
    fn fail(&self, stage: u64, errno: u64) {
        ctl_set(&self.ctl, RX_ERR, (stage << 32) | errno);
        ctl_set(&self.ctl, RX_READY, 2);
    }

    /// Runs to the STOP message; returns an exit code (for a child process).
    fn run(mut self) -> i32 {
        let code = self.serve();
        ctl_set(&self.ctl, RX_DONE, 1);
        code
    }

    fn serve(&mut self) -> i32 {
        match self.setup.apply() {
            Ok(_) => {}
            Err(RtError::Permission(_)) => {
                self.fail(STAGE_PERMISSION, 0);
                return 1;
            }
            Err(RtError::Affinity { source, .. }) | Err(RtError::Scheduler { source, .. }) => {
                self.fail(STAGE_SETUP, errno_of(&source));
                return 1;
            }
        }
        let prepared = self.rx.prepare().and_then(|()| match &mut self.back {
            Some(b) => b.prepare(),
            None => Ok(()),
        });
        if let Err(e) = prepared {
            self.fail(STAGE_PREPARE, errno_of(&e));
            return 1;
        }
        ctl_set(&self.ctl, RX_READY, 1);
        if wait_word(&self.ctl, TX_READY, READY_TIMEOUT) != 1 {
            return 0;
        }
        let lat = self.lat.as_slice();
        let mut i = 0usize;
        loop {
            let r = match self.rx.recv() {
                Ok(r) => r,
                Err(e) => {
                    self.fail(STAGE_RECV, errno_of(&e));
                    return 1;
                }
            };
            if ctl_get(&self.ctl, STOP) != 0 {
                return 0;
            }
            if i < lat.len() {
                match self.pattern {
                    Pattern::Handoff => lat[i].store(r.latency_ns() as u64, Ordering::Relaxed),
                    Pattern::Roundtrip => {
                        // Counted before the reply: once the driver has its
                        // last reply it reads RECEIVED to decide whether this
                        // side waits for one more (wake-up) message; counted
                        // after, a preempted receiver was left blocked.
                        ctl_set(&self.ctl, RECEIVED, i as u64 + 1);
                        if let Some(b) = &mut self.back {
                            if let Err(e) = b.send(r.sent_ns) {
                                self.fail(STAGE_REPLY, errno_of(&e));
                                return 1;
                            }
                        }
                    }
                }
            }
            i += 1;
            ctl_set(&self.ctl, RECEIVED, i as u64);
        }
    }
}

/// The periodic driver (sending side).
struct Driver {
    tx: Box<dyn Tx>,
    back: Option<Box<dyn Rx>>,
    setup: ThreadSetup,
    ctl: Ctl,
    lat: Arc<SharedArray<AtomicU64>>,
    pattern: Pattern,
    period_ns: u64,
    start_delay_ns: u64,
    n: usize,
    stop: Arc<AtomicBool>,
    /// The sender thread's id once it accepts wake-ups (0 before): what
    /// [`rt::wake_thread`] takes to cut a long period short on a stop.
    tid: Arc<AtomicI32>,
}

#[derive(Debug, Default)]
struct DriverOut {
    state: Option<ThreadState>,
    t: Vec<u64>,
    jitter: Vec<i64>,
    overruns: Vec<u32>,
    done: usize,
    behind: u64,
    interrupted: bool,
    error: Option<String>,
    setup_failed: bool,
    /// The receiver failed (its code in RX_ERR).
    rx_failed: bool,
}

impl Driver {
    fn run(mut self) -> DriverOut {
        let mut out = DriverOut {
            t: Vec::with_capacity(self.n),
            jitter: Vec::with_capacity(self.n),
            overruns: Vec::with_capacity(self.n),
            ..Default::default()
        };
        match self.setup.apply() {
            Ok(st) => out.state = Some(st),
            Err(e) => {
                ctl_set(&self.ctl, TX_READY, 2);
                out.error = Some(format!("sender: {e}"));
                out.setup_failed = true;
                return out;
            }
        }
        match rt::accept_wake() {
            Ok(tid) => self.tid.store(tid, Ordering::Release),
            Err(e) => {
                ctl_set(&self.ctl, TX_READY, 2);
                out.error = Some(format!("sender: cannot accept wake-ups: {e}"));
                return out;
            }
        }
        let prepared = self.tx.prepare().and_then(|()| match &mut self.back {
            Some(b) => b.prepare(),
            None => Ok(()),
        });
        if let Err(e) = prepared {
            ctl_set(&self.ctl, TX_READY, 2);
            out.error = Some(format!("sender: cannot prepare its channel: {e}"));
            return out;
        }
        ctl_set(&self.ctl, TX_READY, 1);
        match wait_word(&self.ctl, RX_READY, READY_TIMEOUT) {
            1 => {}
            0 => {
                out.error = Some("receiver did not get ready within 10 s".into());
                return out;
            }
            _ => {
                out.rx_failed = true;
                out.setup_failed = ctl_get(&self.ctl, RX_ERR) >> 32 == STAGE_PERMISSION;
                return out;
            }
        }
        self.measure(&mut out);
        // Let the receiver take what was sent, then stop it.
        if self.pattern == Pattern::Handoff {
            let t0 = Instant::now();
            while ctl_get(&self.ctl, RECEIVED) < out.done as u64
                && ctl_get(&self.ctl, RX_READY) == 1
                && ctl_get(&self.ctl, ABANDON) == 0
                && t0.elapsed() < DRAIN_TIMEOUT
            {
                let _ = sys::nanosleep(100_000);
            }
        }
        ctl_set(&self.ctl, STOP, 1);
        if ctl_get(&self.ctl, RX_READY) == 1
            && ctl_get(&self.ctl, ABANDON) == 0
            && ctl_get(&self.ctl, RECEIVED) >= out.done as u64
        {
            // Non-zero: an eventfd write of 0 wakes nobody.
            let _ = self.tx.send(1);
        } else if ctl_get(&self.ctl, RX_READY) == 2 {
            out.rx_failed = true;
        }
        out
    }

    /// The driver's wait for its next period: sleeps until the absolute
    /// `deadline_ns` on [`CLOCK`]. The one place where the driver sleeps for
    /// a period. `Ok(false)`: the run was stopped during the wait (the
    /// session's watcher interrupts it with [`rt::wake_thread`], so a stop
    /// never waits for the rest of a long period).
    fn sleep_to(&self, deadline_ns: u64) -> io::Result<bool> {
        loop {
            if sys::sleep_until_interruptible(CLOCK, deadline_ns)? {
                return Ok(true);
            }
            if self.stop.load(Ordering::Relaxed) {
                return Ok(false);
            }
        }
    }

    /// The measurement loop: no allocation (the vectors have their capacity).
    fn measure(&mut self, out: &mut DriverOut) {
        let lat = self.lat.as_slice();
        let ctl = self.ctl.as_slice();
        let mut next = sys::clock_ns(CLOCK) + self.start_delay_ns;
        #[allow(clippy::needless_range_loop)] // `i` also counts exchanges for the receiver
        'outer: for i in 0..self.n {
            if self.stop.load(Ordering::Relaxed) {
                out.interrupted = true;
                break;
            }
            if ctl[RX_READY].load(Ordering::Relaxed) == 2
                || ctl[ABANDON].load(Ordering::Relaxed) != 0
            {
                out.rx_failed = true;
                break;
            }
            match self.sleep_to(next) {
                Ok(true) => {}
                Ok(false) => {
                    out.interrupted = true;
                    break;
                }
                Err(e) => {
                    out.error = Some(format!("sender: clock_nanosleep failed: {e}"));
                    break;
                }
            }
            let woke = sys::clock_ns(CLOCK);
            let r = match self.pattern {
                Pattern::Handoff => {
                    // The receiver must have taken the previous message, or its
                    // stamp slot would be overwritten: wait (and count it).
                    if ctl[RECEIVED].load(Ordering::Acquire) < i as u64 {
                        out.behind += 1;
                        while ctl[RECEIVED].load(Ordering::Acquire) < i as u64 {
                            if self.stop.load(Ordering::Relaxed) {
                                out.interrupted = true;
                                break 'outer;
                            }
                            if ctl[RX_READY].load(Ordering::Relaxed) == 2
                                || ctl[ABANDON].load(Ordering::Relaxed) != 0
                            {
                                out.rx_failed = true;
                                break 'outer;
                            }
                            let _ = sys::nanosleep(20_000);
                        }
                    }
                    let t0 = sys::clock_ns(CLOCK);
                    self.tx.send(t0)
                }
                Pattern::Roundtrip => {
                    let t0 = sys::clock_ns(CLOCK);
                    match self.tx.send(t0) {
                        Ok(()) => match &mut self.back {
                            Some(b) => b.recv().map(|r| {
                                lat[i]
                                    .store((r.woke_ns as i64 - t0 as i64) as u64, Ordering::Relaxed)
                            }),
                            None => Ok(()),
                        },
                        Err(e) => Err(e),
                    }
                }
            };
            out.t.push(woke);
            out.jitter.push(woke as i64 - next as i64);
            if let Err(e) = r {
                out.error = Some(format!("sender: exchange failed: {e}"));
                out.t.pop();
                out.jitter.pop();
                break;
            }
            next += self.period_ns;
            let now = sys::clock_ns(CLOCK);
            let mut skipped = 0u32;
            while next <= now {
                next += self.period_ns;
                skipped = skipped.saturating_add(1);
            }
            out.overruns.push(skipped);
            out.done = i + 1;
        }
    }
}

/// A forked receiver, killed and reaped on every path.
struct ChildGuard {
    pid: i32,
    reaped: Option<ChildExit>,
}

impl ChildGuard {
    /// Waits up to `grace` for the child to leave, then kills it; reaps it.
    fn finish(&mut self, grace: Duration) -> ChildExit {
        if let Some(e) = self.reaped {
            return e;
        }
        let t0 = Instant::now();
        loop {
            match sys::waitpid(self.pid, false) {
                Ok(Some(e)) => {
                    self.reaped = Some(e);
                    return e;
                }
                Ok(None) if t0.elapsed() < grace => {
                    let _ = sys::nanosleep(1_000_000);
                }
                _ => break,
            }
        }
        let _ = sys::kill(self.pid, libc::SIGKILL);
        let e = sys::waitpid(self.pid, true)
            .ok()
            .flatten()
            .unwrap_or(ChildExit::Signal(libc::SIGKILL));
        self.reaped = Some(e);
        e
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.finish(Duration::ZERO);
    }
}

fn exit_text(e: ChildExit) -> String {
    match e {
        ChildExit::Code(c) => format!("exit code {c}"),
        ChildExit::Signal(s) => format!("signal {s}"),
    }
}

/// The receiver process: never returns.
fn child_main(server: Server, mlock: bool) -> ! {
    let _ = sys::block_signals(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP, signal::SIGNAL]);
    let _ = sys::set_parent_death_signal(libc::SIGKILL);
    if mlock {
        let _ = rtscope_core::rt::lock_memory();
    }
    let code =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| server.run())).unwrap_or(101);
    sys::exit_now(code)
}

/// Runs one experiment with all its repetitions.
/// After a stop: interrupts the sender's wait for its next period (it then
/// sees the stop flag and ends its experiment).
fn interrupt_on_stop<T>(stop: &AtomicBool, tid: &AtomicI32, h: &std::thread::JoinHandle<T>) {
    if stop.load(Ordering::Relaxed) && !h.is_finished() {
        let _ = rt::wake_thread(tid.load(Ordering::Acquire));
    }
}

pub fn run_session(plan: &IpcPlan, s: &Session, tag: &str, env: &RunEnv) -> Result<SessionData> {
    let r = run_session_inner(plan, s, tag, env);
    // Every object of the experiment has been dropped (removed) by now,
    // unless a thread was left behind with it.
    super::leftovers::settle();
    r
}

fn run_session_inner(plan: &IpcPlan, s: &Session, tag: &str, env: &RunEnv) -> Result<SessionData> {
    let mech = find(s.mechanism).ok_or_else(|| anyhow!("unknown mechanism {}", s.mechanism))?;
    let n = (plan.loops * plan.repetitions) as usize;
    let ctl: Ctl = Arc::new(SharedArray::new(CTL_LEN).context("shared memory")?);
    let lat = Arc::new(SharedArray::<AtomicU64>::new(n).context("shared memory")?);

    let created = RefCell::new(Vec::new());
    let channel_env = |dir: &str| ChannelEnv {
        tag: format!("{tag}-{dir}"),
        created: &created,
    };
    let fwd =
        (mech.make)(&channel_env("fwd")).map_err(|e| anyhow!("cannot create the channel: {e}"))?;
    let back = match s.pattern {
        Pattern::Roundtrip => Some(
            (mech.make)(&channel_env("back"))
                .map_err(|e| anyhow!("cannot create the reply channel: {e}"))?,
        ),
        Pattern::Handoff => None,
    };
    let (back_tx, back_rx) = match back {
        Some(c) => (Some(c.tx), Some(c.rx)),
        None => (None, None),
    };
    let server = Server {
        rx: fwd.rx,
        back: back_tx,
        setup: setup_for(plan, plan.receiver_cpu, plan.receiver_priority),
        ctl: ctl.clone(),
        lat: lat.clone(),
        pattern: s.pattern,
    };
    let tid = Arc::new(AtomicI32::new(0));
    let driver = Driver {
        tx: fwd.tx,
        back: back_rx,
        setup: setup_for(plan, plan.sender_cpu, plan.sender_priority),
        ctl: ctl.clone(),
        lat: lat.clone(),
        pattern: s.pattern,
        period_ns: s.period_ns,
        start_delay_ns: plan.start_delay_ns,
        n,
        stop: env.stop.clone(),
        tid: tid.clone(),
    };

    let mut data = SessionData::default();
    let out = match s.between {
        super::Between::Threads => {
            let rx_thread = std::thread::Builder::new()
                .name("ipc-receiver".into())
                .spawn(move || server.run())
                .context("cannot start the receiver thread")?;
            let h = std::thread::Builder::new()
                .name("ipc-sender".into())
                .spawn(move || driver.run())
                .context("cannot start the sender thread")?;
            while !h.is_finished() {
                interrupt_on_stop(&env.stop, &tid, &h);
                let _ = sys::nanosleep(5_000_000);
            }
            let out = h
                .join()
                .map_err(|_| anyhow!("the sender thread panicked"))?;
            if wait_word(&ctl, RX_DONE, DRAIN_TIMEOUT) == 1 {
                let _ = rx_thread.join();
            } else {
                data.thread_left = true;
                data.error = Some("the receiver thread did not stop (left behind)".into());
            }
            out
        }
        super::Between::Processes => {
            // The fork: every thread of an earlier experiment has been joined
            // (run() refuses to fork after one was left behind), so the only
            // other threads can be helpers that hold no lock the child needs;
            // the child makes system calls and uses glibc's malloc, which glibc
            // keeps consistent across fork.
            let pid = sys::fork().context("fork failed")?;
            if pid == 0 {
                drop(driver);
                child_main(server, env.mlocked);
            }
            let mut child = ChildGuard { pid, reaped: None };
            drop(server);
            let h = std::thread::Builder::new()
                .name("ipc-sender".into())
                .spawn(move || driver.run())
                .context("cannot start the sender thread")?;
            // Watch the receiver while the sender runs: if it dies, the sender
            // must not wait for it for ever.
            while !h.is_finished() {
                interrupt_on_stop(&env.stop, &tid, &h);
                if child.reaped.is_none() {
                    if let Ok(Some(e)) = sys::waitpid(pid, false) {
                        child.reaped = Some(e);
                    }
                }
                if let Some(e) = child.reaped {
                    ctl_set(&ctl, ABANDON, 1);
                    let t0 = Instant::now();
                    while !h.is_finished() && t0.elapsed() < DRAIN_TIMEOUT {
                        let _ = sys::nanosleep(5_000_000);
                    }
                    if !h.is_finished() {
                        // Blocked in a receive that can no longer complete.
                        data.thread_left = true;
                        data.error = Some(format!(
                            "the receiver process ended ({}) while the sender waited for its reply; \
                             the experiment's samples are lost",
                            exit_text(e)
                        ));
                        return Ok(data);
                    }
                    break;
                }
                let _ = sys::nanosleep(5_000_000);
            }
            let out = h
                .join()
                .map_err(|_| anyhow!("the sender thread panicked"))?;
            let abandoned = ctl_get(&ctl, ABANDON) != 0;
            match child.finish(DRAIN_TIMEOUT) {
                _ if ctl_get(&ctl, RX_READY) == 2 => {} // reported below
                // The sender had already told it to stop: the watcher only
                // reaped it before the sender thread returned.
                ChildExit::Code(0) if ctl_get(&ctl, STOP) != 0 => {}
                e if abandoned => {
                    data.error = Some(format!(
                        "the receiver process ended early ({})",
                        exit_text(e)
                    ))
                }
                ChildExit::Code(0) => {}
                ChildExit::Code(c) => {
                    data.error = Some(format!("the receiver process exited with code {c}"))
                }
                ChildExit::Signal(sig) => {
                    data.error = Some(format!(
                        "the receiver process did not stop and was killed (signal {sig})"
                    ))
                }
            }
            out
        }
    };

    if ctl_get(&ctl, RX_READY) == 2 {
        let code = ctl_get(&ctl, RX_ERR);
        if code >> 32 == STAGE_PERMISSION {
            data.setup_failed = true;
        }
        data.error = Some(describe_rx_error(code, plan));
    }
    if let Some(e) = out.error {
        data.error = Some(match data.error.take() {
            Some(first) => format!("{first}; {e}"),
            None => e,
        });
    }
    if data.error.is_none() && out.rx_failed {
        data.error = Some("the receiver failed".into());
    }
    data.setup_failed |= out.setup_failed;
    data.done = out.done;
    data.valid = match s.pattern {
        Pattern::Handoff => out.done.min(ctl_get(&ctl, RECEIVED) as usize),
        Pattern::Roundtrip => out.done,
    };
    data.lat = lat.as_slice()[..data.valid]
        .iter()
        .map(|v| v.load(Ordering::Relaxed) as i64)
        .collect();
    data.t = out.t;
    data.jitter = out.jitter;
    data.overruns = out.overruns;
    data.behind = out.behind;
    data.sender = out.state;
    data.interrupted = out.interrupted;
    data.objects = created.into_inner();
    Ok(data)
}
