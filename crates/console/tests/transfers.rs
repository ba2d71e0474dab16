//! Downloads and uploads through the console (its router, in process): a CSV download is the
//! API's body streamed through, whole, never collected first, and an API refusal is still a
//! page; an issuance upload is refused before its file is read when its first part is not the
//! form token or the template is another merchant's, a caller passes one upload at a time
//! (others go on meanwhile), and an upload over the limit is answered in words.

mod support;

use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::http::{header, Method, Request, StatusCode};
use axum::response::Response;
use coupond_api::AppSettings;
use coupond_domain::MerchantId;
use coupond_store::Role;
use http_body_util::BodyExt;
use serde_json::json;
use tokio::sync::{mpsc, oneshot};
use tower::ServiceExt;

use support::{app_with_settings, published, sign_in_cookie, template_body, v1, App};

/// How long an answer that must not wait for the rest of a body may take.
const PROMPTLY: Duration = Duration::from_secs(5);

async fn app(settings: AppSettings) -> App {
    app_with_settings(settings).await
}

/// A merchant (in city 1) and its key's secret.
async fn merchant(app: &App) -> (MerchantId, String) {
    let m = support::merchant(app).await;
    (m, key(app, Role::Merchant, Some(m)).await)
}

/// A new key's secret.
async fn key(app: &App, role: Role, merchant: Option<MerchantId>) -> String {
    support::key(app, role, merchant).await.0
}

/// A published template of the merchant whose key is `key`, with room for many coupons.
async fn template(app: &App, key: &str) -> i64 {
    let body = template_body("10% off, at most 50", 100_000, "2026-12-31T00:00:00Z");
    published(app, key, body).await
}

/// The session cookie (`name=value`) of a sign-in with `key`, and the session's form token.
async fn sign_in(app: &App, key: &str) -> (String, String) {
    let cookie = sign_in_cookie(app, key).await;
    let home = text(get(app, &cookie, "/console").await).await;
    let token = home
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_owned();
    (cookie, token)
}

async fn get(app: &App, cookie: &str, path: &str) -> Response {
    let req = Request::get(path)
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .unwrap();
    app.router.clone().oneshot(req).await.unwrap()
}

async fn text(res: Response) -> String {
    let body = res.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8_lossy(&body).into_owned()
}

/// A console upload form's parts as multipart text: the form token (if any) and then the
/// head of the file part, whose content follows.
fn form_head(csrf: Option<&str>) -> String {
    let token = csrf.map_or(String::new(), |t| {
        format!("--b\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{t}\r\n")
    });
    format!(
        "{token}--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"u.txt\"\r\n\
         Content-Type: text/plain\r\n\r\n"
    )
}

const FORM_END: &str = "\r\n--b--\r\n";

fn upload(cookie: &str, template: i64, body: Body) -> Request<Body> {
    Request::post(format!("/console/templates/{template}/issuances"))
        .header(header::COOKIE, cookie)
        .header(header::CONTENT_TYPE, "multipart/form-data; boundary=b")
        .header(header::HOST, "console.test")
        .header(header::ORIGIN, "http://console.test")
        .body(body)
        .unwrap()
}

/// The answer to an upload of `body`, as text.
async fn answer(app: &App, cookie: &str, template: i64, body: Body) -> String {
    text(
        app.router
            .clone()
            .oneshot(upload(cookie, template, body))
            .await
            .unwrap(),
    )
    .await
}

/// A body fed through `tx`, a chunk at a time; `polled` fires when the reader first asks for
/// more than the first chunk.
fn fed() -> (mpsc::Sender<Bytes>, Body, oneshot::Receiver<()>) {
    let (tx, rx) = mpsc::channel::<Bytes>(4);
    let (polled_tx, polled) = oneshot::channel();
    let stream = futures_util::stream::unfold((rx, 0u32, Some(polled_tx)), |mut st| async move {
        st.1 += 1;
        if st.1 == 2 {
            if let Some(p) = st.2.take() {
                let _ = p.send(());
            }
        }
        let chunk = st.0.recv().await?;
        Some((Ok::<_, std::io::Error>(chunk), st))
    });
    (tx, Body::from_stream(stream), polled)
}

/// The issuance jobs stored.
async fn jobs(app: &App) -> usize {
    app.store.open_issuances().await.unwrap().len()
}

/// Item 13: ten parallel downloads of a 1M-code batch held 32 MB each, as the console read
/// every answer whole before sending it on. A batch's CSV (three of the API's pages) arrives
/// whole and as a stream (no known length, more than one chunk); another merchant's download
/// is the API's 404, as a page.
#[tokio::test]
async fn a_large_code_batch_downloads_whole_as_a_stream() {
    const CODES: usize = 12_000;
    let app = app(AppSettings {
        code_batch_sync_max: CODES as u32,
        ..AppSettings::default()
    })
    .await;
    let (_, m1) = merchant(&app).await;
    let t = template(&app, &m1).await;
    let codes = format!("/v1/templates/{t}/codes");
    let ask = json!({"count": CODES, "prefix": "BGX"});
    let (status, batch) = v1(&app, &m1, Method::POST, &codes, ask).await;
    assert_eq!(status, StatusCode::CREATED, "{batch}");
    let id = batch["id"].as_i64().unwrap();

    let (cookie, _) = sign_in(&app, &m1).await;
    let res = get(
        &app,
        &cookie,
        &format!("/console/code-batches/{id}/codes.csv"),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()[header::CONTENT_DISPOSITION],
        format!("attachment; filename=\"code-batch-{id}.csv\"")
    );
    assert!(res.headers()[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    assert_eq!(
        res.body().size_hint().exact(),
        None,
        "the console collected the CSV before answering"
    );
    let mut body = res.into_body();
    let (mut chunks, mut csv) = (0, Vec::new());
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            chunks += 1;
            csv.extend_from_slice(&data);
        }
    }
    assert!(chunks > 1, "the CSV came as one chunk");
    let csv = String::from_utf8(csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), CODES + 1, "the header and every code");
    assert!(lines[0].starts_with("code,"), "{}", lines[0]);
    assert!(lines[1..].iter().all(|l| l.starts_with("BGX")));

    // The API's own download, byte for byte.
    let req = Request::get(format!("/v1/code-batches/{id}/codes"))
        .header(header::AUTHORIZATION, format!("Bearer {m1}"))
        .body(Body::empty())
        .unwrap();
    let direct = app.router.clone().oneshot(req).await.unwrap();
    assert_eq!(text(direct).await, csv);

    let (_, m2) = merchant(&app).await;
    let (other, _) = sign_in(&app, &m2).await;
    let refused = get(
        &app,
        &other,
        &format!("/console/code-batches/{id}/codes.csv"),
    )
    .await;
    assert_eq!(refused.status(), StatusCode::NOT_FOUND);
    assert!(text(refused).await.contains("Not found"));
}

/// The holders and reconciliation CSVs pass through the same way: the API's CSV, as an
/// attachment (every holder: `crates/console/tests/long_lists.rs`).
#[tokio::test]
async fn the_holders_and_reconciliation_csvs_pass_through() {
    let app = app(AppSettings::default()).await;
    let (_, m1) = merchant(&app).await;
    let t = template(&app, &m1).await;
    let (cookie, _) = sign_in(&app, &m1).await;
    let res = get(
        &app,
        &cookie,
        &format!("/console/templates/{t}/coupons.csv"),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()[header::CONTENT_DISPOSITION],
        format!("attachment; filename=\"template-{t}-coupons.csv\"")
    );
    assert!(
        text(res).await.starts_with("coupon_id,"),
        "the CSV's header"
    );

    let (platform, _) = sign_in(&app, &key(&app, Role::Platform, None).await).await;
    let report = "/console/reconciliation?from=2026-11-01T00:00&to=2026-11-30T00:00&format=csv";
    let res = get(&app, &platform, report).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers()[header::CONTENT_DISPOSITION]
        .to_str()
        .unwrap()
        .starts_with("attachment; filename=\"reconciliation-2026-11-01"));
    assert!(res.headers()[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
}

/// Item 11: the console read a whole upload (up to 64 MiB) before checking anything. An upload
/// to another merchant's template is answered 404 while most of its file is still unsent, and
/// makes no job.
#[tokio::test]
async fn an_upload_to_another_merchants_template_is_refused_before_its_file_is_read() {
    let app = app(AppSettings::default()).await;
    let (_, m1) = merchant(&app).await;
    let (_, m2) = merchant(&app).await;
    let theirs = template(&app, &m1).await;
    let (cookie, token) = sign_in(&app, &m2).await;
    let (tx, body, _) = fed();
    tx.send(Bytes::from(form_head(Some(&token)) + "u-1\nu-2\n"))
        .await
        .unwrap();
    let answer = tokio::time::timeout(
        PROMPTLY,
        app.router.clone().oneshot(upload(&cookie, theirs, body)),
    )
    .await
    .expect("answered while the file was still being sent")
    .unwrap();
    assert_eq!(answer.status(), StatusCode::NOT_FOUND);
    assert!(text(answer).await.contains("Not found"));
    assert_eq!(jobs(&app).await, 0);
    drop(tx); // held open until now: the rest of the file was never sent
}

/// A form whose first part is not the session's token (missing, or a stale one) is refused
/// (403) with its file unread, and changes nothing.
#[tokio::test]
async fn a_form_without_its_token_first_is_refused_before_its_file_is_read() {
    let app = app(AppSettings::default()).await;
    let (_, m1) = merchant(&app).await;
    let t = template(&app, &m1).await;
    let (cookie, _) = sign_in(&app, &m1).await;
    for head in [form_head(None), form_head(Some("stale-token"))] {
        let (tx, body, _) = fed();
        tx.send(Bytes::from(head + "u-1\nu-2\n")).await.unwrap();
        let answer = tokio::time::timeout(
            PROMPTLY,
            app.router.clone().oneshot(upload(&cookie, t, body)),
        )
        .await
        .expect("answered while the file was still being sent")
        .unwrap();
        assert_eq!(answer.status(), StatusCode::FORBIDDEN);
        assert!(text(answer)
            .await
            .contains("not sent from this console page"));
        drop(tx);
    }
    assert_eq!(jobs(&app).await, 0);
}

/// Two slow uploads of one merchant held every tenant's console uploads. Now a caller passes
/// one upload at a time: while its first is being sent, its second is turned away, unread
/// (by the console or the API alike), and another merchant's goes through; once the first is
/// done, the next is taken.
#[tokio::test]
async fn one_upload_at_a_time_per_caller_while_others_go_on() {
    let app = app(AppSettings::default()).await;
    let (_, m1) = merchant(&app).await;
    let (_, m2) = merchant(&app).await;
    let (t1, t2) = (template(&app, &m1).await, template(&app, &m2).await);
    let (c1, k1) = sign_in(&app, &m1).await;
    let (c2, k2) = sign_in(&app, &m2).await;
    let whole = |token: &str, users: &str| Body::from(form_head(Some(token)) + users + FORM_END);

    let (tx, body, polled) = fed();
    tx.send(Bytes::from(form_head(Some(&k1)) + "u-1\n"))
        .await
        .unwrap();
    let first = tokio::spawn(app.router.clone().oneshot(upload(&c1, t1, body)));
    // The console asks for more than the first chunk: it holds the caller's upload permit
    // (taken before any of the body is read) and is reading the form.
    polled.await.unwrap();

    let second = answer(&app, &c1, t1, whole(&k1, "u-9\n")).await;
    assert!(
        second.contains("upload-error")
            && second.contains("an upload of yours is still being read"),
        "{second}"
    );
    assert_eq!(
        jobs(&app).await,
        0,
        "the second upload was read and made a job"
    );
    // Through the API too: one permit per caller, whichever door the upload came in by.
    let by_api = Request::builder()
        .method(Method::POST)
        .uri(format!("/v1/templates/{t1}/issuances"))
        .header(header::AUTHORIZATION, format!("Bearer {m1}"))
        .header(header::CONTENT_TYPE, "text/csv")
        .body(Body::from("u-7\n"))
        .unwrap();
    let by_api = app.router.clone().oneshot(by_api).await.unwrap();
    assert_eq!(by_api.status(), StatusCode::TOO_MANY_REQUESTS);
    let other = answer(&app, &c2, t2, whole(&k2, "u-5\n")).await;
    assert!(other.contains("/console/issuances/"), "{other}");

    tx.send(Bytes::from(format!("u-2\n{FORM_END}")))
        .await
        .unwrap();
    drop(tx);
    let first = text(first.await.unwrap().unwrap()).await;
    assert!(first.contains("/console/issuances/"), "{first}");
    let again = answer(&app, &c1, t1, whole(&k1, "u-9\n")).await;
    assert!(again.contains("/console/issuances/"), "{again}");
    assert_eq!(jobs(&app).await, 3);
}

/// An upload over the limit is answered in words, whether the limit is passed at once or
/// while the file is being passed to the API (no job is made); one within it reaches the API.
#[tokio::test]
async fn an_upload_over_the_limit_is_refused_in_words() {
    let app = app(AppSettings {
        max_upload_bytes: 1024,
        ..AppSettings::default()
    })
    .await;
    let (_, m1) = merchant(&app).await;
    let t = template(&app, &m1).await;
    let (cookie, token) = sign_in(&app, &m1).await;
    let send = |users: String| {
        let body = Body::from(form_head(Some(&token)) + &users + FORM_END);
        app.router.clone().oneshot(upload(&cookie, t, body))
    };
    let big = text(send("u-1\n".repeat(600)).await.unwrap()).await;
    assert!(
        big.contains("upload-error") && big.contains("at most 1024 bytes"),
        "{big}"
    );
    let (tx, body, _) = fed();
    let answer = tokio::spawn(app.router.clone().oneshot(upload(&cookie, t, body)));
    tx.send(Bytes::from(form_head(Some(&token)))).await.unwrap();
    for _ in 0..6 {
        let _ = tx.send(Bytes::from("u-1\n".repeat(100))).await;
    }
    drop(tx);
    let cut = text(answer.await.unwrap().unwrap()).await;
    assert!(cut.contains("at most 1024 bytes"), "{cut}");
    assert_eq!(jobs(&app).await, 0);
    let small = text(send("u-1\n".to_owned()).await.unwrap()).await;
    assert!(small.contains("/console/issuances/"), "{small}");
    let empty = text(send(String::new()).await.unwrap()).await;
    assert!(empty.contains("choose a file of user ids"), "{empty}");
}
