//! System V semaphore: a private set of one semaphore (`semget(IPC_PRIVATE)`);
//! the sender stamps a shared slot and does `semop(+1)`, the receiver stamps when
//! its `semop(-1)` returns. Removed with `IPC_RMID` when the run ends.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rtscope_core::sys::{self, SharedArray, SysvSem};

use super::{Channel, ChannelEnv, Received, Rx, Tx, CLOCK};

struct Shared {
    sem: SysvSem,
    stamp: SharedArray<AtomicU64>,
}

struct SemTx(Arc<Shared>);
struct SemRx(Arc<Shared>);

impl Tx for SemTx {
    fn send(&mut self, stamp: u64) -> io::Result<()> {
        self.0.stamp.as_slice()[0].store(stamp, Ordering::Release);
        self.0.sem.op(0, 1)
    }
}

impl Rx for SemRx {
    fn recv(&mut self) -> io::Result<Received> {
        self.0.sem.op(0, -1)?;
        let woke_ns = sys::clock_ns(CLOCK);
        let sent_ns = self.0.stamp.as_slice()[0].load(Ordering::Acquire);
        Ok(Received { sent_ns, woke_ns })
    }
}

pub fn channel(env: &ChannelEnv) -> io::Result<Channel> {
    let sem = SysvSem::new(1)?;
    env.created_sysv(sys::SysvKind::Sem, sem.id());
    let s = Arc::new(Shared {
        sem,
        stamp: SharedArray::new(1)?,
    });
    Ok(Channel {
        tx: Box::new(SemTx(s.clone())),
        rx: Box::new(SemRx(s)),
    })
}
