//! `/dev/rtc` periodic interrupts (`rtscope irq --source rtc`): the rate
//! (`RTC_IRQP_SET`), periodic interrupts on and off (`RTC_PIE_ON`/`_OFF`),
//! and the blocking `read` of one `unsigned long` per interrupt batch (low
//! byte: the interrupt kinds, `RTC_PF` = 0x40 for periodic; the rest: the
//! number of interrupts since the last read).

use std::io;
use std::os::fd::RawFd;

const RTC_MAGIC: libc::c_ulong = b'p' as libc::c_ulong;
/// `_IO('p', 0x05)`.
const RTC_PIE_ON: libc::c_ulong = (RTC_MAGIC << 8) | 0x05;
/// `_IO('p', 0x06)`.
const RTC_PIE_OFF: libc::c_ulong = (RTC_MAGIC << 8) | 0x06;
/// `_IOW('p', 0x0c, unsigned long)`.
const RTC_IRQP_SET: libc::c_ulong = (1 << 30)
    | ((std::mem::size_of::<libc::c_ulong>() as libc::c_ulong) << 16)
    | (RTC_MAGIC << 8)
    | 0x0c;

/// The periodic-interrupt flag in a read word.
pub const RTC_PF: u64 = 0x40;

fn check(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Sets the periodic interrupt rate (a power of two, at most the device's
/// `max_user_freq` without CAP_SYS_RESOURCE).
pub fn rtc_set_rate(fd: RawFd, hz: u64) -> io::Result<()> {
    // SAFETY: RTC_IRQP_SET takes the rate by value; no memory is passed.
    check(unsafe { libc::ioctl(fd, RTC_IRQP_SET as _, hz as libc::c_ulong) })
}

/// Turns periodic interrupts on or off.
pub fn rtc_periodic(fd: RawFd, on: bool) -> io::Result<()> {
    let req = if on { RTC_PIE_ON } else { RTC_PIE_OFF };
    // SAFETY: RTC_PIE_ON/OFF take no argument.
    check(unsafe { libc::ioctl(fd, req as _, 0) })
}

/// Blocks until the next interrupt(s); the word the driver returns. A
/// signal handler interrupting the wait gives `ErrorKind::Interrupted` (so
/// that a stop can end it, see `rt::wake_thread`).
pub fn rtc_read(fd: RawFd) -> io::Result<u64> {
    let mut w: libc::c_ulong = 0;
    // SAFETY: reads at most size_of(c_ulong) bytes into `w`, which lives across the call.
    let n = unsafe {
        libc::read(
            fd,
            (&mut w as *mut libc::c_ulong).cast(),
            std::mem::size_of::<libc::c_ulong>(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n as usize != std::mem::size_of::<libc::c_ulong>() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("short read ({n} bytes)"),
        ));
    }
    Ok(w as u64)
}

/// The number of interrupts a read word reports.
pub fn rtc_count(word: u64) -> u64 {
    word >> 8
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    #[test]
    fn request_numbers() {
        assert_eq!(RTC_PIE_ON, 0x7005);
        assert_eq!(RTC_PIE_OFF, 0x7006);
        #[cfg(target_pointer_width = "64")]
        assert_eq!(RTC_IRQP_SET, 0x4008_700c);
    }

    /// A FIFO stands in for the device: the words are what the driver writes.
    #[test]
    fn reads_from_a_fake_device() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rtc");
        let cp = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(cp.as_ptr(), 0o600) }, 0);
        let p2 = p.clone();
        let writer = std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(p2).unwrap();
            for w in [(1u64 << 8) | RTC_PF, (3 << 8) | RTC_PF] {
                f.write_all(&(w as libc::c_ulong).to_ne_bytes()).unwrap();
            }
        });
        let f = std::fs::File::open(&p).unwrap();
        let a = rtc_read(f.as_raw_fd()).unwrap();
        let b = rtc_read(f.as_raw_fd()).unwrap();
        writer.join().unwrap();
        assert_eq!((rtc_count(a), a & RTC_PF), (1, RTC_PF));
        assert_eq!(rtc_count(b), 3);
        // The writer is gone: end of file is an error, not a zero word.
        // End of file is a short read; a bad descriptor the kernel's error.
        assert_eq!(
            rtc_read(f.as_raw_fd()).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        assert_eq!(rtc_read(-1).unwrap_err().raw_os_error(), Some(libc::EBADF));
        // A FIFO is no RTC: the ioctls say so.
        let e = rtc_set_rate(f.as_raw_fd(), 64).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTTY));
        for on in [true, false] {
            let e = rtc_periodic(f.as_raw_fd(), on).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ENOTTY));
        }
    }
}
