//! One keep-alive HTTP/1 connection per load-test worker, so `--concurrency N` means N
//! connections. A shared pool (hyper's legacy client) opens another connection whenever none
//! is idle at the instant a request starts, and one whose answer was just read is not yet
//! back: 512 workers crept past 520 connections within 200,000 requests, and past a server's
//! per-address cap the extra ones were refused and counted as "no answer".

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

use super::RequestSpec;

/// A worker's connection, opened on first use and again after the server closed it.
#[derive(Default)]
pub(super) struct Conn {
    sender: Option<SendRequest<Full<Bytes>>>,
}

impl Conn {
    /// A sender ready for the next request: the open connection, or a new one when it was
    /// closed (nothing was sent on it then, so nothing is sent twice).
    async fn ready(&mut self, authority: &str) -> Option<&mut SendRequest<Full<Bytes>>> {
        let alive = match &mut self.sender {
            Some(s) => s.ready().await.is_ok(),
            None => false,
        };
        if !alive {
            self.sender = None;
            let stream = tokio::net::TcpStream::connect(authority).await.ok()?;
            stream.set_nodelay(true).ok()?;
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .ok()?;
            // Drives the connection; it ends when the sender is dropped or the server closes.
            tokio::spawn(conn);
            self.sender = Some(sender);
        }
        self.sender.as_mut()
    }

    /// One attempt's answer: status and JSON body, or `None` when no answer came (the
    /// connection is then dropped and the next attempt opens another). A 200's body is read
    /// but not parsed (`Null`): no scenario looks into it, and parsing a 45 KB quote on the
    /// client would take CPU from the server it measures on a small machine.
    pub(super) async fn attempt(&mut self, spec: &RequestSpec) -> Option<(u16, serde_json::Value)> {
        let uri: hyper::Uri = spec.uri.parse().ok()?;
        let authority = uri.authority()?.to_string();
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        let mut req = hyper::Request::builder()
            .method(spec.method.clone())
            .uri(path)
            .header("host", &authority);
        if let Some(a) = &spec.auth {
            req = req.header("authorization", a);
        }
        if let Some(k) = &spec.key {
            req = req.header("idempotency-key", k);
        }
        let body = match &spec.body {
            Some(b) => {
                req = req.header("content-type", "application/json");
                Full::new(Bytes::from(b.clone()))
            }
            None => Full::new(Bytes::new()),
        };
        let req = req.body(body).ok()?;
        let answer = async {
            let res = self.ready(&authority).await?.send_request(req).await.ok()?;
            let status = res.status().as_u16();
            let bytes = res.into_body().collect().await.ok()?.to_bytes();
            Some((status, bytes))
        }
        .await;
        let Some((status, bytes)) = answer else {
            self.sender = None;
            return None;
        };
        let json = match status {
            200 => serde_json::Value::Null,
            _ => serde_json::from_slice(&bytes).unwrap_or_default(),
        };
        Some((status, json))
    }
}
