//! The parent side of loads: spawn, watch, stop and reap.
//!
//! Each instance is `rtscope __load-worker` (re-executed from /proc/self/exe)
//! in its own process group (so a Ctrl-C on the terminal reaches rtscope only,
//! and a whole load, an external command's children included, can be signalled
//! at once). rtscope makes itself a child subreaper, so that processes a load
//! leaves behind are re-parented to it and can be reaped too.
//!
//! Achieved CPU share: the sum of utime+stime (+cutime+cstime, for reaped
//! descendants) of every process in the instance's group, read from
//! `/proc/PID/stat` at the start of the window (after the ramp-up) and at its
//! end (before SIGTERM), divided by the wall time between the two readings.
//!
//! Stopping: SIGTERM to every group, up to [`GRACE`] for the workers to print
//! their counters and exit, SIGKILL to what is left, then `waitpid` of every
//! worker and of every re-parented member of its group. [`RunningLoads`] does
//! the same on drop, so an error or a panic never leaves a load running; the
//! workers also carry `PR_SET_PDEATHSIG`, for when rtscope itself is killed.
//!
//! Schedules (`every=`, `for=`, `start=`): a scheduler thread (not real-time)
//! pauses a load between its on-phases with SIGSTOP of each of its process
//! groups and resumes it with SIGCONT, rather than stopping and restarting
//! it: the workers stay the same processes, so their counters (printed once,
//! at exit) cover the whole run, reaping and `/proc` accounting follow the
//! same pids, and a stopped process uses no CPU time, so the CPU time read at
//! the window's ends divided by the time the load was *on* (not by the
//! window) is its share while on. Stopping always sends SIGTERM then SIGCONT
//! (a stopped process acts on SIGTERM only once continued); a second Ctrl-C,
//! which exits at once, continues the paused groups first
//! ([`continue_paused_groups`]) so that their parent-death SIGTERM is acted on.
//!
//! A real-time `cpu` load (`policy=fifo|rr`) with a schedule is never
//! stopped: it keeps the schedule by its own clock, on a grid that starts
//! when the window is planned to open (passed in [`ORIGIN_ENV`]), and its
//! on-intervals in the report are that grid's, within the window. Such a
//! load is checked before anything starts: the right to its policy (a
//! thread tries it), and without a schedule, that RT throttling is on.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use rtscope_core::sys;
use rtscope_core::units::{format_cpu_list, online_cpus};

use super::cpu::{phase_at, ORIGIN_ENV};
use super::worker::rt_refusal;
use super::{format_size, DefaultInstances, LoadSpec};
use crate::error::usage;

/// How long loads run before the measurement window opens.
pub const RAMP: Duration = Duration::from_millis(200);
/// How long stopped workers get to exit before SIGKILL.
pub const GRACE: Duration = Duration::from_secs(2);
/// At most this share of MemAvailable may be mapped by loads in total.
pub const MEMORY_CAP_PERCENT: u64 = 50;

use rtscope_core::result::MAX_ON_INTERVALS;
pub use rtscope_core::result::{InstanceReport, LoadReport, LoadSchedule};

use super::Schedule;

/// Process groups of scheduled loads (they may be stopped): continued by
/// [`continue_paused_groups`] when rtscope exits at once.
static PAUSABLE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// SIGTERM and SIGCONT to every group a schedule may have stopped: for an
/// exit without the normal shutdown (a second Ctrl-C), so that no stopped
/// worker is left behind.
pub fn continue_paused_groups() {
    if let Ok(g) = PAUSABLE.lock() {
        for &pgid in g.iter() {
            let _ = sys::killpg(pgid, libc::SIGTERM);
            let _ = sys::killpg(pgid, libc::SIGCONT);
        }
    }
}

/// What the scheduler recorded for one load: on-intervals (CLOCK_MONOTONIC),
/// the first [`MAX_ON_INTERVALS`] closed ones, the open one, and totals.
#[derive(Debug, Default, Clone)]
struct OnRecord {
    closed: Vec<(u64, u64)>,
    open: Option<u64>,
    count: u64,
    on_ns: u64,
}

impl OnRecord {
    fn switch_on(&mut self, t: u64) {
        self.open = Some(t);
        self.count += 1;
    }

    /// Closes the record at `end` (the window's end): switches after it
    /// do not count.
    fn end_at(&mut self, end: u64) {
        for iv in &mut self.closed {
            let b = iv.1.min(end);
            self.on_ns -= iv.1 - b.max(iv.0);
            iv.1 = b.max(iv.0);
        }
        let before = self.closed.len();
        self.closed.retain(|&(a, _)| a < end);
        self.count -= (before - self.closed.len()) as u64;
        if self.open.is_some_and(|a| a >= end) {
            self.open = None;
            self.count -= 1;
        }
        self.switch_off(end);
    }

    fn switch_off(&mut self, t: u64) {
        if let Some(a) = self.open.take() {
            let b = t.max(a);
            self.on_ns += b - a;
            if self.closed.len() < MAX_ON_INTERVALS {
                self.closed.push((a, b));
            }
        }
    }
}

/// The scheduler thread of the scheduled loads.
struct Scheduler {
    stop: Arc<(Mutex<bool>, Condvar)>,
    handle: Option<JoinHandle<Vec<OnRecord>>>,
}

impl Scheduler {
    /// Starts switching the loads `(index, schedule, process groups)` at
    /// `t0` (CLOCK_MONOTONIC): each is on when its schedule says so,
    /// stopped otherwise; the result has one record per index below `n`.
    fn start(t0: u64, n: usize, loads: Vec<(usize, Schedule, Vec<i32>)>) -> Result<Self> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let st = stop.clone();
        if let Ok(mut g) = PAUSABLE.lock() {
            g.extend(loads.iter().flat_map(|l| l.2.iter().copied()));
        }
        let handle = std::thread::Builder::new()
            .name("load-schedule".into())
            .stack_size(64 * 1024)
            .spawn(move || schedule_loop(t0, n, &loads, &st))
            .context("cannot start the load scheduler thread")?;
        Ok(Scheduler {
            stop,
            handle: Some(handle),
        })
    }

    /// Ends the thread; its records (intervals still open stay open).
    fn finish(&mut self) -> Vec<OnRecord> {
        let (m, cv) = &*self.stop;
        if let Ok(mut g) = m.lock() {
            *g = true;
        }
        cv.notify_all();
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

fn signal_groups(pgids: &[i32], sig: i32) {
    for &g in pgids {
        let _ = sys::killpg(g, sig);
    }
}

fn schedule_loop(
    t0: u64,
    n: usize,
    loads: &[(usize, Schedule, Vec<i32>)],
    stop: &(Mutex<bool>, Condvar),
) -> Vec<OnRecord> {
    let mono = || sys::clock_ns(libc::CLOCK_MONOTONIC);
    let mut rec = vec![OnRecord::default(); n];
    // Every load runs since its start-up; at t0 each takes its schedule's state.
    let mut on = vec![true; loads.len()];
    for (k, (i, sc, groups)) in loads.iter().enumerate() {
        if sc.is_on(0) {
            rec[*i].switch_on(t0);
        } else {
            signal_groups(groups, libc::SIGSTOP);
            on[k] = false;
        }
    }
    let (m, cv) = stop;
    loop {
        let rel = mono().saturating_sub(t0);
        let next = loads
            .iter()
            .map(|(_, sc, _)| sc.next_switch(rel))
            .min()
            .unwrap_or(u64::MAX);
        // Wait for the next switch, or for the end.
        let Ok(mut done) = m.lock() else { break };
        loop {
            if *done {
                return rec;
            }
            let now = mono().saturating_sub(t0);
            if now >= next {
                break;
            }
            let wait = Duration::from_nanos(next - now);
            done = match cv.wait_timeout(done, wait) {
                Ok((g, _)) => g,
                Err(_) => return rec,
            };
        }
        drop(done);
        let rel = mono().saturating_sub(t0);
        for (k, (i, sc, groups)) in loads.iter().enumerate() {
            let want = sc.is_on(rel);
            if want == on[k] {
                continue;
            }
            if want {
                signal_groups(groups, libc::SIGCONT);
                rec[*i].switch_on(mono());
            } else {
                signal_groups(groups, libc::SIGSTOP);
                rec[*i].switch_off(mono());
            }
            on[k] = want;
        }
    }
    rec
}

struct Instance {
    index: usize,
    cpus: Vec<usize>,
    pid: i32,
    child: Option<Child>,
    status: Option<ExitStatus>,
    killed: bool,
    reader: Option<JoinHandle<String>>,
    base_ticks: u64,
    end_ticks: u64,
}

struct Running {
    spec: LoadSpec,
    instances: Vec<Instance>,
}

/// Starting loads.
pub struct LoadSet;

/// Loads that run; stop them with [`RunningLoads::stop`] (or drop them).
pub struct RunningLoads {
    loads: Vec<Running>,
    spawned_at: Instant,
    window_start: Instant,
    /// CLOCK_MONOTONIC when the window opened (schedules count from it).
    window_start_mono: u64,
    /// CLOCK_MONOTONIC when the window was planned to open: where the
    /// schedules of self-timed loads count from.
    grid_origin_mono: u64,
    scheduler: Option<Scheduler>,
}

/// The CPUs loads go on: `--load-cpus` or every online CPU.
fn resolve_cpus(cpus: Option<&[usize]>) -> Result<Vec<usize>> {
    let online = online_cpus();
    match cpus {
        None => Ok(online),
        Some(c) => {
            if let Some(bad) = c.iter().find(|x| !online.contains(x)) {
                return Err(usage(format!(
                    "--load-cpus: CPU {bad} is not online (online CPUs: {})",
                    format_cpu_list(&online)
                )));
            }
            Ok(c.to_vec())
        }
    }
}

/// Instance placement: one CPU each, round robin, or every CPU for a
/// single-instance load without `instances=`.
fn placement(spec: &LoadSpec, cpus: &[usize]) -> Vec<Vec<usize>> {
    match (spec.instances(), spec.def().instances) {
        (None, DefaultInstances::One) => vec![cpus.to_vec()],
        (None, DefaultInstances::PerCpu) => cpus.iter().map(|&c| vec![c]).collect(),
        (Some(n), _) => (0..n).map(|i| vec![cpus[i % cpus.len()]]).collect(),
    }
}

/// MemAvailable from /proc/meminfo, bytes.
pub fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

impl LoadSet {
    /// Checks placement and the memory cap without starting anything (usage
    /// errors, exit 2).
    pub fn check(specs: &[LoadSpec], cpus: Option<&[usize]>) -> Result<()> {
        let cpus = resolve_cpus(cpus)?;
        if cpus.is_empty() {
            return Err(usage("--load-cpus: no CPU"));
        }
        let total: u64 = specs
            .iter()
            .map(|s| (s.def().memory)(s).saturating_mul(placement(s, &cpus).len() as u64))
            .fold(0u64, u64::saturating_add);
        for s in specs {
            check_real_time(s)?;
        }
        let avail = mem_available().unwrap_or(0);
        let cap = avail / 100 * MEMORY_CAP_PERCENT;
        if total > cap {
            return Err(usage(format!(
                "loads would map {} in total, more than {MEMORY_CAP_PERCENT} % of MemAvailable ({}): lower size= or instances=",
                format_size(total),
                format_size(avail)
            )));
        }
        Ok(())
    }

    /// [`LoadSet::start`] for an experiment: unless `quiet`, says on stderr
    /// which loads run where.
    pub fn start_for_run(
        specs: &[LoadSpec],
        cpus: Option<&[usize]>,
        quiet: bool,
    ) -> Result<RunningLoads> {
        let loads = Self::start(specs, cpus)?;
        if !quiet && !loads.is_empty() {
            eprintln!("{}", loads.describe());
        }
        Ok(loads)
    }

    /// Starts every load, lets them ramp up for [`RAMP`], and opens the
    /// measurement window. A load that fails during the ramp-up is an error
    /// (the others are stopped and reaped).
    pub fn start(specs: &[LoadSpec], cpus: Option<&[usize]>) -> Result<RunningLoads> {
        Self::check(specs, cpus)?;
        let cpus = resolve_cpus(cpus)?;
        let mut running = RunningLoads {
            loads: Vec::new(),
            spawned_at: Instant::now(),
            window_start: Instant::now(),
            window_start_mono: sys::clock_ns(libc::CLOCK_MONOTONIC),
            grid_origin_mono: sys::clock_ns(libc::CLOCK_MONOTONIC) + RAMP.as_nanos() as u64,
            scheduler: None,
        };
        if specs.is_empty() {
            return Ok(running);
        }
        // Orphans of a load's group are re-parented to us, so we can reap them.
        let _ = sys::set_child_subreaper();
        let parent = sys::getpid();
        for spec in specs {
            let mut r = Running {
                spec: spec.clone(),
                instances: Vec::new(),
            };
            for (index, icpus) in placement(spec, &cpus).into_iter().enumerate() {
                let mut child = Command::new("/proc/self/exe")
                    .arg0("rtscope")
                    .arg("__load-worker")
                    .arg("--instance")
                    .arg(index.to_string())
                    .arg("--parent")
                    .arg(parent.to_string())
                    .arg("--cpus")
                    .arg(format_cpu_list(&icpus))
                    .arg("--")
                    .arg(&spec.text)
                    .env(ORIGIN_ENV, running.grid_origin_mono.to_string())
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .process_group(0)
                    .spawn()
                    .with_context(|| format!("cannot start load {spec}"))?;
                let pid = child.id() as i32;
                let mut out = child.stdout.take();
                let reader = std::thread::Builder::new()
                    .name("load-reader".into())
                    .stack_size(64 * 1024)
                    .spawn(move || {
                        let mut s = String::new();
                        if let Some(o) = out.as_mut() {
                            let _ = o.read_to_string(&mut s);
                        }
                        s
                    })
                    .ok();
                r.instances.push(Instance {
                    index,
                    cpus: icpus,
                    pid,
                    child: Some(child),
                    status: None,
                    killed: false,
                    reader,
                    base_ticks: 0,
                    end_ticks: 0,
                });
            }
            running.loads.push(r);
        }
        running.spawned_at = Instant::now();
        // Ramp-up: a load that dies now (bad command, mmap refused) fails
        // the run. It ends where self-timed loads start their grid ([`RAMP`]
        // after the first spawn), but at least half of it after the last.
        let until = running
            .grid_origin_mono
            .max(sys::clock_ns(libc::CLOCK_MONOTONIC) + RAMP.as_nanos() as u64 / 2);
        loop {
            let now = sys::clock_ns(libc::CLOCK_MONOTONIC);
            if now >= until {
                break;
            }
            std::thread::sleep(Duration::from_nanos((until - now).min(20_000_000)));
            if let Some(msg) = running.first_failure() {
                return Err(anyhow!(msg));
            }
        }
        let ticks = group_ticks();
        for inst in running.instances_mut() {
            inst.base_ticks = ticks.get(&inst.pid).copied().unwrap_or(0);
        }
        running.window_start = Instant::now();
        running.window_start_mono = sys::clock_ns(libc::CLOCK_MONOTONIC);
        let scheduled: Vec<(usize, Schedule, Vec<i32>)> = running
            .loads
            .iter()
            .enumerate()
            // A self-timed load is never stopped (it may hold the CPU the
            // scheduler thread needs).
            .filter(|(_, l)| !l.spec.self_timed())
            .filter_map(|(i, l)| {
                l.spec
                    .schedule
                    .map(|sc| (i, sc, l.instances.iter().map(|x| x.pid).collect()))
            })
            .collect();
        if !scheduled.is_empty() {
            running.scheduler = Some(Scheduler::start(
                running.window_start_mono,
                running.loads.len(),
                scheduled,
            )?);
        }
        Ok(running)
    }
}

impl RunningLoads {
    /// No load (what is left where the loads were stopped early).
    pub fn none() -> RunningLoads {
        RunningLoads {
            loads: Vec::new(),
            spawned_at: Instant::now(),
            window_start: Instant::now(),
            window_start_mono: sys::clock_ns(libc::CLOCK_MONOTONIC),
            grid_origin_mono: sys::clock_ns(libc::CLOCK_MONOTONIC),
            scheduler: None,
        }
    }

    /// Whether no load runs.
    pub fn is_empty(&self) -> bool {
        self.loads.is_empty()
    }

    fn instances_mut(&mut self) -> impl Iterator<Item = &mut Instance> {
        self.loads.iter_mut().flat_map(|l| l.instances.iter_mut())
    }

    /// One line: what runs where.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .loads
            .iter()
            .map(|l| {
                let mut cpus: Vec<usize> =
                    l.instances.iter().flat_map(|i| i.cpus.clone()).collect();
                cpus.sort_unstable();
                cpus.dedup();
                format!(
                    "{} x{} on CPU {}",
                    l.spec,
                    l.instances.len(),
                    format_cpu_list(&cpus)
                )
            })
            .collect();
        format!("loads: {}", parts.join("; "))
    }

    /// A worker that exited during the ramp-up, as an error line.
    fn first_failure(&mut self) -> Option<String> {
        for l in &mut self.loads {
            for inst in &mut l.instances {
                let Some(child) = inst.child.as_mut() else {
                    continue;
                };
                if let Ok(Some(st)) = child.try_wait() {
                    inst.status = Some(st);
                    inst.child = None;
                    let out = inst
                        .reader
                        .take()
                        .and_then(|h| h.join().ok())
                        .unwrap_or_default();
                    let (_, err) = parse_worker_line(&out);
                    return Some(format!(
                        "load {} (instance {}) stopped during start-up: {}",
                        l.spec,
                        inst.index,
                        err.unwrap_or_else(|| describe_status(st))
                    ));
                }
            }
        }
        None
    }

    /// [`stop_at`](Self::stop_at) with on-intervals relative to the window's start.
    pub fn stop(self) -> Vec<LoadReport> {
        let origin = self.window_start_mono;
        self.stop_at(origin)
    }

    /// Stops every load, reaps every process, and returns what each
    /// achieved; a scheduled load's on-intervals are relative to `origin`
    /// (CLOCK_MONOTONIC), and its CPU shares are over its on-time.
    pub fn stop_at(mut self, origin: u64) -> Vec<LoadReport> {
        let window = self.window_start.elapsed();
        let lifetime = self.spawned_at.elapsed();
        let end_mono = sys::clock_ns(libc::CLOCK_MONOTONIC);
        let ticks = group_ticks();
        for inst in self.instances_mut() {
            inst.end_ticks = ticks.get(&inst.pid).copied().unwrap_or(inst.base_ticks);
        }
        let mut records = self
            .scheduler
            .as_mut()
            .map(Scheduler::finish)
            .unwrap_or_default();
        for r in &mut records {
            r.end_at(end_mono);
        }
        records.resize(records.len().max(self.loads.len()), OnRecord::default());
        for (r, l) in records.iter_mut().zip(&self.loads) {
            if let Some(sc) = l.spec.schedule.filter(|_| l.spec.self_timed()) {
                *r = planned(&sc, self.grid_origin_mono, self.window_start_mono, end_mono);
            }
        }
        self.shutdown();
        let hz = sys::clock_ticks_per_sec() as f64;
        let loads = std::mem::take(&mut self.loads);
        loads
            .into_iter()
            .enumerate()
            .map(|(li, l)| {
                let schedule = l.spec.schedule.map(|sc| {
                    let r = records.get(li).cloned().unwrap_or_default();
                    LoadSchedule {
                        every_ns: sc.every_ns,
                        for_ns: sc.for_ns,
                        start_ns: sc.start_ns,
                        on_intervals_ns: r
                            .closed
                            .iter()
                            .map(|&(a, b)| [a.saturating_sub(origin), b.saturating_sub(origin)])
                            .collect(),
                        on_count: r.count,
                        on_s: round3(r.on_ns as f64 / 1e9),
                    }
                });
                // The share of a scheduled load is over its on-time.
                let share_over = match &schedule {
                    Some(s) => s.on_s,
                    None => window.as_secs_f64(),
                };
                let names = l.spec.def().counters;
                let mut counters: BTreeMap<String, u64> =
                    names.iter().map(|n| (n.to_string(), 0)).collect();
                let mut reports = Vec::new();
                let mut errors = Vec::new();
                let mut cpus = Vec::new();
                for mut inst in l.instances {
                    let out = inst
                        .reader
                        .take()
                        .and_then(|h| h.join().ok())
                        .unwrap_or_default();
                    let (c, err) = parse_worker_line(&out);
                    for (k, v) in &c {
                        *counters.entry(k.clone()).or_default() += v;
                    }
                    let exit = match inst.status {
                        Some(st) if inst.killed => {
                            format!(
                                "{} (SIGKILL after {} s)",
                                describe_status(st),
                                GRACE.as_secs()
                            )
                        }
                        Some(st) => describe_status(st),
                        None => "unknown".into(),
                    };
                    if let Some(e) = &err {
                        errors.push(format!("instance {}: {e}", inst.index));
                    } else if c.is_empty() {
                        errors.push(format!("instance {}: no counters ({exit})", inst.index));
                    }
                    let used = inst.end_ticks.saturating_sub(inst.base_ticks) as f64 / hz;
                    cpus.extend(inst.cpus.iter().copied());
                    reports.push(InstanceReport {
                        index: inst.index,
                        pid: inst.pid,
                        cpus: inst.cpus.clone(),
                        // A load never on (start= beyond the run) did no work.
                        cpu_percent: if share_over > 0.0 {
                            round2(100.0 * used / share_over)
                        } else {
                            0.0
                        },
                        counters: c,
                        exit,
                        error: err,
                    });
                }
                cpus.sort_unstable();
                cpus.dedup();
                let shares: Vec<f64> = reports.iter().map(|r| r.cpu_percent).collect();
                let mean = if shares.is_empty() {
                    0.0
                } else {
                    shares.iter().sum::<f64>() / shares.len() as f64
                };
                LoadReport {
                    spec: l.spec.text.clone(),
                    name: l.spec.name.to_string(),
                    level: l.spec.level,
                    instances: reports.len(),
                    cpus,
                    window_s: round3(window.as_secs_f64()),
                    lifetime_s: round3(lifetime.as_secs_f64()),
                    achieved_cpu_percent: shares,
                    achieved_cpu_percent_mean: round2(mean),
                    counters,
                    instance_reports: reports,
                    errors,
                    schedule,
                    // Judged by `load::attach`.
                    fell_short: false,
                    // Loads with a `policy=` key (`cpu`) say theirs.
                    policy: l
                        .spec
                        .def()
                        .params
                        .iter()
                        .any(|p| p.key == "policy")
                        .then(|| l.spec.text_param("policy"))
                        .flatten(),
                    priority: l.spec.real_time().map(|(_, p)| p),
                }
            })
            .collect()
    }

    /// SIGTERM, grace, SIGKILL, reap: every worker and every process left in
    /// its group.
    fn shutdown(&mut self) {
        // No switch may come after this point.
        if let Some(mut s) = self.scheduler.take() {
            s.finish();
        }
        for inst in self.instances_mut() {
            if inst.child.is_some() {
                let _ = sys::killpg(inst.pid, libc::SIGTERM);
                // A paused load acts on SIGTERM once continued.
                let _ = sys::killpg(inst.pid, libc::SIGCONT);
            }
        }
        let deadline = Instant::now() + GRACE;
        loop {
            let mut alive = 0;
            for inst in self.instances_mut() {
                if let Some(c) = inst.child.as_mut() {
                    match c.try_wait() {
                        Ok(Some(st)) => {
                            inst.status = Some(st);
                            inst.child = None;
                        }
                        Ok(None) => alive += 1,
                        Err(_) => inst.child = None,
                    }
                }
            }
            if alive == 0 || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        for inst in self.instances_mut() {
            if let Some(mut c) = inst.child.take() {
                let _ = sys::killpg(inst.pid, libc::SIGKILL);
                inst.killed = true;
                inst.status = c.wait().ok();
            }
            reap_group(inst.pid);
        }
        let pids: Vec<i32> = self.instances_mut().map(|i| i.pid).collect();
        if let Ok(mut g) = PAUSABLE.lock() {
            g.retain(|p| !pids.contains(p));
        }
    }
}

impl Drop for RunningLoads {
    fn drop(&mut self) {
        // Normal path: stop() emptied `loads`. Error or panic: stop everything now.
        if !self.loads.is_empty() {
            self.shutdown();
            for inst in self.instances_mut() {
                if let Some(h) = inst.reader.take() {
                    let _ = h.join();
                }
            }
        }
    }
}

/// The on-intervals of a self-timed load between `from` and `to`: those of
/// its grid (starting at `origin`), cut to the window.
fn planned(sc: &Schedule, origin: u64, from: u64, to: u64) -> OnRecord {
    let mut r = OnRecord::default();
    let mut t = from;
    loop {
        let (on, off) = phase_at(sc, origin, t);
        if on >= to {
            return r;
        }
        r.switch_on(on.max(from));
        r.switch_off(off.min(to));
        t = off;
    }
}

/// Refuses, before anything starts, a real-time load this process may not
/// run (a thread tries its policy and ends) or one that could hold its CPU
/// for good (no schedule, and RT throttling off). Usage errors, one line.
fn check_real_time(spec: &LoadSpec) -> Result<()> {
    let Some((policy, prio)) = spec.real_time() else {
        return Ok(());
    };
    if spec.schedule.is_none() {
        let read = |f: &str| {
            std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
                .ok()
                .and_then(|t| t.trim().parse::<i64>().ok())
        };
        throttling(read("sched_rt_runtime_us"), read("sched_rt_period_us")).map_err(|why| {
            usage(format!(
                "load {spec}: a real-time load without every=/for= would hold its CPU for good: \
                 {why}; add every= and for= (e.g. every=100ms,for=2ms)"
            ))
        })?;
    }
    let probe = std::thread::spawn(move || sys::set_scheduler(policy.as_raw(), i32::from(prio)));
    match probe.join() {
        Ok(Err(e)) => Err(usage(format!(
            "load {spec}: {}",
            rt_refusal(policy, prio, &e)
        ))),
        _ => Ok(()),
    }
}

/// Whether RT throttling is on, from `sched_rt_runtime_us` and
/// `sched_rt_period_us`; the reason if not.
fn throttling(runtime_us: Option<i64>, period_us: Option<i64>) -> Result<(), String> {
    match (runtime_us, period_us) {
        (Some(r), _) if r < 0 => Err(format!(
            "RT throttling is off (/proc/sys/kernel/sched_rt_runtime_us is {r})"
        )),
        (Some(r), Some(p)) if r >= p => Err(format!(
            "RT throttling is off (sched_rt_runtime_us {r} is not below sched_rt_period_us {p})"
        )),
        (Some(_), Some(_)) => Ok(()),
        _ => Err(
            "cannot read /proc/sys/kernel/sched_rt_runtime_us and sched_rt_period_us \
                  to see whether RT throttling is on"
                .into(),
        ),
    }
}

/// Kills and reaps whatever is left in process group `pgid` once its leader
/// (the worker) has been reaped: children an external command left behind.
fn reap_group(pgid: i32) {
    if !group_members(pgid) {
        // Nothing alive; collect zombies re-parented to us, if any.
        while let Ok(Some(_)) = sys::reap_group_nohang(pgid) {}
        return;
    }
    let _ = sys::killpg(pgid, libc::SIGKILL);
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline {
        match sys::reap_group_nohang(pgid) {
            Ok(Some(_)) => continue,
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            // No child of ours is left in the group; others are init's to reap.
            Err(_) => {
                if !group_members(pgid) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}

/// The fields of /proc/PID/stat after the command name.
fn stat_fields(pid: &str) -> Option<Vec<u64>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 1..];
    // Field 3 (state) is a letter: map it to 0 so indices stay aligned.
    Some(
        rest.split_whitespace()
            .map(|f| f.parse::<u64>().unwrap_or(0))
            .collect(),
    )
}

// Indices into `stat_fields` (field number - 3).
const F_PGRP: usize = 2;
const F_UTIME: usize = 11;
const F_CSTIME: usize = 14;

/// utime+stime+cutime+cstime summed per process group, in clock ticks, for
/// every process in /proc.
pub fn group_ticks() -> HashMap<i32, u64> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if let Some(f) = stat_fields(pid) {
            if f.len() > F_CSTIME {
                let t: u64 = f[F_UTIME..=F_CSTIME].iter().sum();
                *out.entry(f[F_PGRP] as i32).or_insert(0) += t;
            }
        }
    }
    out
}

/// Whether any live (not zombie) process is in group `pgid`.
pub fn group_members(pgid: i32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|e| {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            return false;
        };
        let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        let Some(rest) = s.rfind(')').map(|i| &s[i + 1..]) else {
            return false;
        };
        let mut it = rest.split_whitespace();
        let state = it.next().unwrap_or("");
        let pgrp = it.nth(1).and_then(|p| p.parse::<i32>().ok());
        pgrp == Some(pgid) && state != "Z" && state != "X"
    })
}

fn describe_status(st: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("exited {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => "unknown".into(),
    }
}

/// The worker's JSON line: counters and error.
fn parse_worker_line(out: &str) -> (BTreeMap<String, u64>, Option<String>) {
    let Some(line) = out.lines().rev().find(|l| l.trim_start().starts_with('{')) else {
        return (BTreeMap::new(), None);
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
        return (BTreeMap::new(), None);
    };
    let counters = v
        .get("counters")
        .and_then(|c| c.as_object())
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_u64().map(|n| (k.clone(), n)))
                .collect()
        })
        .unwrap_or_default();
    let error = v.get("error").and_then(|e| e.as_str()).map(str::to_string);
    (counters, error)
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::parse_spec;

    /// What a second Ctrl-C relies on: every registered group, stopped by
    /// its schedule, is sent SIGTERM and continued, so it ends. (The kernel
    /// also continues a stopped group once it is orphaned, but not under a
    /// child subreaper in the same session, and rtscope's own exit path never
    /// gets there first in an end-to-end test: the first Ctrl-C's shutdown
    /// reaps the loads within milliseconds.)
    #[test]
    fn continue_paused_groups_ends_a_stopped_group() {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        use std::time::{Duration, Instant};
        struct Kill(std::process::Child);
        impl Drop for Kill {
            fn drop(&mut self) {
                let _ = self.0.kill();
                let _ = self.0.wait();
            }
        }
        let mut child = Kill(
            std::process::Command::new("sleep")
                .arg("30")
                .process_group(0)
                .spawn()
                .unwrap(),
        );
        let pgid = child.0.id() as i32;
        sys::killpg(pgid, libc::SIGSTOP).unwrap();
        let t0 = Instant::now();
        while !std::fs::read_to_string(format!("/proc/{pgid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|f| f.trim_start().starts_with('T'))
        }) {
            assert!(t0.elapsed() < Duration::from_secs(5), "never stopped");
            std::thread::sleep(Duration::from_millis(5));
        }
        PAUSABLE.lock().unwrap().push(pgid);
        continue_paused_groups();
        PAUSABLE.lock().unwrap().retain(|&g| g != pgid);
        let t0 = Instant::now();
        let st = loop {
            if let Some(st) = child.0.try_wait().unwrap() {
                break st;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "the stopped group was not ended"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(st.signal(), Some(libc::SIGTERM), "{st}");
    }

    /// The scheduler sleeps until the next switch (on a condition variable)
    /// instead of polling: over 300 ms of a 20 ms schedule it uses under 2 %
    /// of its wall time in CPU time (a busy machine can only lower that), and
    /// it records the switches.
    #[test]
    fn schedule_loop_sleeps_between_switches() {
        use std::time::Duration;
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let st = stop.clone();
        let sched = Schedule {
            every_ns: 20_000_000,
            for_ns: 10_000_000,
            start_ns: 0,
        };
        let t0 = sys::clock_ns(libc::CLOCK_MONOTONIC);
        let h = std::thread::spawn(move || {
            let rec = schedule_loop(t0, 1, &[(0, sched, vec![])], &st);
            (rec, sys::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID))
        });
        std::thread::sleep(Duration::from_millis(300));
        *stop.0.lock().unwrap() = true;
        stop.1.notify_all();
        let (rec, cpu) = h.join().unwrap();
        let wall = sys::clock_ns(libc::CLOCK_MONOTONIC) - t0;
        // Measured here: 0.5 ms of CPU in 300 ms (0.2 %); a loop that waited
        // `next / now` ns instead of `next − now` polled, 19 ms (6 %).
        assert!(
            cpu * 50 < wall,
            "the scheduler used {cpu} ns of CPU in {wall} ns"
        );
        // On for 10 ms of every 20: about 15 on-intervals in 300 ms.
        let r = &rec[0];
        assert!((10..=20).contains(&r.count), "{} switches on", r.count);
    }

    #[test]
    fn rt_throttling_verdict() {
        assert_eq!(throttling(Some(950_000), Some(1_000_000)), Ok(()));
        for (r, p, want) in [
            (Some(-1), Some(1_000_000), "is -1"),
            (Some(1_000_000), Some(1_000_000), "not below"),
            (None, None, "cannot read"),
            (Some(950_000), None, "cannot read"),
        ] {
            let e = throttling(r, p).unwrap_err();
            assert!(e.contains(want), "{r:?} {p:?}: {e}");
            assert!(!e.contains('\n'));
        }
    }

    /// A real-time load without a schedule where throttling is off, or one
    /// this process may not run: refused before anything starts.
    #[test]
    fn refuses_real_time_it_cannot_bound_or_run() {
        let s = parse_spec("cpu,policy=fifo,priority=1").unwrap();
        let throttled = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
            .is_ok_and(|t| t.trim() != "-1");
        let allowed = std::thread::spawn(|| sys::set_scheduler(libc::SCHED_FIFO, 1).is_ok())
            .join()
            .unwrap();
        let res = check_real_time(&s);
        assert_eq!(res.is_ok(), throttled && allowed, "{res:?}");
        if let Err(e) = res {
            assert_eq!(crate::error::exit_code(&e), 2);
            assert!(!e.to_string().contains('\n'), "{e}");
        }
        let s = parse_spec("cpu,policy=rr,priority=1,every=100ms,for=1ms").unwrap();
        assert_eq!(check_real_time(&s).is_ok(), allowed);
        check_real_time(&parse_spec("cpu").unwrap()).unwrap();
    }

    #[test]
    fn self_timed_on_intervals_are_the_grid_within_the_window() {
        let sc = Schedule {
            every_ns: 100,
            for_ns: 10,
            start_ns: 0,
        };
        // Grid from 1000; window 1005..1250: a cut first phase, two whole.
        let r = planned(&sc, 1000, 1005, 1250);
        assert_eq!(r.closed, vec![(1005, 1010), (1100, 1110), (1200, 1210)]);
        assert_eq!((r.count, r.on_ns, r.open), (3, 25, None));
        // Ends inside a phase; none in an empty window.
        let r = planned(&sc, 1000, 1000, 1105);
        assert_eq!(r.closed, vec![(1000, 1010), (1100, 1105)]);
        assert_eq!(planned(&sc, 1000, 1020, 1020).count, 0);
    }

    #[test]
    fn worker_line() {
        let (c, e) = parse_worker_line("noise\n{\"counters\":{\"ops\":12},\"error\":null}\n");
        assert_eq!(c.get("ops"), Some(&12));
        assert_eq!(e, None);
        let (c, e) = parse_worker_line("{\"counters\":{},\"error\":\"mmap: ENOMEM\"}");
        assert!(c.is_empty());
        assert_eq!(e.as_deref(), Some("mmap: ENOMEM"));
        assert_eq!(parse_worker_line("").0.len(), 0);
    }

    #[test]
    fn places_instances() {
        let s = parse_spec("cpu:50").unwrap();
        assert_eq!(placement(&s, &[0, 1]), vec![vec![0], vec![1]]);
        let s = parse_spec("cpu:50,instances=3").unwrap();
        assert_eq!(placement(&s, &[2, 5]), vec![vec![2], vec![5], vec![2]]);
        let s = parse_spec("cmd:sleep 1").unwrap();
        assert_eq!(placement(&s, &[0, 1]), vec![vec![0, 1]]);
    }

    #[test]
    fn refuses_memory_beyond_the_cap() {
        let s = parse_spec("mem-churn,size=1T").unwrap();
        let e = LoadSet::check(&[s], None).unwrap_err();
        assert!(e.to_string().contains("MemAvailable"), "{e}");
        let s = parse_spec("mem-churn,size=1M").unwrap();
        LoadSet::check(&[s], None).unwrap();
        // A tenth of MemAvailable is within the cap (half of it); more than
        // half is not.
        let avail = mem_available().unwrap();
        let s = parse_spec(&format!(
            "mem-churn,size={}M,instances=1",
            (avail / 10) >> 20
        ))
        .unwrap();
        LoadSet::check(&[s], None).unwrap();
        let s = parse_spec(&format!(
            "mem-churn,size={}M,instances=1",
            (avail / 10 * 6) >> 20
        ))
        .unwrap();
        assert!(LoadSet::check(&[s], None).is_err());
    }

    #[test]
    fn on_records_close_at_the_window_end() {
        let mut r = OnRecord::default();
        r.switch_on(100);
        r.switch_off(200);
        r.switch_on(300);
        // The window ended at 250: the interval still open is closed there.
        r.end_at(250);
        assert_eq!(
            (r.closed.clone(), r.count, r.on_ns),
            (vec![(100, 200)], 1, 100)
        );
        let mut r = OnRecord::default();
        r.switch_on(100);
        r.switch_off(200);
        r.switch_on(300);
        r.end_at(350);
        assert_eq!(
            (r.closed.clone(), r.count, r.on_ns),
            (vec![(100, 200), (300, 350)], 2, 150)
        );
        // A switch after the end (the scheduler ran on a moment): cut.
        let mut r = OnRecord::default();
        r.switch_on(100);
        r.switch_off(200);
        r.end_at(150);
        assert_eq!(
            (r.closed.clone(), r.count, r.on_ns),
            (vec![(100, 150)], 1, 50)
        );
        // Closed intervals that began at the end or after it (the scheduler
        // switched on a moment late): dropped, and not counted.
        let mut r = OnRecord::default();
        r.switch_on(100);
        r.switch_off(200);
        r.switch_on(300);
        r.switch_off(400);
        r.switch_on(500);
        r.switch_off(600);
        r.end_at(300);
        assert_eq!(
            (r.closed.clone(), r.count, r.on_ns, r.open),
            (vec![(100, 200)], 1, 100, None)
        );
        // The list is bounded; the totals are not.
        let mut r = OnRecord::default();
        for k in 0..(MAX_ON_INTERVALS as u64 + 5) {
            r.switch_on(10 * k);
            r.switch_off(10 * k + 5);
        }
        r.end_at(u64::MAX);
        assert_eq!(r.closed.len(), MAX_ON_INTERVALS);
        assert_eq!(r.count, MAX_ON_INTERVALS as u64 + 5);
        assert_eq!(r.on_ns, 5 * (MAX_ON_INTERVALS as u64 + 5));
    }

    #[test]
    fn own_group_is_counted() {
        let me = sys::getpid();
        // Our own process group (the test harness's) has used some CPU time.
        let pgrp = stat_fields(&me.to_string()).unwrap()[F_PGRP] as i32;
        assert!(group_ticks().contains_key(&pgrp));
        assert!(group_members(pgrp));
    }
}
