//! Claims over HTTP: every answer code, wallets, and real concurrency audited afterwards, on
//! SQLite and (when configured) PostgreSQL and MySQL.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use coupond_domain::{TemplateId, Timestamp};
use serde_json::{json, Value};

use crate::support::*;

/// A published standalone template of merchant 1 claimable hours [10, 20), clock at hour 15.
pub(crate) async fn live(app: &TestApp, stock: i64, limit: u32, extra: Value) -> i64 {
    let mut body = standalone_template(10, 20);
    body["total_stock"] = json!(stock);
    body["per_user_limit"] = json!(limit);
    if let Value::Object(more) = extra {
        for (k, v) in more {
            body[k] = v;
        }
    }
    let r = app.post("/v1/templates", app.m1(), body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.body["id"].as_i64().unwrap();
    let r = app
        .post(&format!("/v1/templates/{id}/publish"), app.m1(), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    app.clock.set(Timestamp::parse(&at(15)).unwrap());
    id
}

async fn claim_as_user(app: &TestApp, id: i64) -> Reply {
    app.call(
        Method::POST,
        &format!("/v1/templates/{id}/claims"),
        Some(&app.user),
        None,
    )
    .await
}

#[tokio::test]
async fn users_claim_and_find_coupons_in_their_wallet() {
    let app = TestApp::new().await;
    let id = live(&app, 10, 1, json!({})).await;
    let r = claim_as_user(&app, id).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(
        (r.body["user_id"].as_str(), r.body["status"].as_str()),
        (Some("u-1"), Some("unused"))
    );
    assert_eq!(r.body["template"]["id"], id);
    assert_eq!(
        r.body["valid_until"],
        at(44),
        "the fixture's fixed validity"
    );
    let coupon = r.body["id"].clone();
    let r = claim_as_user(&app, id).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "limit_reached")
    );
    let r = app
        .post(&format!("/v1/templates/{id}/claims"), &app.user, json!({}))
        .await;
    assert_eq!(
        r.code(),
        "limit_reached",
        "an empty JSON object is an empty claim too"
    );

    let wallet = app.get("/v1/me/coupons", &app.user).await;
    assert_eq!(wallet.status, StatusCode::OK, "{}", wallet.body);
    assert_eq!(wallet.body["items"][0]["id"], coupon);
    let wallet = app
        .get("/v1/users/u-1/coupons?status=unused", &app.service)
        .await;
    assert_eq!(wallet.body["items"].as_array().unwrap().len(), 1);
    let wallet = app.get("/v1/users/u-2/coupons", &app.service).await;
    assert_eq!(wallet.body["items"], json!([]));
    app.clock.set(Timestamp::parse(&at(44)).unwrap());
    let expired = app.get("/v1/me/coupons?status=expired", &app.user).await;
    assert_eq!(expired.body["items"][0]["status"], "expired");

    // The order service claims for a named user.
    app.clock.set(Timestamp::parse(&at(15)).unwrap());
    let r = app
        .post(
            &format!("/v1/templates/{id}/claims"),
            &app.service,
            json!({"user_id": "u-2"}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["user_id"].as_str()),
        (StatusCode::CREATED, Some("u-2")),
        "{}",
        r.body
    );
    let r = app
        .post(
            &format!("/v1/templates/{id}/claims"),
            &app.service,
            json!({}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "missing_field")
    );
    let r = app
        .post(
            &format!("/v1/templates/{id}/claims"),
            &app.user,
            json!({"user_id": "u-3"}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("user_id"))
    );
    let r = app
        .post(
            &format!("/v1/templates/{id}/claims"),
            &app.user,
            json!({"stock": 1}),
        )
        .await;
    assert_eq!(r.code(), "unknown_field");
}

#[tokio::test]
async fn wallets_say_when_a_coupon_cannot_be_used_and_why() {
    let app = TestApp::new().await;
    let id = live(&app, 10, 1, json!({})).await;
    let r = claim_as_user(&app, id).await;
    assert_eq!(
        (&r.body["usable"], &r.body["unusable_reasons"]),
        (&json!(true), &json!([])),
        "{}",
        r.body
    );
    // The merchant stops the template: the coupon stays `unused`, and says it cannot be used.
    let r = app
        .post(&format!("/v1/templates/{id}/abort"), app.m1(), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let wallet = app.get("/v1/me/coupons", &app.user).await;
    let c = &wallet.body["items"][0];
    assert_eq!(
        (&c["status"], &c["usable"], &c["unusable_reasons"]),
        (
            &json!("unused"),
            &json!(false),
            &json!(["template_aborted"])
        ),
        "{}",
        wallet.body
    );
    // Past its validity it is expired as well, in the documented order.
    app.clock.set(Timestamp::parse(&at(44)).unwrap());
    let wallet = app.get("/v1/users/u-1/coupons", &app.service).await;
    assert_eq!(
        wallet.body["items"][0]["unusable_reasons"],
        json!(["expired", "template_aborted"])
    );
}

#[tokio::test]
async fn refusals_say_why() {
    let app = TestApp::new().await;
    // Sold out.
    let id = live(&app, 1, 1, json!({})).await;
    let r = app
        .post(
            &format!("/v1/templates/{id}/claims"),
            &app.service,
            json!({"user_id": "a"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let r = app
        .post(
            &format!("/v1/templates/{id}/claims"),
            &app.service,
            json!({"user_id": "b"}),
        )
        .await;
    assert_eq!((r.status, r.code()), (StatusCode::CONFLICT, "sold_out"));
    // Not eligible: a user list that excludes u-1.
    let id = live(
        &app,
        5,
        1,
        json!({"audience": {"type": "users", "ids": ["vip-1"]}}),
    )
    .await;
    // The user is told as its view of the template tells it: absent; the order service is
    // told why.
    assert_eq!(claim_as_user(&app, id).await.code(), "not_found");
    let r = app
        .post(
            &format!("/v1/templates/{id}/claims"),
            &app.service,
            json!({"user_id": "u-1"}),
        )
        .await;
    assert_eq!(r.code(), "not_eligible", "{}", r.body);
    let r = app
        .post(
            &format!("/v1/templates/{id}/claims"),
            &app.service,
            json!({"user_id": "vip-1"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    // A draft is nobody's business but its merchant's: as if it did not exist.
    let draft = app
        .post("/v1/templates", app.m1(), standalone_template(10, 20))
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let r = claim_as_user(&app, draft).await;
    assert_eq!((r.status, r.code()), (StatusCode::NOT_FOUND, "not_found"));
    let id = live(&app, 5, 1, json!({})).await;
    app.clock.set(Timestamp::parse(&at(9)).unwrap());
    assert_eq!(claim_as_user(&app, id).await.body["reason"], "not_started");
    app.clock.set(Timestamp::parse(&at(20)).unwrap());
    assert_eq!(claim_as_user(&app, id).await.body["reason"], "ended");
    app.clock.set(Timestamp::parse(&at(15)).unwrap());
    app.post(&format!("/v1/templates/{id}/abort"), app.m1(), json!({}))
        .await;
    assert_eq!(claim_as_user(&app, id).await.body["reason"], "aborted");
    let r = claim_as_user(&app, 999_999).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

/// Fires `claims` (user ids) at once through the router; returns the answer counts by code
/// and audits the template afterwards.
async fn rush(
    app: Arc<TestApp>,
    id: i64,
    users: Vec<String>,
) -> std::collections::BTreeMap<String, usize> {
    let mut joins = vec![];
    for u in users {
        let app = app.clone();
        joins.push(tokio::spawn(async move {
            let r = app
                .post(
                    &format!("/v1/templates/{id}/claims"),
                    &app.service,
                    json!({"user_id": u}),
                )
                .await;
            if r.status == StatusCode::CREATED {
                "created".to_owned()
            } else {
                r.code().to_owned()
            }
        }));
    }
    let mut counts = std::collections::BTreeMap::new();
    for j in joins {
        *counts.entry(j.await.unwrap()).or_insert(0) += 1;
    }
    // Audit: claimed == coupons issued == acknowledged.
    let t = app
        .store
        .template(TemplateId::new(id).unwrap())
        .await
        .unwrap();
    let issued = app.store.inspect().count_coupons(t.id).await.unwrap();
    let acknowledged = counts.get("created").copied().unwrap_or(0) as i64;
    assert_eq!(
        (t.claimed, issued),
        (acknowledged, acknowledged),
        "{counts:?}"
    );
    assert!(t.claimed <= t.spec.total_stock);
    counts
}

async fn flash_sale(app: TestApp) {
    let app = Arc::new(app);
    let id = live(&app, 50, 1, json!({})).await;
    let counts = rush(app.clone(), id, (0..200).map(|i| format!("u{i}")).collect()).await;
    assert_eq!(counts.get("created"), Some(&50), "{counts:?}");
    assert_eq!(counts.get("sold_out"), Some(&150), "{counts:?}");
    for limit in [1u32, 3] {
        let id = live(&app, 100, limit, json!({})).await;
        let counts = rush(app.clone(), id, vec!["greedy".to_owned(); 50]).await;
        assert_eq!(counts.get("created"), Some(&(limit as usize)), "{counts:?}");
        assert_eq!(
            counts.get("limit_reached"),
            Some(&(50 - limit as usize)),
            "{counts:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flash_sale_is_exact_on_sqlite() {
    flash_sale(TestApp::new().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flash_sale_is_exact_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        flash_sale(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flash_sale_is_exact_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        flash_sale(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_mode_is_exact_too() {
    let settings = coupond_api::AppSettings {
        claim_mode: coupond_engine::ClaimMode::Single,
        ..Default::default()
    };
    let app = TestApp::with_settings(Backend::Sqlite, settings)
        .await
        .unwrap();
    flash_sale(app).await;
}

#[tokio::test]
async fn retries_with_an_idempotency_key_return_the_same_coupon() {
    let app = TestApp::new().await;
    let id = live(&app, 1, 5, json!({})).await;
    let send = |key: &'static str, user: &'static str| {
        let app = &app;
        async move {
            let req = axum::http::Request::builder()
                .method("POST")
                .uri(format!("/v1/templates/{id}/claims"))
                .header("authorization", format!("Bearer {}", app.service))
                .header("content-type", "application/json")
                .header("idempotency-key", key)
                .body(axum::body::Body::from(json!({"user_id": user}).to_string()))
                .unwrap();
            app.send(req).await
        }
    };
    let first = send("order-7", "u-9").await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    assert_eq!(first.headers["idempotent-replayed"], "false");
    // The stock is now gone, yet the retry gets the same coupon.
    let retry = send("order-7", "u-9").await;
    assert_eq!(
        (retry.status, &retry.body["id"]),
        (StatusCode::CREATED, &first.body["id"])
    );
    assert_eq!(retry.headers["idempotent-replayed"], "true");
    let reuse = send("order-7", "u-10").await;
    assert_eq!(
        (reuse.status, reuse.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "idempotency_key_reused")
    );
    assert_eq!(send("order-8", "u-10").await.code(), "sold_out");
    assert_eq!(
        app.store
            .inspect()
            .count_coupons(TemplateId::new(id).unwrap())
            .await
            .unwrap(),
        1
    );
    let bad = app
        .send(
            axum::http::Request::builder()
                .method("POST")
                .uri(format!("/v1/templates/{id}/claims"))
                .header("authorization", format!("Bearer {}", app.user))
                .header("idempotency-key", "")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(
        (bad.status, bad.code()),
        (StatusCode::BAD_REQUEST, "invalid_header")
    );
}

#[tokio::test]
async fn claims_are_rate_limited_per_user_and_per_ip() {
    use coupond_api::ratelimit::Rate;
    let settings = coupond_api::AppSettings {
        claim_rate_per_user: Rate {
            per_second: 1,
            burst: 2,
        },
        claim_rate_per_ip: Rate {
            per_second: 1,
            burst: 3,
        },
        ..Default::default()
    };
    let app = TestApp::with_settings(Backend::Sqlite, settings)
        .await
        .unwrap();
    let id = live(&app, 100, 100, json!({})).await;
    let path = format!("/v1/templates/{id}/claims");
    let for_user = |u: &'static str| app.post(&path, &app.service, json!({"user_id": u}));
    assert_eq!(for_user("a").await.status, StatusCode::CREATED);
    assert_eq!(for_user("a").await.status, StatusCode::CREATED);
    let limited = for_user("a").await;
    assert_eq!(
        (limited.status, limited.code()),
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited")
    );
    let retry_after: u64 = limited.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry_after >= 1);
    assert_eq!(
        for_user("b").await.status,
        StatusCode::CREATED,
        "other users are not affected"
    );
    assert_eq!(
        app.store
            .inspect()
            .count_coupons(TemplateId::new(id).unwrap())
            .await
            .unwrap(),
        3,
        "a 429 writes nothing"
    );

    // Per IP, for user tokens: many users from one address.
    let from_ip = |user: &'static str| {
        let token = coupond_api::JwtKeys::new(SECRET)
            .mint(
                &coupond_domain::UserId::parse(user).unwrap(),
                app.clock.now_ts(),
                time::Duration::hours(1),
            )
            .unwrap();
        let mut req = axum::http::Request::builder()
            .method("POST")
            .uri(format!("/v1/templates/{id}/claims"))
            .header("authorization", format!("Bearer {token}"))
            .body(axum::body::Body::empty())
            .unwrap();
        req.extensions_mut()
            .insert(axum::extract::ConnectInfo(std::net::SocketAddr::from((
                [203, 0, 113, 9],
                4000,
            ))));
        app.send(req)
    };
    for u in ["x1", "x2", "x3"] {
        assert_eq!(from_ip(u).await.status, StatusCode::CREATED);
    }
    assert_eq!(from_ip("x4").await.code(), "rate_limited");
}
