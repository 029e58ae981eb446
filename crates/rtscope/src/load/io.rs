//! `io`: write `size` bytes to a file in a private temporary directory in
//! 64 KiB chunks, fsync, truncate, repeat. The directory is removed when the
//! load stops. Stresses the VFS write path, page-cache dirtying and writeback,
//! the filesystem journal and the block layer (on tmpfs, only the first two).

use std::io::{Seek, Write};

use anyhow::Context;

use super::Ctx;

pub const COUNTERS: &[&str] = &["bytes_written", "fsyncs"];
const CHUNK: usize = 64 * 1024;

pub fn run(ctx: &Ctx) -> anyhow::Result<()> {
    let size = ctx.spec.size("size").unwrap_or(4 << 20);
    let parent = ctx
        .spec
        .text_param("dir")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::Builder::new()
        .prefix(".rtscope-io-")
        .tempdir_in(&parent)
        .with_context(|| format!("cannot create a directory in {}", parent.display()))?;
    let path = dir.path().join(format!("load-{}", ctx.instance));
    let mut f = std::fs::File::create(&path).with_context(|| path.display().to_string())?;
    let chunk = vec![0x3cu8; CHUNK];
    'outer: while !ctx.stopped() {
        let mut left = size;
        while left > 0 {
            if ctx.stopped() {
                break 'outer;
            }
            let n = left.min(CHUNK as u64) as usize;
            f.write_all(&chunk[..n]).context("write")?;
            ctx.add(0, n as u64);
            left -= n as u64;
        }
        f.sync_all().context("fsync")?;
        ctx.add(1, 1);
        f.set_len(0).context("truncate")?;
        f.rewind().context("seek")?;
    }
    drop(f);
    dir.close()
        .context("cannot remove the temporary directory")?;
    Ok(())
}
