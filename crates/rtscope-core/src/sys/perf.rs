//! Perf events (aarch64 only): opening an event for the calling thread and
//! mapping its user page, so that the PMU cycle counter can be read from user
//! space (`PerfCycles` in `clock::arm`).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::mem::page_size;

/// `perf_event_open(2)` for the calling thread on any CPU, from the raw bytes
/// of a `struct perf_event_attr` (whose `size` field must be set).
pub fn perf_event_open_self(attr: &[u8]) -> io::Result<OwnedFd> {
    // SAFETY: `attr` points to a perf_event_attr of the size recorded in it, valid
    // for the call; pid 0 / cpu -1 / group -1 / flags CLOEXEC are plain integers.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr.as_ptr(),
            0 as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            8 as libc::c_ulong, // PERF_FLAG_FD_CLOEXEC
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the fd was just returned by the kernel and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// A read-only shared mapping of the first page of a file (the perf user page),
/// unmapped on drop.
#[derive(Debug)]
pub struct MappedPage {
    ptr: *const u8,
    len: usize,
}

// SAFETY: the mapping is read-only and lives until drop; reading it from any
// thread is memory-safe (what the values mean is the caller's business).
unsafe impl Send for MappedPage {}
// SAFETY: as above; only reads through a shared reference.
unsafe impl Sync for MappedPage {}

impl MappedPage {
    /// Maps one page of `fd` read-only and shared.
    pub fn map(fd: &OwnedFd) -> io::Result<Self> {
        let len = page_size();
        // SAFETY: a fresh mapping chosen by the kernel; fd is a valid descriptor.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(MappedPage {
            ptr: p as *const u8,
            len,
        })
    }

    /// Start of the mapping.
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }
}

impl Drop for MappedPage {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` describe a mapping created by `map` and unmapped once.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}
