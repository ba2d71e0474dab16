//! The lifecycle after a claim over HTTP, on every backend: revoke (and a locked coupon's
//! order refused at confirm), refunds under both policies with the reconciliation, deletions
//! and live changes with history. (Who holds the coupons and the events feed: `feeds.rs`.)

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::checkout::{claim, lease, template};
use crate::claims::live;
use crate::on_every_backend;
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

pub(crate) async fn amount_off(app: &TestApp, extra: Value) -> i64 {
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
    // Live: stock changed, claim window and fixed validity extended; nothing else.
    let live = format!("/v1/templates/{t}");
    let r = app.patch(&live, app.m1(), json!({"title": "new"})).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("title")),
        "{}",
        r.body
    );
    // (The stock may also go down, to what is claimed: `steering.rs`.)
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

on_every_backend!(revokes, refunds, void_policy, deletes_and_live_changes);
