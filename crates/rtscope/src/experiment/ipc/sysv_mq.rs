//! System V message queue: a private queue (`msgget(IPC_PRIVATE)`) per
//! direction, one 8-byte message (`msgsnd`/`msgrcv`) per exchange. Removed with
//! `IPC_RMID` when the run ends.

use std::io;
use std::sync::Arc;

use rtscope_core::sys::{self, SysvMsgQueue};

use super::{Channel, ChannelEnv, Received, Rx, Tx, CLOCK};

struct MsgTx(Arc<SysvMsgQueue>);
struct MsgRx(Arc<SysvMsgQueue>);

impl Tx for MsgTx {
    fn send(&mut self, stamp: u64) -> io::Result<()> {
        self.0.send(stamp)
    }
}

impl Rx for MsgRx {
    fn recv(&mut self) -> io::Result<Received> {
        let sent_ns = self.0.recv()?;
        let woke_ns = sys::clock_ns(CLOCK);
        Ok(Received { sent_ns, woke_ns })
    }
}

pub fn channel(env: &ChannelEnv) -> io::Result<Channel> {
    let q = SysvMsgQueue::new()?;
    env.created_sysv(sys::SysvKind::Msg, q.id());
    let q = Arc::new(q);
    Ok(Channel {
        tx: Box::new(MsgTx(q.clone())),
        rx: Box::new(MsgRx(q)),
    })
}
