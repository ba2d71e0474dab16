//! Named rules over HTTP on every backend: one rule on two templates, a new version both
//! follow (live ones included) with an audit entry before and after, its scope replacing
//! theirs, a rule in use kept, and rules owned: a merchant reads and uses its own and the
//! platform's, and changes only its own.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::checkout::claim;
use crate::claims::live;
use crate::on_every_backend;
use crate::support::*;

/// 2 mugs of 150.00 in category 1 and a 700.00 lamp in category 2, from `channel`.
fn cart(app: &TestApp, channel: &str) -> Value {
    let m = app.merchants[0].0.get();
    json!({
        "user_id": "u-1", "city_id": 1, "channel": channel,
        "lines": [
            {"product_id": "mug", "merchant_id": m, "category_id": 1,
             "unit_price": 15000, "quantity": 2, "kind": "item"},
            {"product_id": "lamp", "merchant_id": m, "category_id": 2,
             "unit_price": 70000, "quantity": 1, "kind": "item"}
        ]
    })
}

fn spend(at_least: i64) -> Value {
    json!({"all": [{"fact": "order.subtotal", "op": "gte", "value": at_least}]})
}

async fn quoted(app: &TestApp, channel: &str) -> Vec<Value> {
    let r = app
        .post(
            "/v1/quotes",
            &app.service,
            json!({"order": cart(app, channel)}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body["coupons"].as_array().unwrap().clone()
}

async fn put_rule(app: &TestApp, who: &str, id: i64, body: Value) -> Reply {
    let path = format!("/v1/rules/{id}");
    app.call(Method::PUT, &path, Some(who), Some(body)).await
}

async fn one_rule_on_two_templates_which_follow_it(app: TestApp) {
    let body = json!({"name": "Big baskets", "conditions": spend(150_000)});
    let r = app.post("/v1/rules", &app.platform, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let rule = r.body["id"].as_i64().unwrap();
    assert_eq!(r.body["version"], 1);
    // One template with the rule alone, one with its own condition too (both must hold).
    let uses = |own: Option<Value>| {
        let mut terms = json!({"rule_id": rule, "value": {"kind": "amount_off", "amount": 10000},
                               "stacking": "stackable"});
        if let Some(c) = own {
            terms["conditions"] = c;
        }
        terms
    };
    let plain = live(&app, 10, 1, uses(None)).await;
    let app_only = json!({"fact": "order.channel", "op": "eq", "value": "app"});
    let in_app = live(&app, 10, 1, uses(Some(app_only))).await;
    let (c1, c2) = (claim(&app, plain).await, claim(&app, in_app).await);

    // 1000.00 is 500.00 short of the rule: both say so.
    for c in quoted(&app, "web").await {
        assert_eq!(c["reasons"], json!(["conditions_unmet"]), "{c}");
        let spend = c["unmet"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["fact"] == "order.subtotal");
        assert_eq!(spend.unwrap()["need"], 50_000, "{c}");
    }

    // Version 2: 200.00 of what is not in category 2. Both templates follow at once.
    let v2 = json!({"name": "Baskets", "conditions": spend(20_000),
                    "scope": {"type": "all", "exclude": {"category_ids": [2]}}});
    let r = put_rule(&app, &app.platform, rule, v2.clone()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["version"], 2);
    let q = quoted(&app, "web").await;
    let of = |id: i64| q.iter().find(|c| c["coupon_id"] == id).unwrap();
    assert_eq!(of(c1)["applicable"], true, "{}", of(c1));
    assert_eq!(of(c1)["discount"], 10_000);
    assert_eq!(of(c2)["unmet"][0]["fact"], "order.channel", "{}", of(c2));
    // The rule's scope is theirs: the 100.00 comes off the mugs, not the lamp.
    let body = json!({"order": cart(&app, "app"), "coupon_ids": [c1, c2]});
    let r = app.post("/v1/orders/o-1/lock", &app.service, body).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["lines"], json!([{"line": 0, "amount": 20000}]));

    // The rule lists its templates; the trail has the change with both versions.
    let r = app.get(&format!("/v1/rules/{rule}"), &app.platform).await;
    assert_eq!(r.body["templates"], json!([plain, in_app]), "{}", r.body);
    assert_eq!(r.body["scope"], v2["scope"]);
    let trail = app
        .get(&format!("/v1/audit?object=rule:{rule}"), &app.platform)
        .await;
    let update = &trail.body["items"][0];
    assert_eq!(update["action"], "rule.update", "{}", trail.body);
    assert_eq!(update["before"]["conditions"], spend(150_000));
    assert_eq!(update["after"]["conditions"], spend(20_000));
    let r = app
        .get(&format!("/v1/templates/{plain}/history"), app.m1())
        .await;
    assert!(r.body.to_string().contains("\"rule\""), "{}", r.body);

    // In use: kept. An unused rule goes.
    let r = app
        .call(
            Method::DELETE,
            &format!("/v1/rules/{rule}"),
            Some(&app.platform),
            None,
        )
        .await;
    assert_eq!((r.status, r.code()), (StatusCode::CONFLICT, "rule_in_use"));
    let body = json!({"name": "Spare", "conditions": spend(1)});
    let spare = app.post("/v1/rules", &app.platform, body).await.body["id"].clone();
    let path = format!("/v1/rules/{spare}");
    let r = app
        .call(Method::DELETE, &path, Some(&app.platform), None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    assert_eq!(
        app.get(&path, &app.platform).await.status,
        StatusCode::NOT_FOUND
    );
}

async fn rules_are_owned(app: TestApp) {
    let body = json!({"name": "Mine", "conditions": spend(100)});
    let r = app.post("/v1/rules", app.m1(), body.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let mine = r.body["id"].as_i64().unwrap();
    assert_eq!(r.body["merchant_id"], app.merchants[0].0.get());
    let platform = app.post("/v1/rules", &app.platform, body.clone()).await;
    let theirs = platform.body["id"].as_i64().unwrap();
    // Another merchant neither reads nor uses nor changes it.
    let path = format!("/v1/rules/{mine}");
    assert_eq!(app.get(&path, app.m2()).await.status, StatusCode::NOT_FOUND);
    assert_eq!(
        put_rule(&app, app.m2(), mine, body.clone()).await.status,
        StatusCode::NOT_FOUND
    );
    let mut t = standalone_template(10, 20);
    t["rule_id"] = json!(mine);
    let r = app.post("/v1/templates", app.m2(), t.clone()).await;
    assert_eq!(
        (r.body["field"].as_str(), r.code()),
        (Some("rule_id"), "not_found"),
        "{}",
        r.body
    );
    // Its owner uses it, and the platform's; lists both; changes only its own.
    assert_eq!(
        app.post("/v1/templates", app.m1(), t.clone()).await.status,
        StatusCode::CREATED
    );
    t["rule_id"] = json!(theirs);
    assert_eq!(
        app.post("/v1/templates", app.m1(), t).await.status,
        StatusCode::CREATED
    );
    let ids: Vec<i64> = app.get("/v1/rules", app.m1()).await.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, vec![mine, theirs]);
    let r = put_rule(&app, app.m1(), theirs, body.clone()).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    // An enrollment's terms are reviewed by the platform: its rule no longer changes.
    let activity = app.activity(activity_body(-1, 24, 48, 96)).await;
    let mut enrolled = activity_template(activity, 1000);
    enrolled["rule_id"] = json!(mine);
    let r = app.post("/v1/templates", app.m1(), enrolled).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = put_rule(&app, app.m1(), mine, body).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "rule_in_activity"),
        "{}",
        r.body
    );
    // A bad rule names every broken field.
    let bad = json!({"name": "", "conditions": {"all": [{"fact": "order.subtotal", "op": "in", "value": 1}]}});
    let r = app.post("/v1/rules", app.m1(), bad).await;
    assert_eq!(
        fields(&r.body),
        vec!["name", "conditions.all[0].op"],
        "{}",
        r.body
    );
}

on_every_backend!(one_rule_on_two_templates_which_follow_it, rules_are_owned);
