//! Watching a run while it goes on: aggregator snapshots and the live sinks
//! they feed (`--stream`, `--listen`, `--live`).
//!
//! ```text
//!  RT threads ─► rings ─► aggregator (drain) ─► Hub::record (per sample, aggregator only)
//!                                              └► Hub::tick ─► Snapshot per feed
//!                                                   │ bounded channel each (try_send:
//!                                                   │ a full one drops and counts)
//!                    ┌──────────────────────────────┼───────────────────────┐
//!               stream writer thread        HTTP server thread        terminal UI thread
//! ```
//!
//! Nothing here touches the real-time side: the hub lives on the aggregator
//! thread, each sink is its own thread reading its own bounded channel, and a
//! slow sink only loses snapshots (counted in the snapshots it gets later),
//! never holds the aggregator. The per-sample work (the interval accumulators
//! and the fixed Prometheus buckets) is done by the aggregator.

pub mod body;
pub mod host;
pub mod http;
pub mod metrics;
pub mod serve;
pub mod stream;
pub mod tui;
pub mod window;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use rtscope_core::record::blocks::{bucket_of, bucket_range};
use rtscope_core::record::SeriesRecorder;
use rtscope_core::sample::Sample;
use rtscope_core::system::SystemSnapshot;

use crate::error::usage;

/// `--stream-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum StreamFormat {
    /// One JSON object a line.
    #[default]
    Jsonl,
    /// Comma-separated values, a header line first.
    Csv,
}

/// What a user asked to watch (all off by default).
#[derive(Debug, Clone, PartialEq)]
pub struct LiveOptions {
    /// `--stream DEST`: `-` (stdout), a file, a FIFO or a tty device.
    pub stream: Option<PathBuf>,
    /// `--stream-every`: ns between lines; 0: every raw sample.
    pub stream_every_ns: u64,
    pub stream_format: StreamFormat,
    /// `--baud`: for a tty device.
    pub baud: Option<u32>,
    /// `--listen ADDR`.
    pub listen: Option<String>,
    /// `--listen-any`: allow a non-loopback address.
    pub listen_any: bool,
    /// `--allow-host NAME`: more `Host` names the server answers for.
    pub allow_hosts: Vec<String>,
    /// `--live`: full-screen terminal UI.
    pub tui: bool,
}

impl Default for LiveOptions {
    /// Nothing watched; the CLI's defaults otherwise (a snapshot a second, JSON lines).
    fn default() -> Self {
        LiveOptions {
            stream: None,
            stream_every_ns: 1_000_000_000,
            stream_format: StreamFormat::Jsonl,
            baud: None,
            listen: None,
            listen_any: false,
            allow_hosts: vec![],
            tui: false,
        }
    }
}

impl LiveOptions {
    /// Whether any live sink is asked for.
    pub fn any(&self) -> bool {
        self.stream.is_some() || self.listen.is_some() || self.tui
    }

    /// Checks what can be checked before the run (addresses, baud rates).
    pub fn check(&self) -> Result<()> {
        if let Some(a) = &self.listen {
            http::parse_addr(a, self.listen_any)?;
        } else if self.listen_any {
            return Err(usage("--listen-any needs --listen ADDR"));
        } else if !self.allow_hosts.is_empty() {
            return Err(usage("--allow-host needs --listen ADDR"));
        }
        host::check_names(&self.allow_hosts)?;
        if self.tui && self.stream.as_deref().is_some_and(|s| s.as_os_str() == "-") {
            return Err(usage(
                "--live and --stream - both want stdout: stream to a file or a FIFO",
            ));
        }
        if let Some(b) = self.baud {
            if self.stream.is_none() {
                return Err(usage("--baud needs --stream DEVICE"));
            }
            rtscope_core::sys::tty_speed_of(b)
                .ok_or_else(|| usage(format!("--baud {b}: not a baud rate this system knows")))?;
        }
        Ok(())
    }
}

/// The run as a snapshot describes it.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    pub experiment: String,
    pub host: String,
    pub kernel: String,
    pub preemption: String,
    /// The run's header line (what it measures, how, for how long).
    pub plan: String,
    pub started_at: String,
}

impl RunInfo {
    pub fn new(experiment: &str, system: &SystemSnapshot, plan: &str) -> Self {
        RunInfo {
            experiment: experiment.into(),
            host: system.hostname.clone().unwrap_or_default(),
            kernel: system.kernel_release.clone(),
            preemption: system.preemption_model.clone(),
            plan: plan.into(),
            started_at: rtscope_core::result::now_rfc3339(),
        }
    }
}

/// The last interval's figures of one series (`null`s when it had no sample).
#[derive(Debug, Clone, Default, Serialize)]
pub struct IntervalFigures {
    pub count: u64,
    pub min_ns: Option<i64>,
    pub mean_ns: Option<f64>,
    pub p99_ns: Option<u64>,
    pub max_ns: Option<i64>,
    /// The interval's non-empty log buckets `(bucket, count)`, in bucket
    /// order, for feeds that keep a window ([`Hub::subscribe_windowed`]);
    /// empty otherwise.
    #[serde(skip)]
    pub buckets: Vec<(u16, u32)>,
}

/// One series in a snapshot: since the start, and over the last interval.
#[derive(Debug, Clone, Serialize)]
pub struct SeriesSnapshot {
    pub label: String,
    pub count: u64,
    pub min_ns: Option<i64>,
    pub mean_ns: Option<f64>,
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub p999_ns: Option<u64>,
    pub max_ns: Option<i64>,
    /// The latest sample's latency (cyclictest's `Act`).
    pub act_ns: Option<i64>,
    pub overruns: u64,
    pub dropped: u64,
    pub interval: IntervalFigures,
    /// Late wake-ups (the samples that missed periods), samples with a
    /// negative latency, and whether figures over the intended periods are
    /// kept: for the run's warnings ([`live_warnings`]).
    #[serde(skip)]
    pub late: u64,
    #[serde(skip)]
    pub negative: u64,
    #[serde(skip)]
    pub corrected: bool,
    /// Counts per [`PROM_BUCKETS_NS`] bucket (not cumulative) and the
    /// overflow last; the sum of latencies (ns). For `/metrics`.
    #[serde(skip)]
    pub buckets: Vec<u64>,
    #[serde(skip)]
    pub sum_ns: f64,
}

impl SeriesSnapshot {
    /// The since-start part from a recorder (the interval and buckets are
    /// the hub's).
    pub fn from_recorder(label: &str, rec: &SeriesRecorder, dropped: u64) -> Self {
        let n = rec.count();
        let known = n > 0;
        SeriesSnapshot {
            label: label.into(),
            count: n,
            min_ns: known.then(|| rec.stats.min()),
            mean_ns: known.then(|| rec.stats.mean()),
            p50_ns: known.then(|| rec.hist.quantile(0.5)),
            p99_ns: known.then(|| rec.hist.quantile(0.99)),
            p999_ns: known.then(|| rec.hist.quantile(0.999)),
            max_ns: known.then(|| rec.stats.max()),
            act_ns: None,
            overruns: rec.overruns,
            dropped,
            interval: IntervalFigures::default(),
            late: rec.overrun_samples,
            negative: rec.negative,
            corrected: rec.corrected.is_some(),
            buckets: vec![],
            sum_ns: 0.0,
        }
    }
}

/// A background load as a snapshot shows it.
#[derive(Debug, Clone, Serialize)]
pub struct LoadStatus {
    pub load: String,
    pub state: String,
}

/// What every live sink is fed: the run so far, bounded in size (a few
/// hundred bytes per series).
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    /// Snapshots made for this feed so far (1, 2, ...).
    pub seq: u64,
    /// `running`, or `finished` for the last one.
    pub state: &'static str,
    /// Seconds since the measurement started.
    pub elapsed_s: f64,
    /// Seconds the `interval` figures cover.
    pub interval_s: f64,
    #[serde(serialize_with = "ser_arc")]
    pub run: Arc<RunInfo>,
    pub series: Vec<SeriesSnapshot>,
    pub loads: Vec<LoadStatus>,
    /// The run's warnings as of now: those it started with (the system's,
    /// the set-up's) and what its counters say so far (periods missed,
    /// samples dropped, negative latencies), as the result will word them.
    pub warnings: Vec<String>,
    /// Snapshots this sink did not take in time (dropped, not waited for).
    pub snapshots_dropped: u64,
}

/// The warnings a run's counters call for so far, worded as the result's
/// (cyclic's `Aggregate::series`): more than 1 % of the samples dropped
/// (or any dropped), more than 1 % of the periods missed (the union's, or
/// when it stays within 1 %, each thread's beyond it), negative latencies.
/// `series`: the threads, then `all` (the union) last when there is one.
pub fn live_warnings(series: &[SeriesSnapshot]) -> Vec<String> {
    let counts = |s: &SeriesSnapshot| crate::overload::OverloadCounts {
        count: s.count,
        dropped: s.dropped,
        missed: s.overruns,
        late: s.late,
        max_ns: s.max_ns.unwrap_or(0),
        corrected: s.corrected,
    };
    let overload = |s: &SeriesSnapshot| crate::overload::Overload::of_counts(&counts(s));
    let (union, threads) = match series.split_last() {
        Some((u, rest)) if u.label == UNION_LABEL => (Some(u), rest),
        _ => (None, series),
    };
    let mut out = Vec::new();
    let labelled = |s: &SeriesSnapshot, w: String| {
        if union.is_some() || series.len() > 1 {
            format!("{}: {w}", s.label)
        } else {
            w
        }
    };
    match union {
        Some(u) => match overload(u).dropped {
            Some(w) => out.push(w),
            None if u.dropped > 0 => out.push(format!(
                "{} samples dropped: the aggregator could not keep up",
                u.dropped
            )),
            None => {}
        },
        None => out.extend(threads.iter().filter_map(|s| {
            let w = overload(s).dropped.or_else(|| {
                (s.dropped > 0).then(|| {
                    format!(
                        "{} samples dropped: the aggregator could not keep up",
                        s.dropped
                    )
                })
            })?;
            Some(labelled(s, w))
        })),
    }
    match union.and_then(|u| overload(u).missed) {
        Some(w) => out.push(w),
        None if union.is_none() || threads.len() >= 2 => out.extend(
            threads
                .iter()
                .filter_map(|s| Some(labelled(s, overload(s).missed?))),
        ),
        None => {}
    }
    let negative: u64 = match union {
        Some(u) => u.negative,
        None => threads.iter().map(|s| s.negative).sum(),
    };
    if negative > 0 {
        out.push(format!(
            "{negative} samples had negative latency (the clock was stepped)"
        ));
    }
    out
}

fn ser_arc<S: serde::Serializer>(v: &Arc<RunInfo>, s: S) -> Result<S::Ok, S::Error> {
    v.as_ref().serialize(s)
}

/// Fixed Prometheus bucket bounds (ns), log-spaced 1 µs .. 100 ms (1-2-5).
pub const PROM_BUCKETS_NS: [u64; 16] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
];

/// The index of the Prometheus bucket a latency falls in (16: above 100 ms).
pub fn prom_bucket(ns: u64) -> usize {
    PROM_BUCKETS_NS.partition_point(|&b| b < ns)
}

/// The label of the series that is every thread together (the last one).
/// `/metrics` leaves it out: PromQL sums the threads' counters and buckets
/// (and takes the max of their maxima) without counting a sample twice.
pub const UNION_LABEL: &str = "all";

/// Log buckets of the interval histograms (`bucket_of` of any `u64`).
pub(crate) const INTERVAL_BUCKETS: usize = 1920;

/// The `q` quantile of `count` values held in log buckets `(bucket, n)`
/// given in bucket order: the upper end of the bucket that holds the value
/// of rank `ceil(q * count)` (at least 1), but never above `max`.
pub(crate) fn bucket_quantile(
    buckets: impl IntoIterator<Item = (u16, u64)>,
    count: u64,
    q: f64,
    max: u64,
) -> u64 {
    let rank = (count as f64 * q).ceil().max(1.0) as u64;
    let mut seen = 0u64;
    for (b, n) in buckets {
        seen += n;
        if seen >= rank {
            let (low, width) = bucket_range(b);
            return (low + width - 1).min(max);
        }
    }
    max
}

/// One series' figures over one interval, with a log-bucketed histogram
/// (allocated once) for its p99.
#[derive(Debug, Clone)]
struct IntervalAcc {
    count: u64,
    min: i64,
    max: i64,
    sum: i128,
    counts: Vec<u32>,
    lo: usize,
    hi: usize,
}

impl IntervalAcc {
    fn new() -> Self {
        IntervalAcc {
            count: 0,
            min: i64::MAX,
            max: i64::MIN,
            sum: 0,
            counts: vec![0; INTERVAL_BUCKETS],
            lo: INTERVAL_BUCKETS,
            hi: 0,
        }
    }

    #[inline]
    fn push(&mut self, lat: i64) {
        self.count += 1;
        self.min = self.min.min(lat);
        self.max = self.max.max(lat);
        self.sum += i128::from(lat);
        let b = usize::from(bucket_of(lat.max(0) as u64)).min(INTERVAL_BUCKETS - 1);
        self.counts[b] = self.counts[b].saturating_add(1);
        self.lo = self.lo.min(b);
        self.hi = self.hi.max(b);
    }

    /// The figures so far (with the non-empty buckets if `keep_buckets`),
    /// and a fresh start.
    fn take(&mut self, keep_buckets: bool) -> IntervalFigures {
        let f = if self.count == 0 {
            IntervalFigures::default()
        } else {
            let used = || {
                (self.lo..=self.hi)
                    .filter(|&b| self.counts[b] > 0)
                    .map(|b| (b as u16, self.counts[b]))
            };
            let p99 = bucket_quantile(
                used().map(|(b, n)| (b, u64::from(n))),
                self.count,
                0.99,
                self.max.max(0) as u64,
            );
            IntervalFigures {
                count: self.count,
                min_ns: Some(self.min),
                mean_ns: Some(self.sum as f64 / self.count as f64),
                p99_ns: Some(p99),
                max_ns: Some(self.max),
                buckets: if keep_buckets {
                    used().collect()
                } else {
                    vec![]
                },
            }
        };
        if self.lo <= self.hi {
            self.counts[self.lo..=self.hi].fill(0);
        }
        self.count = 0;
        self.min = i64::MAX;
        self.max = i64::MIN;
        self.sum = 0;
        self.lo = INTERVAL_BUCKETS;
        self.hi = 0;
        f
    }
}

/// What a feed carries.
pub enum Feed {
    Snapshot(Arc<Snapshot>),
    /// `--stream-every 0`: a batch of samples as `(series, sample)`.
    Samples(Vec<(u16, Sample)>),
}

/// A sink's end of the hub: a bounded channel and its drop count.
pub struct Subscription {
    pub rx: Receiver<Feed>,
    pub dropped: Arc<AtomicU64>,
}

struct Subscriber {
    every: Duration,
    last: Instant,
    seq: u64,
    tx: SyncSender<Feed>,
    dropped: Arc<AtomicU64>,
    intervals: Vec<IntervalAcc>,
    /// Whether its snapshots carry the intervals' buckets.
    keep_buckets: bool,
    /// Raw mode: the samples since the last tick.
    raw: Option<Vec<(u16, Sample)>>,
    closed: bool,
}

/// The aggregator's side: records per sample, publishes snapshots per feed.
pub struct Hub {
    subs: Vec<Subscriber>,
    series: usize,
    /// Per series: cumulative Prometheus bucket counts and sums.
    buckets: Vec<[u64; PROM_BUCKETS_NS.len() + 1]>,
    sums: Vec<f64>,
    run: Arc<RunInfo>,
    loads: Vec<LoadStatus>,
    started: Instant,
    /// Per series: the latest sample's latency.
    last: Vec<Option<i64>>,
    /// The warnings the run started with ([`warn`](Self::warn)).
    warnings: Vec<String>,
}

/// The most warnings a hub keeps (it drops later ones).
const MAX_WARNINGS: usize = 32;

/// How many snapshots a feed's channel holds before it drops.
const FEED_DEPTH: usize = 4;

impl Hub {
    /// A hub for `series` series (their order is the order of
    /// [`record`](Self::record)'s index and of the snapshot's series).
    pub fn new(series: usize, run: RunInfo, loads: Vec<LoadStatus>) -> Self {
        Hub {
            subs: vec![],
            series,
            buckets: vec![[0; PROM_BUCKETS_NS.len() + 1]; series],
            sums: vec![0.0; series],
            run: Arc::new(run),
            loads,
            started: Instant::now(),
            last: vec![None; series],
            warnings: vec![],
        }
    }

    /// Adds a warning every later snapshot carries (once; at most
    /// [`MAX_WARNINGS`]). Not for the aggregator's hot path: the run's
    /// supervising thread calls it when a warning arises.
    pub fn warn(&mut self, w: &str) {
        if self.warnings.len() < MAX_WARNINGS && !self.warnings.iter().any(|x| x == w) {
            self.warnings.push(w.to_string());
        }
    }

    /// A new feed of snapshots every `every`, or of raw samples
    /// (`raw`), with a bounded channel.
    pub fn subscribe(&mut self, every: Duration, raw: bool) -> Subscription {
        let (tx, rx) = sync_channel(if raw { 64 } else { FEED_DEPTH });
        let dropped = Arc::new(AtomicU64::new(0));
        self.subs.push(Subscriber {
            every,
            last: Instant::now(),
            seq: 0,
            tx,
            dropped: dropped.clone(),
            intervals: (0..self.series).map(|_| IntervalAcc::new()).collect(),
            keep_buckets: false,
            raw: raw.then(Vec::new),
            closed: false,
        });
        Subscription { rx, dropped }
    }

    /// A feed of snapshots every `every` whose interval figures carry their
    /// buckets (for a [`window::Window`]).
    pub fn subscribe_windowed(&mut self, every: Duration) -> Subscription {
        let sub = self.subscribe(every, false);
        if let Some(s) = self.subs.last_mut() {
            s.keep_buckets = true;
        }
        sub
    }

    /// Restarts the clock of the elapsed time (when the measurement starts).
    pub fn start(&mut self) {
        self.started = Instant::now();
        for s in &mut self.subs {
            s.last = self.started;
        }
    }

    /// Takes in one sample of series `i` (aggregator thread).
    #[inline]
    pub fn record(&mut self, i: usize, s: &Sample) {
        if self.subs.is_empty() || i >= self.series {
            return;
        }
        let lat = s.latency_ns.max(0) as u64;
        self.last[i] = Some(s.latency_ns);
        self.buckets[i][prom_bucket(lat)] += 1;
        self.sums[i] += lat as f64;
        for sub in &mut self.subs {
            if let Some(raw) = &mut sub.raw {
                if raw.len() < 1 << 20 {
                    raw.push((i as u16, *s));
                } else {
                    sub.dropped.fetch_add(1, Ordering::Relaxed);
                }
            } else {
                sub.intervals[i].push(s.latency_ns);
            }
        }
    }

    /// Publishes to every feed that is due; `series` builds the since-start
    /// figures (called at most once, and only when a feed is due).
    pub fn tick(&mut self, series: impl FnOnce() -> Vec<SeriesSnapshot>) {
        self.publish(series, false);
    }

    /// Publishes the final snapshot to every feed.
    pub fn finish(&mut self, series: impl FnOnce() -> Vec<SeriesSnapshot>) {
        self.publish(series, true);
    }

    fn publish(&mut self, series: impl FnOnce() -> Vec<SeriesSnapshot>, last: bool) {
        let now = Instant::now();
        let mut base: Option<(Vec<SeriesSnapshot>, Vec<String>)> = None;
        let mut build = Some(series);
        for sub in &mut self.subs {
            if sub.closed {
                continue;
            }
            if let Some(raw) = &mut sub.raw {
                if !raw.is_empty() {
                    let batch = std::mem::take(raw);
                    let n = batch.len() as u64;
                    match sub.tx.try_send(Feed::Samples(batch)) {
                        Ok(()) => {}
                        Err(TrySendError::Full(_)) => {
                            sub.dropped.fetch_add(n, Ordering::Relaxed);
                        }
                        Err(TrySendError::Disconnected(_)) => sub.closed = true,
                    }
                }
                continue;
            }
            if !last && now.duration_since(sub.last) < sub.every {
                continue;
            }
            let interval_s = now.duration_since(sub.last).as_secs_f64();
            sub.last = now;
            sub.seq += 1;
            if base.is_none() {
                let mut b = (build.take().expect("built once"))();
                for (i, s) in b.iter_mut().enumerate().take(self.series) {
                    s.buckets = self.buckets[i].to_vec();
                    s.sum_ns = self.sums[i];
                    s.act_ns = self.last[i];
                }
                // What the counters say first: it arises while the run goes on.
                let mut w = live_warnings(&b);
                w.extend(self.warnings.iter().cloned());
                base = Some((b, w));
            }
            let (mut series, warnings) = base.clone().unwrap_or_default();
            for (s, acc) in series.iter_mut().zip(&mut sub.intervals) {
                s.interval = acc.take(sub.keep_buckets);
            }
            let snap = Snapshot {
                seq: sub.seq,
                state: if last { "finished" } else { "running" },
                elapsed_s: now.duration_since(self.started).as_secs_f64(),
                interval_s,
                run: self.run.clone(),
                series,
                loads: self.loads.clone(),
                warnings,
                snapshots_dropped: sub.dropped.load(Ordering::Relaxed),
            };
            match sub.tx.try_send(Feed::Snapshot(Arc::new(snap))) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    sub.dropped.fetch_add(1, Ordering::Relaxed);
                }
                Err(TrySendError::Disconnected(_)) => sub.closed = true,
            }
        }
    }
}

/// The CPUs a sink thread is kept on: the online CPUs that no measurement
/// thread is pinned to; `None` (left where it is) when the measurement
/// threads are not pinned (`measured` empty) or use every online CPU.
pub fn sink_cpus(online: &[usize], measured: &[usize]) -> Option<Vec<usize>> {
    if measured.is_empty() {
        return None;
    }
    let rest: Vec<usize> = online
        .iter()
        .copied()
        .filter(|c| !measured.contains(c))
        .collect();
    (!rest.is_empty()).then_some(rest)
}

/// The live sinks of a run, started before it measures and ended after it.
pub struct Sinks {
    pub hub: Hub,
    threads: Vec<std::thread::JoinHandle<Option<String>>>,
    /// Raised to end the sinks (after the last snapshot).
    done: Arc<AtomicBool>,
    /// Raised when the measurement starts (the UI takes the terminal then).
    go: Arc<AtomicBool>,
    /// Whether the terminal UI runs (the status lines are then off).
    pub tui: bool,
}

/// Whether `--listen ADDR` leaves the port to the system (`HOST:0`): the
/// address bound is then printed even with `-q`, being the only way to
/// reach the server.
pub fn port_left_to_system(addr: &str) -> bool {
    addr.rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>() == Ok(0))
}

impl Sinks {
    /// Starts what `opts` asks for. Binds the listener and opens the stream
    /// now, so that a used port or a bad destination ends the run before it
    /// measures (exit 2). `stop` is the run's stop flag (the UI's q raises it).
    /// `measured_cpus`: the CPUs the measurement threads are pinned to (empty
    /// when they are not); the HTTP server runs on the other online CPUs.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        opts: &LiveOptions,
        labels: Vec<String>,
        run: RunInfo,
        loads: Vec<LoadStatus>,
        stop: Arc<AtomicBool>,
        quiet: bool,
        measured_cpus: &[usize],
    ) -> Result<Self> {
        let mut hub = Hub::new(labels.len(), run, loads);
        let done = Arc::new(AtomicBool::new(false));
        let go = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        let mut tui_on = false;
        if let Some(dest) = &opts.stream {
            let out = stream::open(dest, opts.baud)?;
            let raw = opts.stream_every_ns == 0;
            let every = Duration::from_nanos(opts.stream_every_ns.max(1));
            let sub = hub.subscribe(every, raw);
            let fmt = opts.stream_format;
            threads.push(
                std::thread::Builder::new()
                    .name("rtscope-stream".into())
                    .spawn({
                        let labels = labels.clone();
                        let run = hub.run.clone();
                        move || stream::write_loop(out, sub, fmt, labels, run, raw)
                    })?,
            );
        }
        if let Some(addr) = &opts.listen {
            let server = http::bind(addr, opts.listen_any)?;
            let bound = server
                .local_addr()
                .map_or_else(|_| addr.clone(), |a| a.to_string());
            let sub = hub.subscribe_windowed(Duration::from_millis(500));
            let d = done.clone();
            // `/metrics` names the run and its series from the first scrape.
            let first = http::Live::starting(hub.run.clone(), &labels);
            let hosts = opts.allow_hosts.clone();
            let cpus = sink_cpus(&rtscope_core::units::online_cpus(), measured_cpus);
            threads.push(
                std::thread::Builder::new()
                    .name("rtscope-http".into())
                    .spawn(move || {
                        if let Some(c) = cpus {
                            // Best effort: a cpuset that refuses these CPUs
                            // leaves the thread where it was.
                            let _ = rtscope_core::sys::set_affinity(&c);
                        }
                        http::serve_live(server, sub, d, first, &hosts)
                    })?,
            );
            if !quiet {
                eprintln!("listening on http://{bound}/ (/metrics, /api/snapshot)");
            } else if port_left_to_system(addr) {
                // The bound port is the only way to reach the server.
                eprintln!("rtscope: listening on http://{bound}/");
            }
        }
        if opts.tui {
            if tui::available() {
                let sub = hub.subscribe(Duration::from_millis(200), false);
                let (g, d) = (go.clone(), done.clone());
                let s = stop.clone();
                let names = labels.clone();
                tui::install_panic_hook();
                threads.push(
                    std::thread::Builder::new()
                        .name("rtscope-tui".into())
                        .spawn(move || tui::run(sub, g, d, s, names))?,
                );
                tui_on = true;
            } else {
                eprintln!("note: --live needs a terminal on stdout and stderr; showing the status lines instead");
            }
        }
        Ok(Sinks {
            hub,
            threads,
            done,
            go,
            tui: tui_on,
        })
    }

    /// The measurement starts: elapsed times count from now, and the UI
    /// takes the terminal.
    pub fn measuring(&mut self) {
        self.hub.start();
        self.go.store(true, Ordering::SeqCst);
    }

    /// Sends the final snapshot, ends every sink and waits for them; their
    /// problems (a stream that failed) as lines for stderr.
    pub fn finish(mut self, series: impl FnOnce() -> Vec<SeriesSnapshot>) -> Vec<String> {
        self.hub.finish(series);
        // Closing the channels ends the stream writer and the UI.
        self.hub.subs.clear();
        self.done.store(true, Ordering::SeqCst);
        // A sink blocked on its reader (a stalled pipe or terminal) is
        // waited for a second at most: the results must still be written,
        // and a reader that sleeps must not hold the run's end.
        let until = Instant::now() + Duration::from_secs(1);
        let mut out = Vec::new();
        for t in self.threads.drain(..) {
            while !t.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            if t.is_finished() {
                out.extend(t.join().unwrap_or(Some("a live sink panicked".into())));
            } else {
                out.push(format!(
                    "the {} did not end (its reader is stalled); left behind",
                    t.thread().name().unwrap_or("live sink")
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(seq: u64, lat: i64) -> Sample {
        Sample {
            seq,
            t_ns: seq * 1000,
            latency_ns: lat,
            overruns: 0,
            cpu: 0,
        }
    }

    fn info() -> RunInfo {
        RunInfo {
            experiment: "cyclic".into(),
            host: "h".into(),
            kernel: "k".into(),
            preemption: "p".into(),
            plan: "plan".into(),
            started_at: "t".into(),
        }
    }

    #[test]
    fn prometheus_buckets_are_upper_bounds() {
        assert_eq!(prom_bucket(0), 0);
        assert_eq!(prom_bucket(1_000), 0);
        assert_eq!(prom_bucket(1_001), 1);
        assert_eq!(prom_bucket(100_000_000), 15);
        assert_eq!(prom_bucket(100_000_001), 16);
    }

    #[test]
    fn sink_threads_keep_off_the_measured_cpus() {
        assert_eq!(sink_cpus(&[0, 1, 2, 3], &[]), None);
        assert_eq!(sink_cpus(&[0, 1, 2, 3], &[2]), Some(vec![0, 1, 3]));
        assert_eq!(sink_cpus(&[0, 1, 2, 3], &[1, 3]), Some(vec![0, 2]));
        assert_eq!(sink_cpus(&[0, 1], &[0, 1]), None);
        assert_eq!(sink_cpus(&[0, 1], &[1, 7]), Some(vec![0]));
    }

    #[test]
    fn bucket_quantile_takes_the_rank_bucket_and_stops_at_the_max() {
        // 100 values: 98 in bucket 10, 2 in bucket 20 (values 10 and 20: a
        // bucket of its own below 32).
        let b = [(10u16, 98u64), (20, 2)];
        assert_eq!(bucket_quantile(b, 100, 0.98, 1000), 10);
        assert_eq!(bucket_quantile(b, 100, 0.99, 1000), 20);
        assert_eq!(bucket_quantile(b, 100, 0.99, 15), 15);
        // Rank at least 1; nothing reached: the max.
        assert_eq!(bucket_quantile(b, 100, 0.0, 1000), 10);
        assert_eq!(bucket_quantile([(3u16, 1u64)], 5, 0.99, 77), 77);
        // A wide bucket: its upper end (64..66 holds 64 and 65).
        assert_eq!(bucket_quantile([(64u16, 1u64)], 1, 0.5, 1000), 65);
    }

    #[test]
    fn windowed_feeds_carry_the_interval_buckets() {
        let mut hub = Hub::new(1, info(), vec![]);
        let plain = hub.subscribe(Duration::ZERO, false);
        let windowed = hub.subscribe_windowed(Duration::ZERO);
        for v in [10, 10, 20, 5000] {
            hub.record(0, &sample(1, v));
        }
        hub.tick(|| {
            vec![SeriesSnapshot::from_recorder(
                "s",
                &SeriesRecorder::new(0, 1, None),
                0,
            )]
        });
        let Ok(Feed::Snapshot(p)) = plain.rx.try_recv() else {
            panic!()
        };
        let Ok(Feed::Snapshot(w)) = windowed.rx.try_recv() else {
            panic!()
        };
        assert!(p.series[0].interval.buckets.is_empty());
        assert_eq!(
            w.series[0].interval.buckets,
            vec![(10, 2), (20, 1), (bucket_of(5000), 1)]
        );
        assert_eq!(w.series[0].interval.count, 4);
    }

    #[test]
    fn interval_figures_and_reset() {
        let mut a = IntervalAcc::new();
        for v in 1..=1000 {
            a.push(v * 1000);
        }
        let f = a.take(false);
        assert_eq!(f.count, 1000);
        assert_eq!(f.min_ns, Some(1000));
        assert_eq!(f.max_ns, Some(1_000_000));
        let p99 = f.p99_ns.unwrap();
        // Within the bucket width (3 %) of the exact 990 us.
        assert!((960_000..=1_000_000).contains(&p99), "{p99}");
        let f = a.take(true);
        assert_eq!(f.count, 0);
        assert!(f.buckets.is_empty());
        assert_eq!(f.p99_ns, None);
        assert!(a.counts.iter().all(|&c| c == 0));
    }

    #[test]
    fn a_full_feed_drops_and_counts_and_never_blocks() {
        let mut hub = Hub::new(1, info(), vec![]);
        let sub = hub.subscribe(Duration::ZERO, false);
        for i in 0..10 {
            hub.record(0, &sample(i, 5000));
            hub.tick(|| {
                vec![SeriesSnapshot::from_recorder(
                    "s",
                    &SeriesRecorder::new(0, 1, None),
                    0,
                )]
            });
        }
        assert_eq!(sub.dropped.load(Ordering::Relaxed), 10 - FEED_DEPTH as u64);
        let got: Vec<_> = sub.rx.try_iter().collect();
        assert_eq!(got.len(), FEED_DEPTH);
        let Feed::Snapshot(s) = &got[0] else { panic!() };
        assert_eq!(s.series[0].buckets[prom_bucket(5000)], 1);
        assert_eq!(s.series[0].interval.count, 1);
    }

    #[test]
    fn raw_feeds_carry_every_sample() {
        let mut hub = Hub::new(2, info(), vec![]);
        let sub = hub.subscribe(Duration::ZERO, true);
        hub.record(0, &sample(1, 10));
        hub.record(1, &sample(1, 10));
        hub.tick(Vec::new);
        let Ok(Feed::Samples(b)) = sub.rx.try_recv() else {
            panic!()
        };
        assert_eq!(b.len(), 2);
        assert_eq!(b[1].0, 1);
    }

    fn counted(label: &str, count: u64, missed: u64, dropped: u64) -> SeriesSnapshot {
        let mut s = SeriesSnapshot::from_recorder(label, &SeriesRecorder::new(0, 1, None), dropped);
        s.count = count;
        s.overruns = missed;
        s.max_ns = Some(2_000_000);
        s
    }

    #[test]
    fn live_warnings_word_the_counters_as_the_result_does() {
        // Nothing missed, dropped or negative: nothing.
        let ok = [
            counted("thread 0", 1000, 10, 0),
            counted(UNION_LABEL, 1000, 10, 0),
        ];
        assert!(live_warnings(&ok).is_empty());
        assert!(live_warnings(&[]).is_empty());
        // The union beyond 1 %: its warning, unlabelled.
        let w = live_warnings(&[
            counted("thread 0", 1000, 20, 0),
            counted(UNION_LABEL, 1000, 20, 0),
        ]);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("2.0% of the periods were missed (20 of 1020"),
            "{w:?}"
        );
        // The union within 1 %, one of two threads beyond: that thread's.
        let w = live_warnings(&[
            counted("thread 0", 1000, 15, 0),
            counted("thread 1", 1000, 0, 0),
            counted(UNION_LABEL, 2000, 15, 0),
        ]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("thread 0: 1.5% of the periods were missed"),
            "{w:?}"
        );
        // One thread: its own figures are the union's.
        let w = live_warnings(&[
            counted("thread 0", 1000, 15, 0),
            counted(UNION_LABEL, 2000, 15, 0),
        ]);
        assert!(w.is_empty(), "{w:?}");
        // Dropped: beyond 1 % the loud warning, otherwise any.
        let w = live_warnings(&[
            counted("thread 0", 100, 0, 0),
            counted(UNION_LABEL, 100, 0, 5),
        ]);
        assert!(
            w[0].contains("of the samples were dropped (5 of 105"),
            "{w:?}"
        );
        let w = live_warnings(&[
            counted("thread 0", 1000, 0, 0),
            counted(UNION_LABEL, 1000, 0, 1),
        ]);
        assert_eq!(w, ["1 samples dropped: the aggregator could not keep up"]);
        // Negative latencies (the union's count).
        let mut u = counted(UNION_LABEL, 1000, 0, 0);
        u.negative = 3;
        let w = live_warnings(&[counted("thread 0", 1000, 0, 0), u]);
        assert_eq!(
            w,
            ["3 samples had negative latency (the clock was stepped)"]
        );
        // No union (hwlat's CPUs): each series for itself, labelled.
        let mut a = counted("cpu 0", 1000, 0, 2);
        a.negative = 1;
        let mut b = counted("cpu 1", 100, 50, 0);
        b.negative = 1;
        let w = live_warnings(&[a, b]);
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].starts_with("cpu 0: 2 samples dropped"), "{w:?}");
        assert!(
            w[1].starts_with("cpu 1: 33.3% of the periods were missed"),
            "{w:?}"
        );
        assert_eq!(
            w[2],
            "2 samples had negative latency (the clock was stepped)"
        );
        assert!(live_warnings(&[counted("cpu 0", 100, 50, 0)])[0].starts_with("33.3%"));
        let mut lone = counted("cpu 0", 100, 0, 0);
        lone.dropped = 50;
        assert!(live_warnings(&[lone])[0].starts_with("33.3% of the samples were dropped"));
    }

    #[test]
    fn snapshots_carry_the_latest_value_and_the_warnings() {
        let mut hub = Hub::new(2, info(), vec![]);
        hub.warn("RT throttling is on");
        hub.warn("RT throttling is on");
        for i in 0..MAX_WARNINGS + 3 {
            hub.warn(&format!("w{i}"));
        }
        assert_eq!(hub.warnings.len(), MAX_WARNINGS);
        assert_eq!(hub.warnings[0], "RT throttling is on");
        let sub = hub.subscribe(Duration::ZERO, false);
        hub.record(0, &sample(1, 5000));
        hub.record(0, &sample(2, 7000));
        hub.tick(|| {
            vec![
                counted("thread 0", 100, 50, 0),
                counted(UNION_LABEL, 100, 50, 0),
            ]
        });
        let Ok(Feed::Snapshot(s)) = sub.rx.try_recv() else {
            panic!()
        };
        assert_eq!(s.series[0].act_ns, Some(7000));
        assert_eq!(s.series[1].act_ns, None);
        // The counters' warning first, then those the run started with.
        assert!(
            s.warnings[0].starts_with("33.3% of the periods were missed"),
            "{:?}",
            s.warnings
        );
        assert_eq!(s.warnings[1], "RT throttling is on");
        assert_eq!(s.warnings.len(), MAX_WARNINGS + 1);
    }
}
