//! Items 2, 8, 9 and 12: every code lookup shares the redemption limits, shared-code changes
//! are limited per merchant, a failing redemption writes nothing, and drafts are invisible to
//! users and the order service.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use coupond_api::ratelimit::Rate;
use coupond_api::AppSettings;
use serde_json::{json, Value};
use sqlx::Connection;

use crate::claims::live;
use crate::support::*;

fn order(app: &TestApp) -> Value {
    let m = app.merchants[0].0.get();
    json!({
        "user_id": "u-1",
        "city_id": 1,
        "lines": [{"product_id": "p-1", "merchant_id": m, "category_id": 1,
                   "unit_price": 300000, "quantity": 1, "kind": "rent"}]
    })
}

async fn limited_app(settings: AppSettings) -> TestApp {
    TestApp::with_settings(Backend::Sqlite, settings)
        .await
        .unwrap()
}

#[tokio::test]
async fn quotes_that_look_a_code_up_count_against_the_redemption_limits() {
    let app = limited_app(AppSettings {
        redeem_rate_per_user: Rate {
            per_second: 1,
            burst: 5,
        },
        ..AppSettings::default()
    })
    .await;
    let t = live(&app, 10, 1, json!({})).await;
    let r = app
        .call(
            Method::PUT,
            &format!("/v1/templates/{t}/code"),
            Some(app.m1()),
            Some(json!({"code": "RIVER15"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    // Five guesses go through (404 for a wrong code, 200 for the right one) ...
    let mut seen = vec![];
    for guess in ["AAAA1", "AAAA2", "AAAA3", "AAAA4", "RIVER15"] {
        let body = json!({"order": order(&app), "code": guess});
        seen.push(app.post("/v1/quotes", &app.user, body).await.status);
    }
    assert_eq!(seen[..4], [StatusCode::NOT_FOUND; 4]);
    assert_eq!(seen[4], StatusCode::OK);
    // ... then quotes with a code are refused, and so are redemptions: one budget.
    let body = json!({"order": order(&app), "code": "AAAA5"});
    let r = app.post("/v1/quotes", &app.user, body).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited")
    );
    let r = app
        .call(
            Method::POST,
            "/v1/codes/RIVER15/redeem",
            Some(&app.user),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    // A quote without a code looks nothing up and is not limited.
    let r = app
        .post("/v1/quotes", &app.user, json!({"order": order(&app)}))
        .await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test]
async fn shared_code_changes_are_limited_per_merchant_and_say_nothing_of_the_owner() {
    let app = limited_app(AppSettings {
        code_set_rate: Rate {
            per_second: 1,
            burst: 3,
        },
        ..AppSettings::default()
    })
    .await;
    // Merchant 2 owns a code; merchant 1 probes for it.
    let mut body = standalone_template(10, 20);
    body["cities"] = json!([3]);
    let theirs = app.post("/v1/templates", app.m2(), body).await;
    let theirs = theirs.body["id"].as_i64().unwrap();
    let r = app
        .call(
            Method::PUT,
            &format!("/v1/templates/{theirs}/code"),
            Some(app.m2()),
            Some(json!({"code": "SECRET77"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let mine = live(&app, 10, 1, json!({})).await;
    let path = format!("/v1/templates/{mine}/code");
    let put = |code: &'static str| {
        app.call(
            Method::PUT,
            &path,
            Some(app.m1()),
            Some(json!({ "code": code })),
        )
    };
    let taken = put("SECRET77").await;
    assert_eq!(
        (taken.status, taken.code()),
        (StatusCode::CONFLICT, "code_taken")
    );
    // The answer names no template or merchant: it is the same whoever holds the code.
    let mut problem = taken.body.clone();
    problem.as_object_mut().unwrap().remove("request_id");
    assert_eq!(
        problem,
        json!({"type": "urn:coupond:problem:code_taken", "title": "Conflict", "status": 409,
               "code": "code_taken", "detail": "another template uses this code; choose another"})
    );
    assert_eq!(put("GUESS002").await.status, StatusCode::OK);
    assert_eq!(put("GUESS003").await.status, StatusCode::OK);
    let r = put("GUESS004").await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited")
    );
    assert!(r.headers.contains_key("retry-after"));
    // Another merchant's budget is its own.
    let r = app
        .call(
            Method::PUT,
            &format!("/v1/templates/{theirs}/code"),
            Some(app.m2()),
            Some(json!({"code": "SECRET78"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
}

/// Holds SQLite's write lock (as a long background transaction would) until dropped.
async fn hold_the_writer(app: &TestApp) -> sqlx::SqliteConnection {
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(app.sqlite_path().unwrap());
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut conn)
        .await
        .unwrap();
    conn
}

#[tokio::test]
async fn unusable_codes_are_refused_without_a_claim_transaction() {
    let app = TestApp::new().await;
    let t = live(&app, 10, 5, json!({})).await;
    let r = app
        .post(
            &format!("/v1/templates/{t}/codes"),
            app.m1(),
            json!({"count": 2, "prefix": "tm", "length": 8}),
        )
        .await;
    let batch = r.body["id"].as_i64().unwrap();
    let codes: Vec<String> = app
        .store
        .batch_codes(batch, None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.code)
        .collect();
    let used = &codes[0];
    let r = app
        .call(
            Method::POST,
            &format!("/v1/codes/{used}/redeem"),
            Some(&app.service),
            Some(json!({"user_id": "u-2"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let never = coupond_domain::codes::with_check("TMZZZZZZZ").unwrap();

    // With the writer busy, every unusable code is still answered at once, the same way:
    // none of them reaches a write (which would wait for the lock and time out as a 503).
    let writer = hold_the_writer(&app).await;
    for code in [used.as_str(), never.as_str(), "NOPE"] {
        let started = std::time::Instant::now();
        let r = app
            .call(
                Method::POST,
                &format!("/v1/codes/{code}/redeem"),
                Some(&app.user),
                None,
            )
            .await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "invalid_code"),
            "{code}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{code} waited for the writer"
        );
    }
    drop(writer);

    // A code of a template whose claiming is over: the same.
    app.clock
        .set(coupond_domain::Timestamp::parse(&at(25)).unwrap());
    let ended = &codes[1];
    let writer = hold_the_writer(&app).await;
    let r = app
        .call(
            Method::POST,
            &format!("/v1/codes/{ended}/redeem"),
            Some(&app.user),
            None,
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::NOT_FOUND, "invalid_code")
    );
    drop(writer);
}

#[tokio::test]
async fn users_and_the_order_service_cannot_tell_a_draft_from_a_missing_template() {
    let app = TestApp::new().await;
    let draft = app
        .post("/v1/templates", app.m1(), standalone_template(10, 20))
        .await;
    let draft = draft.body["id"].as_i64().unwrap();
    app.clock
        .set(coupond_domain::Timestamp::parse(&at(15)).unwrap());
    for (cred, body) in [
        (app.user.clone(), None),
        (app.service.clone(), Some(json!({"user_id": "u-9"}))),
    ] {
        let of_draft = app
            .call(
                Method::POST,
                &format!("/v1/templates/{draft}/claims"),
                Some(&cred),
                body.clone(),
            )
            .await;
        let of_nothing = app
            .call(
                Method::POST,
                "/v1/templates/999999/claims",
                Some(&cred),
                body,
            )
            .await;
        assert_eq!(of_draft.status, StatusCode::NOT_FOUND);
        let strip = |mut v: Value| {
            v.as_object_mut().unwrap().remove("request_id");
            v
        };
        assert_eq!(strip(of_draft.body), strip(of_nothing.body));
    }
    assert_eq!(
        app.store
            .inspect()
            .count_coupons(coupond_domain::TemplateId::new(draft).unwrap())
            .await
            .unwrap(),
        0
    );
}
