//! The HTTP listener: every connection a client opens is bounded.
//!
//! - At most `max_connections` are open at once, and `max_connections_per_ip` from one
//!   address; one more is closed as soon as it is accepted (and logged, at most every 10 s,
//!   with how many were refused), so a flood of connections cannot take the process's file
//!   descriptors from the clients it serves.
//! - A request head must arrive within `header_timeout`, counted from when the server starts
//!   waiting for it: on a new connection, and after each request on a kept-alive one (so it
//!   is also how long an idle keep-alive connection stays open). [`Guarded`] enforces it on
//!   the socket (hyper's own head timer is set too).
//! - A connection whose client stops reading its answer is closed once a write has made no
//!   progress for `stall_timeout` ([`Guarded`]).
//! - The handler's own time limit (`request_timeout`) is a layer of the router
//!   ([`crate::router`]); it answers 408.
//!
//! Shutdown stops accepting, lets in-flight requests finish and closes idle connections
//! (hyper's graceful shutdown); the caller bounds how long that may take.

use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
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
    /// Time a write may make no progress (the client not reading) before the connection is
    /// closed.
    pub stall_timeout: Duration,
    /// Connections open at once from one address (0: no limit); more are closed on accept.
    pub max_connections_per_ip: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_connections: 10_000,
            header_timeout: Duration::from_secs(15),
            stall_timeout: Duration::from_secs(30),
            max_connections_per_ip: 1_000,
        }
    }
}

/// The listen queue `bind` asks for (the kernel caps it at `net.core.somaxconn`, 4,096 on
/// current Linux).
pub const LISTEN_BACKLOG: u32 = 4096;

/// Binds `addr` with a listen queue of [`LISTEN_BACKLOG`] instead of the 128 that
/// `TcpListener::bind` uses: connections arriving in a burst past the queue (a flash sale's
/// clients connecting at once) have their handshakes dropped, and clients resend them only
/// after 1, 3, 7, 15 s. 400 connections at once overflowed 128 (the kernel's
/// `ListenOverflows` counter rose by 56), and under load a silent one was still not through
/// after 20 s.
pub fn bind(addr: std::net::SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
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
    let per_ip = PerIp::default();
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
            refused.note("max_connections", limits.max_connections);
            drop(stream);
            continue;
        };
        let Some(from_peer) = per_ip.take(peer.ip(), limits.max_connections_per_ip) else {
            refused.note("max_connections_per_ip", limits.max_connections_per_ip);
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let in_flight = InFlight::default();
        let io = TokioIo::new(Guarded::new(
            stream,
            limits.header_timeout,
            limits.stall_timeout,
            in_flight.clone(),
        ));
        let app = app.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            // Counted from the moment the head is parsed until the handler answers.
            // The answer's body keeps it counted until it is sent (a long download is no idle
            // connection).
            let handling = Handling::new(&in_flight);
            let answer = app.clone().oneshot(req.map(axum::body::Body::new));
            async move {
                let res = answer.await?;
                Ok::<_, std::convert::Infallible>(res.map(|body| {
                    axum::body::Body::new(CountedBody {
                        inner: body,
                        _handling: handling,
                    })
                }))
            }
        });
        let conn = graceful.watch(http.serve_connection(io, service));
        tokio::spawn(async move {
            metrics::gauge!("http_open_connections").increment(1.0);
            if let Err(e) = conn.await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
            metrics::gauge!("http_open_connections").decrement(1.0);
            drop(from_peer);
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
    fn note(&self, setting: &'static str, cap: usize) {
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
                setting,
                cap,
                refused = n,
                "connection cap reached: closing new connections until some end"
            );
        }
    }
}

/// Open connections per client address.
#[derive(Debug, Default)]
struct PerIp {
    // A std mutex: held only to count, never across an await.
    open: Arc<std::sync::Mutex<std::collections::HashMap<IpAddr, usize>>>,
}

/// One connection counted for its address, until dropped.
#[derive(Debug)]
struct FromPeer {
    open: Arc<std::sync::Mutex<std::collections::HashMap<IpAddr, usize>>>,
    ip: IpAddr,
}

impl PerIp {
    /// Counts a connection from `ip`, unless it already has `cap` (0: no cap).
    fn take(&self, ip: IpAddr, cap: usize) -> Option<FromPeer> {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = open.entry(ip).or_insert(0);
        if cap > 0 && *n >= cap {
            return None;
        }
        *n += 1;
        Some(FromPeer {
            open: self.open.clone(),
            ip,
        })
    }
}

impl Drop for FromPeer {
    fn drop(&mut self) {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// Requests of one connection being handled now: set by the service, read by [`Guarded`].
pub type InFlight = Arc<AtomicUsize>;

/// One request being handled, until dropped.
struct Handling(InFlight);

impl Handling {
    fn new(in_flight: &InFlight) -> Self {
        in_flight.fetch_add(1, Ordering::AcqRel);
        Handling(in_flight.clone())
    }
}

impl Drop for Handling {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its request counted as being handled until it is sent (or
/// dropped).
struct CountedBody {
    inner: axum::body::Body,
    _handling: Handling,
}

impl http_body::Body for CountedBody {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A connection's stream with its two time limits, enforced here rather than trusted to the
/// HTTP layer alone:
/// - while no request is being handled, a read must bring a whole request head within `idle`
///   of the moment the connection became idle (its start, or the end of the previous
///   request), whatever trickles in meanwhile: silent, half-sent, trickling and idle
///   kept-alive connections all end;
/// - a write that makes no progress for `stall` (the client stopped reading) fails.
///
/// Reads while a request is being handled are not timed here: hyper keeps one pending to
/// notice a client that went away, and a quiet client waiting for its answer is no stall (the
/// handler's time is `request_timeout`'s). Errors are `TimedOut`; hyper then closes the
/// connection.
#[derive(Debug)]
pub struct Guarded<S> {
    inner: S,
    idle: Duration,
    stall: Duration,
    in_flight: InFlight,
    /// When the connection last became idle; `None` while a request is handled.
    idle_since: Option<Instant>,
    last_write: Instant,
    read_timer: Pin<Box<Sleep>>,
    write_timer: Pin<Box<Sleep>>,
}

impl<S> Guarded<S> {
    pub fn new(inner: S, idle: Duration, stall: Duration, in_flight: InFlight) -> Self {
        let now = Instant::now();
        Guarded {
            inner,
            idle,
            stall,
            in_flight,
            idle_since: Some(now),
            last_write: now,
            read_timer: Box::pin(tokio::time::sleep_until(now + idle)),
            write_timer: Box::pin(tokio::time::sleep_until(now + stall)),
        }
    }

    /// A pending read: an error once the connection has been idle too long.
    fn check_idle(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            self.idle_since = None;
            return Poll::Pending;
        }
        let since = *self.idle_since.get_or_insert_with(Instant::now);
        expired(
            &mut self.read_timer,
            since + self.idle,
            cx,
            "no request within header_timeout",
        )
    }

    /// Whether the connection is idle and has been for longer than it may.
    fn idle_expired(&mut self) -> bool {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            self.idle_since = None;
            return false;
        }
        let since = *self.idle_since.get_or_insert_with(Instant::now);
        since + self.idle <= Instant::now()
    }

    /// A pending write: an error once writes have made no progress for too long.
    fn check_stall(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let deadline = self.last_write + self.stall;
        expired(
            &mut self.write_timer,
            deadline,
            cx,
            "the client stopped reading (stall_timeout)",
        )
    }

    fn wrote(&mut self, res: &io::Result<usize>) {
        if matches!(res, Ok(n) if *n > 0) {
            self.last_write = Instant::now();
        }
    }
}

/// Polls `timer` set to `deadline`: an error once it has passed.
fn expired(
    timer: &mut Pin<Box<Sleep>>,
    deadline: Instant,
    cx: &mut Context<'_>,
    why: &'static str,
) -> Poll<io::Error> {
    if timer.deadline() != deadline {
        timer.as_mut().reset(deadline);
    }
    match timer.as_mut().poll(cx) {
        Poll::Ready(()) => Poll::Ready(io::Error::new(io::ErrorKind::TimedOut, why)),
        Poll::Pending => Poll::Pending,
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            // Bytes arriving late do not buy time: an idle connection past its limit ends.
            Poll::Ready(Ok(())) if self.idle_expired() => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no request within header_timeout",
            ))),
            Poll::Ready(res) => Poll::Ready(res),
            Poll::Pending => self.check_idle(cx).map(Err),
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, data) {
            Poll::Ready(res) => {
                self.wrote(&res);
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
                self.wrote(&res);
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_ends_after_the_head_timeout_even_if_bytes_trickle() {
        let (ours, mut theirs) = tokio::io::duplex(64);
        let in_flight = InFlight::default();
        let mut s = Guarded::new(
            ours,
            Duration::from_secs(3),
            Duration::from_secs(5),
            in_flight,
        );
        let started = tokio::time::Instant::now();
        let mut buf = [0u8; 8];
        for _ in 0..10 {
            theirs.write_all(b"G").await.unwrap();
            match tokio::time::timeout(Duration::from_secs(1), s.read(&mut buf)).await {
                Ok(Ok(1)) => tokio::time::sleep(Duration::from_millis(500)).await,
                Ok(Err(e)) => {
                    assert_eq!(e.kind(), io::ErrorKind::TimedOut);
                    assert!(started.elapsed() >= Duration::from_secs(3));
                    return;
                }
                other => panic!("{other:?}"),
            }
        }
        panic!("a trickle kept the connection open");
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_the_client_does_not_read_ends_after_the_stall_timeout() {
        let (ours, mut theirs) = tokio::io::duplex(64);
        let in_flight = InFlight::default();
        let _handling = Handling::new(&in_flight);
        let mut s = Guarded::new(
            ours,
            Duration::from_secs(1),
            Duration::from_secs(5),
            in_flight,
        );
        // A quiet client waiting for its answer is no stall: no error, however long it takes.
        let mut buf = [0u8; 8];
        let quiet = tokio::time::timeout(Duration::from_secs(60), s.read(&mut buf)).await;
        assert!(quiet.is_err(), "still waiting after 60 s, without an error");
        // A client that does not read: the write stops making progress and fails.
        let started = tokio::time::Instant::now();
        let err = s.write_all(&[0u8; 1024]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        // What was written before the stall was delivered.
        let mut got = [0u8; 64];
        assert_eq!(theirs.read(&mut got).await.unwrap(), 64);
    }
}
