//! The platform finds merchants again and edits them, on SQLite and (when configured)
//! PostgreSQL and MySQL.

use axum::http::StatusCode;
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
