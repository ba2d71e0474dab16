//! The HTTP listener: every connection a client opens is bounded.
//!
//! - At most `max_connections` are open at once; one more is closed as soon as it is accepted
//!   (and logged, at most every 10 s, with how many were refused), so a flood of connections
//!   cannot take the process's file descriptors from the clients it serves.
//! - A request head must arrive within `header_timeout`, counted from when the server starts
//!   waiting for it: on a new connection, and after each response on a kept-alive one (so it
//!   is also how long an idle keep-alive connection stays open). hyper enforces it.
//! - A connection on which no byte moves either way for `stall_timeout` is closed: a body
//!   trickling in, or a client that stops reading its answer ([`Stalled`]).
//! - The handler's own time limit (`request_timeout`) is a layer of the router
//!   ([`crate::router`]); it answers 408.
//!
//! Shutdown stops accepting, lets in-flight requests finish and closes idle connections
//! (hyper's graceful shutdown); the caller bounds how long that may take.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tower::ServiceExt;

/// What one client may hold of the server: connections and their time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections open at once; more are closed on accept.
    pub max_connections: usize,
    /// Time to receive a request head (also the keep-alive idle limit).
    pub header_timeout: Duration,
    /// Time without a byte moving either way before a connection is closed.
    pub stall_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_connections: 10_000,
            header_timeout: Duration::from_secs(15),
            stall_timeout: Duration::from_secs(30),
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting and waits for
/// the open connections to finish their requests (the caller decides how long to wait).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    // Each open connection holds one permit; the semaphore is the connection cap.
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let refused = RefusalLog::default();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            refused.note(limits.max_connections);
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let io = TokioIo::new(Stalled::new(stream, limits.stall_timeout));
        let app = app.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            app.clone().oneshot(req.map(axum::body::Body::new))
        });
        let conn = graceful.watch(http.serve_connection(io, service));
        tokio::spawn(async move {
            metrics::gauge!("http_open_connections").increment(1.0);
            if let Err(e) = conn.await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
            metrics::gauge!("http_open_connections").decrement(1.0);
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// An accept that failed: per-connection errors (the peer reset before we accepted) are
/// skipped; running out of file descriptors is logged and waited out, as axum does.
async fn accept_failed(e: io::Error) {
    use io::ErrorKind::*;
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted
    ) {
        return;
    }
    tracing::error!(error = %e, "accepting a connection failed; pausing accepts for 1s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// Counts connections refused at the cap and logs them at most every 10 s, so a flood is
/// visible without flooding the log.
#[derive(Debug, Default)]
struct RefusalLog {
    since_last: AtomicU64,
    last_logged: std::sync::Mutex<Option<Instant>>,
}

impl RefusalLog {
    fn note(&self, cap: usize) {
        metrics::counter!("http_connections_refused_total").increment(1);
        let n = self.since_last.fetch_add(1, Ordering::Relaxed) + 1;
        let mut last = self
            .last_logged
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        if last.is_none_or(|t| now.duration_since(t) >= Duration::from_secs(10)) {
            *last = Some(now);
            self.since_last.store(0, Ordering::Relaxed);
            tracing::warn!(
                max_connections = cap,
                refused = n,
                "connection cap reached: closing new connections until some end"
            );
        }
    }
}

/// A stream that fails with `TimedOut` once no byte has moved either way for `limit` while
/// someone waits on it. hyper then closes the connection.
#[derive(Debug)]
pub struct Stalled<S> {
    inner: S,
    limit: Duration,
    last_progress: Instant,
    /// Armed only while a read or write is pending; re-armed from `last_progress`.
    timer: Pin<Box<Sleep>>,
}

impl<S> Stalled<S> {
    pub fn new(inner: S, limit: Duration) -> Self {
        let now = Instant::now();
        Stalled {
            inner,
            limit,
            last_progress: now,
            timer: Box::pin(tokio::time::sleep_until(now + limit)),
        }
    }

    /// Called when the inner stream is not ready: an error once the stall limit has passed.
    fn check_stall(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let deadline = self.last_progress + self.limit;
        if self.timer.deadline() != deadline {
            self.timer.as_mut().reset(deadline);
        }
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(io::Error::new(
                io::ErrorKind::TimedOut,
                "no data moved within stall_timeout",
            )),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Stalled<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(res) => {
                if buf.filled().len() > before {
                    self.last_progress = Instant::now();
                }
                Poll::Ready(res)
            }
            Poll::Pending => self.check_stall(cx).map(Err),
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Stalled<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, data) {
            Poll::Ready(res) => {
                if matches!(res, Ok(n) if n > 0) {
                    self.last_progress = Instant::now();
                }
                Poll::Ready(res)
            }
            Poll::Pending => self.check_stall(cx).map(Err),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write_vectored(cx, bufs) {
            Poll::Ready(res) => {
                if matches!(res, Ok(n) if n > 0) {
                    self.last_progress = Instant::now();
                }
                Poll::Ready(res)
            }
            Poll::Pending => self.check_stall(cx).map(Err),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.inner).poll_flush(cx) {
            Poll::Ready(res) => Poll::Ready(res),
            Poll::Pending => self.check_stall(cx).map(Err),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
