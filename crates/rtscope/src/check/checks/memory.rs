//! Memory: transparent huge pages, the vmstat interval and swappiness.

use super::*;

pub(super) fn thp(root: &Root) -> Check {
    let title = "transparent hugepages";
    let Some(v) = root.read("/sys/kernel/mm/transparent_hugepage/enabled") else {
        return Check::new("thp", title, Status::Na, "not available".into())
            .why("khugepaged compaction and huge page faults add ms-long stalls");
    };
    let mode = rtscope_core::system::bracketed_choice(&v.replace('[', "(").replace(']', ")"))
        .unwrap_or(v.clone());
    let status = if mode == "always" {
        Status::Warn
    } else {
        Status::Ok
    };
    Check::new("thp", title, status, format!("enabled={mode}"))
        .why("khugepaged compaction and huge page faults add ms-long stalls")
        .fix("echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (or never; kernel parameter transparent_hugepage=madvise)")
        .cmd("echo madvise > /sys/kernel/mm/transparent_hugepage/enabled")
}

pub(super) fn stat_interval(root: &Root) -> Check {
    let title = "vmstat update interval";
    let Some(v) = root.read_i64("/proc/sys/vm/stat_interval") else {
        return Check::new("vm-stat-interval", title, Status::Na, "not readable".into())
            .why("the vmstat worker runs on every CPU each interval");
    };
    Check::new(
        "vm-stat-interval",
        title,
        if v >= 10 { Status::Ok } else { Status::Warn },
        format!("vm.stat_interval={v} s"),
    )
    .why("the vmstat_update work item runs on every CPU (isolated ones included) each interval")
    .fix("sysctl -w vm.stat_interval=10")
    .cmd("sysctl -w vm.stat_interval=10")
}

pub(super) fn swappiness(root: &Root) -> Check {
    let title = "swap";
    let swaps = root
        .read_raw("/proc/swaps")
        .map(|s| s.lines().skip(1).filter(|l| !l.trim().is_empty()).count())
        .unwrap_or(0);
    let sw = root.read_i64("/proc/sys/vm/swappiness");
    let found = format!(
        "{} swap device{}, vm.swappiness={}",
        swaps,
        if swaps == 1 { "" } else { "s" },
        sw.map_or("?".into(), |v| v.to_string())
    );
    let status = if swaps > 0 && sw.is_some_and(|v| v > 10) {
        Status::Warn
    } else {
        Status::Ok
    };
    Check::new("swap", title, status, found)
        .why("a swapped-out page of an RT process costs a disk read (lock memory with mlockall; keep swappiness low)")
        .fix("sysctl -w vm.swappiness=1 (and mlockall in the RT application)")
        .cmd("sysctl -w vm.swappiness=1")
}
