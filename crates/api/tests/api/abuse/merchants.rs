//! Merchants outside their activity's bounds or on others' listings.

use super::*;

#[tokio::test]
async fn enrolled_templates_cannot_be_edited_out_of_their_activity() {
    let app = TestApp::new().await;
    let activity = app.activity(activity_body(-1, 24, 48, 96)).await;
    let r = app
        .post("/v1/templates", app.m1(), activity_template(activity, 2000))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let path = format!("/v1/templates/{}", r.body["id"]);
    let before = dump(&app).await;
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    for (patch, code, field) in [
        (
            json!({"value": {"kind": "amount_off", "amount": 5001}}),
            "value_out_of_bounds",
            "value",
        ),
        (
            json!({"value": {"kind": "amount_off", "amount": 99}}),
            "value_out_of_bounds",
            "value",
        ),
        (
            json!({"value": {"kind": "percent_off", "bps": 1000}}),
            "kind_mismatch",
            "value.kind",
        ),
        (json!({"cities": [3]}), "city_not_served", "cities"),
        (
            json!({"claim_window": {"start": at(47), "end": at(60)}}),
            "window_out_of_bounds",
            "claim_window",
        ),
        (
            json!({"claim_window": {"start": at(50), "end": at(97)}}),
            "window_out_of_bounds",
            "claim_window",
        ),
        (
            json!({"validity": {"type": "fixed", "from": at(48), "until": at(50)}}),
            "window_out_of_bounds",
            "validity.until",
        ),
        (json!({"total_stock": 0}), "invalid_value", "total_stock"),
        (
            json!({"activity_id": activity + 1}),
            "unknown_field",
            "activity_id",
        ),
    ] {
        let r = app.patch(&path, app.m1(), patch.clone()).await;
        assert_problem(&r, unprocessable, code, Some(field), &patch.to_string());
    }
    assert_unchanged(
        &before,
        &dump(&app).await,
        "edits out of the activity's bounds",
    );
    // Within the bounds, the same edit goes through.
    let r = app
        .patch(
            &path,
            app.m1(),
            json!({"value": {"kind": "amount_off", "amount": 5000}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

#[tokio::test]
async fn merchants_cannot_bind_their_templates_to_others_listings() {
    let app = TestApp::new().await;
    let listing = |city: i64| json!({"city_id": city, "category_id": 1, "title": "Loft", "price": 100000, "deposit": 0});
    let theirs = app.post("/v1/listings", app.m1(), listing(1)).await.body["id"]
        .as_i64()
        .unwrap();
    let mine = app.post("/v1/listings", app.m2(), listing(3)).await.body["id"]
        .as_i64()
        .unwrap();
    // Merchant 2's own live template (city 3).
    let mut body = standalone_template(10, 20);
    body["cities"] = json!([3]);
    let r = app.post("/v1/templates", app.m2(), body).await;
    let t2 = r.body["id"].as_i64().unwrap();
    let r = app
        .post(&format!("/v1/templates/{t2}/publish"), app.m2(), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // Merchant 1's template bound to its own listing: merchant 2 must not unbind it either.
    let t1 = live(&app, 10, 1, json!({})).await;
    let r = app
        .call(
            Method::PUT,
            &format!("/v1/listings/{theirs}/templates/{t1}"),
            Some(app.m1()),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let before = dump(&app).await;
    for method in [Method::PUT, Method::DELETE] {
        for t in [t2, t1] {
            let path = format!("/v1/listings/{theirs}/templates/{t}");
            let r = app.call(method.clone(), &path, Some(app.m2()), None).await;
            assert_problem(
                &r,
                StatusCode::NOT_FOUND,
                "not_found",
                None,
                &format!("{method} {path}"),
            );
        }
    }
    assert_unchanged(
        &before,
        &dump(&app).await,
        "binds to another merchant's listing",
    );
    let r = app
        .call(
            Method::PUT,
            &format!("/v1/listings/{mine}/templates/{t2}"),
            Some(app.m2()),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "its own: {}", r.body);
}
