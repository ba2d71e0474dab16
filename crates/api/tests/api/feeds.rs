//! Who holds a template's coupons (paged, filtered, CSV) and the events feed (page by page,
//! filtered by type, each merchant its own; newest first with `order=desc`), on every backend.

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::checkout::claim;
use crate::lifecycle::amount_off;
use crate::on_every_backend;
use crate::support::*;

async fn holders_and_events(app: TestApp) {
    let t = amount_off(&app, json!({})).await;
    let (c1, _c2) = (claim(&app, t).await, claim(&app, t).await);
    let path = format!("/v1/templates/{t}/coupons");
    let r = app.get(&format!("{path}?limit=1"), app.m1()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["items"][0]["id"], c1);
    let next = r.body["next_cursor"].as_str().unwrap().to_owned();
    let r = app
        .get(&format!("{path}?limit=1&cursor={next}"), &app.platform)
        .await;
    assert_eq!(
        (
            r.body["items"].as_array().unwrap().len(),
            r.body.get("next_cursor")
        ),
        (1, None)
    );
    let r = app
        .get(&format!("{path}?user_id=nobody"), &app.platform)
        .await;
    assert_eq!(r.body["items"], json!([]));
    let r = app.get(&format!("{path}?status=used"), &app.platform).await;
    assert_eq!(r.body["items"], json!([]));
    assert_eq!(app.get(&path, app.m2()).await.status, StatusCode::NOT_FOUND);
    let csv = app
        .call(
            Method::GET,
            &format!("{path}?format=csv&limit=1"),
            Some(app.m1()),
            None,
        )
        .await;
    assert_eq!(csv.status, StatusCode::OK);
    assert!(csv.headers.get("next-cursor").is_some());
    let r = app.get(&format!("{path}?format=xml"), app.m1()).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("format"))
    );

    // The feed: everything for the platform, page by page; only its own for a merchant.
    let r = app.get("/v1/events?limit=2", &app.platform).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let mut cursor = r.body["next_cursor"].as_str().unwrap().to_owned();
    let mut kinds: Vec<String> = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect();
    loop {
        let r = app
            .get(&format!("/v1/events?limit=2&after={cursor}"), &app.platform)
            .await;
        let items = r.body["items"].as_array().unwrap().clone();
        cursor = r.body["next_cursor"].as_str().unwrap().to_owned();
        if items.is_empty() {
            break;
        }
        kinds.extend(items.iter().map(|e| e["type"].as_str().unwrap().to_owned()));
    }
    assert_eq!(
        kinds.iter().filter(|k| *k == "coupon.claimed").count(),
        2,
        "{kinds:?}"
    );
    let r = app.get("/v1/events?type=coupon.claimed", app.m1()).await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 2, "{}", r.body);
    assert_eq!(r.body["items"][0]["data"]["template_id"], t);
    let r = app.get("/v1/events", app.m2()).await;
    assert_eq!(r.body["items"], json!([]), "{}", r.body);
    let r = app.get("/v1/events?type=nope", &app.platform).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("type"))
    );
    let r = app.get("/v1/events?after=bogus", &app.platform).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("after"))
    );
    newest_first(&app, &cursor).await;
}

/// `order=desc`: the same events newest first, a page at a time; a feed cursor (`feed`) or
/// another order is refused.
async fn newest_first(app: &TestApp, feed: &str) {
    let ids = |r: &Reply| -> Vec<i64> {
        r.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_i64().unwrap())
            .collect()
    };
    let mut all = ids(&app.get("/v1/events?limit=200", &app.platform).await);
    all.reverse();
    let mut newest = Vec::new();
    let mut path = "/v1/events?order=desc&limit=2".to_owned();
    loop {
        let r = app.get(&path, &app.platform).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let page = ids(&r);
        if page.is_empty() {
            break;
        }
        newest.extend(page);
        let next = r.body["next_cursor"].as_str().unwrap();
        path = format!("/v1/events?order=desc&limit=2&after={next}");
    }
    assert_eq!(newest, all);
    let r = app
        .get("/v1/events?order=desc&type=coupon.claimed", app.m1())
        .await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 2, "{}", r.body);
    for (query, field) in [
        ("order=sideways".to_owned(), "order"),
        (format!("order=desc&after={feed}"), "after"),
    ] {
        let r = app.get(&format!("/v1/events?{query}"), &app.platform).await;
        assert_eq!(
            (r.status, r.body["field"].as_str()),
            (StatusCode::BAD_REQUEST, Some(field)),
            "{query}"
        );
    }
}

on_every_backend!(holders_and_events);
