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
