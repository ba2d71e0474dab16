//! Stacking groups and priorities over HTTP on every backend: a quote applies discounts in
//! priority order, each on what the ones before it left, picks one template per group, names
//! the other `group_conflict`, and a lock of two coupons of one group is refused.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::checkout::claim;
use crate::claims::live;
use crate::on_every_backend;
use crate::support::*;

/// 1000.00 of one item.
fn cart(app: &TestApp) -> Value {
    json!({
        "user_id": "u-1",
        "city_id": 1,
        "lines": [{"product_id": "sofa", "merchant_id": app.merchants[0].0.get(),
                   "category_id": 1, "unit_price": 100000, "quantity": 1, "kind": "item"}]
    })
}

async fn stackable(app: &TestApp, value: Value, place: Value) -> i64 {
    let mut terms = json!({"value": value, "stacking": "stackable"});
    for (k, v) in place.as_object().unwrap() {
        terms[k] = v.clone();
    }
    let t = live(app, 10, 1, terms).await;
    claim(app, t).await
}

async fn groups_and_priorities_decide_the_combination(app: TestApp) {
    // 20 % and 150.00 off in group "weekend"; 50.00 off with priority 10, applied first.
    let percent = stackable(
        &app,
        json!({"kind": "percent_off", "bps": 2000}),
        json!({"stacking_group": "weekend"}),
    )
    .await;
    let amount = stackable(
        &app,
        json!({"kind": "amount_off", "amount": 15000}),
        json!({"stacking_group": "weekend"}),
    )
    .await;
    let first = stackable(
        &app,
        json!({"kind": "amount_off", "amount": 5000}),
        json!({"priority": 10}),
    )
    .await;
    let r = app
        .post("/v1/quotes", &app.service, json!({"order": cart(&app)}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // 50.00, then 20 % of the 950.00 left (190.00) beats 150.00.
    let best = &r.body["best"];
    let applied: Vec<(i64, i64)> = best["coupons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["coupon_id"].as_i64().unwrap(),
                c["discount"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        applied,
        vec![(first, 5_000), (percent, 19_000)],
        "{}",
        r.body
    );
    assert_eq!(best["discount"], 24_000);
    let other = r.body["coupons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["coupon_id"] == amount)
        .unwrap();
    assert_eq!(other["reasons"], json!(["group_conflict"]), "{other}");
    assert_eq!(other["discount"], 15_000);

    // Two of one group in a lock: refused, naming the one left out.
    let lock = |id: &str, coupons: Vec<i64>| {
        let body = json!({"order": cart(&app), "coupon_ids": coupons});
        let path = format!("/v1/orders/{id}/lock");
        let app = &app;
        async move { app.post(&path, &app.service, body).await }
    };
    let r = lock("o-1", vec![percent, amount, first]).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert_eq!(r.code(), "coupons_not_applicable");
    assert_eq!(r.body["coupons"][0]["coupon_id"], amount, "{}", r.body);
    assert_eq!(r.body["coupons"][0]["reasons"], json!(["group_conflict"]));
    // One of the group: held as quoted, each charged what it took.
    let r = lock("o-2", vec![percent, first]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["discount"], 24_000);
    assert_eq!(r.body["coupons"][1]["discount"], 19_000);
}

async fn bad_groups_and_priorities_are_named(app: TestApp) {
    let mut body = standalone_template(10, 20);
    body["stacking_group"] = json!("has space");
    body["priority"] = json!(1001);
    let r = app.post("/v1/templates", app.m1(), body).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert_eq!(
        fields(&r.body),
        vec!["priority", "stacking_group"],
        "{}",
        r.body
    );
    // Stored and shown as sent; fixed once claiming has started, like stacking.
    let t = live(
        &app,
        10,
        1,
        json!({"stacking_group": "spring.b", "priority": 7}),
    )
    .await;
    let r = app.get(&format!("/v1/templates/{t}"), app.m1()).await;
    assert_eq!(
        (&r.body["stacking_group"], &r.body["priority"]),
        (&json!("spring.b"), &json!(7)),
        "{}",
        r.body
    );
    let r = app
        .patch(
            &format!("/v1/templates/{t}"),
            app.m1(),
            json!({"priority": 8}),
        )
        .await;
    assert_eq!(r.body["field"], "priority", "{}", r.body);
    assert_eq!(r.code(), "fixed_once_claimable");
}

on_every_backend!(
    groups_and_priorities_decide_the_combination,
    bad_groups_and_priorities_are_named
);
