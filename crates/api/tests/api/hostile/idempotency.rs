//! Item 5: stored idempotent answers cannot fill the disk: side-effect-free routes store
//! nothing, answers are bounded in size, and keyed writes are limited per user and merchant.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use coupond_api::ratelimit::Rate;
use coupond_api::AppSettings;
use serde_json::{json, Value};
use sqlx::Connection;

use crate::claims::live;
use crate::support::*;

fn keyed(method: Method, path: &str, cred: &str, key: &str, body: &Value) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {cred}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header("idempotency-key", key)
        .body(Body::from(body.to_string()))
        .unwrap()
}

/// Rows in the idempotency table and the database's size in pages.
async fn footprint(app: &TestApp) -> (i64, i64) {
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(app.sqlite_path().unwrap());
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap();
    let rows = sqlx::query_scalar("SELECT count(*) FROM idempotency")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let pages = sqlx::query_scalar("PRAGMA page_count")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    (rows, pages)
}

#[tokio::test]
async fn quotes_with_fresh_keys_store_nothing() {
    let app = TestApp::new().await;
    let t = live(&app, 100, 5, json!({})).await;
    for _ in 0..5 {
        let r = app
            .call(
                Method::POST,
                &format!("/v1/templates/{t}/claims"),
                Some(&app.user),
                None,
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED);
    }
    let m = app.merchants[0].0.get();
    let body = json!({"order": {"user_id": "u-1", "city_id": 1, "lines": [
        {"product_id": "p", "merchant_id": m, "category_id": 1, "unit_price": 500000,
         "quantity": 1, "kind": "rent"}]}});
    let (rows_before, pages_before) = footprint(&app).await;
    for i in 0..2_000 {
        let r = app
            .send(keyed(
                Method::POST,
                "/v1/quotes",
                &app.user,
                &format!("q-{i}"),
                &body,
            ))
            .await;
        assert_eq!(r.status, StatusCode::OK);
        assert!(!r.headers.contains_key("idempotent-replayed"));
    }
    let (rows_after, pages_after) = footprint(&app).await;
    assert_eq!(rows_after, rows_before);
    assert!(
        pages_after <= pages_before + 2,
        "{pages_before} -> {pages_after} pages"
    );
}

#[tokio::test]
async fn answers_past_the_size_bound_are_not_kept() {
    let app = TestApp::with_settings(
        Backend::Sqlite,
        AppSettings {
            idempotency_max_answer_bytes: 64,
            ..AppSettings::default()
        },
    )
    .await
    .unwrap();
    let body = json!({"name": "Lakeside Flats", "short_name": "Lakeside", "cities": [1]});
    let first = app
        .send(keyed(
            Method::POST,
            "/v1/merchants",
            &app.platform,
            "m-1",
            &body,
        ))
        .await;
    assert_eq!(first.status, StatusCode::CREATED);
    let again = app
        .send(keyed(
            Method::POST,
            "/v1/merchants",
            &app.platform,
            "m-1",
            &body,
        ))
        .await;
    assert_eq!(
        (again.status, again.code()),
        (StatusCode::CONFLICT, "idempotency_answer_not_kept")
    );
    assert_eq!(again.headers["idempotent-replayed"], "true");
    // It ran once: the key still holds (a second merchant was not made).
    let again = app
        .send(keyed(
            Method::POST,
            "/v1/merchants",
            &app.platform,
            "m-1",
            &body,
        ))
        .await;
    assert_eq!(again.code(), "idempotency_answer_not_kept");
}

#[tokio::test]
async fn keyed_writes_are_limited_per_user_and_merchant_but_not_for_operators() {
    let app = TestApp::with_settings(
        Backend::Sqlite,
        AppSettings {
            idempotency_rate: Rate {
                per_second: 1,
                burst: 3,
            },
            ..AppSettings::default()
        },
    )
    .await
    .unwrap();
    let listing = |i: usize| json!({"city_id": 1, "category_id": 1, "title": format!("Flat {i}"), "price": 1000});
    let mut statuses = vec![];
    for i in 0..4 {
        let r = app
            .send(keyed(
                Method::POST,
                "/v1/listings",
                app.m1(),
                &format!("l-{i}"),
                &listing(i),
            ))
            .await;
        statuses.push(r.status);
    }
    assert_eq!(
        statuses,
        [
            StatusCode::CREATED,
            StatusCode::CREATED,
            StatusCode::CREATED,
            StatusCode::TOO_MANY_REQUESTS
        ]
    );
    // Without a key nothing is stored, so nothing is limited.
    let r = app.post("/v1/listings", app.m1(), listing(9)).await;
    assert_eq!(r.status, StatusCode::CREATED);
    // The other merchant and the platform are not held back by merchant 1.
    let r = app
        .send(keyed(
            Method::POST,
            "/v1/listings",
            app.m2(),
            "l-0",
            &json!({"city_id": 3,
            "category_id": 1, "title": "Loft", "price": 1000}),
        ))
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    for i in 0..10 {
        let body = json!({"name": format!("M{i}"), "short_name": "M", "cities": [1]});
        let r = app
            .send(keyed(
                Method::POST,
                "/v1/merchants",
                &app.platform,
                &format!("p-{i}"),
                &body,
            ))
            .await;
        assert_eq!(r.status, StatusCode::CREATED);
    }
}
