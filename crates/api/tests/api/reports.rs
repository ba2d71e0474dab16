//! Stats and the reconciliation report on both backends, checked against the coupons'
//! operation log.

use axum::http::{Method, StatusCode};
use coupond_domain::{CouponId, CouponStatus, Timestamp};
use serde_json::{json, Value};

use crate::claims::live;
use crate::support::*;

fn set(app: &TestApp, hours: i64) {
    app.clock.set(Timestamp::parse(&at(hours)).unwrap());
}

/// An order of `amount` for user `u-1` in city 1 (one item line).
fn order(app: &TestApp, amount: i64) -> Value {
    json!({
        "user_id": "u-1",
        "city_id": 1,
        "lines": [{"product_id": "p-1", "merchant_id": app.merchants[0].0.get(),
                   "category_id": 1, "unit_price": amount, "quantity": 1, "kind": "item"}]
    })
}

/// Claims a coupon of `template` for `u-1` (the user token).
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

/// Locks and confirms `coupon` on an order of `amount`.
pub(crate) async fn spend(app: &TestApp, order_id: &str, coupon: i64, amount: i64) {
    let r = app
        .post(
            &format!("/v1/orders/{order_id}/lock"),
            &app.service,
            json!({"order": order(app, amount), "coupon_ids": [coupon]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = app
        .call(
            Method::POST,
            &format!("/v1/orders/{order_id}/confirm"),
            Some(&app.service),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

async fn reports(app: TestApp) {
    // A platform-funded activity running hours [10, 100) with one template of merchant 1,
    // and a standalone template of merchant 1 (merchant-funded): 10% off, at most 50.00.
    let mut activity = activity_body(-1, 5, 10, 100);
    activity["funded_by"] = json!("platform");
    let a = app.activity(activity).await;
    let r = app
        .post("/v1/templates", app.m1(), activity_template(a, 2000))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let in_activity = r.body["id"].as_i64().unwrap();
    let standalone = live(&app, 10, 2, json!({})).await; // the clock at hour 15
    let c1 = claim(&app, in_activity).await;
    let c2 = claim(&app, standalone).await;
    let c3 = claim(&app, standalone).await;
    spend(&app, "o-1", c1, 50_000).await; // 20.00 off
    set(&app, 16);
    spend(&app, "o-2", c2, 30_000).await; // 10% of 300.00 = 30.00
    set(&app, 40);
    spend(&app, "o-3", c3, 100_000).await; // 10% of 1000.00 = 100.00, capped at 50.00

    let r = app
        .get(
            &format!("/v1/templates/{standalone}/stats?hours=48"),
            app.m1(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let st = &r.body;
    assert_eq!(
        (
            st["stock"].as_i64(),
            st["claimed"].as_i64(),
            st["used"].as_i64()
        ),
        (Some(10), Some(2), Some(2))
    );
    assert_eq!(
        (
            st["unused"].as_i64(),
            st["issued"].as_i64(),
            st["issued_in_bulk"].as_i64(),
            st["discount_given"].as_i64()
        ),
        (Some(0), Some(2), Some(0), Some(8_000))
    );
    every_hour_has_its_slot(st);
    let r = app
        .get(
            &format!("/v1/templates/{standalone}/stats?days=3"),
            app.m1(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        r.body["per_day"],
        json!([
            {"day": at(-24), "date": "2026-02-28", "claimed": 0, "used": 0, "discount": 0, "refunded": 0, "refunded_discount": 0},
            {"day": at(0), "date": "2026-03-01", "claimed": 2, "used": 1, "discount": 3_000, "refunded": 0, "refunded_discount": 0},
            {"day": at(24), "date": "2026-03-02", "claimed": 0, "used": 1, "discount": 5_000, "refunded": 0, "refunded_discount": 0}
        ])
    );
    let both = format!("/v1/templates/{standalone}/stats?days=3&hours=2");
    let r = app.get(&both, app.m1()).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("days"))
    );
    assert_eq!(
        app.get(&format!("/v1/templates/{standalone}/stats"), app.m2())
            .await
            .status,
        StatusCode::NOT_FOUND
    );

    let r = app
        .get(&format!("/v1/activities/{a}/stats"), &app.platform)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["funded_by"], "platform");
    assert_eq!(
        (
            r.body["totals"]["templates"].as_i64(),
            r.body["totals"]["used"].as_i64(),
            r.body["totals"]["discount_given"].as_i64()
        ),
        (Some(1), Some(1), Some(2_000))
    );
    assert_eq!(
        r.body["merchants"][0]["merchant_id"],
        app.merchants[0].0.get()
    );
    assert_eq!(
        app.get(&format!("/v1/activities/{a}/stats"), app.m2())
            .await
            .status,
        StatusCode::NOT_FOUND
    );

    // The reconciliation of hours [15, 20): o-1 and o-2, not o-3.
    let path = format!("/v1/reports/reconciliation?from={}&to={}", at(15), at(20));
    let r = app.get(&path, &app.platform).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let rows = r.body["rows"].as_array().unwrap();
    let line = |t: i64| {
        rows.iter()
            .find(|row| row["template_id"] == t)
            .unwrap()
            .clone()
    };
    assert_eq!(
        (
            line(in_activity)["funded_by"].clone(),
            line(in_activity)["discount"].clone()
        ),
        (json!("platform"), json!(2_000))
    );
    assert_eq!(
        (
            line(standalone)["funded_by"].clone(),
            line(standalone)["coupons_used"].clone(),
            line(standalone)["discount"].clone()
        ),
        (json!("merchant"), json!(1), json!(3_000))
    );
    assert_eq!(
        r.body["total"],
        json!({"coupons_used": 2, "discount": 5_000, "coupons_refunded": 0,
               "refunded_discount": 0, "net_discount": 5_000})
    );
    assert_eq!(
        r.body["platform"],
        json!({"coupons_used": 1, "discount": 2_000, "coupons_refunded": 0,
               "refunded_discount": 0, "net_discount": 2_000})
    );

    // The totals agree with the operation log, recomputed here coupon by coupon.
    let mut from_log = (0, 0);
    for c in [c1, c2, c3] {
        let id = CouponId::new(c).unwrap();
        let used_in_period = app.store.coupon_history(id).await.unwrap().iter().any(|e| {
            e.to == CouponStatus::Used && e.at.to_string() >= at(15) && e.at.to_string() < at(20)
        });
        if used_in_period {
            let coupon = app.store.coupon(id).await.unwrap();
            from_log.0 += 1;
            from_log.1 += coupon.discount.unwrap().minor();
        }
    }
    assert_eq!(from_log, (2, 5_000));

    let csv = app
        .send(
            axum::http::Request::builder()
                .uri(format!("{path}&format=csv"))
                .header("authorization", format!("Bearer {}", app.platform))
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(csv.status, StatusCode::OK);
    assert_eq!(csv.headers["content-type"], "text/csv; charset=utf-8");
    let bad = app
        .get(
            &format!("/v1/reports/reconciliation?from={}&to={}", at(20), at(15)),
            &app.platform,
        )
        .await;
    assert_eq!(
        (bad.status, bad.body["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("to"))
    );
    today(&app).await;
    refunded_hours_keep_their_discount(&app, standalone).await;
}

/// A 48-hour window (the clock at hour 40) answers its 48 hours in order, from hour -7 to the
/// current one, zeros where nothing happened.
fn every_hour_has_its_slot(st: &Value) {
    let slots = st["per_hour"].as_array().unwrap();
    assert_eq!(slots.len(), 48, "{st}");
    for (i, h) in slots.iter().enumerate() {
        assert_eq!(h["hour"], at(i as i64 - 7), "slot {i}");
    }
    let hour = |h: i64, claimed: i64, used: i64, discount: i64| {
        json!({"hour": at(h), "claimed": claimed, "used": used, "discount": discount,
               "refunded": 0, "refunded_discount": 0})
    };
    assert_eq!(slots[0], hour(-7, 0, 0, 0));
    assert_eq!(slots[21], hour(14, 0, 0, 0));
    assert_eq!(slots[22], hour(15, 2, 0, 0));
    assert_eq!(slots[23], hour(16, 0, 1, 3_000));
    assert_eq!(slots[47], hour(40, 0, 1, 5_000));
    let busy = slots.iter().filter(|h| h["claimed"] != 0 || h["used"] != 0);
    assert_eq!(busy.count(), 3, "zeros elsewhere");
}

/// A use refunded later still gave its discount in its hour (as in the reconciliation), and
/// says it was refunded since; the template's figures reconcile with the hours: the use is no
/// longer `used` but `refunded`, its coupon `unused` again, and `unused` is within `issued`.
async fn refunded_hours_keep_their_discount(app: &TestApp, template: i64) {
    let r = app
        .post(
            "/v1/orders/o-2/refund",
            &app.service,
            json!({"reason": "returned"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let st = app
        .get(
            &format!("/v1/templates/{template}/stats?hours=48"),
            app.m1(),
        )
        .await
        .body;
    assert_eq!(
        st["per_hour"][23],
        json!({"hour": at(16), "claimed": 0, "used": 1, "discount": 3_000,
               "refunded": 1, "refunded_discount": 3_000})
    );
    let n = |k: &str| st[k].as_i64().unwrap();
    assert_eq!(
        (n("issued"), n("unused"), n("used"), n("refunded")),
        (2, 1, 1, 1),
        "{st}"
    );
    let uses: i64 = st["per_hour"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["used"].as_i64().unwrap())
        .sum();
    assert_eq!(uses, n("used") + n("refunded"));
    assert_eq!(
        (n("discount_given"), n("discount_refunded")),
        (5_000, 3_000)
    );
}

/// The day's figures, at hour 40: since midnight (hour 24) one use and no claim; since hour
/// 10 every claim and use; merchant 2 owns none of them; only the platform sees the outbox.
async fn today(app: &TestApp) {
    let r = app.get("/v1/reports/today", &app.platform).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["since"], at(24));
    assert_eq!(
        (&r.body["claimed"], &r.body["used"]),
        (&json!(0), &json!(1))
    );
    let consumers: Vec<&str> = r.body["outbox"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["consumer"].as_str().unwrap())
        .collect();
    assert_eq!(consumers, ["reminders", "inbox", "webhooks", "cache"]);
    let path = format!("/v1/reports/today?since={}", at(10));
    let r = app.get(&path, &app.platform).await;
    assert_eq!(
        (&r.body["claimed"], &r.body["used"]),
        (&json!(3), &json!(3)),
        "{}",
        r.body
    );
    let mine = app.get(&path, app.m1()).await;
    assert_eq!(mine.body["claimed"], 3, "{}", mine.body);
    assert!(mine.body.get("outbox").is_none());
    let theirs = app.get(&path, app.m2()).await;
    assert_eq!(
        (&theirs.body["claimed"], &theirs.body["used"]),
        (&json!(0), &json!(0))
    );
    for since in [at(-24 * 40), at(41)] {
        let r = app
            .get(&format!("/v1/reports/today?since={since}"), &app.platform)
            .await;
        assert_eq!(
            (r.status, r.body["field"].as_str()),
            (StatusCode::BAD_REQUEST, Some("since")),
            "{since}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_and_reconciliation_on_sqlite() {
    reports(TestApp::new().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_and_reconciliation_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        reports(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_and_reconciliation_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        reports(app).await;
    }
}
