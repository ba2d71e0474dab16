//! Bad input: a 4xx problem naming the field and a stable code, and nothing written.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use serde_json::{json, Value};

use crate::support::*;

/// Sends `body` as merchant 1 to POST /v1/templates and checks status, code and field, and that
/// no row was written.
async fn refused(
    app: &TestApp,
    path: &str,
    cred: &str,
    body: Value,
    status: StatusCode,
    code: &str,
    field: Option<&str>,
) {
    let before = app.row_counts().await;
    let r = app.post(path, cred, body.clone()).await;
    assert_eq!((r.status, r.code()), (status, code), "{body} -> {}", r.body);
    if let Some(f) = field {
        assert_eq!(r.body["field"].as_str(), Some(f), "{}", r.body);
    }
    assert_eq!(r.headers["content-type"], "application/problem+json");
    assert_eq!(app.row_counts().await, before, "nothing written for {body}");
}

#[tokio::test]
async fn templates_outside_their_activity_are_refused() {
    let app = TestApp::new().await;
    let id = app.activity(activity_body(-1, 24, 48, 96)).await;
    let p = "/v1/templates";
    let m1 = app.m1().to_owned();
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;

    let mut wrong_kind = activity_template(id, 2000);
    wrong_kind["value"] = json!({"kind": "percent_off", "bps": 1000});
    refused(
        &app,
        p,
        &m1,
        wrong_kind,
        unprocessable,
        "kind_mismatch",
        Some("value.kind"),
    )
    .await;
    let mut bogus_kind = activity_template(id, 2000);
    bogus_kind["value"] = json!({"kind": "bogus", "amount": 1});
    refused(
        &app,
        p,
        &m1,
        bogus_kind,
        unprocessable,
        "invalid_field",
        Some("value.kind"),
    )
    .await;
    refused(
        &app,
        p,
        &m1,
        activity_template(id, 99),
        unprocessable,
        "value_out_of_bounds",
        Some("value"),
    )
    .await;
    refused(
        &app,
        p,
        &m1,
        activity_template(id, 5001),
        unprocessable,
        "value_out_of_bounds",
        Some("value"),
    )
    .await;
    // The bounds in a person's words, with the units the request uses.
    let r = app
        .post("/v1/templates", &m1, activity_template(id, 99))
        .await;
    assert_eq!(
        r.body["detail"],
        "this activity takes values from 1.00 to 50.00 off (100 to 5000 minor units off)",
        "{}",
        r.body
    );
    let mut outside_window = activity_template(id, 2000);
    outside_window["claim_window"] = json!({"start": at(47), "end": at(60)});
    refused(
        &app,
        p,
        &m1,
        outside_window,
        unprocessable,
        "window_out_of_bounds",
        Some("claim_window"),
    )
    .await;
    let mut inverted = activity_template(id, 2000);
    inverted["claim_window"] = json!({"start": at(60), "end": at(50)});
    refused(
        &app,
        p,
        &m1,
        inverted,
        unprocessable,
        "invalid_field",
        Some("claim_window"),
    )
    .await;
    let mut wrong_city = activity_template(id, 2000);
    wrong_city["cities"] = json!([3]);
    refused(
        &app,
        p,
        &m1,
        wrong_city,
        unprocessable,
        "city_not_served",
        Some("cities"),
    )
    .await;
    let mut short_validity = activity_template(id, 2000);
    short_validity["validity"] = json!({"type": "fixed", "from": at(48), "until": at(50)});
    refused(
        &app,
        p,
        &m1,
        short_validity,
        unprocessable,
        "window_out_of_bounds",
        Some("validity.until"),
    )
    .await;
    let mut zero_stock = activity_template(id, 2000);
    zero_stock["total_stock"] = json!(0);
    refused(
        &app,
        p,
        &m1,
        zero_stock,
        unprocessable,
        "invalid_value",
        Some("total_stock"),
    )
    .await;
    refused(
        &app,
        p,
        &m1,
        activity_template(id + 100, 2000),
        unprocessable,
        "not_found",
        Some("activity_id"),
    )
    .await;
}

#[tokio::test]
async fn unknown_fields_and_mass_assignment_are_refused() {
    let app = TestApp::new().await;
    let id = app.activity(activity_body(-1, 24, 48, 96)).await;
    let m1 = app.m1().to_owned();
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    for (field, value) in [
        ("claimed", json!(5)),
        ("status", json!("active")),
        ("merchant_id", json!(2)),
        ("id", json!(9)),
    ] {
        let mut body = activity_template(id, 2000);
        body[field] = value;
        refused(
            &app,
            "/v1/templates",
            &m1,
            body,
            unprocessable,
            "unknown_field",
            Some(field),
        )
        .await;
    }
    let mut nested = activity_template(id, 2000);
    nested["value"]["extra"] = json!(1);
    refused(
        &app,
        "/v1/templates",
        &m1,
        nested,
        unprocessable,
        "unknown_field",
        Some("value.extra"),
    )
    .await;
    let mut missing = activity_template(id, 2000);
    missing.as_object_mut().unwrap().remove("title");
    refused(
        &app,
        "/v1/templates",
        &m1,
        missing,
        unprocessable,
        "missing_field",
        Some("title"),
    )
    .await;

    let mut activity = activity_body(-1, 24, 48, 96);
    activity["status"] = json!("running");
    refused(
        &app,
        "/v1/activities",
        &app.platform.clone(),
        activity,
        unprocessable,
        "unknown_field",
        Some("status"),
    )
    .await;
    let mut inverted = activity_body(-1, 24, 48, 96);
    inverted["value_min"] = json!(9000);
    refused(
        &app,
        "/v1/activities",
        &app.platform.clone(),
        inverted,
        unprocessable,
        "invalid_bounds",
        Some("value_max"),
    )
    .await;
    let overlapping = activity_body(-1, 50, 48, 96);
    refused(
        &app,
        "/v1/activities",
        &app.platform.clone(),
        overlapping,
        unprocessable,
        "invalid_window",
        Some("enrollment.end"),
    )
    .await;
    let mut bad_time = activity_body(-1, 24, 48, 96);
    bad_time["run"]["start"] = json!("tomorrow");
    refused(
        &app,
        "/v1/activities",
        &app.platform.clone(),
        bad_time,
        unprocessable,
        "invalid_field",
        Some("run.start"),
    )
    .await;
    let r = app
        .patch(
            &format!("/v1/activities/{id}"),
            &app.platform,
            json!({"version": 7}),
        )
        .await;
    assert_eq!((r.status, r.code()), (unprocessable, "unknown_field"));
    let r = app
        .post(
            "/v1/merchants",
            &app.platform,
            json!({"name": "", "short_name": "x", "cities": [1]}),
        )
        .await;
    assert_eq!(
        (r.status, r.code(), r.body["field"].as_str()),
        (unprocessable, "invalid_length", Some("name"))
    );
    let r = app
        .post(
            "/v1/merchants",
            &app.platform,
            json!({"name": "x", "short_name": "x", "cities": []}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (unprocessable, Some("cities"))
    );
}

#[tokio::test]
async fn malformed_oversized_and_mistyped_bodies_are_refused() {
    let app = TestApp::new().await;
    let before = app.row_counts().await;
    let send = |body: Body, content_type: Option<&str>| {
        let mut req = Request::builder()
            .method("POST")
            .uri("/v1/activities")
            .header(header::AUTHORIZATION, format!("Bearer {}", app.platform));
        if let Some(ct) = content_type {
            req = req.header(header::CONTENT_TYPE, ct);
        }
        req.body(body).unwrap()
    };
    let r = app
        .send(send(Body::from("{\"title\": "), Some("application/json")))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::BAD_REQUEST, "invalid_json")
    );
    let r = app
        .send(send(
            Body::from(activity_body(-1, 24, 48, 96).to_string()),
            Some("text/plain"),
        ))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")
    );
    let r = app
        .send(send(
            Body::from(activity_body(-1, 24, 48, 96).to_string()),
            None,
        ))
        .await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let mut huge = activity_body(-1, 24, 48, 96);
    huge["description"] = json!("x".repeat(70 * 1024));
    let r = app
        .send(send(Body::from(huge.to_string()), Some("application/json")))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")
    );
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let r = app
        .send(send(Body::from(deep), Some("application/json")))
        .await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("body"))
    );
    let mut deep_metadata = activity_template(1, 2000);
    deep_metadata["metadata"] = json!({"a": 1});
    let deep_metadata = deep_metadata.to_string().replace(
        "{\"a\":1}",
        &format!("{{\"a\":{}{}}}", "[".repeat(3000), "]".repeat(3000)),
    );
    let r = app
        .send(
            Request::builder()
                .method("POST")
                .uri("/v1/templates")
                .header(header::AUTHORIZATION, format!("Bearer {}", app.m1()))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(deep_metadata))
                .unwrap(),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::BAD_REQUEST, "invalid_json"),
        "{}",
        r.body
    );
    let r = app
        .send(send(Body::from(""), Some("application/json")))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::BAD_REQUEST, "invalid_json")
    );
    let trailing = format!("{} trailing", activity_body(-1, 24, 48, 96));
    let r = app
        .send(send(Body::from(trailing), Some("application/json")))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::BAD_REQUEST, "invalid_json")
    );
    let r = app.get("/v1/activities/0", &app.platform).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::BAD_REQUEST, "invalid_path")
    );
    let r = app
        .get("/v1/activities/99999999999999999999999", &app.platform)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = app
        .get("/v1/activities?status=sleeping", &app.platform)
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::BAD_REQUEST, "invalid_query")
    );
    assert_eq!(app.row_counts().await, before, "nothing written");
}

#[tokio::test]
async fn hostile_times_and_characters_are_refused_not_crashed() {
    let app = TestApp::new().await;
    let id = app.activity(activity_body(-1, 24, 48, 96)).await;
    let m1 = app.m1().to_owned();
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    // Valid as a local time, past year 9999 once converted to UTC.
    let mut t = standalone_template(10, 20);
    t["claim_window"]["end"] = json!("9999-12-31T23:30:00-01:00");
    refused(
        &app,
        "/v1/templates",
        &m1,
        t,
        unprocessable,
        "invalid_field",
        Some("claim_window.end"),
    )
    .await;
    let mut a = activity_body(-1, 24, 48, 96);
    a["run"]["end"] = json!("9999-12-31T23:59:59Z");
    refused(
        &app,
        "/v1/activities",
        &app.platform.clone(),
        a,
        unprocessable,
        "invalid_field",
        Some("run.end"),
    )
    .await;
    let mut nul = activity_template(id, 2000);
    nul["metadata"] = json!({"note": "a\u{0}b"});
    refused(
        &app,
        "/v1/templates",
        &m1,
        nul,
        unprocessable,
        "invalid_characters",
        Some("metadata"),
    )
    .await;
    let mut ctl = activity_template(id, 2000);
    ctl["title"] = json!("bell\u{7}");
    refused(
        &app,
        "/v1/templates",
        &m1,
        ctl,
        unprocessable,
        "invalid_characters",
        Some("title"),
    )
    .await;
    let mut huge = activity_template(id, 2000);
    huge["total_stock"] = json!(u64::MAX);
    refused(
        &app,
        "/v1/templates",
        &m1,
        huge,
        unprocessable,
        "invalid_field",
        Some("total_stock"),
    )
    .await;
    let mut float = activity_template(id, 2000);
    float["value"]["amount"] = json!(19.99);
    refused(
        &app,
        "/v1/templates",
        &m1,
        float,
        unprocessable,
        "invalid_field",
        Some("value"),
    )
    .await;
}

/// A body with several invalid fields names each of them in one answer (`errors`), not one
/// per attempt; the first is also the problem's `field`, and nothing is written.
#[tokio::test]
async fn every_invalid_field_is_named_at_once() {
    let app = TestApp::new().await;
    let before = app.row_counts().await;
    let mut body = standalone_template(0, 48);
    body["total_stock"] = json!("lots");
    body["per_user_limit"] = json!("two");
    body["colour"] = json!("red");
    let r = app.post("/v1/templates", app.m1(), body).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let errors = r.body["errors"]
        .as_array()
        .expect("errors lists every field");
    let fields: Vec<&str> = errors
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    for field in ["total_stock", "per_user_limit", "colour"] {
        assert!(fields.contains(&field), "{field} missing from {}", r.body);
    }
    assert_eq!(r.body["field"], errors[0]["field"]);
    let colour = errors.iter().find(|e| e["field"] == "colour").unwrap();
    assert_eq!(colour["code"], "unknown_field");
    assert!(
        errors
            .iter()
            .all(|e| !e["detail"].as_str().unwrap().contains("line")),
        "{}",
        r.body
    );
    assert_eq!(app.row_counts().await, before);

    // The fields' own rules too: every one broken is named, with its code.
    let mut rules = standalone_template(0, 48);
    rules["title"] = json!("");
    rules["total_stock"] = json!(0);
    rules["per_user_limit"] = json!(0);
    let r = app.post("/v1/templates", app.m1(), rules).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let errors = r.body["errors"]
        .as_array()
        .expect("errors lists every rule");
    let fields: Vec<&str> = errors
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        ["title", "total_stock", "per_user_limit"],
        "{}",
        r.body
    );
    assert!(errors[1]["detail"]
        .as_str()
        .unwrap()
        .contains("must be from 1 to"));
    assert_eq!(app.row_counts().await, before);

    // One invalid field: the problem as before, without a list.
    let mut one = standalone_template(0, 48);
    one["total_stock"] = json!(-1);
    let r = app.post("/v1/templates", app.m1(), one).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.body["field"], "total_stock");
    assert!(r.body.get("errors").is_none(), "{}", r.body);
}
