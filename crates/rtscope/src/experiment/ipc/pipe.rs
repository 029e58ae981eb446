//! pipe: an anonymous pipe (`pipe2`) per direction; 8-byte stamp messages.

use std::fs::File;
use std::io;

use rtscope_core::sys;

use super::stream::{StreamRx, StreamTx};
use super::{Channel, ChannelEnv};

pub fn channel(_: &ChannelEnv) -> io::Result<Channel> {
    let (r, w) = sys::pipe()?;
    Ok(Channel {
        tx: Box::new(StreamTx(File::from(w))),
        rx: Box::new(StreamRx(File::from(r))),
    })
}
