//! Promotion rules over HTTP on every backend: a template's conditions and exclusions decide
//! its quotes and locks, a quote says what is missing, the customer facts come from the tags
//! and confirmed orders coupond holds, the clock is read in the platform's time zone, a bad
//! tree is refused node by node, and a rule can be tried on a made-up order.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::checkout::claim;
use crate::claims::live;
use crate::on_every_backend;
use crate::support::*;
use coupond_engine::Clock;

/// 2 units of 150.00 in category 1 and one 700.00 unit in category 2, from `channel`.
fn cart(app: &TestApp, units: i64, channel: &str) -> Value {
    let m = app.merchants[0].0.get();
    json!({
        "user_id": "u-1",
        "city_id": 1,
        "channel": channel,
        "lines": [
            {"product_id": "mug", "merchant_id": m, "category_id": 1,
             "unit_price": 15000, "quantity": units, "kind": "item"},
            {"product_id": "lamp", "merchant_id": m, "category_id": 2,
             "unit_price": 70000, "quantity": 1, "kind": "item"}
        ]
    })
}

/// 100.00 off when 3 units outside category 2 are bought in the app, not by staff.
fn terms() -> Value {
    json!({
        "value": {"kind": "amount_off", "amount": 10000},
        "scope": {"type": "all", "exclude": {"category_ids": [2]}},
        "conditions": {"all": [
            {"fact": "order.quantity", "op": "gte", "value": 3},
            {"fact": "order.channel", "op": "eq", "value": "app"},
            {"not": {"fact": "customer.tags", "op": "in", "value": ["staff"]}}
        ]}
    })
}

async fn quote(app: &TestApp, order: Value) -> Value {
    let r = app
        .post("/v1/quotes", &app.service, json!({"order": order}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body["coupons"][0].clone()
}

async fn put_tags(app: &TestApp, tags: Value) {
    let body = Some(json!({ "tags": tags }));
    let r = app
        .call(Method::PUT, "/v1/users/u-1/tags", Some(&app.service), body)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

/// `(fact, have, need)` of each unmet test.
fn unmet(q: &Value) -> Vec<(String, Value, Value)> {
    q["unmet"]
        .as_array()
        .map(|u| {
            u.iter()
                .map(|t| {
                    (
                        t["fact"].as_str().unwrap().to_owned(),
                        t["have"].clone(),
                        t["need"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn said(fact: &str, have: Value, need: Value) -> (String, Value, Value) {
    (fact.to_owned(), have, need)
}

async fn conditions_decide_quotes_and_locks(app: TestApp) {
    let t = live(&app, 10, 1, terms()).await;
    let stored = app.get(&format!("/v1/templates/{t}"), app.m1()).await;
    assert_eq!(
        stored.body["conditions"],
        terms()["conditions"],
        "{}",
        stored.body
    );
    assert_eq!(stored.body["scope"], terms()["scope"]);
    let c = claim(&app, t).await;

    // 2 units in scope (the lamp is excluded) from the web: two tests miss.
    let q = quote(&app, cart(&app, 2, "web")).await;
    assert_eq!(q["reasons"], json!(["conditions_unmet"]), "{q}");
    assert_eq!(
        unmet(&q),
        vec![
            said("order.quantity", json!(2), json!(1)),
            said("order.channel", json!("web"), Value::Null)
        ]
    );
    let lock = |id: &str, order: Value| {
        let body = json!({"order": order, "coupon_ids": [c]});
        let app = &app;
        let path = format!("/v1/orders/{id}/lock");
        async move { app.post(&path, &app.service, body).await }
    };
    let r = lock("o-1", cart(&app, 2, "web")).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "coupons_not_applicable"),
        "{}",
        r.body
    );
    assert_eq!(r.body["coupons"][0]["reasons"], json!(["conditions_unmet"]));

    // Staff never qualify: the tags coupond holds are read.
    put_tags(&app, json!(["staff"])).await;
    let q = quote(&app, cart(&app, 3, "app")).await;
    assert_eq!(
        unmet(&q),
        vec![said("customer.tags", json!(["staff"]), Value::Null)]
    );
    assert_eq!(q["unmet"][0]["op"], "not_in");

    // A customer, 3 mugs, in the app: 100.00 off the mugs, none off the excluded lamp.
    put_tags(&app, json!(["vip"])).await;
    let q = quote(&app, cart(&app, 3, "app")).await;
    assert_eq!(
        (q["applicable"].as_bool(), q.get("unmet")),
        (Some(true), None),
        "{q}"
    );
    let r = lock("o-2", cart(&app, 3, "app")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["discount"], 10_000);
    assert_eq!(r.body["lines"], json!([{"line": 0, "amount": 10000}]));
}

async fn customer_history_is_confirmed_orders(app: TestApp) {
    let first = json!({"conditions": {"fact": "customer.first_order", "op": "eq", "value": true}});
    let t = live(&app, 10, 1, first).await;
    claim(&app, t).await;
    let q = quote(&app, cart(&app, 1, "app")).await;
    assert_eq!(q["applicable"], true, "{q}");
    // An order paid without a coupon is an order: this one is no longer the first.
    let r = app
        .post(
            "/v1/orders/paid-1/record",
            &app.service,
            json!({"order": cart(&app, 1, "web")}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let q = quote(&app, cart(&app, 1, "app")).await;
    assert_eq!(
        unmet(&q),
        vec![said("customer.first_order", json!(false), Value::Null)]
    );
}

async fn the_clock_is_read_in_the_platform_zone(app: TestApp) {
    // The clock stands at 2026-03-01T15:00Z, a Sunday afternoon (UTC in tests).
    let when = json!({"conditions": {"all": [
        {"fact": "order.weekday", "op": "eq", "value": "sat"},
        {"fact": "order.local_time", "op": "lt", "value": "12:00"}
    ]}});
    let t = live(&app, 10, 1, when).await;
    claim(&app, t).await;
    let q = quote(&app, cart(&app, 1, "app")).await;
    assert_eq!(
        unmet(&q),
        vec![
            said("order.weekday", json!("sun"), json!("2026-03-07T00:00:00Z")),
            said(
                "order.local_time",
                json!("15:00"),
                json!("2026-03-02T00:00:00Z")
            )
        ]
    );
}

async fn bad_trees_are_refused_node_by_node(app: TestApp) {
    let mut body = standalone_template(10, 20);
    body["conditions"] = json!({"any": [
        {"fact": "order.channel", "op": "gte", "value": "app"},
        {"fact": "order.weekday", "op": "in", "value": ["sat", "caturday"]}
    ]});
    let r = app.post("/v1/templates", app.m1(), body.clone()).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let fields = fields(&r.body);
    assert_eq!(
        fields,
        vec!["conditions.any[0].op", "conditions.any[1].value[1]"]
    );
    // A key no condition has, and an exclusion list no scope has, are named.
    body["conditions"] = json!({"all": [{"fakt": "order.channel"}]});
    let r = app.post("/v1/templates", app.m1(), body.clone()).await;
    assert_eq!(r.body["field"], "conditions.all[0].fakt", "{}", r.body);
    body["conditions"] = Value::Null;
    body["scope"] = json!({"type": "all", "exclude": {"brand_ids": [1]}});
    let r = app.post("/v1/templates", app.m1(), body.clone()).await;
    assert_eq!(r.body["field"], "scope.exclude.brand_ids", "{}", r.body);
    body["scope"] = json!({"type": "all", "excludes": {"category_ids": [2]}});
    let r = app.post("/v1/templates", app.m1(), body).await;
    assert_eq!(r.body["field"], "scope.excludes", "{}", r.body);
    let listed = app.get("/v1/templates", app.m1()).await;
    assert_eq!(listed.body["items"], json!([]), "{}", listed.body);
    // An order's channel is a label.
    let r = app
        .post(
            "/v1/quotes",
            &app.service,
            json!({"order": cart(&app, 1, "the web")}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("order.channel")),
        "{}",
        r.body
    );
}

async fn rules_are_tried_on_made_up_orders(app: TestApp) {
    let body = json!({
        "conditions": terms()["conditions"],
        "scope": terms()["scope"],
        "order": cart(&app, 2, "app"),
        "at": "2027-01-09T10:00:00Z"
    });
    let r = app.post("/v1/rules/preview", app.m1(), body.clone()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        (r.body["holds"].as_bool(), r.body["quantity"].as_i64()),
        (Some(false), Some(2))
    );
    assert_eq!(r.body["subtotal"], 30_000);
    // No customer given: its test cannot hold, and says it does not know.
    assert_eq!(
        unmet(&r.body),
        vec![
            said("order.quantity", json!(2), json!(1)),
            said("customer.tags", Value::Null, Value::Null)
        ]
    );
    let mut good = body.clone();
    good["order"] = cart(&app, 3, "app");
    good["customer"] = json!({"tags": ["vip"], "confirmed_orders": 4});
    let r = app.post("/v1/rules/preview", app.m1(), good).await;
    assert_eq!(
        (r.body["holds"].as_bool(), r.body["unmet"].clone()),
        (Some(true), json!([])),
        "{}",
        r.body
    );
    let mut bad = body;
    bad["conditions"] = json!({"fact": "order.subtotal", "op": "in", "value": 1});
    let r = app.post("/v1/rules/preview", app.m1(), bad).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("conditions.op")),
        "{}",
        r.body
    );
    // Users do not write rules.
    let r = app.post("/v1/rules/preview", &app.user, json!({})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
}

/// Locks `coupon` alone for order `id` with a 1-unit cart.
async fn lock_one(app: Arc<TestApp>, id: String, coupon: i64) -> Reply {
    let body = json!({"order": cart(&app, 1, "app"), "coupon_ids": [coupon]});
    app.post(&format!("/v1/orders/{id}/lock"), &app.service, body)
        .await
}

async fn use_limits_hold_under_concurrent_locks(app: TestApp) {
    // At most 2 a day and 3 a week, of 8 coupons one user holds.
    let limits = json!({"per_user_limit": 8,
        "use_limits": [{"period": "day", "max": 2}, {"period": "week", "max": 3}]});
    let t = live(&app, 10, 8, limits).await;
    let mut coupons = Vec::new();
    for _ in 0..8 {
        coupons.push(claim(&app, t).await);
    }
    let app = Arc::new(app);
    // Eight orders of the user lock at once: two hold, six are refused.
    let tasks: Vec<_> = coupons
        .iter()
        .enumerate()
        .map(|(i, c)| tokio::spawn(lock_one(app.clone(), format!("day1-{i}"), *c)))
        .collect();
    let mut held = Vec::new();
    for (i, task) in tasks.into_iter().enumerate() {
        let r = task.await.unwrap();
        match r.status {
            StatusCode::OK => held.push(i),
            StatusCode::CONFLICT => {
                assert_eq!(
                    r.body["coupons"][0]["reasons"],
                    json!(["use_limit_reached"]),
                    "{}",
                    r.body
                )
            }
            other => panic!("{other}: {}", r.body),
        }
    }
    assert_eq!(held.len(), 2, "{held:?}");
    // A cancelled lock is no use: its place is free again.
    let r = app
        .call(
            Method::POST,
            &format!("/v1/orders/day1-{}/cancel", held[0]),
            Some(&app.service),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let free = coupons[held[0]];
    let r = lock_one(app.clone(), "day1-again".into(), free).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // The next day is a Monday: a new day and a new week, so 2 more and no more.
    app.clock.set(app.clock.now().plus(time::Duration::days(1)));
    let rest: Vec<i64> = coupons
        .iter()
        .enumerate()
        .filter(|(i, _)| !held.contains(i))
        .map(|(_, c)| *c)
        .collect();
    let mut ok = 0;
    for (i, c) in rest.iter().enumerate() {
        let r = lock_one(app.clone(), format!("day2-{i}"), *c).await;
        ok += usize::from(r.status == StatusCode::OK);
    }
    assert_eq!(ok, 2);
}

async fn bad_use_limits_are_named(app: TestApp) {
    let mut body = standalone_template(10, 20);
    body["use_limits"] = json!([{"period": "day", "max": 0}, {"period": "day", "max": 2}]);
    let r = app.post("/v1/templates", app.m1(), body.clone()).await;
    let fields = fields(&r.body);
    assert_eq!(
        fields,
        vec!["use_limits[0].max", "use_limits[1].period"],
        "{}",
        r.body
    );
    body["use_limits"] = json!([{"period": "fortnight", "max": 1}]);
    let r = app.post("/v1/templates", app.m1(), body).await;
    assert_eq!(r.body["field"], "use_limits[0].period", "{}", r.body);
}

on_every_backend!(
    use_limits_hold_under_concurrent_locks,
    bad_use_limits_are_named,
    conditions_decide_quotes_and_locks,
    customer_history_is_confirmed_orders,
    the_clock_is_read_in_the_platform_zone,
    bad_trees_are_refused_node_by_node,
    rules_are_tried_on_made_up_orders
);
