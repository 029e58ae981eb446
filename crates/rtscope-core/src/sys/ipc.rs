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

/// One message as msgsnd/msgrcv see it: a long type, then the payload right
/// after it. The payload is bytes, not a u64: on 32-bit ARM a u64 is 8-aligned,
/// so it would sit 4 bytes of padding after the 4-byte type, and the kernel
/// would carry the padding and only the low half of the value.
#[repr(C)]
struct SysvMsg {
    mtype: libc::c_long,
    data: [u8; 8],
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
        let m = SysvMsg {
            mtype: 1,
            data: data.to_ne_bytes(),
        };
        // SAFETY: `m` starts with a c_long type followed by 8 bytes of payload.
        retry_eintr(|| unsafe { libc::msgsnd(self.id, (&m as *const SysvMsg).cast(), 8, 0) })?;
        Ok(())
    }

    /// `msgrcv` of the next message, restarted after a signal.
    #[inline]
    pub fn recv(&self) -> io::Result<u64> {
        let mut m = SysvMsg {
            mtype: 0,
            data: [0; 8],
        };
        // SAFETY: `m` has room for a c_long type and 8 bytes of payload.
        retry_eintr(|| unsafe { libc::msgrcv(self.id, (&mut m as *mut SysvMsg).cast(), 8, 0, 0) })?;
        Ok(u64::from_ne_bytes(m.data))
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
/// musl binding still calls it `__ipc_perm_key`). One function with the field
/// chosen inside, so that the x86-64 tests check the one body every target runs.
fn perm_key(p: &libc::ipc_perm) -> i32 {
    #[cfg(not(target_env = "musl"))]
    let key = p.__key;
    #[cfg(target_env = "musl")]
    #[allow(deprecated)]
    let key = p.__ipc_perm_key;
    key
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{geteuid, gettid, probe_in_child, ChildExit};
    use std::ffi::{CStr, CString};
    use std::os::fd::RawFd;
    use std::sync::atomic::{AtomicBool, AtomicI32, Ordering::SeqCst};

    /// Waits until thread `tid` sleeps in the kernel (state `S` in its
    /// `/proc/self/task/<tid>/stat`), or until `done` is set (it has returned).
    /// Only order, no time limit: a blocked waiter is found asleep sooner or later.
    fn until_asleep_or_done(tid: &AtomicI32, done: &AtomicBool) {
        loop {
            if done.load(SeqCst) {
                return;
            }
            let t = tid.load(SeqCst);
            if t != 0 {
                let stat = std::fs::read_to_string(format!("/proc/self/task/{t}/stat"));
                if let Some((_, rest)) = stat.as_deref().unwrap_or("").rsplit_once(')') {
                    if rest.trim_start().starts_with('S') {
                        return;
                    }
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// A POSIX message queue name of this process, unique per `tag`.
    fn mq_name(tag: &str) -> CString {
        CString::new(format!("/rtscope-ipc-test-{}-{tag}", getpid())).unwrap()
    }

    /// `/rtscope-ipc-child-<pid>` written into `buf` without allocating, for a
    /// forked child of a multi-threaded process.
    fn child_mq_name(buf: &mut [u8; 48]) -> &CStr {
        let prefix = b"/rtscope-ipc-child-";
        buf[..prefix.len()].copy_from_slice(prefix);
        let mut n = getpid() as u32;
        let mut digits = [0u8; 10];
        let mut k = 0;
        loop {
            digits[k] = b'0' + (n % 10) as u8;
            k += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let mut i = prefix.len();
        while k > 0 {
            k -= 1;
            buf[i] = digits[k];
            i += 1;
        }
        buf[i] = 0;
        CStr::from_bytes_with_nul(&buf[..=i]).unwrap()
    }

    fn fd_flags(fd: RawFd) -> i32 {
        // SAFETY: fcntl with integer arguments.
        unsafe { libc::fcntl(fd, libc::F_GETFL) }
    }

    fn cloexec(fd: RawFd) -> bool {
        // SAFETY: fcntl with integer arguments.
        let f = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        assert!(f >= 0, "{}", io::Error::last_os_error());
        f & libc::FD_CLOEXEC != 0
    }

    /// The array has `n` zeroed elements in one mapping that threads share.
    #[test]
    fn shared_array_has_n_zeroed_shared_elements() {
        let a = SharedArray::<AtomicU64>::new(3).unwrap();
        assert_eq!(a.as_slice().len(), 3);
        assert!(a.as_slice().iter().all(|x| x.load(SeqCst) == 0));
        std::thread::scope(|s| {
            s.spawn(|| a.as_slice()[2].store(0xDEAD_BEEF_1234, SeqCst));
        });
        assert_eq!(a.as_slice()[2].load(SeqCst), 0xDEAD_BEEF_1234);
        assert_eq!(a.as_slice()[0].load(SeqCst), 0);
    }

    /// Dropping a SharedMem unmaps it: `msync` on its address then fails with
    /// ENOMEM. Checked in a forked child, where no other thread can map the
    /// address again in between. Not on 32-bit targets: qemu-user keeps a
    /// 32-bit guest's whole address space reserved, so `msync` on an unmapped
    /// guest page succeeds there (seen with qemu-arm; qemu-aarch64 reports ENOMEM).
    #[test]
    fn shared_mem_is_unmapped_on_drop() {
        if cfg!(target_pointer_width = "32") {
            return;
        }
        fn probe() -> i32 {
            let Ok(m) = SharedMem::new(1) else { return 2 };
            let p = m.as_ptr() as usize;
            if p == 0 || !crate::sys::mem::is_mapped(p) {
                return 3;
            }
            drop(m);
            i32::from(crate::sys::mem::is_mapped(p))
        }
        assert_eq!(probe_in_child(probe).unwrap(), ChildExit::Code(0));
    }

    /// futex_wait returns Ok at once when the word no longer holds the expected
    /// value (EAGAIN), and futex_wake with no waiter succeeds.
    #[test]
    fn futex_wait_returns_when_the_word_differs_and_wake_without_waiters_is_ok() {
        let w = AtomicU32::new(1);
        futex_wait(&w, 0).unwrap();
        futex_wake(&w, 1).unwrap();
        futex_wake(&w, i32::MAX).unwrap();
    }

    /// futex_wait sleeps while the word holds the expected value: the waiter
    /// returns only after the other thread changed the word and woke it, and
    /// futex_wake of a sleeping waiter succeeds and takes it off the futex (a
    /// raw FUTEX_WAKE afterwards finds nobody; one that does find the waiter
    /// also frees it, so a wake that did nothing fails the test, not hangs it).
    #[test]
    fn futex_wait_sleeps_until_woken() {
        let w = AtomicU32::new(0);
        let tid = AtomicI32::new(0);
        let done = AtomicBool::new(false);
        let (seen, woken, still_asleep) = std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                tid.store(gettid(), SeqCst);
                let r = futex_wait(&w, 0);
                let seen = w.load(SeqCst);
                done.store(true, SeqCst);
                r.map(|()| seen)
            });
            until_asleep_or_done(&tid, &done);
            w.store(1, SeqCst);
            let woken = futex_wake(&w, 1);
            // SAFETY: FUTEX_WAKE of one waiter on a valid, aligned u32.
            let still_asleep =
                unsafe { libc::syscall(libc::SYS_futex, w.as_ptr(), libc::FUTEX_WAKE, 1) };
            (waiter.join().unwrap(), woken, still_asleep)
        });
        assert_eq!(seen.unwrap(), 1, "futex_wait returned before the wake");
        woken.unwrap();
        assert_eq!(still_asleep, 0, "futex_wake left the waiter asleep");
    }

    fn sem_value(s: &SharedSem) -> i32 {
        let mut v = -1;
        // SAFETY: the semaphore is initialised and alive; `v` is writable.
        assert_eq!(unsafe { libc::sem_getvalue(s.sem(), &mut v) }, 0);
        v
    }

    /// A SharedSem starts at 0; each post adds one and each wait takes one.
    #[test]
    fn shared_sem_counts_posts_and_waits() {
        let s = SharedSem::new().unwrap();
        assert_eq!(sem_value(&s), 0);
        s.post().unwrap();
        s.post().unwrap();
        assert_eq!(sem_value(&s), 2);
        s.wait().unwrap();
        assert_eq!(sem_value(&s), 1);
        s.wait().unwrap();
        assert_eq!(sem_value(&s), 0);
    }

    /// raise sets the flag and the stamp in the shared box.
    #[test]
    fn shared_cond_flag_raise_sets_flag_and_stamp() {
        let c = SharedCondFlag::new().unwrap();
        c.raise(0xDEAD_BEEF_1234).unwrap();
        // SAFETY: no other thread uses the box; the fields are plain integers.
        let (flag, stamp) = unsafe { ((*c.b()).flag, (*c.b()).stamp) };
        assert_eq!((flag, stamp), (1, 0xDEAD_BEEF_1234));
    }

    /// wait sleeps until the flag is raised, returns the stamp raised and a wake
    /// time not before the raise on that clock, and lowers the flag again. The
    /// waiter is a detached thread: if raise fails or sets nothing, the test
    /// fails at once and leaves it asleep rather than hang on a join.
    #[test]
    fn shared_cond_flag_wait_sleeps_until_raised() {
        use std::sync::Arc;
        const STAMP: u64 = 0xDEAD_BEEF_1234;
        let c = Arc::new(SharedCondFlag::new().unwrap());
        let tid = Arc::new(AtomicI32::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let waiter = std::thread::spawn({
            let (c, tid, done) = (c.clone(), tid.clone(), done.clone());
            move || {
                tid.store(gettid(), SeqCst);
                let r = c.wait(libc::CLOCK_MONOTONIC);
                done.store(true, SeqCst);
                r
            }
        });
        until_asleep_or_done(&tid, &done);
        // A waiter that already returned was never asleep: nothing to raise.
        let t_raise = (!done.load(SeqCst)).then(|| {
            let t = clock_ns(libc::CLOCK_MONOTONIC);
            c.raise(STAMP).unwrap();
            let b = c.b();
            // SAFETY: the initialised mutex guards the stamp.
            let stamp = unsafe {
                assert_eq!(libc::pthread_mutex_lock(&mut (*b).mutex), 0);
                let stamp = (*b).stamp;
                libc::pthread_mutex_unlock(&mut (*b).mutex);
                stamp
            };
            assert_eq!(stamp, STAMP, "raise did not set the stamp");
            t
        });
        let (stamp, woke) = waiter.join().unwrap().unwrap();
        assert_eq!(stamp, STAMP);
        let t_raise = t_raise.expect("wait returned before the flag was raised");
        assert!(woke >= t_raise, "woke at {woke}, raised at {t_raise}");
        // SAFETY: the waiter has ended; the field is a plain integer.
        assert_eq!(unsafe { (*c.b()).flag }, 0);
    }

    /// Dropping a SharedCondFlag destroys its mutex and condition variable: a
    /// second mapping of the same shared page (`mremap` with old size 0) sees
    /// the box rewritten (glibc marks a destroyed mutex invalid, kind -1, and
    /// flags the condition variable). glibc on x86-64 only: musl's destroy
    /// writes nothing for an unused process-shared pair, and qemu-arm refuses
    /// `mremap` with old size 0 (ENOMEM).
    #[test]
    fn shared_cond_flag_drop_destroys_mutex_and_cond() {
        if !cfg!(all(target_arch = "x86_64", target_env = "gnu")) {
            return;
        }
        let c = SharedCondFlag::new().unwrap();
        let n = std::mem::size_of::<CondBox>();
        // SAFETY: old size 0 on a shared mapping makes a new mapping of the same pages.
        let alias = unsafe { libc::mremap(c.b().cast(), 0, n, libc::MREMAP_MAYMOVE) };
        assert_ne!(alias, libc::MAP_FAILED, "{}", io::Error::last_os_error());
        // SAFETY: `alias` maps `n` readable bytes until the munmap below.
        let bytes = || unsafe { std::slice::from_raw_parts(alias.cast::<u8>(), n).to_vec() };
        let before = bytes();
        drop(c);
        let after = bytes();
        // SAFETY: unmaps the alias made above, once.
        unsafe { libc::munmap(alias, n) };
        assert_ne!(before, after, "drop left the mutex and condition untouched");
    }

    /// lock takes the mutex (a trylock then finds it busy) and unlock releases it.
    #[test]
    fn shared_mutex_lock_and_unlock() {
        let m = SharedMutex::new().unwrap();
        let raw: *mut libc::pthread_mutex_t = m.mem.as_ptr().cast();
        m.lock().unwrap();
        // SAFETY: `raw` is the initialised mutex; trylock of a taken normal mutex is EBUSY.
        assert_eq!(unsafe { libc::pthread_mutex_trylock(raw) }, libc::EBUSY);
        m.unlock().unwrap();
        // SAFETY: as above; it is free now, so trylock takes it, and it is released.
        assert_eq!(unsafe { libc::pthread_mutex_trylock(raw) }, 0);
        // SAFETY: this thread holds it.
        assert_eq!(unsafe { libc::pthread_mutex_unlock(raw) }, 0);
    }

    /// SysvSem::id names the kernel's set (two sets, two ids; IPC_STAT of the
    /// id shows a private 0600 set of ours) and op changes that set's value.
    #[test]
    fn sysv_sem_id_and_op() {
        let a = SysvSem::new(1).unwrap();
        let b = SysvSem::new(2).unwrap();
        assert_ne!(a.id(), b.id());
        for s in [&a, &b] {
            let st = sysv_stat(SysvKind::Sem, s.id()).unwrap().unwrap();
            assert_eq!((st.key, st.cuid, st.mode), (0, geteuid(), 0o600));
        }
        a.op(0, 3).unwrap();
        a.op(0, -1).unwrap();
        // SAFETY: plain syscall with integer arguments.
        assert_eq!(unsafe { libc::semctl(a.id(), 0, libc::GETVAL) }, 2);
        b.op(1, 5).unwrap();
        // SAFETY: as above.
        assert_eq!(unsafe { libc::semctl(b.id(), 1, libc::GETVAL) }, 5);
        // SAFETY: as above.
        assert_eq!(unsafe { libc::semctl(b.id(), 0, libc::GETVAL) }, 0);
    }

    /// A SysvSem is removed on drop by the process that created it, and not by
    /// a copy that another process (a forked child) drops.
    #[test]
    fn sysv_sem_is_removed_on_drop_by_its_creator_only() {
        let s = SysvSem::new(1).unwrap();
        let id = s.id();
        drop(SysvSem { id, owner: 0 });
        assert!(sysv_stat(SysvKind::Sem, id).unwrap().is_some());
        drop(s);
        assert_eq!(sysv_stat(SysvKind::Sem, id).unwrap(), None);
    }

    fn msg_count(id: i32) -> u64 {
        // SAFETY: msqid_ds is POD; IPC_STAT writes it.
        let mut ds: libc::msqid_ds = unsafe { std::mem::zeroed() };
        // SAFETY: `ds` is a valid, writable msqid_ds.
        assert_eq!(unsafe { libc::msgctl(id, libc::IPC_STAT, &mut ds) }, 0);
        #[allow(clippy::unnecessary_cast)]
        let n = ds.msg_qnum as u64;
        n
    }

    /// SysvMsgQueue::id names the kernel's queue, send queues one message on
    /// it and recv returns the messages sent, whole (all 64 bits, also on 32-bit
    /// ARM) and in order.
    #[test]
    fn sysv_msg_queue_id_send_and_recv() {
        // The payload follows the type without padding, as msgsnd expects.
        assert_eq!(
            std::mem::offset_of!(SysvMsg, data),
            std::mem::size_of::<libc::c_long>()
        );
        let q = SysvMsgQueue::new().unwrap();
        let other = SysvMsgQueue::new().unwrap();
        assert_ne!(q.id(), other.id());
        let st = sysv_stat(SysvKind::Msg, q.id()).unwrap().unwrap();
        assert_eq!((st.key, st.cuid, st.mode), (0, geteuid(), 0o600));
        q.send(0xDEAD_BEEF_1234_5678).unwrap();
        q.send(7).unwrap();
        assert_eq!(msg_count(q.id()), 2);
        assert_eq!(msg_count(other.id()), 0);
        assert_eq!(q.recv().unwrap(), 0xDEAD_BEEF_1234_5678);
        assert_eq!(q.recv().unwrap(), 7);
        assert_eq!(msg_count(q.id()), 0);
    }

    /// A SysvMsgQueue is removed on drop by the process that created it only.
    #[test]
    fn sysv_msg_queue_is_removed_on_drop_by_its_creator_only() {
        let q = SysvMsgQueue::new().unwrap();
        let id = q.id();
        drop(SysvMsgQueue { id, owner: 0 });
        assert!(sysv_stat(SysvKind::Msg, id).unwrap().is_some());
        drop(q);
        assert_eq!(sysv_stat(SysvKind::Msg, id).unwrap(), None);
    }

    /// open_unlinked creates a close-on-exec queue of `max_msgs` 8-byte
    /// messages that is already unlinked; send and recv carry u64s in order.
    #[test]
    fn posix_mq_open_unlinked_send_recv() {
        let name = mq_name("open");
        let q = PosixMq::open_unlinked(&name, 4).unwrap();
        assert!(!posix_mq_exists(&name).unwrap());
        assert!(cloexec(q.mqd as RawFd));
        // SAFETY: mq_attr is POD.
        let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
        // SAFETY: `q.mqd` is open, `attr` writable.
        assert_eq!(unsafe { libc::mq_getattr(q.mqd, &mut attr) }, 0);
        assert_eq!(
            (attr.mq_maxmsg, attr.mq_msgsize, attr.mq_curmsgs),
            (4, 8, 0)
        );
        q.send(0xDEAD_BEEF_1234_5678).unwrap();
        q.send(1).unwrap();
        // SAFETY: as above.
        assert_eq!(unsafe { libc::mq_getattr(q.mqd, &mut attr) }, 0);
        assert_eq!(attr.mq_curmsgs, 2);
        assert_eq!(q.recv().unwrap(), 0xDEAD_BEEF_1234_5678);
        assert_eq!(q.recv().unwrap(), 1);
    }

    /// open_unlinked refuses a name that exists (O_EXCL) and a name too long;
    /// posix_mq_exists tells an existing queue from a missing one and reports
    /// other errors.
    #[test]
    fn posix_mq_open_refusals_and_exists() {
        let name = mq_name("exists");
        assert!(!posix_mq_exists(&name).unwrap());
        // SAFETY: `name` is NUL-terminated; a default-attribute queue.
        let mqd = unsafe {
            libc::mq_open(
                name.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
                0o600 as libc::mode_t,
                std::ptr::null_mut::<libc::mq_attr>(),
            )
        };
        assert!(mqd >= 0, "{}", io::Error::last_os_error());
        let exists = posix_mq_exists(&name);
        let refused = PosixMq::open_unlinked(&name, 4).map(|_| ());
        // SAFETY: opened above, closed and unlinked once.
        unsafe {
            libc::mq_close(mqd);
            libc::mq_unlink(name.as_ptr());
        }
        assert!(exists.unwrap());
        assert_eq!(refused.unwrap_err().raw_os_error(), Some(libc::EEXIST));
        assert!(!posix_mq_exists(&name).unwrap());

        let long = CString::new(format!("/{}", "x".repeat(300))).unwrap();
        let e = PosixMq::open_unlinked(&long, 4).map(|_| ()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENAMETOOLONG));
        let e = posix_mq_exists(&long).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENAMETOOLONG));
    }

    /// Dropping a PosixMq closes its descriptor (checked in a forked child,
    /// where no other thread can reuse the number in between).
    #[test]
    fn posix_mq_is_closed_on_drop() {
        fn probe() -> i32 {
            let mut buf = [0u8; 48];
            let Ok(q) = PosixMq::open_unlinked(child_mq_name(&mut buf), 2) else {
                return 2;
            };
            let fd = q.mqd;
            drop(q);
            // SAFETY: fcntl with integer arguments.
            let rc = unsafe { libc::fcntl(fd as RawFd, libc::F_GETFD) };
            if rc == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::EBADF) {
                0
            } else {
                1
            }
        }
        assert_eq!(probe_in_child(probe).unwrap(), ChildExit::Code(0));
    }

    /// Descriptor 0 is a valid result: with stdin closed, eventfd and
    /// PosixMq::open_unlinked get descriptor 0 and succeed (in a forked child).
    #[test]
    fn descriptor_zero_is_a_success() {
        fn probe() -> i32 {
            // SAFETY: closes the child's own stdin.
            unsafe { libc::close(0) };
            match eventfd() {
                Ok(fd) if fd.as_raw_fd() == 0 => {}
                _ => return 1,
            }
            let mut buf = [0u8; 48];
            match PosixMq::open_unlinked(child_mq_name(&mut buf), 2) {
                Ok(q) if q.mqd == 0 => 0,
                _ => 2,
            }
        }
        assert_eq!(probe_in_child(probe).unwrap(), ChildExit::Code(0));
    }

    /// eventfd gives a close-on-exec counter: writes add up, a read takes the sum.
    #[test]
    fn eventfd_adds_up_writes() {
        let fd = eventfd().unwrap();
        assert!(cloexec(fd.as_raw_fd()));
        assert_eq!(fd_flags(fd.as_raw_fd()) & libc::O_NONBLOCK, 0);
        for v in [3u64, 4] {
            // SAFETY: writes 8 bytes from `v`.
            let n = unsafe { libc::write(fd.as_raw_fd(), (&v as *const u64).cast(), 8) };
            assert_eq!(n, 8);
        }
        let mut v = 0u64;
        // SAFETY: reads 8 bytes into `v`.
        let n = unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
        assert_eq!((n, v), (8, 7));
    }

    /// pipe gives a close-on-exec (read end, write end) pair that carries bytes.
    #[test]
    fn pipe_carries_bytes_from_write_end_to_read_end() {
        let (r, w) = pipe().unwrap();
        assert!(cloexec(r.as_raw_fd()) && cloexec(w.as_raw_fd()));
        assert_eq!(fd_flags(r.as_raw_fd()) & libc::O_ACCMODE, libc::O_RDONLY);
        assert_eq!(fd_flags(w.as_raw_fd()) & libc::O_ACCMODE, libc::O_WRONLY);
        // SAFETY: writes 3 bytes from a static string.
        assert_eq!(
            unsafe { libc::write(w.as_raw_fd(), b"abc".as_ptr().cast(), 3) },
            3
        );
        let mut b = [0u8; 8];
        // SAFETY: reads at most 8 bytes into `b`.
        let n = unsafe { libc::read(r.as_raw_fd(), b.as_mut_ptr().cast(), 8) };
        assert_eq!(&b[..n as usize], b"abc");
    }

    /// set_blocking clears O_NONBLOCK and keeps the other status flags; on a
    /// descriptor that already blocks it changes nothing and succeeds (a pipe's
    /// read end has status flags 0 on Linux); a bad descriptor is an error.
    #[test]
    fn set_blocking_clears_only_o_nonblock() {
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("f"))
            .unwrap();
        let fl = fd_flags(f.as_raw_fd());
        // SAFETY: fcntl on an open descriptor with integer arguments.
        assert_eq!(
            unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK) },
            0
        );
        assert_ne!(fd_flags(f.as_raw_fd()) & libc::O_NONBLOCK, 0);
        set_blocking(&f).unwrap();
        let fl = fd_flags(f.as_raw_fd());
        assert_eq!(fl & (libc::O_NONBLOCK | libc::O_APPEND), libc::O_APPEND);

        let (r, _w) = pipe().unwrap();
        set_blocking(&r).unwrap();
        assert_eq!(fd_flags(r.as_raw_fd()) & libc::O_NONBLOCK, 0);

        struct Closed;
        impl AsRawFd for Closed {
            fn as_raw_fd(&self) -> RawFd {
                -1
            }
        }
        assert_eq!(
            set_blocking(&Closed).unwrap_err().raw_os_error(),
            Some(libc::EBADF)
        );
    }

    /// mkfifo makes a FIFO with no group or other permissions, and refuses a
    /// path that exists or that holds a NUL byte.
    #[test]
    fn mkfifo_makes_a_fifo() {
        use std::os::unix::fs::{FileTypeExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fifo");
        mkfifo(&p).unwrap();
        let m = std::fs::symlink_metadata(&p).unwrap();
        assert!(m.file_type().is_fifo());
        assert_eq!(m.permissions().mode() & 0o077, 0);
        assert_eq!(mkfifo(&p).unwrap_err().raw_os_error(), Some(libc::EEXIST));
        let bad = std::path::Path::new("a\0b");
        assert_eq!(mkfifo(bad).unwrap_err().raw_os_error(), Some(libc::EINVAL));
    }

    /// A System V object made by a test, removed with a raw IPC_RMID when the
    /// test ends, whatever happened (a failed assertion leaks nothing).
    struct Made {
        kind: SysvKind,
        key: i32,
        id: i32,
    }

    impl Drop for Made {
        fn drop(&mut self) {
            // SAFETY: plain syscalls; removing an id that is gone only fails.
            unsafe {
                match self.kind {
                    SysvKind::Sem => libc::semctl(self.id, 0, libc::IPC_RMID),
                    SysvKind::Msg => libc::msgctl(self.id, libc::IPC_RMID, std::ptr::null_mut()),
                }
            };
        }
    }

    /// Creates a System V object of `kind` with a key of its own (IPC_EXCL,
    /// trying further keys while one is taken).
    fn sysv_with_key(kind: SysvKind, mode: i32) -> Made {
        let base = 0x5254_0000 | ((getpid() & 0x3fff) << 2) | (kind as i32) << 1;
        for k in 0..64 {
            let key = base.wrapping_add(k << 16);
            let flags = libc::IPC_CREAT | libc::IPC_EXCL | mode;
            // SAFETY: plain syscalls with integer arguments.
            let id = unsafe {
                match kind {
                    SysvKind::Sem => libc::semget(key, 1, flags),
                    SysvKind::Msg => libc::msgget(key, flags),
                }
            };
            if id >= 0 {
                return Made { kind, key, id };
            }
            let e = io::Error::last_os_error();
            assert_eq!(e.raw_os_error(), Some(libc::EEXIST), "{e}");
        }
        panic!("no free System V key");
    }

    /// sysv_stat reports an object's key, creator and mode, and None once it is
    /// gone; sysv_remove removes it (true) and then finds nothing (false).
    #[test]
    fn sysv_stat_and_remove_by_id() {
        for kind in [SysvKind::Sem, SysvKind::Msg] {
            let made = sysv_with_key(kind, 0o640);
            let (key, id) = (made.key, made.id);
            let st = sysv_stat(kind, id).unwrap().unwrap();
            assert_eq!(
                (st.key, st.cuid, st.mode),
                (key, geteuid(), 0o640),
                "{kind:?}"
            );
            assert!(st.ctime > 0);
            assert!(sysv_remove(kind, id).unwrap(), "{kind:?}");
            assert!(!sysv_remove(kind, id).unwrap(), "{kind:?}");
            assert_eq!(sysv_stat(kind, id).unwrap(), None, "{kind:?}");
        }
    }

    /// Errors other than "no such object" are reported, not taken for a gone
    /// object: IPC_STAT without read permission is EACCES (and, for root that
    /// gave up its effective uid, IPC_RMID of another user's object EPERM). The
    /// effective uid is changed for one thread only (the raw syscall, not
    /// libc's process-wide setresuid) and given back before it ends.
    #[test]
    fn sysv_errors_other_than_gone_are_reported() {
        #[cfg(target_arch = "arm")]
        const SETRESUID: libc::c_long = libc::SYS_setresuid32;
        #[cfg(not(target_arch = "arm"))]
        const SETRESUID: libc::c_long = libc::SYS_setresuid;
        for kind in [SysvKind::Sem, SysvKind::Msg] {
            // Mode 0: even its owner may not read it, unless privileged.
            let made = sysv_with_key(kind, 0);
            let id = made.id;
            let root = geteuid() == 0;
            let (stat, remove) = std::thread::scope(|s| {
                s.spawn(|| {
                    let keep = libc::uid_t::MAX as libc::c_long; // -1: unchanged
                    if root {
                        // SAFETY: changes this thread's effective uid only.
                        let rc = unsafe { libc::syscall(SETRESUID, keep, 65534, keep) };
                        assert_eq!(rc, 0, "{}", io::Error::last_os_error());
                    }
                    let stat = sysv_stat(kind, id);
                    let remove = root.then(|| sysv_remove(kind, id));
                    if root {
                        // SAFETY: gives this thread its effective uid 0 back (saved uid 0).
                        let rc = unsafe { libc::syscall(SETRESUID, keep, 0, keep) };
                        assert_eq!(rc, 0, "{}", io::Error::last_os_error());
                    }
                    (stat, remove)
                })
                .join()
                .unwrap()
            });
            assert!(sysv_remove(kind, id).unwrap());
            assert_eq!(
                stat.unwrap_err().raw_os_error(),
                Some(libc::EACCES),
                "{kind:?}"
            );
            if let Some(r) = remove {
                assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EPERM), "{kind:?}");
            }
        }
    }
}
