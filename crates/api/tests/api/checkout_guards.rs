//! What checkout refuses and replays over HTTP: quotes never reach past the user's own
//! wallet, and write routes with an idempotency key replay their first answer.

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::checkout::{claim, lease, template};
use crate::support::*;

#[tokio::test]
async fn quotes_stay_within_the_users_wallet() {
    let app = TestApp::new().await;
    let t = template(
        &app,
        json!({"kind": "amount_off", "amount": 50000}),
        "upfront",
        "stackable",
    )
    .await;
    let mine = claim(&app, t).await;
    let mut order = lease(&app);
    order["user_id"] = json!("u-2");
    let r = app
        .post("/v1/quotes", &app.user, json!({"order": order.clone()}))
        .await;
    assert_eq!(
        (r.status, r.code(), r.body["field"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            "not_allowed",
            Some("order.user_id")
        )
    );
    // Another user's coupon is answered like one that does not exist.
    let r = app
        .post(
            "/v1/quotes",
            &app.service,
            json!({"order": order, "coupon_ids": [mine]}),
        )
        .await;
    let missing = app
        .post(
            "/v1/quotes",
            &app.service,
            json!({"order": lease(&app), "coupon_ids": [999999]}),
        )
        .await;
    assert_eq!(
        (r.status, r.code(), r.body["field"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_coupon",
            Some("coupon_ids[0]")
        )
    );
    assert_eq!(
        (missing.code(), missing.body["detail"].clone()),
        (r.code(), r.body["detail"].clone())
    );
    // A code not redeemed yet: what its coupon would take off, outside the combination.
    let coded = template(
        &app,
        json!({"kind": "free_days", "days": 7}),
        "upfront",
        "stackable",
    )
    .await;
    let r = app
        .call(
            Method::PUT,
            &format!("/v1/templates/{coded}/code"),
            Some(app.m1()),
            Some(json!({"code": "MOVEIN"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = app
        .post(
            "/v1/quotes",
            &app.user,
            json!({"order": lease(&app), "code": "move-in"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        r.body["code"],
        json!({"code": "MOVEIN", "template_id": coded, "applicable": true, "reasons": [], "discount": 70000})
    );
    assert_eq!(r.body["best"]["discount"], 50000, "only the coupon held");
    let r = app
        .post(
            "/v1/quotes",
            &app.user,
            json!({"order": lease(&app), "code": "NOSUCH"}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::NOT_FOUND, "invalid_code")
    );
    let mut bad = lease(&app);
    bad["lines"][1]["quantity"] = json!(0);
    let r = app
        .post("/v1/quotes", &app.service, json!({"order": bad}))
        .await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("order.lines[1].quantity")
        ),
        "{}",
        r.body
    );
}

#[tokio::test]
async fn write_routes_replay_their_first_answer() {
    let app = TestApp::new().await;
    let send = |key: &'static str, name: &'static str| {
        let app = &app;
        async move {
            let req = axum::http::Request::builder()
                .method("POST")
                .uri("/v1/merchants")
                .header("authorization", format!("Bearer {}", app.platform))
                .header("content-type", "application/json")
                .header("idempotency-key", key)
                .body(axum::body::Body::from(
                    json!({"name": name, "short_name": "S", "cities": [1]}).to_string(),
                ))
                .unwrap();
            app.send(req).await
        }
    };
    let first = send("k-1", "Harbour Homes").await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    assert_eq!(first.headers["idempotent-replayed"], "false");
    let again = send("k-1", "Harbour Homes").await;
    assert_eq!(
        (again.status, &again.body),
        (StatusCode::CREATED, &first.body)
    );
    assert_eq!(again.headers["idempotent-replayed"], "true");
    let other = send("k-1", "Someone Else").await;
    assert_eq!(
        (other.status, other.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "idempotency_key_reused")
    );
    let fresh = send("k-2", "Harbour Homes").await;
    assert_ne!(
        fresh.body["id"], first.body["id"],
        "another key is another request"
    );
    // Refusals are answers too: replayed, and nothing is written by the retry.
    let bad = || {
        let req = axum::http::Request::builder()
            .method("POST")
            .uri("/v1/merchants")
            .header("authorization", format!("Bearer {}", app.platform))
            .header("content-type", "application/json")
            .header("idempotency-key", "k-3")
            .body(axum::body::Body::from(json!({"name": ""}).to_string()))
            .unwrap();
        app.send(req)
    };
    let (a, b) = (bad().await, bad().await);
    assert_eq!(
        (a.status, b.status),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            StatusCode::UNPROCESSABLE_ENTITY
        )
    );
    assert_eq!(b.headers["idempotent-replayed"], "true");
    // The key is scoped to the principal and the route: another caller's "k-1" is its own.
    let req = axum::http::Request::builder()
        .method("POST")
        .uri("/v1/listings")
        .header("authorization", format!("Bearer {}", app.m1()))
        .header("content-type", "application/json")
        .header("idempotency-key", "k-1")
        .body(axum::body::Body::from(
            json!({"city_id": 1, "category_id": 1, "title": "Loft", "price": 1, "deposit": 0})
                .to_string(),
        ))
        .unwrap();
    let listing = app.send(req).await;
    assert_eq!(
        (
            listing.status,
            listing.headers["idempotent-replayed"].to_str().unwrap()
        ),
        (StatusCode::CREATED, "false"),
        "{}",
        listing.body
    );
}
