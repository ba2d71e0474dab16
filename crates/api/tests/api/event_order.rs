//! Each template's events in the order their transactions committed: a template created,
//! published and claimed within moments has its status events before its claims (before,
//! the scheduler announced the publication later, after the claims it allowed), and its
//! `template.sold_out` after its last `coupon.claimed` (PostgreSQL's claim function wrote it
//! before the claims of the batch that sold out). A scheduled template whose window opens
//! while the scheduler sleeps has its `active` announced by its first claim, before it.

use axum::http::StatusCode;
use coupond_domain::Timestamp;
use coupond_store::events::kind;
use serde_json::json;

use crate::support::*;

/// Template `t`'s events as (kind, status it moved to).
async fn events_of(app: &TestApp, t: i64) -> Vec<(String, String)> {
    app.store
        .inspect()
        .events_after(0, 10_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.body["template_id"] == t)
        .map(|e| {
            (
                e.kind.clone(),
                e.body["to"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

async fn one_templates_events_keep_its_order(app: TestApp) {
    app.clock.set(Timestamp::parse(&at(15)).unwrap());
    let mut body = standalone_template(10, 20);
    body["total_stock"] = json!(3);
    body["per_user_limit"] = json!(1);
    let r = app.post("/v1/templates", app.m1(), body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let t = r.body["id"].as_i64().unwrap();
    let r = app
        .post(&format!("/v1/templates/{t}/publish"), app.m1(), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    for u in ["u-o1", "u-o2", "u-o3", "u-o4"] {
        let path = format!("/v1/templates/{t}/claims");
        app.post(&path, &app.service, json!({ "user_id": u })).await;
    }
    // The scheduler passes afterwards, as a lease holder would a moment later.
    crate::scheduling::scheduler(&app).run_once().await.unwrap();
    let kinds = events_of(&app, t).await;
    let last_status = kinds
        .iter()
        .rposition(|(k, _)| k == kind::TEMPLATE_STATUS_CHANGED)
        .expect("its status was announced");
    let first_claim = kinds
        .iter()
        .position(|(k, _)| k == kind::COUPON_CLAIMED)
        .expect("claimed");
    assert!(
        last_status < first_claim,
        "a claim came before its publication: {kinds:?}"
    );
    assert_eq!(kinds[last_status].1, "active", "{kinds:?}");
    let last_claim = kinds
        .iter()
        .rposition(|(k, _)| k == kind::COUPON_CLAIMED)
        .unwrap();
    let sold_out = kinds
        .iter()
        .position(|(k, _)| k == kind::TEMPLATE_SOLD_OUT)
        .expect("sold out");
    assert!(last_claim < sold_out, "{kinds:?}");
    let announced_twice = kinds
        .iter()
        .filter(|(k, to)| k == kind::TEMPLATE_STATUS_CHANGED && to == "active")
        .count();
    assert_eq!(announced_twice, 1, "{kinds:?}");
}

#[tokio::test]
async fn one_templates_events_keep_its_order_on_sqlite() {
    one_templates_events_keep_its_order(TestApp::new().await).await;
}

#[tokio::test]
async fn one_templates_events_keep_its_order_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        one_templates_events_keep_its_order(app).await;
    }
}

#[tokio::test]
async fn one_templates_events_keep_its_order_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        one_templates_events_keep_its_order(app).await;
    }
}

/// Published while scheduled, the scheduler announces `scheduled`; the window then opens
/// and a claim comes before the scheduler's next pass: the claim announces `active` first.
async fn an_opening_window_is_announced_before_its_first_claim(app: TestApp) {
    app.clock.set(Timestamp::parse(&at(5)).unwrap());
    let r = app
        .post("/v1/templates", app.m1(), standalone_template(10, 20))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let t = r.body["id"].as_i64().unwrap();
    let path = format!("/v1/templates/{t}/publish");
    let r = app.post(&path, app.m1(), json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let scheduler = crate::scheduling::scheduler(&app);
    scheduler.run_once().await.unwrap();
    app.clock.set(Timestamp::parse(&at(11)).unwrap());
    let path = format!("/v1/templates/{t}/claims");
    let r = app
        .post(&path, &app.service, json!({ "user_id": "u-w1" }))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    scheduler.run_once().await.unwrap();
    let kinds = events_of(&app, t).await;
    let active = kinds
        .iter()
        .position(|(k, to)| k == kind::TEMPLATE_STATUS_CHANGED && to == "active");
    let claimed = kinds.iter().position(|(k, _)| k == kind::COUPON_CLAIMED);
    assert!(
        matches!((active, claimed), (Some(a), Some(c)) if a < c),
        "the claim came before the window's opening: {kinds:?}"
    );
    let actives = kinds.iter().filter(|(_, to)| to == "active").count();
    assert_eq!(actives, 1, "{kinds:?}");
}

#[tokio::test]
async fn an_opening_window_is_announced_before_its_first_claim_on_sqlite() {
    an_opening_window_is_announced_before_its_first_claim(TestApp::new().await).await;
}

#[tokio::test]
async fn an_opening_window_is_announced_before_its_first_claim_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        an_opening_window_is_announced_before_its_first_claim(app).await;
    }
}

#[tokio::test]
async fn an_opening_window_is_announced_before_its_first_claim_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        an_opening_window_is_announced_before_its_first_claim(app).await;
    }
}
