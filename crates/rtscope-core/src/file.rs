//! Writing output files without ever replacing what the user pointed at.
//!
//! A regular file (or a path that does not exist yet) is written atomically:
//! a temporary file in the same directory, synced, renamed over the target, so
//! a crash leaves either the old or the new file, never half of one. A symlink
//! is followed and its *target* is written that way (the link stays). Anything
//! else that exists — a device such as `/dev/null` or `/dev/ttyS0`, a FIFO, a
//! socket — is written through, in place: renaming over it would replace the
//! device node with a regular file.
//!
//! Errors name the path the user gave, never the temporary file.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Where the bytes for one output go.
enum Target {
    /// A temporary file to rename over `path` on commit.
    Atomic(tempfile::NamedTempFile, PathBuf),
    /// The existing non-regular file itself, written in place.
    Through,
}

/// An output file being written; [`commit`](OutFile::commit) makes it visible.
/// Dropped without commit, a regular target is left as it was.
pub struct OutFile {
    w: BufWriter<File>,
    target: Target,
    _pending: Option<Pending>,
}

/// The temporary files of outputs being written, for [`remove_pending`].
static PENDING: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

fn pending() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// A temporary file registered in [`PENDING`] while it lives.
struct Pending(PathBuf);

impl Drop for Pending {
    fn drop(&mut self) {
        pending().retain(|p| p != &self.0);
    }
}

/// Removes the temporary files of the outputs being written, for a way out
/// that does not unwind (a second stop, a fatal signal: `process::exit`
/// runs no destructor): no `.rtscope-*.tmp` is left beside the targets.
pub fn remove_pending() {
    remove_pending_where(|_| true);
}

fn remove_pending_where(which: impl Fn(&Path) -> bool) {
    pending().retain(|p| {
        if which(p) {
            let _ = std::fs::remove_file(p);
            false
        } else {
            true
        }
    });
}

/// The path that is really written: a symlink's final target, else `path`.
fn resolve(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

/// Whether `path` exists and is neither a regular file nor a directory
/// (after following symlinks).
pub fn is_special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// The directory a new file at `path` is created in.
fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// An io error without tempfile's "at path <temporary file>" suffix.
fn plain(e: io::Error) -> io::Error {
    let text = e.to_string();
    match text.split_once(" at path ") {
        Some((reason, _)) => io::Error::new(e.kind(), reason.to_string()),
        None => e,
    }
}

/// Opens a device or FIFO for writing in place. A FIFO without a reader
/// would block the open for ever (and a signal restarts it): it is opened
/// without blocking, again every 20 ms until a reader comes, at most `wait`,
/// then switched back to blocking writes.
fn open_through(path: &Path, wait: std::time::Duration) -> io::Result<File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let fifo = std::fs::metadata(path)?.file_type().is_fifo();
    if !fifo {
        return OpenOptions::new().write(true).truncate(true).open(path);
    }
    let t0 = std::time::Instant::now();
    let f = loop {
        match OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            Ok(f) => break f,
            // ENXIO: nobody has the FIFO open for reading yet.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                if t0.elapsed() >= wait {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "a FIFO nobody reads: no reader came in {}; {INPUT_WAIT_ENV} sets the wait",
                            humantime::format_duration(wait)
                        ),
                    ));
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    };
    // SAFETY: fcntl on an fd this function owns.
    let fl = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
    if fl < 0 || unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(f)
}

impl OutFile {
    /// Starts writing `path`.
    pub fn create(path: &Path) -> io::Result<Self> {
        Self::create_mode(path, 0o666)
    }

    /// Starts writing `path`, a new file created with `mode` less the umask
    /// (`0o777` for a script: 0755 under umask 022, 0700 under 077). A file
    /// written through (a device, a FIFO) keeps its own mode.
    pub fn create_mode(path: &Path, mode: u32) -> io::Result<Self> {
        let real = resolve(path);
        if is_special(&real) {
            let f = open_through(&real, input_wait()?)?;
            return Ok(OutFile {
                w: BufWriter::with_capacity(1 << 16, f),
                target: Target::Through,
                _pending: None,
            });
        }
        if real.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "is a directory",
            ));
        }
        // Created 0666 less the umask, as any other file the user creates
        // (tempfile's default is 0600): results are shared where the umask
        // says so (022: 0644) and kept to their group where it does not
        // (the unit's UMask=0027: 0640). Nothing widens them afterwards.
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::Builder::new()
            .prefix(".rtscope-")
            .suffix(".tmp")
            .permissions(std::fs::Permissions::from_mode(mode))
            .tempfile_in(dir_of(&real))
            .map_err(plain)?;
        let f = tmp.reopen().map_err(plain)?;
        pending().push(tmp.path().to_path_buf());
        Ok(OutFile {
            w: BufWriter::with_capacity(1 << 20, f),
            _pending: Some(Pending(tmp.path().to_path_buf())),
            target: Target::Atomic(tmp, real),
        })
    }

    /// Flushes, syncs and (for a regular target) renames into place.
    pub fn commit(mut self) -> io::Result<()> {
        self.w.flush()?;
        match self.target {
            Target::Atomic(tmp, real) => {
                tmp.as_file().sync_all()?;
                tmp.persist(&real).map_err(|e| plain(e.error))?;
            }
            Target::Through => {}
        }
        Ok(())
    }
}

impl Write for OutFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.w.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

/// Writes `bytes` to `path` as [`OutFile`] does: atomically for a regular
/// file, through for a device or FIFO, to its target for a symlink.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_mode(path, bytes, 0o666)
}

/// [`write_atomic`] with the mode a new file is created with, less the umask
/// ([`OutFile::create_mode`]).
pub fn write_atomic_mode(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let mut f = OutFile::create_mode(path, mode)?;
    f.write_all(bytes)?;
    f.commit()
}

/// The kernel's own filesystems, by their magic numbers (`statfs(2)`): their
/// files are the kernel's interfaces, and no output file can be made there.
const KERNEL_FILESYSTEMS: &[(u32, &str)] = &[
    (0x9fa0, "proc"),
    (0x6265_6572, "sysfs"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x2709_4b4a, "cgroup"),
    (0x6367_7270, "cgroup2"),
    (0x7363_6673, "securityfs"),
    (0xcafe_4a11, "bpf"),
    (0x6265_6570, "configfs"),
    (0x6165_676c, "pstore"),
    (0xde5e_81e4, "efivarfs"),
];

/// The name of the kernel filesystem `magic` identifies, if it is one.
fn kernel_filesystem(magic: u32) -> Option<&'static str> {
    KERNEL_FILESYSTEMS
        .iter()
        .find(|(m, _)| *m == magic)
        .map(|(_, name)| *name)
}

/// The kernel filesystem `path` (an existing file or directory) lies on.
fn kernel_filesystem_of(path: &Path) -> Option<&'static str> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statfs fills the zeroed struct or fails; `c` is a valid C string.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    // The field's type differs between targets; every magic fits in 32 bits.
    #[allow(clippy::unnecessary_cast)]
    kernel_filesystem(st.f_type as u32)
}

/// Checks that `path` can be written, without leaving anything behind. Used to
/// refuse an unwritable output path before a run starts rather than losing
/// its results after. A path on one of the kernel's own filesystems (`/proc`,
/// `/sys`, tracefs, ...) is refused by name: the error creating a file there
/// ("No such file or directory" for `/proc/self/status`) says nothing useful.
pub fn check_writable(path: &Path) -> io::Result<()> {
    let real = resolve(path);
    let existing = if real.exists() {
        real.as_path()
    } else {
        dir_of(&real)
    };
    if let Some(fs) = kernel_filesystem_of(existing) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is on {fs}, a kernel filesystem: no output file can be written there",
                existing.display()
            ),
        ));
    }
    if real.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory",
        ));
    }
    if is_special(&real) {
        let m = std::fs::metadata(&real)?;
        use std::os::unix::fs::FileTypeExt;
        // Opening a FIFO for writing would wait for a reader: check its mode only.
        if m.file_type().is_fifo() {
            return Ok(());
        }
        return OpenOptions::new().write(true).open(&real).map(|_| ());
    }
    tempfile::Builder::new()
        .prefix(".rtscope-check-")
        .tempfile_in(dir_of(&real))
        .map(|_| ())
        .map_err(plain)
}

/// How long a read of an input that is not a regular file (a FIFO, a pipe, a
/// terminal, a device) waits for its next bytes by default, and how long an
/// output FIFO waits for a reader: a FIFO nobody writes to, or reads from,
/// ends in an error instead of blocking for ever.
pub const INPUT_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// The environment variable that sets that wait (`10s`, `5m`, or seconds).
pub const INPUT_WAIT_ENV: &str = "RTSCOPE_INPUT_WAIT";

/// The wait for inputs that are not regular files: [`INPUT_WAIT_ENV`] when it
/// is set, else [`INPUT_WAIT`].
pub fn input_wait() -> io::Result<std::time::Duration> {
    match std::env::var(INPUT_WAIT_ENV) {
        Err(_) => Ok(INPUT_WAIT),
        Ok(v) => parse_wait(&v).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{INPUT_WAIT_ENV}={v}: not a duration (e.g. 10s, 5m)"),
            )
        }),
    }
}

/// A wait as `10s`/`5m`/`500ms`, or a number of seconds; at least 1 ms.
fn parse_wait(v: &str) -> Option<std::time::Duration> {
    let v = v.trim();
    let d = match v.parse::<u64>() {
        Ok(secs) => std::time::Duration::from_secs(secs),
        Err(_) => humantime::parse_duration(v).ok()?,
    };
    (d >= std::time::Duration::from_millis(1)).then_some(d)
}

/// An input file opened for reading. A regular file or a directory reads as
/// usual; anything else (a FIFO, a pipe, a terminal, a device) is opened
/// without waiting for a writer and then read with a limit on how long each
/// read waits for data: past it the read fails with `TimedOut`, so that a
/// FIFO nobody writes to is an error, not a hang.
pub struct Input {
    file: File,
    /// The wait for data, in ms; `None` for a regular file or directory.
    wait_ms: Option<i32>,
}

/// Opens `path` as an [`Input`] that waits at most `wait` for data when it is
/// not a regular file.
pub fn open_input(path: &Path, wait: std::time::Duration) -> io::Result<Input> {
    use std::os::unix::fs::OpenOptionsExt;
    // Non-blocking: opening a FIFO without a writer, or a serial line without
    // carrier, does not wait.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    let wait_ms = if meta.is_file() || meta.is_dir() {
        None
    } else {
        Some(wait.as_millis().clamp(1, i32::MAX as u128) as i32)
    };
    Ok(Input { file, wait_ms })
}

impl Input {
    /// The metadata of the open file.
    pub fn metadata(&self) -> io::Result<std::fs::Metadata> {
        self.file.metadata()
    }

    /// Waits until the file is readable, at most the input's wait.
    fn wait_readable(&self, ms: i32) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let mut pfd = libc::pollfd {
            fd: self.file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            // SAFETY: one valid pollfd for the duration of the call.
            let n = unsafe { libc::poll(&mut pfd, 1, ms) };
            if n > 0 {
                return Ok(());
            }
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "not a regular file, and no data came in {} (a FIFO nobody writes to?); {INPUT_WAIT_ENV} sets the wait",
                        humantime::format_duration(std::time::Duration::from_millis(ms as u64))
                    ),
                ));
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl io::Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(ms) = self.wait_ms else {
            return io::Read::read(&mut self.file, buf);
        };
        loop {
            // Waiting first: on a FIFO that never had a writer, a
            // non-blocking read says end of file at once, while poll waits
            // for the writer's data or its close.
            self.wait_readable(ms)?;
            match io::Read::read(&mut self.file, buf) {
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) => {}
                r => return r,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_way_out_without_unwinding_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let temps = || {
            std::fs::read_dir(dir.path())
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .file_name()
                        .to_string_lossy()
                        .starts_with(".rtscope-")
                })
                .count()
        };
        let mut f = OutFile::create(&dir.path().join("doc.json")).unwrap();
        f.write_all(b"{}").unwrap();
        assert_eq!(temps(), 1);
        // As the signal thread does before process::exit (f is never
        // dropped); only this test's (other tests write files meanwhile).
        remove_pending_where(|p| p.starts_with(dir.path()));
        assert_eq!(temps(), 0);
        std::mem::forget(f);
        // Committed, nothing is pending any more.
        let mut g = OutFile::create(&dir.path().join("b.json")).unwrap();
        g.write_all(b"{}").unwrap();
        g.commit().unwrap();
        assert!(!pending().iter().any(|p| p.starts_with(dir.path())));
        assert!(dir.path().join("b.json").is_file());
    }

    #[test]
    fn outputs_on_kernel_filesystems_are_refused_by_name() {
        let e = check_writable(Path::new("/proc/self/status")).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("is on proc, a kernel filesystem: no output file can be written there"),
            "{e}"
        );
        assert!(e.to_string().starts_with("/proc/"), "{e}");
        let e = check_writable(Path::new("/proc/new.json")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/proc is on proc, a kernel filesystem: no output file can be written there"
        );
        if Path::new("/sys/kernel").is_dir() {
            let e = check_writable(Path::new("/sys/kernel/r.json")).unwrap_err();
            assert!(e.to_string().contains("is on sysfs"), "{e}");
        }
        assert_eq!(kernel_filesystem(0x9fa0), Some("proc"));
        assert_eq!(kernel_filesystem(0xde5e_81e4), Some("efivarfs"));
        assert_eq!(kernel_filesystem(0xef53), None);
        // A temporary directory is not one.
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(kernel_filesystem_of(dir.path()), None);
        check_writable(&dir.path().join("r.json")).unwrap();
    }

    #[test]
    fn an_output_fifo_waits_for_its_reader_for_a_while_only() {
        use std::io::Read;
        use std::time::{Duration, Instant};
        let (_dir, p) = fifo();
        let t0 = Instant::now();
        let e = open_through(&p, Duration::from_millis(150)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(
            e.to_string()
                .starts_with("a FIFO nobody reads: no reader came in 150ms"),
            "{e}"
        );
        assert!(t0.elapsed() >= Duration::from_millis(150));
        // A reader that comes late: the writer gets it, and writes block again.
        let r = {
            let p = p.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(60));
                let mut s = String::new();
                File::open(&p).unwrap().read_to_string(&mut s).unwrap();
                s
            })
        };
        let mut f = open_through(&p, Duration::from_secs(30)).unwrap();
        use std::os::fd::AsRawFd;
        let fl = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(fl & libc::O_NONBLOCK, 0);
        f.write_all(b"through").unwrap();
        drop(f);
        assert_eq!(r.join().unwrap(), "through");
    }

    #[test]
    fn input_wait_parses_durations_and_seconds() {
        use std::time::Duration;
        assert_eq!(parse_wait("10"), Some(Duration::from_secs(10)));
        assert_eq!(parse_wait(" 5m "), Some(Duration::from_secs(300)));
        assert_eq!(parse_wait("1ms"), Some(Duration::from_millis(1)));
        assert_eq!(parse_wait("999us"), None);
        assert_eq!(parse_wait("0"), None);
        assert_eq!(parse_wait("soon"), None);
        if std::env::var_os(INPUT_WAIT_ENV).is_none() {
            assert_eq!(input_wait().unwrap(), INPUT_WAIT);
        }
    }

    #[test]
    fn a_fifo_nobody_writes_to_times_out_and_a_written_one_is_read() {
        use std::io::Read;
        use std::time::{Duration, Instant};
        let (_dir, p) = fifo();
        let t0 = Instant::now();
        let mut input = open_input(&p, Duration::from_millis(200)).unwrap();
        let mut buf = Vec::new();
        let e = input.read_to_end(&mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        assert!(e.to_string().contains("no data came in 200ms"), "{e}");
        assert!(t0.elapsed() >= Duration::from_millis(200));
        // A writer that comes late, writes in two parts and closes.
        let w = {
            let p = p.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                let mut f = OpenOptions::new().write(true).open(&p).unwrap();
                f.write_all(b"{\"a\"").unwrap();
                f.flush().unwrap();
                std::thread::sleep(Duration::from_millis(50));
                f.write_all(b":1}").unwrap();
            })
        };
        let mut input = open_input(&p, Duration::from_secs(30)).unwrap();
        let mut buf = Vec::new();
        input.read_to_end(&mut buf).unwrap();
        w.join().unwrap();
        assert_eq!(buf, b"{\"a\":1}");
        assert!(!input.metadata().unwrap().is_file());
    }

    #[test]
    fn a_regular_file_input_reads_without_a_wait() {
        use std::io::Read;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        std::fs::write(&p, b"{}").unwrap();
        let mut input = open_input(&p, std::time::Duration::from_millis(1)).unwrap();
        assert_eq!(input.wait_ms, None);
        let mut s = String::new();
        input.read_to_string(&mut s).unwrap();
        assert_eq!(s, "{}");
        assert_eq!(open_input(dir.path(), INPUT_WAIT).unwrap().wait_ms, None);
        let (_d, f) = fifo();
        assert_eq!(open_input(&f, INPUT_WAIT).unwrap().wait_ms, Some(60_000));
    }

    #[test]
    fn regular_file_is_replaced_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        std::fs::write(&p, b"old").unwrap();
        use std::os::unix::fs::MetadataExt;
        let before = std::fs::metadata(&p).unwrap().ino();
        // Kept open: the old inode stays alive, so the new one cannot reuse its number.
        let _old = File::open(&p).unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        // Renamed over, not written in place: a new inode.
        assert_ne!(std::fs::metadata(&p).unwrap().ino(), before);
        assert!(!is_special(&p));
        assert!(!is_special(dir.path()));
        assert!(!is_special(&dir.path().join("absent")));
    }

    #[test]
    fn symlink_stays_a_link_and_its_target_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.json");
        let link = dir.path().join("link.json");
        std::fs::write(&target, b"old").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
    }

    #[test]
    fn device_is_written_through_not_replaced() {
        // A private node of the null device (1, 3) in a temporary directory,
        // never /dev/null itself: a broken write_atomic (a mutant) would
        // rename a regular file over the machine's /dev/null.
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("null");
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid C string; mknod creates a node or fails.
        let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
        if rc != 0 {
            let e = io::Error::last_os_error();
            // Creating a device node needs CAP_MKNOD; CI runs as root.
            assert!(std::env::var_os("CI").is_none(), "mknod: {e}");
            eprintln!("skipped: mknod needs root ({e})");
            return;
        }
        write_atomic(&p, b"x").unwrap();
        check_writable(&p).unwrap();
        let m = std::fs::metadata(&p).unwrap();
        assert!(m.file_type().is_char_device());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// A FIFO in a new temporary directory.
    fn fifo() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fifo");
        let st = std::process::Command::new("mkfifo")
            .arg(&p)
            .status()
            .unwrap();
        assert!(st.success());
        (dir, p)
    }

    #[test]
    fn fifo_is_written_through() {
        let (_dir, p) = fifo();
        let reader = {
            let p = p.clone();
            std::thread::spawn(move || std::fs::read(p).unwrap())
        };
        check_writable(&p).unwrap();
        write_atomic(&p, b"through").unwrap();
        assert_eq!(reader.join().unwrap(), b"through");
        assert!(is_special(&p));
    }

    #[test]
    fn flush_reaches_a_fifo_before_commit() {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let (_dir, p) = fifo();
        // The reader is open first (non-blocking), so opening for writing does not wait.
        let mut reader = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&p)
            .unwrap();
        let mut out = OutFile::create(&p).unwrap();
        out.write_all(b"abc").unwrap();
        let mut buf = [0u8; 8];
        // Still in the buffer: nothing to read yet.
        let e = reader.read(&mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        out.flush().unwrap();
        assert_eq!(reader.read(&mut buf).unwrap(), 3);
        assert_eq!(&buf[..3], b"abc");
        out.commit().unwrap();
    }

    #[test]
    fn errors_name_no_temporary_file() {
        let e = check_writable(Path::new("/proc/rtscope-no/x.json")).unwrap_err();
        assert!(!e.to_string().contains(".rtscope-"), "{e}");
        let e = write_atomic(Path::new("/nonexistent-dir/x.json"), b"x").unwrap_err();
        assert!(!e.to_string().contains(".rtscope-"), "{e}");
    }
}
