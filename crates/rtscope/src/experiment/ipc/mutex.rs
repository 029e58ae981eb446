//! pthread mutex handoff (what `ptsematest` measures): the sender holds a
//! process-shared mutex while the receiver blocks in `pthread_mutex_lock`; the
//! sender stamps and unlocks, the receiver stamps when its lock returns.
//!
//! After each handoff two futex events put the mutex back into the sender's
//! hands before the receiver blocks again (receiver: unlock, post "released",
//! wait "relocked"; sender: wait "released", lock, post "relocked"). They run
//! after both stamps and so are not part of the measured time. Handoff only: a
//! mutex carries no reply.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rtscope_core::sys::{self, SharedArray, SharedMutex};

use super::futex::Event;
use super::{Channel, ChannelEnv, Received, Rx, Tx, CLOCK};

struct Shared {
    mutex: SharedMutex,
    stamp: SharedArray<AtomicU64>,
    released: Event,
    relocked: Event,
}

struct MutexTx(Arc<Shared>);
struct MutexRx(Arc<Shared>);

impl Tx for MutexTx {
    fn prepare(&mut self) -> io::Result<()> {
        self.0.mutex.lock()
    }

    fn send(&mut self, stamp: u64) -> io::Result<()> {
        let s = &self.0;
        s.stamp.as_slice()[0].store(stamp, Ordering::Release);
        s.mutex.unlock()?;
        s.released.wait()?;
        s.mutex.lock()?;
        s.relocked.post(0)
    }
}

impl Rx for MutexRx {
    fn recv(&mut self) -> io::Result<Received> {
        let s = &self.0;
        s.mutex.lock()?;
        let woke_ns = sys::clock_ns(CLOCK);
        let sent_ns = s.stamp.as_slice()[0].load(Ordering::Acquire);
        s.mutex.unlock()?;
        s.released.post(0)?;
        s.relocked.wait()?;
        Ok(Received { sent_ns, woke_ns })
    }
}

pub fn channel(_: &ChannelEnv) -> io::Result<Channel> {
    let s = Arc::new(Shared {
        mutex: SharedMutex::new()?,
        stamp: SharedArray::new(1)?,
        released: Event::new()?,
        relocked: Event::new()?,
    });
    Ok(Channel {
        tx: Box::new(MutexTx(s.clone())),
        rx: Box::new(MutexRx(s)),
    })
}
