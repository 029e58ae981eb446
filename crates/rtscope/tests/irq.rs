//! `rtscope irq`: short real runs of the timer and net sources (loopback
//! sender, and an external sender through --peer), checked for the
//! document's structure (never a latency bound), and bad input.

mod common;

use common::{assert_exit, assert_one_line, read_result, rtscope};
use std::time::Duration;

#[test]
fn net_loopback_run() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("n.json");
    let out = rtscope()
        .args([
            "irq", "--source", "net", "-l", "300", "--rate", "2000", "-q", "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let doc = read_result(&json);
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
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("kernel RX stamp"), "{stdout}");
}

#[test]
fn net_external_peer() {
    let port = {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        s.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("p.json");
    let mut child = std::process::Command::new(common::rtscope_path())
        .args(["irq", "--source", "net", "-l", "20", "-q", "--peer"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let t0 = std::time::Instant::now();
    let mut seq = 0u64;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "no end");
        let _ = tx.send_to(&seq.to_le_bytes(), ("127.0.0.1", port));
        seq += 1;
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(status.success());
    let doc = read_result(&json);
    assert_eq!(doc["series"][0]["attributes"]["received"], 20);
    assert!(doc["plan"]["peer"]
        .as_str()
        .unwrap()
        .ends_with(&port.to_string()));
}

#[test]
fn timer_source_has_stages_where_tracing_works() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    let out = rtscope()
        .args(["irq", "-l", "200", "-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let doc = read_result(&json);
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
        let out = rtscope().args(&args).output().unwrap();
        assert_exit(&out, 2);
        assert_one_line(&out.stderr);
    }
}

/// A FIFO standing in for the device is refused before it is opened (an
/// open of a FIFO would block); the read path itself is tested against a
/// FIFO in rtscope-core (`sys::rtc`).
#[test]
fn rtc_fake_device_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("rtc");
    let st = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(st.success());
    let out = common::run_within(
        &[
            "irq",
            "--source",
            "rtc",
            "--rtc-device",
            fifo.to_str().unwrap(),
            "-l",
            "5",
        ],
        Duration::from_secs(10),
    );
    assert_exit(&out, 2);
    let line = assert_one_line(&out.stderr);
    assert!(line.contains("not a character device"), "{line}");
}

/// Paths that cannot be opened as a GPIO chip: a run error (exit 1) in one
/// line, at once (a FIFO is refused before it is opened). The event reading
/// itself is tested against recorded records (`sys::gpio`, `irq_gpio`).
#[test]
fn gpio_not_a_chip_is_one_line_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("gpiochip0");
    let st = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(st.success());
    for (chip, want) in [
        ("/dev/null".to_string(), "not a GPIO chip"),
        ("/nonexistent/gpiochip7".to_string(), "No such file"),
        (fifo.to_str().unwrap().to_string(), "not a character device"),
    ] {
        let out = common::run_within(
            &[
                "irq",
                "--source",
                &format!("gpio:{chip}:3"),
                "-l",
                "5",
                "-q",
            ],
            Duration::from_secs(10),
        );
        assert_exit(&out, 1);
        let line = assert_one_line(&out.stderr);
        assert!(line.contains(want), "{chip}: {line}");
    }
}
