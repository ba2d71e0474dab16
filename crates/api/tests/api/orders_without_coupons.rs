//! Orders paid without a coupon (`POST /v1/orders/{order_id}/record`), as the order service
//! relies on them: a record is idempotent by order id and body, an order id is one order with
//! coupons or without (a lock of a recorded id, or a record of a locked one, conflicts), a bad
//! body is refused by field and writes nothing, and records racing for one id leave exactly
//! one body recorded.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::checkout::{claim, lease};
use crate::claims::live;
use crate::on_every_backend;
use crate::support::*;

fn record_path(id: &str) -> String {
    format!("/v1/orders/{id}/record")
}

/// The lease with a deposit of `price`.
fn priced(app: &TestApp, price: i64) -> Value {
    let mut order = lease(app);
    order["lines"][1]["unit_price"] = json!(price);
    json!({ "order": order })
}

/// The count of orders recorded without a coupon, from the platform's performance report.
async fn recorded(app: &TestApp) -> i64 {
    let path = format!(
        "/v1/reports/performance?from={}&to={}",
        at(-24),
        at(24 * 30)
    );
    let r = app.get(&path, &app.platform).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body["totals"]["without_coupon"]["orders"]
        .as_i64()
        .unwrap_or_else(|| panic!("{}", r.body))
}

/// The answer is 409 `order_conflict`.
fn conflicts(r: &Reply) {
    assert_eq!(
        (r.status, r.body["code"].as_str()),
        (StatusCode::CONFLICT, Some("order_conflict")),
        "{}",
        r.body
    );
}

async fn a_record_is_one_order(app: TestApp) {
    let body = priced(&app, 100_000);
    let r = app
        .post(&record_path("n-1"), &app.service, body.clone())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // 12 months of 3000.00 and a deposit of 1000.00, nothing off.
    assert_eq!(
        (
            &r.body["state"],
            &r.body["order_total"],
            &r.body["discount"]
        ),
        (&json!("confirmed"), &json!(3_700_000), &json!(0)),
        "{}",
        r.body
    );
    assert_eq!(r.body["coupons"], json!([]));
    let again = app.post(&record_path("n-1"), &app.service, body).await;
    assert_eq!((again.status, &again.body), (StatusCode::OK, &r.body));
    let other = app
        .post(&record_path("n-1"), &app.service, priced(&app, 90_000))
        .await;
    conflicts(&other);
    assert_eq!(recorded(&app).await, 1);

    // A lock of the recorded id conflicts; so does a record of a locked id.
    let t = live(
        &app,
        10,
        5,
        json!({"value": {"kind": "amount_off", "amount": 5000},
        "deduction": "upfront", "stacking": "stackable"}),
    )
    .await;
    let coupon = claim(&app, t).await;
    let lock = json!({"order": lease(&app), "coupon_ids": [coupon]});
    let r = app
        .post("/v1/orders/n-1/lock", &app.service, lock.clone())
        .await;
    conflicts(&r);
    let r = app.post("/v1/orders/l-1/lock", &app.service, lock).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = app
        .post(
            &record_path("l-1"),
            &app.service,
            json!({"order": lease(&app)}),
        )
        .await;
    conflicts(&r);
    // The recorded order is confirmed: confirming answers it, cancelling cannot.
    let confirm = app
        .call(
            Method::POST,
            "/v1/orders/n-1/confirm",
            Some(&app.service),
            None,
        )
        .await;
    assert_eq!(confirm.body["state"], "confirmed", "{}", confirm.body);
    let cancel = app
        .call(
            Method::POST,
            "/v1/orders/n-1/cancel",
            Some(&app.service),
            None,
        )
        .await;
    assert_eq!(cancel.body["code"].as_str(), Some("already_used"));
    assert_eq!(recorded(&app).await, 1);
}

async fn bad_records_write_nothing(app: TestApp) {
    let mut no_lines = priced(&app, 1);
    no_lines["order"]["lines"] = json!([]);
    let mut extra = priced(&app, 1);
    extra["discount"] = json!(5);
    let mut negative = priced(&app, 1);
    negative["order"]["lines"][1]["unit_price"] = json!(-1);
    for (body, field) in [
        (no_lines, "order.lines"),
        (extra, "discount"),
        (negative, "order.lines[1].unit_price"),
    ] {
        let r = app.post(&record_path("n-2"), &app.service, body).await;
        assert!(r.status.is_client_error(), "{}: {}", r.status, r.body);
        assert_eq!(r.body["field"].as_str(), Some(field), "{}", r.body);
    }
    let r = app
        .post(&record_path("n%202"), &app.service, priced(&app, 1))
        .await;
    assert_eq!(r.body["field"].as_str(), Some("order_id"), "{}", r.body);
    assert_eq!(recorded(&app).await, 0);
    let r = app
        .call(Method::GET, "/v1/orders/n-2", Some(&app.service), None)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

/// Eight records of one order id at once, half with one body and half with another: one body
/// wins, every request with it answers the same order, the others conflict.
async fn racing_records_keep_one(app: TestApp) {
    let app = Arc::new(app);
    let joins: Vec<_> = (0..8)
        .map(|i| {
            let app = app.clone();
            tokio::spawn(async move {
                let body = priced(&app, 100_000 + (i % 2));
                let r = app.post(&record_path("n-3"), &app.service, body).await;
                (i % 2, r)
            })
        })
        .collect();
    let mut answers = vec![];
    for j in joins {
        answers.push(j.await.unwrap());
    }
    let won: Vec<i64> = answers
        .iter()
        .filter(|(_, r)| r.status == StatusCode::OK)
        .map(|(b, _)| *b)
        .collect();
    assert!(
        !won.is_empty() && won.iter().all(|b| *b == won[0]),
        "{won:?}"
    );
    for (b, r) in &answers {
        let want = if *b == won[0] {
            StatusCode::OK
        } else {
            StatusCode::CONFLICT
        };
        assert_eq!(r.status, want, "{}", r.body);
    }
    assert_eq!(won.len(), 4);
    assert_eq!(recorded(&app).await, 1);
}

on_every_backend!(
    a_record_is_one_order,
    bad_records_write_nothing,
    racing_records_keep_one
);
