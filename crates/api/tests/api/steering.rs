//! Steering live campaigns over HTTP, on every backend: a template paused and resumed (claims,
//! codes and bulk issuance wait, coupons held stay usable), an activity paused with its
//! templates, a template stopped for good (coupons keep their validity), and a live stock
//! lowered down to what is claimed, never below.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::checkout::claim;
use crate::claims::live;
use crate::codes::user_token;
use crate::on_every_backend;
use crate::support::*;

fn set(app: &TestApp, hours: i64) {
    app.clock
        .set(coupond_domain::Timestamp::parse(&at(hours)).unwrap());
}

async fn act(app: &TestApp, path: &str, who: &str, body: Option<Value>) -> Reply {
    app.call(Method::POST, path, Some(who), body).await
}

async fn claim_reply(app: &TestApp, t: i64) -> Reply {
    let path = format!("/v1/templates/{t}/claims");
    app.call(Method::POST, &path, Some(&app.user), None).await
}

fn actions(body: &Value) -> Vec<&str> {
    body["actions"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The events of `kind` once at least `n` are readable: on PostgreSQL an event is readable
/// once every older transaction in the cluster has ended (other tests run beside this one).
async fn events_of(app: &TestApp, kind: &str, n: usize) -> Vec<Value> {
    for _ in 0..500 {
        let r = app
            .get(&format!("/v1/events?type={kind}"), &app.platform)
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let items = r.body["items"].as_array().cloned().unwrap_or_default();
        if items.len() >= n {
            return items;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("fewer than {n} {kind} events became readable");
}

async fn pauses_and_resumes_a_template(app: TestApp) {
    let t = live(&app, 10, 5, json!({})).await;
    let held = claim(&app, t).await;
    let path = |a: &str| format!("/v1/templates/{t}/{a}");
    // Another merchant cannot reach it; a reason that is not text is named.
    let r = act(&app, &path("pause"), app.m2(), None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    let bad = Some(json!({"reason": " \u{202E} "}));
    let r = act(&app, &path("pause"), app.m1(), bad).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let reason = Some(json!({"reason": "stock recount"}));
    let r = act(&app, &path("pause"), app.m1(), reason).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["status"], "active", "a pause is not a status");
    assert_eq!(
        (
            r.body["paused"]["reason"].as_str(),
            r.body["paused"]["scope"].as_str()
        ),
        (Some("stock recount"), Some("template"))
    );
    assert!(actions(&r.body).contains(&"resume") && !actions(&r.body).contains(&"pause"));
    let again = act(&app, &path("pause"), &app.platform, None).await;
    assert_eq!(
        (again.status, again.code()),
        (StatusCode::CONFLICT, "already_paused")
    );
    // The coupon centre stops offering it.
    let centre = app.get("/v1/me/claimable", &app.user).await;
    let offered: Vec<i64> = centre.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["template_id"].as_i64())
        .collect();
    assert!(!offered.contains(&t), "{}", centre.body);

    // Claims wait: the user's, the service's on a user's behalf, a shared code's.
    let r = claim_reply(&app, t).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "paused"),
        "{}",
        r.body
    );
    let r = app
        .post(&path("claims"), &app.service, json!({"user_id": "u-2"}))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "paused"),
        "{}",
        r.body
    );
    let code = json!({"code": "RECOUNT1"});
    let r = app
        .call(Method::PUT, &path("code"), Some(app.m1()), Some(code))
        .await;
    assert!(r.status.is_success(), "{}", r.body);
    let r = act(
        &app,
        "/v1/codes/RECOUNT1/redeem",
        &user_token(&app, "u-3"),
        None,
    )
    .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "paused"),
        "{}",
        r.body
    );
    // Bulk issuance waits instead of failing.
    let users = json!({"user_ids": ["u-4", "u-5"]});
    let r = app.post(&path("issuances"), app.m1(), users).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["state"], "pending", "{}", r.body);
    let job = r.body["id"].as_i64().unwrap();
    // The coupon already held stays usable.
    let w = app.get("/v1/me/coupons", &app.user).await;
    let mine = &w.body["items"][0];
    assert_eq!(
        (mine["id"].as_i64(), mine["status"].as_str()),
        (Some(held), Some("unused"))
    );

    let r = act(&app, &path("resume"), app.m1(), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body.get("paused"), None, "{}", r.body);
    let again = act(&app, &path("resume"), app.m1(), None).await;
    assert_eq!(
        (again.status, again.code()),
        (StatusCode::CONFLICT, "not_paused")
    );
    assert_eq!(claim_reply(&app, t).await.status, StatusCode::CREATED);
    let worker = app.state.issuance_worker();
    while worker.run_once().await.unwrap().is_some() {}
    let j = app.get(&format!("/v1/issuances/{job}"), app.m1()).await;
    assert_eq!(
        (j.body["state"].as_str(), j.body["issued"].as_u64()),
        (Some("done"), Some(2))
    );

    let paused = events_of(&app, "template.paused", 1).await;
    assert_eq!(paused.len(), 1, "{paused:?}");
    assert_eq!(paused[0]["data"]["reason"], "stock recount");
    assert_eq!(events_of(&app, "template.resumed", 1).await.len(), 1);
}

async fn an_activity_pauses_its_templates(app: TestApp) {
    // Enrolling now, running from hour 48: one template enrolled before the pause.
    let a = app.activity(activity_body(0, 24, 48, 96)).await;
    let enrolled = app
        .post("/v1/templates", app.m1(), activity_template(a, 2000))
        .await;
    assert_eq!(enrolled.status, StatusCode::CREATED, "{}", enrolled.body);
    let t1 = enrolled.body["id"].as_i64().unwrap();
    let path = |a_: &str| format!("/v1/activities/{a}/{a_}");
    let r = act(&app, &path("pause"), app.m1(), None).await;
    assert_eq!(
        r.status,
        StatusCode::FORBIDDEN,
        "the platform's only: {}",
        r.body
    );
    let r = act(
        &app,
        &path("pause"),
        &app.platform,
        Some(json!({"reason": "audit"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["paused"]["reason"], "audit");
    // A template enrolled while the activity is paused is paused with it.
    let later = app
        .post("/v1/templates", app.m1(), activity_template(a, 3000))
        .await;
    assert_eq!(later.status, StatusCode::CREATED, "{}", later.body);
    assert_eq!(later.body["paused"]["scope"], "activity", "{}", later.body);
    let t2 = later.body["id"].as_i64().unwrap();
    // Its templates cannot be resumed one by one.
    let r = act(&app, &format!("/v1/templates/{t1}/resume"), app.m1(), None).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "activity_paused")
    );
    set(&app, 50);
    let r = claim_reply(&app, t1).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "paused"),
        "{}",
        r.body
    );

    let r = act(&app, &path("resume"), &app.platform, None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    for t in [t1, t2] {
        let r = claim_reply(&app, t).await;
        assert_eq!(r.status, StatusCode::CREATED, "template {t}: {}", r.body);
    }
    let resumed = events_of(&app, "activity.resumed", 1).await;
    assert_eq!(
        resumed[0]["data"]["template_ids"],
        json!([t1, t2]),
        "{resumed:?}"
    );
}

async fn stops_claiming_and_keeps_coupons(app: TestApp) {
    let t = live(&app, 10, 5, json!({})).await;
    let held = claim(&app, t).await;
    let r = act(&app, &format!("/v1/templates/{t}/stop"), app.m1(), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["status"], "ended", "{}", r.body);
    assert_eq!(r.body["claim_window"]["end"], json!(app.clock.now_ts()));
    let r = claim_reply(&app, t).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "not_claimable")
    );
    let w = app.get("/v1/me/coupons", &app.user).await;
    let mine = &w.body["items"][0];
    assert_eq!(
        (mine["id"].as_i64(), mine["status"].as_str()),
        (Some(held), Some("unused"))
    );
    let again = act(&app, &format!("/v1/templates/{t}/stop"), app.m1(), None).await;
    assert_eq!(
        (again.status, again.code()),
        (StatusCode::CONFLICT, "not_active")
    );
    let h = app
        .get(&format!("/v1/templates/{t}/history"), app.m1())
        .await;
    let last = h.body["items"].as_array().unwrap().last().unwrap().clone();
    assert!(last["changes"].get("claim_window.end").is_some(), "{last}");
}

async fn lowers_a_live_stock_to_what_is_claimed(app: TestApp) {
    let t = live(&app, 10, 5, json!({})).await;
    for _ in 0..3 {
        claim(&app, t).await;
    }
    let path = format!("/v1/templates/{t}");
    let r = app.patch(&path, app.m1(), json!({"total_stock": 2})).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "below_claimed"),
        "{}",
        r.body
    );
    let r = app.patch(&path, app.m1(), json!({"total_stock": 4})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        (r.body["total_stock"].as_i64(), r.body["remaining"].as_i64()),
        (Some(4), Some(1))
    );
    assert_eq!(claim_reply(&app, t).await.status, StatusCode::CREATED);
    let r = claim_reply(&app, t).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "sold_out"),
        "{}",
        r.body
    );
    let r = app.patch(&path, app.m1(), json!({"total_stock": 4})).await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "down to exactly what is claimed: {}",
        r.body
    );
}

on_every_backend!(
    pauses_and_resumes_a_template,
    an_activity_pauses_its_templates,
    stops_claiming_and_keeps_coupons,
    lowers_a_live_stock_to_what_is_claimed
);
