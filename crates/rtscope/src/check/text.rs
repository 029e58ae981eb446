//! `rtscope check`'s text: one line per check, then the totals.

use super::{CheckReport, Status};
use crate::output::printable;

/// The audit as text: `STATUS id  found — why. fix: ...`, one line each.
pub fn text(r: &CheckReport) -> String {
    let mut s = format!(
        "rtscope check: kernel {} ({}{}), {}, CPUs {}, RT CPUs {}{}\n",
        printable(&r.kernel.release),
        r.kernel.preemption_model,
        r.kernel
            .preempt_dynamic_mode
            .as_deref()
            .map(|m| format!(" mode {m}"))
            .unwrap_or_default(),
        r.arch,
        r.online_cpus,
        if r.target_cpus.is_empty() {
            "-".to_string()
        } else {
            rtscope_core::units::format_cpu_list(&r.target_cpus)
        },
        if r.target_source == "none" {
            String::new()
        } else {
            format!(" ({})", r.target_source)
        }
    );
    if r.root != "/" {
        s.push_str(&format!("root: {}\n", printable(&r.root)));
    }
    let w = r.checks.iter().map(|c| c.id.len()).max().unwrap_or(8);
    for c in &r.checks {
        let mut line = format!(
            "{:<4}  {:<w$}  {} — {}",
            c.status.name(),
            c.id,
            printable(&c.found),
            c.why
        );
        if let Some(m) = &c.measured {
            line.push_str(&format!(" [measured: {}]", printable(m)));
        }
        if let (Some(f), Status::Warn | Status::Fail) = (&c.fix, c.status) {
            line.push_str(&format!(" → fix: {f}"));
        }
        s.push_str(&line);
        s.push('\n');
    }
    s.push_str(&format!(
        "{} ok, {} warn, {} fail, {} n/a (exit {})\n",
        r.summary.ok, r.summary.warn, r.summary.fail, r.summary.na, r.exit_code
    ));
    s
}
