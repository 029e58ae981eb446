//! `rtscope irq --source gpio:CHIP:LINE`: GPIO edge interrupts through the
//! GPIO character device, uAPI v2 (Linux 5.10+).
//!
//! The line is requested as an input with edge detection (`--edge`); the
//! kernel stamps each edge in the line's interrupt handler on the event clock
//! (`--event-clock`: CLOCK_MONOTONIC by default, CLOCK_REALTIME since Linux
//! 5.11) and queues a `struct gpio_v2_line_event`. The real-time reader
//! thread blocks in `read` of the request's file descriptor (up to
//! [`BATCH`] records into a buffer on its stack: no allocation), reads the
//! same clock when `read` returns, and pushes one sample per event:
//! latency = that reading − the kernel's stamp. Gaps in `line_seqno` are
//! events the kernel's buffer dropped before they were read: counted as the
//! series' `overruns` and in `attributes.lost`.
//!
//! With a duration the reader ends by itself at its end time (see
//! [`super::irq::Until`]); its blocking `read` is cut short by an end alarm
//! ([`rtscope_core::rt::end_alarm`]), as events may stop coming.
//!
//! `--drive LINE` requests a second line of the same chip as an output and
//! toggles it `--rate` times per second from a (non-real-time) driver
//! thread: wire it to the measured line and the board measures itself.
//!
//! The ioctls and the record layout are in `rtscope_core::sys::gpio` (see
//! its module doc for why they are direct ioctls rather than `gpiocdev`).

use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use serde::Serialize;
use serde_json::json;

use rtscope_core::cyclic::end_time;
use rtscope_core::record::SeriesRecorder;
use rtscope_core::sample::{ring, Sample, SampleSink};
use rtscope_core::sys::{self, GpioLineEvent};

use super::irq::{IrqOptions, IrqSource, Until};
use super::run::{self, RunRequest};
use crate::error::usage;

/// Records read at most per `read`.
pub const BATCH: usize = 16;
/// The kernel's event buffer for the request (records).
const KERNEL_BUFFER: u32 = 256;

/// Which edges of the line are interrupts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Edge {
    /// Inactive to active.
    #[default]
    Rising,
    /// Active to inactive.
    Falling,
    /// Both.
    Both,
}

/// The clock the kernel stamps edges on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum, Default)]
#[serde(rename_all = "kebab-case")]
pub enum EventClock {
    /// CLOCK_MONOTONIC (every kernel with uAPI v2).
    #[default]
    Monotonic,
    /// CLOCK_REALTIME (Linux 5.11+).
    Realtime,
    /// A hardware timestamp engine (Linux 5.19+; refused: its clock is not a user-space clock).
    Hte,
}

impl EventClock {
    fn clock_id(self) -> libc::clockid_t {
        match self {
            EventClock::Realtime => libc::CLOCK_REALTIME,
            _ => libc::CLOCK_MONOTONIC,
        }
    }

    fn name(self) -> &'static str {
        match self {
            EventClock::Realtime => "CLOCK_REALTIME",
            _ => "CLOCK_MONOTONIC",
        }
    }
}

/// `gpio:CHIP:LINE` of `--source`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpioTarget {
    pub chip: PathBuf,
    pub line: u32,
}

/// Parses `gpio:CHIP:LINE` (CHIP a path, or a bare `gpiochipN` under /dev).
pub fn parse_target(s: &str) -> Result<GpioTarget, String> {
    let rest = s
        .strip_prefix("gpio:")
        .ok_or_else(|| format!("'{s}' is not gpio:CHIP:LINE"))?;
    let (chip, line) = rest
        .rsplit_once(':')
        .ok_or_else(|| format!("'{s}': expected gpio:CHIP:LINE, e.g. gpio:/dev/gpiochip0:17"))?;
    if chip.is_empty() {
        return Err(format!("'{s}': no chip (gpio:/dev/gpiochip0:17)"));
    }
    let line: u32 = line.parse().map_err(|_| {
        format!("'{s}': line '{line}' is not a line number (gpio:/dev/gpiochip0:17)")
    })?;
    let chip = if chip.contains('/') {
        PathBuf::from(chip)
    } else {
        Path::new("/dev").join(chip)
    };
    Ok(GpioTarget { chip, line })
}

/// A planned gpio run (goes into the result document).
#[derive(Debug, Clone, Serialize)]
pub struct GpioPlan {
    pub source: IrqSource,
    pub chip: PathBuf,
    pub line: u32,
    pub edge: Edge,
    pub event_clock: EventClock,
    /// The output line toggled by the built-in driver.
    pub drive: Option<u32>,
    /// Edges per second the driver makes (with `drive`).
    pub rate_hz: u64,
    pub cpu: usize,
    pub loops: Option<u64>,
    pub duration_ns: Option<u64>,
    pub spikes: usize,
    /// The real-time choice, the loads and the outputs (`run.rs`).
    #[serde(flatten)]
    pub run: RunRequest,
    /// How latency is measured.
    pub clock: String,
}

/// What the reader counted besides its samples.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct GpioCounts {
    pub events: u64,
    /// Events stamped before the reader was ready (queued while the run
    /// started): read and skipped, not measured.
    pub stale: u64,
    pub lost: u64,
    pub rising: u64,
    pub falling: u64,
}

/// The reader's loop: `read` fills a buffer of records (returns how many; 0
/// is the end, for recordings), and each record becomes a sample: latency =
/// `clock` after the read − the record's stamp; a gap in `line_seqno` is
/// lost events (the sample's overruns). Events stamped before `since_ns`
/// (on `clock`: queued before the reader was ready) are skipped. It ends on
/// `until` (its end time on CLOCK_MONOTONIC, read after each batch and after
/// an interrupted read). No allocation.
pub fn gpio_loop(
    mut read: impl FnMut(&mut [GpioLineEvent]) -> std::io::Result<usize>,
    clock: libc::clockid_t,
    since_ns: u64,
    sink: &mut impl SampleSink,
    until: Until,
    cpu: u32,
) -> std::io::Result<GpioCounts> {
    let mut c = GpioCounts::default();
    let mut buf = [GpioLineEvent::default(); BATCH];
    let mut expected: Option<u32> = None;
    let loops = until.loops;
    let mut now_mono = sys::clock_ns(libc::CLOCK_MONOTONIC);
    while until.more(c.events, now_mono) {
        let n = match read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n.min(BATCH),
            // A stop or the end alarm: the loop's ends are looked at again.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                now_mono = sys::clock_ns(libc::CLOCK_MONOTONIC);
                continue;
            }
            Err(e) => return Err(e),
        };
        let now = sys::clock_ns(clock);
        now_mono = if clock == libc::CLOCK_MONOTONIC {
            now
        } else {
            sys::clock_ns(libc::CLOCK_MONOTONIC)
        };
        for e in &buf[..n] {
            if e.timestamp_ns < since_ns {
                c.stale += 1;
                expected = Some(e.line_seqno.wrapping_add(1));
                continue;
            }
            let gap = match expected {
                Some(x) => e.line_seqno.wrapping_sub(x),
                None => 0,
            };
            // A sequence number going backwards (a recording restarted): no loss.
            let gap = if gap > u32::MAX / 2 { 0 } else { gap };
            expected = Some(e.line_seqno.wrapping_add(1));
            c.lost += u64::from(gap);
            c.events += 1;
            match e.id {
                sys::GPIO_EVENT_RISING_EDGE => c.rising += 1,
                sys::GPIO_EVENT_FALLING_EDGE => c.falling += 1,
                _ => {}
            }
            sink.push(Sample {
                seq: u64::from(e.line_seqno),
                t_ns: now_mono,
                latency_ns: now as i64 - e.timestamp_ns as i64,
                overruns: gap,
                cpu,
            });
            if loops.is_some_and(|l| c.events >= l) {
                break;
            }
        }
    }
    Ok(c)
}

/// Toggles the output request `fd` every `period_ns` until `stop`.
fn drive_loop(fd: &OwnedFd, period_ns: u64, stop: &AtomicBool) -> std::io::Result<u64> {
    let mut high = false;
    let mut n = 0u64;
    let mut t = sys::clock_ns(libc::CLOCK_MONOTONIC) + period_ns;
    while !stop.load(Ordering::Relaxed) {
        sys::sleep_until(libc::CLOCK_MONOTONIC, t)?;
        high = !high;
        sys::gpio_set_value(fd.as_raw_fd(), high)?;
        n += 1;
        t += period_ns;
    }
    let _ = sys::gpio_set_value(fd.as_raw_fd(), false);
    Ok(n)
}

/// Opens `chip` as a GPIO chip: the file and what the chip says of itself.
/// A path that is not a GPIO chip is refused input (exit 2), as for rtc.
fn open_chip(chip: &Path) -> Result<(std::fs::File, sys::GpioChipInfo)> {
    use std::os::unix::fs::FileTypeExt;
    let d = chip.display();
    match std::fs::metadata(chip) {
        Ok(m) if m.file_type().is_char_device() => {}
        Ok(_) => {
            return Err(usage(format!(
                "{d}: not a character device (a GPIO chip is /dev/gpiochipN)"
            )))
        }
        Err(e) => return Err(usage(format!("{d}: {e} (GPIO chips: ls /dev/gpiochip*)"))),
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(chip)
        .map_err(|e| usage(format!("{d}: {e}")))?;
    let info = sys::gpio_chip_info(f.as_raw_fd()).map_err(|e| {
        usage(format!(
            "{d}: GPIO_GET_CHIPINFO_IOCTL failed: {e}{}",
            if e.raw_os_error() == Some(libc::ENOTTY) {
                " (not a GPIO chip)"
            } else {
                ""
            }
        ))
    })?;
    Ok((f, info))
}

fn request_error(chip: &Path, line: u32, what: &str, e: std::io::Error) -> anyhow::Error {
    anyhow!(
        "{}: cannot request line {line} {what}: {e}{}",
        chip.display(),
        match e.raw_os_error() {
            Some(libc::EBUSY) => " (in use: gpioinfo shows by whom)",
            Some(libc::EINVAL) =>
                " (a kernel before 5.10 has no uAPI v2; the realtime event clock needs 5.11)",
            Some(libc::ENOTTY) => " (a kernel before 5.10 has no uAPI v2)",
            _ => "",
        }
    )
}

/// Runs `irq --source gpio:CHIP:LINE`; the exit code.
pub fn run(o: &IrqOptions, cpu: usize) -> Result<i32> {
    let target = o
        .gpio
        .clone()
        .ok_or_else(|| usage("--source gpio needs gpio:CHIP:LINE"))?;
    if o.trace != super::cyclic_trace::TraceMode::Off
        || o.trace_outliers_ns.is_some()
        || o.peer.is_some()
    {
        return Err(usage(
            "--trace and --peer are not available for --source gpio",
        ));
    }
    if o.rtc_device != Path::new(super::irq::DEFAULT_RTC) {
        return Err(usage("--rtc-device is for --source rtc"));
    }
    let (edge, event_clock) = (
        o.edge.unwrap_or_default(),
        o.event_clock.unwrap_or_default(),
    );
    if event_clock == EventClock::Hte {
        return Err(usage(
            "--event-clock hte: hardware timestamp engine stamps are on the engine's clock, which rtscope cannot compare with a user-space clock (use monotonic or realtime)",
        ));
    }
    if o.drive == Some(target.line) {
        return Err(usage(format!(
            "--drive {}: the driven line must differ from the measured one (wire one to the other)",
            target.line
        )));
    }
    o.run.check(&[])?;
    let (chip, info) = open_chip(&target.chip)?;
    for (what, l) in [("--source", Some(target.line)), ("--drive", o.drive)] {
        if let Some(l) = l.filter(|&l| l >= info.lines) {
            return Err(usage(format!(
                "{what}: line {l}: {} ({}) has {} lines (0-{})",
                target.chip.display(),
                info.label,
                info.lines,
                info.lines.saturating_sub(1)
            )));
        }
    }
    let mut flags = sys::GPIO_FLAG_INPUT
        | match edge {
            Edge::Rising => sys::GPIO_FLAG_EDGE_RISING,
            Edge::Falling => sys::GPIO_FLAG_EDGE_FALLING,
            Edge::Both => sys::GPIO_FLAG_EDGE_RISING | sys::GPIO_FLAG_EDGE_FALLING,
        };
    if event_clock == EventClock::Realtime {
        flags |= sys::GPIO_FLAG_EVENT_CLOCK_REALTIME;
    }
    let req = sys::gpio_request_line(
        chip.as_raw_fd(),
        target.line,
        flags,
        "rtscope-irq",
        KERNEL_BUFFER,
    )
    .map_err(|e| request_error(&target.chip, target.line, "as an edge input", e))?;
    let out = match o.drive {
        Some(l) => Some(
            sys::gpio_request_line(
                chip.as_raw_fd(),
                l,
                sys::GPIO_FLAG_OUTPUT,
                "rtscope-drive",
                0,
            )
            .map_err(|e| request_error(&target.chip, l, "as an output", e))?,
        ),
        None => None,
    };
    let plan = GpioPlan {
        source: IrqSource::Gpio,
        chip: target.chip.clone(),
        line: target.line,
        edge,
        event_clock,
        drive: o.drive,
        rate_hz: o.rate_hz,
        cpu,
        loops: o.loops,
        duration_ns: o.duration_ns,
        spikes: o.spikes,
        run: o.run.clone(),
        clock: format!(
            "{0} after read − the kernel's edge stamp (gpio_v2_line_event.timestamp_ns, {0})",
            event_clock.name()
        ),
    };
    let header = format!(
        "rtscope irq: source gpio {} line {} ({} edges, {}), {}reader on CPU {} SCHED_{} {}",
        target.chip.display(),
        target.line,
        serde_json::to_value(edge)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        event_clock.name(),
        match o.drive {
            Some(l) => format!("line {l} driven at {}/s, ", o.rate_hz),
            None => String::new(),
        },
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
    let (r_stop, r_tid, loops, clock) = (
        stop.clone(),
        tid.clone(),
        plan.loops,
        plan.event_clock.clock_id(),
    );
    let reader = std::thread::Builder::new()
        .name("rtscope-gpio".into())
        .spawn(
            move || -> Result<(GpioCounts, rtscope_core::rt::ThreadState), String> {
                let st = setup.apply().map_err(|e| e.to_string())?;
                rtscope_core::rt::accept_wake()
                    .map_err(|e| format!("cannot make the wait interruptible: {e}"))?;
                r_tid.store(st.tid, Ordering::Relaxed);
                // The read blocks until an edge comes (maybe never): the
                // alarm interrupts it at the end.
                let alarm = end_ns
                    .map(|e| rtscope_core::rt::end_alarm(libc::CLOCK_MONOTONIC, e))
                    .transpose()
                    .map_err(|e| format!("cannot arm the end alarm: {e}"))?;
                let fd = req.as_raw_fd();
                let since = sys::clock_ns(clock);
                let until = Until {
                    stop: &r_stop,
                    loops,
                    end_ns,
                };
                let c = gpio_loop(
                    |b| sys::gpio_read_events(fd, b),
                    clock,
                    since,
                    &mut sink,
                    until,
                    cpu as u32,
                )
                .map_err(|e| format!("read: {e}"))?;
                drop(alarm);
                drop(req);
                Ok((c, st))
            },
        )
        .context("cannot start the reader thread")?;
    let driver = match out {
        Some(fd) => {
            let (d_stop, period) = (stop.clone(), 1_000_000_000 / plan.rate_hz);
            Some(
                std::thread::Builder::new()
                    .name("rtscope-drive".into())
                    .spawn(move || drive_loop(&fd, period, &d_stop))
                    .context("cannot start the driver thread")?,
            )
        }
        None => None,
    };
    let res = super::irq::drain_reader(
        reader,
        "reader",
        &mut source,
        &mut rec,
        &stop,
        Some(&tid),
        end_ns,
    );
    let driven = driver.map(|d| d.join());
    let ((counts, state), duration_hit) = res?;
    let mut warnings = Vec::new();
    let toggles = match driven {
        Some(Ok(Ok(n))) => Some(n),
        Some(Ok(Err(e))) => {
            warnings.push(format!("the driver of line {:?} failed: {e}", plan.drive));
            None
        }
        Some(Err(_)) => {
            warnings.push("the driver thread panicked".into());
            None
        }
        None => None,
    };
    let mut s = rec.to_series("gpio", source.dropped());
    let a = &mut s.attributes;
    a.insert("source".into(), json!("gpio"));
    a.insert("chip".into(), json!(plan.chip));
    a.insert("chip_name".into(), json!(info.name));
    a.insert("chip_label".into(), json!(info.label));
    a.insert("line".into(), json!(plan.line));
    a.insert("edge".into(), json!(plan.edge));
    a.insert("event_clock".into(), json!(plan.event_clock));
    a.insert("events".into(), json!(counts.events));
    a.insert("lost".into(), json!(counts.lost));
    a.insert("stale".into(), json!(counts.stale));
    a.insert("rising".into(), json!(counts.rising));
    a.insert("falling".into(), json!(counts.falling));
    a.insert("drive".into(), json!(plan.drive));
    a.insert("toggles".into(), json!(toggles));
    a.insert("tid".into(), json!(state.tid));
    a.insert("policy".into(), json!(state.policy));
    a.insert("priority".into(), json!(state.priority));
    a.insert("cpus".into(), json!([cpu]));
    if counts.lost > 0 {
        warnings.push(format!(
            "{} edge events were lost (line_seqno gaps: the kernel's buffer overflowed)",
            counts.lost
        ));
    }
    if counts.events == 0 {
        warnings.push("no edge event was read".into());
    }
    // (Its overruns are lost events, warned of above.)
    let loud: Vec<String> = run::Overload::of(&s).dropped.into_iter().collect();
    let _ = std::io::stderr().write_all(run::warning_lines(&loud).as_bytes());
    warnings.extend(loud);
    let end = super::irq::end_reason(duration_hit, plan.loops, counts.events);
    let doc = run.finish("irq", &plan, vec![s], end, warnings).doc;
    let mut text = crate::output::summary::cyclic_summary(&doc);
    text.push_str(&format!(
        "edges: {} measured ({} rising, {} falling), {} lost, {} queued before the start (not measured); latency = user read time − kernel edge stamp ({})\n",
        counts.events,
        counts.rising,
        counts.falling,
        counts.lost,
        counts.stale,
        plan.event_clock.name()
    ));
    let code = run::deliver(&doc, &plan.run.outputs, vec![], &text);
    Ok(code) // 0, 1, or 3: a gate failed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn parses_targets() {
        let t = parse_target("gpio:/dev/gpiochip0:17").unwrap();
        assert_eq!(
            (t.chip.as_path(), t.line),
            (Path::new("/dev/gpiochip0"), 17)
        );
        let t = parse_target("gpio:gpiochip2:3").unwrap();
        assert_eq!(t.chip, Path::new("/dev/gpiochip2"));
        for bad in [
            "gpio:foo",
            "gpio::3",
            "gpio:/dev/gpiochip0:x",
            "gpio:/dev/gpiochip0:-1",
            "gpio",
        ] {
            let e = parse_target(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
    }

    fn until(stop: &AtomicBool, loops: Option<u64>) -> Until<'_> {
        Until {
            stop,
            loops,
            end_ns: None,
        }
    }

    fn ev(seq: u32, ts: u64, id: u32) -> GpioLineEvent {
        GpioLineEvent {
            timestamp_ns: ts,
            id,
            offset: 17,
            seqno: seq,
            line_seqno: seq,
            padding: [0; 6],
        }
    }

    /// Recorded event records (the bytes a line request returns) in a file:
    /// read through the same `read` wrapper and turned into samples.
    #[test]
    fn recorded_events_become_samples() {
        let base = sys::clock_ns(libc::CLOCK_MONOTONIC) - 50_000_000;
        let recorded = [
            ev(1, base, sys::GPIO_EVENT_RISING_EDGE),
            ev(2, base + 1_000_000, sys::GPIO_EVENT_FALLING_EDGE),
            // Events 3 and 4 were dropped by the kernel's buffer.
            ev(5, base + 4_000_000, sys::GPIO_EVENT_RISING_EDGE),
            ev(6, base + 5_000_000, sys::GPIO_EVENT_FALLING_EDGE),
        ];
        let mut f = tempfile::tempfile().unwrap();
        for e in &recorded {
            f.write_all(&e.to_bytes()).unwrap();
        }
        use std::io::Seek;
        f.rewind().unwrap();
        let fd = f.as_raw_fd();
        let stop = AtomicBool::new(false);
        let mut got: Vec<Sample> = Vec::new();
        let c = gpio_loop(
            |b| sys::gpio_read_events(fd, b),
            libc::CLOCK_MONOTONIC,
            0,
            &mut got,
            until(&stop, None),
            1,
        )
        .unwrap();
        assert_eq!(
            c,
            GpioCounts {
                events: 4,
                stale: 0,
                lost: 2,
                rising: 2,
                falling: 2
            }
        );
        assert_eq!(got.iter().map(|s| s.seq).collect::<Vec<_>>(), [1, 2, 5, 6]);
        assert_eq!(
            got.iter().map(|s| s.overruns).collect::<Vec<_>>(),
            [0, 0, 2, 0]
        );
        for (s, e) in got.iter().zip(&recorded) {
            // latency = the read's clock − the stamp (never a bound on its size).
            assert_eq!(s.t_ns as i64 - s.latency_ns, e.timestamp_ns as i64);
            assert_eq!(s.cpu, 1);
        }
        // --loops stops within a batch.
        f.rewind().unwrap();
        let mut got: Vec<Sample> = Vec::new();
        let c = gpio_loop(
            |b| sys::gpio_read_events(fd, b),
            libc::CLOCK_MONOTONIC,
            0,
            &mut got,
            until(&stop, Some(3)),
            0,
        )
        .unwrap();
        assert_eq!((c.events, got.len()), (3, 3));
        // Events queued before the reader was ready are skipped, and the
        // sequence continues from them (no loss counted for 1-2).
        f.rewind().unwrap();
        let mut got: Vec<Sample> = Vec::new();
        let c = gpio_loop(
            |b| sys::gpio_read_events(fd, b),
            libc::CLOCK_MONOTONIC,
            base + 1,
            &mut got,
            until(&stop, None),
            0,
        )
        .unwrap();
        assert_eq!((c.stale, c.events, c.lost), (1, 3, 2));
        assert_eq!(got.iter().map(|s| s.seq).collect::<Vec<_>>(), [2, 5, 6]);
    }

    /// Nobody raises the stop flag: the loop ends at its end time, seen on
    /// the clock it reads after an interrupted read (what the end alarm does
    /// to a read no edge ends) or after a batch.
    #[test]
    fn reader_ends_at_its_end_time() {
        let stop = AtomicBool::new(false);
        let mono = || sys::clock_ns(libc::CLOCK_MONOTONIC);
        let end = mono() + 20_000_000;
        let until = Until {
            stop: &stop,
            loops: None,
            end_ns: Some(end),
        };
        let mut got: Vec<Sample> = Vec::new();
        let c = gpio_loop(
            |_| {
                std::thread::sleep(std::time::Duration::from_millis(1));
                Err(std::io::Error::from(std::io::ErrorKind::Interrupted))
            },
            libc::CLOCK_MONOTONIC,
            0,
            &mut got,
            until,
            0,
        )
        .unwrap();
        assert!(mono() >= end);
        assert_eq!(c.events, 0);
        // Edges every 5 ms, on CLOCK_REALTIME stamps: the batch read after
        // the end is the last.
        let end = mono() + 20_000_000;
        let mut seq = 0;
        let c = gpio_loop(
            |b| {
                std::thread::sleep(std::time::Duration::from_millis(5));
                seq += 1;
                b[0] = ev(
                    seq,
                    sys::clock_ns(libc::CLOCK_REALTIME),
                    sys::GPIO_EVENT_RISING_EDGE,
                );
                Ok(1)
            },
            libc::CLOCK_REALTIME,
            0,
            &mut got,
            Until {
                end_ns: Some(end),
                ..until
            },
            0,
        )
        .unwrap();
        assert!((1..=4).contains(&c.events), "{c:?}");
        assert!(got[got.len() - 1].t_ns >= end);
        assert!(got[..got.len() - 1].iter().all(|s| s.t_ns < end));
    }

    /// A read that fails (not interrupted) ends the loop with its error,
    /// before the end time.
    #[test]
    fn read_errors_end_the_loop() {
        let stop = AtomicBool::new(false);
        let t0 = std::time::Instant::now();
        let mut got: Vec<Sample> = Vec::new();
        let r = gpio_loop(
            |_| Err(std::io::Error::other("gone")),
            libc::CLOCK_MONOTONIC,
            0,
            &mut got,
            Until {
                stop: &stop,
                loops: None,
                end_ns: Some(sys::clock_ns(libc::CLOCK_MONOTONIC) + 5_000_000_000),
            },
            0,
        );
        assert_eq!(r.unwrap_err().to_string(), "gone");
        assert!(t0.elapsed() < std::time::Duration::from_secs(4));
    }

    #[test]
    fn interrupted_reads_retry_and_stop_ends() {
        let stop = AtomicBool::new(false);
        let mut calls = 0;
        let mut got: Vec<Sample> = Vec::new();
        let c = gpio_loop(
            |b| {
                calls += 1;
                match calls {
                    1 => Err(std::io::Error::from(std::io::ErrorKind::Interrupted)),
                    2 => {
                        b[0] = ev(7, 0, sys::GPIO_EVENT_RISING_EDGE);
                        Ok(1)
                    }
                    _ => Ok(0),
                }
            },
            libc::CLOCK_REALTIME,
            0,
            &mut got,
            until(&stop, None),
            0,
        )
        .unwrap();
        assert_eq!((c.events, c.lost, calls), (1, 0, 3));
        stop.store(true, Ordering::Relaxed);
        let c = gpio_loop(
            |_| unreachable!(),
            libc::CLOCK_MONOTONIC,
            0,
            &mut got,
            until(&stop, None),
            0,
        );
        assert_eq!(c.unwrap().events, 0);
    }
}
