//! Named FIFO (as in the seed: one FIFO per direction, so a round trip uses two).
//! Each FIFO is created with `mkfifo` in the run's private temporary directory,
//! opened at both ends (read end non-blocking first, so that opening does not
//! wait for a writer, then switched back to blocking), and its path is removed
//! at once: nothing is left in the file system even if the run is killed.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;

use rtscope_core::sys;

use super::stream::{StreamRx, StreamTx};
use super::{Channel, ChannelEnv};

pub fn channel(env: &ChannelEnv) -> io::Result<Channel> {
    let path = env.dir.join(format!("fifo-{}", env.tag));
    sys::mkfifo(&path)?;
    let opened = (|| -> io::Result<(File, File)> {
        let r = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)?;
        let w = OpenOptions::new().write(true).open(&path)?;
        sys::set_blocking(&r)?;
        Ok((r, w))
    })();
    let removed = std::fs::remove_file(&path);
    let (r, w) = opened?;
    removed?;
    Ok(Channel {
        tx: Box::new(StreamTx(w)),
        rx: Box::new(StreamRx(r)),
    })
}
