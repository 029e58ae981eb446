//! `--listen ADDR` (and `rtscope serve`): a small HTTP/1.1 server on one
//! thread, on the standard library's sockets.
//!
//! Bounded by construction: one thread, one connection at a time, `GET` and
//! `HEAD` only, a request head of at most 16 KiB read within 2 s, every
//! response `Connection: close`. Anything else gets a 4xx and the connection
//! is closed; nothing a client sends can end the run.
//!
//! Pages of a live run: `/metrics` (OpenMetrics text, encoded by the
//! `prometheus-client` crate), `/api/snapshot` (the latest snapshot as JSON),
//! `/api/history` (the last intervals' max and p99 per series, so a page
//! opened late still shows the run so far), `/` (a page that reads the
//! history once, then fetches `/api/snapshot` once a second and draws a
//! table and a chart, with no request to anywhere else).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use serde::Serialize;

use super::{Feed, Snapshot, Subscription, PROM_BUCKETS_NS};
use crate::error::usage;

/// The content type of `/metrics`.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Resolves `addr` (`HOST:PORT`); refuses a non-loopback address unless
/// `any` (`--listen-any`).
pub fn parse_addr(addr: &str, any: bool) -> Result<Vec<SocketAddr>> {
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| usage(format!("--listen {addr}: not an address (HOST:PORT): {e}")))?
        .collect();
    if addrs.is_empty() {
        return Err(usage(format!("--listen {addr}: resolves to no address")));
    }
    if !any {
        if let Some(a) = addrs.iter().find(|a| !a.ip().is_loopback()) {
            return Err(usage(format!(
                "--listen {addr}: {} is not a loopback address; add --listen-any to expose the run's figures to the network",
                a.ip()
            )));
        }
    }
    Ok(addrs)
}

/// Binds `addr` now (a used port: exit 2, before the run measures).
pub fn bind(addr: &str, any: bool) -> Result<TcpListener> {
    let addrs = parse_addr(addr, any)?;
    let l = TcpListener::bind(&addrs[..]).map_err(|e| usage(format!("--listen {addr}: {e}")))?;
    l.set_nonblocking(true)
        .map_err(|e| usage(format!("--listen {addr}: {e}")))?;
    Ok(l)
}

/// A request as the handlers see it.
pub struct Request {
    pub method: String,
    pub path: String,
}

/// A response.
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Response {
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Self {
        Response {
            status,
            content_type,
            body: body.into(),
        }
    }

    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Response::new(
            status,
            "text/plain; charset=utf-8",
            body.into().into_bytes(),
        )
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

const MAX_HEAD: usize = 16 * 1024;

/// Reads one request head; the error response when it is not one.
fn read_request(s: &mut TcpStream) -> Result<Request, Response> {
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        if buf.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
        if buf.len() > MAX_HEAD {
            return Err(Response::text(431, "request head too large\n"));
        }
        match s.read(&mut chunk) {
            Ok(0) => return Err(Response::text(400, "incomplete request\n")),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => return Err(Response::text(408, "request timeout\n")),
        }
    }
    let head = String::from_utf8_lossy(&buf);
    let first = head.split("\r\n").next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(Response::text(400, "bad request line\n"));
    };
    if !version.starts_with("HTTP/1.") || !target.starts_with('/') {
        return Err(Response::text(400, "bad request line\n"));
    }
    let path = target.split_once('?').map_or(target, |x| x.0);
    Ok(Request {
        method: method.to_string(),
        path: path.to_string(),
    })
}

fn respond(s: &mut TcpStream, r: &Response, head_only: bool) {
    let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
        r.status,
        reason(r.status),
        r.content_type,
        r.body.len()
    );
    let _ = s.write_all(head.as_bytes());
    if !head_only {
        let _ = s.write_all(&r.body);
    }
    let _ = s.flush();
}

/// Handles one connection with `handler`.
pub fn handle(mut s: TcpStream, handler: &mut dyn FnMut(&Request) -> Response) {
    let _ = s.set_nonblocking(false);
    match read_request(&mut s) {
        Err(r) => respond(&mut s, &r, false),
        Ok(req) => {
            let head_only = req.method == "HEAD";
            if req.method != "GET" && !head_only {
                respond(&mut s, &Response::text(405, "only GET and HEAD\n"), false);
            } else {
                let r = handler(&req);
                respond(&mut s, &r, head_only);
            }
        }
    }
    let _ = s.shutdown(std::net::Shutdown::Both);
}

/// Accepts connections one at a time until `done`, calling `tick` between
/// them (at least every 50 ms).
pub fn serve(
    listener: TcpListener,
    done: &AtomicBool,
    mut tick: impl FnMut(),
    mut handler: impl FnMut(&Request) -> Response,
) {
    while !done.load(Ordering::Relaxed) {
        tick();
        match listener.accept() {
            Ok((s, _)) => handle(s, &mut handler),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Intervals the server keeps for `/api/history` (10 minutes at the default
/// one snapshot a second).
pub const HISTORY_POINTS: usize = 600;

/// The last intervals of a live run, per series: `(label, max, p99)` at each
/// snapshot's elapsed time. Bounded to [`HISTORY_POINTS`].
#[derive(Debug, Default, Serialize)]
pub struct History {
    points: std::collections::VecDeque<HistoryPoint>,
}

#[derive(Debug, Serialize)]
struct HistoryPoint {
    t: f64,
    series: Vec<(String, Option<i64>, Option<u64>)>,
}

impl History {
    /// Adds a snapshot's last interval, dropping the oldest beyond the bound.
    pub fn push(&mut self, s: &Snapshot) {
        if self.points.len() == HISTORY_POINTS {
            self.points.pop_front();
        }
        self.points.push_back(HistoryPoint {
            t: s.elapsed_s,
            series: s
                .series
                .iter()
                .map(|x| (x.label.clone(), x.interval.max_ns, x.interval.p99_ns))
                .collect(),
        });
    }
}

/// The live run's server: keeps the latest snapshot of its feed (and the
/// history of the last intervals) and serves them until the run ends.
pub fn serve_live(
    listener: TcpListener,
    sub: Subscription,
    done: Arc<AtomicBool>,
) -> Option<String> {
    let latest: std::cell::RefCell<Option<Arc<Snapshot>>> = Default::default();
    let history: std::cell::RefCell<History> = Default::default();
    let mut closed = false;
    serve(
        listener,
        &done,
        || {
            while !closed {
                match sub.rx.try_recv() {
                    Ok(Feed::Snapshot(s)) => {
                        history.borrow_mut().push(&s);
                        *latest.borrow_mut() = Some(s);
                    }
                    Ok(Feed::Samples(_)) => {}
                    Err(std::sync::mpsc::TryRecvError::Empty) => break,
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => closed = true,
                }
            }
        },
        |req| live_page(req, latest.borrow().as_deref(), &history.borrow()),
    );
    None
}

/// The pages of a live run.
pub fn live_page(req: &Request, snap: Option<&Snapshot>, history: &History) -> Response {
    match req.path.as_str() {
        "/" | "/index.html" => Response::new(200, "text/html; charset=utf-8", LIVE_PAGE),
        "/metrics" => Response::new(200, OPENMETRICS, metrics(snap)),
        "/api/snapshot" => match snap {
            Some(s) => Response::new(
                200,
                "application/json",
                serde_json::to_vec(s).unwrap_or_default(),
            ),
            None => Response::text(503, "no snapshot yet: the run is starting\n"),
        },
        "/api/history" => Response::new(
            200,
            "application/json",
            serde_json::to_vec(history).unwrap_or_default(),
        ),
        _ => Response::text(
            404,
            "not found: try /, /metrics, /api/snapshot or /api/history\n",
        ),
    }
}

/// The live page (no request goes anywhere but this server).
const LIVE_PAGE: &str = include_str!("live.html");

/// A metric of every series: name, help, and its value in a series.
type Metric<T> = (&'static str, &'static str, fn(&super::SeriesSnapshot) -> T);

#[derive(Debug)]
struct SnapshotCollector(Option<Arc<Snapshot>>);

fn secs(ns: f64) -> f64 {
    ns / 1e9
}

impl Collector for SnapshotCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(s) = &self.0 else {
            return Ok(());
        };
        {
            let run = &s.run;
            let labels = vec![
                ("experiment", run.experiment.clone()),
                ("host", run.host.clone()),
                ("kernel", run.kernel.clone()),
                ("preemption", run.preemption.clone()),
                ("plan", run.plan.clone()),
            ];
            let mut m = enc.encode_descriptor(
                "rtscope_run",
                "The run being measured (kernel, preemption model, host, plan).",
                None,
                MetricType::Info,
            )?;
            m.encode_info(&labels)?;
        }
        {
            let mut m = enc.encode_descriptor(
                "rtscope_latency",
                "Latency of each sample since the run started.",
                Some(&Unit::Seconds),
                MetricType::Histogram,
            )?;
            for x in &s.series {
                let labels = [("series", x.label.as_str())];
                let mut f = m.encode_family(&labels)?;
                let mut buckets: Vec<(f64, u64)> = PROM_BUCKETS_NS
                    .iter()
                    .zip(&x.buckets)
                    .map(|(b, n)| (secs(*b as f64), *n))
                    .collect();
                buckets.push((f64::INFINITY, x.buckets.last().copied().unwrap_or(0)));
                let total: u64 = x.buckets.iter().sum();
                f.encode_histogram::<NoLabelSet>(secs(x.sum_ns), total, &buckets, None)?;
            }
        }
        let counters: [Metric<u64>; 3] = [
            ("rtscope_samples", "Samples recorded.", |x| x.count),
            (
                "rtscope_overruns",
                "Periods missed (a wake-up after the next deadline).",
                |x| x.overruns,
            ),
            (
                "rtscope_dropped",
                "Samples lost because the aggregator fell behind.",
                |x| x.dropped,
            ),
        ];
        for (name, help, get) in counters {
            let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
            for x in &s.series {
                let labels = [("series", x.label.as_str())];
                m.encode_family(&labels)?
                    .encode_counter::<NoLabelSet, u64, u64>(&get(x), None)?;
            }
        }
        let gauges: [Metric<Option<f64>>; 3] = [
            (
                "rtscope_latency_max",
                "Largest latency since the run started.",
                |x| x.max_ns.map(|v| v as f64),
            ),
            (
                "rtscope_interval_latency_max",
                "Largest latency of the last snapshot interval.",
                |x| x.interval.max_ns.map(|v| v as f64),
            ),
            (
                "rtscope_interval_latency_p99",
                "99th percentile of the last snapshot interval (log buckets, 3 % wide).",
                |x| x.interval.p99_ns.map(|v| v as f64),
            ),
        ];
        for (name, help, get) in gauges {
            let mut m =
                enc.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Gauge)?;
            for x in &s.series {
                if let Some(v) = get(x) {
                    let labels = [("series", x.label.as_str())];
                    m.encode_family(&labels)?.encode_gauge(&secs(v))?;
                }
            }
        }
        Ok(())
    }
}

/// `/metrics`: the snapshot in OpenMetrics text (ends with `# EOF`).
pub fn metrics(snap: Option<&Snapshot>) -> String {
    let mut reg = Registry::default();
    reg.register_collector(Box::new(SnapshotCollector(
        snap.map(|s| Arc::new(s.clone())),
    )));
    let mut out = String::new();
    let _ = prometheus_client::encoding::text::encode(&mut out, &reg);
    out
}
