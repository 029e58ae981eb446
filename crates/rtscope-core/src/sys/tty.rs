//! Serial terminals for `--stream DEVICE --baud N`: whether a file is a
//! terminal (`isatty`), and raw mode at a speed (`tcgetattr`, `cfmakeraw`,
//! `cfsetspeed`, `tcsetattr`), so that the lines go out unchanged at the rate
//! the other end expects.

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

/// Puts the terminal `fd` in raw mode, at `speed` (a [`tty_speed_of`] value)
/// when given.
pub fn tty_make_raw(fd: RawFd, speed: Option<libc::speed_t>) -> io::Result<()> {
    // SAFETY: a zeroed termios is a valid value to be filled by tcgetattr;
    // the pointers are to this local for the calls' duration.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(fd, &mut t) != 0 {
            return Err(io::Error::last_os_error());
        }
        libc::cfmakeraw(&mut t);
        if let Some(s) = speed {
            if libc::cfsetspeed(&mut t, s) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if libc::tcsetattr(fd, libc::TCSANOW, &t) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
