//! Mounting and unmounting tracefs, for the private trace instances of
//! [`crate::trace`]: when no tracefs is mounted, rtscope mounts one in a
//! temporary directory of its own (a mount of the same kernel tracefs; it
//! changes no tracing setting) and unmounts it when done.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn cpath(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// `mount -t tracefs nodev DIR`.
pub fn mount_tracefs(dir: &Path) -> io::Result<()> {
    let target = cpath(dir)?;
    let fstype = c"tracefs";
    let source = c"nodev";
    // SAFETY: every pointer is a valid NUL-terminated string; data may be null.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Unmounts `dir` (lazily: a reader still holding a file there does not keep it busy).
pub fn unmount(dir: &Path) -> io::Result<()> {
    let target = cpath(dir)?;
    // SAFETY: `target` is a valid NUL-terminated string.
    let rc = unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether a process with this pid exists (`kill(pid, 0)`; EPERM counts as alive).
pub fn pid_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Points the open descriptor `fd` at `/dev/null` (`dup2`), so that the file
/// it had open (a trace instance's `trace_pipe_raw`, which keeps the
/// instance busy) is closed while the number stays taken: whoever still holds
/// `fd` reads end-of-file, and no other file can be opened under it.
pub fn detach_fd(fd: std::os::fd::RawFd) -> io::Result<()> {
    let null = std::fs::File::open("/dev/null")?;
    use std::os::fd::AsRawFd;
    // SAFETY: both are open descriptors; dup2 closes `fd`'s file and makes it
    // a copy of `null` atomically. `null` is closed on return, its copy stays.
    let rc = unsafe { libc::dup2(null.as_raw_fd(), fd) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Takes an exclusive `flock` on `file` without waiting: `Ok(false)` when
/// another open file description holds it (the kernel drops it when the
/// holder's process ends, however it ends).
pub fn try_lock_exclusive(file: &std::fs::File) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: `file` is an open descriptor; flock takes no pointer.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}
