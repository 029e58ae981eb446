//! CPU power and time: frequency scaling, idle states, SMT siblings and
//! the clocksource.

use super::*;

pub(super) fn cpufreq(root: &Root, f: &Facts) -> Check {
    let title = "CPU frequency governor";
    let cpus = if f.targets.is_empty() {
        f.online.clone()
    } else {
        f.targets.clone()
    };
    let mut govs = BTreeMap::<String, Vec<usize>>::new();
    let mut freq = Vec::new();
    for &c in &cpus {
        let base = format!("/sys/devices/system/cpu/cpu{c}/cpufreq");
        if let Some(g) = root.read(&format!("{base}/scaling_governor")) {
            govs.entry(g).or_default().push(c);
        }
        if let Some(k) = root.read_i64(&format!("{base}/scaling_cur_freq")) {
            freq.push(k);
        }
    }
    if govs.is_empty() {
        let why = "a changing CPU frequency changes how long the same code takes";
        return Check::new(
            "cpufreq",
            title,
            Status::Na,
            if f.hypervisor {
                "no cpufreq (virtual machine: the host controls the frequency)".into()
            } else {
                "no cpufreq driver".into()
            },
        )
        .why(why);
    }
    let desc: Vec<String> = govs
        .iter()
        .map(|(g, cs)| format!("{g} on {}", list(cs)))
        .collect();
    let mut found = desc.join(", ");
    if let (Some(lo), Some(hi)) = (freq.iter().min(), freq.iter().max()) {
        found.push_str(&format!(", {}-{} MHz now", lo / 1000, hi / 1000));
    }
    let ok = govs.keys().all(|g| g == "performance");
    let l = list(&cpus);
    Check::new("cpufreq", title, if ok { Status::Ok } else { Status::Warn }, found)
        .why("a governor other than performance ramps the frequency: the same work takes longer right after idle")
        .fix(format!("cpupower -c {l} frequency-set -g performance"))
        .cmd(format!("for c in {}; do echo performance > /sys/devices/system/cpu/cpu$c/cpufreq/scaling_governor; done", cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" ")))
}

pub(super) fn cpuidle(root: &Root, f: &Facts) -> Check {
    let title = "CPU idle states";
    let driver = root.read("/sys/devices/system/cpu/cpuidle/current_driver");
    let dma = root.exists("/dev/cpu_dma_latency");
    let why = "waking from a deep C-state takes tens to hundreds of µs";
    let cpu = f.targets.first().or(f.online.first()).copied().unwrap_or(0);
    let base = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle");
    let mut deep = Vec::new();
    let mut states = Vec::new();
    for s in root.list(&base) {
        if !s.starts_with("state") {
            continue;
        }
        let name = root.read(&format!("{base}/{s}/name")).unwrap_or(s.clone());
        let lat = root.read_i64(&format!("{base}/{s}/latency")).unwrap_or(0);
        let disabled = root.read_i64(&format!("{base}/{s}/disable")).unwrap_or(0) == 1;
        states.push(format!(
            "{name}:{lat}us{}",
            if disabled { "(off)" } else { "" }
        ));
        if lat > 10 && !disabled {
            deep.push(format!("{name} {lat}us"));
        }
    }
    let dma_text = if dma {
        "/dev/cpu_dma_latency present (rtscope holds it at 0 during runs)"
    } else {
        "no /dev/cpu_dma_latency"
    };
    let found = match (&driver, states.is_empty()) {
        (None, _) | (_, true) => format!(
            "idle driver {}; {dma_text}",
            driver.as_deref().unwrap_or("none")
        ),
        (Some(d), false) => format!("driver {d}, CPU {cpu}: {}; {dma_text}", states.join(" ")),
    };
    if deep.is_empty() {
        return Check::new("cpuidle", title, Status::Ok, found).why(why);
    }
    let p = if f.is_x86() {
        "processor.max_cstate=1 intel_idle.max_cstate=0"
    } else {
        "cpuidle.off=1"
    };
    let mut c = Check::new("cpuidle", title, Status::Warn, found)
        .why(why)
        .fix(format!(
            "hold /dev/cpu_dma_latency at 0 while the RT application runs (rtscope does), or disable deep states: kernel parameter {p}; per state: echo 1 > {base}/stateN/disable"
        ));
    for s in p.split(' ') {
        c = c.param(s);
    }
    c
}

pub(super) fn clocksource(root: &Root, f: &Facts) -> Check {
    let title = "clocksource";
    let base = "/sys/devices/system/clocksource/clocksource0";
    let Some(cur) = root.read(&format!("{base}/current_clocksource")) else {
        return Check::new("clocksource", title, Status::Na, "not readable".into())
            .why("a slow clocksource makes every timestamp a trap or an MMIO read");
    };
    let avail = root
        .read(&format!("{base}/available_clocksource"))
        .unwrap_or_default();
    let good = matches!(
        cur.as_str(),
        "tsc" | "arch_sys_counter" | "arm_arch_counter"
    );
    let mut found = format!("{cur} (available: {avail})");
    let mut status = if good { Status::Ok } else { Status::Warn };
    if f.is_x86() {
        let missing: Vec<&str> = ["constant_tsc", "nonstop_tsc"]
            .into_iter()
            .filter(|fl| !f.has_flag(fl))
            .collect();
        if !missing.is_empty() {
            found.push_str(&format!("; TSC lacks {}", missing.join(", ")));
            status = status.max(Status::Warn);
        } else {
            found.push_str("; TSC invariant");
        }
        if f.params.get("tsc").is_some_and(|v| v == "reliable") {
            found.push_str(", tsc=reliable");
        }
    }
    let mut c = Check::new("clocksource", title, status, found)
        .why("clock_gettime through the vDSO needs tsc/arch counter; hpet, acpi_pm or kvm-clock fallbacks are slower and costlier per read");
    if !good && avail.split_whitespace().any(|a| a == "tsc") {
        c = c
            .fix(format!("echo tsc > {base}/current_clocksource (kernel parameter clocksource=tsc tsc=reliable if the TSC is known good)"))
            .cmd(format!("echo tsc > {base}/current_clocksource"))
            .param("clocksource=tsc");
    } else if !good {
        c = c.fix("use a clocksource the vDSO can read (tsc, arch_sys_counter)");
    } else {
        c = c.fix("boot a machine whose TSC is invariant (constant_tsc, nonstop_tsc)");
    }
    c
}

pub(super) fn smt(root: &Root, f: &Facts) -> Check {
    let title = "SMT (hyper-threading)";
    let ctl = root.read("/sys/devices/system/cpu/smt/control");
    let cpus = if f.targets.is_empty() {
        f.online.clone()
    } else {
        f.targets.clone()
    };
    let mut shared = Vec::new();
    for &c in &cpus {
        let sib = cpus_of(
            root.read(&format!(
                "/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list"
            ))
            .as_deref(),
        );
        if sib.len() > 1 {
            shared.push(c);
        }
    }
    let found = format!(
        "smt/control={}; CPUs with a sibling thread: {}",
        ctl.as_deref().unwrap_or("-"),
        list(&shared)
    );
    let status = if !shared.is_empty() {
        Status::Warn
    } else if ctl.is_none() {
        Status::Na
    } else {
        Status::Ok
    };
    Check::new("smt", title, status, found)
        .why("a sibling hardware thread shares the core's pipeline and caches: its work slows the RT thread")
        .fix("echo off > /sys/devices/system/cpu/smt/control (kernel parameter nosmt), or keep the sibling of each RT CPU idle")
        .cmd("echo off > /sys/devices/system/cpu/smt/control")
        .param("nosmt")
}
