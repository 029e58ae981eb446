//! Processes: identity (pid, tid, parent), `fork` / `_exit` / `waitpid` for the
//! children of `rtscope ipc`, and the supervision of background loads
//! (parent-death signal, child subreaper, reaping a process group).

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
