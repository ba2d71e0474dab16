//! Active users: a user's own requests and `POST /v1/users/{id}/seen` mark them seen (the
//! later instant stands), `GET /v1/users/{id}/seen` reads it, and segment issuance with
//! `active_within_days` picks only users seen within that many days, on every backend.

use axum::http::{Method, StatusCode};
use coupond_domain::Timestamp;
use serde_json::json;

use crate::claims::live;
use crate::support::*;

async fn tag_vip(app: &TestApp, user: &str) {
    let r = app
        .call(
            Method::PUT,
            &format!("/v1/users/{user}/tags"),
            Some(&app.platform),
            Some(json!({"tags": ["vip"]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

async fn active_users(backend: Backend) {
    let Some(app) = TestApp::with_settings(backend, Default::default()).await else {
        return;
    };
    let t = live(&app, 10, 1, json!({})).await; // the clock at hour 15
    let now = at(15);
    for u in ["u-1", "u-7", "u-8", "u-9"] {
        tag_vip(&app, u).await;
    }
    // Never seen: no instant.
    let r = app.get("/v1/users/u-9/seen", &app.service).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body, json!({"user_id": "u-9"}));

    // The order service says u-7 was seen now (no body) and u-8 forty days ago.
    let r = app
        .call(Method::POST, "/v1/users/u-7/seen", Some(&app.service), None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body, json!({"user_id": "u-7", "last_seen_at": now}));
    let long_ago = at(15 - 40 * 24);
    let r = app
        .post("/v1/users/u-8/seen", &app.platform, json!({"at": long_ago}))
        .await;
    assert_eq!(r.body["last_seen_at"], long_ago, "{}", r.body);
    // An earlier instant does not move u-7 back.
    let r = app
        .post("/v1/users/u-7/seen", &app.service, json!({"at": at(1)}))
        .await;
    assert_eq!(r.body["last_seen_at"], now, "{}", r.body);
    // Not in the future.
    let r = app
        .post("/v1/users/u-7/seen", &app.service, json!({"at": at(16)}))
        .await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("at")),
        "{}",
        r.body
    );

    // u-1's own request marks it seen: shown at once (held in memory), stored once flushed.
    app.clock.set(Timestamp::parse(&at(15)).unwrap());
    let r = app.get("/v1/me/coupons", &app.user).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = app.get("/v1/users/u-1/seen", &app.platform).await;
    assert_eq!(r.body["last_seen_at"], now, "{}", r.body);
    assert_eq!(app.store.last_seen(&user("u-1")).await.unwrap(), None);
    app.state.seen().flush().await.unwrap();
    assert_eq!(
        app.store.last_seen(&user("u-1")).await.unwrap(),
        Some(Timestamp::parse(&now).unwrap())
    );

    // Seen within 30 days: u-1 and u-7; u-8 (40 days) and u-9 (never) are left out.
    let path = format!("/v1/templates/{t}/issuances");
    let body = json!({"segment": {"any": ["vip"], "active_within_days": 30}});
    let r = app.post(&path, &app.platform, body).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(r.body["requested"], 2, "{}", r.body);
    let worker = app.state.issuance_worker();
    while worker.run_once().await.unwrap().is_some() {}
    let holders = app
        .get(&format!("/v1/templates/{t}/coupons"), &app.platform)
        .await;
    let mut users: Vec<&str> = holders.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["user_id"].as_str().unwrap())
        .collect();
    users.sort();
    assert_eq!(users, ["u-1", "u-7"], "{}", holders.body);
    // Within 50 days u-8 too (the others hold their one coupon already).
    let body = json!({"segment": {"any": ["vip"], "active_within_days": 50}});
    let r = app.post(&path, &app.platform, body).await;
    assert_eq!(r.body["requested"], 3, "{}", r.body);

    for bad in [json!(0), json!(3651), json!(-1), json!("30")] {
        let body = json!({"segment": {"any": ["vip"], "active_within_days": bad}});
        let r = app.post(&path, &app.platform, body).await;
        assert_eq!(
            (r.status, r.body["field"].as_str()),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                Some("segment.active_within_days")
            ),
            "{bad}: {}",
            r.body
        );
    }
}

fn user(s: &str) -> coupond_domain::UserId {
    coupond_domain::UserId::parse(s).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn active_users_on_sqlite() {
    active_users(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn active_users_on_postgres() {
    active_users(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn active_users_on_mysql() {
    active_users(Backend::Mysql).await;
}
