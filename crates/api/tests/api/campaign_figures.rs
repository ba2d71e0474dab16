//! The worked example of the campaign figures (kept beside the reconciliation's tests), on
//! every backend: an activity whose funding splits each discount 60/40 between the platform
//! and the merchant, two merchants' templates, coupons reaching their holders through three
//! channels (a claim's `source`, the service, a listing), three orders and one refund, and
//! four orders paid without a coupon beside them. The performance report, the settlement and
//! the reconciliation give the figures stated here to the minor unit, and agree with one
//! another.

use axum::http::{Method, StatusCode};
use coupond_domain::{ActivityId, TemplateId, Timestamp};
use coupond_store::Baseline;
use serde_json::{json, Value};

use crate::on_every_backend;
use crate::support::*;

fn set(app: &TestApp, hours: i64) {
    app.clock.set(Timestamp::parse(&at(hours)).unwrap());
}

/// An order of `amount` for `user` in `city` (one item line of merchant `m`).
fn order(user: &str, (m, city): (i64, i64), amount: i64) -> Value {
    json!({
        "user_id": user,
        "city_id": city,
        "lines": [{"product_id": "p-1", "merchant_id": m, "category_id": 1,
                   "unit_price": amount, "quantity": 1, "kind": "item"}]
    })
}

/// The service claims a coupon of `template` for `user`, with `extra` in the body.
async fn claim_for(app: &TestApp, template: i64, user: &str, extra: Value) -> i64 {
    let mut body = json!({"user_id": user});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let path = format!("/v1/templates/{template}/claims");
    let r = app.post(&path, &app.service, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.body["id"].as_i64().unwrap()
}

/// Locks and confirms `coupon` for `user` on an order of `amount` from merchant `m`.
async fn spend(
    app: &TestApp,
    order_id: &str,
    (user, m): (&str, (i64, i64)),
    coupon: i64,
    amount: i64,
) {
    let lock = format!("/v1/orders/{order_id}/lock");
    let body = json!({"order": order(user, m, amount), "coupon_ids": [coupon]});
    let r = app.post(&lock, &app.service, body).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let confirm = format!("/v1/orders/{order_id}/confirm");
    let r = app
        .call(Method::POST, &confirm, Some(&app.service), None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

/// The activity (60 % platform), its two templates (merchant 1: 20.00 off; merchant 2: 10.01
/// off), a listing of merchant 2; three coupons, three orders, o-2 refunded at hour 30.
async fn campaign(app: &TestApp) -> (i64, i64, i64, i64) {
    let mut body = activity_body(-1, 5, 10, 100);
    body.as_object_mut().unwrap().remove("funded_by");
    body["funding"] = json!({"platform_bps": 6000});
    body["cities"] = json!([1, 2, 3]);
    let a = app.activity(body).await;
    let mut ids = vec![];
    // Merchant 2 serves city 3 only.
    for (key, amount, city) in [(app.m1(), 2000, 1), (app.m2(), 1001, 3)] {
        let mut template = activity_template(a, amount);
        template["cities"] = json!([city]);
        let r = app.post("/v1/templates", key, template).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        ids.push(r.body["id"].as_i64().unwrap());
    }
    let (t1, t2) = (ids[0], ids[1]);
    let listing = json!({"city_id": 3, "category_id": 1, "title": "Loft", "price": 100000});
    let r = app.post("/v1/listings", app.m2(), listing).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let l = r.body["id"].as_i64().unwrap();
    set(app, 15);
    let c1 = claim_for(app, t1, "u-1", json!({"source": "app-home"})).await;
    let c2 = claim_for(app, t1, "u-2", json!({})).await;
    let c3 = claim_for(app, t2, "u-1", json!({"listing_id": l})).await;
    let (m1, m2) = (app.merchants[0].0.get(), app.merchants[1].0.get());
    set(app, 20);
    spend(app, "o-1", ("u-1", (m1, 1)), c1, 50_000).await;
    set(app, 21);
    spend(app, "o-2", ("u-2", (m1, 1)), c2, 30_000).await;
    set(app, 22);
    spend(app, "o-3", ("u-1", (m2, 3)), c3, 20_000).await;
    plain_orders(app, (m1, m2)).await;
    set(app, 30);
    let r = app
        .post(
            "/v1/orders/o-2/refund",
            &app.service,
            json!({"reason": "returned"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    set(app, 50);
    (a, t1, t2, l)
}

/// Orders paid without a coupon at hour 23: merchant 1's of 400.00 and 200.00, merchant 2's
/// of 90.00, one of both merchants' of 110.00; and one at hour 49, after the period.
async fn plain_orders(app: &TestApp, (m1, m2): (i64, i64)) {
    set(app, 23);
    let mut both = order("u-5", (m1, 1), 6_000);
    let mut line = both["lines"][0].clone();
    line["merchant_id"] = json!(m2);
    line["unit_price"] = json!(5_000);
    both["lines"].as_array_mut().unwrap().push(line);
    let orders = [
        ("p-1", order("u-3", (m1, 1), 40_000)),
        ("p-2", order("u-4", (m1, 1), 20_000)),
        ("p-3", order("u-3", (m2, 3), 9_000)),
        ("p-4", both),
    ];
    for (id, body) in orders {
        let path = format!("/v1/orders/{id}/record");
        let r = app.post(&path, &app.service, json!({"order": body})).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    }
    set(app, 49);
    let r = app
        .post(
            "/v1/orders/p-5/record",
            &app.service,
            json!({"order": order("u-3", (m1, 1), 70_000)}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

/// `without_coupon` of a line: orders, value, average.
fn without(v: &Value) -> [i64; 3] {
    let w = &v["without_coupon"];
    [
        n(w, &["orders"]),
        n(w, &["gmv"]),
        n(w, &["average_order_value"]),
    ]
}

fn n(v: &Value, path: &[&str]) -> i64 {
    path.iter()
        .fold(v, |v, k| &v[*k])
        .as_i64()
        .unwrap_or_else(|| panic!("{path:?} in {v}"))
}

async fn worked_example(app: TestApp) {
    let (a, t1, _t2, l) = campaign(&app).await;
    keeper_counts_ahead(&app, a).await;
    let period = format!("from={}&to={}", at(0), at(48));
    let path = format!("/v1/reports/performance?activity_id={a}&{period}");
    let r = app.get(&path, &app.platform).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let totals = &r.body["totals"];
    assert_eq!(
        totals["funnel"],
        json!({"issued": 0, "claimed": 3, "locked": 3, "used": 3, "refunded": 1,
               "expired_unused": 0, "revoked": 0, "reached": 3, "lock_rate_bps": 10000,
               "use_rate_bps": 10000, "refund_rate_bps": 3333, "expiry_rate_bps": 0,
               "revoke_rate_bps": 0}),
        "{}",
        r.body
    );
    let figures = |v: &Value| {
        [
            "discount",
            "refunded_discount",
            "net_discount",
            "orders",
            "gmv",
            "orders_refunded",
            "refunded_gmv",
            "net_gmv",
        ]
        .map(|k| n(v, &[k]))
    };
    // 20.00 + 20.00 + 10.01 given, 20.00 back; 500 + 300 + 200 of orders, 300 refunded.
    assert_eq!(
        figures(totals),
        [5_001, 2_000, 3_001, 3, 100_000, 1, 30_000, 70_000]
    );
    assert_eq!(
        (
            n(totals, &["average_order_value"]),
            n(totals, &["gmv_per_discount_x100"])
        ),
        (33_333, 2_332),
        "70,000 / 3,001 = 23.32 times"
    );
    // The activity is the platform's: every order without a coupon in the period.
    assert_eq!(without(totals), [4, 80_000, 20_000], "{}", r.body);
    assert!(r.body.get("baseline_merchant_id").is_none(), "{}", r.body);
    assert_eq!(
        (r.body["currency"].as_str(), r.body["time_zone"].as_str()),
        (Some("CNY"), Some("UTC"))
    );
    let days = r.body["days"].as_array().unwrap();
    assert_eq!(days.len(), 2, "{}", r.body);
    assert_eq!(days[0]["date"], "2026-03-01");
    assert_eq!(
        figures(&days[0]),
        [5_001, 0, 5_001, 3, 100_000, 0, 0, 100_000]
    );
    assert_eq!(
        figures(&days[1]),
        [0, 2_000, -2_000, 0, 0, 1, 30_000, -30_000]
    );
    assert_eq!(without(&days[0]), [4, 80_000, 20_000]);
    assert_eq!(n(&days[1], &["without_coupon", "orders"]), 0);
    let channel = |name: &str| {
        r.body["channels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["channel"] == name)
            .unwrap_or_else(|| panic!("{name} in {}", r.body))
            .clone()
    };
    let listing = channel(&format!("listing:{l}"));
    assert_eq!(listing["kind"], "listing");
    assert_eq!(
        figures(&listing),
        [1_001, 0, 1_001, 1, 20_000, 0, 0, 20_000]
    );
    assert_eq!(
        figures(&channel("service")),
        [2_000, 2_000, 0, 1, 30_000, 1, 30_000, 0]
    );
    let source = channel("source:app-home");
    assert_eq!(
        (n(&source, &["funnel", "claimed"]), source["kind"].as_str()),
        (1, Some("source"))
    );
    assert_eq!(figures(&source), [2_000, 0, 2_000, 1, 50_000, 0, 0, 50_000]);
    assert_eq!(r.body["channels"].as_array().unwrap().len(), 3);
    assert!(source.get("without_coupon").is_none(), "{source}");

    // The CSV says the same: a total line, two days, three channels.
    let (status, text) = app
        .get_text(&format!("{path}&format=csv"), &app.platform)
        .await;
    assert_eq!(status, StatusCode::OK);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 7, "{text}");
    assert!(
        lines[1].starts_with(
            "total,,0,3,3,3,1,0,0,5001,2000,3001,3,100000,1,30000,70000,33333,2332,4,80000,20000,CNY"
        ),
        "{text}"
    );

    kept_hours_answer_the_same(&app, &path, &r.body).await;
    settlement_and_reconciliation(&app, &period).await;
    merchants_see_their_own(&app, a, t1, &period).await;
}

/// Before anyone asks, the figures keeper counts and keeps the settled hours of the platform
/// and of the running activity (as the platform asks for them): the report below is answered
/// from those, and gives the worked example's figures.
async fn keeper_counts_ahead(app: &TestApp, a: i64) {
    let keeper = coupond_engine::FiguresKeeper::new(
        app.store.clone(),
        std::sync::Arc::new(app.clock.clone()),
        "test",
    );
    assert_eq!(
        keeper.run_once().await.unwrap(),
        Some(2),
        "the platform and the activity"
    );
    let scope = coupond_engine::performance::Scope::Activity(ActivityId::new(a).unwrap());
    let covered =
        coupond_engine::performance::covered(app.store.as_ref(), scope, None, app.clock.now_ts())
            .await
            .unwrap();
    let key =
        coupond_engine::performance::figure_key(scope, None, covered.baseline, &covered.templates);
    let t = |h| Timestamp::parse(&at(h)).unwrap();
    let kept = app.store.kept_figures(&key, t(0), t(49)).await.unwrap();
    assert_eq!(kept.hours.len(), 49, "every settled hour up to hour 49");
}

/// The period's 48 hours ended over an hour before now: the first report counted and kept them;
/// the second reads them back and answers the same, to the last figure.
async fn kept_hours_answer_the_same(app: &TestApp, path: &str, first: &Value) {
    let ids: Vec<TemplateId> = app
        .store
        .activity_templates(ActivityId::new(first["activity_id"].as_i64().unwrap()).unwrap())
        .await
        .unwrap()
        .iter()
        .map(|t| t.id)
        .collect();
    let a = ActivityId::new(first["activity_id"].as_i64().unwrap()).unwrap();
    let scope = coupond_engine::performance::Scope::Activity(a);
    let key = coupond_engine::performance::figure_key(scope, None, Baseline::Platform, &ids);
    let t = |h| Timestamp::parse(&at(h)).unwrap();
    let kept = app.store.kept_figures(&key, t(0), t(48)).await.unwrap();
    assert_eq!(kept.hours.len(), 48);
    assert!(!kept.figures.channels.is_empty() && !kept.figures.orders.is_empty());
    assert_eq!(
        kept.figures.without.len(),
        1,
        "the orders without a coupon of hour 23"
    );
    let again = app.get(path, &app.platform).await;
    assert_eq!(&again.body, first);
}

/// Merchant 1 is owed 60 % of 40.00 given less 60 % of 20.00 refunded: 12.00; merchant 2, 60 %
/// of 10.01 = 6.006, rounded half away from zero to 6.01 (its 4.00 the rest). Together 18.01:
/// the reconciliation's platform share.
async fn settlement_and_reconciliation(app: &TestApp, period: &str) {
    let r = app
        .get(&format!("/v1/reports/settlement?{period}"), &app.platform)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let owed: Vec<(i64, i64, i64, i64)> = r.body["merchants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                n(m, &["merchant_id"]),
                n(m, &["platform_given"]),
                n(m, &["platform_refunded"]),
                n(m, &["owed"]),
            )
        })
        .collect();
    let (m1, m2) = (app.merchants[0].0.get(), app.merchants[1].0.get());
    assert_eq!(
        owed,
        [(m1, 2_400, 1_200, 1_200), (m2, 601, 0, 601)],
        "{}",
        r.body
    );
    assert_eq!(n(&r.body, &["total_owed"]), 1_801);
    // The two days add up to the whole: merchant 1's second day gives back the refund's part.
    let mut days = 0;
    for (a, b) in [(0, 24), (24, 48)] {
        let day = format!("/v1/reports/settlement?from={}&to={}", at(a), at(b));
        days += n(&app.get(&day, &app.platform).await.body, &["total_owed"]);
    }
    assert_eq!(days, 1_801);
    let r = app
        .get(
            &format!("/v1/reports/reconciliation?{period}"),
            &app.platform,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let p = &r.body["platform"];
    let m = &r.body["merchants"];
    assert_eq!(n(p, &["net_discount"]), 1_801, "{}", r.body);
    assert_eq!(n(m, &["net_discount"]), 1_200, "{}", r.body);
    assert_eq!(n(&r.body, &["total", "net_discount"]), 3_001);
    for row in r.body["rows"].as_array().unwrap() {
        assert_eq!(row["funded_by"], "shared");
        assert_eq!(row["funding"], json!({"platform_bps": 6000}));
        assert_eq!(
            n(row, &["platform_net"]) + n(row, &["merchant_net"]),
            n(row, &["net_discount"])
        );
    }
    let one = format!("/v1/reports/settlement?merchant_id={m2}&{period}&format=csv");
    let (status, text) = app.get_text(&one, &app.platform).await;
    assert_eq!(status, StatusCode::OK);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[1].ends_with(",6000,1,1001,601,0,0,0,601"), "{text}");
}

/// A merchant's performance report of the activity counts its own template only; another
/// merchant's settlement or template is not found.
async fn merchants_see_their_own(app: &TestApp, a: i64, t1: i64, period: &str) {
    let path = format!("/v1/reports/performance?activity_id={a}&{period}");
    let r = app.get(&path, app.m1()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        (
            n(&r.body, &["templates"]),
            n(&r.body, &["totals", "funnel", "claimed"])
        ),
        (1, 2)
    );
    // A merchant compares against its own orders without a coupon (not the order of both).
    let m1 = app.merchants[0].0.get();
    assert_eq!(n(&r.body, &["baseline_merchant_id"]), m1);
    assert_eq!(
        without(&r.body["totals"]),
        [2, 60_000, 30_000],
        "{}",
        r.body
    );
    // So does the platform, on a merchant's template.
    let r = app
        .get(
            &format!("/v1/reports/performance?template_id={t1}&{period}"),
            &app.platform,
        )
        .await;
    assert_eq!(
        without(&r.body["totals"]),
        [2, 60_000, 30_000],
        "{}",
        r.body
    );
    let theirs = format!("/v1/reports/performance?template_id={t1}&{period}");
    assert_eq!(
        app.get(&theirs, app.m2()).await.status,
        StatusCode::NOT_FOUND
    );
    let r = app
        .get(
            &format!("/v1/reports/settlement?merchant_id={m1}&{period}"),
            app.m2(),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = app
        .get(&format!("/v1/reports/settlement?{period}"), app.m2())
        .await;
    assert_eq!(n(&r.body, &["total_owed"]), 601, "{}", r.body);
    let both = format!("/v1/reports/performance?activity_id={a}&template_id={t1}&{period}");
    let r = app.get(&both, &app.platform).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("template_id"))
    );
    let long = format!("/v1/reports/performance?from={}&to={}", at(0), at(24 * 400));
    let r = app.get(&long, &app.platform).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("to"))
    );
}

/// Funding is a split: out of range or sent with the old `funded_by` is refused by field and
/// writes nothing; the old field alone still means all or nothing.
async fn funding_is_checked(app: TestApp) {
    let before = app.row_counts().await;
    for (funding, field) in [
        (
            json!({"funding": {"platform_bps": 10_001}}),
            "funding.platform_bps",
        ),
        (
            json!({"funding": {"platform_bps": 5000}, "funded_by": "platform"}),
            "funded_by",
        ),
    ] {
        let mut body = activity_body(-1, 5, 10, 100);
        body.as_object_mut().unwrap().remove("funded_by");
        for (k, v) in funding.as_object().unwrap() {
            body[k] = v.clone();
        }
        let r = app.post("/v1/activities", &app.platform, body).await;
        assert_eq!(
            (r.status, r.body["field"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some(field)),
            "{}",
            r.body
        );
    }
    assert_eq!(app.row_counts().await, before);
    let a = app.activity(activity_body(-1, 5, 10, 100)).await;
    let r = app.get(&format!("/v1/activities/{a}"), &app.platform).await;
    assert_eq!(
        r.body["funding"],
        json!({"platform_bps": 10000}),
        "{}",
        r.body
    );
    assert!(r.body.get("funded_by").is_none(), "{}", r.body);
    let r = app
        .patch(
            &format!("/v1/activities/{a}"),
            &app.platform,
            json!({"funding": {"platform_bps": 2500}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        r.body["funding"],
        json!({"platform_bps": 2500}),
        "{}",
        r.body
    );
}

on_every_backend!(worked_example, funding_is_checked);
