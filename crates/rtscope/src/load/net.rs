//! `net`: a UDP packet flood over loopback. Per instance one sender thread
//! sends `size`-byte datagrams to one receiver thread (unlimited or `rate`
//! packets per second, paced in 1 ms ticks). Stresses the network stack's
//! transmit and receive paths, and with them softirq (NET_RX) processing,
//! which can run in the interrupted context of any task.

use std::net::UdpSocket;
use std::time::Duration;

use anyhow::Context;
use rtscope_core::sys;

use super::Ctx;

pub const COUNTERS: &[&str] = &[
    "packets_sent",
    "packets_received",
    "bytes_sent",
    "send_errors",
];

pub fn run(ctx: &Ctx) -> anyhow::Result<()> {
    let rate = ctx.spec.count("rate").unwrap_or(0);
    let size = ctx.spec.size("size").unwrap_or(64) as usize;
    let rx = UdpSocket::bind("127.0.0.1:0").context("bind the receiver")?;
    let tx = UdpSocket::bind("127.0.0.1:0").context("bind the sender")?;
    tx.connect(rx.local_addr()?).context("connect")?;
    rx.set_read_timeout(Some(Duration::from_millis(100)))?;
    let counters = ctx.counters.clone();
    let stop = ctx.stop.clone();
    std::thread::Builder::new()
        .name("udp-recv".into())
        .stack_size(128 * 1024)
        .spawn(move || {
            let mut buf = vec![0u8; 65_536];
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if rx.recv(&mut buf).is_ok() {
                    counters.add(1, 1);
                }
            }
        })
        .context("cannot start the receiver thread")?;
    let msg = vec![0xa5u8; size];
    let send = || match tx.send(&msg) {
        Ok(_) => {
            ctx.add(0, 1);
            ctx.add(2, size as u64);
        }
        Err(_) => ctx.add(3, 1),
    };
    if rate == 0 {
        while !ctx.stopped() {
            for _ in 0..64 {
                send();
            }
        }
        return Ok(());
    }
    // Paced: rate/1000 packets per 1 ms tick, the remainder carried over.
    const TICK: u64 = 1_000_000;
    let mut next = sys::clock_ns(libc::CLOCK_MONOTONIC);
    let mut owed_milli: u64 = 0;
    while !ctx.stopped() {
        owed_milli += rate;
        for _ in 0..owed_milli / 1000 {
            send();
        }
        owed_milli %= 1000;
        next += TICK;
        let now = sys::clock_ns(libc::CLOCK_MONOTONIC);
        if now < next {
            sys::sleep_until(libc::CLOCK_MONOTONIC, next)?;
        } else if now > next + 100 * TICK {
            next = now; // far behind: do not burst
        }
    }
    Ok(())
}
