//! Bounds on what a run may ask for, checked when its plan is made, before
//! anything is allocated, spawned or measured. A value out of bounds is a
//! usage error (exit 2) in one line that names the flag, the limit and why.
//!
//! - every duration option has a bound, checked as it is parsed and shown in
//!   `--help`: a run's length at most [`MAX_RUN_NS`] (365 d), a calibration
//!   window at most [`MAX_CALIBRATE_NS`] (10 min), and the durations that a
//!   wait is made of (a period, the start delay, a threshold) at most
//!   [`MAX_WAIT_NS`] (1 h): anything longer is a typo, not a measurement;
//! - counts of things allocated up front (buffers of readings, kept spikes)
//!   must fit in [`MEMORY_SHARE`] of the memory available (MemAvailable);
//! - measurement threads must fit in the thread limits (RLIMIT_NPROC,
//!   `kernel.threads-max`, `kernel.pid_max`, the cgroup's `pids.max`) and
//!   their rings, stacks and recorders in the memory available.

use std::path::{Path, PathBuf};

use anyhow::Result;
use rtscope_core::units::format_ns;

use crate::error::usage;
use crate::load::format_size;

/// The longest period or start delay a run accepts: 1 h.
pub const MAX_WAIT_NS: u64 = 3_600_000_000_000;

/// The longest run (`-D`, `--measure-time`, `--checkpoint`): 365 days.
pub const MAX_RUN_NS: u64 = 365 * 86_400 * 1_000_000_000;

/// The longest calibration window (`--calibrate`) and warp test per CPU
/// pair (`clock --warp`): 10 min (a counter's frequency is known to a few
/// ppb within seconds; longer is a typo).
pub const MAX_CALIBRATE_NS: u64 = 600 * 1_000_000_000;

/// The most runs `--repeat` makes (each is a whole run, kept in memory until
/// they are pooled).
pub const MAX_REPEAT: usize = 1000;

/// The largest JSON input read (cyclictest's --json of a long run with -h is
/// a few MiB): beyond it the file is refused rather than read into memory.
pub const MAX_JSON_BYTES: u64 = 256 << 20;

/// The most beacon intervals per order (`timer --beacon --cycles`), each kept
/// in memory.
pub const MAX_BEACON_CYCLES: u64 = 1_000_000;

/// The share of MemAvailable that up-front allocations may take: 3/4.
pub const MEMORY_SHARE: (u64, u64) = (3, 4);

/// A period (or other single wait) given with `flag`: at most [`MAX_WAIT_NS`].
pub fn check_period(flag: &str, ns: u64) -> Result<()> {
    if ns > MAX_WAIT_NS {
        return Err(usage(format!(
            "{flag} {}: at most {} (a longer wait is not a latency measurement)",
            format_ns(ns),
            format_ns(MAX_WAIT_NS)
        )));
    }
    Ok(())
}

/// `--start-delay`: at most [`MAX_WAIT_NS`].
pub fn check_start_delay(ns: u64) -> Result<()> {
    if ns > MAX_WAIT_NS {
        return Err(usage(format!(
            "--start-delay {}: at most {}",
            format_ns(ns),
            format_ns(MAX_WAIT_NS)
        )));
    }
    Ok(())
}

/// The periods of `threads` threads, `period + n * distance`: none may
/// overflow or exceed [`MAX_WAIT_NS`].
pub fn check_thread_periods(period: u64, distance: u64, threads: usize) -> Result<()> {
    check_period("-i/--period", period)?;
    let last = threads.saturating_sub(1) as u64;
    match last
        .checked_mul(distance)
        .and_then(|d| d.checked_add(period))
    {
        Some(p) if p <= MAX_WAIT_NS => Ok(()),
        Some(p) => Err(usage(format!(
            "--distance {}: thread {last} would have period {}, above the {} limit",
            format_ns(distance),
            format_ns(p),
            format_ns(MAX_WAIT_NS)
        ))),
        None => Err(usage(format!(
            "--distance {}: thread {last}'s period overflows",
            format_ns(distance)
        ))),
    }
}

/// `--warmup N` drops the first N of `--loops` wake-ups: fewer than the loops.
pub fn check_warmup(warmup: u64, loops: Option<u64>) -> Result<()> {
    match loops {
        Some(l) if warmup >= l => Err(usage(format!(
            "--warmup {warmup}: must be less than --loops {l} (the warm-up wake-ups are part of the loops)"
        ))),
        _ => Ok(()),
    }
}

/// MemAvailable from /proc/meminfo, bytes.
fn mem_available() -> Option<u64> {
    crate::load::supervisor::mem_available()
}

/// The bytes up-front allocations may take: [`MEMORY_SHARE`] of MemAvailable
/// (and what an allocation can address at all).
fn memory_budget() -> (u64, String) {
    let cap = isize::MAX as u64;
    match mem_available() {
        Some(avail) => (
            (avail / MEMORY_SHARE.1 * MEMORY_SHARE.0).min(cap),
            format!(
                "{}/{} of the memory available (MemAvailable {})",
                MEMORY_SHARE.0,
                MEMORY_SHARE.1,
                human_size(avail)
            ),
        ),
        None => (cap, "the address space".into()),
    }
}

/// `1.5 GiB`-style sizes (binary units, one decimal) for messages.
fn human_size(b: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if b < 1024 {
        return format_size(b);
    }
    let mut v = b as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// `n` things of `bytes_each` bytes, allocated up front because of `flag`:
/// they must fit in the memory budget.
pub fn check_count(flag: &str, n: u64, bytes_each: u64) -> Result<()> {
    let (budget, what) = memory_budget();
    let need = n.checked_mul(bytes_each);
    match need {
        Some(b) if b <= budget => Ok(()),
        _ => Err(usage(format!(
            "{flag} {n}: needs {} ({bytes_each} B each), more than {what}",
            need.map_or("more than 16 EiB".to_string(), human_size)
        ))),
    }
}

/// How many more threads the machine lets this process start, and which
/// limit says so (the tightest of RLIMIT_NPROC, threads-max, pid_max and the
/// cgroup's pids.max).
fn thread_room() -> Option<(u64, String)> {
    let mut best: Option<(u64, String)> = None;
    let mut consider = |room: u64, why: String| {
        if best.as_ref().is_none_or(|(r, _)| room < *r) {
            best = Some((room, why));
        }
    };
    // Tasks on the whole system: the 4th field of /proc/loadavg, "running/total".
    let total = std::fs::read_to_string("/proc/loadavg").ok().and_then(|s| {
        s.split_whitespace()
            .nth(3)?
            .split_once('/')?
            .1
            .parse::<u64>()
            .ok()
    });
    for (file, name) in [
        ("/proc/sys/kernel/threads-max", "kernel.threads-max"),
        ("/proc/sys/kernel/pid_max", "kernel.pid_max"),
    ] {
        if let Some(max) = read_u64(Path::new(file)) {
            let used = total.unwrap_or(0);
            consider(
                max.saturating_sub(used),
                format!("{name} is {max} and {used} tasks exist"),
            );
        }
    }
    // Root is not held to RLIMIT_NPROC (CAP_SYS_RESOURCE / CAP_SYS_ADMIN).
    let (nproc, _) = rtscope_core::sys::rlimit_nproc();
    if rtscope_core::sys::geteuid() != 0 && nproc != u64::MAX {
        consider(nproc, format!("RLIMIT_NPROC is {nproc} ('ulimit -u')"));
    }
    for dir in pids_cgroups() {
        let max = std::fs::read_to_string(dir.join("pids.max")).ok();
        let Some(max) = max.and_then(|s| s.trim().parse::<u64>().ok()) else {
            continue; // "max": no limit at this level
        };
        let cur = read_u64(&dir.join("pids.current")).unwrap_or(0);
        consider(
            max.saturating_sub(cur),
            format!(
                "the cgroup's pids.max is {max} and {cur} tasks are in it ({})",
                dir.display()
            ),
        );
    }
    best
}

fn read_u64(p: &Path) -> Option<u64> {
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// The pids-controller directories of this process's cgroup and its
/// ancestors (cgroup v2 and v1).
fn pids_cgroups() -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string("/proc/self/cgroup") else {
        return vec![];
    };
    let mut out = Vec::new();
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(ctrl), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let root = if ctrl.is_empty() {
            PathBuf::from("/sys/fs/cgroup")
        } else if ctrl.split(',').any(|c| c == "pids") {
            PathBuf::from("/sys/fs/cgroup/pids")
        } else {
            continue;
        };
        let mut rel = PathBuf::from(path.trim_start_matches('/'));
        loop {
            let dir = root.join(&rel);
            if dir.join("pids.max").exists() {
                out.push(dir);
            }
            if !rel.pop() {
                break;
            }
        }
    }
    out
}

/// `threads` measurement threads (`-t`), each needing `bytes_each` bytes
/// (ring, stack, recorders): within the thread limits and the memory budget.
pub fn check_threads(threads: usize, bytes_each: u64) -> Result<()> {
    let n = threads as u64;
    if n == 0 {
        return Err(usage("-t/--threads 0: at least 1 thread"));
    }
    if let Some((room, why)) = thread_room() {
        if n > room {
            return Err(usage(format!(
                "-t/--threads {n}: this process may start at most {room} more threads ({why})"
            )));
        }
    }
    let (budget, what) = memory_budget();
    let need = n.checked_mul(bytes_each);
    match need {
        Some(b) if b <= budget => Ok(()),
        _ => Err(usage(format!(
            "-t/--threads {n}: needs {} ({} per thread: ring, stack, recorders), more than {what}",
            need.map_or("more than 16 EiB".to_string(), human_size),
            human_size(bytes_each)
        ))),
    }
}

/// What one `cyclic` measurement thread holds, bytes: its sample ring, its
/// stack (512 KiB, locked by mlockall), its recorder (HDR histogram, timeline)
/// and, with `--histogram`, its 1 µs bins (`histogram_bins`).
pub fn cyclic_thread_bytes(ring_capacity: usize, histogram_bins: Option<u64>) -> u64 {
    const SAMPLE: u64 = std::mem::size_of::<rtscope_core::sample::Sample>() as u64;
    const STACK: u64 = 512 * 1024;
    const RECORDER: u64 = 512 * 1024;
    (ring_capacity as u64 * SAMPLE + STACK + RECORDER)
        .saturating_add(histogram_bins.map_or(0, |b| (b + 1).saturating_mul(8)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_and_distance() {
        assert!(check_period("-i", MAX_WAIT_NS).is_ok());
        assert!(check_period("-i", MAX_WAIT_NS + 1).is_err());
        assert!(check_thread_periods(1_000, 500, 4).is_ok());
        assert!(check_thread_periods(1_000, u64::MAX / 2, 4).is_err());
        assert!(check_thread_periods(1_000, MAX_WAIT_NS, 2).is_err());
        assert!(check_thread_periods(1_000, u64::MAX, 1).is_ok());
        assert!(check_warmup(5, Some(20)).is_ok());
        assert!(check_warmup(20, Some(20)).is_err());
        assert!(check_warmup(1_000, None).is_ok());
    }

    #[test]
    fn counts_against_memory() {
        assert!(check_count("--spikes", 32, 32).is_ok());
        let e = check_count("--spikes", u64::MAX / 2, 32).unwrap_err();
        assert!(e.to_string().contains("--spikes"), "{e}");
        assert!(check_count("-n", 1 << 40, 16).is_err());
        assert!(check_threads(1, 1 << 20).is_ok());
        let e = check_threads(10_000_000, 1 << 20).unwrap_err().to_string();
        assert!(e.starts_with("-t/--threads 10000000:"), "{e}");
        assert_eq!(human_size(1536 << 20), "1.5 GiB");
    }
}
