//! UNIX domain sockets: a connected `socketpair` per direction, stream
//! (`SOCK_STREAM`) or datagram (`SOCK_DGRAM`); 8-byte stamp messages.

use std::io;
use std::os::unix::net::{UnixDatagram, UnixStream};

use rtscope_core::sys;

use super::stream::{StreamRx, StreamTx};
use super::{Channel, ChannelEnv, Received, Rx, Tx, CLOCK};

pub fn stream_channel(_: &ChannelEnv) -> io::Result<Channel> {
    let (a, b) = UnixStream::pair()?;
    Ok(Channel {
        tx: Box::new(StreamTx(a)),
        rx: Box::new(StreamRx(b)),
    })
}

struct DgramTx(UnixDatagram);
struct DgramRx(UnixDatagram);

impl Tx for DgramTx {
    fn send(&mut self, stamp: u64) -> io::Result<()> {
        loop {
            match self.0.send(&stamp.to_ne_bytes()) {
                Ok(8) => return Ok(()),
                Ok(_) => return Err(io::Error::other("short datagram")),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

impl Rx for DgramRx {
    fn recv(&mut self) -> io::Result<Received> {
        let mut b = [0u8; 8];
        loop {
            match self.0.recv(&mut b) {
                Ok(8) => break,
                Ok(_) => return Err(io::Error::other("short datagram")),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        let woke_ns = sys::clock_ns(CLOCK);
        Ok(Received {
            sent_ns: u64::from_ne_bytes(b),
            woke_ns,
        })
    }
}

pub fn dgram_channel(_: &ChannelEnv) -> io::Result<Channel> {
    let (a, b) = UnixDatagram::pair()?;
    Ok(Channel {
        tx: Box::new(DgramTx(a)),
        rx: Box::new(DgramRx(b)),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    /// A signal that interrupts a blocked receive (a handler without
    /// SA_RESTART, as the stop wake-up installs) is not an error: the receive
    /// goes on and gets the datagram.
    #[test]
    fn dgram_recv_goes_on_after_eintr() {
        let (a, b) = UnixDatagram::pair().unwrap();
        let (mut tx, mut rx) = (DgramTx(a), DgramRx(b));
        let (tid_tx, tid_rx) = mpsc::channel();
        let h = std::thread::spawn(move || {
            tid_tx
                .send(rtscope_core::rt::accept_wake().unwrap())
                .unwrap();
            rx.recv()
        });
        let tid = tid_rx.recv().unwrap();
        for _ in 0..5 {
            std::thread::sleep(Duration::from_millis(20));
            rtscope_core::rt::wake_thread(tid).unwrap();
        }
        tx.send(42).unwrap();
        let r = h.join().unwrap().expect("the receive went on after EINTR");
        assert_eq!(r.sent_ns, 42);
    }

    /// The same for a send blocked on a full socket buffer.
    #[test]
    fn dgram_send_goes_on_after_eintr() {
        let (a, b) = UnixDatagram::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let mut queued = 0;
        while a.send(&[0u8; 8]).is_ok() {
            queued += 1;
        }
        a.set_nonblocking(false).unwrap();
        assert!(queued > 0);
        let mut tx = DgramTx(a);
        let (tid_tx, tid_rx) = mpsc::channel();
        let (done_tx, done) = mpsc::channel();
        std::thread::spawn(move || {
            tid_tx
                .send(rtscope_core::rt::accept_wake().unwrap())
                .unwrap();
            let _ = done_tx.send(tx.send(42).is_ok());
        });
        let tid = tid_rx.recv().unwrap();
        for _ in 0..5 {
            std::thread::sleep(Duration::from_millis(20));
            rtscope_core::rt::wake_thread(tid).unwrap();
        }
        // Drain the queue: the blocked sender is woken once the buffer has
        // room (the kernel waits for three quarters of it to be free), and
        // its datagram comes last.
        b.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = [0u8; 8];
        let mut last = 0;
        for i in 0..=queued {
            b.recv(&mut buf)
                .unwrap_or_else(|e| panic!("datagram {i} of {}: {e}", queued + 1));
            last = u64::from_ne_bytes(buf);
        }
        assert_eq!(done.recv_timeout(Duration::from_secs(10)), Ok(true));
        assert_eq!(last, 42);
    }

    /// Any other error ends the call: a retry of every error would spin for
    /// ever on a closed peer or a timed-out receive.
    #[test]
    fn dgram_errors_other_than_eintr_end_the_call() {
        let (a, b) = UnixDatagram::pair().unwrap();
        drop(b);
        let mut tx = DgramTx(a);
        let (done_tx, done) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = done_tx.send(tx.send(1).is_err());
        });
        assert_eq!(done.recv_timeout(Duration::from_secs(10)), Ok(true));

        let (a, b) = UnixDatagram::pair().unwrap();
        b.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
        let mut rx = DgramRx(b);
        let (done_tx, done) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = done_tx.send(rx.recv().is_err());
        });
        assert_eq!(done.recv_timeout(Duration::from_secs(10)), Ok(true));
        drop(a);
    }
}
