//! Kernel receive timestamps on sockets (`rtscope irq --source net`): the
//! kernel stamps each packet in its receive path (software RX stamp,
//! `SO_TIMESTAMPNS`, CLOCK_REALTIME) and hands the stamp over with the data
//! in a control message of `recvmsg`.

use std::io;
use std::os::fd::RawFd;

/// `SO_TIMESTAMPNS_NEW` (64-bit `tv_sec` on every architecture, since 5.1).
const SO_TIMESTAMPNS_NEW: libc::c_int = 64;

/// Asks the kernel to stamp every received packet of `fd` (`SO_TIMESTAMPNS`).
pub fn enable_rx_timestamps(fd: RawFd) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: `one` outlives the call and its size is passed; the kernel only reads it.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A timestamp control message's payload as ns: two 64-bit words
/// (`__kernel_timespec`, or `timespec` on 64-bit), or two 32-bit words (the
/// old `timespec` of a 32-bit kernel ABI).
pub fn stamp_from_payload(p: &[u8]) -> Option<u64> {
    let (s, ns) = match p.len() {
        16.. => (
            i64::from_ne_bytes(p[0..8].try_into().ok()?),
            i64::from_ne_bytes(p[8..16].try_into().ok()?),
        ),
        8.. => (
            i64::from(i32::from_ne_bytes(p[0..4].try_into().ok()?)),
            i64::from(i32::from_ne_bytes(p[4..8].try_into().ok()?)),
        ),
        _ => return None,
    };
    (s >= 0 && (0..1_000_000_000).contains(&ns)).then(|| s as u64 * 1_000_000_000 + ns as u64)
}

/// Receives one datagram into `buf` (blocking, or until the socket's read
/// timeout): its length and the kernel's receive stamp (CLOCK_REALTIME ns)
/// when there is one. No allocation: the control buffer is on the stack.
pub fn recv_stamped(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
    let mut control = [0u64; 16];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is plain data; zeroed is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: `msg` points at `iov` (into `buf`) and `control`, both alive
    // and of the lengths given, for the duration of the call.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: the CMSG_* macros walk the control buffer the kernel filled,
    // within `msg_controllen`; each header's data lies inside it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            let h = &*c;
            if h.cmsg_level == libc::SOL_SOCKET
                && (h.cmsg_type == libc::SCM_TIMESTAMPNS || h.cmsg_type == SO_TIMESTAMPNS_NEW)
            {
                let data = libc::CMSG_DATA(c);
                let len = (h.cmsg_len as usize).saturating_sub(data.offset_from(c.cast()) as usize);
                stamp = stamp_from_payload(std::slice::from_raw_parts(data, len.min(16)));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, stamp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn payloads() {
        let mut p = [0u8; 16];
        p[0..8].copy_from_slice(&5i64.to_ne_bytes());
        p[8..16].copy_from_slice(&7i64.to_ne_bytes());
        assert_eq!(stamp_from_payload(&p), Some(5_000_000_007));
        let mut q = [0u8; 8];
        q[0..4].copy_from_slice(&3i32.to_ne_bytes());
        q[4..8].copy_from_slice(&9i32.to_ne_bytes());
        assert_eq!(stamp_from_payload(&q), Some(3_000_000_009));
        assert_eq!(stamp_from_payload(&[0; 4]), None);
        // Out of range: a negative second, a nanosecond field of a whole second or less than 0.
        let stamp = |s: i64, ns: i64| {
            let mut p = [0u8; 16];
            p[0..8].copy_from_slice(&s.to_ne_bytes());
            p[8..16].copy_from_slice(&ns.to_ne_bytes());
            stamp_from_payload(&p)
        };
        assert_eq!(stamp(-1, 5), None);
        assert_eq!(stamp(2, 1_000_000_000), None);
        assert_eq!(stamp(2, -1), None);
        assert_eq!(stamp(0, 999_999_999), Some(999_999_999));
    }

    /// Asks for receive stamps on `fd`; false (the test passes over) only
    /// where qemu's user-mode emulation (the ARM CI) does not pass the
    /// option on: a real kernel must take it.
    fn stamps_on(fd: RawFd) -> bool {
        match enable_rx_timestamps(fd) {
            Err(e)
                if e.raw_os_error() == Some(libc::ENOPROTOOPT) && !cfg!(target_arch = "x86_64") =>
            {
                eprintln!("skipped: SO_TIMESTAMPNS not available here ({e})");
                false
            }
            r => {
                r.unwrap();
                true
            }
        }
    }

    #[test]
    fn loopback_packets_carry_a_stamp() {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        if !stamps_on(rx.as_raw_fd()) {
            return;
        }
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let before = crate::sys::clock_ns(libc::CLOCK_REALTIME);
        tx.send_to(b"12345678", rx.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 64];
        let (n, stamp) = recv_stamped(rx.as_raw_fd(), &mut buf).unwrap();
        let after = crate::sys::clock_ns(libc::CLOCK_REALTIME);
        assert_eq!(n, 8);
        let s = stamp.expect("a receive stamp");
        assert!(s >= before && s <= after, "{before} {s} {after}");
        // An empty datagram is a datagram.
        tx.send_to(b"", rx.local_addr().unwrap()).unwrap();
        let (n, stamp) = recv_stamped(rx.as_raw_fd(), &mut buf).unwrap();
        assert_eq!(n, 0);
        assert!(stamp.is_some_and(|s| s >= before));
        // Without the option, no stamp.
        let plain = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.send_to(b"x", plain.local_addr().unwrap()).unwrap();
        assert_eq!(
            recv_stamped(plain.as_raw_fd(), &mut buf).unwrap(),
            (1, None)
        );
        assert!(recv_stamped(-1, &mut buf).is_err());
    }

    /// A UNIX datagram socket with credentials passed as well: the
    /// credentials' control message (SOL_SOCKET, after the stamp) is not
    /// taken for a stamp.
    #[test]
    fn only_the_stamp_message_is_read_as_a_stamp() {
        let (tx, rx) = std::os::unix::net::UnixDatagram::pair().unwrap();
        if !stamps_on(rx.as_raw_fd()) {
            return;
        }
        let one: libc::c_int = 1;
        // SAFETY: as in enable_rx_timestamps.
        let rc = unsafe {
            libc::setsockopt(
                rx.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PASSCRED,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(rc, 0);
        let before = crate::sys::clock_ns(libc::CLOCK_REALTIME);
        tx.send(b"abc").unwrap();
        let mut buf = [0u8; 16];
        let (n, stamp) = recv_stamped(rx.as_raw_fd(), &mut buf).unwrap();
        let after = crate::sys::clock_ns(libc::CLOCK_REALTIME);
        assert_eq!(n, 3);
        let s = stamp.expect("a receive stamp");
        assert!(s >= before && s <= after, "{before} {s} {after}");
    }
}
