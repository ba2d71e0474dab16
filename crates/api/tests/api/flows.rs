//! The success path of every route, on SQLite and (when configured) PostgreSQL and MySQL.

use axum::http::{Method, StatusCode};
use coupond_domain::Timestamp;
use serde_json::json;

use crate::support::*;

async fn full_flow(app: TestApp) {
    // Merchants.
    let r = app
        .post(
            "/v1/merchants",
            &app.platform,
            json!({"name": "Third Homes", "short_name": "Third", "cities": [2, 1]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["cities"], json!([1, 2]));
    let merchant = r.body["id"].as_i64().unwrap();
    let r = app
        .get(&format!("/v1/merchants/{merchant}"), &app.platform)
        .await;
    assert_eq!(
        (r.status, r.body["name"].as_str()),
        (StatusCode::OK, Some("Third Homes"))
    );

    // Activities: create, read, list, edit.
    let id = app.activity(activity_body(-1, 24, 48, 96)).await;
    let r = app
        .get(&format!("/v1/activities/{id}"), &app.platform)
        .await;
    assert_eq!(r.body["status"], "enrolling");
    assert_eq!(r.body["frozen_at"], at(24));
    let r = app
        .get("/v1/activities?status=enrolling&city=2", &app.platform)
        .await;
    assert_eq!(r.body["items"][0]["id"], id);
    let r = app
        .patch(
            &format!("/v1/activities/{id}"),
            &app.platform,
            json!({"title": "Renamed", "value_max": 6000}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        (r.body["title"].as_str(), r.body["value_max"].as_i64()),
        (Some("Renamed"), Some(6000))
    );

    // U+0000 cannot be stored by PostgreSQL's jsonb: refused alike on every backend.
    let mut nul = activity_template(id, 5500);
    nul["metadata"] = json!({"k": "a\u{0}b"});
    let r = app.post("/v1/templates", app.m1(), nul).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_characters")
    );

    // Templates: enrol in the activity, create a standalone one, edit, publish, list, abort.
    let r = app
        .post("/v1/templates", app.m1(), activity_template(id, 5500))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["status"], "scheduled");
    assert_eq!(
        r.body["claim_window"]["start"],
        at(48),
        "defaults to the run window"
    );
    assert_eq!(
        (r.body["claimed"].as_i64(), r.body["remaining"].as_i64()),
        (Some(0), Some(100))
    );
    let in_activity = r.body["id"].as_i64().unwrap();
    let r = app
        .patch(
            &format!("/v1/templates/{in_activity}"),
            app.m1(),
            json!({"total_stock": 250}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["total_stock"].as_i64()),
        (StatusCode::OK, Some(250)),
        "{}",
        r.body
    );

    let r = app
        .post("/v1/templates", app.m1(), standalone_template(10, 20))
        .await;
    assert_eq!(
        (r.status, r.body["status"].as_str()),
        (StatusCode::CREATED, Some("draft")),
        "{}",
        r.body
    );
    let standalone = r.body["id"].as_i64().unwrap();
    let r = app
        .patch(
            &format!("/v1/templates/{standalone}"),
            app.m1(),
            json!({"budget": 100000, "title": "Better"}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["budget"].as_i64()),
        (StatusCode::OK, Some(100000)),
        "{}",
        r.body
    );
    let r = app
        .patch(
            &format!("/v1/templates/{standalone}"),
            app.m1(),
            json!({"budget": null}),
        )
        .await;
    assert!(r.body.get("budget").is_none(), "budget removed: {}", r.body);
    let r = app
        .post(
            &format!("/v1/templates/{standalone}/publish"),
            app.m1(),
            json!({}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["status"].as_str()),
        (StatusCode::OK, Some("scheduled")),
        "{}",
        r.body
    );
    let r = app
        .post(
            &format!("/v1/templates/{standalone}/publish"),
            app.m1(),
            json!({}),
        )
        .await;
    assert_eq!((r.status, r.code()), (StatusCode::CONFLICT, "not_draft"));
    let r = app
        .post(
            &format!("/v1/templates/{in_activity}/publish"),
            app.m1(),
            json!({}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "not_standalone")
    );

    let r = app
        .get(&format!("/v1/templates?activity_id={id}"), app.m1())
        .await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 1);
    let r = app
        .get("/v1/templates?status=scheduled", &app.platform)
        .await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 2);

    // The platform issues its own template (no merchant).
    let r = app
        .post("/v1/templates", &app.platform, standalone_template(10, 20))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert!(r.body.get("merchant_id").is_none());
    let platform_tpl = r.body["id"].as_i64().unwrap();
    assert_eq!(
        app.get(&format!("/v1/templates/{platform_tpl}"), app.m1())
            .await
            .status,
        StatusCode::NOT_FOUND
    );

    let r = app
        .post(
            &format!("/v1/templates/{standalone}/abort"),
            app.m1(),
            json!({}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["status"].as_str()),
        (StatusCode::OK, Some("aborted"))
    );
    let r = app
        .post(
            &format!("/v1/templates/{standalone}/abort"),
            app.m1(),
            json!({}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "already_final")
    );

    // Aborting the activity aborts its templates.
    let r = app
        .post(
            &format!("/v1/activities/{id}/abort"),
            &app.platform,
            json!({}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["status"].as_str()),
        (StatusCode::OK, Some("aborted")),
        "{}",
        r.body
    );
    let r = app
        .get(&format!("/v1/templates/{in_activity}"), app.m1())
        .await;
    assert_eq!(r.body["status"], "aborted");
    let r = app
        .post(
            &format!("/v1/activities/{id}/abort"),
            &app.platform,
            json!({}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "already_aborted")
    );
    let r = app
        .patch(
            &format!("/v1/activities/{id}"),
            &app.platform,
            json!({"title": "x"}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "activity_aborted")
    );

    // An activity that has ended can no longer be aborted or edited.
    let r = app
        .post(
            "/v1/activities",
            &app.platform,
            activity_body(30, 40, 50, 60),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let ended = r.body["id"].as_i64().unwrap();
    app.clock.set(Timestamp::parse(&at(61)).unwrap());
    let r = app
        .post(
            &format!("/v1/activities/{ended}/abort"),
            &app.platform,
            json!({}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "activity_ended")
    );
    let r = app
        .patch(
            &format!("/v1/activities/{ended}"),
            &app.platform,
            json!({"title": "x"}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "activity_frozen")
    );
}

#[tokio::test]
async fn every_route_succeeds_on_sqlite() {
    full_flow(TestApp::new().await).await;
}

#[tokio::test]
async fn every_route_succeeds_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        full_flow(app).await;
    }
}

#[tokio::test]
async fn every_route_succeeds_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        full_flow(app).await;
    }
}

#[tokio::test]
async fn lists_page_with_cursors() {
    let app = TestApp::new().await;
    let mut ids = vec![];
    for _ in 0..5 {
        ids.push(app.activity(activity_body(-1, 24, 48, 96)).await);
    }
    let mut seen = vec![];
    let mut path = "/v1/activities?limit=2".to_owned();
    loop {
        let r = app.get(&path, &app.platform).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let items = r.body["items"].as_array().unwrap();
        assert!(items.len() <= 2);
        seen.extend(items.iter().map(|a| a["id"].as_i64().unwrap()));
        match r.body["next_cursor"].as_str() {
            Some(c) => path = format!("/v1/activities?limit=2&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(seen, ids);
    let r = app.get("/v1/activities?cursor=bogus", &app.platform).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("cursor"))
    );
    let r = app.get("/v1/activities?limit=100000", &app.platform).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("limit"))
    );
}

#[tokio::test]
async fn system_routes_and_request_ids() {
    let app = TestApp::new().await;
    assert_eq!(
        app.call(Method::GET, "/healthz", None, None).await.status,
        StatusCode::OK
    );
    let r = app.call(Method::GET, "/readyz", None, None).await;
    assert_eq!(
        (r.status, r.body["database"].as_str()),
        (StatusCode::OK, Some("sqlite"))
    );
    assert!(r.body.get("restarted_workers").is_none(), "{}", r.body);
    // A background loop the supervisor restarted is named on /readyz, which stays ready.
    app.state
        .workers()
        .record_panic("dispatcher", "observer exploded".into());
    let r = app.call(Method::GET, "/readyz", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.body["restarted_workers"],
        serde_json::json!([{"worker": "dispatcher", "restarts": 1, "last_panic": "observer exploded"}])
    );
    app.get("/v1/activities", &app.platform).await;
    let r = app.call(Method::GET, "/metrics", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    let docs = app.call(Method::GET, "/docs", None, None).await;
    assert_eq!(docs.status, StatusCode::OK);

    // Request ids: echoed when sent, generated otherwise, and named in problems.
    let req = axum::http::Request::builder()
        .uri("/v1/nowhere")
        .header("x-request-id", "trace-42")
        .body(axum::body::Body::empty())
        .unwrap();
    let r = app.send(req).await;
    assert_eq!((r.status, r.code()), (StatusCode::NOT_FOUND, "not_found"));
    assert_eq!(r.headers["x-request-id"], "trace-42");
    assert_eq!(r.body["request_id"], "trace-42");
    assert_eq!(r.headers["content-type"], "application/problem+json");
    let r = app
        .call(Method::DELETE, "/v1/activities", Some(&app.platform), None)
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed")
    );
    assert!(r.headers.contains_key("x-request-id"));
}

/// `/metrics` as text.
/// The text `GET /metrics` answers.
pub(crate) async fn metrics_text(app: &TestApp) -> String {
    let req = axum::http::Request::builder()
        .uri("/metrics")
        .body(axum::body::Body::empty())
        .unwrap();
    let res = tower::ServiceExt::oneshot(app.router.clone(), req)
        .await
        .unwrap();
    let body = http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap()
        .to_bytes();
    String::from_utf8(body.to_vec()).unwrap()
}

#[tokio::test]
async fn metrics_count_requests_by_route_and_status() {
    let app = TestApp::new().await;
    app.get("/v1/activities", &app.platform).await;
    app.get("/v1/activities/999", &app.platform).await;
    let text = metrics_text(&app).await;
    assert!(
        text.contains(
            "http_requests_total{method=\"GET\",route=\"/v1/activities\",status=\"200\"}"
        ),
        "{text}"
    );
    assert!(
        text.contains("route=\"/v1/activities/{id}\",status=\"404\""),
        "{text}"
    );
    assert!(
        text.contains("http_request_duration_seconds_bucket"),
        "{text}"
    );
    assert!(
        text.contains("db_pool_connections{backend=\"sqlite\"}"),
        "{text}"
    );
}

/// What an operator alerts on is there, with its HELP line: claims by outcome (a sold-out
/// answer from memory counted apart), batch sizes and commit times, each outbox consumer's
/// backlog.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_say_what_they_count() {
    // Sold-out answers come from memory only within `cache_ttl` (zero by default here).
    let settings = coupond_api::AppSettings {
        cache_ttl: std::time::Duration::from_secs(60),
        ..coupond_api::AppSettings::default()
    };
    let app = TestApp::with_settings(Backend::Sqlite, settings)
        .await
        .unwrap();
    let t = crate::claims::live(&app, 1, 1, serde_json::json!({})).await;
    let claim = |user: &'static str| {
        let app = &app;
        async move {
            let body = serde_json::json!({ "user_id": user });
            app.post(&format!("/v1/templates/{t}/claims"), &app.service, body)
                .await
                .status
        }
    };
    assert_eq!(claim("u-m1").await, StatusCode::CREATED);
    assert_eq!(claim("u-m2").await, StatusCode::CONFLICT);
    assert_eq!(claim("u-m3").await, StatusCode::CONFLICT);
    let text = metrics_text(&app).await;
    for line in [
        "# HELP coupond_claims_total Claims answered, by outcome",
        "# HELP coupond_claim_commit_seconds",
        "# HELP coupond_outbox_backlog",
        "# HELP http_requests_total",
        "coupond_claims_total{outcome=\"issued\"}",
        "coupond_claims_total{outcome=\"sold_out\"}",
        "coupond_claims_sold_out_from_memory_total",
        "coupond_claim_batch_size_count",
        "coupond_outbox_backlog{consumer=\"webhooks\"}",
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }
}
