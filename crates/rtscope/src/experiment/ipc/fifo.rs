//! Named FIFO (as in the study (docs/ipc.md): one FIFO per direction, so a round trip uses two).
//! Each FIFO is created with `mkfifo` in a private temporary directory of its
//! own (`$TMPDIR/rtscope-ipc-*`), opened at both ends (read end non-blocking
//! first, so that opening does not wait for a writer, then switched back to
//! blocking), and its path and the directory are removed at once: the open
//! descriptors keep the FIFO alive, and nothing is left in the file system even
//! if the run is killed.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;

use rtscope_core::sys;

use super::stream::{StreamRx, StreamTx};
use super::{Channel, ChannelEnv};

pub fn channel(env: &ChannelEnv) -> io::Result<Channel> {
    let dir = tempfile::Builder::new().prefix("rtscope-ipc-").tempdir()?;
    let path = dir.path().join(format!("fifo-{}", env.tag));
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
    let removed = std::fs::remove_file(&path).and_then(|()| dir.close());
    let (r, w) = opened?;
    removed?;
    Ok(Channel {
        tx: Box::new(StreamTx(w)),
        rx: Box::new(StreamRx(r)),
    })
}
