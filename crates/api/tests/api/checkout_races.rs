//! Unrelated orders at once: 24 checkouts of one user's coupons, each locked and then
//! confirmed, cancelled, confirmed and refunded, or revoked under its lock, all concurrently.
//! No answer may be a 5xx (on MariaDB a cancel's locking read once locked other orders'
//! coupons, and these deadlocked into 503s), and the audit stays clean.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::checkout::{claim, lease};
use crate::claims::live;
use crate::support::*;

/// Checkouts run at once in each round.
const ORDERS: usize = 24;

/// What each checkout does after its lock.
async fn checkout(app: Arc<TestApp>, round: usize, i: usize, coupon: i64) -> Vec<(String, Reply)> {
    let order = format!("race-{round}-{i}");
    let path = |action: &str| format!("/v1/orders/{order}/{action}");
    let mut answers = vec![];
    let body = json!({"order": lease(&app), "coupon_ids": [coupon]});
    let r = app.post(&path("lock"), &app.service, body).await;
    answers.push(("lock".to_owned(), r));
    let step = |action: &'static str, body: Option<Value>| {
        let (app, path) = (app.clone(), path(action));
        async move {
            let r = app
                .call(Method::POST, &path, Some(&app.service), body)
                .await;
            (action.to_owned(), r)
        }
    };
    match i % 4 {
        0 => answers.push(step("confirm", None).await),
        1 => answers.push(step("cancel", None).await),
        2 => {
            answers.push(step("confirm", None).await);
            answers.push(step("refund", Some(json!({"reason": "returned"}))).await);
        }
        _ => {
            let revoke = format!("/v1/coupons/{coupon}/revoke");
            let r = app
                .post(&revoke, app.m1(), json!({"reason": "fraud"}))
                .await;
            answers.push(("revoke".to_owned(), r));
            answers.push(step("cancel", None).await);
        }
    }
    answers
}

async fn unrelated_checkouts_never_fail(app: TestApp) {
    let app = Arc::new(app);
    let terms = json!({"value": {"kind": "amount_off", "amount": 50000},
        "deduction": "upfront", "stacking": "stackable"});
    let t = live(&app, 200, 100, terms).await;
    for round in 0..3 {
        let mut coupons = vec![];
        for _ in 0..ORDERS {
            coupons.push(claim(&app, t).await);
        }
        let joins: Vec<_> = coupons
            .into_iter()
            .enumerate()
            .map(|(i, c)| tokio::spawn(checkout(app.clone(), round, i, c)))
            .collect();
        for j in joins {
            for (what, r) in j.await.unwrap() {
                assert!(
                    !r.status.is_server_error(),
                    "{what}: {} {}",
                    r.status,
                    r.body
                );
                if what != "revoke" && what != "cancel" {
                    assert_eq!(r.status, StatusCode::OK, "{what}: {}", r.body);
                }
            }
        }
    }
    let audit = app
        .store
        .audit(app.clock.now_ts(), time::Duration::ZERO)
        .await
        .unwrap();
    assert!(audit.is_empty(), "{audit:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unrelated_checkouts_never_fail_on_sqlite() {
    unrelated_checkouts_never_fail(TestApp::new().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unrelated_checkouts_never_fail_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        unrelated_checkouts_never_fail(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unrelated_checkouts_never_fail_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        unrelated_checkouts_never_fail(app).await;
    }
}
