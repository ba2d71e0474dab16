//! User tags and segment issuance over HTTP, on every backend: the platform and the order
//! service write and read tags (merchants and users cannot: the role table), in bulk from a
//! file too; a segment's users get a coupon each, once, by the background worker. Merchants
//! name only the tags the platform shares with them (`shared_tags`).

use axum::http::{Method, Request, StatusCode};
use serde_json::json;

use crate::claims::live;
use crate::shared_tags::share;
use crate::support::*;

async fn bulk(app: &TestApp, text: &str) -> Reply {
    app.send(
        Request::builder()
            .method(Method::POST)
            .uri("/v1/user-tags")
            .header("authorization", format!("Bearer {}", app.platform))
            .header("content-type", "text/csv")
            .body(axum::body::Body::from(text.to_owned()))
            .unwrap(),
    )
    .await
}

async fn tags_and_segments(app: TestApp) {
    let r = app
        .call(
            Method::PUT,
            "/v1/users/u-7/tags",
            Some(&app.service),
            Some(json!({"tags": ["vip", "new", "vip"]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["tags"], json!(["new", "vip"]));
    let r = app.get("/v1/users/u-7/tags", &app.platform).await;
    assert_eq!(r.body, json!({"user_id": "u-7", "tags": ["new", "vip"]}));
    let bad = app
        .call(
            Method::PUT,
            "/v1/users/u-7/tags",
            Some(&app.platform),
            Some(json!({"tags": ["Not A Tag"]})),
        )
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.body);
    let many: Vec<String> = (0..101).map(|i| format!("t{i}")).collect();
    let bad = app
        .call(
            Method::PUT,
            "/v1/users/u-7/tags",
            Some(&app.platform),
            Some(json!({"tags": many})),
        )
        .await;
    assert_eq!(
        (bad.status, bad.body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("tags"))
    );
    assert_eq!(
        app.get("/v1/users/u-7/tags", &app.platform).await.body["tags"],
        json!(["new", "vip"])
    );

    let r = bulk(
        &app,
        "user_id,tag\nu-8,vip\nu-9,vip\nu-9,vip\nu-7,vip\nnot a user,vip\n\nu-10,gold\n",
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(
        (
            &r.body["state"],
            &r.body["lines"],
            &r.body["requested"],
            &r.body["invalid"]
        ),
        (&json!("pending"), &json!(6), &json!(5), &json!(1)),
        "{}",
        r.body
    );
    assert_eq!(r.body["invalid_lines"][0]["line"], 6, "{}", r.body);
    let upload = format!("/v1/user-tags/{}", r.body["id"]);
    assert_eq!(
        r.headers.get("location").and_then(|v| v.to_str().ok()),
        Some(upload.as_str())
    );
    // Nothing is added before the worker runs: the segment is still u-7 alone.
    assert_eq!(
        app.get("/v1/users/u-8/tags", &app.service).await.body["tags"],
        json!([])
    );
    while app.state.tag_worker().run_once().await.unwrap().is_some() {}
    let r = app.get(&upload, &app.service).await;
    assert_eq!(
        (
            &r.body["state"],
            &r.body["handled"],
            &r.body["added"],
            &r.body["present"]
        ),
        (&json!("done"), &json!(5), &json!(3), &json!(2)),
        "{}",
        r.body
    );
    let listed = app.get("/v1/user-tags", &app.platform).await;
    assert_eq!(
        listed.body["items"][0]["id"], r.body["id"],
        "{}",
        listed.body
    );
    let r = bulk(&app, "-1619").await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "no_pairs"),
        "{}",
        r.body
    );
    let r = app
        .send(
            Request::builder()
                .method(Method::POST)
                .uri("/v1/user-tags")
                .header("authorization", format!("Bearer {}", app.platform))
                .header("content-type", "application/json")
                .body(axum::body::Body::from("{}"))
                .unwrap(),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);

    // A segment: u-7, u-8 and u-9 hold `vip`, u-10 `gold`; each gets one coupon (the platform
    // shares both tags with merchants first: `shared_tags`).
    share(&app, "vip").await;
    share(&app, "gold").await;
    let t = live(&app, 10, 1, json!({})).await;
    let path = format!("/v1/templates/{t}/issuances");
    let r = app
        .post(
            &path,
            app.m1(),
            json!({"segment": {"any": ["vip", "gold"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(r.body["requested"], 4, "{}", r.body);
    let job = r.body["id"].as_i64().unwrap();
    let worker = app.state.issuance_worker();
    while worker.run_once().await.unwrap().is_some() {}
    let r = app.get(&format!("/v1/issuances/{job}"), app.m1()).await;
    assert_eq!(
        (r.body["state"].as_str(), r.body["issued"].as_u64()),
        (Some("done"), Some(4)),
        "{}",
        r.body
    );
    let holders = app
        .get(&format!("/v1/templates/{t}/coupons"), app.m1())
        .await;
    let users: Vec<&str> = holders.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["user_id"].as_str().unwrap())
        .collect();
    assert_eq!(users.len(), 4, "{users:?}");
    for u in ["u-7", "u-8", "u-9", "u-10"] {
        assert!(users.contains(&u), "{u} in {users:?}");
    }
    // Again: each user at most once (the per-user limit is 1).
    let r = app
        .post(&path, app.m1(), json!({"segment": {"any": ["vip"]}}))
        .await;
    let job = r.body["id"].as_i64().unwrap();
    while worker.run_once().await.unwrap().is_some() {}
    let r = app.get(&format!("/v1/issuances/{job}"), app.m1()).await;
    assert_eq!(
        (r.body["issued"].as_u64(), r.body["skipped"].as_u64()),
        (Some(0), Some(3)),
        "{}",
        r.body
    );
    let bad = app
        .post(&path, app.m1(), json!({"segment": {"any": ["nobody"]}}))
        .await;
    assert_eq!(
        (bad.status, bad.body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("segment.any")),
        "{}",
        bad.body
    );
    let bad = app
        .post(&path, app.m1(), json!({"segment": {"any": []}}))
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.body);
    let both = json!({"segment": {"any": ["vip"]}, "user_ids": ["u-1"]});
    assert_eq!(
        app.post(&path, app.m1(), both).await.status,
        StatusCode::UNPROCESSABLE_ENTITY
    );
}

/// A template for a tag audience: claimable only by users holding one of its tags when they
/// claim, decided by the claim's transaction.
async fn tag_audience(app: TestApp) {
    share(&app, "vip").await;
    share(&app, "gold").await;
    let t = live(
        &app,
        10,
        1,
        json!({"audience": {"type": "tags", "any": ["vip", "gold", "vip"]}}),
    )
    .await;
    let r = app.get(&format!("/v1/templates/{t}"), app.m1()).await;
    assert_eq!(
        r.body["audience"],
        json!({"type": "tags", "any": ["gold", "vip"]}),
        "{}",
        r.body
    );
    let claims = format!("/v1/templates/{t}/claims");
    let r = app
        .post(&claims, &app.service, json!({"user_id": "u-20"}))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "not_eligible"),
        "{}",
        r.body
    );
    let r = app
        .call(
            Method::PUT,
            "/v1/users/u-20/tags",
            Some(&app.platform),
            Some(json!({"tags": ["gold"]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = app
        .post(&claims, &app.service, json!({"user_id": "u-20"}))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let bad = json!({"audience": {"type": "tags", "any": []}});
    let mut body = standalone_template(10, 20);
    body["audience"] = bad["audience"].clone();
    let r = app.post("/v1/templates", app.m1(), body).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("audience.any")),
        "{}",
        r.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tag_audience_on_sqlite() {
    tag_audience(TestApp::new().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tag_audience_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        tag_audience(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tag_audience_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        tag_audience(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_and_segments_on_sqlite() {
    tags_and_segments(TestApp::new().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_and_segments_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        tags_and_segments(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_and_segments_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        tags_and_segments(app).await;
    }
}

/// An upload retried with its Idempotency-Key answers the job it made (and makes no second
/// one); the key with another file is refused and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tag_uploads_keep_their_key() {
    let app = TestApp::new().await;
    let keyed = |text: &'static str| {
        Request::builder()
            .method(Method::POST)
            .uri("/v1/user-tags")
            .header("authorization", format!("Bearer {}", app.service))
            .header("content-type", "text/csv")
            .header("idempotency-key", "tags-1")
            .body(axum::body::Body::from(text))
            .unwrap()
    };
    let first = app.send(keyed("u-1,vip\n")).await;
    assert_eq!(first.status, StatusCode::ACCEPTED, "{}", first.body);
    let again = app.send(keyed("u-1,vip\n")).await;
    assert_eq!(
        (again.status, &again.body["id"]),
        (StatusCode::ACCEPTED, &first.body["id"])
    );
    assert_eq!(again.headers["idempotent-replayed"], "true");
    let other = app.send(keyed("u-2,vip\n")).await;
    assert_eq!(
        (other.status, other.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "idempotency_key_reused"),
        "{}",
        other.body
    );
    let all = app.get("/v1/user-tags", &app.platform).await;
    assert_eq!(
        all.body["items"].as_array().map(Vec::len),
        Some(1),
        "{}",
        all.body
    );
}
