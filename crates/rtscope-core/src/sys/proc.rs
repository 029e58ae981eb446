//! Processes: identity (pid, tid, parent), `fork` / `_exit` / `waitpid` for the
//! children of `rtscope ipc`, and the supervision of background loads
//! (parent-death signal, child subreaper, reaping a process group), and
//! [`probe_in_child`] for instructions that may trap.

use std::io;

use super::retry_eintr;

/// The kernel thread id of the calling thread.
pub fn gettid() -> i32 {
    // SAFETY: gettid cannot fail.
    unsafe { libc::gettid() }
}

/// The calling process's id.
pub fn getpid() -> i32 {
    // SAFETY: getpid cannot fail.
    unsafe { libc::getpid() }
}

/// The parent's process id.
pub fn getppid() -> i32 {
    // SAFETY: getppid cannot fail.
    unsafe { libc::getppid() }
}

/// Asks the kernel to send `sig` to the calling process when the thread that
/// created it exits (`PR_SET_PDEATHSIG`).
pub fn set_parent_death_signal(sig: i32) -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes the calling process a child subreaper (`PR_SET_CHILD_SUBREAPER`):
/// orphaned descendants are re-parented to it, so it can reap them.
pub fn set_child_subreaper() -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reaps one exited child of process group `pgid` without blocking
/// (`waitpid(-pgid, WNOHANG)`). `Ok(Some(pid))`: one was reaped; `Ok(None)`:
/// members remain but none has exited; `Err` with ECHILD: no child in that group.
pub fn reap_group_nohang(pgid: i32) -> io::Result<Option<i32>> {
    if pgid <= 1 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut status = 0;
    // SAFETY: `status` is valid and writable; -pgid selects children of that group.
    let rc = unsafe { libc::waitpid(-pgid, &mut status, libc::WNOHANG) };
    match rc {
        r if r > 0 => Ok(Some(r)),
        0 => Ok(None),
        _ => Err(io::Error::last_os_error()),
    }
}

/// `fork()`: `Ok(0)` in the child, `Ok(pid)` in the parent.
///
/// Only the calling thread exists in the child: call it when no other thread
/// can hold a lock the child will need (glibc keeps malloc consistent across
/// fork; Rust's stdout lock and the like are not). The child must leave with
/// [`exit_now`], never by returning.
pub fn fork() -> io::Result<i32> {
    // SAFETY: fork itself has no preconditions; what the child may do afterwards
    // is the caller's contract above.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pid)
}

/// Ends the calling process at once (`_exit`): no destructor, no atexit handler,
/// no flush of buffers inherited from a parent.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit has no preconditions and does not return.
    unsafe { libc::_exit(code) }
}

/// How a reaped child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildExit {
    Code(i32),
    Signal(i32),
}

/// `waitpid(pid)`; with `block == false` returns `Ok(None)` while the child runs.
pub fn waitpid(pid: i32, block: bool) -> io::Result<Option<ChildExit>> {
    let mut status = 0;
    let flags = if block { 0 } else { libc::WNOHANG };
    // SAFETY: `status` is a valid, writable int.
    let rc = retry_eintr(|| unsafe { libc::waitpid(pid, &mut status, flags) })?;
    if rc == 0 {
        return Ok(None);
    }
    Ok(Some(if libc::WIFSIGNALED(status) {
        ChildExit::Signal(libc::WTERMSIG(status))
    } else {
        ChildExit::Code(libc::WEXITSTATUS(status))
    }))
}

/// Runs `probe` in a forked child and says how the child ended: `Code(n)` when
/// `probe` returned `n` (0..=255), `Signal(s)` when it was killed, e.g. by
/// `SIGILL` for an instruction that the CPU, the kernel or a hypervisor refuses
/// at user level. The caller learns whether the instruction traps without
/// risking its own process.
///
/// The child resets `SIGILL`/`SIGSEGV`/`SIGBUS` to their default action (a
/// handler inherited from the parent must not swallow the trap), dies with
/// the calling thread (`PR_SET_PDEATHSIG`), makes itself
/// non-dumpable with a zero core limit (an expected trap leaves no core file),
/// points its stderr at `/dev/null` (qemu would announce the trap there) and
/// leaves with `_exit`.
/// `probe` runs in a child of a possibly multi-threaded process: it must only
/// execute instructions (no allocation, no lock, no I/O).
pub fn probe_in_child(probe: fn() -> i32) -> io::Result<ChildExit> {
    let pid = fork()?;
    if pid == 0 {
        // SAFETY: in the forked child: signal() and prctl() are async-signal-safe
        // system calls with integer arguments; `probe` only executes instructions.
        unsafe {
            for sig in [libc::SIGILL, libc::SIGSEGV, libc::SIGBUS] {
                libc::signal(sig, libc::SIG_DFL);
            }
            libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong, 0, 0, 0);
            // A probe never outlives the thread that waits for it.
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            // No core file either where a user-mode emulator (qemu) dumps one itself.
            let no_core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            // An emulator reports the trap on stderr; the probe has nothing to say.
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
            if null >= 0 {
                libc::dup2(null, 2);
            }
        }
        exit_now(probe() & 0xff);
    }
    // A child that neither exits nor traps (seen under qemu user emulation:
    // a fork of a multi-threaded guest can deadlock inside the emulator) is
    // killed after PROBE_TIMEOUT and reported, never waited for for ever.
    let t0 = std::time::Instant::now();
    loop {
        if let Some(e) = waitpid(pid, false)? {
            return Ok(e);
        }
        if t0.elapsed() >= PROBE_TIMEOUT {
            let _ = super::kill(pid, libc::SIGKILL);
            let _ = waitpid(pid, true);
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the probe did not finish within 5 s (killed)",
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// How long [`probe_in_child`] waits for its child.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_in_child_reports_code_and_trap() {
        assert_eq!(probe_in_child(|| 7).unwrap(), ChildExit::Code(7));
        // A trapping instruction, portably: the child raises SIGILL itself.
        fn trap() -> i32 {
            // SAFETY: raise() is async-signal-safe; the child dies of it.
            unsafe { libc::raise(libc::SIGILL) };
            0
        }
        assert_eq!(
            probe_in_child(trap).unwrap(),
            ChildExit::Signal(libc::SIGILL)
        );
    }

    /// The probe's stderr is the null device (an emulator's trap message
    /// goes nowhere), and it dies with the thread that waits for it.
    #[test]
    fn the_probe_writes_to_nowhere() {
        fn probe() -> i32 {
            let mut buf = [0u8; 64];
            // SAFETY: readlink writes at most buf.len() bytes into `buf`.
            let n = unsafe {
                libc::readlink(
                    c"/proc/self/fd/2".as_ptr(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                )
            };
            if n < 0 || &buf[..n as usize] != b"/dev/null" {
                return 1;
            }
            let mut sig: libc::c_int = 0;
            // SAFETY: PR_GET_PDEATHSIG writes one int through the pointer.
            unsafe {
                libc::prctl(
                    libc::PR_GET_PDEATHSIG,
                    &mut sig as *mut libc::c_int,
                    0,
                    0,
                    0,
                )
            };
            i32::from(sig != libc::SIGKILL) * 2
        }
        assert_eq!(probe_in_child(probe).unwrap(), ChildExit::Code(0));
    }

    /// A probe that takes its time is waited for, not killed.
    #[test]
    fn a_slow_probe_is_waited_for() {
        fn slow() -> i32 {
            let _ = crate::sys::nanosleep(30_000_000);
            5
        }
        assert_eq!(probe_in_child(slow).unwrap(), ChildExit::Code(5));
    }

    #[test]
    fn ids_are_the_kernels() {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        // pid (comm) state ppid ...: comm may hold spaces, not ')'.
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let ppid: i32 = after.split(' ').nth(1).unwrap().parse().unwrap();
        assert_eq!(getppid(), ppid);
        assert_eq!(getpid(), std::process::id() as i32);
        let tid = std::thread::spawn(gettid).join().unwrap();
        assert_ne!(tid, getpid());
        assert!(std::path::Path::new(&format!("/proc/self/task/{}", gettid())).exists());
    }

    /// In a child (both settings are the whole process's): each setting is
    /// read back from the kernel; a signal number that is none is refused.
    #[test]
    fn parent_death_signal_and_subreaper_are_set() {
        fn probe() -> i32 {
            let get = |opt: libc::c_int| {
                let mut v: libc::c_int = -1;
                // SAFETY: the PR_GET_* options write one int through the pointer.
                unsafe { libc::prctl(opt, &mut v as *mut libc::c_int, 0, 0, 0) };
                v
            };
            if set_parent_death_signal(libc::SIGUSR1).is_err()
                || get(libc::PR_GET_PDEATHSIG) != libc::SIGUSR1
            {
                return 10;
            }
            if set_parent_death_signal(1000).is_ok() {
                return 11;
            }
            // qemu's user-mode emulation (the ARM tests in CI) refuses the
            // subreaper options: checked against the real kernel only.
            if !cfg!(target_arch = "x86_64") {
                return 0;
            }
            if get(libc::PR_GET_CHILD_SUBREAPER) != 0 {
                return 12;
            }
            if set_child_subreaper().is_err() || get(libc::PR_GET_CHILD_SUBREAPER) != 1 {
                return 13;
            }
            0
        }
        assert_eq!(probe_in_child(probe).unwrap(), ChildExit::Code(0));
    }

    /// Two children in a process group of their own: nothing to reap while
    /// they run; then each one's pid once it has died (the member's first,
    /// whose pid is not the group's), then no child in the group.
    #[test]
    fn a_process_group_is_reaped_one_member_at_a_time() {
        let spawn = |group: i32| {
            let pid = fork().unwrap();
            if pid == 0 {
                // SAFETY: in the forked child: prctl, setpgid and pause are
                // system calls. The child dies with the test's thread, should
                // the test fail before it kills it.
                unsafe {
                    libc::prctl(
                        libc::PR_SET_PDEATHSIG,
                        libc::SIGKILL as libc::c_ulong,
                        0,
                        0,
                        0,
                    );
                    libc::setpgid(0, group);
                    libc::pause();
                }
                exit_now(0);
            }
            // SAFETY: setpgid on our own child; it may have done it already.
            unsafe { libc::setpgid(pid, if group == 0 { pid } else { group }) };
            pid
        };
        let leader = spawn(0);
        let member = spawn(leader);
        assert_eq!(reap_group_nohang(leader).unwrap(), None);
        let reap = |pid: i32| {
            // The last one through its group.
            if pid == leader {
                crate::sys::killpg(leader, libc::SIGKILL).unwrap();
            } else {
                crate::sys::kill(pid, libc::SIGKILL).unwrap();
            }
            loop {
                if let Some(r) = reap_group_nohang(leader).unwrap() {
                    return r;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        };
        assert_eq!(reap(member), member);
        assert_eq!(reap(leader), leader);
        assert_eq!(
            reap_group_nohang(leader).unwrap_err().raw_os_error(),
            Some(libc::ECHILD)
        );
        for bad in [0, 1, -4] {
            assert_eq!(
                reap_group_nohang(bad).unwrap_err().raw_os_error(),
                Some(libc::EINVAL)
            );
        }
    }
}
