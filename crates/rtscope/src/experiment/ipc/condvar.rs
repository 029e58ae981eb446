//! pthread condition variable: process-shared mutex + condition + flag. The
//! sender stamps, locks, raises the flag, signals and unlocks; the receiver
//! stamps once `pthread_cond_wait` has returned with the mutex reacquired, so
//! the figure includes the wake-up and the mutex hand-back.

use std::io;
use std::sync::Arc;

use rtscope_core::sys::SharedCondFlag;

use super::{Channel, ChannelEnv, Received, Rx, Tx, CLOCK};

struct CondTx(Arc<SharedCondFlag>);
struct CondRx(Arc<SharedCondFlag>);

impl Tx for CondTx {
    fn send(&mut self, stamp: u64) -> io::Result<()> {
        self.0.raise(stamp)
    }
}

impl Rx for CondRx {
    fn recv(&mut self) -> io::Result<Received> {
        let (sent_ns, woke_ns) = self.0.wait(CLOCK)?;
        Ok(Received { sent_ns, woke_ns })
    }
}

pub fn channel(_: &ChannelEnv) -> io::Result<Channel> {
    let c = Arc::new(SharedCondFlag::new()?);
    Ok(Channel {
        tx: Box::new(CondTx(c.clone())),
        rx: Box::new(CondRx(c)),
    })
}
