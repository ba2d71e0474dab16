//! The lifecycle after a claim over HTTP, on every backend: revoke (and a locked coupon's
//! order refused at confirm), refunds under both policies with the reconciliation, who
//! holds a template's coupons, the events feed, deletions and live changes with history.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::checkout::{claim, lease, template};
use crate::claims::live;
use crate::support::*;

async fn lock(app: &TestApp, order: &str, coupons: &[i64]) -> Reply {
    app.post(
        &format!("/v1/orders/{order}/lock"),
        &app.service,
        json!({"order": lease(app), "coupon_ids": coupons}),
    )
    .await
}

async fn step(app: &TestApp, order: &str, action: &str, body: Option<Value>) -> Reply {
    let path = format!("/v1/orders/{order}/{action}");
    app.call(Method::POST, &path, Some(&app.service), body)
        .await
}

async fn amount_off(app: &TestApp, extra: Value) -> i64 {
    let mut value = json!({"kind": "amount_off", "amount": 50000});
    if let Value::Object(more) = extra {
        for (k, v) in more {
            value[k] = v;
        }
    }
    let terms = json!({"value": value, "deduction": "upfront", "stacking": "stackable"});
    live(app, 10, 5, terms).await
}

async fn revokes(app: TestApp) {
    let t = amount_off(&app, json!({})).await;
    let (c1, c2, c3) = (
        claim(&app, t).await,
        claim(&app, t).await,
        claim(&app, t).await,
    );
    let path = |c: i64| format!("/v1/coupons/{c}/revoke");
    // Another merchant cannot reach it; a missing reason is named.
    let r = app.post(&path(c1), app.m2(), json!({"reason": "x"})).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    let r = app.post(&path(c1), app.m1(), json!({})).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let r = app
        .post(&path(c1), app.m1(), json!({"reason": " \u{202E} "}))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert_eq!(r.body["field"], "reason", "{}", r.body);
    let r = app
        .post(&path(c1), app.m1(), json!({"reason": "fraud"}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        (r.body["status"].as_str(), r.body["usable"].as_bool()),
        (Some("revoked"), Some(false))
    );
    let again = app
        .post(&path(c1), &app.platform, json!({"reason": "fraud"}))
        .await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    let h = app
        .get(&format!("/v1/coupons/{c1}/history"), &app.user)
        .await;
    let last = h.body["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (last["to"].as_str(), last["reason"].as_str()),
        (Some("revoked"), Some("fraud"))
    );
    // The wallet says why it cannot be used.
    let w = app.get("/v1/me/coupons?status=revoked", &app.user).await;
    assert_eq!(
        w.body["items"][0]["unusable_reasons"],
        json!(["revoked"]),
        "{}",
        w.body
    );

    // A locked coupon: revoked under its order, whose confirm is then refused.
    let r = lock(&app, "held", &[c2]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = app
        .post(&path(c2), &app.platform, json!({"reason": "chargeback"}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = step(&app, "held", "confirm", None).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "coupon_revoked"),
        "{}",
        r.body
    );
    let r = step(&app, "held", "cancel", None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    // Used: refused with a code saying what to do instead.
    assert_eq!(lock(&app, "paid", &[c3]).await.status, StatusCode::OK);
    assert_eq!(
        step(&app, "paid", "confirm", None).await.status,
        StatusCode::OK
    );
    let r = app
        .post(&path(c3), &app.platform, json!({"reason": "late"}))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "coupon_used"),
        "{}",
        r.body
    );
    let stats = app.get(&format!("/v1/templates/{t}/stats"), app.m1()).await;
    assert_eq!(stats.body["revoked"], 2, "{}", stats.body);
    assert_eq!(
        app.store
            .audit(app.clock.now_ts(), time::Duration::minutes(1))
            .await
            .unwrap(),
        vec![]
    );
}

async fn refunds(app: TestApp) {
    let back = amount_off(&app, json!({})).await;
    let void = template(
        &app,
        json!({"kind": "deposit_waiver", "cap": 100000}),
        "upfront",
        "stackable",
    )
    .await;
    let r = app
        .patch(
            &format!("/v1/templates/{void}"),
            app.m1(),
            json!({"refund_policy": "void"}),
        )
        .await;
    // Terms are fixed once claiming has started: the policy is set at creation.
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let (a, b) = (claim(&app, back).await, claim(&app, void).await);
    assert_eq!(lock(&app, "o-1", &[a, b]).await.status, StatusCode::OK);
    let r = step(&app, "o-1", "refund", None).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "order_not_confirmed"),
        "{}",
        r.body
    );
    assert_eq!(
        step(&app, "o-1", "confirm", None).await.status,
        StatusCode::OK
    );
    let r = step(
        &app,
        "o-1",
        "refund",
        Some(json!({"coupon_ids": [a, 999999]})),
    )
    .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "not_in_order"),
        "{}",
        r.body
    );
    let r = step(
        &app,
        "o-1",
        "refund",
        Some(json!({"coupon_ids": [a], "reason": "returned"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["refunds"][0]["status"], "unused", "{}", r.body);
    assert_eq!(r.body["refunds"][0]["discount"], 50000, "{}", r.body);
    assert_eq!(r.body["refunds"][0]["new"], true);
    let r = step(&app, "o-1", "refund", None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let got: Vec<(i64, &str, bool)> = r.body["refunds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["coupon_id"].as_i64().unwrap(),
                x["status"].as_str().unwrap(),
                x["new"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, vec![(a, "unused", false), (b, "unused", true)]);
    // Back in the wallet, usable again; the budget used and the stats give it back.
    let w = app.get("/v1/me/coupons?status=unused", &app.user).await;
    assert_eq!(w.body["items"].as_array().unwrap().len(), 2, "{}", w.body);
    let stats = app
        .get(&format!("/v1/templates/{back}/stats"), app.m1())
        .await;
    assert_eq!(
        (
            stats.body["used"].as_i64(),
            stats.body["discount_given"].as_i64()
        ),
        (Some(0), Some(0)),
        "{}",
        stats.body
    );
    let period = format!("/v1/reports/reconciliation?from={}&to={}", at(0), at(48));
    let rec = app.get(&period, &app.platform).await;
    assert_eq!(rec.status, StatusCode::OK, "{}", rec.body);
    let total = &rec.body["total"];
    assert_eq!(
        (
            total["coupons_used"].as_i64(),
            total["coupons_refunded"].as_i64(),
            total["net_discount"].as_i64()
        ),
        (Some(2), Some(2), Some(0)),
        "{}",
        rec.body
    );
    let csv = app
        .call(
            Method::GET,
            &format!("{period}&format=csv"),
            Some(&app.platform),
            None,
        )
        .await;
    assert_eq!(csv.status, StatusCode::OK);
    assert_eq!(
        app.store
            .audit(app.clock.now_ts(), time::Duration::minutes(1))
            .await
            .unwrap(),
        vec![]
    );
    let _ = void;
}

async fn void_policy(app: TestApp) {
    let mut body = standalone_template(10, 20);
    body["value"] = json!({"kind": "amount_off", "amount": 50000});
    body["threshold"] = json!(0);
    body["refund_policy"] = json!("void");
    let r = app.post("/v1/templates", app.m1(), body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["refund_policy"], "void", "{}", r.body);
    let t = r.body["id"].as_i64().unwrap();
    let r = app
        .post(&format!("/v1/templates/{t}/publish"), app.m1(), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    app.clock
        .set(coupond_domain::Timestamp::parse(&at(15)).unwrap());
    let c = claim(&app, t).await;
    assert_eq!(lock(&app, "v-1", &[c]).await.status, StatusCode::OK);
    assert_eq!(
        step(&app, "v-1", "confirm", None).await.status,
        StatusCode::OK
    );
    let r = step(&app, "v-1", "refund", None).await;
    assert_eq!(r.body["refunds"][0]["status"], "revoked", "{}", r.body);
    let r = app
        .post("/v1/templates", app.m1(), json!({"refund_policy": "keep"}))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
}

async fn holders_and_events(app: TestApp) {
    let t = amount_off(&app, json!({})).await;
    let (c1, _c2) = (claim(&app, t).await, claim(&app, t).await);
    let path = format!("/v1/templates/{t}/coupons");
    let r = app.get(&format!("{path}?limit=1"), app.m1()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["items"][0]["id"], c1);
    let next = r.body["next_cursor"].as_str().unwrap().to_owned();
    let r = app
        .get(&format!("{path}?limit=1&cursor={next}"), &app.platform)
        .await;
    assert_eq!(
        (
            r.body["items"].as_array().unwrap().len(),
            r.body.get("next_cursor")
        ),
        (1, None)
    );
    let r = app
        .get(&format!("{path}?user_id=nobody"), &app.platform)
        .await;
    assert_eq!(r.body["items"], json!([]));
    let r = app.get(&format!("{path}?status=used"), &app.platform).await;
    assert_eq!(r.body["items"], json!([]));
    assert_eq!(app.get(&path, app.m2()).await.status, StatusCode::NOT_FOUND);
    let csv = app
        .call(
            Method::GET,
            &format!("{path}?format=csv&limit=1"),
            Some(app.m1()),
            None,
        )
        .await;
    assert_eq!(csv.status, StatusCode::OK);
    assert!(csv.headers.get("next-cursor").is_some());
    let r = app.get(&format!("{path}?format=xml"), app.m1()).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("format"))
    );

    // The feed: everything for the platform, page by page; only its own for a merchant.
    let r = app.get("/v1/events?limit=2", &app.platform).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let mut cursor = r.body["next_cursor"].as_str().unwrap().to_owned();
    let mut kinds: Vec<String> = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect();
    loop {
        let r = app
            .get(&format!("/v1/events?limit=2&after={cursor}"), &app.platform)
            .await;
        let items = r.body["items"].as_array().unwrap().clone();
        cursor = r.body["next_cursor"].as_str().unwrap().to_owned();
        if items.is_empty() {
            break;
        }
        kinds.extend(items.iter().map(|e| e["type"].as_str().unwrap().to_owned()));
    }
    assert_eq!(
        kinds.iter().filter(|k| *k == "coupon.claimed").count(),
        2,
        "{kinds:?}"
    );
    let r = app.get("/v1/events?type=coupon.claimed", app.m1()).await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 2, "{}", r.body);
    assert_eq!(r.body["items"][0]["data"]["template_id"], t);
    let r = app.get("/v1/events", app.m2()).await;
    assert_eq!(r.body["items"], json!([]), "{}", r.body);
    let r = app.get("/v1/events?type=nope", &app.platform).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("type"))
    );
    let r = app.get("/v1/events?after=bogus", &app.platform).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("after"))
    );
    newest_first(&app, &cursor).await;
}

/// `order=desc`: the same events newest first, a page at a time; a feed cursor (`feed`) or
/// another order is refused.
async fn newest_first(app: &TestApp, feed: &str) {
    let ids = |r: &Reply| -> Vec<i64> {
        r.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_i64().unwrap())
            .collect()
    };
    let mut all = ids(&app.get("/v1/events?limit=200", &app.platform).await);
    all.reverse();
    let mut newest = Vec::new();
    let mut path = "/v1/events?order=desc&limit=2".to_owned();
    loop {
        let r = app.get(&path, &app.platform).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let page = ids(&r);
        if page.is_empty() {
            break;
        }
        newest.extend(page);
        let next = r.body["next_cursor"].as_str().unwrap();
        path = format!("/v1/events?order=desc&limit=2&after={next}");
    }
    assert_eq!(newest, all);
    let r = app
        .get("/v1/events?order=desc&type=coupon.claimed", app.m1())
        .await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 2, "{}", r.body);
    for (query, field) in [
        ("order=sideways".to_owned(), "order"),
        (format!("order=desc&after={feed}"), "after"),
    ] {
        let r = app.get(&format!("/v1/events?{query}"), &app.platform).await;
        assert_eq!(
            (r.status, r.body["field"].as_str()),
            (StatusCode::BAD_REQUEST, Some(field)),
            "{query}"
        );
    }
}

async fn deletes_and_live_changes(app: TestApp) {
    let r = app
        .post("/v1/templates", app.m1(), standalone_template(10, 20))
        .await;
    let draft = r.body["id"].as_i64().unwrap();
    // An issuance job asked for on the draft (it issues nothing) does not keep it.
    let upload = axum::http::Request::builder()
        .method("POST")
        .uri(format!("/v1/templates/{draft}/issuances"))
        .header("authorization", format!("Bearer {}", app.m1()))
        .header("content-type", "text/csv")
        .body(axum::body::Body::from("u-1\nu-2\n"))
        .unwrap();
    let r = app.send(upload).await;
    assert!(r.status.is_success(), "{} {}", r.status, r.body);
    assert_eq!(
        app.call(
            Method::DELETE,
            &format!("/v1/templates/{draft}"),
            Some(app.m2()),
            None
        )
        .await
        .status,
        StatusCode::NOT_FOUND
    );
    let r = app
        .call(
            Method::DELETE,
            &format!("/v1/templates/{draft}"),
            Some(app.m1()),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    assert_eq!(
        app.get(&format!("/v1/templates/{draft}"), app.m1())
            .await
            .status,
        StatusCode::NOT_FOUND
    );

    let t = amount_off(&app, json!({})).await;
    let r = app
        .call(
            Method::DELETE,
            &format!("/v1/templates/{t}"),
            Some(app.m1()),
            None,
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "not_draft"),
        "{}",
        r.body
    );
    let c = claim(&app, t).await;
    // Live: stock raised, claim window and fixed validity extended; nothing else.
    let live = format!("/v1/templates/{t}");
    let r = app.patch(&live, app.m1(), json!({"title": "new"})).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("title")),
        "{}",
        r.body
    );
    let r = app.patch(&live, app.m1(), json!({"total_stock": 5})).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("total_stock")),
        "{}",
        r.body
    );
    let r = app
        .patch(
            &live,
            app.m1(),
            json!({
                "total_stock": 40,
                "claim_window": {"start": at(10), "end": at(30)},
                "validity": {"type": "fixed", "from": at(10), "until": at(60)}
            }),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["total_stock"], 40, "{}", r.body);
    let h = app.get(&format!("{live}/history"), &app.platform).await;
    assert_eq!(h.status, StatusCode::OK, "{}", h.body);
    let changes = &h.body["items"][0]["changes"];
    assert_eq!(
        changes["total_stock"],
        json!({"from": 10, "to": 40}),
        "{}",
        h.body
    );
    assert!(
        changes.get("claim_window").is_some() && changes.get("validity").is_some(),
        "{}",
        h.body
    );
    assert_eq!(
        h.body["items"][0]["actor"].as_str().unwrap(),
        format!("merchant:{}", app.merchants[0].0)
    );
    // The coupon already held is valid for as long as the template now says.
    let w = app
        .get(&format!("/v1/templates/{t}/coupons"), app.m1())
        .await;
    assert_eq!(w.body["items"][0]["id"], c);
    assert_eq!(
        w.body["items"][0]["valid_until"].as_str(),
        Some(at(60).as_str()),
        "{}",
        w.body
    );

    let l = app
        .post(
            "/v1/listings",
            app.m1(),
            json!({"city_id": 1, "category_id": 1, "title": "Flat", "price": 1000, "deposit": 0}),
        )
        .await;
    assert_eq!(l.status, StatusCode::CREATED, "{}", l.body);
    let l = l.body["id"].as_i64().unwrap();
    let r = app
        .call(
            Method::PUT,
            &format!("/v1/listings/{l}/templates/{t}"),
            Some(app.m1()),
            None,
        )
        .await;
    assert!(r.status.is_success(), "{}", r.body);
    assert_eq!(
        app.call(
            Method::DELETE,
            &format!("/v1/listings/{l}"),
            Some(app.m2()),
            None
        )
        .await
        .status,
        StatusCode::NOT_FOUND
    );
    let r = app
        .call(
            Method::DELETE,
            &format!("/v1/listings/{l}"),
            Some(app.m1()),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    assert_eq!(
        app.get(&format!("/v1/listings/{l}"), app.m1()).await.status,
        StatusCode::NOT_FOUND
    );
}

macro_rules! on_every_backend {
    ($($case:ident),*) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(crate::support::TestApp::new().await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    if let Some(app) = crate::support::TestApp::postgres().await {
                        super::$case(app).await;
                    }
                }
            )*
        }
        mod mysql {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    if let Some(app) = crate::support::TestApp::mysql().await {
                        super::$case(app).await;
                    }
                }
            )*
        }
    };
}

on_every_backend!(
    revokes,
    refunds,
    void_policy,
    holders_and_events,
    deletes_and_live_changes
);
