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

impl OutFile {
    /// Starts writing `path`.
    pub fn create(path: &Path) -> io::Result<Self> {
        let real = resolve(path);
        if is_special(&real) {
            let f = OpenOptions::new().write(true).truncate(true).open(&real)?;
            return Ok(OutFile {
                w: BufWriter::with_capacity(1 << 16, f),
                target: Target::Through,
            });
        }
        if real.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "is a directory",
            ));
        }
        let tmp = tempfile::Builder::new()
            .prefix(".rtscope-")
            .suffix(".tmp")
            .tempfile_in(dir_of(&real))
            .map_err(plain)?;
        // tempfile creates files 0600; results and reports are meant to be shared.
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
        let f = tmp.reopen().map_err(plain)?;
        Ok(OutFile {
            w: BufWriter::with_capacity(1 << 20, f),
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
    let mut f = OutFile::create(path)?;
    f.write_all(bytes)?;
    f.commit()
}

/// Checks that `path` can be written, without leaving anything behind. Used to
/// refuse an unwritable output path before a run starts rather than losing
/// its results after.
pub fn check_writable(path: &Path) -> io::Result<()> {
    let real = resolve(path);
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

#[cfg(test)]
mod tests {
    use super::*;

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
