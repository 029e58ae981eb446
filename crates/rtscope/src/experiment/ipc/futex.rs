//! futex: the sender stores 1 into a shared 32-bit word and calls `FUTEX_WAKE`;
//! the receiver sleeps in `FUTEX_WAIT` while the word is 0. The send stamp goes
//! through a shared slot next to the word. This is the primitive that every
//! glibc semaphore, mutex and condition variable is built on, with nothing around it.

use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use rtscope_core::sys::{self, SharedArray};

use super::{Channel, ChannelEnv, Received, Rx, Tx, CLOCK};

/// A one-shot event on a shared futex word, with a stamp slot.
pub struct Event {
    word: SharedArray<AtomicU32>,
    stamp: SharedArray<AtomicU64>,
}

impl Event {
    pub fn new() -> io::Result<Self> {
        Ok(Event {
            word: SharedArray::new(1)?,
            stamp: SharedArray::new(1)?,
        })
    }

    /// Publishes `stamp` and wakes the waiter.
    #[inline]
    pub fn post(&self, stamp: u64) -> io::Result<()> {
        self.stamp.as_slice()[0].store(stamp, Ordering::Relaxed);
        let w = &self.word.as_slice()[0];
        w.store(1, Ordering::Release);
        sys::futex_wake(w, 1)
    }

    /// Sleeps until posted; returns the stamp and the wake-up time.
    #[inline]
    pub fn wait(&self) -> io::Result<Received> {
        let w = &self.word.as_slice()[0];
        loop {
            if w.swap(0, Ordering::Acquire) == 1 {
                let woke_ns = sys::clock_ns(CLOCK);
                let sent_ns = self.stamp.as_slice()[0].load(Ordering::Relaxed);
                return Ok(Received { sent_ns, woke_ns });
            }
            sys::futex_wait(w, 0)?;
        }
    }
}

struct FutexTx(Arc<Event>);
struct FutexRx(Arc<Event>);

impl Tx for FutexTx {
    fn send(&mut self, stamp: u64) -> io::Result<()> {
        self.0.post(stamp)
    }
}

impl Rx for FutexRx {
    fn recv(&mut self) -> io::Result<Received> {
        self.0.wait()
    }
}

pub fn channel(_: &ChannelEnv) -> io::Result<Channel> {
    let e = Arc::new(Event::new()?);
    Ok(Channel {
        tx: Box::new(FutexTx(e.clone())),
        rx: Box::new(FutexRx(e)),
    })
}
