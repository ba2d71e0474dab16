//! Merchants never see or change one another's objects: the answer is 404, as if absent.

use axum::http::StatusCode;
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn merchants_cannot_see_or_touch_each_others_templates() {
    let app = TestApp::new().await;
    let r = app
        .post("/v1/templates", app.m1(), standalone_template(10, 20))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.body["id"].as_i64().unwrap();
    let path = format!("/v1/templates/{id}");

    assert_eq!(app.get(&path, app.m1()).await.status, StatusCode::OK);
    assert_eq!(app.get(&path, app.m2()).await.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get(&path, &app.platform).await.status, StatusCode::OK);
    let patch = app
        .patch(&path, app.m2(), json!({"title": "mine now"}))
        .await;
    assert_eq!(
        (patch.status, patch.code()),
        (StatusCode::NOT_FOUND, "not_found")
    );
    let publish = app
        .post(&format!("{path}/publish"), app.m2(), json!({}))
        .await;
    assert_eq!(publish.status, StatusCode::NOT_FOUND);
    let abort = app
        .post(&format!("{path}/abort"), app.m2(), json!({}))
        .await;
    assert_eq!(abort.status, StatusCode::NOT_FOUND);
    let list = app.get("/v1/templates", app.m2()).await;
    assert_eq!(list.body["items"].as_array().unwrap().len(), 0);
    // Nothing changed.
    let t = app.get(&path, app.m1()).await;
    assert_eq!(
        (t.body["title"].as_str(), t.body["status"].as_str()),
        (Some("10% off, at most 50"), Some("draft"))
    );

    // A merchant reads only its own merchant record.
    let (m1, m2) = (app.merchants[0].0, app.merchants[1].0);
    assert_eq!(
        app.get(&format!("/v1/merchants/{m1}"), app.m1())
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        app.get(&format!("/v1/merchants/{m2}"), app.m1())
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn merchants_see_only_activities_in_their_cities() {
    let app = TestApp::new().await;
    // Cities 1 and 2: merchant 1 operates there, merchant 2 (city 3) does not.
    let id = app.activity(activity_body(-1, 24, 48, 96)).await;
    let path = format!("/v1/activities/{id}");
    assert_eq!(app.get(&path, app.m1()).await.status, StatusCode::OK);
    assert_eq!(app.get(&path, app.m2()).await.status, StatusCode::NOT_FOUND);
    let l1 = app.get("/v1/activities", app.m1()).await;
    assert_eq!(l1.body["items"].as_array().unwrap().len(), 1);
    let l2 = app.get("/v1/activities", app.m2()).await;
    assert_eq!(l2.body["items"].as_array().unwrap().len(), 0);
    // Merchant 2 cannot enroll in it either: the activity is invisible to it.
    let r = app
        .post("/v1/templates", app.m2(), activity_template(id, 2000))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "not_found")
    );
    assert_eq!(r.body["field"], "activity_id");
    // Merchants see only enrolling activities by default; other statuses on request.
    app.clock
        .set(coupond_domain::Timestamp::parse(&at(50)).unwrap());
    assert_eq!(
        app.get("/v1/activities", app.m1()).await.body["items"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    let running = app.get("/v1/activities?status=running", app.m1()).await;
    assert_eq!(running.body["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn the_platform_filters_templates_by_merchant_and_merchants_see_only_their_own() {
    let app = TestApp::new().await;
    let (m1, m2) = (app.merchants[0].0, app.merchants[1].0);
    let mut ids = vec![];
    for (key, city) in [(app.m1(), 1), (app.m2(), 3), (app.m1(), 1)] {
        let mut body = standalone_template(10, 20);
        body["cities"] = json!([city]);
        let r = app.post("/v1/templates", key, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        ids.push(r.body["id"].as_i64().unwrap());
    }
    let listed = |r: &Reply| -> Vec<i64> {
        r.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_i64().unwrap())
            .collect()
    };
    let r = app
        .get(&format!("/v1/templates?merchant_id={m1}"), &app.platform)
        .await;
    assert_eq!(listed(&r), [ids[0], ids[2]], "{}", r.body);
    let r = app
        .get(&format!("/v1/templates?merchant_id={m2}"), &app.platform)
        .await;
    assert_eq!(listed(&r), [ids[1]]);
    assert_eq!(listed(&app.get("/v1/templates", &app.platform).await), ids);
    // A merchant naming itself sees its own; naming another sees nothing.
    let r = app
        .get(&format!("/v1/templates?merchant_id={m1}"), app.m1())
        .await;
    assert_eq!(listed(&r), [ids[0], ids[2]]);
    let r = app
        .get(&format!("/v1/templates?merchant_id={m2}"), app.m1())
        .await;
    assert_eq!((r.status, listed(&r)), (StatusCode::OK, vec![]));
    let r = app.get("/v1/templates?merchant_id=0", &app.platform).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("merchant_id"))
    );
}

#[tokio::test]
async fn support_sees_a_users_coupons_merchants_only_of_their_own_templates() {
    let app = TestApp::new().await;
    let mine = crate::claims::live(&app, 10, 1, json!({})).await;
    // A template of the second merchant (city 3), claimable at the same time.
    let mut body = standalone_template(10, 20);
    body["cities"] = json!([3]);
    let theirs = app.post("/v1/templates", app.m2(), body).await.body["id"]
        .as_i64()
        .unwrap();
    let r = app
        .post(
            &format!("/v1/templates/{theirs}/publish"),
            app.m2(),
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    for t in [mine, theirs] {
        let r = app
            .post(
                &format!("/v1/templates/{t}/claims"),
                &app.service,
                json!({"user_id": "u-7"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    }
    let templates = |r: &Reply| -> Vec<i64> {
        let mut v: Vec<i64> = r.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["template"]["id"].as_i64().unwrap())
            .collect();
        v.sort_unstable();
        v
    };
    let path = "/v1/users/u-7/coupons";
    assert_eq!(
        templates(&app.get(path, &app.platform).await),
        [mine, theirs]
    );
    assert_eq!(
        templates(&app.get(path, &app.service).await),
        [mine, theirs]
    );
    assert_eq!(templates(&app.get(path, app.m1()).await), [mine]);
    assert_eq!(templates(&app.get(path, app.m2()).await), [theirs]);
    assert_eq!(app.get(path, &app.user).await.status, StatusCode::FORBIDDEN);
}
