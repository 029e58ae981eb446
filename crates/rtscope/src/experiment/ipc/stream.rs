//! The shared half of the byte-stream mechanisms (pipe, FIFO, UNIX stream
//! socket, eventfd): the 8-byte send stamp is the message; the receiver stamps
//! when its blocking `read` returns.

use std::io::{self, Read, Write};

use rtscope_core::sys;

use super::{Received, Rx, Tx, CLOCK};

/// Writes each stamp as 8 bytes.
pub struct StreamTx<W>(pub W);
/// Reads 8-byte stamps.
pub struct StreamRx<R>(pub R);

impl<W: Write + Send> Tx for StreamTx<W> {
    fn send(&mut self, stamp: u64) -> io::Result<()> {
        self.0.write_all(&stamp.to_ne_bytes())
    }
}

impl<R: Read + Send> Rx for StreamRx<R> {
    fn recv(&mut self) -> io::Result<Received> {
        let mut b = [0u8; 8];
        self.0.read_exact(&mut b)?;
        let woke_ns = sys::clock_ns(CLOCK);
        Ok(Received {
            sent_ns: u64::from_ne_bytes(b),
            woke_ns,
        })
    }
}
