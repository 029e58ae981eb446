//! `--live`: the full-screen terminal view (ratatui on crossterm), fed by its
//! own snapshot feed (5 a second) on a thread of its own.
//!
//! Keys: `q`, Esc or Ctrl-C stop the run (the harness's normal stop: every
//! result is still written), `p` pauses the display, Tab cycles the series
//! the histogram and the chart show, `+`/`-` widen or narrow the chart's
//! window. The terminal is restored when the run ends, when the view's thread
//! ends for any reason, and by a panic hook.

use std::collections::VecDeque;
use std::io::{IsTerminal, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Once};
use std::time::Duration;

use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::crossterm::{cursor, execute};
use ratatui::layout::{Constraint, Direction, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Bar, BarChart, BarGroup, Block, Borders, Chart, Dataset, GraphType, Paragraph, Row, Table,
};
use ratatui::Frame;

use super::{Feed, Snapshot, Subscription, PROM_BUCKETS_NS};
use crate::output::{printable, UNKNOWN};

/// Whether a full-screen view can run: stdout is a terminal.
pub fn available() -> bool {
    std::io::stdout().is_terminal()
}

/// Whether stdout is still a terminal (a hung-up terminal is not: its
/// descriptors answer no terminal request any more).
fn still_a_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// A key the view acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Stop,
    Pause,
    Next,
    Previous,
    Wider,
    Narrower,
    /// Standard input ended (a hangup, or no keyboard).
    Gone,
}

/// The keys in one read of the raw terminal: plain bytes, Ctrl-C (0x03), a
/// lone Esc (a read of that byte alone), Shift-Tab (`ESC [ Z`); other escape
/// sequences (arrows, function keys) are skipped.
fn keys(bytes: &[u8]) -> Vec<Key> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            0x1b if bytes.len() == 1 => out.push(Key::Stop),
            0x1b => {
                if bytes[i + 1..].starts_with(b"[Z") {
                    out.push(Key::Previous);
                }
                // Skip the sequence: ESC, `[` or `O`, then up to a final letter or `~`.
                i += 1;
                if matches!(bytes.get(i), Some(b'[' | b'O')) {
                    i += 1;
                    while i < bytes.len() && !(bytes[i].is_ascii_alphabetic() || bytes[i] == b'~') {
                        i += 1;
                    }
                }
            }
            b'q' | b'Q' | 0x03 => out.push(Key::Stop),
            b'p' | b'P' => out.push(Key::Pause),
            b'\t' => out.push(Key::Next),
            b'+' | b'=' => out.push(Key::Wider),
            b'-' | b'_' => out.push(Key::Narrower),
            _ => {}
        }
        i += 1;
    }
    out
}

/// Reads keys from the terminal (in raw mode) on a thread of its own, with
/// plain blocking reads: a hung-up terminal reads as end of input, which
/// ends the thread (crossterm's event reader would spin on it). The thread
/// is not joined: at the end of the run it may still wait in `read`.
fn key_reader() -> std::sync::mpsc::Receiver<Key> {
    let (tx, rx) = std::sync::mpsc::channel();
    let _ = std::thread::Builder::new()
        .name("rtscope-keys".into())
        .spawn(move || {
            let mut buf = [0u8; 64];
            let mut stdin = std::io::stdin();
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        for k in keys(&buf[..n]) {
                            if tx.send(k).is_err() {
                                return;
                            }
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send(Key::Gone);
        });
    rx
}

/// Puts the terminal back: raw mode off, main screen, cursor shown.
fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(std::io::stdout(), LeaveAlternateScreen, cursor::Show);
}

/// Restores the terminal before a panic's message is printed (once per process).
pub fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            prev(info);
        }));
    });
}

/// Restores the terminal when dropped (the view's every exit path).
struct Screen;

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

/// The chart's windows, minutes.
const WINDOWS_MIN: [u64; 7] = [1, 2, 5, 10, 30, 60, 240];
/// Points kept per series (4 h at 5 a second).
const HISTORY: usize = 72_000;

/// Per series: (elapsed s, interval max µs, interval p99 µs).
type History = Vec<VecDeque<(f64, f64, f64)>>;

struct View {
    latest: Option<Arc<Snapshot>>,
    history: History,
    selected: usize,
    window: usize,
    paused: bool,
}

impl View {
    fn take(&mut self, s: Arc<Snapshot>) {
        if self.history.len() < s.series.len() {
            self.history.resize_with(s.series.len(), VecDeque::new);
        }
        for (h, x) in self.history.iter_mut().zip(&s.series) {
            if let (Some(max), Some(p99)) = (x.interval.max_ns, x.interval.p99_ns) {
                if h.len() == HISTORY {
                    h.pop_front();
                }
                h.push_back((s.elapsed_s, max.max(0) as f64 / 1e3, p99 as f64 / 1e3));
            }
        }
        self.latest = Some(s);
    }
}

/// Runs the view until the feed closes (the run ended); `q` and Ctrl-C
/// raise `stop`.
pub fn run(
    sub: Subscription,
    go: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    labels: Vec<String>,
) -> Option<String> {
    // The terminal is taken only when the measurement starts, so that the
    // header and the warnings of the set-up stay readable until then.
    while !go.load(Ordering::Relaxed) {
        if done.load(Ordering::Relaxed) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if let Err(e) = enable_raw_mode() {
        return Some(format!("--live: cannot use the terminal: {e}"));
    }
    let _screen = Screen;
    if let Err(e) = execute!(std::io::stdout(), EnterAlternateScreen, cursor::Hide) {
        return Some(format!("--live: cannot use the terminal: {e}"));
    }
    let mut term =
        match ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(std::io::stdout())) {
            Ok(t) => t,
            Err(e) => return Some(format!("--live: cannot use the terminal: {e}")),
        };
    let mut v = View {
        latest: None,
        history: vec![],
        // `all` (the last series) first.
        selected: labels.len().saturating_sub(1),
        window: 1,
        paused: false,
    };
    let mut frozen: Option<(Arc<Snapshot>, History)> = None;
    let key_rx = key_reader();
    loop {
        let mut closed = false;
        loop {
            match sub.rx.try_recv() {
                Ok(Feed::Snapshot(s)) => v.take(s),
                Ok(Feed::Samples(_)) => {}
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    closed = true;
                    break;
                }
            }
        }
        if closed || done.load(Ordering::Relaxed) {
            break;
        }
        let shown = match (&frozen, v.paused) {
            (Some((s, h)), true) => (Some(s.clone()), h.clone()),
            _ => (v.latest.clone(), v.history.clone()),
        };
        if term
            .draw(|f| draw(f, &v, shown.0.as_deref(), &shown.1, &labels))
            .is_err()
            || !still_a_terminal()
        {
            // The terminal is gone (a hangup: the run is stopping).
            break;
        }
        match key_rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Key::Stop) => stop.store(true, Ordering::SeqCst),
            Ok(Key::Pause) => {
                v.paused = !v.paused;
                frozen = v
                    .paused
                    .then(|| v.latest.clone().map(|s| (s, v.history.clone())))
                    .flatten();
            }
            Ok(Key::Next) => v.selected = (v.selected + 1) % labels.len().max(1),
            Ok(Key::Previous) => {
                v.selected = (v.selected + labels.len().max(1) - 1) % labels.len().max(1)
            }
            Ok(Key::Wider) => v.window = (v.window + 1).min(WINDOWS_MIN.len() - 1),
            Ok(Key::Narrower) => v.window = v.window.saturating_sub(1),
            // No keyboard (stdin ended): the view goes on, without keys.
            Ok(Key::Gone) | Err(RecvTimeoutError::Disconnected) => {
                if !still_a_terminal() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
    // ratatui's drop prints (eprintln!) when it cannot show the cursor, which
    // panics on a hung-up terminal: show it here, and forget the terminal
    // when that fails.
    if term.show_cursor().is_err() {
        std::mem::forget(term);
    }
    None
}

fn us(v: Option<f64>) -> String {
    v.map_or(UNKNOWN.to_string(), |x| format!("{:.1}", x / 1e3))
}

/// A count in at most 3 characters (`7`, `61`, `1k`, `25k`, `3M`).
fn compact(c: u64) -> String {
    match c {
        0 => String::new(),
        1..=999 => c.to_string(),
        1_000..=999_999 => format!("{}k", c / 1_000),
        1_000_000..=999_999_999 => format!("{}M", c / 1_000_000),
        _ => format!("{}G", c / 1_000_000_000),
    }
}

/// 10^e µs as a label (`10 µs`, `1 ms`, `100 ms`).
fn decade(e: i32) -> String {
    let us = 10f64.powi(e);
    if us >= 1e6 {
        format!("{} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{} ms", us / 1e3)
    } else {
        format!("{us} µs")
    }
}

fn bucket_label(i: usize) -> String {
    match PROM_BUCKETS_NS.get(i) {
        Some(&b) if b >= 1_000_000 => format!("{}m", b / 1_000_000),
        Some(&b) => format!("{}u", b / 1_000),
        None => ">".into(),
    }
}

fn draw(
    f: &mut Frame,
    v: &View,
    snap: Option<&Snapshot>,
    history: &[VecDeque<(f64, f64, f64)>],
    labels: &[String],
) {
    let n = labels.len() as u16;
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(2),
            Constraint::Length(n + 3),
            Constraint::Min(8),
            Constraint::Length(1),
        ])
        .split(f.area());
    let sel = labels.get(v.selected).cloned().unwrap_or_default();
    let Some(s) = snap else {
        f.render_widget(
            Paragraph::new("rtscope --live: waiting for the first snapshot…  (q stops)"),
            rows[0],
        );
        return;
    };
    let title = format!(
        "{}\n{:.0} s · {}{} · window {} min · [q] stop [p] pause [tab] series [+/-] window",
        printable(&s.run.plan),
        s.elapsed_s,
        s.state,
        if v.paused { " · PAUSED" } else { "" },
        WINDOWS_MIN[v.window],
    );
    f.render_widget(Paragraph::new(title), rows[0]);

    let header = Row::new([
        "series", "count", "min", "p50", "p99", "p99.9", "max", "overruns", "dropped",
    ])
    .style(Style::default().add_modifier(Modifier::BOLD));
    let body: Vec<Row> = s
        .series
        .iter()
        .map(|x| {
            let r = Row::new([
                printable(&x.label).into_owned(),
                x.count.to_string(),
                us(x.min_ns.map(|v| v as f64)),
                us(x.p50_ns.map(|v| v as f64)),
                us(x.p99_ns.map(|v| v as f64)),
                us(x.p999_ns.map(|v| v as f64)),
                us(x.max_ns.map(|v| v as f64)),
                x.overruns.to_string(),
                x.dropped.to_string(),
            ]);
            if x.label == sel {
                r.style(Style::default().add_modifier(Modifier::REVERSED))
            } else {
                r
            }
        })
        .collect();
    let widths = [Constraint::Length(10)]
        .into_iter()
        .chain(std::iter::repeat_n(Constraint::Length(9), 8));
    f.render_widget(
        Table::new(body, widths).header(header).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" latency, µs (since the start) "),
        ),
        rows[1],
    );

    let mid = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Percentage(40), Constraint::Percentage(60)])
        .split(rows[2]);
    if let Some(x) = s.series.get(v.selected) {
        let bars: Vec<Bar> = x
            .buckets
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                // Bar heights are log10(count + 1) × 100: a log scale.
                Bar::default()
                    .value(((c as f64 + 1.0).log10() * 100.0) as u64)
                    .text_value(compact(c))
                    .label(Line::from(bucket_label(i)))
            })
            .collect();
        f.render_widget(
            BarChart::default()
                .block(Block::default().borders(Borders::ALL).title(format!(
                    " {} : samples ≤ bound (log scale) ",
                    printable(&x.label)
                )))
                .data(BarGroup::default().bars(&bars))
                .bar_width(3)
                .bar_gap(1),
            mid[0],
        );
    }
    let window_s = (WINDOWS_MIN[v.window] * 60) as f64;
    let t1 = s.elapsed_s.max(1.0);
    let t0 = (t1 - window_s).max(0.0);
    let pts = history.get(v.selected);
    let lg = |u: f64| u.max(0.1).log10();
    let max_pts: Vec<(f64, f64)> = pts
        .map(|h| {
            h.iter()
                .filter(|p| p.0 >= t0)
                .map(|p| (p.0, lg(p.1)))
                .collect()
        })
        .unwrap_or_default();
    let p99_pts: Vec<(f64, f64)> = pts
        .map(|h| {
            h.iter()
                .filter(|p| p.0 >= t0)
                .map(|p| (p.0, lg(p.2)))
                .collect()
        })
        .unwrap_or_default();
    let (lo, hi) = max_pts
        .iter()
        .chain(&p99_pts)
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
    let (lo, hi) = if lo > hi {
        (0.0, 3.0)
    } else {
        (lo.floor(), hi.ceil().max(lo.floor() + 1.0))
    };
    let ylabels: Vec<Span> = (lo as i32..=hi as i32)
        .map(|e| Span::raw(decade(e)))
        .collect();
    let chart = Chart::new(vec![
        Dataset::default()
            .name("max")
            .marker(symbols::Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(Color::Red))
            .data(&max_pts),
        Dataset::default()
            .name("p99")
            .marker(symbols::Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(Color::Cyan))
            .data(&p99_pts),
    ])
    .block(Block::default().borders(Borders::ALL).title(format!(
        " {} : max and p99 per interval, log scale ",
        printable(&sel)
    )))
    .x_axis(
        Axis::default()
            .bounds([t0, t1])
            .labels([format!("{t0:.0} s"), format!("{t1:.0} s")]),
    )
    .y_axis(Axis::default().bounds([lo, hi]).labels(ylabels));
    f.render_widget(chart, mid[1]);

    let loads = if s.loads.is_empty() {
        "loads: none".to_string()
    } else {
        format!(
            "loads: {}",
            s.loads
                .iter()
                .map(|l| format!("{} ({})", printable(&l.load), l.state))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    f.render_widget(
        Paragraph::new(format!(
            "{loads} · display snapshots dropped: {}",
            s.snapshots_dropped
        )),
        rows[3],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_from_raw_bytes() {
        assert_eq!(keys(b"q"), [Key::Stop]);
        assert_eq!(keys(b"\x03"), [Key::Stop]);
        assert_eq!(keys(b"\x1b"), [Key::Stop]);
        assert_eq!(
            keys(b"p\t+-="),
            [Key::Pause, Key::Next, Key::Wider, Key::Narrower, Key::Wider]
        );
        assert_eq!(keys(b"\x1b[Z"), [Key::Previous]);
        // Arrows and function keys are skipped, whatever follows them counts.
        assert_eq!(keys(b"\x1b[A\x1b[15~p"), [Key::Pause]);
        assert_eq!(keys(b"\x1bOPx"), []);
    }
}
