//! Device interrupts: which land on the measured CPUs, and irqbalance.

use super::*;

/// IRQs (number, name, affinity) whose affinity includes any of `cpus`.
pub fn irqs_on(root: &Root, cpus: &[usize]) -> Vec<(u64, String, Vec<usize>)> {
    let names = irq_names(root);
    let mut v = Vec::new();
    for n in root.numeric_entries("/proc/irq") {
        let eff = root.read(&format!("/proc/irq/{n}/effective_affinity_list"));
        let aff = root.read(&format!("/proc/irq/{n}/smp_affinity_list"));
        let Some(a) = eff.or(aff) else { continue };
        let set = cpus_of(Some(&a));
        if set.iter().any(|c| cpus.contains(c)) {
            v.push((n, names.get(&n).cloned().unwrap_or_default(), set));
        }
    }
    v
}

/// IRQ number -> device name, from `/proc/interrupts`.
pub fn irq_names(root: &Root) -> BTreeMap<u64, String> {
    let text = root.read_raw("/proc/interrupts").unwrap_or_default();
    let mut m = BTreeMap::new();
    for l in text.lines().skip(1) {
        let Some((k, rest)) = l.split_once(':') else {
            continue;
        };
        if let Ok(n) = k.trim().parse::<u64>() {
            let name = rest.split_whitespace().last().unwrap_or("").to_string();
            m.insert(n, name);
        }
    }
    m
}

pub(super) fn irq_affinity(root: &Root, f: &Facts) -> Check {
    let title = "device IRQs on the RT CPUs";
    if f.targets.is_empty() {
        return Check::new(
            "irq-affinity",
            title,
            Status::Na,
            "no RT CPUs named (--cpus) or isolated".into(),
        )
        .why("every device interrupt that may land on an RT CPU preempts the RT task");
    }
    if !root.exists("/proc/irq") {
        return Check::new(
            "irq-affinity",
            title,
            Status::Na,
            "/proc/irq not readable".into(),
        )
        .why("every device interrupt that may land on an RT CPU preempts the RT task");
    }
    let irqs = irqs_on(root, &f.targets);
    let hk = housekeeping(f);
    let found = if irqs.is_empty() {
        format!("no device IRQ may run on CPUs {}", list(&f.targets))
    } else {
        let shown: Vec<String> = irqs
            .iter()
            .take(6)
            .map(|(n, name, _)| {
                if name.is_empty() {
                    n.to_string()
                } else {
                    format!("{n} {name}")
                }
            })
            .collect();
        format!(
            "{} IRQs may run on CPUs {} ({}{})",
            irqs.len(),
            list(&f.targets),
            shown.join(", "),
            if irqs.len() > 6 { ", ..." } else { "" }
        )
    };
    let mut c = Check::new(
        "irq-affinity",
        title,
        if irqs.is_empty() {
            Status::Ok
        } else {
            Status::Warn
        },
        found,
    )
    .why("every device interrupt that may land on an RT CPU preempts the RT task");
    if !irqs.is_empty() && !hk.is_empty() {
        let l = list(&hk);
        c = c.fix(format!(
            "for i in /proc/irq/[0-9]*; do echo {l} > $i/smp_affinity_list; done (managed IRQs refuse: boot with isolcpus=managed_irq,...)"
        ));
        c = c.cmd(format!(
            "for i in /proc/irq/[0-9]*; do echo {l} > \"$i/smp_affinity_list\" 2>/dev/null || echo \"IRQ ${{i##*/}}: affinity not changeable\"; done"
        ));
        c = c.cmd(format!(
            "echo {} > /proc/irq/default_smp_affinity",
            hex_mask(&hk)
        ));
    }
    c
}

pub(super) fn irqbalance(root: &Root, f: &Facts) -> Check {
    let title = "irqbalance daemon";
    let running = processes(root).iter().any(|(_, c)| c == "irqbalance");
    if !running {
        return Check::new("irqbalance", title, Status::Ok, "not running".into())
            .why("irqbalance moves device interrupts, possibly onto RT CPUs");
    }
    let banned = root
        .read_raw("/etc/default/irqbalance")
        .or_else(|| root.read_raw("/etc/sysconfig/irqbalance"))
        .unwrap_or_default()
        .lines()
        .any(|l| l.trim_start().starts_with("IRQBALANCE_BANNED_CPULIST"));
    let c = Check::new(
        "irqbalance",
        title,
        if banned && !f.targets.is_empty() {
            Status::Ok
        } else {
            Status::Warn
        },
        format!(
            "running{}",
            if banned {
                " with IRQBALANCE_BANNED_CPULIST set"
            } else {
                ", no banned CPU list"
            }
        ),
    )
    .why("irqbalance moves device interrupts, possibly onto RT CPUs (it honours isolcpus only for domain isolation)");
    if f.targets.is_empty() {
        c.fix("systemctl disable --now irqbalance, or set IRQBALANCE_BANNED_CPULIST to the RT CPUs")
            .cmd("systemctl disable --now irqbalance")
    } else {
        let l = list(&f.targets);
        c.fix(format!("IRQBALANCE_BANNED_CPULIST={l} in /etc/default/irqbalance, then systemctl restart irqbalance"))
            .cmd(format!("echo 'IRQBALANCE_BANNED_CPULIST={l}' >> /etc/default/irqbalance"))
            .cmd("systemctl restart irqbalance")
    }
}
