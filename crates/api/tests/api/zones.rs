//! The platform's time zone (`platform.time_zone`): "today" and the days of stats are its
//! local days. In Shanghai (UTC+8) a claim at 2027-01-09T17:00Z is at 01:00 on the 10th, so
//! it counts in the 10th's day and in the 10th's "today", on every backend.

use axum::http::{Method, StatusCode};
use coupond_api::AppSettings;
use coupond_domain::{Timestamp, Zone};
use serde_json::json;

use crate::support::*;

/// Hours from day zero (2026-03-01) to 2027-01-09T17:00Z.
const CLAIM_HOUR: i64 = 314 * 24 + 17;

fn set(app: &TestApp, t: &str) {
    app.clock.set(Timestamp::parse(t).unwrap());
}

async fn local_days(backend: Backend) {
    let settings = AppSettings {
        time_zone: Zone::parse("Asia/Shanghai").unwrap(),
        ..AppSettings::default()
    };
    let Some(app) = TestApp::with_settings(backend, settings).await else {
        return;
    };
    assert_eq!(at(CLAIM_HOUR), "2027-01-09T17:00:00Z");
    let r = app
        .post(
            "/v1/templates",
            app.m1(),
            standalone_template(CLAIM_HOUR - 30, CLAIM_HOUR + 48),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let t = r.body["id"].as_i64().unwrap();
    let r = app
        .post(&format!("/v1/templates/{t}/publish"), app.m1(), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    set(&app, "2027-01-09T17:00:00Z");
    let r = app
        .call(
            Method::POST,
            &format!("/v1/templates/{t}/claims"),
            Some(&app.user),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);

    // Stats by day: the claim is in the 10th, whose day began at 16:00 UTC on the 9th.
    let r = app
        .get(&format!("/v1/templates/{t}/stats?days=2"), app.m1())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let days = r.body["per_day"].as_array().unwrap();
    assert_eq!(
        (&days[0]["date"], &days[0]["day"], &days[0]["claimed"]),
        (
            &json!("2027-01-09"),
            &json!("2027-01-08T16:00:00Z"),
            &json!(0)
        ),
        "{}",
        r.body
    );
    assert_eq!(
        (&days[1]["date"], &days[1]["day"], &days[1]["claimed"]),
        (
            &json!("2027-01-10"),
            &json!("2027-01-09T16:00:00Z"),
            &json!(1)
        ),
        "{}",
        r.body
    );

    // Today, the 10th until 16:00 UTC: the claim counts, from local midnight.
    for now in ["2027-01-09T17:00:00Z", "2027-01-10T15:59:00Z"] {
        set(&app, now);
        let r = app.get("/v1/reports/today", &app.platform).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        assert_eq!(
            (
                &r.body["since"],
                &r.body["date"],
                &r.body["time_zone"],
                &r.body["claimed"]
            ),
            (
                &json!("2027-01-09T16:00:00Z"),
                &json!("2027-01-10"),
                &json!("Asia/Shanghai"),
                &json!(1)
            ),
            "{now}: {}",
            r.body
        );
    }
    // The 11th: a new day, nothing claimed yet; the 10th is yesterday in the stats.
    set(&app, "2027-01-10T16:00:00Z");
    let r = app.get("/v1/reports/today", app.m1()).await;
    assert_eq!(
        (&r.body["date"], &r.body["claimed"]),
        (&json!("2027-01-11"), &json!(0)),
        "{}",
        r.body
    );
    let r = app
        .get(&format!("/v1/templates/{t}/stats?days=2"), app.m1())
        .await;
    assert_eq!(
        (
            &r.body["per_day"][0]["date"],
            &r.body["per_day"][0]["claimed"]
        ),
        (&json!("2027-01-10"), &json!(1)),
        "{}",
        r.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_days_on_sqlite() {
    local_days(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_days_on_postgres() {
    local_days(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_days_on_mysql() {
    local_days(Backend::Mysql).await;
}

/// With the default zone, UTC, the same claim is on the 9th.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn utc_is_the_default() {
    let app = TestApp::new().await;
    set(&app, "2027-01-09T17:00:00Z");
    let r = app.get("/v1/reports/today", &app.platform).await;
    assert_eq!(
        (&r.body["since"], &r.body["date"], &r.body["time_zone"]),
        (
            &json!("2027-01-09T00:00:00Z"),
            &json!("2027-01-09"),
            &json!("UTC")
        ),
        "{}",
        r.body
    );
}
