//! Two instances on one database, with nothing between them (no Redis): what one changes, the
//! other sees within `cache_ttl`, however its memory was filled.

use std::time::Duration as StdDuration;

use axum::http::StatusCode;
use coupond_api::AppSettings;
use serde_json::json;
use time::Duration;

use crate::claims::live;
use crate::support::*;

/// Claims one coupon of `t` for `user` through `app`'s router; the answer's status and code.
async fn claim(app: &TestApp, t: i64, user: &str) -> (StatusCode, String) {
    let r = app
        .post(
            &format!("/v1/templates/{t}/claims"),
            &app.service,
            json!({ "user_id": user }),
        )
        .await;
    (r.status, r.code().to_owned())
}

/// Sell out on A, B learns it from the database; A raises the stock. B answers from memory
/// only within `cache_ttl`, then asks the database again and issues.
async fn top_up_reaches_the_other_instance(backend: Backend) {
    let ttl = StdDuration::from_secs(1);
    let settings = AppSettings {
        cache_ttl: ttl,
        ..AppSettings::default()
    };
    let Some(a) = TestApp::with_settings(backend, settings).await else {
        return;
    };
    let b = a.twin();
    let t = live(&a, 3, 1, json!({})).await;
    for u in ["u-a1", "u-a2", "u-a3"] {
        assert_eq!(claim(&a, t, u).await.0, StatusCode::CREATED);
    }
    let sold_out = (StatusCode::CONFLICT, "sold_out".to_owned());
    assert_eq!(claim(&a, t, "u-a4").await, sold_out);
    assert_eq!(claim(&b, t, "u-b1").await, sold_out, "B asked the database");
    let r = a
        .patch(
            &format!("/v1/templates/{t}"),
            a.m1(),
            json!({"total_stock": 100}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // Nothing told B; its memory may answer for at most `cache_ttl`.
    a.clock.advance(Duration::milliseconds(1_001));
    assert_eq!(
        claim(&b, t, "u-b2").await,
        (StatusCode::CREATED, String::new()),
        "B still refused a claim the database accepts, past cache_ttl after the top-up"
    );
    assert_eq!(claim(&b, t, "u-b3").await.0, StatusCode::CREATED);
}

#[tokio::test]
async fn a_top_up_reaches_another_instance_on_sqlite() {
    top_up_reaches_the_other_instance(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_top_up_reaches_another_instance_on_postgres() {
    top_up_reaches_the_other_instance(Backend::Postgres).await;
}

/// A template looked up while a draft (claims answer 404) is claimable as soon as it is
/// published, not `cache_ttl` later.
#[tokio::test]
async fn publishing_clears_the_template_cache() {
    let app = remembering().await;
    let mut body = standalone_template(10, 20);
    body["total_stock"] = json!(5);
    let r = app.post("/v1/templates", app.m1(), body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let t = r.body["id"].as_i64().unwrap();
    app.clock
        .set(coupond_domain::Timestamp::parse(&at(15)).unwrap());
    let (status, code) = claim(&app, t, "u-early").await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::NOT_FOUND, "not_found")
    );
    let r = app
        .post(&format!("/v1/templates/{t}/publish"), app.m1(), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        claim(&app, t, "u-early").await.0,
        StatusCode::CREATED,
        "the draft read before publishing was still served from the cache"
    );
}

/// Aborting an activity ends its templates on every instance at once: the coupon centre stops
/// offering them, not `cache_ttl` later.
#[tokio::test]
async fn aborting_an_activity_clears_its_templates_from_memory() {
    let app = remembering().await;
    let a = app.activity(activity_body(0, 10, 11, 100)).await;
    let r = app
        .post("/v1/templates", app.m1(), activity_template(a, 500))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let t = r.body["id"].as_i64().unwrap();
    app.clock
        .set(coupond_domain::Timestamp::parse(&at(20)).unwrap());
    assert!(
        offered(&app, t).await,
        "the running activity's template is on offer"
    );
    let r = app
        .post(
            &format!("/v1/activities/{a}/abort"),
            &app.platform,
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(
        !offered(&app, t).await,
        "an aborted template was still offered from memory"
    );
}

/// Whether the coupon centre offers template `t` to the fixture's user.
async fn offered(app: &TestApp, t: i64) -> bool {
    let r = app.get("/v1/me/claimable", &app.user).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["template_id"] == t)
}

/// One instance on SQLite whose caches keep what they read for 10 minutes, so only a notice
/// makes it read again within a test.
async fn remembering() -> TestApp {
    let settings = AppSettings {
        cache_ttl: StdDuration::from_secs(600),
        ..AppSettings::default()
    };
    TestApp::with_settings(Backend::Sqlite, settings)
        .await
        .unwrap()
}
