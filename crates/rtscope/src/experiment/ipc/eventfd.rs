//! eventfd: the sender writes its stamp as the 8-byte counter increment; the
//! receiver's blocking `read` returns it (and resets the counter) and the
//! receiver stamps on return. The stamp travels in the "message" itself.

use std::fs::File;
use std::io;

use rtscope_core::sys;

use super::stream::{StreamRx, StreamTx};
use super::{Channel, ChannelEnv};

pub fn channel(_: &ChannelEnv) -> io::Result<Channel> {
    let fd = sys::eventfd()?;
    let r = File::from(fd.try_clone()?);
    let w = File::from(fd);
    Ok(Channel {
        tx: Box::new(StreamTx(w)),
        rx: Box::new(StreamRx(r)),
    })
}
