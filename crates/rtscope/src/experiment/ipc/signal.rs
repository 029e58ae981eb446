//! Signal (what `sigwaittest` measures): the receiving thread blocks SIGUSR1 and
//! waits in `sigwaitinfo`; the sender stamps a shared slot and sends SIGUSR1 to
//! that very thread with `tgkill` (the thread and process ids are published in
//! shared memory when the receiver gets ready). The receiver stamps when
//! `sigwaitinfo` returns.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rtscope_core::sys::{self, SharedArray};

use super::{Channel, ChannelEnv, Received, Rx, Tx, CLOCK};

/// The signal used; every measurement thread blocks it.
pub const SIGNAL: i32 = libc::SIGUSR1;

const STAMP: usize = 0;
const PID: usize = 1;
const TID: usize = 2;

struct SigTx(Arc<SharedArray<AtomicU64>>);
struct SigRx {
    slots: Arc<SharedArray<AtomicU64>>,
    set: libc::sigset_t,
}

impl Tx for SigTx {
    fn send(&mut self, stamp: u64) -> io::Result<()> {
        let s = self.0.as_slice();
        s[STAMP].store(stamp, Ordering::Release);
        let pid = s[PID].load(Ordering::Relaxed) as i32;
        let tid = s[TID].load(Ordering::Relaxed) as i32;
        sys::tgkill(pid, tid, SIGNAL)
    }
}

impl Rx for SigRx {
    fn prepare(&mut self) -> io::Result<()> {
        sys::block_signals(&[SIGNAL])?;
        let s = self.slots.as_slice();
        s[PID].store(sys::getpid() as u64, Ordering::Relaxed);
        s[TID].store(sys::gettid() as u64, Ordering::Release);
        Ok(())
    }

    fn recv(&mut self) -> io::Result<Received> {
        sys::sigwait_one(&self.set)?;
        let woke_ns = sys::clock_ns(CLOCK);
        let sent_ns = self.slots.as_slice()[STAMP].load(Ordering::Acquire);
        Ok(Received { sent_ns, woke_ns })
    }
}

pub fn channel(_: &ChannelEnv) -> io::Result<Channel> {
    let slots = Arc::new(SharedArray::new(3)?);
    Ok(Channel {
        tx: Box::new(SigTx(slots.clone())),
        rx: Box::new(SigRx {
            slots,
            set: sys::sigset_of(&[SIGNAL]),
        }),
    })
}
