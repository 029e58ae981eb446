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
