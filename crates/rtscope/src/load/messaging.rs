//! `messaging`: hackbench-like groups. In each group, `fds` receivers each own
//! one pipe (or one end of a socketpair) and `fds` senders write 100-byte
//! messages to every receiver in turn, as fast as they can; receivers read
//! them. Threads block and wake constantly: it stresses the scheduler's
//! wake-up paths, pipe/socket locking and the context-switch path.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, Context};
use rtscope_core::sys;

use super::Ctx;

pub const COUNTERS: &[&str] = &["messages_sent", "messages_received", "bytes_moved"];
const MSG: usize = 100;

pub fn run(ctx: &Ctx) -> anyhow::Result<()> {
    let groups = ctx.spec.count("groups").unwrap_or(1) as usize;
    let fds = ctx.spec.count("fds").unwrap_or(4) as usize;
    let socket = ctx.spec.text_param("transport").as_deref() == Some("socket");
    let failure: Arc<Mutex<Option<String>>> = Arc::default();
    for g in 0..groups {
        let mut writers: Vec<Vec<Box<dyn Write + Send>>> = (0..fds).map(|_| Vec::new()).collect();
        for r in 0..fds {
            let (reader, ends): (Box<dyn Read + Send>, Vec<Box<dyn Write + Send>>) = if socket {
                let (a, b) = UnixStream::pair().context("socketpair")?;
                let ends = (0..fds)
                    .map(|_| b.try_clone().map(|s| Box::new(s) as Box<dyn Write + Send>))
                    .collect::<Result<_, _>>()
                    .context("dup")?;
                (Box::new(a), ends)
            } else {
                let (rd, wr) = sys::pipe().context("pipe")?;
                let wr = File::from(wr);
                let ends = (0..fds)
                    .map(|_| wr.try_clone().map(|f| Box::new(f) as Box<dyn Write + Send>))
                    .collect::<Result<_, _>>()
                    .context("dup")?;
                (Box::new(File::from(rd)), ends)
            };
            // Sender s gets its own handle on receiver r.
            for (s, w) in ends.into_iter().enumerate() {
                writers[s].push(w);
            }
            let counters = ctx.counters.clone();
            let fail = failure.clone();
            std::thread::Builder::new()
                .name(format!("recv-{g}-{r}"))
                .stack_size(64 * 1024)
                .spawn(move || receive(reader, &counters, &fail))
                .context("cannot start a receiver thread")?;
        }
        for (s, ws) in writers.into_iter().enumerate() {
            let mut ws = ws;
            let counters = ctx.counters.clone();
            let fail = failure.clone();
            let stop = ctx.stop.clone();
            std::thread::Builder::new()
                .name(format!("send-{g}-{s}"))
                .stack_size(64 * 1024)
                .spawn(move || {
                    let msg = [0x5au8; MSG];
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        for w in ws.iter_mut() {
                            if let Err(e) = w.write_all(&msg) {
                                if let Ok(mut f) = fail.lock() {
                                    *f = Some(format!("send: {e}"));
                                }
                                return;
                            }
                            counters.add(0, 1);
                        }
                    }
                })
                .context("cannot start a sender thread")?;
        }
    }
    // The threads run until the process exits (a blocked write or read needs
    // no waking up): this thread only watches the stop flag and failures.
    while !ctx.stopped() {
        if let Some(e) = failure.lock().ok().and_then(|f| f.clone()) {
            return Err(anyhow!(e));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

fn receive(
    mut r: Box<dyn Read + Send>,
    counters: &super::worker::Counters,
    fail: &Mutex<Option<String>>,
) {
    let mut buf = [0u8; MSG * 16];
    let mut partial = 0usize;
    loop {
        match r.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                partial += n;
                counters.add(1, (partial / MSG) as u64);
                counters.add(2, n as u64);
                partial %= MSG;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                if let Ok(mut f) = fail.lock() {
                    *f = Some(format!("receive: {e}"));
                }
                return;
            }
        }
    }
}
