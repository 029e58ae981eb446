//! IPC and synchronisation primitives (`rtscope ipc`). Each type owns its kernel
//! object or its shared mapping and releases it on drop, in the process that
//! created it (a forked child leaves with `exit_now`, which runs no destructor).
//! Pipes, eventfds and FIFOs are here too: they are the descriptor-based channels.

use std::io;
use std::marker::PhantomData;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64};

use super::proc::getpid;
use super::retry_eintr;
use super::time::{clock_ns, ClockId};

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
        // SAFETY: as in `post`.
        retry_eintr(|| unsafe { libc::sem_wait(self.sem()) })?;
        Ok(())
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
        // SAFETY: `op` is one valid sembuf.
        retry_eintr(|| unsafe { libc::semop(self.id, &mut op, 1) })?;
        Ok(())
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
        // SAFETY: `m` starts with a c_long type followed by 8 bytes of payload.
        retry_eintr(|| unsafe { libc::msgsnd(self.id, (&m as *const SysvMsg).cast(), 8, 0) })?;
        Ok(())
    }

    /// `msgrcv` of the next message, restarted after a signal.
    #[inline]
    pub fn recv(&self) -> io::Result<u64> {
        let mut m = SysvMsg { mtype: 0, data: 0 };
        // SAFETY: `m` has room for a c_long type and 8 bytes of payload.
        retry_eintr(|| unsafe { libc::msgrcv(self.id, (&mut m as *mut SysvMsg).cast(), 8, 0, 0) })?;
        Ok(m.data)
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
        // SAFETY: `b` is 8 valid bytes; `mqd` is open.
        retry_eintr(|| unsafe { libc::mq_send(self.mqd, b.as_ptr().cast(), 8, 0) })?;
        Ok(())
    }

    /// `mq_receive` of one u64, restarted after a signal.
    #[inline]
    pub fn recv(&self) -> io::Result<u64> {
        let mut b = [0u8; 8];
        // SAFETY: `b` has room for the queue's 8-byte messages; `mqd` is open.
        retry_eintr(|| unsafe {
            libc::mq_receive(self.mqd, b.as_mut_ptr().cast(), 8, std::ptr::null_mut())
        })?;
        Ok(u64::from_ne_bytes(b))
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

// ---------------------------------------------------------------------------
// System V objects by id, for removing what a killed run left behind.

/// A kind of System V object that rtscope creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SysvKind {
    /// A semaphore set (`semget`).
    Sem,
    /// A message queue (`msgget`).
    Msg,
}

/// What `IPC_STAT` says about a System V object: enough to tell one object
/// from a later one that reuses its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SysvStat {
    /// The key it was created with (0: `IPC_PRIVATE`).
    pub key: i32,
    /// The effective user id of its creator.
    pub cuid: u32,
    /// Permission bits.
    pub mode: u32,
    /// Creation time (or last `IPC_SET`/`SETVAL`), seconds since the epoch.
    pub ctime: i64,
}

/// `struct semid_ds`: the libc crate has it for glibc only.
#[cfg(not(target_env = "musl"))]
type SemidDs = libc::semid_ds;

/// `struct semid_ds` as musl declares it on 64-bit targets (the generic
/// `bits/sem.h`; the libc crate does not bind it for musl): the kernel's
/// `semid64_ds`, with `sem_nsems` and its padding as one long.
#[cfg(all(target_env = "musl", target_pointer_width = "64"))]
#[repr(C)]
struct SemidDs {
    sem_perm: libc::ipc_perm,
    sem_otime: libc::c_long, // time_t: a long on 64-bit musl
    sem_ctime: libc::c_long,
    sem_nsems: libc::c_ulong,
    unused: [libc::c_long; 2],
}

/// The key of an `ipc_perm` (glibc names the field `__key`; the libc crate's
/// musl binding still calls it `__ipc_perm_key`).
#[cfg(not(target_env = "musl"))]
fn perm_key(p: &libc::ipc_perm) -> i32 {
    p.__key
}

#[cfg(target_env = "musl")]
#[allow(deprecated)]
fn perm_key(p: &libc::ipc_perm) -> i32 {
    p.__ipc_perm_key
}

fn sysv_gone(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::EIDRM))
}

/// `IPC_STAT` of the semaphore set or message queue `id`; `Ok(None)` when no
/// such object exists (any more).
pub fn sysv_stat(kind: SysvKind, id: i32) -> io::Result<Option<SysvStat>> {
    let (rc, perm, ctime) = match kind {
        SysvKind::Sem => {
            // SAFETY: semid_ds is POD; IPC_STAT writes one semid_ds through the
            // pointer passed as the fourth (union semun) argument.
            let mut ds: SemidDs = unsafe { std::mem::zeroed() };
            let rc = unsafe { libc::semctl(id, 0, libc::IPC_STAT, &mut ds as *mut SemidDs) };
            (rc, ds.sem_perm, ds.sem_ctime)
        }
        SysvKind::Msg => {
            // SAFETY: msqid_ds is POD; IPC_STAT writes one msqid_ds to `ds`.
            let mut ds: libc::msqid_ds = unsafe { std::mem::zeroed() };
            let rc = unsafe { libc::msgctl(id, libc::IPC_STAT, &mut ds) };
            (rc, ds.msg_perm, ds.msg_ctime)
        }
    };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return if sysv_gone(&e) { Ok(None) } else { Err(e) };
    }
    Ok(Some(SysvStat {
        key: perm_key(&perm),
        cuid: perm.cuid,
        #[allow(clippy::useless_conversion)] // mode is a u16 on glibc, a u32 on musl
        mode: u32::from(perm.mode) & 0o777,
        #[allow(clippy::unnecessary_cast)] // time_t is 32 bits on some targets
        ctime: ctime as i64,
    }))
}

/// `IPC_RMID` of the semaphore set or message queue `id`; `Ok(false)` when it
/// did not exist (any more).
pub fn sysv_remove(kind: SysvKind, id: i32) -> io::Result<bool> {
    let rc = match kind {
        // SAFETY: plain syscall; IPC_RMID takes no fourth argument.
        SysvKind::Sem => unsafe { libc::semctl(id, 0, libc::IPC_RMID) },
        // SAFETY: plain syscall; the buffer pointer may be null for IPC_RMID.
        SysvKind::Msg => unsafe { libc::msgctl(id, libc::IPC_RMID, std::ptr::null_mut()) },
    };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return if sysv_gone(&e) { Ok(false) } else { Err(e) };
    }
    Ok(true)
}

/// Whether the POSIX message queue `name` exists (`mq_open` without
/// `O_CREAT`; works whether or not `/dev/mqueue` is mounted).
pub fn posix_mq_exists(name: &std::ffi::CStr) -> io::Result<bool> {
    // SAFETY: `name` is NUL-terminated; without O_CREAT mq_open takes two arguments.
    let mqd = unsafe { libc::mq_open(name.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if mqd == -1 {
        let e = io::Error::last_os_error();
        return if e.raw_os_error() == Some(libc::ENOENT) {
            Ok(false)
        } else {
            Err(e)
        };
    }
    // SAFETY: `mqd` was just opened and is closed once.
    unsafe { libc::mq_close(mqd) };
    Ok(true)
}
