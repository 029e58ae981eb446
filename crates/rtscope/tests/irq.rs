//! `rtscope irq`: short real runs of the timer and net sources (loopback
//! sender, and an external sender through --peer), checked for the
//! document's structure (never a latency bound), bad input, and runs whose
//! real-time thread takes every CPU the process has (they end on time).

mod common;

use common::{alone, alongside, mkfifo, taskset_runs, Run, LIMIT};
use std::time::Duration;

#[test]
fn net_loopback_run() {
    let _turn = alongside();
    let out = Run::new([
        "irq", "--source", "net", "-l", "300", "--rate", "2000", "-q",
    ])
    .json()
    .exits(0);
    let doc = out.document();
    assert_eq!(doc["experiment"], "irq");
    assert_eq!(doc["plan"]["source"], "net");
    assert_eq!(doc["end_reason"], "loops");
    let s = &doc["series"][0];
    assert_eq!(s["label"], "net rx");
    let a = &s["attributes"];
    assert_eq!(a["received"], 300);
    // Every stamped packet is a sample; lost packets are the overruns.
    assert_eq!(
        s["stats"]["count"].as_u64().unwrap() + a["unstamped"].as_u64().unwrap(),
        300
    );
    assert_eq!(s["counters"]["overruns"], a["lost"]);
    let stdout = out.stdout();
    assert!(stdout.contains("kernel RX stamp"), "{stdout}");
}

#[test]
fn net_external_peer() {
    let _turn = alongside();
    let port = {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        s.local_addr().unwrap().port()
    };
    let mut child = Run::new(["irq", "--source", "net", "-l", "20", "-q", "--peer"])
        .arg(format!("127.0.0.1:{port}"))
        .json()
        .spawn();
    let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let t0 = std::time::Instant::now();
    let mut seq = 0u64;
    while child.running() {
        assert!(t0.elapsed() < Duration::from_secs(20), "no end");
        let _ = tx.send_to(&seq.to_le_bytes(), ("127.0.0.1", port));
        seq += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    let doc = child.wait_within(LIMIT).exits(0).document();
    assert_eq!(doc["series"][0]["attributes"]["received"], 20);
    assert!(doc["plan"]["peer"]
        .as_str()
        .unwrap()
        .ends_with(&port.to_string()));
}

#[test]
fn timer_source_has_stages_where_tracing_works() {
    let _turn = alongside();
    let doc = Run::new(["irq", "-l", "200", "-q"])
        .json()
        .exits(0)
        .document();
    assert_eq!(doc["experiment"], "irq");
    assert_eq!(doc["plan"]["source"], "timer");
    assert_eq!(doc["plan"]["trace"]["mode"], "auto");
    assert_eq!(doc["series"][0]["stats"]["count"], 200);
    // Where tracefs is usable (root), the samples are split.
    if !doc["trace"].is_null() {
        assert!(doc["trace"]["joined"].as_u64().unwrap() > 0);
    }
}

#[test]
fn bad_irq_input_is_one_line() {
    let _turn = alongside();
    for args in [
        vec!["irq", "--peer", "127.0.0.1:9", "-l", "5"],
        vec!["irq", "--rate", "0", "-l", "5"],
        vec!["irq", "--source", "net", "--trace", "-l", "5"],
        vec!["irq", "--source", "net", "--peer", "192.0.2.1:9", "-l", "5"],
        vec!["irq", "--cpu", "999", "-l", "5"],
        vec!["irq", "--source", "rtc", "--rate", "100", "-l", "5"],
        vec![
            "irq",
            "--source",
            "rtc",
            "--rtc-device",
            "/nonexistent/rtc",
            "-l",
            "5",
        ],
        // Not an RTC: the rate ioctl is refused.
        vec![
            "irq",
            "--source",
            "rtc",
            "--rtc-device",
            "/dev/null",
            "-l",
            "5",
        ],
        vec!["irq", "--rtc-device", "/dev/null", "-l", "5"],
        // gpio: bad specs and options that belong to gpio only.
        vec!["irq", "--source", "gpio:foo", "-l", "5"],
        vec!["irq", "--source", "gpio", "-l", "5"],
        vec!["irq", "--source", "gpio:/dev/gpiochip0:x", "-l", "5"],
        vec!["irq", "--source", "net", "--edge", "both", "-l", "5"],
        vec!["irq", "--drive", "3", "-l", "5"],
        vec![
            "irq",
            "--source",
            "gpio:/dev/null:0",
            "--edge",
            "up",
            "-l",
            "5",
        ],
        vec![
            "irq",
            "--source",
            "gpio:/dev/null:0",
            "--event-clock",
            "hte",
            "-l",
            "5",
        ],
        vec![
            "irq",
            "--source",
            "gpio:/dev/null:0",
            "--drive",
            "0",
            "-l",
            "5",
        ],
        vec!["irq", "--source", "gpio:/dev/null:0", "--trace", "-l", "5"],
    ] {
        Run::new(&args).exits(2).one_line();
    }
}

/// A FIFO standing in for the device is refused before it is opened (an
/// open of a FIFO would block); the read path itself is tested against a
/// FIFO in rtscope-core (`sys::rtc`).
#[test]
fn rtc_fake_device_is_refused_at_once() {
    let _turn = alongside();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("rtc");
    mkfifo(&fifo);
    let line = Run::new(["irq", "--source", "rtc", "--rtc-device"])
        .arg(&fifo)
        .args(["-l", "5"])
        .wait_within(Duration::from_secs(10))
        .exits(2)
        .one_line();
    assert!(line.contains("not a character device"), "{line}");
}

/// Paths that cannot be opened as a GPIO chip: refused input (exit 2, as for
/// rtc) in one line, at once (a FIFO is refused before it is opened). The event reading
/// itself is tested against recorded records (`sys::gpio`, `irq_gpio`).
#[test]
fn gpio_not_a_chip_is_one_line_exit_2() {
    let _turn = alongside();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("gpiochip0");
    mkfifo(&fifo);
    for (chip, want) in [
        ("/dev/null".to_string(), "not a GPIO chip"),
        ("/nonexistent/gpiochip7".to_string(), "No such file"),
        (fifo.to_str().unwrap().to_string(), "not a character device"),
    ] {
        let line = Run::new([
            "irq",
            "--source",
            &format!("gpio:{chip}:3"),
            "-l",
            "5",
            "-q",
        ])
        .wait_within(Duration::from_secs(10))
        .exits(2)
        .one_line();
        assert!(line.contains(want), "{chip}: {line}");
    }
}

/// Issue 26, the irq sources: the process confined to one CPU, where its
/// real-time thread runs: the thread of normal priority that drains the ring
/// and used to end the run hardly runs. Each run ends at its duration by
/// itself (a hang's bound, duration + 5 s), with its document; an overloaded
/// run (the timer at 100,000/s) says so on stderr despite -q when its
/// counters show it.
#[test]
fn runs_that_take_their_cpu_end_on_time() {
    let _turn = alone();
    let cpu = rtscope_core::units::online_cpus()[0].to_string();
    if !taskset_runs() {
        return;
    }
    for source in [
        &["--source", "timer", "--rate", "100000"][..],
        &["--source", "net", "--rate", "20000"],
    ] {
        let mut args = vec!["irq", "--cpu", &cpu, "-D", "2", "-q"];
        args.extend_from_slice(source);
        let t0 = std::time::Instant::now();
        // Confined to that CPU, its threads of normal priority too.
        let out = Run::new(&args)
            .json()
            .under(["taskset", "-c", &cpu])
            .wait_within(Duration::from_secs(2 + 5));
        eprintln!("{args:?}: ended after {:?}", t0.elapsed());
        let out = out.exits(0);
        let doc = out.document();
        assert_eq!(doc["end_reason"], "duration", "{args:?}");
        assert!(doc["duration_ns"].as_u64().unwrap() >= 1_900_000_000);
        let s = &doc["series"][0];
        let (count, dropped) = (
            s["stats"]["count"].as_u64().unwrap(),
            s["counters"]["dropped"].as_u64().unwrap(),
        );
        assert!(count > 0, "{args:?}");
        // The loud warning is there exactly when the counters say so.
        let stderr = out.stderr();
        let said = stderr
            .lines()
            .any(|l| l.starts_with("warning: ") && l.contains("of the samples were dropped"));
        assert_eq!(said, dropped * 100 > count + dropped, "{args:?}: {stderr}");
        if source[1] == "timer" {
            let missed = s["counters"]["overruns"].as_u64().unwrap();
            let said = stderr
                .lines()
                .any(|l| l.starts_with("warning: ") && l.contains("of the periods were missed"));
            assert_eq!(said, missed * 100 > count + dropped + missed, "{stderr}");
        }
    }
}
