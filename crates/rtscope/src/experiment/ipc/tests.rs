//! Unit tests of the ipc experiment: the table, planning, timing arithmetic,
//! and each mechanism's channel carrying a stamp between two threads.

use clap::Parser;

use super::*;
use crate::cli::{Cli, Command};

fn args(extra: &[&str]) -> IpcOptions {
    let mut v = vec!["rtscope", "ipc"];
    v.extend_from_slice(extra);
    match Cli::try_parse_from(v).expect("parses").command {
        Command::Ipc(a) => a.options().expect("valid options"),
        _ => unreachable!(),
    }
}

fn parse_err(extra: &[&str]) -> String {
    let mut v = vec!["rtscope", "ipc"];
    v.extend_from_slice(extra);
    Cli::try_parse_from(v)
        .expect_err("must be refused")
        .to_string()
}

fn plan_err(extra: &[&str]) -> String {
    let e = plan(&args(extra)).expect_err("must be refused");
    assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
    e.to_string()
}

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
fn plan_all_uses_natural_patterns() {
    let p = plan(&args(&["--no-rt"])).unwrap();
    assert_eq!(p.sessions.len(), MECHANISMS.len());
    for (s, m) in p.sessions.iter().zip(MECHANISMS) {
        assert_eq!(s.mechanism, m.name);
        assert_eq!(s.pattern, m.natural);
        assert_eq!(s.between, Between::Threads);
        assert_eq!(s.period_ns, 1_000_000);
    }
    assert_eq!((p.loops, p.repetitions), (1000, 1));
}

#[test]
fn plan_cross_product_of_lists() {
    let p = plan(&args(&[
        "--mech",
        "futex,pipe",
        "--pattern",
        "handoff,roundtrip",
        "--between",
        "threads,processes",
        "--period",
        "10ms,30ms,50ms",
        "--repetitions",
        "50",
        "--no-rt",
    ]))
    .unwrap();
    assert_eq!(p.sessions.len(), 2 * 2 * 2 * 3);
    assert_eq!(p.repetitions, 50);
    assert!(p.sessions.iter().any(|s| s.mechanism == "pipe"
        && s.pattern == Pattern::Handoff
        && s.period_ns == 30_000_000));
}

#[test]
fn all_with_unsupported_pattern_skips_explicit_refuses() {
    let p = plan(&args(&["--pattern", "roundtrip", "--no-rt"])).unwrap();
    assert!(p.sessions.iter().all(|s| s.mechanism != "mutex"));
    assert_eq!(p.skipped, vec!["mutex roundtrip".to_string()]);
    let e = plan_err(&["--mech", "mutex", "--pattern", "roundtrip"]);
    assert!(
        e.contains("mutex does not support --pattern roundtrip"),
        "{e}"
    );
}

#[test]
fn bad_input_is_refused() {
    let e = plan_err(&["--mech", "futex,carrier-pigeon"]);
    assert!(e.contains("unknown mechanism 'carrier-pigeon'"), "{e}");
    assert!(plan_err(&["--mech", "futex,,pipe"]).contains("empty"));
    assert!(parse_err(&["--repetitions", "0"]).contains("at least 1"));
    assert!(parse_err(&["--period", "0"]).contains("greater than 0"));
    assert!(parse_err(&["-l", "0"]).contains("at least 1"));
    assert!(parse_err(&["--cpus", "1"]).contains("CPU pair"));
    assert!(parse_err(&["--pattern", "sideways"]).contains("sideways"));
    assert!(plan_err(&["--cpus", "0,4096"]).contains("not online"));
    assert!(plan_err(&["-l", "1000000", "--repetitions", "1000"]).contains("at most"));
}

#[test]
fn priorities_and_placement() {
    let p = plan(&args(&["-p", "80"])).unwrap();
    assert_eq!((p.receiver_priority, p.sender_priority), (80, 79));
    let p = plan(&args(&["-p", "1"])).unwrap();
    assert_eq!(p.sender_priority, 1);
    let p = plan(&args(&["-p", "80", "--sender-priority", "90"])).unwrap();
    assert_eq!(p.sender_priority, 90);
    let p = plan(&args(&["--no-rt"])).unwrap();
    assert_eq!((p.receiver_priority, p.sender_priority), (0, 0));
    let p = plan(&args(&["--cpus", "0,0", "--no-rt"])).unwrap();
    assert_eq!((p.sender_cpu, p.receiver_cpu), (Some(0), Some(0)));
    assert!(p.placement.contains("same CPU"));
    let s = &p.sessions[0];
    assert_eq!(p.suffix(s), "threads cpu0->cpu0 1ms");
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
