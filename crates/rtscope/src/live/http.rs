//! `--listen ADDR` (and `rtscope serve`): an HTTP/1.1 server on one thread
//! of its own.
//!
//! **Why hyper.** The protocol (parsing, `HEAD`, `431` for a head too large,
//! `400` for garbage, header read time-outs) is left to `hyper` 1.x, the
//! HTTP implementation under most of Rust's servers (axum, warp, reqwest's
//! client side), run on a current-thread `tokio` runtime: one OS thread
//! serves every connection concurrently, so a client that connects and sends
//! nothing, or sends a byte a second, holds a socket and a few hundred bytes
//! of memory, never the server. (The hand-written loop this replaces took one
//! connection at a time: 131 idle clients silenced it.) A blocking server
//! crate such as `tiny_http` would need a thread per slow client and has no
//! header time-out of its own; axum would add routing and `tower` layers
//! that six fixed paths do not need. All of it is pure Rust (no TLS, no C).
//!
//! **Bounds** ([`LIMITS`]): at most 256 connections open; at the bound, the
//! oldest connection is closed to make room for the new one (a scrape takes
//! milliseconds, so what is closed is the idle or slow client that has been
//! there longest, and a scrape is answered however many idle connections
//! are piled up). A request head must arrive complete within 2 s of the
//! connection and be at most 16 KiB (else `431`); a connection lives at most
//! 10 s in all (a client that does not read its answer is cut off); `GET`
//! and `HEAD` only (`405`); the body of a request is never read; every
//! answer is `Connection: close`, so no connection stays open between
//! scrapes. When the process runs out of file descriptors, the oldest
//! connection is closed too. Nothing a client sends can end the run.
//!
//! **Memory**: answers are sent with backpressure ([`super::body`]): a
//! client that does not read holds one 32 KiB chunk of the server's memory
//! (beyond the kernel's socket buffer), a file is read a chunk at a time as
//! it is sent, and pages not yet read by their clients may hold at most
//! 16 MiB in all (beyond it: `503`, try again). A page that reads files is
//! rendered on one of four blocking threads; one whose client has gone
//! before its turn is not rendered.
//!
//! **Host**: requests are answered only for the server's own host names
//! ([`super::host`]): on a loopback bind, loopback names and addresses and
//! those named with `--allow-host` (`421` otherwise), so that a
//! DNS-rebinding page cannot read it.
//!
//! The thread is kept off the measured CPUs when the measurement threads are
//! pinned ([`super::sink_cpus`]) and does nothing between requests but read
//! its feed every 50 ms.
//!
//! Pages of a live run: `/metrics` (OpenMetrics or the Prometheus text
//! format, [`super::metrics`]), `/api/snapshot` (the latest snapshot as
//! JSON), `/api/history` (the last intervals' max and p99 per series, so a
//! page opened late still shows the run so far), `/` (a page that reads the
//! history once, then fetches `/api/snapshot` once a second and draws a
//! table and a chart, with no request to anywhere else).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Result;
use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue};
use hyper::Method;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::Serialize;

use super::body::{Body, Budget};
use super::host::HostCheck;
use super::metrics::{metrics, Format};
use super::window::Window;
use super::{Feed, Snapshot, Subscription};
use crate::error::usage;

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
    // A longer queue of connections not yet accepted than std's 128 (the
    // kernel caps it at net.core.somaxconn): a burst of hundreds of
    // connections would otherwise have SYNs dropped, and a scrape among
    // them retried by its client a second later. Listening again on a
    // listening socket only changes its backlog.
    let s = socket2::Socket::from(l);
    s.listen(LISTEN_BACKLOG)
        .map_err(|e| usage(format!("--listen {addr}: {e}")))?;
    Ok(s.into())
}

/// The queue of connections not yet accepted.
const LISTEN_BACKLOG: i32 = 1024;

/// What a connection may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once; at the bound the oldest is closed.
    pub max_connections: usize,
    /// From the connection to the end of the request head.
    pub head_timeout: Duration,
    /// The whole connection, head to the last byte of the answer.
    pub connection_timeout: Duration,
    /// The request head (request line and headers), bytes (at least 8 KiB).
    pub max_head: usize,
    /// Header fields in a request.
    pub max_headers: usize,
    /// Bytes of pages in memory not yet read by their clients, in all.
    pub max_unread: usize,
}

/// The server's bounds.
pub const LIMITS: Limits = Limits {
    max_connections: 256,
    head_timeout: Duration::from_secs(2),
    connection_timeout: Duration::from_secs(10),
    max_head: 16 * 1024,
    max_headers: 64,
    max_unread: 16 << 20,
};

/// A request as the handlers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The `Accept` header (several joined with `, `), if any.
    pub accept: Option<String>,
    /// Raised when the client has gone (its connection closed).
    pub gone: Gone,
}

/// Whether the client of a request has gone: a page that takes time looks
/// at it between its steps and stops.
#[derive(Debug, Clone, Default)]
pub struct Gone(Arc<AtomicBool>);

impl Gone {
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl PartialEq for Gone {
    /// Requests are compared by what they ask for.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Gone {}

/// Raises its [`Gone`] when dropped (the connection's task ends).
struct GoneOnDrop(Gone);

impl Drop for GoneOnDrop {
    fn drop(&mut self) {
        (self.0).0.store(true, Ordering::Relaxed);
    }
}

impl Request {
    /// A `GET` of `path` with no `Accept` header.
    #[cfg(test)]
    pub fn get(path: &str) -> Self {
        Request {
            method: "GET".into(),
            path: path.into(),
            accept: None,
            gone: Gone::default(),
        }
    }
}

/// A file to send as the body of an answer: its first `len` bytes, read as
/// they are sent.
#[derive(Debug, Clone)]
pub struct SendFile {
    pub file: Arc<std::fs::File>,
    pub len: u64,
}

impl PartialEq for SendFile {
    fn eq(&self, o: &Self) -> bool {
        Arc::ptr_eq(&self.file, &o.file) && self.len == o.len
    }
}

impl Eq for SendFile {}

/// A response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    /// Headers besides the type, length and the ones every answer has.
    pub headers: Vec<(&'static str, &'static str)>,
    pub body: Vec<u8>,
    /// A file sent instead of `body`.
    pub file: Option<SendFile>,
}

impl Response {
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Self {
        Response {
            status,
            content_type,
            headers: vec![],
            body: body.into(),
            file: None,
        }
    }

    /// An answer whose body is the first `len` bytes of `file`.
    pub fn file(content_type: &'static str, file: std::fs::File, len: u64) -> Self {
        Response {
            file: Some(SendFile {
                file: Arc::new(file),
                len,
            }),
            ..Response::new(200, content_type, Vec::new())
        }
    }

    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Response::new(
            status,
            "text/plain; charset=utf-8",
            body.into().into_bytes(),
        )
    }

    /// With one more header.
    pub fn with(mut self, name: &'static str, value: &'static str) -> Self {
        self.headers.push((name, value));
        self
    }
}

/// The pages a server answers with.
pub type Handler = Arc<dyn Fn(&Request) -> Response + Send + Sync>;

/// A handler, and whether it blocks (reads and renders files: run on the
/// runtime's blocking threads, at most four, so that other connections go on
/// meanwhile) or answers from memory at once (run on the server's thread).
#[derive(Clone)]
pub struct Pages {
    handler: Handler,
    blocking: bool,
    /// `--allow-host` names.
    hosts: Arc<Vec<String>>,
}

impl Pages {
    /// Pages answered from memory, at once.
    pub fn inline(f: impl Fn(&Request) -> Response + Send + Sync + 'static) -> Self {
        Pages {
            handler: Arc::new(f),
            blocking: false,
            hosts: Arc::default(),
        }
    }

    /// Pages that read files.
    pub fn blocking(f: impl Fn(&Request) -> Response + Send + Sync + 'static) -> Self {
        Pages {
            handler: Arc::new(f),
            blocking: true,
            hosts: Arc::default(),
        }
    }

    /// With the names `--allow-host` adds to those the server answers for.
    pub fn allow_hosts(mut self, names: &[String]) -> Self {
        self.hosts = Arc::new(names.to_vec());
        self
    }
}

/// A connection the server keeps track of.
trait Conn {
    fn is_finished(&self) -> bool;
    fn close(&self);
}

impl Conn for tokio::task::AbortHandle {
    fn is_finished(&self) -> bool {
        tokio::task::AbortHandle::is_finished(self)
    }
    fn close(&self) {
        // Cancels the connection's task, which drops (closes) its socket.
        self.abort();
    }
}

/// The open connections, oldest first, at most `max`.
struct Conns<C> {
    max: usize,
    open: VecDeque<C>,
}

impl<C: Conn> Conns<C> {
    fn new(max: usize) -> Self {
        Conns {
            max: max.max(1),
            open: VecDeque::new(),
        }
    }

    /// Forgets the connections that ended, and closes the oldest ones until
    /// there is room for one more; returns how many it closed.
    fn make_room(&mut self) -> usize {
        self.open.retain(|c| !c.is_finished());
        let mut closed = 0;
        while self.open.len() >= self.max {
            if let Some(c) = self.open.pop_front() {
                c.close();
                closed += 1;
            }
        }
        closed
    }

    /// Closes the oldest open connection (out of file descriptors); whether
    /// there was one.
    fn close_oldest(&mut self) -> bool {
        self.open.retain(|c| !c.is_finished());
        match self.open.pop_front() {
            Some(c) => {
                c.close();
                true
            }
            None => false,
        }
    }

    fn add(&mut self, c: C) {
        self.open.push_back(c);
    }
}

/// Whether an `accept` error means that the process (or the system) is out
/// of descriptors or memory for sockets: closing a connection frees one.
fn out_of_sockets(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// Time between two `accept`s after one failed.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// Accepts connections for ever, each served by a task of its own.
async fn accept_loop(listener: tokio::net::TcpListener, server: Arc<Shared>) {
    let mut conns = Conns::new(server.limits.max_connections);
    loop {
        match listener.accept().await {
            Ok((sock, _)) => {
                conns.make_room();
                let task = tokio::spawn(connection(sock, server.clone()));
                conns.add(task.abort_handle());
            }
            Err(e) => {
                if out_of_sockets(&e) {
                    conns.close_oldest();
                }
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
}

/// What every connection of a server shares.
struct Shared {
    pages: Pages,
    limits: Limits,
    hosts: HostCheck,
    budget: Budget,
}

/// Serves one connection: one request, within the limits.
async fn connection(sock: tokio::net::TcpStream, server: Arc<Shared>) {
    let _ = sock.set_nodelay(true);
    let limits = server.limits;
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let server = server.clone();
        async move { Ok::<_, Infallible>(answer(&server, &req).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.head_timeout)
        .keep_alive(false)
        .title_case_headers(true)
        .max_buf_size(limits.max_head.max(8192))
        .max_headers(limits.max_headers)
        .serve_connection(TokioIo::new(sock), service);
    // An error (a time-out, a reset, a head too large: hyper has answered
    // what can be answered) or the end: the socket is closed either way.
    let _ = tokio::time::timeout(limits.connection_timeout, conn).await;
}

/// The request as the handlers see it.
fn request_of<B>(req: &hyper::Request<B>) -> Request {
    let accept: Vec<&str> = req
        .headers()
        .get_all(hyper::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    Request {
        method: req.method().as_str().to_string(),
        path: req.uri().path().to_string(),
        accept: (!accept.is_empty()).then(|| accept.join(", ")),
        gone: Gone::default(),
    }
}

/// Whether the request's `Host` (and absolute target) is one `check` answers.
fn host_allowed<B>(check: &HostCheck, req: &hyper::Request<B>) -> bool {
    let hosts: Vec<&[u8]> = req
        .headers()
        .get_all(hyper::header::HOST)
        .iter()
        .map(|v| v.as_bytes())
        .collect();
    check.allows(&hosts, req.uri().authority().map(|a| a.as_str()))
}

/// Answers one request with the server's pages (`GET` and `HEAD` only;
/// hyper leaves the body out of an answer to `HEAD`).
async fn answer<B>(server: &Shared, req: &hyper::Request<B>) -> hyper::Response<Body> {
    let pages = &server.pages;
    let r = if !host_allowed(&server.hosts, req) {
        super::host::refused()
    } else if req.method() != Method::GET && req.method() != Method::HEAD {
        Response::text(405, "only GET and HEAD\n").with("Allow", "GET, HEAD")
    } else if pages.blocking {
        let (h, r) = (pages.handler.clone(), request_of(req));
        // Dropped with this future when the client goes (hyper ends the
        // connection): a page still waiting for a blocking thread is then
        // not rendered.
        let _gone = GoneOnDrop(r.gone.clone());
        tokio::task::spawn_blocking(move || {
            if r.gone.is_set() {
                Response::text(503, "the client has gone\n")
            } else {
                h(&r)
            }
        })
        .await
        .unwrap_or_else(|_| Response::text(500, "the page failed\n"))
    } else {
        (pages.handler)(&request_of(req))
    };
    to_hyper(r, &server.budget)
}

/// The hyper response of a [`Response`], with the headers every answer has;
/// a page beyond the budget of unread answers is a `503` instead.
fn to_hyper(r: Response, budget: &Budget) -> hyper::Response<Body> {
    let (r, body) = match (r.file.clone(), budget.take(r.body.len())) {
        (Some(f), _) => {
            let body = Body::File {
                file: f.file,
                left: f.len,
            };
            (r, body)
        }
        (None, Some(held)) => {
            let data = Bytes::from(r.body);
            let r = Response { body: vec![], ..r };
            (r, Body::bytes(data, held))
        }
        (None, None) => {
            let busy = Response::text(
                503,
                "busy: other clients have not read their answers yet; try again\n",
            )
            .with("Retry-After", "1");
            let held = budget.take(busy.body.len()).expect("small answers fit");
            let body = Body::bytes(busy.body.clone(), held);
            (busy, body)
        }
    };
    let mut out = hyper::Response::new(body);
    *out.status_mut() =
        hyper::StatusCode::from_u16(r.status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let h = out.headers_mut();
    let fixed = [
        ("Content-Type", r.content_type),
        ("Cache-Control", "no-store"),
        ("X-Content-Type-Options", "nosniff"),
        ("Connection", "close"),
    ];
    for (k, v) in fixed.into_iter().chain(r.headers) {
        // Names and values are the code's constants: none is refused.
        if let (Ok(k), Ok(v)) = (
            HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            h.append(k, v);
        }
    }
    out
}

/// Threads that render pages reading files ([`Pages::blocking`]).
const BLOCKING_THREADS: usize = 4;

/// How often the server thread looks at `done` and calls `tick`.
const TICK: Duration = Duration::from_millis(50);

/// Serves `listener` with `pages` until `done`, calling `tick` every 50 ms
/// on the server's thread (to take in a feed). Returns when `done` is
/// raised; an error only when the runtime cannot start.
pub fn serve(
    listener: TcpListener,
    done: &AtomicBool,
    pages: Pages,
    limits: Limits,
    mut tick: impl FnMut(),
) -> std::io::Result<()> {
    let hosts = match listener.local_addr() {
        Ok(a) => HostCheck::for_bind(&a, &pages.hosts),
        Err(_) => HostCheck::off(),
    };
    let server = Arc::new(Shared {
        pages,
        limits,
        hosts,
        budget: Budget::new(limits.max_unread),
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(BLOCKING_THREADS)
        .thread_name("rtscope-http-io")
        .build()?;
    let result = rt.block_on(async {
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let acceptor = tokio::spawn(accept_loop(listener, server));
        let mut every = tokio::time::interval(TICK);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while !done.load(Ordering::Relaxed) {
            tick();
            every.tick().await;
        }
        acceptor.abort();
        Ok(())
    });
    // Connections still open are dropped; a page still rendering on a
    // blocking thread is not waited for long.
    rt.shutdown_timeout(Duration::from_secs(1));
    result
}

/// Intervals the server keeps for `/api/history` (10 minutes at the default
/// one snapshot a second).
pub const HISTORY_POINTS: usize = 600;

/// The last intervals of a live run, per series: `(label, max, p99)` at each
/// snapshot's elapsed time. Bounded to [`HISTORY_POINTS`].
#[derive(Debug, Default, Serialize)]
pub struct History {
    points: VecDeque<HistoryPoint>,
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

/// What the live server knows of its run: the latest snapshot, the last
/// intervals, the window of the `rtscope_window_*` gauges.
#[derive(Debug, Default)]
pub struct Live {
    pub latest: Option<Arc<Snapshot>>,
    pub history: History,
    pub window: Window,
    /// What `/metrics` shows before the first snapshot: the run and its
    /// series with every counter at 0.
    pub starting: Option<Arc<Snapshot>>,
}

impl Live {
    /// A server's view of a run that has not sent a snapshot yet.
    pub fn starting(run: Arc<super::RunInfo>, labels: &[String]) -> Self {
        let series = labels
            .iter()
            .map(|l| super::SeriesSnapshot {
                label: l.clone(),
                count: 0,
                min_ns: None,
                mean_ns: None,
                p50_ns: None,
                p99_ns: None,
                p999_ns: None,
                max_ns: None,
                act_ns: None,
                overruns: 0,
                dropped: 0,
                interval: Default::default(),
                late: 0,
                negative: 0,
                corrected: false,
                buckets: vec![0; super::PROM_BUCKETS_NS.len() + 1],
                sum_ns: 0.0,
            })
            .collect();
        Live {
            starting: Some(Arc::new(Snapshot {
                seq: 0,
                state: "starting",
                elapsed_s: 0.0,
                interval_s: 0.0,
                run,
                series,
                loads: vec![],
                warnings: vec![],
                snapshots_dropped: 0,
            })),
            ..Live::default()
        }
    }

    /// Takes in a snapshot of the feed.
    pub fn push(&mut self, s: Arc<Snapshot>) {
        self.history.push(&s);
        self.window.push(&s);
        self.latest = Some(s);
    }
}

/// The live run's server: keeps the latest snapshot of its feed (and the
/// history of the last intervals, and the window) and serves them until the
/// run ends. A problem as a line for stderr.
pub fn serve_live(
    listener: TcpListener,
    sub: Subscription,
    done: Arc<AtomicBool>,
    first: Live,
    allow_hosts: &[String],
) -> Option<String> {
    let live: Arc<Mutex<Live>> = Arc::new(Mutex::new(first));
    let pages = Pages::inline({
        let live = live.clone();
        move |req| live_page(req, &live.lock().unwrap_or_else(PoisonError::into_inner))
    })
    .allow_hosts(allow_hosts);
    let mut closed = false;
    serve(listener, &done, pages, LIMITS, || {
        while !closed {
            match sub.rx.try_recv() {
                Ok(Feed::Snapshot(s)) => {
                    live.lock().unwrap_or_else(PoisonError::into_inner).push(s)
                }
                Ok(Feed::Samples(_)) => {}
                Err(std::sync::mpsc::TryRecvError::Empty) => break,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => closed = true,
            }
        }
    })
    .err()
    .map(|e| format!("--listen: the server could not start: {e}"))
}

/// The pages of a live run.
pub fn live_page(req: &Request, live: &Live) -> Response {
    let snap = live.latest.as_deref();
    match req.path.as_str() {
        "/" | "/index.html" => Response::new(200, "text/html; charset=utf-8", LIVE_PAGE),
        "/metrics" => {
            let f = Format::negotiate(req.accept.as_deref());
            let shown = snap.or(live.starting.as_deref());
            Response::new(200, f.content_type(), metrics(shown, &live.window, f))
                .with("Vary", "Accept")
        }
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
            serde_json::to_vec(&live.history).unwrap_or_default(),
        ),
        _ => Response::text(
            404,
            "not found: try /, /metrics, /api/snapshot or /api/history\n",
        ),
    }
}

/// The live page (no request goes anywhere but this server).
const LIVE_PAGE: &str = include_str!("live.html");

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::rc::Rc;
    use std::time::Instant;

    /// A connection of the tests: its id, whether it ended, and the log of
    /// closed ids.
    struct Fake {
        id: usize,
        finished: Cell<bool>,
        closed: Rc<std::cell::RefCell<Vec<usize>>>,
    }

    impl Conn for Rc<Fake> {
        fn is_finished(&self) -> bool {
            self.finished.get()
        }
        fn close(&self) {
            self.closed.borrow_mut().push(self.id);
        }
    }

    #[test]
    fn the_oldest_connection_makes_room_and_ended_ones_are_forgotten() {
        let log = Rc::new(std::cell::RefCell::new(vec![]));
        let fake = |id| {
            Rc::new(Fake {
                id,
                finished: Cell::new(false),
                closed: log.clone(),
            })
        };
        let mut c = Conns::new(3);
        let conns: Vec<_> = (0..6).map(fake).collect();
        for x in &conns[..3] {
            assert_eq!(c.make_room(), 0);
            c.add(x.clone());
        }
        // Full: the fourth closes the first.
        assert_eq!(c.make_room(), 1);
        c.add(conns[3].clone());
        assert_eq!(*log.borrow(), vec![0]);
        // One that ended leaves room without closing anything.
        conns[2].finished.set(true);
        assert_eq!(c.make_room(), 0);
        c.add(conns[4].clone());
        assert_eq!(c.open.len(), 3);
        assert_eq!(c.make_room(), 1);
        assert_eq!(*log.borrow(), vec![0, 1]);
        c.add(conns[5].clone());
        // Out of descriptors: the oldest open one (3) goes.
        assert!(c.close_oldest());
        assert_eq!(*log.borrow(), vec![0, 1, 3]);
        assert_eq!(c.open.len(), 2);
        for x in &conns {
            x.finished.set(true);
        }
        assert!(!c.close_oldest());
        assert!(c.open.is_empty());
        // A bound of 0 is taken as 1.
        let mut one = Conns::new(0);
        assert_eq!(one.make_room(), 0);
        one.add(fake(9));
        assert_eq!(one.make_room(), 1);
    }

    #[test]
    fn ended_connections_take_no_room() {
        let log = Rc::new(std::cell::RefCell::new(vec![]));
        let conns: Vec<_> = (0..5)
            .map(|id| {
                Rc::new(Fake {
                    id,
                    finished: Cell::new(false),
                    closed: log.clone(),
                })
            })
            .collect();
        let mut c = Conns::new(4);
        for x in &conns[..4] {
            c.make_room();
            c.add(x.clone());
        }
        // 2 and 3 were answered and ended: the fifth closes nothing.
        conns[2].finished.set(true);
        conns[3].finished.set(true);
        assert_eq!(c.make_room(), 0);
        c.add(conns[4].clone());
        assert!(log.borrow().is_empty());
        assert_eq!(c.open.len(), 3);
    }

    #[test]
    fn running_out_of_descriptors_is_told_apart() {
        for e in [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM] {
            assert!(out_of_sockets(&std::io::Error::from_raw_os_error(e)));
        }
        for e in [libc::ECONNABORTED, libc::EINTR, libc::EPERM] {
            assert!(!out_of_sockets(&std::io::Error::from_raw_os_error(e)));
        }
        assert!(!out_of_sockets(&std::io::Error::other("x")));
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn echo() -> Pages {
        Pages::inline(|r: &Request| {
            Response::text(
                200,
                format!("{} {} {:?}", r.method, r.path, r.accept.as_deref()),
            )
        })
        .allow_hosts(&["h".into()])
    }

    /// A server of `pages` on loopback, for [`answer`].
    fn on_loopback(pages: Pages) -> Shared {
        Shared {
            hosts: HostCheck::for_bind(&"127.0.0.1:1".parse().unwrap(), &pages.hosts),
            pages,
            limits: LIMITS,
            budget: Budget::new(LIMITS.max_unread),
        }
    }

    #[test]
    fn requests_answers_and_methods() {
        let req = hyper::Request::builder()
            .method("GET")
            .uri("/metrics?x=1")
            .header("Accept", "text/plain")
            .header("Accept", "application/openmetrics-text")
            .body(())
            .unwrap();
        assert_eq!(
            request_of(&req),
            Request {
                method: "GET".into(),
                path: "/metrics".into(),
                accept: Some("text/plain, application/openmetrics-text".into()),
                gone: Gone::default(),
            }
        );
        let r = block_on(answer(&on_loopback(echo()), &req));
        assert_eq!(r.status(), 200);
        let h = r.headers();
        assert_eq!(h["content-type"], "text/plain; charset=utf-8");
        assert_eq!(h["cache-control"], "no-store");
        assert_eq!(h["x-content-type-options"], "nosniff");
        assert_eq!(h["connection"], "close");
        for (m, code) in [("HEAD", 200), ("POST", 405), ("PUT", 405), ("DELETE", 405)] {
            let req = hyper::Request::builder()
                .method(m)
                .uri("/")
                .body(())
                .unwrap();
            let r = block_on(answer(&on_loopback(echo()), &req));
            assert_eq!(r.status(), code, "{m}");
            if code == 405 {
                assert_eq!(r.headers()["allow"], "GET, HEAD");
            }
        }
        // Blocking pages give the same answer (from a blocking thread).
        let blocking = Pages::blocking(|r: &Request| Response::text(201, r.path.clone()));
        let req = hyper::Request::builder().uri("/a").body(()).unwrap();
        assert_eq!(block_on(answer(&on_loopback(blocking), &req)).status(), 201);
        let budget = Budget::new(LIMITS.max_unread);
        let r = to_hyper(Response::text(42, "x").with("Vary", "Accept"), &budget);
        assert_eq!(r.status(), 500);
        assert_eq!(r.headers()["vary"], "Accept");
    }

    fn snapshot(seq: u64) -> Snapshot {
        use crate::live::{IntervalFigures, RunInfo, SeriesSnapshot};
        let mut x = SeriesSnapshot {
            label: "thread 0".into(),
            count: 3,
            min_ns: Some(1000),
            mean_ns: Some(2000.0),
            p50_ns: Some(2000),
            p99_ns: Some(3000),
            p999_ns: Some(3000),
            max_ns: Some(3000),
            overruns: 0,
            dropped: 0,
            act_ns: None,
            late: 0,
            negative: 0,
            corrected: false,
            interval: IntervalFigures {
                count: 3,
                max_ns: Some(3000),
                p99_ns: Some(3000),
                buckets: vec![(rtscope_core::record::blocks::bucket_of(3000), 3)],
                ..Default::default()
            },
            buckets: vec![0; crate::live::PROM_BUCKETS_NS.len() + 1],
            sum_ns: 6000.0,
        };
        x.buckets[1] = 3;
        Snapshot {
            seq,
            state: "running",
            elapsed_s: seq as f64,
            interval_s: 1.0,
            run: Arc::new(RunInfo {
                experiment: "cyclic".into(),
                host: "h".into(),
                kernel: "k".into(),
                preemption: "p".into(),
                plan: "plan".into(),
                started_at: "t".into(),
            }),
            series: vec![x],
            loads: vec![],
            warnings: vec![],
            snapshots_dropped: 0,
        }
    }

    #[test]
    fn live_pages() {
        let mut live = Live::starting(snapshot(1).run.clone(), &["thread 0".into(), "all".into()]);
        let page = |live: &Live, path: &str, accept: Option<&str>| {
            live_page(
                &Request {
                    accept: accept.map(str::to_string),
                    ..Request::get(path)
                },
                live,
            )
        };
        // Before the first snapshot.
        assert_eq!(page(&live, "/api/snapshot", None).status, 503);
        // `/metrics` names the run and its series, every counter at 0, from
        // the first scrape (not an empty answer that looks like a dead run).
        let m = page(&live, "/metrics", None);
        assert_eq!(m.status, 200);
        let text = String::from_utf8(m.body).unwrap();
        assert!(
            text.contains("\nrtscope_run_info{experiment=\"cyclic\",host=\"h\",kernel=\"k\",preemption=\"p\",plan=\"plan\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("\nrtscope_samples_total{series=\"thread 0\"} 0\n"),
            "{text}"
        );
        assert!(
            text.contains("\nrtscope_overruns_total{series=\"thread 0\"} 0\n"),
            "{text}"
        );
        assert!(
            text.contains("\nrtscope_latency_seconds_count{series=\"thread 0\"} 0\n"),
            "{text}"
        );
        assert!(!text.contains("series=\"all\""), "{text}");
        assert!(
            !text.contains("rtscope_latency_max_seconds{"),
            "no max yet: {text}"
        );
        let m = page(&live, "/metrics", Some("application/openmetrics-text"));
        let om = String::from_utf8(m.body).unwrap();
        assert!(
            om.contains("\nrtscope_run_info{experiment=\"cyclic\""),
            "{om}"
        );
        assert!(
            om.contains("\nrtscope_samples_total{series=\"thread 0\"} 0\n"),
            "{om}"
        );
        assert!(om.ends_with("# EOF\n"));
        live.push(Arc::new(snapshot(1)));
        live.push(Arc::new(snapshot(2)));
        assert_eq!(live.latest.as_ref().unwrap().seq, 2);
        assert_eq!(live.window.figures(0).count, 6);
        for index in ["/", "/index.html"] {
            let r = page(&live, index, None);
            assert_eq!(r.status, 200);
            assert_eq!(r.content_type, "text/html; charset=utf-8");
            assert_eq!(r.body, LIVE_PAGE.as_bytes());
        }
        let r = page(&live, "/metrics", None);
        assert_eq!(r.content_type, crate::live::metrics::TEXT);
        assert_eq!(r.headers, vec![("Vary", "Accept")]);
        let text = String::from_utf8(r.body).unwrap();
        assert!(
            text.contains("rtscope_window_latency_max_seconds{series=\"thread 0\"} 0.000003\n"),
            "{text}"
        );
        let r = page(&live, "/metrics", Some("application/openmetrics-text"));
        assert_eq!(r.content_type, crate::live::metrics::OPENMETRICS);
        assert!(String::from_utf8(r.body).unwrap().ends_with("# EOF\n"));
        let r = page(&live, "/api/snapshot", None);
        assert_eq!((r.status, r.content_type), (200, "application/json"));
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["seq"], 2);
        let r = page(&live, "/api/history", None);
        assert_eq!(r.status, 200);
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["points"].as_array().unwrap().len(), 2);
        assert_eq!(v["points"][1]["series"][0][1], 3000);
        assert_eq!(page(&live, "/nope", None).status, 404);
    }

    #[test]
    fn serve_live_takes_in_its_feed_until_done() {
        let mut hub = crate::live::Hub::new(1, snapshot(1).run.as_ref().clone(), vec![]);
        let sub = hub.subscribe_windowed(Duration::ZERO);
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let first = Live::starting(snapshot(1).run.clone(), &["thread 0".into()]);
        let t = std::thread::spawn(move || serve_live(l, sub, d, first, &[]));
        let get = |path: &str| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s.write_all(format!("GET {path} HTTP/1.1\r\n\r\n").as_bytes())
                .unwrap();
            let mut b = String::new();
            let _ = s.read_to_string(&mut b);
            b
        };
        assert!(get("/api/snapshot").starts_with("HTTP/1.1 503"));
        for v in [1000, 2000] {
            hub.record(
                0,
                &rtscope_core::sample::Sample {
                    seq: 1,
                    t_ns: 0,
                    latency_ns: v,
                    overruns: 0,
                    cpu: 0,
                },
            );
        }
        hub.tick(|| vec![snapshot(1).series[0].clone()]);
        let t0 = Instant::now();
        let mut r = get("/api/snapshot");
        while !r.starts_with("HTTP/1.1 200") && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
            r = get("/api/snapshot");
        }
        assert!(r.contains("\"seq\":1"), "{r}");
        let m = get("/metrics");
        assert!(
            m.contains("rtscope_window_latency_max_seconds{series=\"thread 0\"} 0.000002\n"),
            "{m}"
        );
        // The feed closes (the run ends), then done: the thread ends, with
        // nothing to report.
        drop(hub);
        std::thread::sleep(Duration::from_millis(100));
        done.store(true, Ordering::Relaxed);
        assert_eq!(t.join().unwrap(), None);
    }

    /// A server on a free port, with `limits`, until the guard drops.
    struct Server {
        addr: SocketAddr,
        done: Arc<AtomicBool>,
        thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
        ticks: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Server {
        fn start(limits: Limits) -> Self {
            Server::start_with(limits, echo())
        }

        fn start_with(limits: Limits, pages: Pages) -> Self {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let done = Arc::new(AtomicBool::new(false));
            let ticks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let (d, t) = (done.clone(), ticks.clone());
            let thread = std::thread::spawn(move || {
                serve(l, &d, pages, limits, || {
                    t.fetch_add(1, Ordering::Relaxed);
                })
            });
            Server {
                addr,
                done,
                thread: Some(thread),
                ticks,
            }
        }

        fn get(&self, request: &[u8]) -> String {
            let mut s = TcpStream::connect(self.addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let _ = s.write_all(request);
            let mut buf = vec![];
            let _ = s.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            self.done.store(true, Ordering::Relaxed);
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }

    fn small() -> Limits {
        Limits {
            max_connections: 4,
            head_timeout: Duration::from_millis(300),
            connection_timeout: Duration::from_secs(2),
            max_head: 8192,
            max_headers: 8,
            max_unread: 1 << 20,
        }
    }

    #[test]
    fn requests_for_other_hosts_are_refused() {
        let s = Server::start(small());
        for ok in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:80",
            "[::1]:8080",
            "h",
        ] {
            let r = s.get(format!("GET /x HTTP/1.1\r\nHost: {ok}\r\n\r\n").as_bytes());
            assert!(r.starts_with("HTTP/1.1 200"), "{ok}: {r}");
        }
        // What a DNS-rebinding page's requests carry: the attacker's name.
        for bad in [
            "evil.example",
            "evil.example:8080",
            "10.0.0.1",
            "h.evil.example",
        ] {
            let r = s.get(format!("GET /x HTTP/1.1\r\nHost: {bad}\r\n\r\n").as_bytes());
            assert!(r.starts_with("HTTP/1.1 421"), "{bad}: {r}");
            assert!(!r.contains("GET /x"), "{bad}: answered: {r}");
        }
        let r = s.get(b"GET http://evil.example/x HTTP/1.1\r\nHost: localhost\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 421"), "{r}");
        let r = s.get(b"GET /x HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n");
        assert!(
            r.starts_with("HTTP/1.1 421") || r.starts_with("HTTP/1.1 400"),
            "{r}"
        );
    }

    #[test]
    fn unread_pages_are_bounded_in_all() {
        let page = vec![b'x'; 24 << 20];
        let s = Server::start_with(
            Limits {
                max_unread: 40 << 20,
                connection_timeout: Duration::from_secs(30),
                ..small()
            },
            Pages::inline(move |_| Response::new(200, "text/plain", page.clone())),
        );
        // A client that asks and never reads: its page stays (mostly) unsent.
        let mut idle = TcpStream::connect(s.addr).unwrap();
        idle.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let r = s.get(b"GET / HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 503"), "{}", &r[..r.len().min(200)]);
        assert!(
            r.contains("\r\nRetry-After: 1\r\n"),
            "{}",
            &r[..r.len().min(200)]
        );
        // Once it has gone, its part is free again.
        drop(idle);
        std::thread::sleep(Duration::from_millis(300));
        let r = s.get(b"GET / HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200"), "{}", &r[..r.len().min(200)]);
        assert_eq!(r.len() - r.find("\r\n\r\n").unwrap() - 4, 24 << 20);
    }

    #[test]
    fn a_blocking_page_is_not_rendered_for_a_client_that_has_gone() {
        let rendered = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let n = rendered.clone();
        let s = Server::start_with(
            Limits {
                connection_timeout: Duration::from_secs(30),
                ..LIMITS
            },
            Pages::blocking(move |_| {
                n.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(600));
                Response::text(200, "slow\n")
            }),
        );
        // Pages take every blocking thread; ten more clients ask and go.
        let busy: Vec<TcpStream> = (0..BLOCKING_THREADS)
            .map(|_| {
                let mut c = TcpStream::connect(s.addr).unwrap();
                c.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
                c
            })
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        for _ in 0..10 {
            let mut c = TcpStream::connect(s.addr).unwrap();
            c.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
            drop(c);
        }
        for mut c in busy {
            let mut b = String::new();
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let _ = c.read_to_string(&mut b);
            assert!(b.ends_with("slow\n"), "{b}");
        }
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(
            rendered.load(Ordering::SeqCst),
            BLOCKING_THREADS,
            "pages rendered for gone clients"
        );
        // One that stays is answered.
        assert!(s.get(b"GET / HTTP/1.1\r\n\r\n").ends_with("slow\n"));
    }

    #[test]
    fn a_server_answers_heads_and_refuses_what_is_too_large() {
        let s = Server::start(small());
        let r = s.get(b"GET /x?q HTTP/1.1\r\nHost: h\r\nAccept: a/b\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        // Title-cased as before.
        assert!(
            r.contains("\r\nContent-Type: text/plain; charset=utf-8\r\n"),
            "{r}"
        );
        assert!(r.contains("\r\nConnection: close\r\n"), "{r}");
        assert!(r.ends_with("\r\n\r\nGET /x Some(\"a/b\")"), "{r}");
        let r = s.get(b"HEAD /x HTTP/1.1\r\nHost: h\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        assert!(r.contains("\r\nContent-Length: 12\r\n"), "{r}");
        assert!(r.ends_with("\r\n\r\n"), "no body: {r}");
        let r = s.get(b"garbage\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 400"), "{r}");
        let big = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(9000));
        assert!(s.get(big.as_bytes()).starts_with("HTTP/1.1 431"));
        let many: String = (0..9).map(|i| format!("X-{i}: v\r\n")).collect();
        let r = s.get(format!("GET / HTTP/1.1\r\n{many}\r\n").as_bytes());
        assert!(r.starts_with("HTTP/1.1 431"), "{r}");
        // A body is not read: the answer comes all the same.
        let r = s.get(b"POST / HTTP/1.1\r\nContent-Length: 100000\r\n\r\nabc");
        assert!(r.starts_with("HTTP/1.1 405"), "{r}");
        assert!(s.ticks.load(Ordering::Relaxed) > 0);
    }

    /// Whether `s` was closed by the server (EOF or a reset) within `wait`.
    fn closed_within(mut s: &TcpStream, wait: Duration) -> bool {
        s.set_read_timeout(Some(wait)).unwrap();
        let mut b = [0u8; 256];
        loop {
            match s.read(&mut b) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e) => {
                    return !matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    )
                }
            }
        }
    }

    #[test]
    fn the_server_takes_heads_up_to_16_kib() {
        let s = Server::start(LIMITS);
        let head = |n: usize| format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(n));
        assert!(s
            .get(head(12 * 1024).as_bytes())
            .starts_with("HTTP/1.1 200"));
        assert!(s
            .get(head(20 * 1024).as_bytes())
            .starts_with("HTTP/1.1 431"));
        let fields: String = (0..LIMITS.max_headers - 1)
            .map(|i| format!("X-{i}: v\r\n"))
            .collect();
        let r = s.get(format!("GET / HTTP/1.1\r\n{fields}\r\n").as_bytes());
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    }

    #[test]
    fn idle_clients_beyond_the_bound_close_the_oldest() {
        // A head time-out far away: only the bound closes connections here.
        let s = Server::start(Limits {
            head_timeout: Duration::from_secs(30),
            connection_timeout: Duration::from_secs(30),
            ..small()
        });
        let idle: Vec<TcpStream> = (0..10)
            .map(|_| TcpStream::connect(s.addr).unwrap())
            .collect();
        let t0 = Instant::now();
        let r = s.get(b"GET /a HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        assert!(t0.elapsed() < Duration::from_secs(1));
        // Accepted in order: 0..=6 were closed to make room, 7, 8, 9 are
        // still open (with the request, 4).
        assert!(closed_within(&idle[0], Duration::from_secs(1)));
        assert!(closed_within(&idle[6], Duration::from_secs(1)));
        assert!(!closed_within(&idle[9], Duration::from_millis(300)));
        assert!(!closed_within(&idle[7], Duration::from_millis(50)));
    }

    #[test]
    fn answered_connections_leave_room_for_idle_ones() {
        let s = Server::start(Limits {
            head_timeout: Duration::from_secs(30),
            connection_timeout: Duration::from_secs(30),
            ..small()
        });
        for _ in 0..4 {
            assert!(s
                .get(b"GET /a HTTP/1.1\r\n\r\n")
                .starts_with("HTTP/1.1 200"));
        }
        let idle = [
            TcpStream::connect(s.addr).unwrap(),
            TcpStream::connect(s.addr).unwrap(),
        ];
        // Three more answered requests: with the bound of 4, the idle two
        // still have room (the answered ones ended and are forgotten).
        for _ in 0..3 {
            assert!(s
                .get(b"GET /b HTTP/1.1\r\n\r\n")
                .starts_with("HTTP/1.1 200"));
        }
        assert!(!closed_within(&idle[0], Duration::from_millis(300)));
        assert!(!closed_within(&idle[1], Duration::from_millis(50)));
    }

    #[test]
    fn a_slow_head_is_cut_off_at_the_head_timeout() {
        let s = Server::start(Limits {
            head_timeout: Duration::from_millis(400),
            connection_timeout: Duration::from_secs(30),
            ..small()
        });
        let mut slow = TcpStream::connect(s.addr).unwrap();
        let t0 = Instant::now();
        // A byte every 50 ms, for longer than the time-out.
        for c in b"GET /slow HTTP/1.1\r\nHost: xxxxxxxxxxxxxxxx" {
            if slow.write_all(&[*c]).is_err() || t0.elapsed() > Duration::from_secs(2) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(closed_within(&slow, Duration::from_secs(3)));
        let took = t0.elapsed();
        assert!(took >= Duration::from_millis(400), "{took:?}");
        // Meanwhile, and after, others are answered.
        assert!(s
            .get(b"GET /b HTTP/1.1\r\n\r\n")
            .starts_with("HTTP/1.1 200"));
        // A connection that sends nothing is closed at the time-out too.
        let idle = TcpStream::connect(s.addr).unwrap();
        assert!(!closed_within(&idle, Duration::from_millis(100)));
        assert!(closed_within(&idle, Duration::from_secs(3)));
    }

    #[test]
    fn a_connection_is_cut_off_at_the_connection_timeout() {
        // The head time-out is longer than the connection's: the connection
        // time-out closes a client that sends nothing.
        let s = Server::start(Limits {
            head_timeout: Duration::from_secs(30),
            connection_timeout: Duration::from_millis(300),
            ..small()
        });
        let idle = TcpStream::connect(s.addr).unwrap();
        let t0 = Instant::now();
        assert!(closed_within(&idle, Duration::from_secs(3)));
        assert!(t0.elapsed() >= Duration::from_millis(250));
    }

    #[test]
    fn the_server_ends_when_done_is_raised() {
        let mut s = Server::start(small());
        let _idle = TcpStream::connect(s.addr).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        s.done.store(true, Ordering::Relaxed);
        let t0 = Instant::now();
        let r = s.thread.take().unwrap().join().unwrap();
        assert!(r.is_ok());
        assert!(t0.elapsed() < Duration::from_secs(2));
        // The port is closed with it.
        assert!(TcpStream::connect(s.addr).is_err());
    }
}
