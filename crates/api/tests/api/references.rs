//! Finding templates and activities again, on every backend: external references (unique per
//! owner, found with `?external_id=`), the list filters by city, activity, kind, status and
//! pause, and by the reference's `source` and `type` (listings by their activities' type).

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::on_every_backend;
use crate::support::*;

fn ids(r: &Reply) -> Vec<i64> {
    r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_i64().unwrap())
        .collect()
}

fn with(mut body: Value, extra: Value) -> Value {
    if let Value::Object(more) = extra {
        for (k, v) in more {
            body[k] = v;
        }
    }
    body
}

async fn created(app: &TestApp, who: &str, body: Value) -> i64 {
    let r = app.post("/v1/templates", who, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.body["id"].as_i64().unwrap()
}

async fn references_are_unique_per_owner(app: TestApp) {
    let reference = json!({"source": "crm", "type": "spring", "external_id": "CRM-1"});
    let body = with(standalone_template(10, 20), json!({"reference": reference}));
    let r = app.post("/v1/templates", app.m1(), body.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["reference"], reference);
    let first = r.body["id"].as_i64().unwrap();
    let r = app.post("/v1/templates", app.m1(), body.clone()).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "external_id_taken"),
        "{}",
        r.body
    );
    // Another owner may use the same id: the platform here.
    let platform = created(&app, &app.platform, body.clone()).await;
    let bad = with(body, json!({"reference": {"external_id": ""}}));
    let r = app.post("/v1/templates", app.m1(), bad).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert_eq!(r.body["field"], "reference.external_id", "{}", r.body);

    let found = app.get("/v1/templates?external_id=CRM-1", app.m1()).await;
    assert_eq!(ids(&found), vec![first], "a merchant finds its own");
    let found = app
        .get("/v1/templates?external_id=CRM-1", &app.platform)
        .await;
    assert_eq!(ids(&found), vec![first, platform]);
    // A draft's reference changes with a patch; the old id is free again.
    let path = format!("/v1/templates/{first}");
    let r = app
        .patch(
            &path,
            app.m1(),
            json!({"reference": {"external_id": "CRM-2"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["reference"], json!({"external_id": "CRM-2"}));
    let found = app.get("/v1/templates?external_id=CRM-1", app.m1()).await;
    assert!(ids(&found).is_empty());

    let a = json!({"reference": {"source": "ops", "external_id": "FEST-26"}});
    let activity = app
        .activity(with(activity_body(0, 24, 48, 96), a.clone()))
        .await;
    let r = app
        .post(
            "/v1/activities",
            &app.platform,
            with(activity_body(0, 24, 48, 96), a),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "external_id_taken")
    );
    let found = app
        .get("/v1/activities?external_id=FEST-26", &app.platform)
        .await;
    assert_eq!(ids(&found), vec![activity]);
}

async fn lists_filter_by_city_kind_status_and_pause(app: TestApp) {
    let in_one = created(&app, app.m1(), standalone_template(10, 20)).await;
    let two = with(
        standalone_template(10, 20),
        json!({"cities": [2], "value": {"kind": "amount_off", "amount": 500}}),
    );
    let in_two = created(&app, app.m1(), two).await;
    let a = app.activity(activity_body(0, 24, 48, 96)).await;
    let r = app
        .post("/v1/templates", app.m1(), activity_template(a, 900))
        .await;
    let enrolled = r.body["id"].as_i64().unwrap();
    let app = &app;
    let list =
        |q: String| async move { ids(&app.get(&format!("/v1/templates?{q}"), app.m1()).await) };
    assert_eq!(list("city_id=2".into()).await, vec![in_two]);
    assert_eq!(list("city_id=1".into()).await, vec![in_one, enrolled]);
    assert_eq!(list("kind=amount_off".into()).await, vec![in_two, enrolled]);
    assert_eq!(
        list("kind=percent_off&city_id=1".into()).await,
        vec![in_one]
    );
    assert_eq!(list(format!("activity_id={a}")).await, vec![enrolled]);
    assert_eq!(list("status=draft".into()).await, vec![in_one, in_two]);
    let r = app
        .call(
            axum::http::Method::POST,
            &format!("/v1/activities/{a}/pause"),
            Some(&app.platform),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(list("paused=true".into()).await, vec![enrolled]);
    assert_eq!(list("paused=false".into()).await, vec![in_one, in_two]);
    let r = app.get("/v1/templates?city_id=x", app.m1()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);

    let acts = |q: &'static str| async move {
        ids(&app.get(&format!("/v1/activities?{q}"), &app.platform).await)
    };
    assert_eq!(acts("paused=true").await, vec![a]);
    assert_eq!(acts("kind=amount_off&city_id=2").await, vec![a]);
    assert!(acts("kind=percent_off").await.is_empty());
    assert!(acts("city_id=3").await.is_empty());
}

/// The designs' `appId` and `cubeType` filter what they name (issue 61 point 12): templates and
/// activities by `?source=` and `?type=`, listings by the type of the activities whose coupons
/// are live on them.
async fn lists_filter_by_source_and_type(app: TestApp) {
    let reference = |r: Value| with(standalone_template(10, 20), json!({"reference": r}));
    let spring = created(
        &app,
        app.m1(),
        reference(json!({"source": "crm", "type": "spring"})),
    )
    .await;
    let autumn = created(
        &app,
        app.m1(),
        reference(json!({"source": "crm", "type": "autumn"})),
    )
    .await;
    let plain = created(&app, app.m1(), standalone_template(10, 20)).await;
    let app = &app;
    let list = |q: &'static str| async move {
        ids(&app.get(&format!("/v1/templates?{q}"), app.m1()).await)
    };
    assert_eq!(list("source=crm").await, vec![spring, autumn]);
    assert_eq!(list("type=spring").await, vec![spring]);
    assert_eq!(list("source=crm&type=autumn").await, vec![autumn]);
    assert!(list("source=erp").await.is_empty());
    assert_eq!(list("").await, vec![spring, autumn, plain]);
    let long = format!("/v1/templates?type={}", "x".repeat(129));
    for (path, field) in [("/v1/templates?source=", "source"), (long.as_str(), "type")] {
        let r = app.get(path, app.m1()).await;
        assert_eq!(
            (r.status, r.body["field"].as_str()),
            (StatusCode::BAD_REQUEST, Some(field)),
            "{}",
            r.body
        );
    }

    let cube = |t: &str, s: &str| {
        with(
            activity_body(0, 24, 48, 96),
            json!({"reference": {"type": t, "source": s}}),
        )
    };
    let a = app.activity(cube("cube-a", "ops")).await;
    let b = app.activity(cube("cube-b", "crm")).await;
    let acts = |q: &'static str| async move {
        ids(&app.get(&format!("/v1/activities?{q}"), &app.platform).await)
    };
    assert_eq!(acts("type=cube-a").await, vec![a]);
    assert_eq!(acts("source=crm").await, vec![b]);

    let r = app
        .post("/v1/templates", app.m1(), activity_template(a, 900))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let enrolled = r.body["id"].as_i64().unwrap();
    let listing = app
        .post(
            "/v1/listings",
            app.m1(),
            json!({"city_id": 1, "category_id": 1, "title": "Loft", "price": 100000}),
        )
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let bind = format!("/v1/listings/{listing}/templates/{enrolled}");
    let r = app
        .call(axum::http::Method::PUT, &bind, Some(app.m1()), None)
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    app.clock.advance(time::Duration::hours(50));
    let search = |q: &'static str| async move {
        ids(&app.get(&format!("/v1/listings?{q}"), &app.service).await)
    };
    assert_eq!(search("activity_type=cube-a").await, vec![listing]);
    assert!(search("activity_type=cube-b").await.is_empty());
}

on_every_backend!(
    references_are_unique_per_owner,
    lists_filter_by_city_kind_status_and_pause,
    lists_filter_by_source_and_type
);
