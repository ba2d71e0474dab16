//! Webhooks against a real HTTP receiver on loopback (allowed by `webhook_allow_hosts`, as a
//! deployment with internal receivers would): deliveries survive a receiver that fails the
//! first attempts, signatures verify, merchants get their own events only, a receiver that
//! never recovers ends failed. The hostile side is in `abuse/webhooks.rs`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::routing::post;
use coupond_api::AppSettings;
use coupond_engine::webhooks::signature;
use coupond_engine::{
    Dispatcher, Observer, RetryPolicy, SenderSettings, TargetPolicy, WebhookFanout, WebhookSender,
};
use serde_json::{json, Value};

use crate::claims::live;
use crate::support::*;

/// What the receiver got, per path, and how many more times each path answers 500.
#[derive(Default)]
pub struct Inbox {
    pub got: HashMap<String, Vec<(HeaderMap, String)>>,
    fail: HashMap<String, usize>,
}

pub type Shared = Arc<Mutex<Inbox>>;

async fn hook(
    State(inbox): State<Shared>,
    Path(path): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let mut inbox = inbox.lock().unwrap();
    inbox
        .got
        .entry(path.clone())
        .or_default()
        .push((headers, String::from_utf8_lossy(&body).into_owned()));
    match inbox.fail.get_mut(&path) {
        Some(n) if *n > 0 => {
            *n -= 1;
            StatusCode::INTERNAL_SERVER_ERROR
        }
        _ => StatusCode::OK,
    }
}

/// Settings that let webhooks reach the loopback receivers of these tests.
pub fn loopback_allowed() -> Arc<TargetPolicy> {
    Arc::new(TargetPolicy::new(&["127.0.0.0/8".to_owned(), "::1".to_owned()]).unwrap())
}

/// A test app on `backend` whose webhooks may target loopback.
pub async fn app_with_loopback_hooks(backend: Backend) -> Option<TestApp> {
    TestApp::with_settings(
        backend,
        AppSettings {
            webhook_targets: loopback_allowed(),
            ..AppSettings::default()
        },
    )
    .await
}

/// A sender over the app's store and clock that may reach loopback.
pub fn sender(app: &TestApp, settings: SenderSettings) -> WebhookSender {
    WebhookSender::new(
        app.store.clone(),
        Arc::new(app.clock.clone()),
        settings,
        loopback_allowed(),
        "test",
    )
}

/// A receiver on a loopback port: `POST /{path}`.
pub async fn receiver(fail: &[(&str, usize)]) -> (String, Shared) {
    let inbox: Shared = Arc::new(Mutex::new(Inbox {
        fail: fail.iter().map(|(p, n)| ((*p).to_owned(), *n)).collect(),
        ..Inbox::default()
    }));
    let app = axum::Router::new()
        .route("/{path}", post(hook))
        .with_state(inbox.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, inbox)
}

/// Registers `url` for `types` as `cred`: the endpoint's id and secret.
pub async fn register(app: &TestApp, cred: &str, url: String, types: Value) -> (i64, String) {
    let r = app
        .post(
            "/v1/webhooks",
            cred,
            json!({"url": url, "event_types": types}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    (
        r.body["id"].as_i64().unwrap(),
        r.body["secret"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_are_signed_retried_and_scoped_on_sqlite() {
    flows(app_with_loopback_hooks(Backend::Sqlite).await.unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_are_signed_retried_and_scoped_on_postgres() {
    if let Some(app) = app_with_loopback_hooks(Backend::Postgres).await {
        flows(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_are_signed_retried_and_scoped_on_mysql() {
    if let Some(app) = app_with_loopback_hooks(Backend::Mysql).await {
        flows(app).await;
    }
}

async fn flows(app: TestApp) {
    let (base, inbox) = receiver(&[("platform", 2), ("broken", usize::MAX)]).await;
    let (platform, secret) = register(
        &app,
        &app.platform,
        format!("{base}/platform"),
        json!(["coupon.claimed"]),
    )
    .await;
    let (m1, _) = register(&app, app.m1(), format!("{base}/m1"), json!(["*"])).await;
    register(&app, app.m2(), format!("{base}/m2"), json!(["*"])).await;
    let (broken, _) = register(
        &app,
        &app.platform,
        format!("{base}/broken"),
        json!(["coupon.claimed"]),
    )
    .await;
    let bad = app
        .post(
            "/v1/webhooks",
            &app.platform,
            json!({"url": "ftp://x", "event_types": ["*"]}),
        )
        .await;
    assert_eq!(
        (bad.status, bad.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_url")
    );
    let bad = app
        .post(
            "/v1/webhooks",
            &app.platform,
            json!({"url": base.clone(), "event_types": ["nope"]}),
        )
        .await;
    assert_eq!(
        (bad.status, bad.body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("event_types[0]"))
    );
    assert!(
        app.get(&format!("/v1/webhooks/{platform}"), &app.platform)
            .await
            .body["secret"]
            .is_null(),
        "shown once"
    );
    assert_eq!(
        app.get(&format!("/v1/webhooks/{m1}"), app.m2())
            .await
            .status,
        StatusCode::NOT_FOUND
    );

    // A claim of merchant 1's template.
    let t = live(&app, 10, 1, json!({})).await;
    let claim = app
        .call(
            Method::POST,
            &format!("/v1/templates/{t}/claims"),
            Some(&app.user),
            None,
        )
        .await;
    assert_eq!(claim.status, StatusCode::CREATED);

    let clock = Arc::new(app.clock.clone());
    let observers: Vec<Arc<dyn Observer>> = vec![Arc::new(WebhookFanout::new(
        app.store.clone(),
        clock.clone(),
    ))];
    let dispatcher = Dispatcher::new(app.store.clone(), clock.clone(), observers, "test");
    // Four events: the template's status (`scheduled`, announced when it was published), its
    // opening (`active` and `listing.coupons_changed`, announced by the claim before the
    // claim's own) and the claim. On PostgreSQL an event is readable once older transactions
    // in the cluster end.
    let mut drained = 0;
    for _ in 0..1000 {
        drained += dispatcher.drain().await.unwrap();
        if drained >= 4 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let retry = RetryPolicy {
        base: std::time::Duration::from_secs(1),
        max_attempts: 3,
    };
    let sender = sender(
        &app,
        SenderSettings {
            retry,
            ..SenderSettings::default()
        },
    );

    // First passes: merchant 1 takes the claim and its template's events; the platform's
    // endpoint and the broken one answer 500.
    assert_eq!(sender.run_once().await.unwrap(), 4);
    assert_eq!(sender.run_once().await.unwrap(), 2);
    assert_eq!(
        sender.run_once().await.unwrap(),
        0,
        "nothing due before the backoff"
    );
    app.clock.advance(time::Duration::seconds(1));
    assert_eq!(sender.run_once().await.unwrap(), 2);
    app.clock.advance(time::Duration::seconds(2));
    assert_eq!(sender.run_once().await.unwrap(), 2);
    app.clock.advance(time::Duration::seconds(60));
    assert_eq!(sender.run_once().await.unwrap(), 0, "delivered or given up");

    let log = app
        .get(
            &format!("/v1/webhooks/{platform}/deliveries"),
            &app.platform,
        )
        .await;
    let d = &log.body["items"][0];
    assert_eq!(
        (d["state"].as_str(), d["event_type"].as_str()),
        (Some("delivered"), Some("coupon.claimed"))
    );
    let statuses: Vec<i64> = d["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].as_i64().unwrap())
        .collect();
    assert_eq!(statuses, vec![500, 500, 200]);
    let gave_up = app
        .get(&format!("/v1/webhooks/{broken}/deliveries"), &app.platform)
        .await;
    assert_eq!(gave_up.body["items"][0]["state"], "failed");
    assert_eq!(
        gave_up.body["items"][0]["attempts"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    {
        let inbox = inbox.lock().unwrap();
        // Every attempt carried the same body and a signature that verifies with the secret.
        for (headers, body) in &inbox.got["platform"] {
            let sig = headers["coupond-signature"].to_str().unwrap();
            let t: i64 = sig
                .strip_prefix("t=")
                .unwrap()
                .split(',')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(sig, signature(&secret, t, body));
            assert_eq!(headers["coupond-event"], "coupon.claimed");
            let event: Value = serde_json::from_str(body).unwrap();
            assert_eq!(event["data"]["coupon_id"], claim.body["id"]);
            assert_eq!(event["type"], "coupon.claimed");
        }
        assert_eq!(inbox.got["platform"].len(), 3);
        // Merchant 1 got its template's events (the claim); merchant 2 nothing.
        let m1_types: Vec<String> = inbox.got["m1"]
            .iter()
            .map(|(h, _)| h["coupond-event"].to_str().unwrap().to_owned())
            .collect();
        assert!(
            m1_types.contains(&"coupon.claimed".to_owned()),
            "{m1_types:?}"
        );
        assert!(!inbox.got.contains_key("m2"));
    }

    // Disabling stops it.
    let r = app
        .call(
            Method::POST,
            &format!("/v1/webhooks/{m1}/disable"),
            Some(app.m1()),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body["disabled_at"].is_string());
    let listed = app.get("/v1/webhooks", app.m1()).await;
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 1);
    assert_eq!(
        app.get("/v1/webhooks", &app.platform).await.body["items"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}

/// The ids of a page of endpoints, and its next cursor.
async fn listed(app: &TestApp, cred: &str, query: &str) -> (Vec<i64>, Option<String>) {
    let r = app.get(&format!("/v1/webhooks{query}"), cred).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let ids = r.body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a page: {}", r.body))
        .iter()
        .map(|w| w["id"].as_i64().unwrap())
        .collect();
    (ids, r.body["next_cursor"].as_str().map(str::to_owned))
}

#[tokio::test]
async fn the_list_pages_like_every_other_list() {
    let app = app_with_loopback_hooks(Backend::Sqlite).await.unwrap();
    let mut platform = vec![];
    for i in 0..3 {
        let url = format!("http://127.0.0.1:9/p{i}");
        platform.push(register(&app, &app.platform, url, json!(["*"])).await.0);
    }
    let (m1, _) = register(&app, app.m1(), "http://127.0.0.1:9/m1".into(), json!(["*"])).await;
    platform.push(m1);

    let (first, cursor) = listed(&app, &app.platform, "?limit=2").await;
    assert_eq!(first, platform[..2]);
    let cursor = cursor.expect("a next page");
    let (second, end) = listed(&app, &app.platform, &format!("?limit=2&cursor={cursor}")).await;
    assert_eq!((second, end), (platform[2..].to_vec(), None));
    // A merchant pages through its own only.
    assert_eq!(listed(&app, app.m1(), "?limit=1").await, (vec![m1], None));
    assert_eq!(listed(&app, app.m2(), "").await, (vec![], None));
    for bad in ["?limit=0", "?cursor=nope", "?page=2"] {
        let r = app.get(&format!("/v1/webhooks{bad}"), &app.platform).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}: {}", r.body);
    }
}
