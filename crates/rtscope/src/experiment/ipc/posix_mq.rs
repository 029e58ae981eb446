//! POSIX message queue (what `pmqtest` measures): a queue of 8-byte messages
//! named `/rtscope-PID-TAG`, unlinked as soon as it is open (the descriptor,
//! inherited by a forked receiver, keeps it alive; nothing is left in
//! /dev/mqueue even if the run is killed). `mq_send` of the stamp, `mq_receive`.

use std::ffi::CString;
use std::io;
use std::sync::Arc;

use rtscope_core::sys::{self, PosixMq};

use super::{Channel, ChannelEnv, Received, Rx, Tx, CLOCK};

struct MqTx(Arc<PosixMq>);
struct MqRx(Arc<PosixMq>);

impl Tx for MqTx {
    fn send(&mut self, stamp: u64) -> io::Result<()> {
        self.0.send(stamp)
    }
}

impl Rx for MqRx {
    fn recv(&mut self) -> io::Result<Received> {
        let sent_ns = self.0.recv()?;
        let woke_ns = sys::clock_ns(CLOCK);
        Ok(Received { sent_ns, woke_ns })
    }
}

pub fn channel(env: &ChannelEnv) -> io::Result<Channel> {
    let name = CString::new(format!("/rtscope-{}-{}", sys::getpid(), env.tag))
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let q = Arc::new(PosixMq::open_unlinked(&name, 4)?);
    Ok(Channel {
        tx: Box::new(MqTx(q.clone())),
        rx: Box::new(MqRx(q)),
    })
}
