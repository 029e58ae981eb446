//! `cmd:'...'`: any external command, run with `sh -c` inside the worker's
//! process group. When it ends before the load is stopped it is started again
//! (a compile that finishes early keeps loading the machine), unless it failed
//! within its first second (a typo should not spin). On stop the whole group
//! gets SIGTERM; the supervisor SIGKILLs and reaps whatever is left.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use rtscope_core::sys;

use super::Ctx;

pub const COUNTERS: &[&str] = &["runs", "failed_runs"];

pub fn run(ctx: &Ctx) -> anyhow::Result<()> {
    let cmd = ctx
        .spec
        .command
        .clone()
        .ok_or_else(|| anyhow!("no command"))?;
    while !ctx.stopped() {
        let started = Instant::now();
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(&cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start /bin/sh")?;
        ctx.add(0, 1);
        loop {
            if ctx.stopped() {
                // The whole group, this worker included (it only raises the flag again).
                let _ = sys::killpg(sys::getpid(), libc::SIGTERM);
                let deadline = Instant::now() + Duration::from_millis(1500);
                while Instant::now() < deadline {
                    if child.try_wait()?.is_some() {
                        return Ok(());
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                let _ = child.kill();
                let _ = child.wait();
                return Ok(());
            }
            if let Some(status) = child.try_wait()? {
                if !status.success() {
                    ctx.add(1, 1);
                    if started.elapsed() < Duration::from_secs(1) {
                        return Err(anyhow!("'{cmd}' failed at once ({status})"));
                    }
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    Ok(())
}
