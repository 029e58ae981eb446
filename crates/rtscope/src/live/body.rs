//! The bodies of the HTTP server's answers, sent with backpressure: hyper
//! asks for the next chunk only when the last one has gone to the socket, so
//! what a client that does not read holds in the server is one chunk
//! ([`CHUNK`]) beyond what the kernel's socket buffer took.
//!
//! - A page (bytes in memory) is handed out in chunks; while it is not sent
//!   whole it counts against the server's [`Budget`] of unread answers, and a
//!   page that would go beyond it is not sent (`503`, the client may retry).
//! - A file (`rtscope serve`'s `/raw/NAME`) is read a chunk at a time as the
//!   client takes it, never whole: at most [`CHUNK`] of it is in memory per
//!   connection, whatever its size. It is sent as long as it was when opened
//!   (its `Content-Length`); one that shrinks meanwhile ends the connection.

use std::io::Read;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};

/// What one poll hands to hyper.
pub const CHUNK: usize = 32 << 10;

/// Bytes of pages in memory that clients have not read yet, all connections
/// together: a page is sent only while the total stays within the bound.
#[derive(Debug, Clone)]
pub struct Budget {
    held: Arc<AtomicUsize>,
    limit: usize,
}

impl Budget {
    pub fn new(limit: usize) -> Self {
        Budget {
            held: Arc::default(),
            limit,
        }
    }

    /// Takes `n` bytes of the budget, or `None` when that would go beyond it.
    /// Small answers (a chunk or less) always fit: hyper buffers that much
    /// per connection anyway.
    pub fn take(&self, n: usize) -> Option<Held> {
        if n <= CHUNK {
            return Some(Held { budget: None, n: 0 });
        }
        let mut cur = self.held.load(Ordering::Relaxed);
        loop {
            if cur + n > self.limit {
                return None;
            }
            match self
                .held
                .compare_exchange_weak(cur, cur + n, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    return Some(Held {
                        budget: Some(self.held.clone()),
                        n,
                    })
                }
                Err(now) => cur = now,
            }
        }
    }

    /// Bytes held now.
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

/// A part of the budget, given back when dropped.
#[derive(Debug)]
pub struct Held {
    budget: Option<Arc<AtomicUsize>>,
    n: usize,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(b) = &self.budget {
            b.fetch_sub(self.n, Ordering::AcqRel);
        }
    }
}

/// An answer's body.
pub enum Body {
    /// Bytes in memory, from `pos` on; their part of the budget.
    Bytes {
        data: Bytes,
        pos: usize,
        _held: Held,
    },
    /// A file, `left` bytes more of it.
    File { file: Arc<std::fs::File>, left: u64 },
}

impl Body {
    /// A body of bytes (holding `held` until sent or dropped).
    pub fn bytes(data: impl Into<Bytes>, held: Held) -> Self {
        Body::Bytes {
            data: data.into(),
            pos: 0,
            _held: held,
        }
    }

    /// An empty body.
    #[cfg(test)]
    pub fn empty() -> Self {
        Body::bytes(Bytes::new(), Held { budget: None, n: 0 })
    }
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.get_mut() {
            Body::Bytes { data, pos, .. } => {
                if *pos >= data.len() {
                    return Poll::Ready(None);
                }
                let end = (*pos + CHUNK).min(data.len());
                // A copy: the chunk hyper queues does not keep the whole page.
                let chunk = Bytes::copy_from_slice(&data[*pos..end]);
                *pos = end;
                if *pos == data.len() {
                    // Sent: the page's memory and its budget go now.
                    *data = Bytes::new();
                    *pos = 0;
                }
                Poll::Ready(Some(Ok(Frame::data(chunk))))
            }
            Body::File { file, left } => {
                if *left == 0 {
                    return Poll::Ready(None);
                }
                let want = (*left).min(CHUNK as u64) as usize;
                let mut buf = vec![0u8; want];
                // A regular file's read returns at once (from the page cache
                // or the disk): it is done here, on the server's thread.
                match (&**file).read(&mut buf) {
                    Ok(0) => Poll::Ready(Some(Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the file shrank while it was sent",
                    )))),
                    Ok(n) => {
                        buf.truncate(n);
                        *left -= n as u64;
                        Poll::Ready(Some(Ok(Frame::data(Bytes::from(buf)))))
                    }
                    Err(e) => Poll::Ready(Some(Err(e))),
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Bytes { data, pos, .. } => *pos >= data.len(),
            Body::File { left, .. } => *left == 0,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Bytes { data, pos, .. } => {
                SizeHint::with_exact(data.len().saturating_sub(*pos) as u64)
            }
            Body::File { left, .. } => SizeHint::with_exact(*left),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use hyper::body::Body as _;

    fn collect(b: Body) -> Vec<u8> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async { b.collect().await.map(|c| c.to_bytes().to_vec()) })
            .unwrap()
    }

    #[test]
    fn the_budget_bounds_pages_in_memory() {
        let b = Budget::new(100_000);
        let small = b.take(100).unwrap();
        assert_eq!(b.held(), 0, "a chunk or less is not counted");
        let x = b.take(60_000).unwrap();
        assert!(b.take(60_000).is_none());
        assert_eq!(b.held(), 60_000);
        let body = Body::bytes(vec![7u8; 60_000], x);
        assert_eq!(collect(body), vec![7u8; 60_000]);
        assert_eq!(b.held(), 0, "given back once sent");
        let y = b.take(90_000).unwrap();
        drop(Body::bytes(vec![1u8; 90_000], y));
        assert_eq!(b.held(), 0, "given back when dropped unsent");
        drop(small);
    }

    #[test]
    fn a_file_is_sent_in_chunks_as_long_as_it_was() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        std::io::Write::write_all(&mut f, &data).unwrap();
        let body = Body::File {
            file: Arc::new(f.reopen().unwrap()),
            left: 100_000,
        };
        assert_eq!(body.size_hint().exact(), Some(100_000));
        assert_eq!(collect(body), data);
        // Only the length it had: bytes added later are not sent.
        let body = Body::File {
            file: Arc::new(f.reopen().unwrap()),
            left: 10,
        };
        assert_eq!(collect(body), data[..10]);
        // One that shrank: an error, not a short answer.
        let body = Body::File {
            file: Arc::new(f.reopen().unwrap()),
            left: 200_000,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(rt.block_on(body.collect()).is_err());
        assert_eq!(collect(Body::empty()), b"");
    }
}
