//! Perf events (used on aarch64 only): opening an event for the calling thread and
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{probe_in_child, ChildExit};

    /// `struct perf_event_attr` (its first 64 bytes, PERF_ATTR_SIZE_VER0) for
    /// the software task clock of the calling thread.
    fn task_clock_attr() -> [u8; 64] {
        let mut a = [0u8; 64];
        a[0..4].copy_from_slice(&1u32.to_ne_bytes()); // PERF_TYPE_SOFTWARE
        a[4..8].copy_from_slice(&64u32.to_ne_bytes()); // size
        a[8..16].copy_from_slice(&1u64.to_ne_bytes()); // PERF_COUNT_SW_TASK_CLOCK
        a
    }

    /// Opened for this thread on any CPU (pid 0, cpu -1, no group): pinned
    /// to CPU 0, the thread's busy time is counted; the descriptor is
    /// close-on-exec; its first page maps and reads, and is unmapped on drop.
    #[test]
    fn a_software_event_counts_this_thread() {
        let r = std::thread::spawn(|| {
            crate::sys::set_affinity(&[0]).unwrap();
            let fd = perf_event_open_self(&task_clock_attr())?;
            let t0 = crate::sys::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
            while crate::sys::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID) < t0 + 2_000_000 {}
            let mut n = [0u8; 8];
            // SAFETY: reads 8 bytes into `n`.
            let got = unsafe { libc::read(fd.as_raw_fd(), n.as_mut_ptr().cast(), 8) };
            assert_eq!(got, 8);
            // SAFETY: F_GETFD takes no argument.
            let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFD) };
            Ok::<_, io::Error>((fd, u64::from_ne_bytes(n), flags))
        })
        .join()
        .unwrap();
        let (fd, ns, flags) = match r {
            Ok(v) => v,
            // qemu's user-mode emulation (the ARM CI) may not pass the call on.
            Err(e) if !cfg!(target_arch = "x86_64") && e.raw_os_error() == Some(libc::ENOSYS) => {
                eprintln!("skipped: {e}");
                return;
            }
            Err(e) => panic!("perf_event_open: {e}"),
        };
        assert!(ns >= 2_000_000, "task clock {ns} ns after 2 ms of work");
        assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
        let page = MappedPage::map(&fd).unwrap();
        // perf_event_mmap_page: the kernel sets `size` (a u32 at byte 72, the
        // page's used part) and `cap_bit0_is_deprecated` (bit 1 of the u64
        // at byte 40) when it maps the page.
        // SAFETY: the page is mapped and readable; both fields are aligned.
        let (size, caps) = unsafe {
            (
                std::ptr::read_volatile(page.as_ptr().add(72).cast::<u32>()),
                std::ptr::read_volatile(page.as_ptr().add(40).cast::<u64>()),
            )
        };
        assert!(size > 72 && (size as usize) < page_size(), "size {size}");
        assert_eq!(caps & 2, 2, "capabilities {caps:#x}");
        // Not a perf event: nothing to map.
        assert!(MappedPage::map(&std::fs::File::open("/proc/self/stat").unwrap().into()).is_err());
        assert!(perf_event_open_self(&[0u8; 64]).is_err());
    }

    /// In a child with its standard input closed: the event may get
    /// descriptor 0.
    #[test]
    fn descriptor_zero_is_an_event_too() {
        fn probe() -> i32 {
            // SAFETY: closing this child's standard input.
            unsafe { libc::close(0) };
            match perf_event_open_self(&task_clock_attr()) {
                Ok(fd) if fd.as_raw_fd() == 0 => 0,
                Ok(_) => 10,
                // As in the test above: qemu may not pass the call on.
                Err(e)
                    if !cfg!(target_arch = "x86_64") && e.raw_os_error() == Some(libc::ENOSYS) =>
                {
                    0
                }
                Err(_) => 11,
            }
        }
        assert_eq!(probe_in_child(probe).unwrap(), ChildExit::Code(0));
    }

    /// In a child, where no other thread maps anything: the page is gone
    /// after the drop (msync: ENOMEM).
    #[test]
    fn the_page_is_unmapped_on_drop() {
        fn probe() -> i32 {
            let Ok(fd) = perf_event_open_self(&task_clock_attr()) else {
                return 0;
            };
            let Ok(page) = MappedPage::map(&fd) else {
                return 10;
            };
            let addr = page.as_ptr() as usize;
            drop(page);
            // qemu-arm keeps the guest's address space reserved (see the
            // AnonMap test).
            if cfg!(target_pointer_width = "32") || !crate::sys::mem::is_mapped(addr) {
                0
            } else {
                11
            }
        }
        assert_eq!(probe_in_child(probe).unwrap(), ChildExit::Code(0));
    }
}
