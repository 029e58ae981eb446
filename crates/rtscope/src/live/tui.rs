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
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph, Row, Table};
use ratatui::Frame;

use super::{prom_bucket, Feed, SeriesSnapshot, Snapshot, Subscription, PROM_BUCKETS_NS};
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

/// A latency (ns) in µs for a 6-column cell: one decimal below 1 ms,
/// whole µs above (`27.4`, `4248`, `123456`).
fn us(v: Option<i64>) -> String {
    match v {
        None => UNKNOWN.to_string(),
        Some(ns) if ns.unsigned_abs() < 1_000_000 => format!("{:.1}", ns as f64 / 1e3),
        Some(ns) => format!("{:.0}", ns as f64 / 1e3),
    }
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

/// A count in at most 7 characters (`1234567`, `12.3M`).
fn count_cell(c: u64) -> String {
    if c < 10_000_000 {
        c.to_string()
    } else if c < 10_000_000_000 {
        format!("{:.1}M", c as f64 / 1e6)
    } else {
        format!("{:.1}G", c as f64 / 1e9)
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

/// The table's columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Series,
    Count,
    Min,
    Act,
    Avg,
    P50,
    P99,
    P999,
    Max,
    Missed,
    Dropped,
}

impl Col {
    fn header(self) -> &'static str {
        match self {
            Col::Series => "series",
            Col::Count => "count",
            Col::Min => "min",
            Col::Act => "act",
            Col::Avg => "avg",
            Col::P50 => "p50",
            Col::P99 => "p99",
            Col::P999 => "p99.9",
            Col::Max => "max",
            Col::Missed => "missed",
            Col::Dropped => "dropped",
        }
    }

    /// Its width; `series` is as wide as the longest label (6 to 10).
    fn width(self, label: usize) -> u16 {
        match self {
            Col::Series => label.clamp(6, 10) as u16,
            Col::Count | Col::Missed | Col::Dropped => 7,
            _ => 6,
        }
    }

    fn cell(self, x: &SeriesSnapshot) -> String {
        match self {
            Col::Series => printable(&x.label).into_owned(),
            Col::Count => count_cell(x.count),
            Col::Min => us(x.min_ns),
            Col::Act => us(x.act_ns),
            Col::Avg => us(x.mean_ns.map(|m| m.round() as i64)),
            Col::P50 => us(x.p50_ns.map(|v| v as i64)),
            Col::P99 => us(x.p99_ns.map(|v| v as i64)),
            Col::P999 => us(x.p999_ns.map(|v| v as i64)),
            Col::Max => us(x.max_ns),
            Col::Missed => count_cell(x.overruns),
            Col::Dropped => x.dropped.to_string(),
        }
    }
}

/// The columns that fit `width` cells (inside the table's borders, one
/// space between columns), in display order: cyclictest's min, act, avg
/// and max always; then missed, p99, count, p99.9, dropped and p50 while
/// they fit.
fn columns(width: u16, label: usize) -> Vec<Col> {
    let order = [
        Col::Series,
        Col::Count,
        Col::Min,
        Col::Act,
        Col::Avg,
        Col::P50,
        Col::P99,
        Col::P999,
        Col::Max,
        Col::Missed,
        Col::Dropped,
    ];
    let mut chosen = vec![Col::Series, Col::Min, Col::Act, Col::Avg, Col::Max];
    let used = |c: &[Col]| -> u16 {
        c.iter().map(|x| x.width(label)).sum::<u16>() + c.len().saturating_sub(1) as u16
    };
    for extra in [
        Col::Missed,
        Col::P99,
        Col::Count,
        Col::P999,
        Col::Dropped,
        Col::P50,
    ] {
        chosen.push(extra);
        if used(&chosen) > width {
            chosen.pop();
        }
    }
    order.into_iter().filter(|c| chosen.contains(c)).collect()
}

/// One bar of the latency histogram: the samples above the bar before's
/// bound and at most `upper_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct HistBar {
    upper_ns: u64,
    count: u64,
}

/// The smallest 1-2-5 value (ns, from 1 µs up) at or above `ns`.
fn nice_ceil(ns: u64) -> u64 {
    let mut d = 1_000u64;
    loop {
        for m in [1, 2, 5] {
            let v = d.saturating_mul(m);
            if v >= ns {
                return v;
            }
        }
        match d.checked_mul(10) {
            Some(next) => d = next,
            None => return u64::MAX,
        }
    }
}

/// The histogram's bars from a series' [`PROM_BUCKETS_NS`] counts (the
/// overflow last) and its max: the buckets from the first that holds a
/// sample to the one that holds the max (the overflow's bound is the max
/// rounded up to 1-2-5), so the last bar's bound is never below the max.
/// When more than `fit` buckets, neighbours are merged in groups counted
/// from the top (the last bar keeps its bound).
fn hist_bars(buckets: &[u64], max_ns: Option<i64>, fit: usize) -> Vec<HistBar> {
    let Some(max) = max_ns else {
        return vec![];
    };
    let max = max.max(0) as u64;
    let Some(first) = buckets.iter().position(|&c| c > 0) else {
        return vec![];
    };
    if fit == 0 {
        return vec![];
    }
    let last_used = buckets.iter().rposition(|&c| c > 0).unwrap_or(first);
    let top = prom_bucket(max).min(buckets.len() - 1).max(last_used);
    let overflow = nice_ceil(max.max(PROM_BUCKETS_NS[PROM_BUCKETS_NS.len() - 1] + 1));
    let upper = |i: usize| PROM_BUCKETS_NS.get(i).copied().unwrap_or(overflow);
    let k = (top - first + 1).div_ceil(fit);
    let mut bars = Vec::new();
    let mut hi = top + 1;
    while hi > first {
        let lo = hi.saturating_sub(k).max(first);
        bars.push(HistBar {
            upper_ns: upper(hi - 1),
            count: buckets[lo..hi].iter().sum(),
        });
        hi = lo;
    }
    bars.reverse();
    bars
}

/// A bucket bound (a 1-2-5 value, ns) as an axis label: `2µs`, `50µs`,
/// `5ms`, `200ms`, `1s`.
fn bound_label(ns: u64) -> String {
    if ns < 1_000_000 {
        format!("{}µs", ns.div_ceil(1_000))
    } else if ns < 1_000_000_000 {
        format!("{}ms", ns.div_ceil(1_000_000))
    } else {
        format!("{}s", ns.div_ceil(1_000_000_000))
    }
}

/// The y axis's width for counts up to `cmax`: its widest decade label
/// (`100` is wider than `1k`) and a space.
fn count_axis_width(cmax: u64) -> usize {
    (0..=decades(cmax))
        .map(|d| compact(10u64.saturating_pow(d)).chars().count())
        .max()
        .unwrap_or(1)
        + 1
}

/// Decades of the count axis: its top is 10^decades, at or above `cmax`.
fn decades(cmax: u64) -> u32 {
    let mut d = 0;
    while 10u64.saturating_pow(d) < cmax {
        d += 1;
    }
    d
}

/// How many bars fit `width` columns (bars one column wide, a space
/// apart) beside the count axis.
fn bars_that_fit(width: usize, buckets: &[u64]) -> usize {
    let cmax = buckets.iter().copied().max().unwrap_or(0);
    width.saturating_sub(count_axis_width(cmax)).div_ceil(2)
}

/// The histogram as text lines of `width` columns: `height - 1` rows of
/// bars (heights on a log scale of counts: a bar of count c reaches
/// (log10 c + 1) / (decades + 1) of the height, so one sample still shows,
/// in eighths of a row), the count axis on the left, and a row of bound
/// labels under the bars, the last bar's always (right-aligned under it),
/// the others where they fit a space apart.
fn histogram_lines(bars: &[HistBar], width: usize, height: usize) -> Vec<Line<'static>> {
    if bars.is_empty() || height < 2 || width < 4 {
        return vec![Line::from("no samples yet")];
    }
    let rows = height - 1;
    let cmax = bars.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    let dec = decades(cmax);
    let yw = count_axis_width(cmax);
    let n = bars.len();
    let avail = width.saturating_sub(yw);
    let bw = ((avail + 1) / n).saturating_sub(1).clamp(1, 4);
    let frac = |c: u64| -> f64 {
        if c == 0 {
            0.0
        } else {
            ((c as f64).log10() + 1.0) / (f64::from(dec) + 1.0)
        }
    };
    // Heights in eighths of a row, at least one for a bar with a sample.
    let eighths: Vec<usize> = bars
        .iter()
        .map(|b| {
            let e = (frac(b.count) * rows as f64 * 8.0).round() as usize;
            if b.count > 0 {
                e.max(1)
            } else {
                0
            }
        })
        .collect();
    // The count axis: a label per decade on the row its bar top reaches.
    let mut ylabels = vec![String::new(); rows];
    for d in (0..=dec).rev() {
        let top = (frac(10u64.pow(d)) * rows as f64).round() as usize;
        let r = rows.saturating_sub(top.max(1));
        if ylabels[r].is_empty() {
            ylabels[r] = compact(10u64.pow(d));
        }
    }
    const LEVELS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let mut out = Vec::with_capacity(height);
    for (r, yl) in ylabels.iter().enumerate() {
        let base = (rows - 1 - r) * 8;
        let mut line = String::with_capacity(width * 3);
        for (i, &e) in eighths.iter().enumerate() {
            if i > 0 {
                line.push(' ');
            }
            let c = LEVELS[e.saturating_sub(base).min(8)];
            line.extend(std::iter::repeat_n(c, bw));
        }
        out.push(Line::from(vec![
            Span::styled(
                format!("{yl:>w$} ", w = yw - 1),
                Style::default().fg(Color::DarkGray),
            ),
            Span::styled(line, Style::default().fg(Color::Cyan)),
        ]));
    }
    // The bound labels.
    let mut cells: Vec<char> = vec![' '; width];
    let x_of = |i: usize| yw + i * (bw + 1);
    let last: Vec<char> = bound_label(bars[n - 1].upper_ns).chars().collect();
    let last_end = (x_of(n - 1) + bw).max(last.len()).min(width);
    let last_start = last_end.saturating_sub(last.len());
    for (j, &c) in last.iter().enumerate() {
        if let Some(cell) = cells.get_mut(last_start + j) {
            *cell = c;
        }
    }
    let mut free_from = 0;
    for (i, b) in bars.iter().enumerate().take(n - 1) {
        let l: Vec<char> = bound_label(b.upper_ns).chars().collect();
        let x = x_of(i);
        if x >= free_from && x + l.len() < last_start {
            cells[x..x + l.len()].copy_from_slice(&l);
            free_from = x + l.len() + 1;
        }
    }
    out.push(Line::from(cells.into_iter().collect::<String>()));
    out
}

/// The warnings as at most `max` lines of `width` columns: each its first
/// line (`warning: ...`, cut with `…`), then, with lines to spare, the
/// first ones continued; when they are more than `max`, the last line says
/// how many more there are.
fn warning_lines(warnings: &[String], width: usize, max: usize) -> Vec<String> {
    if warnings.is_empty() || max == 0 || width < 10 {
        return vec![];
    }
    if max == 1 && warnings.len() > 1 {
        let more = format!(" (+{} more)", warnings.len() - 1);
        let room = width.saturating_sub(more.chars().count());
        let first = cut(&format!("warning: {}", printable(&warnings[0])), room);
        return vec![format!("{first}{more}")];
    }
    let shown = if warnings.len() > max {
        max - 1
    } else {
        warnings.len()
    };
    let mut spare = max - shown - usize::from(shown < warnings.len());
    let mut out = Vec::new();
    for w in &warnings[..shown] {
        let mut chunks = wrap(&format!("warning: {}", printable(w)), width);
        let take = (1 + spare).min(chunks.len());
        spare -= take - 1;
        if chunks.len() > take {
            chunks.truncate(take);
            if let Some(l) = chunks.last_mut() {
                let mut cs: Vec<char> = l.chars().collect();
                cs.truncate(width - 1);
                cs.push('…');
                *l = cs.into_iter().collect();
            }
        }
        out.extend(chunks);
    }
    if shown < warnings.len() {
        out.push(cut(
            &format!(
                "… and {} more warnings (all in the summary at the end)",
                warnings.len() - shown
            ),
            width,
        ));
    }
    out
}

/// `text` in lines of at most `width` columns, broken at spaces (a word
/// longer than a line is cut).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut line = String::new();
    let mut len = 0;
    for word in text.split(' ') {
        let mut w: Vec<char> = word.chars().collect();
        if len > 0 && len + 1 + w.len() > width {
            out.push(std::mem::take(&mut line));
            len = 0;
        }
        if len > 0 {
            line.push(' ');
            len += 1;
        }
        while len + w.len() > width {
            let rest = w.split_off(width - len);
            line.extend(w);
            out.push(std::mem::take(&mut line));
            len = 0;
            w = rest;
        }
        len += w.len();
        line.extend(w);
    }
    out.push(line);
    out
}

/// The first line of the title, cut with `…` to `width` columns.
fn cut(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(width.saturating_sub(1)).collect();
        c.push('…');
        c
    }
}

fn draw(
    f: &mut Frame,
    v: &View,
    snap: Option<&Snapshot>,
    history: &[VecDeque<(f64, f64, f64)>],
    labels: &[String],
) {
    let area = f.area();
    let n = labels.len() as u16;
    let Some(s) = snap else {
        f.render_widget(
            Paragraph::new("rtscope --live: waiting for the first snapshot…  (q stops)"),
            area,
        );
        return;
    };
    // Warnings: up to 4 lines (a sixth of a taller screen), between the
    // table and the charts, as long as the charts keep 8 rows.
    let room = area.height.saturating_sub(2 + n + 3 + 1 + 8);
    let most = (area.height / 6).max(4).min(room) as usize;
    let warn = warning_lines(&s.warnings, area.width as usize, most);
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(2),
            Constraint::Length(n + 3),
            Constraint::Length(warn.len() as u16),
            Constraint::Min(8),
            Constraint::Length(1),
        ])
        .split(area);
    let sel = labels.get(v.selected).cloned().unwrap_or_default();
    let title = format!(
        "{}\n{:.0} s · {}{} · window {} min · [q] stop [p] pause [tab] series [+/-] window",
        cut(&printable(&s.run.plan), area.width as usize),
        s.elapsed_s,
        s.state,
        if v.paused { " · PAUSED" } else { "" },
        WINDOWS_MIN[v.window],
    );
    f.render_widget(Paragraph::new(title), rows[0]);

    let label_w = s
        .series
        .iter()
        .map(|x| x.label.chars().count())
        .max()
        .unwrap_or(6);
    let cols = columns(rows[1].width.saturating_sub(2), label_w);
    let header = Row::new(cols.iter().map(|c| c.header()))
        .style(Style::default().add_modifier(Modifier::BOLD));
    let body: Vec<Row> = s
        .series
        .iter()
        .map(|x| {
            let r = Row::new(cols.iter().map(|c| c.cell(x)));
            if x.label == sel {
                r.style(Style::default().add_modifier(Modifier::REVERSED))
            } else {
                r
            }
        })
        .collect();
    let widths: Vec<Constraint> = cols
        .iter()
        .map(|c| Constraint::Length(c.width(label_w)))
        .collect();
    f.render_widget(
        Table::new(body, widths).header(header).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" latency, µs, since the start · act: the latest · missed: periods "),
        ),
        rows[1],
    );
    if !warn.is_empty() {
        f.render_widget(
            Paragraph::new(warn.join("\n")).style(Style::default().fg(Color::Yellow)),
            rows[2],
        );
    }

    let mid = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
        .split(rows[3]);
    if let Some(x) = s.series.get(v.selected) {
        let inner = Block::default().borders(Borders::ALL).inner(mid[0]);
        let fit = bars_that_fit(inner.width as usize, &x.buckets);
        let bars = hist_bars(&x.buckets, x.max_ns, fit);
        f.render_widget(
            Paragraph::new(histogram_lines(
                &bars,
                inner.width as usize,
                inner.height as usize,
            ))
            .block(Block::default().borders(Borders::ALL).title(format!(
                " {}: samples ≤ bound, log-log ",
                printable(&x.label)
            ))),
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
    .block(
        Block::default()
            .borders(Borders::ALL)
            .title(format!(" {}: max and p99 per interval ", printable(&sel))),
    )
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
            "{loads} · samples dropped: {} · display snapshots dropped: {}",
            s.series.last().map_or(0, |x| x.dropped),
            s.snapshots_dropped
        )),
        rows[4],
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

    #[test]
    fn cells_fit_their_columns() {
        assert_eq!(us(Some(27_449)), "27.4");
        assert_eq!(us(Some(-1_200)), "-1.2");
        assert_eq!(us(Some(999_949)), "999.9");
        assert_eq!(us(Some(1_000_000)), "1000");
        assert_eq!(us(Some(4_248_400)), "4248");
        assert_eq!(us(None), UNKNOWN);
        assert_eq!(count_cell(9_999_999), "9999999");
        assert_eq!(count_cell(10_000_000), "10.0M");
        assert_eq!(count_cell(9_999_999_999), "10000.0M");
        assert_eq!(count_cell(10_000_000_000), "10.0G");
        assert_eq!(count_cell(12_345_678), "12.3M");
        assert_eq!(count_cell(12_345_678_901), "12.3G");
        assert_eq!(compact(0), "");
        assert_eq!(compact(999), "999");
        assert_eq!(compact(25_000), "25k");
        assert_eq!(compact(3_000_000), "3M");
        assert_eq!(compact(4_000_000_000), "4G");
    }

    #[test]
    fn columns_keep_cyclictests_and_add_what_fits() {
        use Col::*;
        // 80 columns: 78 inside the borders.
        assert_eq!(
            columns(78, 8),
            [Series, Count, Min, Act, Avg, P99, P999, Max, Missed, Dropped]
        );
        assert_eq!(
            columns(120, 8),
            [Series, Count, Min, Act, Avg, P50, P99, P999, Max, Missed, Dropped]
        );
        // 8+6+6+6+6 and 4 spaces: 36; then missed +8, p99 +7, count +8,
        // p99.9 +7, dropped +8, p50 +7, each where it fits.
        assert_eq!(columns(10, 8), [Series, Min, Act, Avg, Max]);
        assert_eq!(columns(42, 8), [Series, Min, Act, Avg, Max]);
        assert_eq!(columns(43, 8), [Series, Min, Act, Avg, P99, Max]);
        assert_eq!(columns(44, 8), [Series, Min, Act, Avg, Max, Missed]);
        assert_eq!(columns(51, 8), [Series, Min, Act, Avg, P99, Max, Missed]);
        assert_eq!(
            columns(58, 8),
            [Series, Min, Act, Avg, P99, P999, Max, Missed]
        );
        assert_eq!(
            columns(59, 8),
            [Series, Count, Min, Act, Avg, P99, Max, Missed]
        );
        assert_eq!(
            columns(66, 8),
            [Series, Count, Min, Act, Avg, P99, P999, Max, Missed]
        );
        // Dropped (7) does not fit 72, p50 (6) does: the later ones still try.
        assert_eq!(
            columns(73, 8),
            [Series, Count, Min, Act, Avg, P50, P99, P999, Max, Missed]
        );
        assert_eq!(Series.width(3), 6);
        assert_eq!(Series.width(9), 9);
        assert_eq!(Series.width(40), 10);
        for c in columns(200, 8) {
            assert!(c.header().len() <= usize::from(c.width(8)), "{c:?}");
        }
    }

    fn buckets(pairs: &[(usize, u64)]) -> Vec<u64> {
        let mut b = vec![0; PROM_BUCKETS_NS.len() + 1];
        for &(i, c) in pairs {
            b[i] = c;
        }
        b
    }

    #[test]
    fn one_two_five_ceilings_and_their_labels() {
        assert_eq!(nice_ceil(0), 1_000);
        assert_eq!(nice_ceil(1_000), 1_000);
        assert_eq!(nice_ceil(1_001), 2_000);
        assert_eq!(nice_ceil(2_001), 5_000);
        assert_eq!(nice_ceil(5_001), 10_000);
        assert_eq!(nice_ceil(150_000_000), 200_000_000);
        assert_eq!(nice_ceil(u64::MAX), u64::MAX);
        assert_eq!(bound_label(1_000), "1µs");
        assert_eq!(bound_label(1_500), "2µs");
        assert_eq!(bound_label(500_000), "500µs");
        assert_eq!(bound_label(999_999), "1000µs");
        assert_eq!(bound_label(1_000_000), "1ms");
        assert_eq!(bound_label(200_000_000), "200ms");
        assert_eq!(bound_label(1_000_000_000), "1s");
        assert_eq!(bound_label(2_000_000_000), "2s");
    }

    #[test]
    fn the_axis_runs_from_the_first_sample_to_the_max() {
        // 10 µs .. a max of 3.7 ms (the 5 ms bucket, index 11).
        let b = buckets(&[(3, 500), (4, 9000), (6, 40), (11, 1)]);
        let bars = hist_bars(&b, Some(3_700_000), 20);
        assert_eq!(bars.len(), 9);
        assert_eq!(
            bars[0],
            HistBar {
                upper_ns: 10_000,
                count: 500
            }
        );
        assert_eq!(
            bars[8],
            HistBar {
                upper_ns: 5_000_000,
                count: 1
            }
        );
        assert_eq!(bars.iter().map(|b| b.count).sum::<u64>(), 9541);
        // The max's bucket ends the axis even if the buckets lag behind it.
        let bars = hist_bars(&b, Some(30_000_000), 20);
        assert_eq!(bars.last().unwrap().upper_ns, 50_000_000);
        assert_eq!(bars.last().unwrap().count, 0);
        // Narrow: merged in groups of 3 from the top, the last bound kept.
        let bars = hist_bars(&b, Some(3_700_000), 3);
        assert_eq!(
            bars,
            [
                HistBar {
                    upper_ns: 50_000,
                    count: 9500
                },
                HistBar {
                    upper_ns: 500_000,
                    count: 40
                },
                HistBar {
                    upper_ns: 5_000_000,
                    count: 1
                },
            ]
        );
        let bars = hist_bars(&b, Some(3_700_000), 4);
        assert_eq!(bars.len(), 3);
        let bars = hist_bars(&b, Some(3_700_000), 5);
        assert_eq!(bars.len(), 5);
        assert_eq!(
            bars[0],
            HistBar {
                upper_ns: 10_000,
                count: 500
            }
        );
        // Above 100 ms: the overflow's bound is the max rounded up.
        let b = buckets(&[(0, 5), (16, 1)]);
        let bars = hist_bars(&b, Some(150_000_000), 40);
        assert_eq!(bars.len(), 17);
        assert_eq!(
            bars[16],
            HistBar {
                upper_ns: 200_000_000,
                count: 1
            }
        );
        let bars = hist_bars(&b, Some(50_000_000), 40);
        assert_eq!(bars[16].upper_ns, 200_000_000);
        // A sample beyond the max's bucket (another feed's figures): the
        // axis reaches it too.
        let b = buckets(&[(3, 5), (11, 1)]);
        let bars = hist_bars(&b, Some(20_000), 20);
        assert_eq!(bars.last().unwrap().upper_ns, 5_000_000);
        // Fewer buckets than the bounds: the last one is the top.
        let bars = hist_bars(&[0, 3], Some(50_000_000), 20);
        assert_eq!(
            bars,
            [HistBar {
                upper_ns: 2_000,
                count: 3
            }]
        );
        // Nothing yet, or no room.
        assert!(hist_bars(&b, None, 10).is_empty());
        assert!(hist_bars(&buckets(&[]), Some(5), 10).is_empty());
        assert!(hist_bars(&b, Some(5), 0).is_empty());
    }

    #[test]
    fn count_axis_decades() {
        assert_eq!(decades(0), 0);
        assert_eq!(decades(1), 0);
        assert_eq!(decades(2), 1);
        assert_eq!(decades(10), 1);
        assert_eq!(decades(11), 2);
        assert_eq!(count_axis_width(1), 2);
        assert_eq!(count_axis_width(10), 3);
        // `100` is wider than the top's `1k`.
        assert_eq!(count_axis_width(1_000), 4);
        assert_eq!(count_axis_width(9_000), 4);
        assert_eq!(count_axis_width(10_001), 5);
        // 38 columns, counts up to 10k (axis `10k `): 34 left, 17 bars.
        assert_eq!(bars_that_fit(38, &buckets(&[(2, 9_000)])), 17);
        assert_eq!(bars_that_fit(3, &buckets(&[(2, 9_000)])), 0);
    }

    fn text(lines: &[Line]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn histogram_text_ends_its_axis_at_the_max() {
        let bars = [
            HistBar {
                upper_ns: 10_000,
                count: 1000,
            },
            HistBar {
                upper_ns: 20_000,
                count: 10,
            },
            HistBar {
                upper_ns: 50_000,
                count: 0,
            },
            HistBar {
                upper_ns: 5_000_000,
                count: 1,
            },
        ];
        let t = text(&histogram_lines(&bars, 20, 6));
        assert_eq!(t.len(), 6, "{t:#?}");
        for l in &t {
            assert!(l.chars().count() <= 20, "{l:?}");
        }
        // Axis ` 1k ` (4 columns, as wide as `100`); 16 left for 4 bars: 3
        // wide, a space apart.
        assert_eq!(t[0], " 1k ███            ");
        assert_eq!(t[4], "  1 ███ ███     ███");
        // The last bound right under the last bar, the first at its bar,
        // the others where they fit (`20µs` would touch `10µs`).
        assert_eq!(t[5], "    10µs        5ms ");
        assert!(t[5].trim_end().ends_with("5ms"));
        // One sample still shows: an eighth of a row at least.
        let t = text(&histogram_lines(
            &[
                HistBar {
                    upper_ns: 1_000,
                    count: 100_000,
                },
                HistBar {
                    upper_ns: 2_000,
                    count: 1,
                },
            ],
            12,
            3,
        ));
        assert_eq!(t[1], "  1k ███ ▃▃▃");
        assert_eq!(t[2], "     1µs 2µs");
        // However tall the other bar: an eighth at least.
        let t = text(&histogram_lines(
            &[
                HistBar {
                    upper_ns: 1_000,
                    count: 10u64.pow(19),
                },
                HistBar {
                    upper_ns: 2_000,
                    count: 1,
                },
            ],
            20,
            2,
        ));
        assert_eq!(t[0], "10000000000G ███ ▁▁▁");
        // A label that would touch the last one is left out.
        let one = |upper_ns| HistBar { upper_ns, count: 1 };
        let t = text(&histogram_lines(&[one(1_000), one(20_000)], 9, 2));
        assert_eq!(t, ["1 ███ ███", "     20µs"]);
        let t = text(&histogram_lines(&[one(1_000), one(20_000)], 11, 2));
        assert_eq!(t, ["1 ████ ████", "  1µs  20µs"]);
        // The narrowest: 4 columns.
        assert_eq!(
            text(&histogram_lines(&[one(1_000)], 4, 2)),
            ["1 ██", " 1µs"]
        );
        assert_eq!(
            text(&histogram_lines(&[one(1_000)], 3, 2)),
            ["no samples yet"]
        );
        assert_eq!(text(&histogram_lines(&[], 20, 6)), ["no samples yet"]);
        assert_eq!(text(&histogram_lines(&bars, 20, 1)), ["no samples yet"]);
    }

    #[test]
    fn warnings_fill_their_lines_and_count_the_rest() {
        let w = |s: &str| s.to_string();
        let long = w(
            "98.7% of the periods were missed (765 of 775: wake-ups after the following deadline)",
        );
        assert_eq!(
            warning_lines(std::slice::from_ref(&long), 40, 4),
            [
                "warning: 98.7% of the periods were",
                "missed (765 of 775: wake-ups after the",
                "following deadline)"
            ]
        );
        assert_eq!(
            warning_lines(&[long.clone(), w("b")], 40, 2),
            ["warning: 98.7% of the periods were…", "warning: b"]
        );
        assert_eq!(
            warning_lines(&[long.clone(), w("b"), w("c")], 40, 2),
            [
                "warning: 98.7% of the periods were…",
                "… and 2 more warnings (all in the summa…"
            ]
        );
        // One line: the first, and how many more.
        assert_eq!(
            warning_lines(&[long.clone(), w("b"), w("c")], 30, 1),
            ["warning: 98.7% of t… (+2 more)"]
        );
        assert_eq!(warning_lines(&[w("b")], 30, 1), ["warning: b"]);
        assert_eq!(
            warning_lines(&[w("a"), w("b"), w("c")], 12, 2),
            ["warning: a", "… and 2 mor…"]
        );
        // A cut line keeps the width, its last column the `…`.
        assert_eq!(
            warning_lines(&[w("abcdefghij klm")], 19, 1),
            ["warning: abcdefghi…"]
        );
        assert_eq!(warning_lines(&[w("b")], 10, 1), ["warning: b"]);
        assert!(warning_lines(&[], 40, 4).is_empty());
        assert!(warning_lines(std::slice::from_ref(&long), 40, 0).is_empty());
        assert!(warning_lines(&[long], 9, 4).is_empty());
        assert_eq!(wrap("abc defgh", 4), ["abc", "defg", "h"]);
        assert_eq!(wrap("ab cd", 5), ["ab cd"]);
        assert_eq!(cut("abcdef", 6), "abcdef");
        assert_eq!(cut("abcdefg", 6), "abcde…");
    }

    fn series(label: &str, b: Vec<u64>, max: i64) -> SeriesSnapshot {
        let mut x = SeriesSnapshot::from_recorder(
            label,
            &rtscope_core::record::SeriesRecorder::new(0, 1, None),
            0,
        );
        x.count = b.iter().sum();
        x.min_ns = Some(9_900);
        x.act_ns = Some(26_100);
        x.mean_ns = Some(35_640.0);
        x.p50_ns = Some(27_000);
        x.p99_ns = Some(75_700);
        x.p999_ns = Some(1_020_000);
        x.max_ns = Some(max);
        x.overruns = 41;
        x.buckets = b;
        x
    }

    /// The whole view at 80×24 (ratatui's test backend): the table's
    /// columns, the warnings, and the histogram's axis up to the max.
    #[test]
    fn the_view_at_80_by_24() {
        let b = buckets(&[(3, 500), (4, 9000), (5, 300), (6, 40), (9, 3), (11, 1)]);
        let snap = Snapshot {
            seq: 3,
            state: "running",
            elapsed_s: 8.0,
            interval_s: 0.2,
            run: Arc::new(super::super::RunInfo {
                experiment: "cyclic".into(),
                host: "h".into(),
                kernel: "k".into(),
                preemption: "p".into(),
                plan: "rtscope cyclic: 2 threads".into(),
                started_at: "t".into(),
            }),
            series: vec![
                series("thread 0", b.clone(), 3_700_000),
                series("thread 1", buckets(&[(4, 10)]), 20_000),
                series("all", b, 3_700_000),
            ],
            loads: vec![],
            warnings: vec!["2.0% of the periods were missed".into()],
            snapshots_dropped: 0,
        };
        let labels: Vec<String> = ["thread 0", "thread 1", "all"].map(String::from).into();
        let v = View {
            latest: None,
            history: vec![],
            selected: 2,
            window: 1,
            paused: false,
        };
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(80, 24)).unwrap();
        term.draw(|f| draw(f, &v, Some(&snap), &[], &labels))
            .unwrap();
        let buf = term.backend().buffer().clone();
        let rows: Vec<String> = (0..24)
            .map(|y| (0..80).map(|x| buf[(x, y)].symbol()).collect())
            .collect();
        let screen = rows.join("\n");
        assert!(
            rows[3].contains(
                "series   count   min    act    avg    p99    p99.9  max    missed  dropped"
            ),
            "{screen}"
        );
        assert!(
            rows[6]
                .contains("all      9844    9.9    26.1   35.6   75.7   1020   3700   41      0"),
            "{screen}"
        );
        assert!(
            rows[8].starts_with("warning: 2.0% of the periods were missed"),
            "{screen}"
        );
        // The histogram (the left half): its bound labels on its last
        // inside row, ending at 5 ms (the max, 3.7 ms, is in (2, 5] ms).
        let axis = &rows[21];
        let left: String = axis.chars().skip(1).take(38).collect();
        assert_eq!(left.split_whitespace().last(), Some("5ms"), "{screen}");
        assert!(left.trim_start().starts_with("10µs"), "{screen}");
        assert!(
            rows[9].contains(" all: samples ≤ bound, log-log "),
            "{screen}"
        );
        assert!(
            rows[23].starts_with("loads: none · samples dropped: 0"),
            "{screen}"
        );
        // The selected series' row is shown reversed.
        assert!(buf[(2, 6)].modifier.contains(Modifier::REVERSED));
        assert!(!buf[(2, 5)].modifier.contains(Modifier::REVERSED));
        // Many warnings: 4 lines at 24 rows, what is left above the
        // charts' 8 at 20, a sixth of 40.
        let mut snap = snap;
        snap.warnings = (0..10).map(|i| format!("w{i}")).collect();
        for (h, lines) in [(24u16, 4usize), (20, 3), (40, 6)] {
            let mut term =
                ratatui::Terminal::new(ratatui::backend::TestBackend::new(80, h)).unwrap();
            term.draw(|f| draw(f, &v, Some(&snap), &[], &labels))
                .unwrap();
            let buf = term.backend().buffer().clone();
            let row = |y: u16| -> String { (0..80).map(|x| buf[(x, y)].symbol()).collect() };
            for y in 0..lines as u16 - 1 {
                assert!(
                    row(8 + y).starts_with(&format!("warning: w{y} ")),
                    "{h}: {}",
                    row(8 + y)
                );
            }
            let more = row(8 + lines as u16 - 1);
            assert!(
                more.starts_with(&format!("… and {} more warnings", 11 - lines)),
                "{h}: {more}"
            );
            assert!(row(8 + lines as u16).starts_with('┌'), "{h}");
        }
    }
}
