//! Unit tests of the ipc experiment: the table, planning, timing arithmetic,
//! and each mechanism's channel carrying a stamp between two threads.

use super::*;

#[test]
fn table_names_are_unique_and_natural_is_supported() {
    for (i, m) in MECHANISMS.iter().enumerate() {
        assert!(m.patterns.contains(&m.natural), "{}", m.name);
        assert!(
            MECHANISMS[i + 1..].iter().all(|o| o.name != m.name),
            "{} twice",
            m.name
        );
        assert_eq!(find(m.name).map(|f| f.name), Some(m.name));
    }
    assert!(find("nope").is_none());
    assert_eq!(MECHANISMS.len(), 13);
}

#[test]
fn natural_patterns_by_kind() {
    for m in MECHANISMS {
        let want = if m.kind == "sync" {
            Pattern::Handoff
        } else {
            Pattern::Roundtrip
        };
        assert_eq!(m.natural, want, "{}", m.name);
    }
}

#[test]
fn quantiles_nearest_rank() {
    let v: Vec<i64> = (1..=100).collect();
    assert_eq!(quantile(&v, 0.5), 50);
    assert_eq!(quantile(&v, 0.99), 99);
    assert_eq!(quantile(&v, 1.0), 100);
    assert_eq!(quantile(&v, 0.0), 1);
    assert_eq!(quantile(&[7], 0.5), 7);
    assert_eq!(quantile(&[], 0.5), 0);
}

#[test]
fn repetition_summaries_split_by_loops() {
    let v = [5, 1, 3, 10, 20, 30, 99];
    let r = repetition_summaries(&v, 3);
    assert_eq!(r.len(), 3);
    assert_eq!(
        (r[0].count, r[0].min_ns, r[0].p50_ns, r[0].max_ns),
        (3, 1, 3, 5)
    );
    assert_eq!((r[1].min_ns, r[1].p50_ns, r[1].max_ns), (10, 20, 30));
    assert_eq!((r[2].repetition, r[2].count, r[2].p99_ns), (2, 1, 99));
}

#[test]
fn received_latency_is_wake_minus_send() {
    let r = Received {
        sent_ns: 1_000,
        woke_ns: 4_500,
    };
    assert_eq!(r.latency_ns(), 3_500);
    let r = Received {
        sent_ns: 5,
        woke_ns: 2,
    };
    assert_eq!(r.latency_ns(), -3);
}

/// Each mechanism's channel carries stamps from one thread to another, in order.
#[test]
fn every_channel_carries_stamps_between_threads() {
    for m in MECHANISMS {
        let created = RefCell::new(Vec::new());
        let env = ChannelEnv {
            tag: m.name.to_string(),
            created: &created,
        };
        let Channel { mut tx, mut rx } = (m.make)(&env).unwrap();
        // The sender prepares first (the mutex sender must hold the lock before
        // the receiver blocks on it), as the runner's handshake ensures.
        tx.prepare().unwrap();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (ack_tx, ack_rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            rx.prepare().unwrap();
            ready_tx.send(()).unwrap();
            let mut got = Vec::new();
            for _ in 0..3 {
                let r = rx.recv().unwrap();
                // Both stamps are on CLOCK and the wake-up is read after the send.
                assert!(r.latency_ns() >= 0, "{r:?}");
                got.push(r.sent_ns);
                ack_tx.send(()).unwrap();
            }
            got
        });
        ready_rx.recv().unwrap();
        let mut sent = Vec::new();
        for k in 0..3u64 {
            // Give the receiver time to block, so that the mutex is a true handoff.
            std::thread::sleep(std::time::Duration::from_millis(2));
            let stamp = rtscope_core::sys::clock_ns(CLOCK) + k;
            tx.send(stamp).unwrap();
            sent.push(stamp);
            ack_rx.recv().unwrap();
        }
        assert_eq!(h.join().unwrap(), sent, "{}", m.name);
        // A named object (the POSIX queue) is unlinked as soon as it is open.
        let name = std::ffi::CString::new(format!(
            "/rtscope-{}-{}",
            rtscope_core::sys::getpid(),
            m.name
        ))
        .unwrap();
        assert!(
            !rtscope_core::sys::posix_mq_exists(&name).unwrap(),
            "{}: queue {name:?} left behind",
            m.name
        );
    }
    // The SysV objects are removed: their records go too.
    super::leftovers::settle();
}

#[test]
fn list_names_every_mechanism() {
    let t = list_text();
    for m in MECHANISMS {
        assert!(t.contains(m.name));
    }
}
