//! Serial terminals for `--stream DEVICE --baud N`: whether a file is a
//! terminal (`isatty`), and raw mode at a speed, so that the lines go out
//! unchanged at the rate the other end expects.
//!
//! Raw mode and the speed are set with the kernel's own `TCGETS`/`TCSETS`
//! ioctls on the kernel's `struct termios`, not through the C library's
//! `tcsetattr`/`cfsetspeed`: glibc 2.42 changed what `speed_t` means and the
//! `libc` crate binds the older versioned symbols (`cfsetspeed@GLIBC_2.4`),
//! which a static link (the armv7 build) cannot resolve. The kernel ABI is
//! the same on x86-64, arm and aarch64.

use std::io;
use std::os::fd::RawFd;

/// The `speed_t` of a baud rate, if it is one of the standard rates.
pub fn tty_speed_of(baud: u32) -> Option<libc::speed_t> {
    Some(match baud {
        50 => libc::B50,
        75 => libc::B75,
        110 => libc::B110,
        134 => libc::B134,
        150 => libc::B150,
        200 => libc::B200,
        300 => libc::B300,
        600 => libc::B600,
        1200 => libc::B1200,
        1800 => libc::B1800,
        2400 => libc::B2400,
        4800 => libc::B4800,
        9600 => libc::B9600,
        19200 => libc::B19200,
        38400 => libc::B38400,
        57600 => libc::B57600,
        115200 => libc::B115200,
        230400 => libc::B230400,
        460800 => libc::B460800,
        500000 => libc::B500000,
        576000 => libc::B576000,
        921600 => libc::B921600,
        1000000 => libc::B1000000,
        1152000 => libc::B1152000,
        1500000 => libc::B1500000,
        2000000 => libc::B2000000,
        _ => return None,
    })
}

/// Whether `fd` is a terminal.
pub fn is_tty(fd: RawFd) -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(fd) == 1 }
}

/// The kernel's `struct termios` (`TCGETS`/`TCSETS`; asm-generic layout,
/// used by x86-64, arm and aarch64).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct KernelTermios {
    c_iflag: libc::tcflag_t,
    c_oflag: libc::tcflag_t,
    c_cflag: libc::tcflag_t,
    c_lflag: libc::tcflag_t,
    c_line: libc::cc_t,
    c_cc: [libc::cc_t; 19],
}

/// Raw mode, as `cfmakeraw` sets it, and the speed in the `CBAUD` bits.
fn make_raw(t: &mut KernelTermios, speed: Option<libc::speed_t>) {
    t.c_iflag &= !(libc::IGNBRK
        | libc::BRKINT
        | libc::PARMRK
        | libc::ISTRIP
        | libc::INLCR
        | libc::IGNCR
        | libc::ICRNL
        | libc::IXON);
    t.c_oflag &= !libc::OPOST;
    t.c_lflag &= !(libc::ECHO | libc::ECHONL | libc::ICANON | libc::ISIG | libc::IEXTEN);
    t.c_cflag &= !(libc::CSIZE | libc::PARENB);
    t.c_cflag |= libc::CS8;
    t.c_cc[libc::VMIN] = 1;
    t.c_cc[libc::VTIME] = 0;
    if let Some(s) = speed {
        t.c_cflag = (t.c_cflag & !libc::CBAUD) | s;
    }
}

/// Puts the terminal `fd` in raw mode, at `speed` (a [`tty_speed_of`] value)
/// when given.
pub fn tty_make_raw(fd: RawFd, speed: Option<libc::speed_t>) -> io::Result<()> {
    let mut t = KernelTermios::default();
    // SAFETY: TCGETS fills a kernel termios, which `t` is (size and layout);
    // the pointer is to this local for the call's duration.
    if unsafe { libc::ioctl(fd, libc::TCGETS as _, &mut t as *mut KernelTermios) } != 0 {
        return Err(io::Error::last_os_error());
    }
    make_raw(&mut t, speed);
    // SAFETY: as above; TCSETS only reads `t`.
    if unsafe { libc::ioctl(fd, libc::TCSETS as _, &t as *const KernelTermios) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_mode_and_speed_bits() {
        let mut t = KernelTermios {
            c_iflag: libc::ICRNL | libc::IXON | libc::IUTF8,
            c_oflag: libc::OPOST | libc::ONLCR,
            c_cflag: libc::B38400 | libc::CS7 | libc::PARENB | libc::CREAD,
            c_lflag: libc::ECHO | libc::ICANON | libc::ISIG,
            ..Default::default()
        };
        make_raw(&mut t, Some(libc::B115200));
        assert_eq!(t.c_iflag, libc::IUTF8);
        assert_eq!(t.c_oflag, libc::ONLCR);
        assert_eq!(t.c_cflag, libc::B115200 | libc::CS8 | libc::CREAD);
        assert_eq!(t.c_lflag, 0);
        assert_eq!((t.c_cc[libc::VMIN], t.c_cc[libc::VTIME]), (1, 0));
        make_raw(&mut t, None);
        assert_eq!(t.c_cflag & libc::CBAUD, libc::B115200);
    }

    #[test]
    fn every_standard_rate_has_its_speed() {
        let rates = [
            (50, libc::B50),
            (75, libc::B75),
            (110, libc::B110),
            (134, libc::B134),
            (150, libc::B150),
            (200, libc::B200),
            (300, libc::B300),
            (600, libc::B600),
            (1200, libc::B1200),
            (1800, libc::B1800),
            (2400, libc::B2400),
            (4800, libc::B4800),
            (9600, libc::B9600),
            (19200, libc::B19200),
            (38400, libc::B38400),
            (57600, libc::B57600),
            (115200, libc::B115200),
            (230400, libc::B230400),
            (460800, libc::B460800),
            (500000, libc::B500000),
            (576000, libc::B576000),
            (921600, libc::B921600),
            (1000000, libc::B1000000),
            (1152000, libc::B1152000),
            (1500000, libc::B1500000),
            (2000000, libc::B2000000),
        ];
        for (baud, speed) in rates {
            assert_eq!(tty_speed_of(baud), Some(speed), "{baud}");
        }
        for odd in [0, 9601, 3_000_001] {
            assert_eq!(tty_speed_of(odd), None);
        }
    }

    /// Raw mode clears every flag cfmakeraw clears, from a terminal with all set.
    #[test]
    fn raw_mode_clears_each_of_its_flags() {
        let mut t = KernelTermios {
            c_iflag: !0,
            c_oflag: !0,
            c_cflag: !0,
            c_lflag: !0,
            ..Default::default()
        };
        make_raw(&mut t, Some(libc::B9600));
        let i = libc::IGNBRK
            | libc::BRKINT
            | libc::PARMRK
            | libc::ISTRIP
            | libc::INLCR
            | libc::IGNCR
            | libc::ICRNL
            | libc::IXON;
        assert_eq!(t.c_iflag, !i);
        assert_eq!(t.c_oflag, !libc::OPOST);
        let l = libc::ECHO | libc::ECHONL | libc::ICANON | libc::ISIG | libc::IEXTEN;
        assert_eq!(t.c_lflag, !l);
        assert_eq!(
            t.c_cflag,
            (!(libc::CSIZE | libc::PARENB | libc::CBAUD)) | libc::CS8 | libc::B9600
        );
    }

    /// A pseudo-terminal is a terminal and is put in raw mode at a speed; a
    /// file is neither.
    #[test]
    fn a_pty_is_made_raw() {
        // SAFETY: posix_openpt/grantpt/unlockpt/ptsname_r on the descriptor
        // just opened; `name` is large enough and NUL-terminated by ptsname_r.
        let (master, slave) = unsafe {
            let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
            assert!(m >= 0, "{}", io::Error::last_os_error());
            assert_eq!(libc::grantpt(m), 0);
            assert_eq!(libc::unlockpt(m), 0);
            let mut name = [0 as libc::c_char; 64];
            assert_eq!(libc::ptsname_r(m, name.as_mut_ptr(), name.len()), 0);
            let s = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
            assert!(s >= 0);
            (m, s)
        };
        assert!(is_tty(slave) && is_tty(master));
        tty_make_raw(slave, Some(libc::B57600)).unwrap();
        let mut t = KernelTermios::default();
        // SAFETY: as in tty_make_raw.
        let rc = unsafe { libc::ioctl(slave, libc::TCGETS as _, &mut t as *mut KernelTermios) };
        assert_eq!(rc, 0);
        assert_eq!(t.c_cflag & libc::CBAUD, libc::B57600);
        assert_eq!(t.c_lflag & (libc::ICANON | libc::ECHO), 0);
        assert_eq!(t.c_cflag & libc::CSIZE, libc::CS8);
        // SAFETY: both descriptors are ours.
        unsafe {
            libc::close(slave);
            libc::close(master);
        }
        let f = tempfile::tempfile().unwrap();
        use std::os::fd::AsRawFd;
        assert!(!is_tty(f.as_raw_fd()));
        assert_eq!(
            tty_make_raw(f.as_raw_fd(), None)
                .unwrap_err()
                .raw_os_error(),
            Some(libc::ENOTTY)
        );
    }

    #[test]
    fn kernel_termios_has_the_kernel_size() {
        // 4 flags of 4 bytes, c_line, NCCS = 19.
        assert_eq!(std::mem::size_of::<KernelTermios>(), 36);
    }
}
