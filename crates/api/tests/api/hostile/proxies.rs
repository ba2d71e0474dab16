//! Behind a proxy: the per-IP claim limit keys on the client a trusted proxy names, and on the
//! peer itself otherwise, so a client that sends `X-Forwarded-For` or `Forwarded` on its own
//! gains nothing (real TCP, so the server sees its peer).

use std::net::SocketAddr;
use std::sync::Arc;

use coupond_api::forwarded::TrustedProxies;
use coupond_api::ratelimit::Rate;
use coupond_api::server::ConnectionLimits;
use coupond_api::AppSettings;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::claims::live;
use crate::support::*;

/// One claim over its own connection with `header` added; the answer's status.
async fn claim(addr: SocketAddr, template: i64, user: &str, header: &str) -> u16 {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST /v1/templates/{template}/claims HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \
         {user}\r\n{header}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).await.unwrap();
    let text = String::from_utf8_lossy(&answer);
    text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0)
}

/// Six claims from 127.0.0.1, each naming another client in `header`; how many were refused
/// by the per-IP limit (one a second, a burst of one: most of six sent at once are refused
/// when they count as one client).
async fn refused(trusted: &[&str], header: impl Fn(usize) -> String) -> usize {
    let settings = AppSettings {
        claim_rate_per_ip: Rate {
            per_second: 1,
            burst: 1,
        },
        trusted_proxies: Arc::new(TrustedProxies::parse(trusted).unwrap()),
        ..AppSettings::default()
    };
    let app = TestApp::with_settings(Backend::Sqlite, settings)
        .await
        .unwrap();
    let t = live(&app, 100, 10, json!({})).await;
    let addr = app.listen(ConnectionLimits::default()).await;
    let mut statuses = Vec::new();
    for i in 0..6 {
        statuses.push(claim(addr, t, &app.user, &header(i)).await);
    }
    assert!(
        statuses.iter().all(|s| [201, 429].contains(s)),
        "{statuses:?}"
    );
    statuses.iter().filter(|s| **s == 429).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarding_headers_count_only_from_trusted_proxies() {
    let xff = |i: usize| format!("X-Forwarded-For: 198.51.100.{i}");
    let fwd = |i: usize| format!("Forwarded: for=\"[2001:db8::{i}]:80\"");
    // No trusted proxy: every claim is 127.0.0.1's, whatever the headers say.
    assert!(refused(&[], xff).await >= 2);
    assert!(refused(&[], fwd).await >= 2);
    // A trusted proxy elsewhere: the same.
    assert!(refused(&["10.0.0.0/8"], xff).await >= 2);
    // Loopback trusted: each claim is its named client's, and none is refused...
    assert_eq!(refused(&["127.0.0.1/32"], xff).await, 0);
    assert_eq!(refused(&["127.0.0.0/8"], fwd).await, 0);
    // ... unless they all name the same client, or one the client forged on the left.
    assert!(refused(&["127.0.0.1"], |_| "X-Forwarded-For: 198.51.100.1".into()).await >= 2);
    let forged = |i: usize| format!("X-Forwarded-For: 6.6.6.{i}, 198.51.100.1");
    assert!(refused(&["127.0.0.1"], forged).await >= 2);
}
