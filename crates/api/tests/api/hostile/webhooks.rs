//! Items 3, 4 and 13 (webhook secrets): no webhooks to internal addresses, checked at
//! registration and again at delivery; failures that do not tell a closed port from an open
//! one; a cap per owner; a slow receiver delays only itself; replays never carry the secret.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{header, Method, Request, StatusCode};
use coupond_api::AppSettings;
use coupond_engine::{SenderSettings, TargetPolicy, WebhookSender};
use coupond_store::NewDelivery;
use serde_json::{json, Value};
use sqlx::Connection;

use crate::support::*;
use crate::webhooks::{app_with_loopback_hooks, sender};

async fn register(app: &TestApp, cred: &str, url: &str) -> crate::support::Reply {
    app.post(
        "/v1/webhooks",
        cred,
        json!({"url": url, "event_types": ["*"]}),
    )
    .await
}

#[tokio::test]
async fn internal_targets_are_refused_in_every_spelling() {
    let app = TestApp::new().await;
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1:6379/",
        "http://[fd00::1]/",
        "http://127.0.0.1:8080/",
        "http://localhost/",
        "http://[::1]/",
        "http://127.1/",
        "http://2130706433/",
        "http://0x7f000001/",
        "http://0/",
        "http://192.168.1.20/hook",
        "http://[::ffff:127.0.0.1]/",
    ] {
        let r = register(&app, app.m1(), url).await;
        assert_eq!(
            (r.status, r.code(), r.body["field"].as_str()),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                "url_not_allowed",
                Some("url")
            ),
            "{url}: {}",
            r.body
        );
    }
    assert!(app.store.list_webhooks(None).await.unwrap().is_empty());
    // A public address is fine (nothing is sent at registration).
    let r = register(&app, app.m1(), "http://93.184.216.34:8080/hook").await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
}

/// A delivery's attempts, as a merchant reads them.
async fn attempts(app: &TestApp, cred: &str, hook: i64) -> Vec<Value> {
    let r = app
        .get(&format!("/v1/webhooks/{hook}/deliveries"), cred)
        .await;
    r.body["items"][0]["attempts"].as_array().unwrap().clone()
}

async fn queue_one(app: &TestApp, hook: i64, event: i64) {
    app.store
        .enqueue_deliveries(
            &[NewDelivery {
                webhook_id: hook,
                event_id: event,
                event_type: "coupon.claimed".into(),
                payload: "{}".into(),
            }],
            app.clock.now_ts(),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn deliveries_check_the_address_again_and_fail_alike() {
    // Registered while the deployment allowed loopback (or while a name pointed elsewhere) ...
    let app = app_with_loopback_hooks(Backend::Sqlite).await.unwrap();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    // Accepts connections and never answers.
    tokio::spawn(async move {
        let mut held = vec![];
        while let Ok((s, _)) = silent.accept().await {
            held.push(s);
        }
    });
    let mut hooks = vec![];
    for url in [
        format!("http://{closed}/"),
        format!("http://{silent_addr}/"),
        format!("http://localhost:{}/", silent_addr.port()),
    ] {
        let r = register(&app, app.m1(), &url).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        hooks.push(r.body["id"].as_i64().unwrap());
    }
    for (i, h) in hooks.iter().enumerate() {
        queue_one(&app, *h, i as i64 + 1).await;
    }
    // A closed port and a silent one read the same to the merchant: "delivery failed".
    let open = sender(
        &app,
        SenderSettings {
            timeout: Duration::from_millis(500),
            ..SenderSettings::default()
        },
    );
    assert_eq!(open.run_once().await.unwrap(), 3);
    let first = attempts(&app, app.m1(), hooks[0]).await;
    let second = attempts(&app, app.m1(), hooks[1]).await;
    let strip = |a: &Value| json!({"status": a["status"], "error": a["error"]});
    assert_eq!(
        strip(&first[0]),
        json!({"status": null, "error": "delivery failed"})
    );
    assert_eq!(strip(&first[0]), strip(&second[0]));

    // ... and once the deployment no longer allows it, deliveries refuse to connect at all:
    // an address given literally, and a name that resolves to loopback.
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel();
    let receiver = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = receiver.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((s, _)) = receiver.accept().await {
            let _ = seen_tx.send(s.peer_addr().ok());
        }
    });
    let mut later = vec![];
    for url in [
        format!("http://127.0.0.1:{port}/"),
        format!("http://localhost:{port}/"),
    ] {
        let r = register(&app, app.m2(), &url).await;
        later.push(r.body["id"].as_i64().unwrap());
    }
    for (i, h) in later.iter().enumerate() {
        queue_one(&app, *h, 100 + i as i64).await;
    }
    let strict = WebhookSender::new(
        app.store.clone(),
        Arc::new(app.clock.clone()),
        SenderSettings::default(),
        Arc::new(TargetPolicy::default()),
        "test",
    );
    app.clock.advance(time::Duration::hours(1));
    strict.run_once().await.unwrap();
    for h in &later {
        let a = attempts(&app, app.m2(), *h).await;
        assert_eq!(
            strip(&a[0]),
            json!({"status": null, "error": "delivery failed"})
        );
    }
    assert!(
        seen_rx.try_recv().is_err(),
        "nothing connected to the receiver"
    );
}

#[tokio::test]
async fn each_owner_has_a_bounded_number_of_webhooks() {
    let app = TestApp::with_settings(
        Backend::Sqlite,
        AppSettings {
            max_webhooks_per_owner: 2,
            ..AppSettings::default()
        },
    )
    .await
    .unwrap();
    let url = "http://93.184.216.34/hook";
    let first = register(&app, app.m1(), url).await.body["id"]
        .as_i64()
        .unwrap();
    assert_eq!(
        register(&app, app.m1(), url).await.status,
        StatusCode::CREATED
    );
    let r = register(&app, app.m1(), url).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "webhook_limit")
    );
    // Others have their own allowance; a disabled endpoint frees a place.
    assert_eq!(
        register(&app, app.m2(), url).await.status,
        StatusCode::CREATED
    );
    assert_eq!(
        register(&app, &app.platform, url).await.status,
        StatusCode::CREATED
    );
    let r = app
        .call(
            Method::POST,
            &format!("/v1/webhooks/{first}/disable"),
            Some(app.m1()),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        register(&app, app.m1(), url).await.status,
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn a_replayed_registration_does_not_hand_out_the_secret_again() {
    let app = TestApp::new().await;
    let send = || {
        let req = Request::builder()
            .method(Method::POST)
            .uri("/v1/webhooks")
            .header(header::AUTHORIZATION, format!("Bearer {}", app.m1()))
            .header(header::CONTENT_TYPE, "application/json")
            .header("idempotency-key", "hook-1")
            .body(axum::body::Body::from(
                json!({"url": "http://93.184.216.34/h", "event_types": ["*"]}).to_string(),
            ))
            .unwrap();
        app.send(req)
    };
    let first = send().await;
    assert_eq!(first.status, StatusCode::CREATED);
    let secret = first.body["secret"].as_str().unwrap().to_owned();
    let again = send().await;
    assert_eq!(again.status, StatusCode::CREATED);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body["id"], first.body["id"]);
    assert!(again.body.get("secret").is_none(), "{}", again.body);
    // Nor is it kept where replays come from.
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(app.sqlite_path().unwrap());
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap();
    let stored: Vec<Vec<u8>> = sqlx::query_scalar("SELECT COALESCE(body, x'') FROM idempotency")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
    assert!(!String::from_utf8_lossy(&stored[0]).contains(&secret));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_receiver_delays_only_its_own_deliveries() {
    let app = app_with_loopback_hooks(Backend::Sqlite).await.unwrap();
    // The slow receiver takes 5 s to answer; the fast one records when each delivery came.
    let slow = axum::Router::new().route(
        "/",
        axum::routing::post(|| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            StatusCode::OK
        }),
    );
    let (fast_url, arrivals) = recorder().await;
    let urls = [serve_on_loopback(slow).await, fast_url];
    let slow_hook = register(&app, app.m1(), &urls[0]).await.body["id"]
        .as_i64()
        .unwrap();
    let fast_hook = register(&app, app.m2(), &urls[1]).await.body["id"]
        .as_i64()
        .unwrap();
    // The slow endpoint's deliveries are older: a sender that went in order would send them
    // first and make the fast endpoint wait 5 s for each.
    for e in 1..=6 {
        queue_one(&app, slow_hook, e).await;
    }
    for e in 7..=9 {
        queue_one(&app, fast_hook, e).await;
    }
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let started = Instant::now();
    let running = tokio::spawn(sender(&app, SenderSettings::default()).run(stop_rx));
    // Wait (bounded) for the fast receiver's three deliveries.
    let deadline = started + Duration::from_secs(20);
    while arrivals.lock().unwrap().len() < 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let got = arrivals.lock().unwrap().clone();
    assert_eq!(got.len(), 3);
    for at in got {
        let waited = at - started;
        assert!(
            waited < Duration::from_secs(1),
            "a fast delivery waited {waited:?}"
        );
    }
    stop_tx.send(true).unwrap();
    running.await.unwrap();
}

/// A receiver on a loopback port that answers 200 at once and records when each delivery
/// came; its URL and the record.
async fn recorder() -> (String, Arc<std::sync::Mutex<Vec<Instant>>>) {
    let arrivals = Arc::new(std::sync::Mutex::new(Vec::<Instant>::new()));
    let log = arrivals.clone();
    let fast = axum::Router::new().route(
        "/",
        axum::routing::post(move || {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(Instant::now());
                StatusCode::OK
            }
        }),
    );
    (serve_on_loopback(fast).await, arrivals)
}

/// Serves `router` on a loopback port; its URL.
async fn serve_on_loopback(router: axum::Router) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, router).await });
    url
}

/// Two merchants with four slow receivers each and a backlog older than anyone else's: with
/// `concurrency` 8 they once took every slot; now each owner has at most `per_owner`, owners
/// take turns, and the platform's three deliveries arrive within 2 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_owners_slow_receivers_delay_only_that_owner() {
    let app = app_with_loopback_hooks(Backend::Sqlite).await.unwrap();
    let slow = axum::Router::new().route(
        "/",
        axum::routing::post(|| async {
            tokio::time::sleep(Duration::from_secs(4)).await;
            StatusCode::OK
        }),
    );
    let slow_url = serve_on_loopback(slow).await;
    let (fast_url, arrivals) = recorder().await;
    let mut event = 0;
    for merchant in [app.m1().to_owned(), app.m2().to_owned()] {
        for n in 0..4 {
            let url = format!("{slow_url}?hook={n}");
            let hook = register(&app, &merchant, &url).await.body["id"]
                .as_i64()
                .unwrap();
            for _ in 0..4 {
                event += 1;
                queue_one(&app, hook, event).await;
            }
        }
    }
    let platform_hook = register(&app, &app.platform, &fast_url).await.body["id"]
        .as_i64()
        .unwrap();
    for _ in 0..3 {
        event += 1;
        queue_one(&app, platform_hook, event).await;
    }
    let settings = SenderSettings {
        concurrency: 8,
        per_endpoint: 2,
        per_owner: 3,
        ..SenderSettings::default()
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let started = Instant::now();
    let running = tokio::spawn(sender(&app, settings).run(stop_rx));
    let deadline = started + Duration::from_secs(20);
    while arrivals.lock().unwrap().len() < 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let got = arrivals.lock().unwrap().clone();
    assert_eq!(got.len(), 3, "the platform's deliveries never all arrived");
    for at in got {
        let waited = at - started;
        assert!(
            waited < Duration::from_secs(2),
            "the platform's delivery waited {waited:?} behind the merchants' slow receivers"
        );
    }
    stop_tx.send(true).unwrap();
    running.await.unwrap();
}
