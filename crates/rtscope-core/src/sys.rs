//! Every `unsafe` libc call rtscope makes, each wrapped exactly once.
//!
//! The rest of the crate (and the binary) calls these safe wrappers. Keeping the
//! `unsafe` surface in one module makes it reviewable: each function documents
//! why the call is sound. The functions used on the measurement hot path
//! ([`clock_ns`], [`sleep_until`], [`sleep_for`], [`timerfd_wait`],
//! [`sigwait_one`]) perform exactly one libc call and never allocate.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A POSIX clock id (`CLOCK_MONOTONIC`, `CLOCK_REALTIME`, ...).
pub type ClockId = libc::clockid_t;

const NS_PER_SEC: u64 = 1_000_000_000;

#[inline]
fn ts_to_ns(ts: &libc::timespec) -> u64 {
    (ts.tv_sec as u64)
        .wrapping_mul(NS_PER_SEC)
        .wrapping_add(ts.tv_nsec as u64)
}

#[inline]
fn ns_to_ts(ns: u64) -> libc::timespec {
    // SAFETY: timespec is plain old data; all-zero is a valid value.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    ts.tv_sec = (ns / NS_PER_SEC) as libc::time_t;
    ts.tv_nsec = (ns % NS_PER_SEC) as _;
    ts
}

/// Reads `clock` in nanoseconds (through the vDSO where the kernel offers it).
#[inline]
pub fn clock_ns(clock: ClockId) -> u64 {
    // SAFETY: timespec is POD; clock_gettime writes it fully or fails.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts_to_ns(&ts)
}

/// Resolution of `clock` in nanoseconds, as `clock_getres` reports it.
pub fn clock_res_ns(clock: ClockId) -> io::Result<u64> {
    // SAFETY: as in `clock_ns`.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `ts` is valid and writable.
    if unsafe { libc::clock_getres(clock, &mut ts) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ts_to_ns(&ts))
}

/// Sleeps until the absolute time `deadline_ns` on `clock` (`TIMER_ABSTIME`).
/// Restarts transparently after a signal interrupted the sleep.
#[inline]
pub fn sleep_until(clock: ClockId, deadline_ns: u64) -> io::Result<()> {
    let ts = ns_to_ts(deadline_ns);
    loop {
        // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null.
        let rc =
            unsafe { libc::clock_nanosleep(clock, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
        match rc {
            0 => return Ok(()),
            libc::EINTR => continue,
            e => return Err(io::Error::from_raw_os_error(e)),
        }
    }
}

/// Sleeps `ns` relative to now on `clock` (`clock_nanosleep` without `TIMER_ABSTIME`).
/// An interrupted sleep returns early (like cyclictest's relative mode).
#[inline]
pub fn sleep_for(clock: ClockId, ns: u64) -> io::Result<()> {
    let ts = ns_to_ts(ns);
    // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null.
    match unsafe { libc::clock_nanosleep(clock, 0, &ts, std::ptr::null_mut()) } {
        0 | libc::EINTR => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// `nanosleep(2)` for `ns` (always measured against CLOCK_MONOTONIC by the kernel).
#[inline]
pub fn nanosleep(ns: u64) -> io::Result<()> {
    let ts = ns_to_ts(ns);
    // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null.
    if unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) } != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
    Ok(())
}

/// Creates a timerfd on `clock` that first expires at absolute `first_ns` and then
/// every `period_ns`.
pub fn timerfd_periodic(clock: ClockId, first_ns: u64, period_ns: u64) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with constant flags.
    let fd = unsafe { libc::timerfd_create(clock, libc::TFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by timerfd_create and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let spec = libc::itimerspec {
        it_interval: ns_to_ts(period_ns),
        it_value: ns_to_ts(first_ns),
    };
    // SAFETY: `fd` is a valid timerfd and `spec` a valid itimerspec.
    let rc = unsafe {
        libc::timerfd_settime(
            fd.as_raw_fd(),
            libc::TFD_TIMER_ABSTIME,
            &spec,
            std::ptr::null_mut(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// Blocks on a timerfd until it expires; returns the number of expirations.
#[inline]
pub fn timerfd_wait(fd: &OwnedFd) -> io::Result<u64> {
    let mut n: u64 = 0;
    loop {
        // SAFETY: reading 8 bytes into a valid, aligned u64.
        let rc = unsafe { libc::read(fd.as_raw_fd(), (&mut n as *mut u64).cast(), 8) };
        if rc == 8 {
            return Ok(n);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// A POSIX interval timer that delivers `signo` to one thread (`SIGEV_THREAD_ID`).
/// Deleted on drop.
#[derive(Debug)]
pub struct ThreadTimer {
    id: libc::timer_t,
}

// SAFETY: a timer_t is a kernel handle; it may be used and deleted from any thread.
unsafe impl Send for ThreadTimer {}

impl ThreadTimer {
    /// Creates a timer on `clock` that signals `signo` to thread `tid`, first at absolute
    /// `first_ns`, then every `period_ns`.
    pub fn periodic(
        clock: ClockId,
        signo: i32,
        tid: i32,
        first_ns: u64,
        period_ns: u64,
    ) -> io::Result<Self> {
        // SAFETY: sigevent is POD; zero is a valid starting value.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = signo;
        sev.sigev_notify_thread_id = tid;
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: `sev` and `id` are valid for the call.
        if unsafe { libc::timer_create(clock, &mut sev, &mut id) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let timer = ThreadTimer { id };
        let spec = libc::itimerspec {
            it_interval: ns_to_ts(period_ns),
            it_value: ns_to_ts(first_ns),
        };
        // SAFETY: `id` is a live timer; `spec` is valid.
        let rc = unsafe {
            libc::timer_settime(timer.id, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(timer)
    }
}

impl Drop for ThreadTimer {
    fn drop(&mut self) {
        // SAFETY: `id` is a live timer created by timer_create and deleted once.
        unsafe { libc::timer_delete(self.id) };
    }
}

/// A signal set holding one signal.
pub fn sigset_of(signals: &[i32]) -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set; sigaddset only adds valid numbers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Waits for one of the signals in `set` (which must be blocked in this thread).
/// Returns the timer overrun count the kernel reports with the signal (0 for
/// signals that do not come from a POSIX timer).
#[inline]
pub fn sigwait_one(set: &libc::sigset_t) -> io::Result<u32> {
    // SAFETY: siginfo_t is POD; sigwaitinfo fills it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `set` is an initialised sigset; `info` is valid and writable.
        let rc = unsafe { libc::sigwaitinfo(set, &mut info) };
        if rc >= 0 {
            let overrun = if info.si_code == libc::SI_TIMER {
                // SAFETY: si_code says the timer member of the union is valid.
                unsafe { info.si_overrun() }
            } else {
                0
            };
            return Ok(overrun.max(0) as u32);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// Blocks `signals` in the calling thread (`pthread_sigmask(SIG_BLOCK)`).
pub fn block_signals(signals: &[i32]) -> io::Result<()> {
    let set = sigset_of(signals);
    // SAFETY: `set` is initialised; the old-set pointer may be null.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// The kernel thread id of the calling thread.
pub fn gettid() -> i32 {
    // SAFETY: gettid cannot fail.
    unsafe { libc::gettid() }
}

/// The CPU the calling thread runs on (glibc reads it from rseq or the vDSO).
#[inline]
pub fn current_cpu() -> i32 {
    // SAFETY: sched_getcpu has no preconditions.
    unsafe { libc::sched_getcpu() }
}

/// Sets the scheduling policy and priority of the calling thread.
pub fn set_scheduler(policy: i32, priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pid 0 names the calling thread; `param` is valid.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The policy and priority of the calling thread.
pub fn get_scheduler() -> io::Result<(i32, i32)> {
    // SAFETY: pid 0 names the calling thread.
    let policy = unsafe { libc::sched_getscheduler(0) };
    if policy < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is valid and writable.
    if unsafe { libc::sched_getparam(0, &mut param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((policy & !libc::SCHED_RESET_ON_FORK, param.sched_priority))
}

/// Pins the calling thread to `cpus`.
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: cpu_set_t is POD; CPU_ZERO/CPU_SET only touch the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for &c in cpus {
            if c >= libc::CPU_SETSIZE as usize {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

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

/// Sets the calling thread's timer slack in ns (`PR_SET_TIMERSLACK`).
pub fn set_timer_slack(ns: u64) -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's effective timer slack in ns (`PR_GET_TIMERSLACK`).
pub fn timer_slack() -> u64 {
    // SAFETY: prctl with integer arguments only.
    let rc = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    rc.max(0) as u64
}

fn rlimit(resource: libc::__rlimit_resource_t) -> (u64, u64) {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `rl` is valid and writable.
    unsafe { libc::getrlimit(resource, &mut rl) };
    // rlim_t is 32 bits wide on 32-bit ARM, 64 bits elsewhere; RLIM_INFINITY maps to u64::MAX.
    #[allow(clippy::unnecessary_cast)]
    let conv = |v: libc::rlim_t| {
        if v == libc::RLIM_INFINITY {
            u64::MAX
        } else {
            v as u64
        }
    };
    (conv(rl.rlim_cur), conv(rl.rlim_max))
}

/// `RLIMIT_RTPRIO` as (soft, hard); `u64::MAX` means unlimited.
pub fn rlimit_rtprio() -> (u64, u64) {
    rlimit(libc::RLIMIT_RTPRIO)
}

/// `RLIMIT_MEMLOCK` in bytes as (soft, hard); `u64::MAX` means unlimited.
pub fn rlimit_memlock() -> (u64, u64) {
    rlimit(libc::RLIMIT_MEMLOCK)
}

/// The effective user id.
pub fn geteuid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

/// Kernel name and release from `uname(2)`: (sysname, release, version, machine).
pub fn uname() -> (String, String, String, String) {
    // SAFETY: utsname is POD; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is valid and writable.
    unsafe { libc::uname(&mut u) };
    // c_char is i8 on x86-64 and u8 on ARM.
    #[allow(clippy::unnecessary_cast)]
    fn s(f: &[libc::c_char]) -> String {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
    (s(&u.sysname), s(&u.release), s(&u.version), s(&u.machine))
}

/// The page size in bytes from `sysconf`.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
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

/// Sends `sig` to process `pid`.
pub fn kill(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: plain syscall with integer arguments.
    if unsafe { libc::kill(pid, sig) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// CPU time consumed by the whole process so far, in ns (`CLOCK_PROCESS_CPUTIME_ID`).
pub fn process_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

// ---------------------------------------------------------------------------
// Process supervision and memory mappings, used by background loads.

/// Unblocks `signals` in the calling thread (`pthread_sigmask(SIG_UNBLOCK)`).
pub fn unblock_signals(signals: &[i32]) -> io::Result<()> {
    let set = sigset_of(signals);
    // SAFETY: `set` is initialised; the old-set pointer may be null.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
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

/// The parent's process id.
pub fn getppid() -> i32 {
    // SAFETY: getppid cannot fail.
    unsafe { libc::getppid() }
}

/// The calling process's id.
pub fn getpid() -> i32 {
    // SAFETY: getpid cannot fail.
    unsafe { libc::getpid() }
}

/// Sends `sig` to every process of process group `pgid`.
pub fn killpg(pgid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: plain syscall with integer arguments; pgid > 1 is checked so that
    // a bad value can never signal our own group (0) or every process (-1 / 1).
    if pgid <= 1 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    if unsafe { libc::killpg(pgid, sig) } != 0 {
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

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`), the unit of `/proc/PID/stat` times.
pub fn clock_ticks_per_sec() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if n > 0 {
        n as u64
    } else {
        100
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

/// A pipe: (read end, write end), both close-on-exec.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `gettimeofday(2)` as ns since the epoch (microsecond resolution).
#[inline]
pub fn gettimeofday_ns() -> u64 {
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    // SAFETY: `tv` is a valid, writable timeval; the timezone pointer may be null.
    unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
    (tv.tv_sec as u64)
        .wrapping_mul(NS_PER_SEC)
        .wrapping_add((tv.tv_usec as u64).wrapping_mul(1000))
}

/// Reads `clock` through the raw `clock_gettime` system call, bypassing the
/// vDSO: what reading the clock costs when the kernel has to be entered.
#[inline]
pub fn clock_ns_syscall(clock: ClockId) -> u64 {
    // SAFETY: timespec is POD.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: SYS_clock_gettime takes (clockid_t, struct timespec *); `ts` is valid
    // and writable for the duration of the call.
    unsafe {
        libc::syscall(
            libc::SYS_clock_gettime,
            clock as libc::c_long,
            &mut ts as *mut libc::timespec,
        )
    };
    ts_to_ns(&ts)
}

/// Whether reading `clock` works on this kernel (`clock_gettime` returns 0).
pub fn clock_works(clock: ClockId) -> bool {
    // SAFETY: as in `clock_ns`.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `ts` is valid and writable.
    unsafe { libc::clock_gettime(clock, &mut ts) == 0 }
}

/// Whether the `rdtsc` instruction may be executed by this process
/// (`prctl(PR_GET_TSC)`; a process can be set up so that it faults).
#[cfg(target_arch = "x86_64")]
pub fn tsc_allowed() -> bool {
    let mut state: libc::c_int = 0;
    // SAFETY: PR_GET_TSC writes one int through the pointer, which is valid.
    let rc = unsafe { libc::prctl(libc::PR_GET_TSC, &mut state as *mut libc::c_int, 0, 0, 0) };
    rc != 0 || state == libc::PR_TSC_ENABLE
}

/// The kernel log buffer (`syslog(SYSLOG_ACTION_READ_ALL)`); `None` when not
/// permitted (dmesg_restrict without CAP_SYSLOG) or empty.
pub fn kernel_log() -> Option<String> {
    // SAFETY: SYSLOG_ACTION_SIZE_BUFFER (10) takes no buffer.
    let size = unsafe { libc::klogctl(10, std::ptr::null_mut(), 0) };
    if size <= 0 {
        return None;
    }
    let mut buf = vec![0u8; size as usize];
    // SAFETY: SYSLOG_ACTION_READ_ALL (3) writes at most `size` bytes into `buf`.
    let n = unsafe { libc::klogctl(3, buf.as_mut_ptr().cast(), size) };
    if n <= 0 {
        return None;
    }
    buf.truncate(n as usize);
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// `perf_event_open(2)` for the calling thread on any CPU, from the raw bytes
/// of a `struct perf_event_attr` (whose `size` field must be set).
#[cfg(target_arch = "aarch64")]
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
#[cfg(target_arch = "aarch64")]
#[derive(Debug)]
pub struct MappedPage {
    ptr: *const u8,
    len: usize,
}

// SAFETY: the mapping is read-only and lives until drop; reading it from any
// thread is memory-safe (what the values mean is the caller's business).
#[cfg(target_arch = "aarch64")]
unsafe impl Send for MappedPage {}
// SAFETY: as above; only reads through a shared reference.
#[cfg(target_arch = "aarch64")]
unsafe impl Sync for MappedPage {}

#[cfg(target_arch = "aarch64")]
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

#[cfg(target_arch = "aarch64")]
impl Drop for MappedPage {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` describe a mapping created by `map` and unmapped once.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// Sleeps until the absolute time `deadline_ns` on `clock`, like [`sleep_until`],
/// but returns `Ok(false)` when a signal handler interrupted the sleep (so the
/// caller can look at its stop flag) and `Ok(true)` when the deadline passed.
#[inline]
pub fn sleep_until_interruptible(clock: ClockId, deadline_ns: u64) -> io::Result<bool> {
    let ts = ns_to_ts(deadline_ns);
    // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null.
    match unsafe { libc::clock_nanosleep(clock, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) } {
        0 => Ok(true),
        libc::EINTR => Ok(false),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

// ---------------------------------------------------------------------------
// IPC and synchronisation primitives (`rtscope ipc`). Each type owns its kernel
// object or its shared mapping and releases it on drop, in the process that
// created it (a forked child leaves with `exit_now`, which runs no destructor).
// ---------------------------------------------------------------------------

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// Anonymous shared memory (`MAP_SHARED | MAP_ANONYMOUS`), zero-filled: shared
/// between threads, and with every child forked while it is mapped. Unmapped on drop.
#[derive(Debug)]
pub struct SharedMem {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory; what lives in it is only reached through
// types that are themselves safe to share (atomics, process-shared primitives).
unsafe impl Send for SharedMem {}
// SAFETY: as above.
unsafe impl Sync for SharedMem {}

impl SharedMem {
    /// Maps `len` bytes (rounded up to whole pages by the kernel).
    pub fn new(len: usize) -> io::Result<Self> {
        let len = len.max(1);
        // SAFETY: anonymous mapping with a null hint; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedMem { ptr: p.cast(), len })
    }

    fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for SharedMem {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` describe a mapping made by `new` and unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// Types that may live in zero-filled shared memory and be used from several
/// threads and processes at once.
///
/// # Safety
/// The all-zero bit pattern must be a valid value, the type must be `Sync`, and
/// it must hold no pointer (the other process sees the same bytes).
pub unsafe trait ShmSafe: Sync {}
// SAFETY: atomics of plain integers: zero is valid, they are Sync and hold no pointer.
unsafe impl ShmSafe for AtomicU32 {}
// SAFETY: as above.
unsafe impl ShmSafe for AtomicU64 {}

/// A fixed array of `T` (atomics) in shared memory.
#[derive(Debug)]
pub struct SharedArray<T: ShmSafe> {
    mem: SharedMem,
    n: usize,
    _t: PhantomData<T>,
}

impl<T: ShmSafe> SharedArray<T> {
    /// `n` zeroed elements.
    pub fn new(n: usize) -> io::Result<Self> {
        let mem = SharedMem::new(n.max(1) * std::mem::size_of::<T>())?;
        Ok(SharedArray {
            mem,
            n,
            _t: PhantomData,
        })
    }

    /// The elements.
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: the mapping is page-aligned (enough for any atomic), holds
        // `n * size_of::<T>()` zero-filled bytes (a valid `T` each, by `ShmSafe`)
        // and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.mem.as_ptr().cast::<T>(), self.n) }
    }
}

/// `FUTEX_WAIT` (shared, not private: works across processes): sleeps while
/// `*word == expected`. Returns on a wake-up, a signal, or when the value differs.
#[inline]
pub fn futex_wait(word: &AtomicU32, expected: u32) -> io::Result<()> {
    // SAFETY: `word` is a valid, aligned u32 for the whole call; no timeout.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => return Ok(()),
            _ => return Err(e),
        }
    }
    Ok(())
}

/// `FUTEX_WAKE` (shared): wakes up to `n` waiters of `word`.
#[inline]
pub fn futex_wake(word: &AtomicU32, n: i32) -> io::Result<()> {
    // SAFETY: `word` is a valid, aligned u32; the other arguments are ignored.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            n,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// An unnamed POSIX semaphore (`sem_init` with `pshared = 1`) in its own shared page.
#[derive(Debug)]
pub struct SharedSem {
    mem: SharedMem,
}

impl SharedSem {
    /// A semaphore with value 0.
    pub fn new() -> io::Result<Self> {
        let mem = SharedMem::new(std::mem::size_of::<libc::sem_t>())?;
        // SAFETY: the page is large enough and aligned for a sem_t and is not shared yet.
        if unsafe { libc::sem_init(mem.as_ptr().cast(), 1, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedSem { mem })
    }

    fn sem(&self) -> *mut libc::sem_t {
        self.mem.as_ptr().cast()
    }

    /// `sem_post`.
    #[inline]
    pub fn post(&self) -> io::Result<()> {
        // SAFETY: the semaphore was initialised in `new` and lives as long as `self`.
        if unsafe { libc::sem_post(self.sem()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// `sem_wait`, restarted after a signal.
    #[inline]
    pub fn wait(&self) -> io::Result<()> {
        loop {
            // SAFETY: as in `post`.
            if unsafe { libc::sem_wait(self.sem()) } == 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }
}

impl Drop for SharedSem {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`; nobody waits on it any more when it is dropped.
        unsafe { libc::sem_destroy(self.sem()) };
    }
}

#[repr(C)]
struct CondBox {
    mutex: libc::pthread_mutex_t,
    cond: libc::pthread_cond_t,
    flag: u64,
    stamp: u64,
}

/// A process-shared pthread mutex, condition variable and flag in one shared page:
/// one side raises the flag and signals, the other waits for it.
#[derive(Debug)]
pub struct SharedCondFlag {
    mem: SharedMem,
}

impl SharedCondFlag {
    /// Initialises the mutex and the condition variable with `PTHREAD_PROCESS_SHARED`.
    pub fn new() -> io::Result<Self> {
        let mem = SharedMem::new(std::mem::size_of::<CondBox>())?;
        let b: *mut CondBox = mem.as_ptr().cast();
        // SAFETY: the page is zeroed, large enough and aligned for a CondBox and not
        // shared yet; the attribute objects are initialised before use and destroyed.
        unsafe {
            let mut ma: libc::pthread_mutexattr_t = std::mem::zeroed();
            libc::pthread_mutexattr_init(&mut ma);
            libc::pthread_mutexattr_setpshared(&mut ma, libc::PTHREAD_PROCESS_SHARED);
            let rc = libc::pthread_mutex_init(&mut (*b).mutex, &ma);
            libc::pthread_mutexattr_destroy(&mut ma);
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            let mut ca: libc::pthread_condattr_t = std::mem::zeroed();
            libc::pthread_condattr_init(&mut ca);
            libc::pthread_condattr_setpshared(&mut ca, libc::PTHREAD_PROCESS_SHARED);
            libc::pthread_condattr_setclock(&mut ca, libc::CLOCK_MONOTONIC);
            let rc = libc::pthread_cond_init(&mut (*b).cond, &ca);
            libc::pthread_condattr_destroy(&mut ca);
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
        }
        Ok(SharedCondFlag { mem })
    }

    fn b(&self) -> *mut CondBox {
        self.mem.as_ptr().cast()
    }

    /// Locks, raises the flag with `stamp`, signals the condition, unlocks.
    #[inline]
    pub fn raise(&self, stamp: u64) -> io::Result<()> {
        let b = self.b();
        // SAFETY: mutex and condition were initialised in `new`; the fields are
        // only touched with the mutex held.
        unsafe {
            let rc = libc::pthread_mutex_lock(&mut (*b).mutex);
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            (*b).flag = 1;
            (*b).stamp = stamp;
            libc::pthread_cond_signal(&mut (*b).cond);
            libc::pthread_mutex_unlock(&mut (*b).mutex);
        }
        Ok(())
    }

    /// Waits until the flag is raised (the mutex reacquired), reads `clock` at
    /// once, lowers the flag; returns (stamp, wake time).
    #[inline]
    pub fn wait(&self, clock: ClockId) -> io::Result<(u64, u64)> {
        let b = self.b();
        // SAFETY: as in `raise`.
        unsafe {
            let rc = libc::pthread_mutex_lock(&mut (*b).mutex);
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            while (*b).flag == 0 {
                libc::pthread_cond_wait(&mut (*b).cond, &mut (*b).mutex);
            }
            let woke = clock_ns(clock);
            (*b).flag = 0;
            let stamp = (*b).stamp;
            libc::pthread_mutex_unlock(&mut (*b).mutex);
            Ok((stamp, woke))
        }
    }
}

impl Drop for SharedCondFlag {
    fn drop(&mut self) {
        let b = self.b();
        // SAFETY: initialised in `new`; nobody uses them any more when dropped.
        unsafe {
            libc::pthread_cond_destroy(&mut (*b).cond);
            libc::pthread_mutex_destroy(&mut (*b).mutex);
        }
    }
}

/// A process-shared pthread mutex in its own shared page.
#[derive(Debug)]
pub struct SharedMutex {
    mem: SharedMem,
}

impl SharedMutex {
    /// Initialises it with `PTHREAD_PROCESS_SHARED`.
    pub fn new() -> io::Result<Self> {
        let mem = SharedMem::new(std::mem::size_of::<libc::pthread_mutex_t>())?;
        // SAFETY: the page is zeroed, large and aligned enough and not shared yet.
        unsafe {
            let mut ma: libc::pthread_mutexattr_t = std::mem::zeroed();
            libc::pthread_mutexattr_init(&mut ma);
            libc::pthread_mutexattr_setpshared(&mut ma, libc::PTHREAD_PROCESS_SHARED);
            let rc = libc::pthread_mutex_init(mem.as_ptr().cast(), &ma);
            libc::pthread_mutexattr_destroy(&mut ma);
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
        }
        Ok(SharedMutex { mem })
    }

    /// `pthread_mutex_lock`.
    #[inline]
    pub fn lock(&self) -> io::Result<()> {
        // SAFETY: initialised in `new`, lives as long as `self`.
        match unsafe { libc::pthread_mutex_lock(self.mem.as_ptr().cast()) } {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }

    /// `pthread_mutex_unlock` (the calling thread must hold it).
    #[inline]
    pub fn unlock(&self) -> io::Result<()> {
        // SAFETY: as in `lock`; unlocking a mutex this thread does not hold returns
        // an error for error-checking mutexes and is the caller's contract otherwise.
        match unsafe { libc::pthread_mutex_unlock(self.mem.as_ptr().cast()) } {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }
}

/// A private System V semaphore set; removed (`IPC_RMID`) on drop by the
/// process that created it.
#[derive(Debug)]
pub struct SysvSem {
    id: i32,
    owner: i32,
}

impl SysvSem {
    /// `semget(IPC_PRIVATE, nsems, 0600)`, every value 0.
    pub fn new(nsems: i32) -> io::Result<Self> {
        // SAFETY: plain syscall with integer arguments.
        let id = unsafe { libc::semget(libc::IPC_PRIVATE, nsems, libc::IPC_CREAT | 0o600) };
        if id < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(SysvSem {
            id,
            owner: getpid(),
        })
    }

    /// The kernel id (shown by `ipcs -s`).
    pub fn id(&self) -> i32 {
        self.id
    }

    /// `semop` of `delta` on semaphore `index`, restarted after a signal.
    #[inline]
    pub fn op(&self, index: u16, delta: i16) -> io::Result<()> {
        let mut op = libc::sembuf {
            sem_num: index,
            sem_op: delta,
            sem_flg: 0,
        };
        loop {
            // SAFETY: `op` is one valid sembuf.
            if unsafe { libc::semop(self.id, &mut op, 1) } == 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }
}

impl Drop for SysvSem {
    fn drop(&mut self) {
        if getpid() == self.owner {
            // SAFETY: plain syscall; removing an id twice only fails.
            unsafe { libc::semctl(self.id, 0, libc::IPC_RMID) };
        }
    }
}

#[repr(C)]
struct SysvMsg {
    mtype: libc::c_long,
    data: u64,
}

/// A private System V message queue carrying one u64 per message; removed
/// (`IPC_RMID`) on drop by the process that created it.
#[derive(Debug)]
pub struct SysvMsgQueue {
    id: i32,
    owner: i32,
}

impl SysvMsgQueue {
    /// `msgget(IPC_PRIVATE, 0600)`.
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall with integer arguments.
        let id = unsafe { libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600) };
        if id < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(SysvMsgQueue {
            id,
            owner: getpid(),
        })
    }

    /// The kernel id (shown by `ipcs -q`).
    pub fn id(&self) -> i32 {
        self.id
    }

    /// `msgsnd` of one message of type 1, restarted after a signal.
    #[inline]
    pub fn send(&self, data: u64) -> io::Result<()> {
        let m = SysvMsg { mtype: 1, data };
        loop {
            // SAFETY: `m` starts with a c_long type followed by 8 bytes of payload.
            let rc = unsafe { libc::msgsnd(self.id, (&m as *const SysvMsg).cast(), 8, 0) };
            if rc == 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }

    /// `msgrcv` of the next message, restarted after a signal.
    #[inline]
    pub fn recv(&self) -> io::Result<u64> {
        let mut m = SysvMsg { mtype: 0, data: 0 };
        loop {
            // SAFETY: `m` has room for a c_long type and 8 bytes of payload.
            let rc = unsafe { libc::msgrcv(self.id, (&mut m as *mut SysvMsg).cast(), 8, 0, 0) };
            if rc >= 0 {
                return Ok(m.data);
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }
}

impl Drop for SysvMsgQueue {
    fn drop(&mut self) {
        if getpid() == self.owner {
            // SAFETY: plain syscall; the buffer pointer may be null for IPC_RMID.
            unsafe { libc::msgctl(self.id, libc::IPC_RMID, std::ptr::null_mut()) };
        }
    }
}

/// A POSIX message queue of 8-byte messages, unlinked as soon as it is open
/// (so that it disappears with the last descriptor, whatever happens). Closed on drop.
#[derive(Debug)]
pub struct PosixMq {
    mqd: libc::mqd_t,
}

impl PosixMq {
    /// `mq_open(name, O_CREAT | O_EXCL | O_RDWR)` then `mq_unlink(name)`.
    pub fn open_unlinked(name: &std::ffi::CStr, max_msgs: i64) -> io::Result<Self> {
        // SAFETY: mq_attr is POD.
        let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
        attr.mq_maxmsg = max_msgs as _;
        attr.mq_msgsize = 8;
        // SAFETY: `name` is NUL-terminated; mode and attr are passed as mq_open expects.
        let mqd = unsafe {
            libc::mq_open(
                name.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | libc::O_CLOEXEC,
                0o600 as libc::mode_t,
                &mut attr as *mut libc::mq_attr,
            )
        };
        if mqd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `name` is NUL-terminated; the open descriptor keeps the queue alive.
        unsafe { libc::mq_unlink(name.as_ptr()) };
        Ok(PosixMq { mqd })
    }

    /// `mq_send` of one u64, restarted after a signal.
    #[inline]
    pub fn send(&self, data: u64) -> io::Result<()> {
        let b = data.to_ne_bytes();
        loop {
            // SAFETY: `b` is 8 valid bytes; `mqd` is open.
            if unsafe { libc::mq_send(self.mqd, b.as_ptr().cast(), 8, 0) } == 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }

    /// `mq_receive` of one u64, restarted after a signal.
    #[inline]
    pub fn recv(&self) -> io::Result<u64> {
        let mut b = [0u8; 8];
        loop {
            // SAFETY: `b` has room for the queue's 8-byte messages; `mqd` is open.
            let rc = unsafe {
                libc::mq_receive(self.mqd, b.as_mut_ptr().cast(), 8, std::ptr::null_mut())
            };
            if rc >= 0 {
                return Ok(u64::from_ne_bytes(b));
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }
}

impl Drop for PosixMq {
    fn drop(&mut self) {
        // SAFETY: `mqd` was opened in `open_unlinked` and is closed once.
        unsafe { libc::mq_close(self.mqd) };
    }
}

/// `eventfd(0, EFD_CLOEXEC)`.
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with constant flags.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `mkfifo(path, 0600)`.
pub fn mkfifo(path: &std::path::Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `c` is NUL-terminated.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Clears `O_NONBLOCK` on a descriptor.
pub fn set_blocking(fd: &impl AsRawFd) -> io::Result<()> {
    let fd = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor the caller holds open, integer arguments.
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        if fl < 0 || libc::fcntl(fd, libc::F_SETFL, fl & !libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Sends `sig` to thread `tid` of process `pid` (`tgkill`).
#[inline]
pub fn tgkill(pid: i32, tid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: plain syscall with integer arguments.
    if unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, sig) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
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
    loop {
        // SAFETY: `status` is a valid, writable int.
        let rc = unsafe { libc::waitpid(pid, &mut status, flags) };
        if rc == 0 {
            return Ok(None);
        }
        if rc > 0 {
            return Ok(Some(if libc::WIFSIGNALED(status) {
                ChildExit::Signal(libc::WTERMSIG(status))
            } else {
                ChildExit::Code(libc::WEXITSTATUS(status))
            }));
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

// ---------------------------------------------------------------------------
// Interrupting a measurement thread's wait when a run stops (`rt::accept_wake`,
// `rt::wake_thread`): a no-op handler without SA_RESTART, a thread-directed
// signal, and wait variants that report EINTR instead of restarting.

extern "C" fn noop_signal_handler(_: libc::c_int) {}

/// Installs a handler that does nothing for `sig`, without `SA_RESTART`: a
/// blocking call of a thread that has `sig` unblocked then fails with EINTR
/// when `sig` is sent to that thread.
pub fn install_noop_handler(sig: i32) -> io::Result<()> {
    // SAFETY: sigaction is POD; zero is a valid start (no flags, empty mask).
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = noop_signal_handler as *const () as usize;
    sa.sa_flags = 0;
    // SAFETY: `sa.sa_mask` is a valid sigset to initialise.
    unsafe { libc::sigemptyset(&mut sa.sa_mask) };
    // SAFETY: `sa` is valid; the handler is async-signal-safe (it does nothing).
    if unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `clock_nanosleep` of `ns` relative to now; `Ok(false)` when a signal
/// handler interrupted the sleep, `Ok(true)` when it ran its course.
#[inline]
pub fn sleep_for_interruptible(clock: ClockId, ns: u64) -> io::Result<bool> {
    let ts = ns_to_ts(ns);
    // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null.
    match unsafe { libc::clock_nanosleep(clock, 0, &ts, std::ptr::null_mut()) } {
        0 => Ok(true),
        libc::EINTR => Ok(false),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// `nanosleep(2)` for `ns`; `Ok(false)` when a signal handler interrupted it.
#[inline]
pub fn nanosleep_interruptible(ns: u64) -> io::Result<bool> {
    let ts = ns_to_ts(ns);
    // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null.
    if unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) } != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINTR) {
            return Ok(false);
        }
        return Err(e);
    }
    Ok(true)
}

/// Blocks on a timerfd until it expires: the number of expirations, or
/// `Ok(None)` when a signal handler interrupted the read.
#[inline]
pub fn timerfd_wait_interruptible(fd: &OwnedFd) -> io::Result<Option<u64>> {
    let mut n: u64 = 0;
    // SAFETY: reading 8 bytes into a valid, aligned u64.
    let rc = unsafe { libc::read(fd.as_raw_fd(), (&mut n as *mut u64).cast(), 8) };
    if rc == 8 {
        return Ok(Some(n));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EINTR) {
        return Ok(None);
    }
    Err(e)
}

/// [`sigwait_one`], but `Ok(None)` when a signal outside `set` ran its
/// handler and interrupted the wait.
#[inline]
pub fn sigwait_one_interruptible(set: &libc::sigset_t) -> io::Result<Option<u32>> {
    // SAFETY: siginfo_t is POD; sigwaitinfo fills it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is an initialised sigset; `info` is valid and writable.
    let rc = unsafe { libc::sigwaitinfo(set, &mut info) };
    if rc >= 0 {
        let overrun = if info.si_code == libc::SI_TIMER {
            // SAFETY: si_code says the timer member of the union is valid.
            unsafe { info.si_overrun() }
        } else {
            0
        };
        return Ok(Some(overrun.max(0) as u32));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EINTR) {
        return Ok(None);
    }
    Err(e)
}

/// `RLIMIT_NPROC` (processes and threads of the real user) as (soft, hard);
/// `u64::MAX` means unlimited.
pub fn rlimit_nproc() -> (u64, u64) {
    rlimit(libc::RLIMIT_NPROC)
}
