//! Kernel trace events through a private tracefs instance, never touching
//! the machine's global tracing state.
//!
//! [`Instance::open`] finds tracefs (or mounts it in a temporary directory of
//! its own), removes instances left by killed rtscope runs (`rtscope-<pid>-*`
//! whose pid is gone), creates `instances/rtscope-<pid>-<n>`, sets its trace
//! clock to `mono` (CLOCK_MONOTONIC, so events line up with rtscope's
//! timestamps), its buffer size and CPU mask, and enables the chosen events
//! in it only. [`Instance::read`] drains the per-CPU `trace_pipe_raw` files
//! without blocking (call it from the aggregator, never from an RT thread)
//! and decodes the records ([`raw`], [`event`]). Dropping the instance closes
//! the pipes, removes the instance directory and unmounts what it mounted:
//! on every exit path that unwinds (errors, panics, a stop signal ending the
//! run). Every open instance is registered, so that a way out that does not
//! unwind (a second stop, a fatal signal: the binary's signal thread) removes
//! them all with [`remove_open_instances`] before the process ends. A run
//! killed outright (SIGKILL) leaves the instance behind; the next run removes
//! it.
//!
//! [`attrib`] turns the events of a CPU into the causes of OS-noise gaps.

pub mod attrib;
pub mod cause;
pub mod event;
pub mod format;
pub mod raw;
pub mod stages;
pub mod watch;

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

pub use event::{Decoder, Event, Kind};
use format::PageLayout;

/// Why tracing could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    #[error("tracefs is not available: {0}")]
    /// tracefs is neither mounted nor mountable; the text says why.
    NoTracefs(String),
    #[error("cannot create a trace instance in {0}: {1}")]
    /// The instance directory could not be created.
    Instance(PathBuf, io::Error),
    #[error("{0}: {1}")]
    /// A tracefs file could not be written.
    Setting(PathBuf, io::Error),
    #[error("none of the requested trace events exists on this kernel")]
    /// None of the events asked for exists.
    NoEvents,
}

/// What to trace.
#[derive(Debug, Clone)]
pub struct TraceConfig {
    /// CPUs to trace (the instance's `tracing_cpumask`).
    pub cpus: Vec<usize>,
    /// Events as `system/name`; `system/*` stands for every `*_entry` and
    /// `*_exit` event of the system; `system/name?` for an event enabled
    /// where the kernel has it, and not counted missing where it has not.
    pub events: Vec<String>,
    /// Per-CPU buffer, KiB.
    pub buffer_kb: u32,
}

impl TraceConfig {
    /// The events that explain OS noise: interrupts, softirqs, system vectors
    /// (x86, `irq_vectors/*`: every entry/exit pair this kernel has), NMIs,
    /// context switches and hrtimer callbacks.
    pub fn noise_events() -> Vec<String> {
        [
            "irq/irq_handler_entry",
            "irq/irq_handler_exit",
            "irq/softirq_entry",
            "irq/softirq_exit",
            "irq_vectors/*",
            "sched/sched_switch",
            "nmi/nmi_handler",
            "timer/hrtimer_expire_entry",
            "timer/hrtimer_expire_exit",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }
}

/// `system/*` expanded to the system's entry/exit events; other names as they are.
fn expand(root: &Path, ev: &str) -> Vec<String> {
    let Some(sys) = ev.strip_suffix("/*") else {
        return vec![ev.to_string()];
    };
    let mut names: Vec<String> = std::fs::read_dir(root.join("events").join(sys))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with("_entry") || n.ends_with("_exit"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names.into_iter().map(|n| format!("{sys}/{n}")).collect()
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// The instances this process has open: each directory, and the descriptors
/// of its open pipes (they keep it busy: it cannot be removed while one is open).
static OPEN: std::sync::Mutex<Vec<(PathBuf, Vec<std::os::fd::RawFd>)>> =
    std::sync::Mutex::new(Vec::new());

fn open_instances() -> std::sync::MutexGuard<'static, Vec<(PathBuf, Vec<std::os::fd::RawFd>)>> {
    OPEN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Raised by [`remove_open_instances`]: the process is ending, and no
/// instance or pipe may be opened any more (one opened after the clean-up
/// would keep its instance).
static CLOSING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn closing() -> TraceError {
    TraceError::NoTracefs("the process is ending (a fatal signal)".into())
}

/// Removes every trace instance this process has open, from any thread, for
/// a way out that does not unwind (the process ends right after): tracing
/// off, each pipe's descriptor pointed at `/dev/null` (the thread reading it
/// then reads nothing), the directory removed; then unmounts the tracefs
/// this process mounted for itself (and removes its directory). Returns the
/// instances removed.
pub fn remove_open_instances() -> Vec<PathBuf> {
    CLOSING.store(true, Ordering::SeqCst);
    let removed = remove_instances();
    for dir in own_mounts().drain(..) {
        // Registered before it was mounted: it may not be yet. rmdir (never
        // a recursive removal) fails on a mount point still mounted.
        let _ = crate::sys::unmount(&dir);
        let _ = std::fs::remove_dir(&dir);
    }
    removed
}

fn remove_instances() -> Vec<PathBuf> {
    let mut open = open_instances();
    let mut removed = Vec::new();
    for (dir, fds) in open.drain(..) {
        let _ = write_setting(&dir.join("tracing_on"), "0");
        for fd in fds {
            let _ = crate::sys::detach_fd(fd);
        }
        for _ in 0..50 {
            match std::fs::remove_dir(&dir) {
                Ok(()) => {
                    removed.push(dir);
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
    }
    removed
}

/// A tracefs this process mounted (unmounted on drop).
struct OwnMount {
    dir: Option<tempfile::TempDir>,
}

/// The private tracefs mounts this process holds, for [`remove_open_instances`].
static OWN_MOUNTS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

fn own_mounts() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    OWN_MOUNTS.lock().unwrap_or_else(|e| e.into_inner())
}

impl Drop for OwnMount {
    fn drop(&mut self) {
        let Some(dir) = self.dir.take() else {
            return;
        };
        // Under the lock the clean-up of a fatal signal takes: it never
        // finds the directory half removed (the process ends right after).
        let mut own = own_mounts();
        own.retain(|d| d != dir.path());
        if crate::sys::unmount(dir.path()).is_err() {
            // Never mounted (the mount failed), or still mounted: then
            // TempDir's recursive removal would go into tracefs and remove
            // its instances (other runs' too). rmdir only, then leave it.
            let path = dir.keep();
            let _ = std::fs::remove_dir(path);
        } else {
            drop(dir);
        }
        drop(own);
    }
}

/// The prefix of the temporary directory where a run mounts tracefs for
/// itself when the machine has it nowhere.
const OWN_MOUNT_PREFIX: &str = "rtscope-tracefs-";

/// The name prefix of the private tracefs mount of process `pid`:
/// `rtscope-tracefs-PID-`.
pub fn own_mount_prefix(pid: u32) -> String {
    format!("{OWN_MOUNT_PREFIX}{pid}-")
}

/// Where tracefs is mounted, from `/proc/self/mountinfo`.
pub fn find_tracefs() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    tracefs_mounts(&text)
        .into_iter()
        .find(|p| p.join("instances").is_dir())
}

/// Whether reading directory `p` is refused for lack of permission.
fn denied(p: &Path) -> bool {
    std::fs::read_dir(p).is_err_and(|e| e.kind() == io::ErrorKind::PermissionDenied)
}

/// The tracing directories `mountinfo` lists, tracefs mounts before
/// debugfs' `tracing`. Another rtscope run's private mount is left out: that
/// run unmounts it when it ends, which would pull the trace from under this
/// one (two traced runs at once, as the docs test makes them).
fn tracefs_mounts(mountinfo: &str) -> Vec<PathBuf> {
    let mut tracefs = Vec::new();
    let mut debugfs = Vec::new();
    for (fstype, p) in mounts(mountinfo) {
        let private = p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(OWN_MOUNT_PREFIX));
        match fstype {
            "tracefs" if !private => tracefs.push(p),
            "debugfs" => debugfs.push(p.join("tracing")),
            _ => {}
        }
    }
    tracefs.extend(debugfs);
    tracefs
}

/// The (file system type, mount point) of each line of `mountinfo`.
fn mounts(mountinfo: &str) -> impl Iterator<Item = (&str, PathBuf)> {
    mountinfo.lines().filter_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        let fstype = post.split_whitespace().next()?;
        let mnt = pre.split_whitespace().nth(4)?;
        Some((fstype, PathBuf::from(mnt.replace("\\040", " "))))
    })
}

/// The page layout `events/header_page` describes (the 64-bit one when it
/// cannot be read or parsed). The kernel gives that file's text to the first
/// read() only (its `show_header` returns 0 once the file position is not 0),
/// so it is read with one read() with room for all of it, never with
/// `read_to_string`: std's first read of a file of size 0 is a 32-byte probe,
/// which left the timestamp line only, and with it the 64-bit layout on a
/// 32-bit kernel (data at 16 instead of 12: most records misread).
fn page_layout(mut r: impl Read) -> PageLayout {
    let mut buf = vec![0u8; 8192];
    let n = r.read(&mut buf).unwrap_or(0);
    format::parse_header_page(&String::from_utf8_lossy(&buf[..n])).unwrap_or_default()
}

/// A private trace instance; removed on drop.
pub struct Instance {
    readers: Vec<(u32, File)>,
    dir: PathBuf,
    root: PathBuf,
    layout: PageLayout,
    page: Vec<u8>,
    /// The events of the page being read (kept for its allocation).
    evs: Vec<Event>,
    /// The decoder (IRQ and task names seen so far).
    pub decoder: Decoder,
    /// The events enabled, and those asked for that this kernel lacks.
    pub enabled: Vec<String>,
    /// Events asked for that this kernel lacks.
    pub missing: Vec<String>,
    /// Pages that said events were lost before them, and the count where known.
    pub lost_pages: u64,
    /// Events the kernel counted as lost.
    pub lost_events: u64,
    /// Events decoded.
    pub events: u64,
    /// Whether rtscope mounted tracefs for this instance.
    pub mounted: bool,
    /// Reads of a CPU's buffer that [`Instance::read_until`]'s deadline
    /// ended before the buffer was empty.
    pub cut_short: u64,
    /// After a read that was cut short: the time up to which every CPU's
    /// events have been read (later ones of a cut CPU are still buffered).
    pub complete_until: Option<u64>,
    /// The CPUs traced (empty: all).
    pub cpus: Vec<usize>,
    _mount: Option<TracefsMount>,
}

fn write_setting(p: &Path, v: &str) -> Result<(), TraceError> {
    OpenOptions::new()
        .write(true)
        .open(p)
        .and_then(|mut f| f.write_all(v.as_bytes()))
        .map_err(|e| TraceError::Setting(p.to_path_buf(), e))
}

/// The CPUs whose events a trace of threads pinned to `measured` needs:
/// `measured`, and where their timers fire. A thread's sleep timer is queued
/// on its own CPU unless that CPU is `nohz_full` (not a housekeeping CPU of
/// timers) and timer migration is on (`kernel.timer_migration`, the
/// default): the kernel then queues it on a housekeeping CPU, whose
/// interrupt fires it and wakes the thread from there. Those housekeeping
/// CPUs (the online CPUs neither `nohz_full` nor `isolated`, or if none, the
/// online CPUs not `nohz_full`) are added then. Sorted, without repeats.
pub fn timer_cpus(
    measured: &[usize],
    online: &[usize],
    nohz_full: &[usize],
    isolated: &[usize],
    migration: bool,
) -> Vec<usize> {
    let mut cpus = measured.to_vec();
    if migration && measured.iter().any(|c| nohz_full.contains(c)) {
        let hk: Vec<usize> = online
            .iter()
            .copied()
            .filter(|c| !nohz_full.contains(c) && !isolated.contains(c))
            .collect();
        if hk.is_empty() {
            cpus.extend(online.iter().filter(|c| !nohz_full.contains(c)));
        } else {
            cpus.extend(hk);
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// [`timer_cpus`] of this machine, from `/sys/devices/system/cpu/{online,
/// nohz_full,isolated}` and `/proc/sys/kernel/timer_migration` under `root`
/// (`/`); a file that cannot be read counts as empty (timer migration: on).
pub fn timer_cpus_of(root: &Path, measured: &[usize]) -> Vec<usize> {
    let list = |p: &str| {
        std::fs::read_to_string(root.join(p))
            .ok()
            .and_then(|s| crate::units::parse_cpu_list(s.trim()).ok())
            .unwrap_or_default()
    };
    let migration = std::fs::read_to_string(root.join("proc/sys/kernel/timer_migration"))
        .map_or(true, |s| s.trim() != "0");
    timer_cpus(
        measured,
        &list("sys/devices/system/cpu/online"),
        &list("sys/devices/system/cpu/nohz_full"),
        &list("sys/devices/system/cpu/isolated"),
        migration,
    )
}

/// A CPU list as a `tracing_cpumask` value (32-bit words, comma-separated).
pub fn cpumask(cpus: &[usize]) -> String {
    let max = cpus.iter().copied().max().unwrap_or(0);
    let mut words = vec![0u32; max / 32 + 1];
    for &c in cpus {
        words[c / 32] |= 1 << (c % 32);
    }
    words
        .iter()
        .rev()
        .map(|w| format!("{w:x}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Removes instances of rtscope runs whose process is gone; returns their names.
pub fn remove_stale(root: &Path) -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(rd) = std::fs::read_dir(root.join("instances")) else {
        return removed;
    };
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix("rtscope-") else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        if !crate::sys::pid_alive(pid) && std::fs::remove_dir(e.path()).is_ok() {
            removed.push(name);
        }
    }
    removed
}

/// The private tracefs mounts (`.../rtscope-tracefs-PID-...`) in `mountinfo`
/// of processes for which `alive(PID)` is false: left by a run that was
/// killed (SIGKILL) before it could unmount.
fn stale_own_mounts(mountinfo: &str, alive: impl Fn(i32) -> bool) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for (fstype, p) in mounts(mountinfo) {
        let pid = p
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix(OWN_MOUNT_PREFIX))
            .and_then(|r| r.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok());
        if fstype == "tracefs" && pid.is_some_and(|pid| !alive(pid)) && !v.contains(&p) {
            v.push(p);
        }
    }
    v
}

/// Unmounts and removes the private tracefs mounts of runs whose process is
/// gone (with the instances they left); returns the directories removed.
/// Errors (not root) leave them as they were.
pub fn remove_stale_mounts() -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for p in stale_own_mounts(&text, crate::sys::pid_alive) {
        remove_stale(&p);
        if crate::sys::unmount(&p).is_ok() {
            let _ = std::fs::remove_dir(&p);
            removed.push(p);
        }
    }
    // Mount points a killed run made and had not mounted yet (rmdir, never
    // recursive: a directory still mounted or not empty stays).
    if let Ok(rd) = std::fs::read_dir(std::env::temp_dir()) {
        for e in rd.flatten() {
            let name = e.file_name();
            let pid = name
                .to_str()
                .and_then(|n| n.strip_prefix(OWN_MOUNT_PREFIX))
                .and_then(|r| r.split('-').next())
                .and_then(|pid| pid.parse::<i32>().ok());
            if pid.is_some_and(|pid| !crate::sys::pid_alive(pid))
                && std::fs::remove_dir(e.path()).is_ok()
            {
                removed.push(e.path());
            }
        }
    }
    removed
}

/// A tracefs mounted by this process for itself: unmounted when dropped.
pub struct TracefsMount(#[allow(dead_code)] OwnMount);

/// Where tracefs is mounted ([`find_tracefs`]), or, where it is nowhere,
/// tracefs mounted in a temporary directory of this process's own (named
/// `rtscope-tracefs-PID-...`), with the guard that unmounts it.
pub fn find_or_mount_tracefs() -> Result<(PathBuf, Option<TracefsMount>), TraceError> {
    // What a killed run left mounted goes first.
    remove_stale_mounts();
    if let Some(r) = find_tracefs() {
        return Ok((r, None));
    }
    // Mounted, but not for this user (tracefs is root's, mode 0700): say
    // so, rather than "not mounted" after a mount that could only fail.
    if let Some(p) = std::fs::read_to_string("/proc/self/mountinfo")
        .ok()
        .and_then(|t| tracefs_mounts(&t).into_iter().find(|p| denied(p)))
    {
        return Err(TraceError::NoTracefs(format!(
            "mounted at {}, but this user may not use it (permission denied; root needed)",
            p.display()
        )));
    }
    // Named for this process, so that whoever looks can tell whose it is
    // (a test, for the run it started). Made and registered under the lock
    // the clean-up of a fatal signal takes ([`remove_open_instances`]): never
    // made after it ran, always known to it when made before.
    let (dir, root) = {
        let mut own = own_mounts();
        if CLOSING.load(Ordering::SeqCst) {
            return Err(closing());
        }
        let dir = tempfile::Builder::new()
            .prefix(&own_mount_prefix(std::process::id()))
            .tempdir()
            .map_err(|e| TraceError::NoTracefs(format!("temporary directory: {e}")))?;
        let root = dir.path().to_path_buf();
        own.push(root.clone());
        (dir, root)
    };
    let guard = TracefsMount(OwnMount { dir: Some(dir) });
    crate::sys::mount_tracefs(&root).map_err(|e| {
        TraceError::NoTracefs(format!(
            "not mounted, and mounting it failed ({e}; root or CAP_SYS_ADMIN needed)"
        ))
    })?;
    Ok((root, Some(guard)))
}

impl Instance {
    /// Sets up the instance and starts tracing.
    pub fn open(cfg: &TraceConfig) -> Result<Instance, TraceError> {
        let (root, mount) = find_or_mount_tracefs()?;
        remove_stale(&root);
        let name = format!(
            "rtscope-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = root.join("instances").join(&name);
        {
            // Made and registered under the lock: never after a clean-up.
            let mut open = open_instances();
            if CLOSING.load(Ordering::SeqCst) {
                return Err(closing());
            }
            std::fs::create_dir(&dir)
                .map_err(|e| TraceError::Instance(root.join("instances"), e))?;
            open.push((dir.clone(), Vec::new()));
        }
        let layout = File::open(root.join("events/header_page"))
            .map(page_layout)
            .unwrap_or_default();
        let page_size = std::fs::read_to_string(dir.join("buffer_subbuf_size_kb"))
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .map_or(4096, |k| (k * 1024).max(4096));
        let mut inst = Instance {
            readers: Vec::new(),
            dir,
            root: root.clone(),
            layout,
            page: vec![0; page_size],
            decoder: Decoder::default(),
            enabled: Vec::new(),
            missing: Vec::new(),
            lost_pages: 0,
            lost_events: 0,
            events: 0,
            mounted: mount.is_some(),
            cut_short: 0,
            complete_until: None,
            evs: Vec::new(),
            cpus: cfg.cpus.clone(),
            _mount: mount,
        };
        // From here on, an error drops `inst`, which removes the instance.
        write_setting(&inst.dir.join("tracing_on"), "0")?;
        write_setting(&inst.dir.join("trace_clock"), "mono")?;
        write_setting(
            &inst.dir.join("buffer_size_kb"),
            &cfg.buffer_kb.max(64).to_string(),
        )?;
        if !cfg.cpus.is_empty() {
            write_setting(&inst.dir.join("tracing_cpumask"), &cpumask(&cfg.cpus))?;
        }
        let events: Vec<String> = cfg.events.iter().flat_map(|e| expand(&root, e)).collect();
        for ev in &events {
            let (ev, optional) = match ev.strip_suffix('?') {
                Some(e) => (e.to_string(), true),
                None => (ev.clone(), false),
            };
            let Some((sys, name)) = ev.split_once('/') else {
                continue;
            };
            let fmt =
                std::fs::read_to_string(root.join("events").join(sys).join(name).join("format"))
                    .ok()
                    .and_then(|t| format::parse_format(&t));
            if !fmt.is_some_and(|f| inst.decoder.add(sys, &f)) {
                if !optional {
                    inst.missing.push(ev.clone());
                }
                continue;
            }
            write_setting(
                &inst.dir.join("events").join(sys).join(name).join("enable"),
                "1",
            )?;
            inst.enabled.push(ev.clone());
        }
        if inst.enabled.is_empty() {
            return Err(TraceError::NoEvents);
        }
        let cpus: Vec<usize> = if cfg.cpus.is_empty() {
            crate::units::online_cpus()
        } else {
            cfg.cpus.clone()
        };
        for c in cpus {
            let p = inst.dir.join(format!("per_cpu/cpu{c}/trace_pipe_raw"));
            // Opened and registered under the lock, so that a clean-up on
            // another thread finds every pipe (or none is opened after it).
            let mut open = open_instances();
            if CLOSING.load(Ordering::SeqCst) {
                return Err(closing());
            }
            let f = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&p)
                .map_err(|e| TraceError::Setting(p.clone(), e))?;
            if let Some(e) = open.iter_mut().find(|(d, _)| *d == inst.dir) {
                use std::os::fd::AsRawFd;
                e.1.push(f.as_raw_fd());
            }
            drop(open);
            inst.readers.push((c as u32, f));
        }
        write_setting(&inst.dir.join("tracing_on"), "1")?;
        Ok(inst)
    }

    /// The tracefs root this instance lives in.
    pub fn tracefs(&self) -> &Path {
        &self.root
    }

    /// The instance's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Sets an event's filter (`system/name`, a tracefs filter expression
    /// such as `common_pid == 42`); the kernel then drops the other records
    /// of that event before they reach the buffer.
    pub fn set_filter(&self, event: &str, expr: &str) -> Result<(), TraceError> {
        let Some((sys, name)) = event.split_once('/') else {
            return Err(TraceError::Setting(
                PathBuf::from(event),
                io::Error::new(io::ErrorKind::InvalidInput, "not system/name"),
            ));
        };
        write_setting(
            &self.dir.join("events").join(sys).join(name).join("filter"),
            expr,
        )
    }

    /// Events the kernel could not store (its per-CPU `stats`: `overrun`,
    /// records overwritten before they were read, plus `dropped events`),
    /// summed over the traced CPUs.
    pub fn overruns(&self) -> u64 {
        self.readers
            .iter()
            .map(|(c, _)| {
                std::fs::read_to_string(self.dir.join(format!("per_cpu/cpu{c}/stats")))
                    .map(|t| parse_stats_overruns(&t))
                    .unwrap_or(0)
            })
            .sum()
    }

    /// Stops recording (the buffered events can still be read).
    pub fn stop(&self) {
        let _ = write_setting(&self.dir.join("tracing_on"), "0");
    }

    /// Reads every page available now, without blocking, and calls `f` for
    /// each decoded event (per CPU in time order). Returns the number of events.
    pub fn read(&mut self, f: impl FnMut(&Event)) -> usize {
        self.read_until(None, f)
    }

    /// [`Instance::read`], ending when `deadline` has passed (checked after
    /// every page): a flood of events (a load that switches tasks a million
    /// times a second) cannot hold the caller past it. What is left stays in
    /// the kernel's buffers for the next read (or is lost with the instance).
    pub fn read_until(
        &mut self,
        deadline: Option<std::time::Instant>,
        mut f: impl FnMut(&Event),
    ) -> usize {
        let mut n = 0;
        self.complete_until = None;
        let start = std::time::Instant::now();
        let ncpu = self.readers.len().max(1) as u32;
        for i in 0..self.readers.len() {
            let cpu = self.readers[i].0;
            // Each CPU its share of the time (a flooded first CPU does not
            // starve the others).
            let until = deadline
                .map(|d| start + d.saturating_duration_since(start) * (i as u32 + 1) / ncpu);
            let mut newest = None;
            // Bounded: a CPU producing faster than we read cannot keep us
            // here (4096 pages, or the deadline: the read is cut short).
            for page_no in 0..=4096 {
                if page_no == 4096 || until.is_some_and(|d| std::time::Instant::now() >= d) {
                    self.cut_short += 1;
                    // This CPU's events are complete up to the newest read.
                    let t = newest.unwrap_or(0);
                    self.complete_until = Some(self.complete_until.map_or(t, |c: u64| c.min(t)));
                    break;
                }
                let got = match self.readers[i].1.read(&mut self.page) {
                    Ok(0) => break,
                    Ok(k) => k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                let page = &self.page[..got];
                let dec = &mut self.decoder;
                // The page's events, in a buffer kept across reads.
                let mut evs = std::mem::take(&mut self.evs);
                evs.clear();
                let info = raw::parse_page(page, &self.layout, |r| {
                    if let Some(e) = dec.decode(cpu, r.ts, r.data) {
                        evs.push(e);
                    }
                });
                if info.missed {
                    self.lost_pages += 1;
                    self.lost_events += info.missed_count.unwrap_or(0);
                    // Events were lost before this page: say so, at the
                    // page's start, so that state spanning the loss is dropped.
                    let ts = raw::page_timestamp(page);
                    evs.insert(
                        0,
                        Event {
                            ts,
                            cpu,
                            pid: -1,
                            kind: Kind::Lost,
                        },
                    );
                }
                for e in &evs {
                    f(e);
                }
                if let Some(e) = evs.last() {
                    newest = Some(e.ts);
                }
                n += evs.len();
                self.evs = evs;
            }
        }
        self.events += n as u64;
        n
    }
}

/// `overrun` + `dropped events` of a per-CPU `stats` file.
pub fn parse_stats_overruns(text: &str) -> u64 {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            matches!(k.trim(), "overrun" | "dropped events")
                .then(|| v.trim().parse::<u64>().ok())
                .flatten()
        })
        .sum()
}

impl Drop for Instance {
    fn drop(&mut self) {
        // Unregistered first: once the pipes are closed below, their
        // descriptor numbers may be reused by other files.
        open_instances().retain(|(d, _)| *d != self.dir);
        self.stop();
        // The pipes must be closed before the instance can be removed.
        self.readers.clear();
        for _ in 0..50 {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => break,
                Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_runs_private_mount_is_not_used() {
        let info = "\
36 25 0:12 / /sys/kernel/debug rw,relatime shared:15 - debugfs debugfs rw
90 22 0:45 / /tmp/rtscope-tracefs-Ab12cd rw,relatime shared:50 - tracefs nodev rw
91 22 0:46 / /mnt/my\\040trace rw,relatime shared:51 - tracefs nodev rw
";
        assert_eq!(
            tracefs_mounts(info),
            vec![
                PathBuf::from("/mnt/my trace"),
                PathBuf::from("/sys/kernel/debug/tracing")
            ]
        );
        let only_private =
            "90 22 0:45 / /tmp/rtscope-tracefs-x rw - tracefs nodev rw\nbroken line\n";
        assert!(tracefs_mounts(only_private).is_empty());
        // A run's own mount is named for its process, and is private.
        assert_eq!(own_mount_prefix(4321), "rtscope-tracefs-4321-");
        let info = "90 22 0:45 / /tmp/rtscope-tracefs-4321-Ab12 rw - tracefs nodev rw\n\
                    91 22 0:45 / /tmp/rtscope-tracefs-77-x rw - tracefs nodev rw\n\
                    92 22 0:45 / /tmp/rtscope-tracefs-4321-Ab12 rw - tracefs nodev rw\n\
                    93 22 0:46 / /tmp/rtscope-tracefs-5-y rw - tmpfs tmpfs rw\n\
                    94 22 0:45 / /sys/kernel/tracing rw - tracefs tracefs rw\n";
        assert_eq!(
            stale_own_mounts(info, |p| p == 77),
            vec![PathBuf::from("/tmp/rtscope-tracefs-4321-Ab12")],
            "a dead run's own tracefs mount, once; a live one's, another \
             file system and the machine's own are left"
        );
        let named = format!(
            "90 22 0:45 / /tmp/{}Xy12 rw - tracefs nodev rw\n",
            own_mount_prefix(4321)
        );
        assert!(tracefs_mounts(&named).is_empty());
    }

    /// The mountinfo of this process is read: a tracefs mounted here is found
    /// (or the one the machine already has). Needs the right to mount
    /// (root); without it the test says so and passes, except in CI.
    #[test]
    fn a_mounted_tracefs_is_found() {
        let _one_at_a_time = tracefs_tests();
        // A name other runs see (for the few lines until it is unmounted).
        let Some(dir) = mount_named("tracefs-test-") else {
            return;
        };
        let found = find_tracefs();
        let usable = found.as_ref().is_some_and(|p| p.join("instances").is_dir());
        crate::sys::unmount(dir.path()).unwrap();
        assert!(usable, "found {found:?}");
    }

    #[test]
    fn noise_events_are_the_documented_set() {
        assert_eq!(
            TraceConfig::noise_events(),
            [
                "irq/irq_handler_entry",
                "irq/irq_handler_exit",
                "irq/softirq_entry",
                "irq/softirq_exit",
                "irq_vectors/*",
                "sched/sched_switch",
                "nmi/nmi_handler",
                "timer/hrtimer_expire_entry",
                "timer/hrtimer_expire_exit",
            ]
        );
    }

    #[test]
    fn a_system_wildcard_expands_to_its_entry_and_exit_events() {
        let root = tempfile::tempdir().unwrap();
        let sys = root.path().join("events/irq_vectors");
        for n in [
            "local_timer_exit",
            "local_timer_entry",
            "call_function_entry",
            "enable",
            "filter",
            "vector_config",
        ] {
            std::fs::create_dir_all(sys.join(n)).unwrap();
        }
        assert_eq!(
            expand(root.path(), "irq_vectors/*"),
            [
                "irq_vectors/call_function_entry",
                "irq_vectors/local_timer_entry",
                "irq_vectors/local_timer_exit",
            ]
        );
        assert_eq!(
            expand(root.path(), "irq/irq_handler_entry"),
            ["irq/irq_handler_entry"]
        );
        assert!(expand(root.path(), "nosuch/*").is_empty());
    }

    /// A tracefs this process mounted is unmounted when dropped.
    #[test]
    fn own_mount_is_unmounted_on_drop() {
        let _one_at_a_time = tracefs_tests();
        let Some(dir) = mount_for_test() else {
            return;
        };
        let path = dir.path().to_path_buf();
        let mounted = |p: &Path| {
            let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
            info.lines()
                .any(|l| l.split(' ').nth(4) == Some(p.to_str().unwrap()))
        };
        assert!(mounted(&path));
        // Mounted as `mount -t tracefs -o nosuid,nodev,noexec nodev DIR`.
        let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let line = info
            .lines()
            .find(|l| l.split(' ').nth(4) == Some(path.to_str().unwrap()))
            .unwrap();
        let opts: Vec<&str> = line.split(' ').nth(5).unwrap().split(',').collect();
        for o in ["nosuid", "nodev", "noexec"] {
            assert!(opts.contains(&o), "{line}");
        }
        assert!(
            line.ends_with(" - tracefs nodev rw") || line.contains(" - tracefs nodev "),
            "{line}"
        );
        drop(OwnMount { dir: Some(dir) });
        let still = mounted(&path);
        if still {
            let _ = crate::sys::unmount(&path);
        }
        assert!(!still, "still mounted after drop");
    }

    /// Taken by every test that mounts tracefs or traces in it. A test's own
    /// mount is found by the others' `find_tracefs` and unmounted when that
    /// test ends, which would pull the tracefs from under an instance
    /// another test is setting up (an instance's `tracing_on` was gone once).
    fn tracefs_tests() -> std::sync::MutexGuard<'static, ()> {
        static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
        LOCK.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A tracefs root to test with (the machine's, or one mounted here for
    /// the test); `None` without the right to trace, which fails in CI.
    fn tracefs_for_test() -> Option<(PathBuf, Option<OwnMount>)> {
        if let Some(r) = find_tracefs() {
            return Some((r, None));
        }
        let dir = mount_for_test()?;
        Some((dir.path().to_path_buf(), Some(OwnMount { dir: Some(dir) })))
    }

    /// tracefs mounted on a new temporary directory; `None` without the
    /// right to mount (root), which fails in CI. Its name is a private
    /// mount's, which other rtscope runs pass over: a docs test run beside
    /// these tests picked "tracefs-test-..." and lost it when it was unmounted.
    fn mount_for_test() -> Option<tempfile::TempDir> {
        mount_named(&format!("{OWN_MOUNT_PREFIX}test-"))
    }

    /// tracefs mounted on a new temporary directory named `prefix...`.
    fn mount_named(prefix: &str) -> Option<tempfile::TempDir> {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
        match crate::sys::mount_tracefs(dir.path()) {
            Ok(()) => Some(dir),
            Err(e) => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "mounting tracefs failed in CI: {e}"
                );
                eprintln!("skipped: cannot mount tracefs ({e})");
                None
            }
        }
    }

    #[test]
    fn stale_instances_of_gone_runs_are_removed() {
        // A directory of its own: in a real tracefs another rtscope run (or
        // test) may remove the stale instance first.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let inst = root.join("instances");
        std::fs::create_dir(&inst).unwrap();
        // A pid above pid_max is never alive.
        let dead = "rtscope-2147483646-0";
        let alive = format!("rtscope-{}-990", std::process::id());
        for n in [dead, alive.as_str(), "rtscope-x-1"] {
            std::fs::create_dir(inst.join(n)).unwrap();
        }
        let removed = remove_stale(root);
        let left: Vec<bool> = [dead, alive.as_str(), "rtscope-x-1"]
            .iter()
            .map(|n| inst.join(n).exists())
            .collect();
        for n in [alive.as_str(), "rtscope-x-1"] {
            let _ = std::fs::remove_dir(inst.join(n));
        }
        assert!(removed.contains(&dead.to_string()), "{removed:?}");
        assert!(!removed.contains(&alive), "{removed:?}");
        assert_eq!(left, [false, true, true]);
    }

    /// A private instance: set up as asked, records this thread's context
    /// switches, filters, stops, and is removed on drop.
    #[test]
    fn a_private_instance_traces_and_is_removed() {
        let _one_at_a_time = tracefs_tests();
        let Some((_root, _m)) = tracefs_for_test() else {
            return;
        };
        let cfg = TraceConfig {
            cpus: vec![],
            events: vec![
                "sched/sched_switch".into(),
                "nosuch/event".into(),
                "nosuch/optional?".into(),
            ],
            buffer_kb: 256,
        };
        let mut inst = Instance::open(&cfg).unwrap();
        let dir = inst.dir().to_path_buf();
        let setting = |n: &str| std::fs::read_to_string(dir.join(n)).unwrap();
        assert_eq!(inst.enabled, ["sched/sched_switch"]);
        assert_eq!(inst.missing, ["nosuch/event"]);
        assert_eq!(setting("tracing_on").trim(), "1");
        assert!(
            setting("trace_clock").contains("[mono]"),
            "{}",
            setting("trace_clock")
        );
        // Rounded up to whole pages by the kernel.
        let kb: u32 = setting("buffer_size_kb").trim().parse().unwrap();
        assert!((256..300).contains(&kb), "{kb}");
        assert_eq!(setting("events/sched/sched_switch/enable").trim(), "1");
        let tid = crate::sys::gettid();
        inst.set_filter("sched/sched_switch", &format!("prev_pid == {tid}"))
            .unwrap();
        assert!(inst.set_filter("nonsense", "x").is_err());
        let drained = inst.read(|_| {}) as u64;
        assert_eq!(inst.events, drained);
        for _ in 0..20 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let (mut own, mut other) = (0, 0);
        let n = inst.read(|e| {
            if let Kind::Switch { prev_pid, .. } = e.kind {
                if prev_pid == tid {
                    own += 1;
                } else {
                    other += 1;
                }
            }
        });
        assert!(own >= 5, "{own} of this thread's switches in {n} events");
        assert!(n >= own + other, "read says {n} events");
        assert_eq!(inst.events, drained + n as u64);
        // A record or two may have been in flight when the filter was set.
        assert!(
            other <= 2,
            "{other} switches of other tasks passed the filter"
        );
        inst.stop();
        assert_eq!(setting("tracing_on").trim(), "0");
        drop(inst);
        assert!(!dir.exists(), "the instance is left behind");
    }

    /// A flood of context switches into the smallest buffer, read after:
    /// the kernel's overrun count and the lost pages are reported.
    #[test]
    fn overruns_and_lost_events_are_counted() {
        let _one_at_a_time = tracefs_tests();
        let Some((_root, _m)) = tracefs_for_test() else {
            return;
        };
        let cfg = TraceConfig {
            cpus: vec![],
            events: vec!["sched/sched_switch".into()],
            buffer_kb: 64,
        };
        let mut inst = Instance::open(&cfg).unwrap();
        assert_eq!(inst.overruns(), 0);
        // Two threads hand a token back and forth: two switches a hand-off.
        let (tx, rx) = std::sync::mpsc::sync_channel::<u32>(0);
        let (tx2, rx2) = std::sync::mpsc::sync_channel::<u32>(0);
        let t = std::thread::spawn(move || {
            while let Ok(v) = rx.recv() {
                if tx2.send(v).is_err() {
                    break;
                }
            }
        });
        for i in 0..20_000 {
            tx.send(i).unwrap();
            rx2.recv().unwrap();
        }
        drop(tx);
        t.join().unwrap();
        inst.stop();
        let over = inst.overruns();
        assert!(over > 0, "no overrun after 40,000 switches into 64 KiB");
        let mut lost = 0;
        inst.read(|e| {
            if e.kind == Kind::Lost {
                // Said by no task.
                assert_eq!(e.pid, -1);
                lost += 1;
            }
        });
        assert!(
            inst.lost_pages > 0 && lost == inst.lost_pages,
            "{} {lost}",
            inst.lost_pages
        );
        eprintln!(
            "overruns {over}, lost pages {}, lost events {}",
            inst.lost_pages, inst.lost_events
        );
    }

    /// `events/header_page` as the kernel serves it: its text to the first
    /// read() (as much as fits), nothing to any later one.
    struct HeaderFile {
        text: &'static str,
        read: bool,
    }

    impl Read for HeaderFile {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if std::mem::replace(&mut self.read, true) {
                return Ok(0);
            }
            let n = buf.len().min(self.text.len());
            buf[..n].copy_from_slice(&self.text.as_bytes()[..n]);
            Ok(n)
        }
    }

    /// The 32-bit ARM kernel's header_page (6.1 armmp): with the text cut
    /// to std's 32-byte probe read, the 64-bit layout was used there.
    #[test]
    fn header_page_is_read_whole_from_a_file_that_serves_one_read() {
        let arm32 = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:12;\tsize:4084;\tsigned:0;\n";
        let file = |text| HeaderFile { text, read: false };
        assert_eq!(
            page_layout(file(arm32)),
            PageLayout {
                commit_offset: 8,
                commit_size: 4,
                data_offset: 12
            }
        );
        // Nothing readable, or nothing parsable: the 64-bit layout.
        assert_eq!(page_layout(file("")), PageLayout::default());
        assert_eq!(page_layout(&[][..]), PageLayout::default());
        struct Failing;
        impl Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("no"))
            }
        }
        assert_eq!(page_layout(Failing), PageLayout::default());
    }

    #[test]
    fn timer_cpus_add_the_housekeeping_cpus_of_nohz_full_threads() {
        let online = [0, 1, 2, 3];
        // isolcpus=1 nohz_full=1: a thread on CPU 1 has its timers on 0, 2, 3.
        assert_eq!(timer_cpus(&[1], &online, &[1], &[1], true), [0, 1, 2, 3]);
        // isolcpus=1-3 nohz_full=1-3: CPU 0 keeps house.
        assert_eq!(
            timer_cpus(&[2], &online, &[1, 2, 3], &[1, 2, 3], true),
            [0, 2]
        );
        // Timer migration off: timers stay on their CPU.
        assert_eq!(timer_cpus(&[1], &online, &[1], &[1], false), [1]);
        // A thread on a CPU that is not nohz_full (isolated only).
        assert_eq!(timer_cpus(&[3, 2], &online, &[1], &[1, 2], true), [2, 3]);
        // Every CPU isolated but not all nohz_full: the ones not nohz_full.
        assert_eq!(timer_cpus(&[1], &[0, 1], &[1], &[0, 1], true), [0, 1]);
        // From files: an empty nohz_full file (a kernel without it) adds nothing.
        let d = std::env::temp_dir().join(format!("rtscope-timer-cpus-{}", std::process::id()));
        let cpu = d.join("sys/devices/system/cpu");
        std::fs::create_dir_all(&cpu).unwrap();
        std::fs::create_dir_all(d.join("proc/sys/kernel")).unwrap();
        std::fs::write(cpu.join("online"), "0-3\n").unwrap();
        std::fs::write(cpu.join("nohz_full"), "\n").unwrap();
        assert_eq!(timer_cpus_of(&d, &[1]), [1]);
        std::fs::write(cpu.join("nohz_full"), "1\n").unwrap();
        std::fs::write(cpu.join("isolated"), "1\n").unwrap();
        assert_eq!(timer_cpus_of(&d, &[1]), [0, 1, 2, 3]);
        std::fs::write(d.join("proc/sys/kernel/timer_migration"), "0\n").unwrap();
        assert_eq!(timer_cpus_of(&d, &[1]), [1]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn masks() {
        assert_eq!(cpumask(&[0]), "1");
        assert_eq!(cpumask(&[1, 3]), "a");
        assert_eq!(cpumask(&[0, 32]), "1,1");
    }

    #[test]
    fn stats_overruns() {
        let t = "entries: 5\noverrun: 3\ncommit overrun: 9\nbytes: 0\noldest event ts:     0.000000\ndropped events: 2\nread events: 7\n";
        assert_eq!(parse_stats_overruns(t), 5);
    }
}
