//! `--stream DEST`: snapshots (or raw samples) as JSON lines or CSV, written
//! by a thread of its own from the hub's bounded feed, so that a slow reader
//! only loses lines (counted), never holds the measurement.
//!
//! DEST: `-` (stdout), a file (created or truncated), a FIFO (opened by the
//! writer thread: it waits there for a reader, the run does not), or a
//! terminal device (`--baud N` sets raw mode and the speed).

use std::fs::OpenOptions;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use anyhow::Result;
use serde_json::json;

use super::{Feed, Snapshot, StreamFormat, Subscription};
use crate::error::usage;

/// Where the lines go.
pub enum Dest {
    Stdout,
    /// An open file or device.
    File(std::fs::File),
    /// A FIFO, opened by the writer (opening blocks until a reader comes).
    Fifo(PathBuf),
}

/// Opens `dest` (before the run measures: a bad path or baud rate is exit 2).
pub fn open(dest: &Path, baud: Option<u32>) -> Result<Dest> {
    if dest.as_os_str() == "-" {
        if baud.is_some() {
            return Err(usage("--baud: --stream - is stdout, not a serial device"));
        }
        // Stdout is the stream now: the summary and every other line for a
        // person go to stderr, so that `--stream - | jq` reads only lines.
        crate::output::human_to_stderr();
        return Ok(Dest::Stdout);
    }
    let shown = dest.display();
    let meta = std::fs::metadata(dest).ok();
    if meta.as_ref().is_some_and(|m| m.file_type().is_fifo()) {
        if baud.is_some() {
            return Err(usage(format!(
                "--baud: --stream {shown} is a FIFO, not a terminal"
            )));
        }
        return Ok(Dest::Fifo(dest.to_path_buf()));
    }
    let device = meta
        .as_ref()
        .is_some_and(|m| m.file_type().is_char_device());
    let f = if device {
        OpenOptions::new().write(true).open(dest)
    } else {
        if meta.as_ref().is_some_and(|m| m.is_dir()) {
            return Err(usage(format!("--stream {shown}: is a directory")));
        }
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(dest)
    }
    .map_err(|e| usage(format!("--stream {shown}: {e}")))?;
    if let Some(b) = baud {
        let speed = rtscope_core::sys::tty_speed_of(b)
            .ok_or_else(|| usage(format!("--baud {b}: not a baud rate this system knows")))?;
        if !rtscope_core::sys::is_tty(f.as_raw_fd()) {
            return Err(usage(format!(
                "--baud: --stream {shown} is not a terminal device"
            )));
        }
        rtscope_core::sys::tty_make_raw(f.as_raw_fd(), Some(speed))
            .map_err(|e| usage(format!("--baud {b}: {shown}: {e}")))?;
    }
    Ok(Dest::File(f))
}

/// Opens a FIFO for writing once a reader has opened it, dropping (and
/// counting) what the feed brings meanwhile; gives up when the run ends.
fn open_fifo(p: &Path, sub: &Subscription) -> Result<std::fs::File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    loop {
        // Non-blocking: ENXIO while no reader has the FIFO open.
        match OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(p)
        {
            Ok(_probe) => {
                // A reader is there: open again, blocking, for plain writes.
                return OpenOptions::new()
                    .write(true)
                    .open(p)
                    .map_err(|e| format!("--stream {}: {e}", p.display()));
            }
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {}
            Err(e) => return Err(format!("--stream {}: {e}", p.display())),
        }
        loop {
            match sub.rx.try_recv() {
                Ok(Feed::Snapshot(_)) => {
                    sub.dropped.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Feed::Samples(b)) => {
                    sub.dropped.fetch_add(b.len() as u64, Ordering::Relaxed);
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => break,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    return Err(format!(
                        "--stream {}: no reader opened the FIFO during the run",
                        p.display()
                    ))
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The CSV header of snapshot lines.
pub const CSV_HEADER: &str = "elapsed_s,series,count,min_ns,mean_ns,p50_ns,p99_ns,p999_ns,max_ns,overruns,dropped,interval_count,interval_min_ns,interval_mean_ns,interval_p99_ns,interval_max_ns";
/// The CSV header of raw sample lines.
pub const CSV_RAW_HEADER: &str = "series,cpu,seq,t_ns,latency_ns,overruns";

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or(String::new(), |x| x.to_string())
}

/// A snapshot's lines.
pub fn snapshot_lines(s: &Snapshot, fmt: StreamFormat, out: &mut String) {
    match fmt {
        StreamFormat::Jsonl => {
            let v = json!({
                "type": "snapshot",
                "seq": s.seq,
                "state": s.state,
                "elapsed_s": s.elapsed_s,
                "interval_s": s.interval_s,
                "series": s.series,
                "loads": s.loads,
                "warnings": s.warnings,
                "snapshots_dropped": s.snapshots_dropped,
            });
            out.push_str(&v.to_string());
            out.push('\n');
        }
        StreamFormat::Csv => {
            for x in &s.series {
                let i = &x.interval;
                out.push_str(&format!(
                    "{:.3},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                    s.elapsed_s,
                    x.label,
                    x.count,
                    opt(x.min_ns),
                    opt(x.mean_ns.map(|m| format!("{m:.1}"))),
                    opt(x.p50_ns),
                    opt(x.p99_ns),
                    opt(x.p999_ns),
                    opt(x.max_ns),
                    x.overruns,
                    x.dropped,
                    i.count,
                    opt(i.min_ns),
                    opt(i.mean_ns.map(|m| format!("{m:.1}"))),
                    opt(i.p99_ns),
                    opt(i.max_ns),
                ));
            }
        }
    }
}

/// Writes the feed to `dest` until the hub closes it; a write error (the
/// reader went away) ends the writer and is returned as a warning.
pub fn write_loop(
    dest: Dest,
    sub: Subscription,
    fmt: StreamFormat,
    labels: Vec<String>,
    run: std::sync::Arc<super::RunInfo>,
    raw: bool,
) -> Option<String> {
    let mut w: Box<dyn Write> = match dest {
        Dest::Stdout => Box::new(std::io::stdout()),
        Dest::File(f) => Box::new(f),
        Dest::Fifo(p) => match open_fifo(&p, &sub) {
            Ok(f) => Box::new(f),
            Err(e) => return Some(e),
        },
    };
    let mut buf = String::new();
    let mut raw_started = false;
    match fmt {
        StreamFormat::Jsonl => {
            buf.push_str(&json!({"type": "run", "run": &*run}).to_string());
            buf.push('\n');
        }
        StreamFormat::Csv => {}
    }
    let mut header = false;
    let mut result = None;
    for feed in sub.rx.iter() {
        match &feed {
            Feed::Snapshot(s) => {
                if fmt == StreamFormat::Csv && !header {
                    buf.push_str(CSV_HEADER);
                    buf.push('\n');
                    header = true;
                }
                snapshot_lines(s, fmt, &mut buf);
            }
            Feed::Samples(batch) => {
                if fmt == StreamFormat::Csv && !raw_started {
                    buf.push_str(CSV_RAW_HEADER);
                    buf.push('\n');
                    raw_started = true;
                }
                for (i, s) in batch {
                    let label = labels.get(usize::from(*i)).map_or("?", |l| l.as_str());
                    match fmt {
                        StreamFormat::Jsonl => buf.push_str(&format!(
                            "{{\"type\":\"sample\",\"series\":{},\"cpu\":{},\"seq\":{},\"t_ns\":{},\"latency_ns\":{},\"overruns\":{}}}\n",
                            serde_json::Value::from(label),
                            s.cpu, s.seq, s.t_ns, s.latency_ns, s.overruns
                        )),
                        StreamFormat::Csv => buf.push_str(&format!(
                            "{label},{},{},{},{},{}\n",
                            s.cpu, s.seq, s.t_ns, s.latency_ns, s.overruns
                        )),
                    }
                }
            }
        }
        if let Err(e) = write_whole_lines(&mut w, &buf).and_then(|()| w.flush()) {
            result = Some(format!("--stream: stopped writing: {e}"));
            break;
        }
        buf.clear();
    }
    let dropped = sub.dropped.load(Ordering::Relaxed);
    if result.is_none() && fmt == StreamFormat::Jsonl {
        let end = json!({"type": "end", "dropped": dropped}).to_string() + "\n";
        let _ = w.write_all(end.as_bytes()).and_then(|()| w.flush());
    }
    if result.is_none() && dropped > 0 {
        result = Some(format!(
            "--stream: {dropped} {} dropped (the reader was too slow)",
            if raw { "samples" } else { "snapshots" }
        ));
    }
    result
}

/// Writes `text` (whole lines) in writes of at most `PIPE_BUF` (4096) bytes
/// of whole lines: on a pipe each such write is atomic, so a reader never
/// gets half a line, also when the writer is left behind, blocked, at the
/// end of the run (a line longer than that goes alone).
fn write_whole_lines(w: &mut impl Write, text: &str) -> std::io::Result<()> {
    const PIPE_BUF: usize = 4096;
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = 0;
        for (i, _) in rest.match_indices('\n') {
            if i + 1 > PIPE_BUF && end > 0 {
                break;
            }
            end = i + 1;
            if end >= PIPE_BUF {
                break;
            }
        }
        if end == 0 {
            end = rest.len();
        }
        w.write_all(&rest.as_bytes()[..end])?;
        rest = &rest[end..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn lines_are_written_whole_in_pipe_sized_writes() {
        struct Writes(Vec<Vec<u8>>);
        impl Write for Writes {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.push(b.to_vec());
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let line = format!("{}\n", "x".repeat(99));
        let long = format!("{}\n", "y".repeat(5000));
        let text = line.repeat(100) + &long + &line;
        let mut w = Writes(Vec::new());
        write_whole_lines(&mut w, &text).unwrap();
        assert_eq!(w.0.concat(), text.as_bytes());
        for c in &w.0 {
            assert!(c.ends_with(b"\n"), "a write ends mid-line");
            assert!(c.len() <= 4096 || c.len() == long.len(), "{}", c.len());
        }
        // 100 short lines in 4000 + 4000 + 2000 bytes, the long one alone, the last.
        let sizes: Vec<usize> = w.0.iter().map(Vec::len).collect();
        assert_eq!(sizes, [4000, 4000, 2000, 5001, 100]);
    }

    #[test]
    fn snapshot_lines_carry_the_series_and_the_warnings() {
        let mut x = crate::live::SeriesSnapshot::from_recorder(
            "all",
            &rtscope_core::record::SeriesRecorder::new(0, 1, None),
            0,
        );
        x.act_ns = Some(1234);
        let s = Snapshot {
            seq: 2,
            state: "running",
            elapsed_s: 1.5,
            interval_s: 0.5,
            run: Arc::new(crate::live::RunInfo {
                experiment: "cyclic".into(),
                host: "h".into(),
                kernel: "k".into(),
                preemption: "p".into(),
                plan: "p".into(),
                started_at: "t".into(),
            }),
            series: vec![x.clone(), x],
            loads: vec![],
            warnings: vec!["w".into()],
            snapshots_dropped: 3,
        };
        let mut out = String::new();
        snapshot_lines(&s, StreamFormat::Jsonl, &mut out);
        let v: serde_json::Value = serde_json::from_str(out.trim_end()).unwrap();
        assert_eq!(v["type"], "snapshot");
        assert_eq!(v["seq"], 2);
        assert_eq!(v["warnings"], serde_json::json!(["w"]));
        assert_eq!(v["series"][1]["act_ns"], 1234);
        assert_eq!(v["snapshots_dropped"], 3);
        let mut out = String::new();
        snapshot_lines(&s, StreamFormat::Csv, &mut out);
        assert_eq!(out.lines().count(), 2);
        assert!(out.starts_with("1.500,all,0,"), "{out}");
        assert_eq!(
            out.lines().next().unwrap().split(',').count(),
            CSV_HEADER.split(',').count()
        );
    }
}
