//! The platform finds merchants again and edits them, on SQLite and (when configured)
//! PostgreSQL and MySQL.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use serde_json::json;

use crate::support::*;

async fn find_and_edit(app: TestApp) {
    let r = app
        .post(
            "/v1/merchants",
            &app.platform,
            json!({"name": "Lakeside Flats", "short_name": "Lakeside", "cities": [1, 4]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let lake = r.body["id"].as_i64().unwrap();
    let names = |r: &Reply| -> Vec<String> {
        r.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_owned())
            .collect()
    };
    // The fixtures hold "First" (cities 1, 2) and "Second" (city 3).
    let r = app.get("/v1/merchants?city=1", &app.platform).await;
    assert_eq!(names(&r), ["First", "Lakeside Flats"], "{}", r.body);
    let r = app.get("/v1/merchants?name=LAKE", &app.platform).await;
    assert_eq!(names(&r), ["Lakeside Flats"]);
    let r = app.get("/v1/merchants?limit=2", &app.platform).await;
    assert_eq!(names(&r).len(), 2);
    let next = r.body["next_cursor"].as_str().unwrap().to_owned();
    let r = app
        .get(
            &format!("/v1/merchants?limit=2&cursor={next}"),
            &app.platform,
        )
        .await;
    assert_eq!(names(&r), ["Lakeside Flats"]);

    let path = format!("/v1/merchants/{lake}");
    let r = app
        .patch(
            &path,
            &app.platform,
            json!({"short_name": "Lake", "cities": [4]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        (&r.body["name"], &r.body["short_name"], &r.body["cities"]),
        (&json!("Lakeside Flats"), &json!("Lake"), &json!([4]))
    );
    let r = app
        .get("/v1/merchants?city=1&name=lake", &app.platform)
        .await;
    assert_eq!(names(&r), Vec::<String>::new());
}

#[tokio::test]
async fn the_platform_finds_and_edits_merchants_on_sqlite() {
    find_and_edit(TestApp::new().await).await;
}

#[tokio::test]
async fn the_platform_finds_and_edits_merchants_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        find_and_edit(app).await;
    }
}

#[tokio::test]
async fn the_platform_finds_and_edits_merchants_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        find_and_edit(app).await;
    }
}

#[tokio::test]
async fn bad_filters_and_patches_are_refused_and_change_nothing() {
    let app = TestApp::new().await;
    let long = "x".repeat(201);
    for (query, field) in [
        (format!("name={long}"), "name"),
        ("name=".to_owned(), "name"),
        ("city=0".to_owned(), "city"),
        ("limit=0".to_owned(), "limit"),
        ("colour=red".to_owned(), ""),
    ] {
        let r = app
            .get(&format!("/v1/merchants?{query}"), &app.platform)
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{query}: {}", r.body);
        if !field.is_empty() {
            assert_eq!(r.body["field"], field, "{query}: {}", r.body);
        }
    }
    let id = app.merchants[0].0.get();
    let path = format!("/v1/merchants/{id}");
    let before = app.get(&path, &app.platform).await.body;
    for (patch, status, field) in [
        (
            json!({"name": ""}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "name",
        ),
        (
            json!({"short_name": "y".repeat(51)}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "short_name",
        ),
        (
            json!({"cities": []}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "cities",
        ),
        (
            json!({"created_at": "2020-01-01T00:00:00Z"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "created_at",
        ),
    ] {
        let r = app.patch(&path, &app.platform, patch.clone()).await;
        assert_eq!(r.status, status, "{patch}: {}", r.body);
        if !field.is_empty() {
            assert_eq!(r.body["field"], field, "{patch}: {}", r.body);
        }
    }
    assert_eq!(app.get(&path, &app.platform).await.body, before);
    // A merchant neither lists merchants nor edits itself.
    let r = app.get("/v1/merchants", app.m1()).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = app
        .patch(&path, app.m1(), json!({"name": "Mine now"}))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = app
        .patch(
            "/v1/merchants/999999",
            &app.platform,
            json!({"name": "Nobody"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

/// The platform gives a merchant a key, the key works at once and only as that merchant, its
/// secret is answered once (not by a replay, not by the list), and revoking it ends it at once.
async fn keys_are_made_used_and_revoked(app: TestApp) {
    let m1 = app.merchants[0].0.get();
    let m2 = app.merchants[1].0.get();
    let create = |key: &'static str, label: &str| {
        Request::builder()
            .method(Method::POST)
            .uri(format!("/v1/merchants/{m1}/keys"))
            .header(header::AUTHORIZATION, format!("Bearer {}", app.platform))
            .header(header::CONTENT_TYPE, "application/json")
            .header("idempotency-key", key)
            .body(Body::from(json!({ "label": label }).to_string()))
            .unwrap()
    };
    let r = app.send(create("k-1", "till 3")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let secret = r.body["secret"].as_str().unwrap().to_owned();
    let id = r.body["id"].as_i64().unwrap();
    assert!(secret.starts_with("cpd_") && secret.starts_with(r.body["prefix"].as_str().unwrap()));
    let replay = app.send(create("k-1", "till 3")).await;
    assert_eq!(replay.status, StatusCode::CREATED);
    assert_eq!(replay.body["id"], id);
    assert!(replay.body.get("secret").is_none(), "{}", replay.body);

    let own = app.get(&format!("/v1/merchants/{m1}"), &secret).await;
    assert_eq!(own.status, StatusCode::OK, "{}", own.body);
    let other = app.get(&format!("/v1/merchants/{m2}"), &secret).await;
    assert_eq!(other.status, StatusCode::NOT_FOUND);

    let list = app
        .get(&format!("/v1/merchants/{m1}/keys"), &app.platform)
        .await;
    assert_eq!(list.body["items"][0]["id"], id, "{}", list.body);
    assert_eq!(list.body["items"][0]["label"], "till 3");
    assert!(!list.body.to_string().contains(&secret));
    let theirs = app
        .get(&format!("/v1/merchants/{m2}/keys"), &app.platform)
        .await;
    assert!(theirs.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|k| k["id"] != id));

    // The key belongs to m1: under m2 it does not exist.
    let wrong = app
        .post(
            &format!("/v1/merchants/{m2}/keys/{id}/revoke"),
            &app.platform,
            json!({}),
        )
        .await;
    assert_eq!(wrong.status, StatusCode::NOT_FOUND);
    assert_eq!(
        app.get(&format!("/v1/merchants/{m1}"), &secret)
            .await
            .status,
        StatusCode::OK
    );
    let r = app
        .post(
            &format!("/v1/merchants/{m1}/keys/{id}/revoke"),
            &app.platform,
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body["revoked_at"].is_string());
    let after = app.get(&format!("/v1/merchants/{m1}"), &secret).await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn merchant_keys_are_made_used_and_revoked_on_sqlite() {
    keys_are_made_used_and_revoked(TestApp::new().await).await;
}

#[tokio::test]
async fn merchant_keys_are_made_used_and_revoked_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        keys_are_made_used_and_revoked(app).await;
    }
}

#[tokio::test]
async fn key_requests_are_checked_and_refused_requests_make_no_key() {
    let app = TestApp::new().await;
    let m1 = app.merchants[0].0.get();
    let path = format!("/v1/merchants/{m1}/keys");
    let before = app.get(&path, &app.platform).await.body;
    assert_eq!(
        before["items"].as_array().map(Vec::len),
        Some(1),
        "{before}"
    );
    for (body, status) in [
        (json!({"label": ""}), StatusCode::UNPROCESSABLE_ENTITY),
        (
            json!({"label": "a\u{202E}b"}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            json!({"label": "x".repeat(501)}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            json!({"label": "ok", "role": "platform"}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
    ] {
        let r = app.post(&path, &app.platform, body.clone()).await;
        assert_eq!(r.status, status, "{body}: {}", r.body);
    }
    let r = app
        .post(
            "/v1/merchants/999999/keys",
            &app.platform,
            json!({"label": "x"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // Another merchant's keys are absent to a merchant.
    let r = app.post(&path, app.m2(), json!({"label": "theirs"})).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get(&path, app.m2()).await.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get(&path, &app.platform).await.body, before);
}

/// A merchant's owner manages its own keys (made, listed, revoked, each in the audit trail
/// under the owner's name); its staff may not touch them.
#[tokio::test]
async fn owners_manage_their_merchants_keys_and_staff_may_not() {
    use crate::audit::{as_operator, entries, operator};
    use coupond_domain::OperatorRole;
    let app = TestApp::new().await;
    let m1 = app.merchants[0].0.get();
    let path = format!("/v1/merchants/{m1}/keys");
    let owner = operator(&app, "olga@example.com", OperatorRole::Owner).await;
    let staff = operator(&app, "sid@example.com", OperatorRole::Staff).await;
    let r = as_operator(&app, owner, Method::POST, &path, json!({"label": "till"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.body["id"].as_i64().unwrap();
    let secret = r.body["secret"].as_str().unwrap().to_owned();
    assert_eq!(
        app.get("/v1/templates", &secret).await.status,
        StatusCode::OK
    );
    let r = as_operator(&app, staff, Method::POST, &path, json!({"label": "x"})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    let revoke = format!("{path}/{id}/revoke");
    let r = as_operator(&app, staff, Method::POST, &revoke, json!({})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    let r = as_operator(&app, owner, Method::POST, &revoke, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        app.get("/v1/templates", &secret).await.status,
        StatusCode::UNAUTHORIZED
    );
    let trail = entries(
        &app.get("/v1/audit?actor=olga@example.com", &app.platform)
            .await,
    );
    let actions: Vec<&str> = trail
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["api_key.revoke", "api_key.create"], "{trail:?}");
}
