//! Background work between tenants: each owner may have a bounded amount of work waiting
//! (codes, issuance users; past it 409 `queue_full`), and owners' jobs run a chunk each in
//! turn, so one merchant's backlog does not hold another merchant's small job.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use coupond_api::AppSettings;
use serde_json::{json, Value};

use crate::support::*;

/// A published template of the merchant `cred` belongs to (serving `city`), claimable now.
async fn template_of(app: &TestApp, cred: &str, city: i64) -> i64 {
    let mut body = standalone_template(10, 20);
    body["cities"] = json!([city]);
    body["total_stock"] = json!(10_000);
    body["per_user_limit"] = json!(1);
    let r = app.post("/v1/templates", cred, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.body["id"].as_i64().unwrap();
    let r = app
        .post(&format!("/v1/templates/{id}/publish"), cred, json!({}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    id
}

async fn app(settings: AppSettings) -> (TestApp, i64, i64) {
    let app = TestApp::with_settings(Backend::Sqlite, settings)
        .await
        .unwrap();
    let (m1, m2) = (app.m1().to_owned(), app.m2().to_owned());
    let t1 = template_of(&app, &m1, 1).await;
    let t2 = template_of(&app, &m2, 3).await;
    app.clock
        .set(coupond_domain::Timestamp::parse(&at(15)).unwrap());
    (app, t1, t2)
}

async fn batch(app: &TestApp, cred: &str, template: i64, count: u32) -> (StatusCode, Value) {
    let path = format!("/v1/templates/{template}/codes");
    let r = app.post(&path, cred, json!({ "count": count })).await;
    (r.status, r.body)
}

#[tokio::test]
async fn code_batches_are_capped_per_owner_and_owners_take_turns() {
    let settings = AppSettings {
        max_queued_codes_per_owner: 2_500,
        code_batch_sync_max: 10,
        ..AppSettings::default()
    };
    let (app, t1, t2) = app(settings).await;
    let (m1, m2) = (app.m1().to_owned(), app.m2().to_owned());
    let (first, _) = batch(&app, &m1, t1, 1_000).await;
    let (second, b) = batch(&app, &m1, t1, 1_000).await;
    assert_eq!(
        (first, second),
        (StatusCode::ACCEPTED, StatusCode::ACCEPTED)
    );
    let m1_second = b["id"].as_i64().unwrap();
    let (status, body) = batch(&app, &m1, t1, 1_000).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("queue_full")),
        "{body}"
    );
    // Merchant 2 has a queue of its own, and its batch, made last, is generated second.
    let (status, b) = batch(&app, &m2, t2, 1_000).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{b}");
    let m2_batch = b["id"].as_i64().unwrap();
    let generated = |id: i64, cred: String| {
        let app = &app;
        async move {
            let r = app.get(&format!("/v1/code-batches/{id}"), &cred).await;
            r.body["generated"].as_u64().unwrap()
        }
    };
    for _ in 0..2 {
        let step = app.state.code_generator().run_once().await.unwrap();
        assert!(step.is_some());
    }
    assert_eq!(
        generated(m2_batch, m2.clone()).await,
        1_000,
        "merchant 2 waited"
    );
    assert_eq!(generated(m1_second, m1.clone()).await, 0);
    // Once merchant 1's work is done, its queue has room again.
    while app
        .state
        .code_generator()
        .run_once()
        .await
        .unwrap()
        .is_some()
    {}
    assert_eq!(batch(&app, &m1, t1, 1_000).await.0, StatusCode::ACCEPTED);
}

async fn upload(app: &TestApp, cred: &str, template: i64, users: &[&str]) -> (StatusCode, Value) {
    let req = Request::builder()
        .method("POST")
        .uri(format!("/v1/templates/{template}/issuances"))
        .header("authorization", format!("Bearer {cred}"))
        .header("content-type", "text/csv")
        .body(Body::from(users.join("\n")))
        .unwrap();
    let r = app.send(req).await;
    (r.status, r.body)
}

#[tokio::test]
async fn issuance_jobs_are_capped_per_owner_and_owners_take_turns() {
    let settings = AppSettings {
        max_queued_issuance_per_owner: 6,
        ..AppSettings::default()
    };
    let (app, t1, t2) = app(settings).await;
    let (m1, m2) = (app.m1().to_owned(), app.m2().to_owned());
    let (s1, _) = upload(&app, &m1, t1, &["u-1", "u-2", "u-3"]).await;
    let (s2, job) = upload(&app, &m1, t1, &["u-4", "u-5", "u-6"]).await;
    assert_eq!(
        (s1, s2),
        (StatusCode::ACCEPTED, StatusCode::ACCEPTED),
        "{job}"
    );
    let m1_second = job["id"].as_i64().unwrap();
    let (status, body) = upload(&app, &m1, t1, &["u-7"]).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("queue_full")),
        "{body}"
    );
    let (status, job) = upload(&app, &m2, t2, &["u-8", "u-9"]).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{job}");
    let m2_job = job["id"].as_i64().unwrap();
    for _ in 0..2 {
        assert!(app
            .state
            .issuance_worker()
            .run_once()
            .await
            .unwrap()
            .is_some());
    }
    let state = |id: i64, cred: String| {
        let app = &app;
        async move {
            let r = app.get(&format!("/v1/issuances/{id}"), &cred).await;
            r.body["state"].as_str().unwrap().to_owned()
        }
    };
    assert_eq!(state(m2_job, m2).await, "done", "merchant 2 waited");
    assert_eq!(state(m1_second, m1).await, "pending");
}

/// Tag uploads are chunked jobs of the same shape: two uploaders take turns, so the order
/// service's two lines wait one chunk of the platform's 2,500, not all of them.
#[tokio::test]
async fn tag_uploads_take_turns_per_uploader() {
    let (app, _, _) = app(AppSettings::default()).await;
    let tags = |cred: &str, text: String| {
        let req = Request::post("/v1/user-tags")
            .header("authorization", format!("Bearer {cred}"))
            .header("content-type", "text/csv")
            .body(Body::from(text))
            .unwrap();
        app.send(req)
    };
    let many: String = (0..2_500).map(|i| format!("u-{i},vip\n")).collect();
    let big = tags(&app.platform, many).await;
    assert_eq!(big.status, StatusCode::ACCEPTED, "{}", big.body);
    let small = tags(&app.service, "u-1,gold\nu-2,gold\n".to_owned()).await;
    assert_eq!(small.status, StatusCode::ACCEPTED, "{}", small.body);
    for _ in 0..2 {
        assert!(app.state.tag_worker().run_once().await.unwrap().is_some());
    }
    let state = |id: &Value| {
        let app = &app;
        let path = format!("/v1/user-tags/{id}");
        async move { app.get(&path, &app.platform).await.body["state"].clone() }
    };
    assert_eq!(state(&small.body["id"]).await, "done", "the service waited");
    assert_eq!(state(&big.body["id"]).await, "running");
    while app.state.tag_worker().run_once().await.unwrap().is_some() {}
    assert_eq!(state(&big.body["id"]).await, "done");
}
