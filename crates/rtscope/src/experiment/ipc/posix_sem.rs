//! POSIX semaphore: an unnamed semaphore (`sem_init(pshared = 1)`) in shared
//! memory, so the same code serves threads and forked processes. The sender
//! stamps a shared slot and calls `sem_post`; the receiver stamps when `sem_wait` returns.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rtscope_core::sys::{self, SharedArray, SharedSem};

use super::{Channel, ChannelEnv, Received, Rx, Tx, CLOCK};

struct Shared {
    sem: SharedSem,
    stamp: SharedArray<AtomicU64>,
}

struct SemTx(Arc<Shared>);
struct SemRx(Arc<Shared>);

impl Tx for SemTx {
    fn send(&mut self, stamp: u64) -> io::Result<()> {
        self.0.stamp.as_slice()[0].store(stamp, Ordering::Release);
        self.0.sem.post()
    }
}

impl Rx for SemRx {
    fn recv(&mut self) -> io::Result<Received> {
        self.0.sem.wait()?;
        let woke_ns = sys::clock_ns(CLOCK);
        let sent_ns = self.0.stamp.as_slice()[0].load(Ordering::Acquire);
        Ok(Received { sent_ns, woke_ns })
    }
}

pub fn channel(_: &ChannelEnv) -> io::Result<Channel> {
    let s = Arc::new(Shared {
        sem: SharedSem::new()?,
        stamp: SharedArray::new(1)?,
    });
    Ok(Channel {
        tx: Box::new(SemTx(s.clone())),
        rx: Box::new(SemRx(s)),
    })
}
