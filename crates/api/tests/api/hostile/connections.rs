//! Item 1: slow and idle connections are closed, the connection cap holds, and a request that
//! outlives `request_timeout` is answered 408; a normal client is served throughout.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use coupond_api::server::ConnectionLimits;
use coupond_api::AppSettings;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::*;

/// How a hostile client behaves on its connection.
#[derive(Clone, Copy, Debug)]
enum Slow {
    /// Connects and sends nothing.
    Silent,
    /// Sends half a request head, then nothing.
    HalfHead,
    /// Sends a header byte every 200 ms, never finishing the head.
    Trickle,
    /// Sends one whole request, reads the answer, then stays idle on the kept-alive connection.
    IdleAfterRequest,
}

/// Runs `how` on a fresh connection and returns how long the server took to close it.
async fn hold(addr: SocketAddr, how: Slow) -> Duration {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).await.unwrap();
    match how {
        Slow::Silent => {}
        Slow::HalfHead => s.write_all(b"GET /healthz HTTP/1.1\r\nHo").await.unwrap(),
        Slow::Trickle => {
            s.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
            let (mut r, mut w) = s.into_split();
            let trickle = tokio::spawn(async move {
                for b in b"X-Slow: ".iter().cycle() {
                    if w.write_all(&[*b]).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            });
            let mut buf = [0u8; 1024];
            while matches!(r.read(&mut buf).await, Ok(n) if n > 0) {}
            trickle.abort();
            return started.elapsed();
        }
        Slow::IdleAfterRequest => {
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            let mut buf = vec![0u8; 4096];
            let n = s.read(&mut buf).await.unwrap();
            assert!(buf[..n].starts_with(b"HTTP/1.1 200"), "{:?}", &buf[..n]);
        }
    }
    // The server closes it: a read ends (EOF or reset). Whatever it sent first (a 408 for a
    // head that timed out) is read past.
    let mut buf = [0u8; 1024];
    while matches!(s.read(&mut buf).await, Ok(n) if n > 0) {}
    started.elapsed()
}

/// One plain request on a fresh connection; the time it took.
async fn plain_request(addr: SocketAddr) -> Duration {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    assert!(
        out.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_connections_are_closed_while_others_are_served() {
    let app = TestApp::new().await;
    let limits = ConnectionLimits {
        max_connections: 2_000,
        header_timeout: Duration::from_secs(1),
        stall_timeout: Duration::from_secs(2),
        max_connections_per_ip: 0,
    };
    let addr = app.listen(limits).await;
    let kinds = [
        Slow::Silent,
        Slow::HalfHead,
        Slow::Trickle,
        Slow::IdleAfterRequest,
    ];
    let mut hostile = tokio::task::JoinSet::new();
    for i in 0..400 {
        let how = kinds[i % kinds.len()];
        // Bounded, so a connection the server never closes fails the test instead of hanging it.
        hostile.spawn(async move {
            let held = tokio::time::timeout(Duration::from_secs(20), hold(addr, how)).await;
            (how, held.unwrap_or(Duration::MAX))
        });
    }
    // A normal client, every 100 ms while the hostile ones hold on, is served within a second.
    let mut served = 0;
    while !hostile.is_empty() && served < 200 {
        let took = plain_request(addr).await;
        assert!(
            took < Duration::from_secs(1),
            "a normal request took {took:?}"
        );
        served += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
        while let Some(done) = hostile.try_join_next() {
            let (how, held) = done.unwrap();
            assert!(held < Duration::from_secs(4), "{how:?} held {held:?}");
        }
    }
    while let Some(done) = hostile.join_next().await {
        let (how, held) = done.unwrap();
        // Closed by the head timeout (1 s), with time to spare for a loaded 2-core machine.
        assert!(held < Duration::from_secs(4), "{how:?} held {held:?}");
    }
    assert!(
        served >= 5,
        "the hostile connections were closed too fast to test anything"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_are_closed_at_once() {
    let app = TestApp::new().await;
    let limits = ConnectionLimits {
        max_connections: 20,
        header_timeout: Duration::from_secs(2),
        stall_timeout: Duration::from_secs(2),
        max_connections_per_ip: 0,
    };
    let addr = app.listen(limits).await;
    // Twenty silent connections take every slot ...
    let mut held = vec![];
    for _ in 0..20 {
        held.push(TcpStream::connect(addr).await.unwrap());
    }
    // ... so the server accepts the next one and closes it straight away.
    let mut extra = TcpStream::connect(addr).await.unwrap();
    let started = Instant::now();
    let _ = extra
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await;
    let mut buf = [0u8; 64];
    let n = extra.read(&mut buf).await.unwrap_or(0);
    assert_eq!(n, 0, "refused, not served");
    assert!(started.elapsed() < Duration::from_secs(1));
    // Once the silent ones time out, clients are served again.
    for s in &mut held {
        while matches!(s.read(&mut buf).await, Ok(n) if n > 0) {}
    }
    assert!(plain_request(addr).await < Duration::from_secs(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_take_every_connection() {
    let app = TestApp::new().await;
    let limits = ConnectionLimits {
        max_connections: 100,
        max_connections_per_ip: 5,
        header_timeout: Duration::from_secs(2),
        stall_timeout: Duration::from_secs(2),
    };
    let addr = app.listen(limits).await;
    let mut held = vec![];
    for _ in 0..5 {
        held.push(TcpStream::connect(addr).await.unwrap());
    }
    // The sixth from the same address is closed at once, though 95 places are free.
    let mut extra = TcpStream::connect(addr).await.unwrap();
    let _ = extra
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await;
    let mut buf = [0u8; 64];
    assert_eq!(extra.read(&mut buf).await.unwrap_or(0), 0);
    drop(held);
    // Its places come back as its connections close.
    let mut served = false;
    for _ in 0..50 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let _ = s
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await;
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out).await;
        if out.starts_with(b"HTTP/1.1 200") {
            served = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(served);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stops_coming_is_answered_408_over_tcp() {
    // The stall timeout is shorter than the request timeout: a client waiting for its answer
    // (sending nothing) must still get the 408, not a closed connection.
    let app = TestApp::with_settings(
        Backend::Sqlite,
        AppSettings {
            request_timeout: Duration::from_millis(1_500),
            ..AppSettings::default()
        },
    )
    .await
    .unwrap();
    let addr = app
        .listen(ConnectionLimits {
            max_connections: 10,
            max_connections_per_ip: 0,
            header_timeout: Duration::from_secs(5),
            stall_timeout: Duration::from_millis(300),
        })
        .await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v1/merchants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{{\"name\": ",
        app.platform
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("\"code\":\"request_timeout\""), "{text}");
}

#[tokio::test]
async fn a_request_past_its_time_limit_is_answered_408() {
    let app = TestApp::with_settings(
        Backend::Sqlite,
        AppSettings {
            request_timeout: Duration::from_millis(300),
            ..AppSettings::default()
        },
    )
    .await
    .unwrap();
    // A body that starts and never ends.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<axum::body::Bytes, std::io::Error>>(1);
    tx.send(Ok(axum::body::Bytes::from_static(b"{\"name\": \"")))
        .await
        .unwrap();
    let body = Body::from_stream(tokio_stream(rx));
    let req = Request::builder()
        .method(Method::POST)
        .uri("/v1/merchants")
        .header(header::AUTHORIZATION, format!("Bearer {}", app.platform))
        .header(header::CONTENT_TYPE, "application/json")
        .body(body)
        .unwrap();
    let started = Instant::now();
    let r = app.send(req).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::REQUEST_TIMEOUT, "request_timeout")
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(tx);
    let (activities, _) = app.row_counts().await;
    assert_eq!(activities, 0);
}

/// A stream over an mpsc receiver (without pulling in tokio-stream).
fn tokio_stream<T: Send + 'static>(
    rx: tokio::sync::mpsc::Receiver<T>,
) -> impl futures_util::Stream<Item = T> + Send + 'static {
    futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|v| (v, rx)) })
}
