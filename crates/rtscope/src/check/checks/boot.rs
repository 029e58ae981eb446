//! The kernel and its command line: preemption model, CPU isolation
//! (isolcpus, nohz_full, rcu_nocbs, irqaffinity), the CPUs named, mitigations
//! and the console.

use super::*;

pub(super) fn preemption(f: &Facts) -> Check {
    let mode = f.dyn_mode.as_deref();
    let found = match (f.model.as_str(), mode) {
        (m, Some(d)) if m == "PREEMPT_DYNAMIC" => format!("{} {m} (mode {d})", f.release),
        (m, _) if m == "PREEMPT_DYNAMIC" => format!("{} {m} (mode not readable)", f.release),
        (m, _) => format!("{} {m}", f.release),
    };
    if f.rt {
        return Check::new("preempt-rt", "kernel preemption model", Status::Ok, found)
            .why("PREEMPT_RT makes almost all kernel code preemptible: bounded wake-up latency");
    }
    let rt_kernel = if f.at_least(6, 12) {
        "boot a kernel built with CONFIG_PREEMPT_RT=y (mainline since 6.12; Debian/Ubuntu linux-image-rt, RHEL kernel-rt)"
    } else {
        "boot a PREEMPT_RT kernel (this kernel predates 6.12: RT needs the out-of-tree patch set, e.g. Debian linux-image-rt-*, RHEL kernel-rt)"
    };
    let weak = matches!(f.model.as_str(), "unknown" | "PREEMPT_DYNAMIC")
        && matches!(mode, Some("none") | Some("voluntary"))
        || f.model == "unknown";
    let mut c = Check::new(
        "preempt-rt",
        "kernel preemption model",
        if weak { Status::Fail } else { Status::Warn },
        found,
    )
    .why("without PREEMPT_RT, non-preemptible kernel sections (spinlocks, softirqs) add unbounded tails")
    .fix(rt_kernel);
    if f.model == "PREEMPT_DYNAMIC" && mode != Some("full") {
        c = c.param("preempt=full");
        c.fix = Some(format!("{rt_kernel}; meanwhile boot with preempt=full"));
    }
    c
}

pub(super) fn isolcpus(f: &Facts) -> Check {
    let raw = f.params.get("isolcpus").cloned();
    if f.isolated.is_empty() {
        let s = suggested_isolation(f);
        let mut c = Check::new(
            "isolcpus",
            "isolated CPUs",
            Status::Warn,
            "no isolated CPUs".into(),
        )
        .why("without isolation the scheduler puts other tasks and their wake-ups on the RT CPUs");
        if !s.is_empty() {
            let flags = if f.at_least(5, 6) {
                "managed_irq,domain,"
            } else {
                ""
            };
            let p = format!("isolcpus={flags}{}", list(&s));
            c = c
                .fix(format!("kernel parameter {p}; {}", f.bootloader_hint()))
                .param(p);
        }
        return c;
    }
    let found = match raw {
        Some(r) => format!("isolcpus={r} (CPUs {})", list(&f.isolated)),
        None => format!("CPUs {} isolated", list(&f.isolated)),
    };
    Check::new("isolcpus", "isolated CPUs", Status::Ok, found)
        .why("isolated CPUs run only what is pinned there")
}

pub(super) fn nohz_full(f: &Facts) -> Check {
    let title = "tickless isolated CPUs (nohz_full)";
    if f.isolated.is_empty() && f.nohz_full.is_empty() {
        return Check::new("nohz-full", title, Status::Na, "no isolated CPUs".into())
            .why("nohz_full stops the periodic tick on isolated CPUs running one task");
    }
    let missing: Vec<usize> = f
        .isolated
        .iter()
        .copied()
        .filter(|c| !f.nohz_full.contains(c))
        .collect();
    let found = format!("nohz_full CPUs {}", list(&f.nohz_full));
    let status = if missing.is_empty() && subset(&f.nohz_full, &f.isolated) {
        Status::Ok
    } else {
        Status::Warn
    };
    let p = format!("nohz_full={}", list(&f.isolated));
    Check::new("nohz-full", title, status, found)
        .why("the scheduler tick interrupts an isolated CPU every 1-4 ms unless nohz_full covers it (and matches isolcpus)")
        .fix(format!("kernel parameter {p} (same list as isolcpus); {}", f.bootloader_hint()))
        .param(p)
}

pub(super) fn rcu_nocbs(f: &Facts) -> Check {
    let title = "RCU callbacks off isolated CPUs (rcu_nocbs)";
    if f.isolated.is_empty() {
        return Check::new("rcu-nocbs", title, Status::Na, "no isolated CPUs".into())
            .why("RCU callbacks run in softirq on the CPU that queued them unless offloaded");
    }
    let nocbs = cpus_of(f.params.get("rcu_nocbs").map(String::as_str));
    // nohz_full implies rcu_nocbs for the same CPUs.
    let covered: Vec<usize> = nocbs.iter().chain(&f.nohz_full).copied().collect();
    let ok = subset(&f.isolated, &covered);
    let found = if nocbs.is_empty() {
        format!(
            "rcu_nocbs not set (nohz_full covers {})",
            list(&f.nohz_full)
        )
    } else {
        format!("rcu_nocbs={}", list(&nocbs))
    };
    let p = format!("rcu_nocbs={}", list(&f.isolated));
    Check::new(
        "rcu-nocbs",
        title,
        if ok { Status::Ok } else { Status::Warn },
        found,
    )
    .why(
        "RCU callbacks run in softirq on the CPU that queued them unless offloaded to rcuo threads",
    )
    .fix(format!(
        "kernel parameter {p} (plus rcu_nocb_poll to keep the rcuo wake-ups off them); {}",
        f.bootloader_hint()
    ))
    .param(p)
}

pub(super) fn irqaffinity(f: &Facts) -> Check {
    let title = "default IRQ affinity (irqaffinity)";
    let v = f.params.get("irqaffinity").cloned();
    let iso = if f.targets.is_empty() {
        &f.isolated
    } else {
        &f.targets
    };
    if iso.is_empty() {
        return Check::new(
            "irqaffinity",
            title,
            Status::Na,
            format!("irqaffinity={}", v.as_deref().unwrap_or("not set")),
        )
        .why("irqaffinity= keeps device interrupts on housekeeping CPUs from boot");
    }
    let cpus = cpus_of(v.as_deref());
    let overlap: Vec<usize> = cpus.iter().copied().filter(|c| iso.contains(c)).collect();
    let hk: Vec<usize> = f
        .online
        .iter()
        .copied()
        .filter(|c| !iso.contains(c))
        .collect();
    let (status, found) = match &v {
        None => (Status::Warn, "irqaffinity not set".to_string()),
        Some(s) if !overlap.is_empty() => (
            Status::Warn,
            format!("irqaffinity={s} includes RT CPUs {}", list(&overlap)),
        ),
        Some(s) => (Status::Ok, format!("irqaffinity={s}")),
    };
    let mut c = Check::new("irqaffinity", title, status, found)
        .why("device interrupts land on the RT CPUs unless the default affinity excludes them");
    if !hk.is_empty() {
        let p = format!("irqaffinity={}", list(&hk));
        c = c
            .fix(format!("kernel parameter {p}; {}", f.bootloader_hint()))
            .param(p);
    }
    c
}

pub(super) fn cpus_named(f: &Facts) -> Check {
    let title = "the CPUs to measure on vs isolation";
    if f.targets_from != "--cpus" {
        return Check::new("cpus", title, Status::Na, "no --cpus given".into())
            .why("naming the RT CPUs (--cpus) checks them against isolcpus/nohz_full");
    }
    let offline: Vec<usize> = f
        .targets
        .iter()
        .copied()
        .filter(|c| !f.online.contains(c))
        .collect();
    if !offline.is_empty() {
        return Check::new(
            "cpus",
            title,
            Status::Fail,
            format!(
                "CPUs {} are not online (online: {})",
                list(&offline),
                list(&f.online)
            ),
        )
        .why("a real-time thread cannot be pinned to a CPU that is not online")
        .fix("name online CPUs in --cpus");
    }
    let not_iso: Vec<usize> = f
        .targets
        .iter()
        .copied()
        .filter(|c| !f.isolated.contains(c))
        .collect();
    let not_nohz: Vec<usize> = f
        .targets
        .iter()
        .copied()
        .filter(|c| !f.nohz_full.contains(c))
        .collect();
    let ok = not_iso.is_empty() && not_nohz.is_empty();
    let found = if ok {
        format!("CPUs {} are isolated and nohz_full", list(&f.targets))
    } else {
        format!(
            "CPUs {}: not isolated {}, not nohz_full {}",
            list(&f.targets),
            list(&not_iso),
            list(&not_nohz)
        )
    };
    let mut c = Check::new(
        "cpus",
        title,
        if ok { Status::Ok } else { Status::Warn },
        found,
    )
    .why("the CPUs the RT work runs on should be the isolated, tickless ones");
    if !ok {
        let l = list(&f.targets);
        let flags = if f.at_least(5, 6) {
            "managed_irq,domain,"
        } else {
            ""
        };
        c = c
            .fix(format!(
                "kernel parameters isolcpus={flags}{l} nohz_full={l} rcu_nocbs={l}; {}",
                f.bootloader_hint()
            ))
            .param(format!("isolcpus={flags}{l}"))
            .param(format!("nohz_full={l}"))
            .param(format!("rcu_nocbs={l}"));
    }
    c
}

pub(super) fn mitigations(root: &Root, f: &Facts) -> Check {
    let title = "CPU vulnerability mitigations";
    let dir = "/sys/devices/system/cpu/vulnerabilities";
    let names = root.list(dir);
    if names.is_empty() {
        return Check::new("mitigations", title, Status::Na, "not reported".into())
            .why("some mitigations add work to every kernel entry and exit");
    }
    if f.params.get("mitigations").is_some_and(|v| v == "off") {
        return Check::new("mitigations", title, Status::Ok, "mitigations=off".into())
            .why("some mitigations add work to every kernel entry and exit");
    }
    // The ones that cost on every kernel entry/exit or context switch.
    let costly = |n: &str, v: &str| {
        (n == "meltdown" && v.contains("PTI"))
            || (n == "spectre_v2"
                && (v.contains("IBRS") && !v.contains("eIBRS") && !v.contains("IBRS_FW")
                    || v.contains("Retpolines")
                    || v.contains("IBPB: always")))
            || (n == "mds" || n == "mmio_stale_data" || n == "tsx_async_abort")
                && v.contains("Clear CPU buffers")
            || (n == "l1tf" && v.contains("flush"))
            || (n == "retbleed" && (v.contains("untrained return thunk") || v.contains("IBRS")))
            || (n == "spec_rstack_overflow" && v.contains("Safe RET"))
            || (n == "gather_data_sampling" && v.contains("Microcode"))
    };
    let mut hit = Vec::new();
    for n in &names {
        if let Some(v) = root.read(&format!("{dir}/{n}")) {
            if v.starts_with("Mitigation") && costly(n, &v) {
                hit.push(n.clone());
            }
        }
    }
    let found = if hit.is_empty() {
        "no costly mitigation active".to_string()
    } else {
        format!("active: {}", hit.join(", "))
    };
    Check::new(
        "mitigations",
        title,
        if hit.is_empty() {
            Status::Ok
        } else {
            Status::Warn
        },
        found,
    )
    .why("these add work to kernel entry/exit and context switches (each IRQ, each wake-up)")
    .fix(format!(
        "only on machines that run trusted code: kernel parameter mitigations=off; {}",
        f.bootloader_hint()
    ))
    .param("mitigations=off")
}

pub(super) fn console(root: &Root, f: &Facts) -> Check {
    let title = "printk on a serial console";
    let serial: Vec<String> = f
        .cmdline
        .split_whitespace()
        .take_while(|w| *w != "--")
        .filter_map(|w| w.strip_prefix("console="))
        .filter(|c| {
            c.starts_with("ttyS")
                || c.starts_with("ttyAMA")
                || c.starts_with("ttymxc")
                || c.starts_with("ttyO")
        })
        .map(str::to_string)
        .collect();
    let level = root.read("/proc/sys/kernel/printk").and_then(|s| {
        s.split_whitespace()
            .next()
            .and_then(|v| v.parse::<i64>().ok())
    });
    let found = format!(
        "console={}; console loglevel {}",
        if serial.is_empty() {
            "no serial".into()
        } else {
            serial.join(",")
        },
        level.map_or("?".into(), |l| l.to_string())
    );
    let status = if !serial.is_empty() && level.is_none_or(|l| l > 3) {
        Status::Warn
    } else {
        Status::Ok
    };
    Check::new("console", title, status, found)
        .why("a kernel message to a serial console is written synchronously at ~10 µs per character, often with interrupts off")
        .fix("dmesg -n 1 (console loglevel 1), or drop console=ttyS* / boot with quiet loglevel=3")
        .cmd("dmesg -n 1")
        .param("loglevel=3")
}
