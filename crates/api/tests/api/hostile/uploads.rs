//! Items 7 and 13 (the JSON issuance bound): uploads are authorized before a byte of their
//! body is read, few are read at once, they are parsed as they stream, and keyed retries find
//! their job.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, Method, Request, StatusCode};
use coupond_api::server::ConnectionLimits;
use coupond_api::AppSettings;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::claims::live;
use crate::support::*;

fn upload(app: &TestApp, template: i64, cred: &str, body: Body) -> Request<Body> {
    let _ = app;
    Request::builder()
        .method(Method::POST)
        .uri(format!("/v1/templates/{template}/issuances"))
        .header(header::AUTHORIZATION, format!("Bearer {cred}"))
        .header(header::CONTENT_TYPE, "text/csv")
        .body(body)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_merchants_upload_is_refused_before_its_body_is_read() {
    let app = TestApp::new().await;
    let t = live(&app, 100, 1, json!({})).await;
    let addr = app.listen(ConnectionLimits::default()).await;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    // Announces 63 MB, sends the head and a few bytes, and waits for the answer.
    let head = format!(
        "POST /v1/templates/{t}/issuances HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
         Content-Type: text/csv\r\nContent-Length: {}\r\n\r\nu-1\nu-2\n",
        app.m2(),
        63 * 1024 * 1024
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut answer))
        .await
        .expect("answered without the body")
        .unwrap();
    let text = String::from_utf8_lossy(&answer[..n]);
    assert!(text.starts_with("HTTP/1.1 404"), "{text}");
    assert!(text.contains("\"code\":\"not_found\""), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_read_at_once_are_bounded() {
    let app = TestApp::with_settings(
        Backend::Sqlite,
        AppSettings {
            max_concurrent_uploads: 1,
            ..AppSettings::default()
        },
    )
    .await
    .unwrap();
    let t = live(&app, 100, 1, json!({})).await;
    // The first upload's body arrives slowly; the server signals when it starts reading it.
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
    let (reading_tx, reading_rx) = tokio::sync::oneshot::channel::<()>();
    let mut reading = Some(reading_tx);
    let stream = futures_util::stream::unfold((rx, ()), move |(mut rx, ())| {
        if let Some(r) = reading.take() {
            let _ = r.send(());
        }
        async move {
            rx.recv()
                .await
                .map(|b| (Ok::<_, std::io::Error>(b), (rx, ())))
        }
    });
    let first = {
        let req = upload(&app, t, app.m1(), Body::from_stream(stream));
        let router = app.router.clone();
        tokio::spawn(async move { tower::ServiceExt::oneshot(router, req).await.unwrap() })
    };
    reading_rx.await.unwrap();
    // While it is being read, another upload is turned away, before its body is read.
    let r = app
        .send(upload(&app, t, app.m1(), Body::from("u-9\n")))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::TOO_MANY_REQUESTS, "too_many_uploads")
    );
    assert_eq!(r.headers[header::RETRY_AFTER], "1");
    // The first one completes normally, and then the next is read.
    tx.send(Bytes::from_static(b"u-1\nu-2\n")).await.unwrap();
    drop(tx);
    assert_eq!(first.await.unwrap().status(), StatusCode::ACCEPTED);
    let r = app
        .send(upload(&app, t, app.m1(), Body::from("u-9\n")))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
}

#[tokio::test]
async fn the_documented_json_issuance_fits() {
    let app = TestApp::new().await;
    let t = live(&app, 20_000, 1, json!({})).await;
    // 10,000 ids of 60 characters: about 640 KB of JSON.
    let ids: Vec<String> = (0..10_000).map(|i| format!("{i:0>60}")).collect();
    let r = app
        .post(
            &format!("/v1/templates/{t}/issuances"),
            app.m1(),
            json!({ "user_ids": ids }),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["issued"], 10_000);
}

#[tokio::test]
async fn a_keyed_upload_retried_finds_its_job_and_a_reused_key_is_refused() {
    let app = TestApp::new().await;
    let t = live(&app, 100, 1, json!({})).await;
    let send = |body: &'static str| {
        let mut req = upload(&app, t, app.m1(), Body::from(body));
        req.headers_mut()
            .insert("idempotency-key", "upload-1".parse().unwrap());
        app.send(req)
    };
    let first = send("u-1\nu-2\n").await;
    assert_eq!(first.status, StatusCode::ACCEPTED);
    assert_eq!(first.headers["idempotent-replayed"], "false");
    let again = send("u-1\nu-2\n").await;
    assert_eq!(again.status, StatusCode::ACCEPTED);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body["id"], first.body["id"]);
    let other = send("u-3\n").await;
    assert_eq!(
        (other.status, other.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "idempotency_key_reused")
    );
    assert_eq!(app.store.open_issuances().await.unwrap().len(), 1);
}
