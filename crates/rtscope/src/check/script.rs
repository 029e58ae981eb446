//! `--fix-script FILE`: the suggested fixes as a shell script for a person to
//! review and run. rtscope never runs it. Runtime fixes are commands (each
//! behind its check's comment); boot-time fixes are kernel parameters,
//! listed as comments because where they go depends on the boot loader.

use std::io::Write;
use std::path::Path;

use super::checks::Status;
use super::{CheckReport, Facts};

/// The script's text.
pub fn render(rep: &CheckReport, facts: &Facts) -> String {
    let mut s = String::new();
    s.push_str("#!/bin/sh\n");
    s.push_str(
        "# Written by `rtscope check --fix-script`: the fixes it suggests for this machine.\n",
    );
    s.push_str("# REVIEW EVERY LINE BEFORE RUNNING IT. rtscope has changed nothing.\n");
    s.push_str(&format!(
        "# Kernel {} ({}), {}, CPUs {}, RT CPUs: {} ({}).\n",
        rep.kernel.release,
        rep.kernel.preemption_model,
        rep.arch,
        rep.online_cpus,
        facts.targets_text(),
        facts.targets_from
    ));
    s.push_str("# Runtime settings below last until reboot; persist sysctls in /etc/sysctl.d/.\n");
    s.push_str("set -u\n");
    let mut params: Vec<String> = Vec::new();
    let mut any = false;
    for c in &rep.checks {
        if !matches!(c.status, Status::Warn | Status::Fail) {
            continue;
        }
        for p in &c.kernel_params {
            let key = p.split('=').next().unwrap_or(p);
            if !params.iter().any(|q| q.split('=').next() == Some(key)) {
                params.push(p.clone());
            }
        }
        if c.commands.is_empty() {
            continue;
        }
        any = true;
        s.push_str(&format!(
            "\n# [{}] {}: {}\n#   {}\n",
            c.status.name(),
            c.id,
            one_line(&c.found),
            one_line(&c.why)
        ));
        for cmd in &c.commands {
            s.push_str(cmd);
            s.push('\n');
        }
    }
    if !any {
        s.push_str("\n# No runtime fix to apply.\n");
    }
    if params.is_empty() {
        s.push_str("\n# No kernel parameter to add.\n");
    } else {
        s.push_str("\n# Boot-time fixes: kernel parameters (not applied by this script).\n");
        s.push_str(&format!("#   {}\n", facts.bootloader_hint()));
        s.push_str(&format!("#   {}\n", params.join(" ")));
    }
    s.push_str("\necho 'done: run rtscope check again to see the result'\n");
    s
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// Writes the script, executable where the umask lets it be read (0777
/// less the umask: 0755 under 022, 0700 under 077). A script written over
/// keeps its mode (never widened: an 0600 one stays closed to others),
/// with its owner's execute bit.
pub fn write(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = match std::fs::metadata(path) {
        Ok(m) if m.is_file() => (m.permissions().mode() & 0o777) | 0o100,
        _ => 0o777,
    };
    rtscope_core::file::write_atomic_mode(path, text.as_bytes(), mode)?;
    let _ = std::io::stdout().flush();
    Ok(())
}
