//! `rtscope irq`: interrupt-to-task latency from a chosen interrupt source.
//!
//! - `timer`: the hrtimer path — one measurement thread on one CPU, woken by
//!   its own absolute timer (the `cyclic` measurement), split into stages
//!   with kernel trace events where tracing is possible (`--trace`, default
//!   `auto`; see `cyclic_trace`). On kernels since 2.6.38 `/dev/rtc`
//!   periodic interrupts are emulated with hrtimers, so this is the path
//!   RTC-driven measurements took too.
//! - `net`: UDP packets stamped by the kernel on receive (software RX stamp,
//!   `SO_TIMESTAMPNS`, CLOCK_REALTIME). A built-in sender thread sends
//!   `--rate` packets per second on loopback (or `--peer ADDR` listens for
//!   an external sender); the real-time receiver thread blocks in `recvmsg`
//!   and, on return, reads CLOCK_REALTIME: latency = that − the kernel's
//!   stamp, both on CLOCK_REALTIME (a clock step during the run would show
//!   as negative samples, counted). Packets carry a sequence number; gaps
//!   are lost packets, counted as the series' `overruns`.
//! - `gpio:CHIP:LINE`: GPIO edge events of the character device (uAPI v2),
//!   stamped by the kernel in the interrupt handler; see `irq_gpio`.
//!
//! With a duration, every reader ends by itself at its end time (start + the
//! duration on CLOCK_MONOTONIC, [`Until`]), whatever the thread of normal
//! priority that drains its ring gets to run: the net receiver's reads time
//! out every 100 ms, and the rtc and gpio readers, whose reads block until the
//! device delivers, arm an end alarm that interrupts them from the end on
//! ([`rtscope_core::rt::end_alarm`]).

use std::io::Write;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use serde::Serialize;
use serde_json::json;

use rtscope_core::cyclic::{end_time, reached};
use rtscope_core::record::SeriesRecorder;
use rtscope_core::result::{EndReason, ResultDocument};
use rtscope_core::sample::{ring, RingSource, Sample, SampleSink};
use rtscope_core::sys;
use rtscope_core::units::{format_ns, online_cpus};

use super::cyclic::{self, CyclicOptions};
use super::cyclic_trace::TraceMode;
use super::run::{self, RunRequest};
use crate::error::{usage, EXIT_OK, EXIT_RUN};

/// The interrupt source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum IrqSource {
    /// A high-resolution timer armed by the measurement thread (stages with --trace).
    Timer,
    /// UDP packets stamped by the kernel on receive (loopback sender, or --peer).
    Net,
    /// `/dev/rtc` periodic interrupts (RTC_IRQP_SET, RTC_PIE_ON, blocking read).
    Rtc,
    /// GPIO line edge events (`gpio:CHIP:LINE`), stamped by the kernel.
    Gpio,
}

/// What `--source` names: the source, and the chip and line of `gpio:CHIP:LINE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSpec {
    pub source: IrqSource,
    pub gpio: Option<super::irq_gpio::GpioTarget>,
}

/// Parses `--source`: `timer`, `net`, `rtc` or `gpio:CHIP:LINE`.
pub fn parse_source(s: &str) -> Result<SourceSpec, String> {
    let plain = |source| Ok(SourceSpec { source, gpio: None });
    match s {
        "timer" => plain(IrqSource::Timer),
        "net" => plain(IrqSource::Net),
        "rtc" => plain(IrqSource::Rtc),
        "gpio" => Err("--source gpio needs a chip and a line: gpio:/dev/gpiochip0:17".into()),
        _ if s.starts_with("gpio:") => Ok(SourceSpec {
            source: IrqSource::Gpio,
            gpio: Some(super::irq_gpio::parse_target(s)?),
        }),
        _ => Err(format!(
            "unknown source '{s}' (timer, net, rtc, gpio:CHIP:LINE)"
        )),
    }
}

/// What a user asks of an irq run.
#[derive(Debug, Clone)]
pub struct IrqOptions {
    pub source: IrqSource,
    /// CPU of the measurement (receiver) thread; default the last online CPU.
    pub cpu: Option<usize>,
    /// Interrupts (timer wake-ups, packets) per second.
    pub rate_hz: u64,
    /// `--peer`: listen on this address for an external sender (net only).
    pub peer: Option<SocketAddr>,
    pub loops: Option<u64>,
    pub duration_ns: Option<u64>,
    pub spikes: usize,
    /// The real-time choice, the loads and the outputs (`run.rs`).
    pub run: RunRequest,
    pub trace: TraceMode,
    pub trace_outliers_ns: Option<u64>,
    /// `--rtc-device` (rtc only).
    pub rtc_device: std::path::PathBuf,
    /// The chip and line of `gpio:CHIP:LINE` (gpio only).
    pub gpio: Option<super::irq_gpio::GpioTarget>,
    /// `--edge` (gpio only; default rising).
    pub edge: Option<super::irq_gpio::Edge>,
    /// `--event-clock` (gpio only; default monotonic).
    pub event_clock: Option<super::irq_gpio::EventClock>,
    /// `--drive LINE` (gpio only): toggle this output line at `rate_hz`.
    pub drive: Option<u32>,
}

/// A planned net run (goes into the result document).
#[derive(Debug, Clone, Serialize)]
pub struct NetPlan {
    pub source: IrqSource,
    pub cpu: usize,
    pub rate_hz: u64,
    pub peer: Option<SocketAddr>,
    pub loops: Option<u64>,
    pub duration_ns: Option<u64>,
    pub spikes: usize,
    /// The real-time choice, the loads and the outputs (`run.rs`).
    #[serde(flatten)]
    pub run: RunRequest,
    /// How latency is measured.
    pub clock: &'static str,
}

fn check_common(o: &IrqOptions) -> Result<usize> {
    let online = online_cpus();
    let cpu = o.cpu.unwrap_or(*online.last().unwrap_or(&0));
    if !online.contains(&cpu) {
        return Err(usage(format!("--cpu: CPU {cpu} is not online")));
    }
    if o.rate_hz == 0 || o.rate_hz > 100_000 {
        return Err(usage("--rate: 1 to 100000 per second"));
    }
    Ok(cpu)
}

/// Runs the experiment; the exit code.
pub fn run(o: &IrqOptions) -> Result<i32> {
    let cpu = check_common(o)?;
    if o.source != IrqSource::Gpio
        && (o.edge.is_some() || o.event_clock.is_some() || o.drive.is_some())
    {
        return Err(usage(
            "--edge, --event-clock and --drive are for --source gpio:CHIP:LINE",
        ));
    }
    match o.source {
        IrqSource::Timer => run_timer(o, cpu),
        IrqSource::Net => run_net(o, cpu),
        IrqSource::Rtc => run_rtc(o, cpu),
        IrqSource::Gpio => super::irq_gpio::run(o, cpu),
    }
}

fn run_timer(o: &IrqOptions, cpu: usize) -> Result<i32> {
    if o.peer.is_some() {
        return Err(usage("--peer is for --source net"));
    }
    if o.rtc_device != std::path::Path::new(DEFAULT_RTC) {
        return Err(usage("--rtc-device is for --source rtc"));
    }
    let co = CyclicOptions {
        threads: Some(1),
        cpus: Some(vec![cpu]),
        period_ns: 1_000_000_000 / o.rate_hz,
        loops: o.loops,
        duration_ns: o.duration_ns,
        spikes: o.spikes,
        run: o.run.clone(),
        trace: o.trace,
        trace_outliers_ns: o.trace_outliers_ns,
        ..CyclicOptions::default()
    };
    let mut plan = cyclic::plan(&co)?;
    plan.experiment = "irq";
    let mut out = cyclic::execute(&plan)?;
    if let Some(p) = out.doc.plan.as_object_mut() {
        p.insert("source".into(), json!("timer"));
    }
    let failed = out
        .doc
        .trace
        .as_ref()
        .is_some_and(|t| t.accuracy.below_kernel > 0);
    let code = out.deliver(&plan);
    if code == EXIT_OK && failed {
        eprintln!("error: accuracy check failed: samples below the kernel's bound");
        return Ok(EXIT_RUN);
    }
    Ok(code)
}

fn run_net(o: &IrqOptions, cpu: usize) -> Result<i32> {
    if o.trace != TraceMode::Off || o.trace_outliers_ns.is_some() {
        return Err(usage(
            "--trace is available for --source timer (net: the kernel's RX stamp is the reference)",
        ));
    }
    if o.rtc_device != std::path::Path::new(DEFAULT_RTC) {
        return Err(usage("--rtc-device is for --source rtc"));
    }
    o.run.check(&[])?;
    let plan = NetPlan {
        source: o.source,
        cpu,
        rate_hz: o.rate_hz,
        peer: o.peer,
        loops: o.loops,
        duration_ns: o.duration_ns,
        spikes: o.spikes,
        run: o.run.clone(),
        clock: "CLOCK_REALTIME after recvmsg − the kernel's software RX stamp (SO_TIMESTAMPNS, CLOCK_REALTIME)",
    };
    let doc = execute_net(&plan)?;
    let mut text = crate::output::summary::cyclic_summary(&doc);
    let a = &doc.series[0].attributes;
    text.push_str(&format!(
        "packets: {} received, {} lost, {} without a kernel stamp; latency = user receive time − kernel RX stamp (CLOCK_REALTIME)\n",
        a.get("received").cloned().unwrap_or_default(),
        a.get("lost").cloned().unwrap_or_default(),
        a.get("unstamped").cloned().unwrap_or_default(),
    ));
    let code = run::deliver(&doc, &plan.run.outputs, vec![], &text);
    Ok(code) // 0, 1, or 3: a gate failed
}

/// What the receiver counted besides its samples.
#[derive(Default)]
struct RxCounts {
    received: u64,
    unstamped: u64,
    lost: u64,
}

/// When a reader's loop ends (besides an error): its stop flag, its count,
/// or its end time (CLOCK_MONOTONIC, [`end_time`]), which it checks on the
/// clock reading it takes after each read (and after a read that timed out
/// or was interrupted), so that it needs no other thread to end on time.
#[derive(Debug, Clone, Copy)]
pub struct Until<'a> {
    pub stop: &'a AtomicBool,
    pub loops: Option<u64>,
    pub end_ns: Option<u64>,
}

impl Until<'_> {
    /// Whether the loop goes on after `taken` samples, its clock reading `now`.
    pub fn more(&self, taken: u64, now: u64) -> bool {
        !self.stop.load(Ordering::Relaxed)
            && self.loops.is_none_or(|l| taken < l)
            && !reached(self.end_ns, now)
    }
}

fn receive_loop(
    sock: &UdpSocket,
    sink: &mut impl SampleSink,
    until: Until,
    cpu: u32,
) -> std::io::Result<RxCounts> {
    let mut c = RxCounts::default();
    let mut buf = [0u8; 2048];
    let mut expected: Option<u64> = None;
    let fd = sock.as_raw_fd();
    let mut now = sys::clock_ns(libc::CLOCK_MONOTONIC);
    while until.more(c.received, now) {
        let (n, stamp) = match sys::recv_stamped(fd, &mut buf) {
            Ok(x) => x,
            // The read timed out (every 100 ms) or was interrupted: the
            // loop's ends are looked at again.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                now = sys::clock_ns(libc::CLOCK_MONOTONIC);
                continue;
            }
            Err(e) => return Err(e),
        };
        let now_rt = sys::clock_ns(libc::CLOCK_REALTIME);
        now = sys::clock_ns(libc::CLOCK_MONOTONIC);
        c.received += 1;
        let seq = if n >= 8 {
            u64::from_le_bytes(buf[..8].try_into().unwrap_or([0; 8]))
        } else {
            c.received - 1
        };
        let gap = match expected {
            Some(e) if seq > e => seq - e,
            _ => 0,
        };
        c.lost += gap;
        expected = Some(seq + 1);
        let Some(st) = stamp else {
            c.unstamped += 1;
            continue;
        };
        sink.push(Sample {
            seq,
            t_ns: now,
            latency_ns: now_rt as i64 - st as i64,
            overruns: gap.min(u64::from(u32::MAX)) as u32,
            cpu,
        });
    }
    Ok(c)
}

fn send_loop(sock: &UdpSocket, to: SocketAddr, period_ns: u64, stop: &AtomicBool) {
    let mut seq = 0u64;
    let mut t = sys::clock_ns(libc::CLOCK_MONOTONIC) + period_ns;
    while !stop.load(Ordering::Relaxed) {
        if sys::sleep_until(libc::CLOCK_MONOTONIC, t).is_err() {
            break;
        }
        let _ = sock.send_to(&seq.to_le_bytes(), to);
        seq += 1;
        t += period_ns;
    }
}

fn execute_net(plan: &NetPlan) -> Result<ResultDocument> {
    let bind: SocketAddr = plan
        .peer
        .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
    let rx = UdpSocket::bind(bind)
        .map_err(|e| usage(format!("--peer {bind}: cannot listen there: {e}")))?;
    sys::enable_rx_timestamps(rx.as_raw_fd()).context("SO_TIMESTAMPNS")?;
    rx.set_read_timeout(Some(Duration::from_millis(100)))
        .context("socket read timeout")?;
    let addr = rx.local_addr().context("socket address")?;
    let header = format!(
        "rtscope irq: source net, {} on {addr}, receiver on CPU {} SCHED_{} {}, {}",
        match plan.peer {
            Some(_) => "an external sender".to_string(),
            None => format!("loopback sender at {}/s", plan.rate_hz),
        },
        plan.cpu,
        plan.run.rt.policy.name().to_uppercase(),
        plan.run.rt.priority,
        match (plan.loops, plan.duration_ns) {
            (Some(l), _) => format!("{l} packets"),
            (None, Some(d)) => format_ns(d),
            (None, None) => "until Ctrl-C".into(),
        }
    );
    let run = run::begin(&plan.run.settings(), &header)?;
    let stop: Arc<AtomicBool> = run.stop().clone();
    let setup = plan
        .run
        .rt
        .thread_setup(vec![plan.cpu], run::STOP_SIGNALS.to_vec());
    let (mut sink, mut source) = ring(1 << 16);
    let start = sys::clock_ns(libc::CLOCK_MONOTONIC);
    let end_ns = end_time(start, plan.duration_ns);
    let mut rec = SeriesRecorder::new(start, plan.spikes, None);
    let tid = Arc::new(AtomicI32::new(0));
    let (rx_stop, rx_tid, loops, cpu) = (stop.clone(), tid.clone(), plan.loops, plan.cpu as u32);
    let receiver = std::thread::Builder::new()
        .name("rtscope-rx".into())
        .spawn(
            move || -> Result<(RxCounts, rtscope_core::rt::ThreadState), String> {
                let st = setup.apply().map_err(|e| e.to_string())?;
                rx_tid.store(st.tid, Ordering::Relaxed);
                let until = Until {
                    stop: &rx_stop,
                    loops,
                    end_ns,
                };
                let c = receive_loop(&rx, &mut sink, until, cpu)
                    .map_err(|e| format!("receive: {e}"))?;
                Ok((c, st))
            },
        )
        .context("cannot start the receiver thread")?;
    let sender = match plan.peer {
        Some(_) => None,
        None => {
            let tx = UdpSocket::bind("127.0.0.1:0").context("sender socket")?;
            let (s_stop, period) = (stop.clone(), 1_000_000_000 / plan.rate_hz);
            Some(
                std::thread::Builder::new()
                    .name("rtscope-tx".into())
                    .spawn(move || send_loop(&tx, addr, period, &s_stop))
                    .context("cannot start the sender thread")?,
            )
        }
    };
    let res = drain_reader(
        receiver,
        "receiver",
        &mut source,
        &mut rec,
        &stop,
        None,
        end_ns,
    );
    if let Some(s) = sender {
        let _ = s.join();
    }
    let ((counts, state), duration_hit) = res?;
    let mut s = rec.to_series("net rx", source.dropped());
    let a = &mut s.attributes;
    a.insert("source".into(), json!("net"));
    a.insert("address".into(), json!(addr.to_string()));
    a.insert("received".into(), json!(counts.received));
    a.insert("lost".into(), json!(counts.lost));
    a.insert("unstamped".into(), json!(counts.unstamped));
    a.insert("tid".into(), json!(state.tid));
    a.insert("policy".into(), json!(state.policy));
    a.insert("priority".into(), json!(state.priority));
    a.insert("cpus".into(), json!([plan.cpu]));
    let mut warnings = Vec::new();
    if counts.lost > 0 {
        warnings.push(format!("{} packets were lost (sequence gaps)", counts.lost));
    }
    if counts.unstamped > 0 {
        warnings.push(format!(
            "{} packets came without a kernel receive stamp",
            counts.unstamped
        ));
    }
    if counts.received == 0 {
        warnings.push("no packet was received".into());
    }
    // (Its overruns are lost packets, warned of above.)
    let loud: Vec<String> = run::Overload::of(&s).dropped.into_iter().collect();
    let _ = std::io::stderr().write_all(run::warning_lines(&loud).as_bytes());
    warnings.extend(loud);
    let end = end_reason(duration_hit, plan.loops, counts.received);
    let _ = tid;
    Ok(run.finish("irq", plan, vec![s], end, warnings).doc)
}

/// The default RTC device.
pub const DEFAULT_RTC: &str = "/dev/rtc0";

/// A planned rtc run (goes into the result document).
#[derive(Debug, Clone, Serialize)]
pub struct RtcPlan {
    pub source: IrqSource,
    pub device: std::path::PathBuf,
    pub cpu: usize,
    pub rate_hz: u64,
    pub loops: Option<u64>,
    pub duration_ns: Option<u64>,
    pub spikes: usize,
    /// The real-time choice, the loads and the outputs (`run.rs`).
    #[serde(flatten)]
    pub run: RunRequest,
    /// How latency is measured.
    pub clock: &'static str,
}

/// Measures RTC interrupts read through `read`: each word says how many
/// interrupts happened since the last read (more than one: the reader missed
/// some, counted as overruns). Interrupt `k` (0-based, counted from the
/// start) was due at `t_on + (k + 1) * period`; latency = the clock after
/// `read` − that. A read interrupted (by a stop, or by the end alarm) reads
/// the clock, so that the loop sees its end time.
fn rtc_loop(
    mut read: impl FnMut() -> std::io::Result<u64>,
    t_on: u64,
    period_ns: u64,
    sink: &mut impl SampleSink,
    until: Until,
    cpu: u32,
) -> std::io::Result<u64> {
    let mut total = 0u64;
    let mut taken = 0u64;
    let mut now = sys::clock_ns(libc::CLOCK_MONOTONIC);
    while until.more(taken, now) {
        let w = match read() {
            Ok(w) => w,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                now = sys::clock_ns(libc::CLOCK_MONOTONIC);
                continue;
            }
            Err(e) => return Err(e),
        };
        now = sys::clock_ns(libc::CLOCK_MONOTONIC);
        let n = sys::rtc_count(w).max(1);
        total += n;
        let due = t_on + total * period_ns;
        sink.push(Sample {
            seq: total - 1,
            t_ns: now,
            latency_ns: now as i64 - due as i64,
            overruns: (n - 1).min(u64::from(u32::MAX)) as u32,
            cpu,
        });
        taken += 1;
    }
    Ok(total)
}

/// Periodic interrupts are turned off again however the run ends, by a
/// thread that no longer runs real-time.
///
/// On PREEMPT_RT the RTC core's periodic hrtimer expires in the timer softirq
/// thread of the reader's CPU (SCHED_FIFO 1), and its callback wakes the
/// reader, which preempts it there. `RTC_PIE_OFF` loops on
/// `hrtimer_try_to_cancel` until a running callback returns
/// (`rtc_update_hrtimer`, drivers/rtc/interface.c): a reader still at
/// SCHED_FIFO 95 spun in that loop for ever, the softirq thread it waited for
/// never ran again on that CPU (RT throttling stops it too), and every soft
/// timer of the CPU stood still — the kernel lab's 6.1 PREEMPT_RT guest
/// wedged whole at 1024 Hz. As SCHED_OTHER the reader lets the callback end.
struct PieOff(std::fs::File);

impl Drop for PieOff {
    fn drop(&mut self) {
        let _ = sys::set_scheduler(libc::SCHED_OTHER, 0);
        let _ = sys::rtc_periodic(self.0.as_raw_fd(), false);
    }
}

fn run_rtc(o: &IrqOptions, cpu: usize) -> Result<i32> {
    if o.trace != TraceMode::Off || o.trace_outliers_ns.is_some() || o.peer.is_some() {
        return Err(usage(
            "--trace and --peer are not available for --source rtc",
        ));
    }
    if !o.rate_hz.is_power_of_two() || !(2..=8192).contains(&o.rate_hz) {
        return Err(usage(
            "--rate: RTC periodic interrupts run at a power of two from 2 to 8192 per second",
        ));
    }
    o.run.check(&[])?;
    let dev = &o.rtc_device;
    // Only a character device can be an RTC (a FIFO would block the open).
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(dev) {
        Ok(m) if m.file_type().is_char_device() => {}
        Ok(_) => {
            return Err(usage(format!(
                "--rtc-device {}: not a character device (an RTC is /dev/rtcN)",
                dev.display()
            )))
        }
        Err(e) => return Err(usage(format!("--rtc-device {}: {e}", dev.display()))),
    }
    let f = std::fs::File::open(dev)
        .map_err(|e| usage(format!("--rtc-device {}: {e}", dev.display())))?;
    sys::rtc_set_rate(f.as_raw_fd(), o.rate_hz).map_err(|e| {
        usage(format!(
            "--rtc-device {}: RTC_IRQP_SET {} Hz failed: {e}{}",
            dev.display(),
            o.rate_hz,
            match e.raw_os_error() {
                Some(libc::ENOTTY) => " (not an RTC)",
                Some(libc::EACCES) | Some(libc::EINVAL) =>
                    " (above the device's max_user_freq, /sys/class/rtc/*/max_user_freq?)",
                _ => "",
            }
        ))
    })?;
    let plan = RtcPlan {
        source: IrqSource::Rtc,
        device: dev.clone(),
        cpu,
        rate_hz: o.rate_hz,
        loops: o.loops,
        duration_ns: o.duration_ns,
        spikes: o.spikes,
        run: o.run.clone(),
        clock: "CLOCK_MONOTONIC after read − (time of RTC_PIE_ON + n periods)",
    };
    let header = format!(
        "rtscope irq: source rtc {} at {} Hz, reader on CPU {} SCHED_{} {}",
        dev.display(),
        o.rate_hz,
        cpu,
        o.run.rt.policy.name().to_uppercase(),
        o.run.rt.priority
    );
    let run = run::begin(&plan.run.settings(), &header)?;
    let stop: Arc<AtomicBool> = run.stop().clone();
    let setup = plan
        .run
        .rt
        .thread_setup(vec![cpu], run::STOP_SIGNALS.to_vec());
    let (mut sink, mut source) = ring(1 << 16);
    let start = sys::clock_ns(libc::CLOCK_MONOTONIC);
    let end_ns = end_time(start, plan.duration_ns);
    let mut rec = SeriesRecorder::new(start, plan.spikes, None);
    let tid = Arc::new(AtomicI32::new(0));
    let (r_stop, r_tid, loops, period) = (
        stop.clone(),
        tid.clone(),
        plan.loops,
        1_000_000_000 / plan.rate_hz,
    );
    let reader = std::thread::Builder::new()
        .name("rtscope-rtc".into())
        .spawn(
            move || -> Result<(u64, u64, rtscope_core::rt::ThreadState), String> {
                let st = setup.apply().map_err(|e| e.to_string())?;
                rtscope_core::rt::accept_wake()
                    .map_err(|e| format!("cannot make the wait interruptible: {e}"))?;
                r_tid.store(st.tid, Ordering::Relaxed);
                // The read blocks until an interrupt comes (maybe never):
                // the alarm interrupts it at the end.
                let alarm = end_ns
                    .map(|e| rtscope_core::rt::end_alarm(libc::CLOCK_MONOTONIC, e))
                    .transpose()
                    .map_err(|e| format!("cannot arm the end alarm: {e}"))?;
                let fd = f.as_raw_fd();
                let guard = PieOff(f);
                let t_on = sys::clock_ns(libc::CLOCK_MONOTONIC);
                sys::rtc_periodic(fd, true).map_err(|e| format!("RTC_PIE_ON: {e}"))?;
                let on_ns = sys::clock_ns(libc::CLOCK_MONOTONIC) - t_on;
                let until = Until {
                    stop: &r_stop,
                    loops,
                    end_ns,
                };
                let total = rtc_loop(
                    || sys::rtc_read(fd),
                    t_on,
                    period,
                    &mut sink,
                    until,
                    cpu as u32,
                )
                .map_err(|e| format!("read: {e}"))?;
                // No alarm signal may cut RTC_PIE_OFF short.
                drop(alarm);
                drop(guard);
                Ok((total, on_ns, st))
            },
        )
        .context("cannot start the reader thread")?;
    let ((total, on_ns, state), duration_hit) = drain_reader(
        reader,
        "reader",
        &mut source,
        &mut rec,
        &stop,
        Some(&tid),
        end_ns,
    )?;
    let mut s = rec.to_series("rtc", source.dropped());
    let a = &mut s.attributes;
    a.insert("source".into(), json!("rtc"));
    a.insert("device".into(), json!(plan.device));
    a.insert("interrupts".into(), json!(total));
    a.insert("pie_on_ioctl_ns".into(), json!(on_ns));
    a.insert("tid".into(), json!(state.tid));
    a.insert("policy".into(), json!(state.policy));
    a.insert("priority".into(), json!(state.priority));
    a.insert("cpus".into(), json!([cpu]));
    let mut warnings = vec![format!(
        "the interrupts' due times are counted from before RTC_PIE_ON: latencies may be high by up to that call's {}",
        format_ns(on_ns)
    )];
    let loud = run::Overload::of(&s).warnings();
    let _ = std::io::stderr().write_all(run::warning_lines(&loud).as_bytes());
    warnings.extend(loud);
    let end = end_reason(duration_hit, plan.loops, rec.count());
    let doc = run.finish("irq", &plan, vec![s], end, warnings).doc;
    let mut text = crate::output::summary::cyclic_summary(&doc);
    text.push_str(
        "note: on Linux since 2.6.38 RTC periodic interrupts are emulated with an hrtimer (--source timer is the same path)\n",
    );
    let code = run::deliver(&doc, &plan.run.outputs, vec![], &text);
    Ok(code) // 0, 1, or 3: a gate failed
}

/// The aggregator side of a source whose real-time thread blocks in a read:
/// drains `source` into `rec` every 50 ms until the reader ends (by itself at
/// `end_ns`, CLOCK_MONOTONIC, when the run has a duration), a stop signal, or
/// `end_ns` has passed (a backstop); then sets `stop`, wakes the reader out
/// of its blocking call (`wake`: its tid, for readers that accept the wake
/// signal), joins it and drains what is left. Returns the reader's result and
/// whether the end time ended the run (not a stop signal).
pub(super) fn drain_reader<T>(
    reader: std::thread::JoinHandle<Result<T, String>>,
    what: &str,
    source: &mut RingSource,
    rec: &mut SeriesRecorder,
    stop: &AtomicBool,
    wake: Option<&AtomicI32>,
    end_ns: Option<u64>,
) -> Result<(T, bool)> {
    let mono = || sys::clock_ns(libc::CLOCK_MONOTONIC);
    loop {
        source.drain(|s| rec.record(s));
        if reader.is_finished() || stop.load(Ordering::Relaxed) || reached(end_ns, mono()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let duration_hit = !stop.load(Ordering::Relaxed) && reached(end_ns, mono());
    stop.store(true, Ordering::Relaxed);
    if let Some(tid) = wake {
        rtscope_core::rt::wake_until_ended(&[tid.load(Ordering::Relaxed)], |_| {
            !reader.is_finished()
        });
    }
    let res = reader
        .join()
        .unwrap_or_else(|_| Err(format!("the {what} thread panicked")));
    source.drain(|s| rec.record(s));
    Ok((res.map_err(|e| anyhow!(e))?, duration_hit))
}

/// Why a reader's run ended: its duration, its count of `loops`, or a stop.
pub(super) fn end_reason(duration_hit: bool, loops: Option<u64>, count: u64) -> EndReason {
    if duration_hit {
        EndReason::Duration
    } else if loops.is_some_and(|l| count >= l) {
        EndReason::Loops
    } else {
        EndReason::Interrupted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtc_words_become_samples() {
        // A fake device: words as the driver returns them (count << 8 | RTC_PF).
        let mut words = vec![(1u64 << 8) | 0x40, (1 << 8) | 0x40, (3 << 8) | 0x40].into_iter();
        let mut got: Vec<Sample> = Vec::new();
        let stop = AtomicBool::new(false);
        let t_on = sys::clock_ns(libc::CLOCK_MONOTONIC) - 10_000_000;
        let total = rtc_loop(
            || words.next().ok_or_else(|| std::io::Error::other("end")),
            t_on,
            1_000_000,
            &mut got,
            Until {
                stop: &stop,
                loops: Some(3),
                end_ns: None,
            },
            0,
        )
        .unwrap();
        assert_eq!(total, 5);
        assert_eq!(got.iter().map(|s| s.seq).collect::<Vec<_>>(), [0, 1, 4]);
        assert_eq!(
            got.iter().map(|s| s.overruns).collect::<Vec<_>>(),
            [0, 0, 2]
        );
        // Due at t_on + 5 ms for the fifth interrupt: the latency counts from it.
        assert_eq!(
            got[2].t_ns as i64 - got[2].latency_ns,
            (t_on + 5_000_000) as i64
        );
    }

    #[test]
    fn receiver_counts_gaps_and_stamps() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        sys::enable_rx_timestamps(rx.as_raw_fd()).unwrap();
        rx.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        for seq in [0u64, 1, 4, 5] {
            tx.send_to(&seq.to_le_bytes(), rx.local_addr().unwrap())
                .unwrap();
        }
        let stop = AtomicBool::new(false);
        let mut got: Vec<Sample> = Vec::new();
        let until = Until {
            stop: &stop,
            loops: Some(4),
            end_ns: None,
        };
        let c = receive_loop(&rx, &mut got, until, 0).unwrap();
        assert_eq!((c.received, c.lost, c.unstamped), (4, 2, 0));
        assert_eq!(got.iter().map(|s| s.seq).collect::<Vec<_>>(), [0, 1, 4, 5]);
        assert_eq!(got[2].overruns, 2);
        // Never a latency bound: only that the stamp came before the read.
        assert!(got.iter().all(|s| s.latency_ns >= 0));
    }

    fn mono() -> u64 {
        sys::clock_ns(libc::CLOCK_MONOTONIC)
    }

    #[test]
    fn until_ends_on_stop_count_or_end_time() {
        let (stop, raised) = (AtomicBool::new(false), AtomicBool::new(true));
        let u = |stop, loops, end_ns| Until {
            stop,
            loops,
            end_ns,
        };
        assert!(u(&stop, None, None).more(u64::MAX, u64::MAX));
        assert!(!u(&raised, None, None).more(0, 0));
        assert!(u(&stop, Some(3), None).more(2, 0));
        assert!(!u(&stop, Some(3), None).more(3, 0));
        assert!(!u(&stop, Some(3), None).more(4, 0));
        assert!(u(&stop, None, Some(100)).more(0, 99));
        assert!(!u(&stop, None, Some(100)).more(0, 100));
        // Each end alone ends it, whatever the others say.
        assert!(!u(&raised, Some(3), Some(100)).more(0, 0));
        assert!(!u(&stop, Some(3), Some(100)).more(3, 0));
        assert!(!u(&stop, Some(3), Some(100)).more(0, 100));
    }

    /// A device that never delivers: only interrupted reads (what the end
    /// alarm does to a blocking read). Nobody raises the stop flag: the
    /// loop ends at its end time, on the clock it reads after each
    /// interrupted read; with a word at the end, after that word.
    #[test]
    fn rtc_loop_ends_at_its_end_time() {
        let stop = AtomicBool::new(false);
        let end = mono() + 20_000_000;
        let mut reads = 0;
        let mut got: Vec<Sample> = Vec::new();
        let until = Until {
            stop: &stop,
            loops: None,
            end_ns: Some(end),
        };
        let interrupted = |reads: &mut u32| {
            *reads += 1;
            std::thread::sleep(Duration::from_millis(1));
            Err(std::io::Error::from(std::io::ErrorKind::Interrupted))
        };
        let total = rtc_loop(|| interrupted(&mut reads), end, 1_000, &mut got, until, 0).unwrap();
        assert!(mono() >= end);
        assert_eq!(total, 0);
        assert!(got.is_empty());
        assert!(reads >= 2, "{reads}");
        // Words until the end: the one read after it is the last.
        let end = mono() + 20_000_000;
        let until = Until {
            end_ns: Some(end),
            ..until
        };
        let word = || {
            std::thread::sleep(Duration::from_millis(5));
            Ok((1u64 << 8) | 0x40)
        };
        let total = rtc_loop(word, mono(), 5_000_000, &mut got, until, 0).unwrap();
        assert!((1..=4).contains(&total), "{total}");
        assert!(got[got.len() - 1].t_ns >= end);
        assert!(got[..got.len() - 1].iter().all(|s| s.t_ns < end));
    }

    /// Turning periodic interrupts off leaves the thread SCHED_OTHER first
    /// (a real-time reader spinning in RTC_PIE_OFF wedged a PREEMPT_RT
    /// kernel). Needs the right to SCHED_FIFO: skipped without it, unless CI.
    #[test]
    fn turning_periodic_interrupts_off_leaves_real_time_first() {
        let policy = std::thread::spawn(|| {
            if let Err(e) = sys::set_scheduler(libc::SCHED_FIFO, 1) {
                assert!(std::env::var_os("CI").is_none(), "SCHED_FIFO refused: {e}");
                return None;
            }
            drop(PieOff(std::fs::File::open("/dev/null").unwrap()));
            Some(sys::get_scheduler().unwrap().0)
        })
        .join()
        .unwrap();
        if let Some(p) = policy {
            assert_eq!(p, libc::SCHED_OTHER);
        }
    }

    /// A read that fails (not interrupted) ends the loop with its error,
    /// before the end time.
    #[test]
    fn rtc_read_errors_end_the_loop() {
        let stop = AtomicBool::new(false);
        let until = Until {
            stop: &stop,
            loops: None,
            end_ns: Some(mono() + 5_000_000_000),
        };
        let t0 = std::time::Instant::now();
        let mut got: Vec<Sample> = Vec::new();
        let r = rtc_loop(
            || Err(std::io::Error::other("gone")),
            mono(),
            1_000,
            &mut got,
            until,
            0,
        );
        assert_eq!(r.unwrap_err().to_string(), "gone");
        assert!(t0.elapsed() < Duration::from_secs(4));
    }

    /// No packet ever comes: the receiver ends at its end time by its reads'
    /// timeout, with no stop flag.
    #[test]
    fn receiver_ends_at_its_end_time() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_millis(10)))
            .unwrap();
        let stop = AtomicBool::new(false);
        let end = mono() + 30_000_000;
        let until = Until {
            stop: &stop,
            loops: None,
            end_ns: Some(end),
        };
        let mut got: Vec<Sample> = Vec::new();
        let c = receive_loop(&rx, &mut got, until, 0).unwrap();
        assert!(mono() >= end);
        assert_eq!(c.received, 0);
        // Packets that come after the end: the first is the last one taken.
        rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let to = rx.local_addr().unwrap();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(40));
            let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
            for seq in [0u64, 1] {
                tx.send_to(&seq.to_le_bytes(), to).unwrap();
            }
        });
        let until = Until {
            end_ns: Some(mono() + 20_000_000),
            ..until
        };
        let c = receive_loop(&rx, &mut got, until, 0).unwrap();
        sender.join().unwrap();
        assert_eq!(c.received, 1);
        // An end already past: nothing is read.
        let c = receive_loop(&rx, &mut got, until, 0).unwrap();
        assert_eq!(c.received, 0);
    }

    fn reader(
        f: impl FnOnce() -> Result<u32, String> + Send + 'static,
    ) -> std::thread::JoinHandle<Result<u32, String>> {
        std::thread::spawn(f)
    }

    #[test]
    fn drain_reader_tells_the_end_time_from_a_stop() {
        let (_, mut source) = ring(16);
        let mut rec = SeriesRecorder::new(0, 4, None);
        let mut drain = |r, stop: &AtomicBool, end_ns| {
            drain_reader(r, "reader", &mut source, &mut rec, stop, None, end_ns).unwrap()
        };
        // Ended on its count, no duration; before its end time.
        let stop = AtomicBool::new(false);
        assert_eq!(drain(reader(|| Ok(7)), &stop, None), (7, false));
        assert!(stop.load(Ordering::Relaxed));
        let stop = AtomicBool::new(false);
        let later = Some(mono() + 60_000_000_000);
        assert_eq!(drain(reader(|| Ok(7)), &stop, later), (7, false));
        // Ended by itself at its end time.
        let stop = AtomicBool::new(false);
        let past = Some(mono());
        assert_eq!(drain(reader(|| Ok(1)), &stop, past), (1, true));
        // A stop signal, also after the end: interrupted.
        let stop = AtomicBool::new(true);
        assert_eq!(drain(reader(|| Ok(2)), &stop, past), (2, false));
        // A reader that does not end by itself: the end time stops it.
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let stuck = reader(move || {
            while !s.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(3)
        });
        let t0 = std::time::Instant::now();
        let soon = Some(mono() + 30_000_000);
        assert_eq!(drain(stuck, &stop, soon), (3, true));
        assert!(t0.elapsed() < Duration::from_secs(10));
    }
}
