//! Checkout over HTTP on both backends: quote -> lock -> confirm on a lease with every coupon
//! kind (worked out by hand below), lock -> cancel, lock -> deadline -> sweeper, 64 locks of
//! one coupon, and idempotency keys on write routes.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use coupond_domain::Timestamp;
use serde_json::{json, Value};

use crate::claims::live;
use crate::support::*;

/// A published standalone template of merchant 1 (claimable hours [10, 20), coupons valid
/// until hour 44) worth `value`, with `deduction` and `stacking`; the clock at hour 15.
pub(crate) async fn template(app: &TestApp, value: Value, deduction: &str, stacking: &str) -> i64 {
    let terms = json!({"value": value, "deduction": deduction, "stacking": stacking});
    live(app, 10, 2, terms).await
}

/// Confirms or cancels `order` as the order service.
async fn step(app: &TestApp, order: &str, action: &str) -> Reply {
    app.call(
        Method::POST,
        &format!("/v1/orders/{order}/{action}"),
        Some(&app.service),
        None,
    )
    .await
}

/// Claims a coupon of `template` for user `u-1`; its id.
pub(crate) async fn claim(app: &TestApp, template: i64) -> i64 {
    let r = app
        .call(
            Method::POST,
            &format!("/v1/templates/{template}/claims"),
            Some(&app.user),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.body["id"].as_i64().unwrap()
}

/// A 12-month lease of a 3000.00 a month house in city 1, and its 3000.00 deposit.
pub(crate) fn lease(app: &TestApp) -> Value {
    let m = app.merchants[0].0.get();
    json!({
        "user_id": "u-1",
        "city_id": 1,
        "lines": [
            {"product_id": "house-1", "merchant_id": m, "category_id": 1,
             "unit_price": 300000, "quantity": 12, "kind": "rent"},
            {"product_id": "house-1-deposit", "merchant_id": m, "category_id": 1,
             "unit_price": 300000, "quantity": 1, "kind": "deposit"}
        ],
        "lease": {"monthly_rent": 300000, "months": 12}
    })
}

fn money(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not money: {v}"))
}

/// `n` months of `a` then `k` months of `b`.
fn months(a: i64, n: usize, b: i64, k: usize) -> Value {
    let mut s = vec![a; n];
    s.extend(vec![b; k]);
    json!(s)
}

async fn rental_flow(app: TestApp) {
    // One coupon of each kind:
    // A 500.00 off, spread over the 12 months: 50000 / 12 = 4166 r 8 -> 8 x 41.67, 4 x 41.66.
    // B 7 free days, upfront: daily rent 3000.00 / 30 = 100.00, so 700.00 in month 1.
    // C 5 % capped at 1000.00 (exclusive): 5 % of 36000.00 = 1800.00 -> 1000.00.
    // D the deposit waived up to 2000.00, upfront: 2000.00 off the deposit line.
    // E rent at a special price of 2800.00 (exclusive, spread): 200.00 x 12 = 2400.00.
    let a = template(
        &app,
        json!({"kind": "amount_off", "amount": 50000}),
        "spread",
        "stackable",
    )
    .await;
    let b = template(
        &app,
        json!({"kind": "free_days", "days": 7}),
        "upfront",
        "stackable",
    )
    .await;
    let c = template(
        &app,
        json!({"kind": "percent_off", "bps": 500, "cap": 100000}),
        "spread",
        "exclusive",
    )
    .await;
    let d = template(
        &app,
        json!({"kind": "deposit_waiver", "cap": 200000}),
        "upfront",
        "stackable",
    )
    .await;
    let e = template(
        &app,
        json!({"kind": "special_price", "price": 280000}),
        "spread",
        "exclusive",
    )
    .await;
    let (ca, cb, cc, cd, ce) = (
        claim(&app, a).await,
        claim(&app, b).await,
        claim(&app, c).await,
        claim(&app, d).await,
        claim(&app, e).await,
    );

    // The quote: the stackable set A + B + D (3200.00) beats E alone (2400.00) and C alone.
    let r = app
        .post("/v1/quotes", &app.service, json!({"order": lease(&app)}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let q = &r.body;
    assert_eq!(money(&q["order_total"]), 3_900_000);
    let per: std::collections::BTreeMap<i64, (i64, bool, Value)> = q["coupons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["coupon_id"].as_i64().unwrap(),
                (
                    money(&c["discount"]),
                    c["chosen"].as_bool().unwrap(),
                    c["reasons"].clone(),
                ),
            )
        })
        .collect();
    assert_eq!(per[&ca], (50_000, true, json!([])));
    assert_eq!(per[&cb], (70_000, true, json!([])));
    assert_eq!(per[&cc], (100_000, false, json!(["exclusive_conflict"])));
    assert_eq!(per[&cd], (200_000, true, json!([])));
    assert_eq!(per[&ce], (240_000, false, json!(["exclusive_conflict"])));
    let best = &q["best"];
    assert_eq!(
        (money(&best["discount"]), money(&best["total_after"])),
        (320_000, 3_580_000)
    );
    assert_eq!(
        best["lines"],
        json!([{"line": 0, "amount": 120000}, {"line": 1, "amount": 200000}])
    );
    // Month 1: A's 41.67 + B's 700.00 + D's 2000.00; then A's spread alone.
    let mut schedule = vec![4_167 + 70_000 + 200_000];
    schedule.extend(vec![4_167; 7]);
    schedule.extend(vec![4_166; 4]);
    assert_eq!(best["schedule"], json!(schedule));
    let applied: Vec<(i64, i64)> = best["coupons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["coupon_id"].as_i64().unwrap(), money(&c["discount"])))
        .collect();
    assert_eq!(applied, vec![(ca, 50_000), (cb, 70_000), (cd, 200_000)]);
    assert_eq!(best["coupons"][0]["schedule"], months(4_167, 8, 4_166, 4));

    // C with E cannot both be locked: E takes more, so C conflicts. Nothing is written.
    let r = app
        .post(
            "/v1/orders/lease-9/lock",
            &app.service,
            json!({"order": lease(&app), "coupon_ids": [cc, ce]}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "coupons_not_applicable"),
        "{}",
        r.body
    );
    assert_eq!(
        r.body["coupons"],
        json!([{"coupon_id": cc, "reasons": ["exclusive_conflict"]}])
    );
    assert_eq!(
        app.get("/v1/orders/lease-9", &app.service).await.status,
        StatusCode::NOT_FOUND
    );

    // Lock A + B + D: the quote's best, now held until the deadline (15 minutes).
    let body = json!({"order": lease(&app), "coupon_ids": [ca, cb, cd]});
    let r = app
        .post("/v1/orders/lease-1/lock", &app.service, body.clone())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        (r.body["state"].as_str(), money(&r.body["discount"])),
        (Some("locked"), 320_000)
    );
    let deadline = Timestamp::parse(&at(15))
        .unwrap()
        .plus(time::Duration::minutes(15));
    assert_eq!(r.body["deadline"], json!(deadline));
    assert_eq!(r.body["schedule"], best["schedule"]);
    // The same lock again answers the same; another body under the id is a conflict.
    let again = app
        .post("/v1/orders/lease-1/lock", &app.service, body)
        .await;
    assert_eq!(again.body, r.body);
    let other = app
        .post(
            "/v1/orders/lease-1/lock",
            &app.service,
            json!({"order": lease(&app), "coupon_ids": [ca]}),
        )
        .await;
    assert_eq!(
        (other.status, other.code()),
        (StatusCode::CONFLICT, "order_conflict")
    );
    // Locked coupons are not offered again.
    let q = app
        .post(
            "/v1/quotes",
            &app.user,
            json!({"order": lease(&app), "coupon_ids": [ca]}),
        )
        .await;
    assert_eq!(q.body["coupons"][0]["reasons"], json!(["locked"]));

    let r = step(&app, "lease-1", "confirm").await;
    assert_eq!(
        (r.status, r.body["state"].as_str()),
        (StatusCode::OK, Some("confirmed")),
        "{}",
        r.body
    );
    let again = step(&app, "lease-1", "confirm").await;
    assert_eq!(
        (again.status, &again.body["state"]),
        (StatusCode::OK, &json!("confirmed"))
    );
    let cancel = step(&app, "lease-1", "cancel").await;
    assert_eq!(
        (cancel.status, cancel.code()),
        (StatusCode::CONFLICT, "already_used")
    );

    // The coupons are used, each with its discount; the log says who did what.
    let wallet = app.get("/v1/me/coupons?status=used", &app.user).await;
    let used: Vec<i64> = wallet.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_i64().unwrap())
        .collect();
    assert_eq!(used.len(), 3);
    let h = app
        .get(&format!("/v1/coupons/{cd}/history"), &app.user)
        .await;
    assert_eq!(h.status, StatusCode::OK, "{}", h.body);
    let steps: Vec<(Value, Value, Value)> = h.body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["from"].clone(), e["to"].clone(), e["actor"].clone()))
        .collect();
    // The order service's steps name its key (`service:<key id>`), not just "service".
    let service = steps[1].2.as_str().unwrap().to_owned();
    let key_id: i64 = service.strip_prefix("service:").unwrap().parse().unwrap();
    assert!(key_id > 0, "{service}");
    assert_eq!(
        steps,
        vec![
            (Value::Null, json!("unused"), json!("user:u-1")),
            (json!("unused"), json!("locked"), json!(service)),
            (json!("locked"), json!("used"), json!(service)),
        ]
    );
    assert_eq!(h.body["events"][2]["order_id"], "lease-1");
    assert_eq!(
        app.get(&format!("/v1/coupons/{cd}/history"), app.m1())
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        app.get(&format!("/v1/coupons/{cd}/history"), app.m2())
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let t = app.get(&format!("/v1/templates/{d}"), app.m1()).await;
    assert_eq!(
        (t.body["used"].as_i64(), t.body["given"].as_i64()),
        (Some(1), Some(200_000))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_with_every_kind_on_sqlite() {
    rental_flow(TestApp::new().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_with_every_kind_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        rental_flow(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_with_every_kind_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        rental_flow(app).await;
    }
}

async fn cancel_and_deadline(app: TestApp) {
    let t = template(
        &app,
        json!({"kind": "amount_off", "amount": 50000}),
        "upfront",
        "stackable",
    )
    .await;
    let (c1, c2) = (claim(&app, t).await, claim(&app, t).await);
    // Two coupons of one template on one order: the second would take nothing.
    let r = app
        .post(
            "/v1/orders/twice/lock",
            &app.service,
            json!({"order": lease(&app), "coupon_ids": [c1, c2]}),
        )
        .await;
    assert_eq!(
        r.body["coupons"],
        json!([{"coupon_id": c2, "reasons": ["redundant"]}]),
        "{}",
        r.body
    );

    let lock = |order: &'static str, coupon: i64| {
        let app = &app;
        async move {
            let r = app
                .post(
                    &format!("/v1/orders/{order}/lock"),
                    &app.service,
                    json!({"order": lease(app), "coupon_ids": [coupon]}),
                )
                .await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        }
    };
    lock("cancelled", c1).await;
    let r = step(&app, "cancelled", "cancel").await;
    assert_eq!(
        (r.status, r.body["state"].as_str()),
        (StatusCode::OK, Some("cancelled"))
    );
    let again = step(&app, "cancelled", "cancel").await;
    assert_eq!(
        (again.status, &again.body["state"]),
        (StatusCode::OK, &json!("cancelled"))
    );
    let late = step(&app, "cancelled", "confirm").await;
    assert_eq!(
        (late.status, late.code()),
        (StatusCode::CONFLICT, "order_ended")
    );
    let q = app
        .post(
            "/v1/quotes",
            &app.user,
            json!({"order": lease(&app), "coupon_ids": [c1]}),
        )
        .await;
    assert_eq!(
        q.body["coupons"][0]["reasons"],
        json!([]),
        "usable again: {}",
        q.body
    );

    // The deadline passes: the sweeper gives the coupon back; a late confirm is refused.
    lock("forgotten", c1).await;
    app.clock.advance(time::Duration::minutes(15));
    let sweeper = coupond_engine::Sweeper::new(app.store.clone(), Arc::new(app.clock.clone()));
    let ended = sweeper.run_once().await.unwrap();
    assert_eq!(
        ended.iter().map(|o| o.as_str()).collect::<Vec<_>>(),
        vec!["forgotten"]
    );
    assert!(sweeper.run_once().await.unwrap().is_empty(), "exactly once");
    let r = app.get("/v1/orders/forgotten", &app.service).await;
    assert_eq!(r.body["state"], "expired");
    let late = step(&app, "forgotten", "confirm").await;
    assert_eq!(
        (late.status, late.code()),
        (StatusCode::CONFLICT, "order_ended")
    );
    let h = app
        .get(&format!("/v1/coupons/{c1}/history"), &app.platform)
        .await;
    let last = h.body["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (last["to"].as_str(), last["actor"].as_str()),
        (Some("unused"), Some("system"))
    );

    // A confirm past the deadline, before any sweep, ends the lock itself.
    lock("late", c2).await;
    app.clock.advance(time::Duration::minutes(16));
    let late = step(&app, "late", "confirm").await;
    assert_eq!(
        (late.status, late.code()),
        (StatusCode::CONFLICT, "order_ended")
    );
    assert_eq!(
        app.get("/v1/orders/late", &app.service).await.body["state"],
        "expired"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_the_deadline_give_coupons_back_on_sqlite() {
    cancel_and_deadline(TestApp::new().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_the_deadline_give_coupons_back_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        cancel_and_deadline(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_the_deadline_give_coupons_back_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        cancel_and_deadline(app).await;
    }
}

async fn many_orders_one_coupon(app: TestApp) {
    let app = Arc::new(app);
    let t = template(
        &app,
        json!({"kind": "amount_off", "amount": 50000}),
        "upfront",
        "stackable",
    )
    .await;
    let c = claim(&app, t).await;
    let mut joins = vec![];
    for i in 0..64 {
        let app = app.clone();
        joins.push(tokio::spawn(async move {
            let r = app
                .post(
                    &format!("/v1/orders/grab-{i}/lock"),
                    &app.service,
                    json!({"order": lease(&app), "coupon_ids": [c]}),
                )
                .await;
            (r.status, r.body)
        }));
    }
    let mut locked = 0;
    for j in joins {
        let (status, body) = j.await.unwrap();
        match status {
            StatusCode::OK => locked += 1,
            StatusCode::CONFLICT => {
                assert_eq!(body["coupons"][0]["reasons"], json!(["locked"]), "{body}")
            }
            other => panic!("{other}: {body}"),
        }
    }
    assert_eq!(locked, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_orders_lock_one_coupon_once_on_sqlite() {
    many_orders_one_coupon(TestApp::new().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_orders_lock_one_coupon_once_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        many_orders_one_coupon(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_orders_lock_one_coupon_once_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        many_orders_one_coupon(app).await;
    }
}
