//! `GET /v1/reports/today`'s figures of how things stand now are counted over every template,
//! not a page of them: with 201 claimable templates, the one nearly sold out (the newest)
//! and the one expiring soon are both counted and listed as needing attention (the console's
//! home summed one 200-row page, and showed "0 under 5 %").

use axum::http::StatusCode;
use coupond_domain::Timestamp;
use serde_json::{json, Value};

use crate::support::*;

/// A published template of merchant 1: `stock` coupons, usable until `until` (the clock at
/// hour 15, inside its claim window).
async fn live(app: &TestApp, stock: i64, until: &str) -> i64 {
    let validity = json!({"validity": {"type": "fixed", "from": at(10), "until": until}});
    crate::claims::live(app, stock, 1, validity).await
}

fn ids(attention: &Value) -> Vec<i64> {
    attention["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_i64().unwrap())
        .collect()
}

async fn every_template_counts(app: TestApp) {
    app.clock.set(Timestamp::parse(&at(15)).unwrap());
    let far = at(24 * 60);
    let expiring = live(&app, 10, &at(40)).await;
    for _ in 0..199 {
        live(&app, 10, &far).await;
    }
    let nearly = live(&app, 1, &far).await;
    let path = format!("/v1/templates/{nearly}/claims");
    let r = app
        .post(&path, &app.service, json!({"user_id": "u-s1"}))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);

    let r = app.get("/v1/reports/today", &app.platform).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        r.body["templates"],
        json!({"claimable": 201, "low_stock": 1, "claimed": 1, "used": 0}),
        "{}",
        r.body
    );
    assert_eq!(ids(&r.body["attention"]), [expiring, nearly], "{}", r.body);
    assert_eq!(r.body["attention"]["more"], false);
    let mine = app.get("/v1/reports/today", app.m1()).await;
    assert_eq!(mine.body["templates"]["claimable"], 201, "{}", mine.body);
    assert_eq!(ids(&mine.body["attention"]), [expiring, nearly]);
    let theirs = app.get("/v1/reports/today", app.m2()).await;
    assert_eq!(
        theirs.body["templates"],
        json!({"claimable": 0, "low_stock": 0, "claimed": 0, "used": 0}),
        "{}",
        theirs.body
    );
    assert_eq!(ids(&theirs.body["attention"]), Vec::<i64>::new());
    assert_eq!(
        theirs.body["activities"],
        json!({"running": 0, "enrolling": 0})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_template_counts_on_sqlite() {
    every_template_counts(TestApp::new().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_template_counts_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        every_template_counts(app).await;
    }
}
