//! Memory: locking the address space and prefaulting the stack before a
//! measurement, private anonymous mappings for the memory loads, and the
//! SIGSEGV handler that lets the fault load repair its own protection faults.

use std::io;

/// Locks all current and future pages of the process in memory.
pub fn mlockall() -> io::Result<()> {
    // SAFETY: plain syscall with constant flags.
    if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Undoes [`mlockall`].
pub fn munlockall() {
    // SAFETY: plain syscall without arguments.
    unsafe { libc::munlockall() };
}

/// The page size in bytes from `sysconf`.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions; on Linux _SC_PAGESIZE cannot fail.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// Touches `bytes` of stack so that the pages are faulted in (and locked, after
/// [`mlockall`]) before the measurement starts.
#[inline(never)]
pub fn prefault_stack(bytes: usize) {
    const CHUNK: usize = 16 * 1024;
    let buf = [0u8; CHUNK];
    std::hint::black_box(&buf);
    if bytes > CHUNK {
        prefault_stack(bytes - CHUNK);
    }
}

/// Page protection of an [`AnonMap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prot {
    /// No access: every touch faults (`PROT_NONE`).
    None,
    /// Read and write.
    ReadWrite,
}

impl Prot {
    fn raw(self) -> i32 {
        match self {
            Prot::None => libc::PROT_NONE,
            Prot::ReadWrite => libc::PROT_READ | libc::PROT_WRITE,
        }
    }
}

/// A private anonymous memory mapping, unmapped on drop.
///
/// Bytes are accessed with volatile reads and writes so that the compiler
/// neither removes nor merges them: the point is to make the kernel work.
#[derive(Debug)]
pub struct AnonMap {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone; the kernel object may be
// used from any thread.
unsafe impl Send for AnonMap {}

impl AnonMap {
    /// `mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS)`.
    pub fn new(len: usize, prot: Prot) -> io::Result<Self> {
        if len == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: a fresh anonymous mapping; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot.raw(),
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(AnonMap { ptr: p.cast(), len })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never: `new` refuses 0).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Start address (for a fault handler that must recognise the region).
    pub fn addr(&self) -> usize {
        self.ptr as usize
    }

    /// Changes the protection of `[offset, offset + len)` (page aligned).
    pub fn protect(&self, offset: usize, len: usize, prot: Prot) -> io::Result<()> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: the range lies inside this mapping (checked above).
        if unsafe { libc::mprotect(self.ptr.add(offset).cast(), len, prot.raw()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Volatile write of one byte at `offset` (ignored when out of range).
    ///
    /// On a `PROT_NONE` page the write faults; it completes only if a SIGSEGV
    /// handler (see [`install_fault_handler`]) makes the page writable.
    #[inline]
    pub fn write_byte(&self, offset: usize, v: u8) {
        if offset < self.len {
            // SAFETY: in range of a live mapping owned by `self`.
            unsafe { std::ptr::write_volatile(self.ptr.add(offset), v) };
        }
    }

    /// Volatile read of one byte at `offset` (0 when out of range).
    #[inline]
    pub fn read_byte(&self, offset: usize) -> u8 {
        if offset < self.len {
            // SAFETY: in range of a live, readable mapping owned by `self`.
            unsafe { std::ptr::read_volatile(self.ptr.add(offset)) }
        } else {
            0
        }
    }
}

impl Drop for AnonMap {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` describe a mapping created by `new` and unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// A SIGSEGV handler: called with the faulting address; returns true if it
/// repaired the fault (the faulting instruction is then retried).
pub type FaultHandler = fn(addr: usize) -> bool;

static FAULT_HANDLER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

extern "C" fn segv_trampoline(
    _sig: libc::c_int,
    info: *mut libc::siginfo_t,
    _ctx: *mut libc::c_void,
) {
    // SAFETY: the kernel passes a valid siginfo_t for SA_SIGINFO handlers, and
    // si_addr is the valid union member for SIGSEGV.
    let addr = unsafe { (*info).si_addr() } as usize;
    let h = FAULT_HANDLER.load(std::sync::atomic::Ordering::Acquire);
    if h != 0 {
        // SAFETY: FAULT_HANDLER only ever holds a `FaultHandler` stored by
        // install_fault_handler.
        let f: FaultHandler = unsafe { std::mem::transmute::<usize, FaultHandler>(h) };
        if f(addr) {
            return;
        }
    }
    // Not ours: restore the default action and return; the access faults
    // again and the process dies with SIGSEGV as it would have.
    // SAFETY: resetting a signal disposition to SIG_DFL is async-signal-safe.
    unsafe { libc::signal(libc::SIGSEGV, libc::SIG_DFL) };
}

/// Installs `handler` for SIGSEGV with `sigaction(SA_SIGINFO)`. The handler
/// runs in signal context: it may only do async-signal-safe work (atomics,
/// `mprotect` through [`mprotect_raw_rw`]).
pub fn install_fault_handler(handler: FaultHandler) -> io::Result<()> {
    FAULT_HANDLER.store(
        handler as *const () as usize,
        std::sync::atomic::Ordering::Release,
    );
    // SAFETY: sigaction is POD; zero is a valid start.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = segv_trampoline as *const () as usize;
    sa.sa_flags = libc::SA_SIGINFO;
    // SAFETY: `sa.sa_mask` is a valid sigset to initialise.
    unsafe { libc::sigemptyset(&mut sa.sa_mask) };
    // SAFETY: `sa` is fully initialised; the old-action pointer may be null.
    if unsafe { libc::sigaction(libc::SIGSEGV, &sa, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `mprotect` of one page at `page_addr` to read-write, for use inside a fault
/// handler (async-signal-safe: one syscall). Returns false on failure.
pub fn mprotect_raw_rw(page_addr: usize, len: usize) -> bool {
    // SAFETY: called from a fault handler with an address that the handler has
    // checked lies inside a mapping this process owns; mprotect on a mapped
    // range only changes its protection.
    unsafe {
        libc::mprotect(
            page_addr as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
        ) == 0
    }
}

/// Taken by the tests that lock the process's memory (one test's munlockall
/// must not undo another's mlockall while it looks) and by those that count
/// page faults (locked memory takes none).
#[cfg(test)]
pub(crate) static MLOCK_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Gives back the pages of the calling thread's stack from 64 KiB below
/// the caller's frame down `bytes` further, so that touching them faults
/// again: a test's thread may run on a stack the C library cached from an
/// earlier thread, already faulted in. The thread's stack must reach that far.
#[cfg(test)]
pub(crate) fn forget_stack_below(bytes: usize) {
    let here = 0u8;
    let ps = page_size();
    let top = (std::hint::black_box(&here) as *const u8 as usize - (64 << 10)) & !(ps - 1);
    let bottom = top - bytes;
    // SAFETY: the range lies in this thread's own stack, below every live
    // frame; MADV_DONTNEED only drops its pages (they read as zero again).
    let rc = unsafe { libc::madvise(bottom as *mut libc::c_void, bytes, libc::MADV_DONTNEED) };
    assert_eq!(rc, 0, "{}", io::Error::last_os_error());
}

/// Whether the kernel has a mapping at `addr` (`msync` succeeds; ENOMEM:
/// none), for a test's forked child, where no other thread can map the
/// address again. By system calls alone.
#[cfg(test)]
pub(crate) fn is_mapped(addr: usize) -> bool {
    // SAFETY: msync only looks the page up; it touches no memory.
    let rc = unsafe { libc::msync(addr as *mut libc::c_void, 1, libc::MS_ASYNC) };
    rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ENOMEM)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{probe_in_child, ChildExit};
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_mapping_reads_writes_and_refuses_what_is_outside_it() {
        assert_eq!(
            AnonMap::new(0, Prot::ReadWrite).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
        let ps = page_size();
        // SAFETY: sysconf has no preconditions.
        assert_eq!(ps as libc::c_long, unsafe {
            libc::sysconf(libc::_SC_PAGESIZE)
        });
        let m = AnonMap::new(3 * ps, Prot::ReadWrite).unwrap();
        assert_eq!(m.len(), 3 * ps);
        assert!(!m.is_empty());
        assert_eq!(m.addr() % ps, 0);
        assert_ne!(m.addr(), 0);
        m.write_byte(5, 42);
        m.write_byte(3 * ps - 1, 7);
        assert_eq!((m.read_byte(5), m.read_byte(3 * ps - 1)), (42, 7));
        // Out of range: ignored, and read as 0.
        m.write_byte(3 * ps, 9);
        assert_eq!(m.read_byte(3 * ps), 0);
        // The protection of a range inside the mapping, up to its very end.
        m.protect(ps, 2 * ps, Prot::None).unwrap();
        m.protect(ps, 2 * ps, Prot::ReadWrite).unwrap();
        assert_eq!(m.read_byte(3 * ps - 1), 7);
        for (off, len) in [(ps, 2 * ps + 1), (usize::MAX, 2)] {
            assert_eq!(
                m.protect(off, len, Prot::None).unwrap_err().raw_os_error(),
                Some(libc::EINVAL)
            );
        }
        // Not page aligned: the kernel's own refusal (qemu's user-mode
        // emulation, which runs the ARM tests in CI, lets it pass).
        if cfg!(target_arch = "x86_64") {
            assert!(m.protect(1, ps, Prot::None).is_err());
        }
    }

    /// In a child, where no other thread can map the address again: after
    /// the drop, the kernel knows no mapping there (msync: ENOMEM).
    #[test]
    fn the_mapping_is_gone_after_drop() {
        fn probe() -> i32 {
            let Ok(m) = AnonMap::new(page_size(), Prot::ReadWrite) else {
                return 10;
            };
            let addr = m.addr();
            if !is_mapped(addr) {
                return 11;
            }
            drop(m);
            // qemu-arm (the 32-bit ARM tests in CI) keeps the guest's address
            // space reserved: msync finds a mapping there after the unmap.
            if cfg!(target_pointer_width = "32") || !is_mapped(addr) {
                0
            } else {
                12
            }
        }
        assert_eq!(probe_in_child(probe).unwrap(), ChildExit::Code(0));
    }

    static REGION: AtomicUsize = AtomicUsize::new(0);
    static REPAIRED: AtomicUsize = AtomicUsize::new(0);

    fn repair(addr: usize) -> bool {
        let start = REGION.load(Ordering::Acquire);
        let ps = page_size();
        if addr < start || addr >= start + ps {
            return false;
        }
        REPAIRED.fetch_add(1, Ordering::Relaxed);
        mprotect_raw_rw(addr & !(ps - 1), ps)
    }

    /// In a child (the handler is the whole process's): a write to a
    /// PROT_NONE page faults, the handler makes the page writable, and the
    /// write completes; in another child, a fault outside the region kills
    /// the child with SIGSEGV, as if no handler were there.
    #[test]
    fn the_fault_handler_repairs_its_own_faults_only() {
        fn setup() -> Option<AnonMap> {
            let m = AnonMap::new(2 * page_size(), Prot::None).ok()?;
            REGION.store(m.addr(), Ordering::Release);
            install_fault_handler(repair).ok()?;
            Some(m)
        }
        fn repaired() -> i32 {
            let Some(m) = setup() else {
                return 10;
            };
            m.write_byte(3, 99);
            if m.read_byte(3) != 99 || REPAIRED.load(Ordering::Relaxed) != 1 {
                return 12;
            }
            0
        }
        fn not_ours() -> i32 {
            let Some(m) = setup() else {
                return 10;
            };
            // The second page is not the handler's: the child dies here.
            m.write_byte(page_size() + 1, 1);
            13
        }
        assert_eq!(probe_in_child(repaired).unwrap(), ChildExit::Code(0));
        assert_eq!(
            probe_in_child(not_ours).unwrap(),
            ChildExit::Signal(libc::SIGSEGV)
        );
        assert!(!mprotect_raw_rw(1, page_size()));
    }

    #[test]
    fn memory_can_be_locked_and_unlocked() {
        if crate::sys::geteuid() != 0 {
            return;
        }
        let _one_at_a_time = MLOCK_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let locked = || {
            let s = std::fs::read_to_string("/proc/self/status").unwrap();
            s.lines()
                .find_map(|l| l.strip_prefix("VmLck:"))
                .map(|v| v.split_whitespace().next().unwrap().parse::<u64>().unwrap())
                .unwrap()
        };
        mlockall().unwrap();
        let during = locked();
        munlockall();
        let after = locked();
        assert!(during > 0, "VmLck {during} kB");
        assert_eq!(after, 0);
    }

    /// A fresh thread's stack is faulted in as far as asked.
    #[test]
    fn prefaulting_touches_the_stack() {
        // Not while another test has memory locked: under MCL_FUTURE a new
        // thread's stack is faulted in whole when it is mapped.
        let _one_at_a_time = MLOCK_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let minflt = || {
            // SAFETY: rusage is POD; getrusage fills it.
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
            ru.ru_minflt
        };
        let faults = std::thread::Builder::new()
            .stack_size(4 << 20)
            .spawn(move || {
                forget_stack_below(2 << 20);
                let before = minflt();
                prefault_stack(1 << 20);
                minflt() - before
            })
            .unwrap()
            .join()
            .unwrap();
        // 1 MiB is 256 pages of 4 KiB (fewer, larger pages elsewhere).
        assert!(
            faults as usize >= (1 << 20) / page_size() / 2,
            "{faults} faults"
        );
    }
}
