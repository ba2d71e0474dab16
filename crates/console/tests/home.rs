//! The home page's cards and attention list count every template, not the first API page:
//! with 201 active templates, the newest (sold out) is "1 under 5 %" and listed as needing
//! attention (the page summed one 200-row page and showed 0).

mod support;

use axum::body::Body;
use axum::http::{header, Method, Request};
use coupond_api::ApiSettings;
use coupond_domain::Timestamp;
use coupond_store::Role;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use support::{app_with_settings, key, merchant, pair, sign_in_request, App};

/// `method path` with the header `auth` (a key or the console's cookie); the answer's text,
/// after checking it succeeded.
async fn send(app: &App, auth: (&str, &str), method: Method, path: &str, body: Value) -> String {
    let req = Request::builder()
        .method(method.clone())
        .uri(path)
        .header(auth.0, auth.1)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let res = app.router.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    assert!(status.is_success(), "{method} {path}: {status} {text}");
    text
}

/// A published template of the merchant whose key is `key`, with `stock` coupons.
async fn live(app: &App, key: &str, stock: u32) -> i64 {
    let bearer = format!("Bearer {key}");
    let auth = (header::AUTHORIZATION.as_str(), bearer.as_str());
    let body = json!({
        "title": format!("Stock {stock}"),
        "value": {"kind": "percent_off", "bps": 1000, "cap": 5000},
        "threshold": 10000,
        "cities": [1],
        "total_stock": stock,
        "per_user_limit": 1,
        "stacking": "stackable",
        "claim_window": {"start": "2026-11-24T13:00:00Z", "end": "2026-11-30T00:00:00Z"},
        "validity": {"type": "fixed", "from": "2026-11-24T13:00:00Z", "until": "2027-03-31T00:00:00Z"}
    });
    let t: Value =
        serde_json::from_str(&send(app, auth, Method::POST, "/v1/templates", body).await).unwrap();
    let id = t["id"].as_i64().unwrap();
    let path = format!("/v1/templates/{id}/publish");
    send(app, auth, Method::POST, &path, json!({})).await;
    id
}

#[tokio::test]
async fn the_home_page_counts_every_template() {
    let app = app_with_settings(ApiSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    for _ in 0..200 {
        live(&app, &mkey, 10).await;
    }
    let sold = live(&app, &mkey, 1).await;
    app.clock
        .set(Timestamp::parse("2026-11-24T14:00:00Z").unwrap());
    let bearer = format!("Bearer {mkey}");
    let auth = (header::AUTHORIZATION.as_str(), bearer.as_str());
    let path = format!("/v1/templates/{sold}/issuances");
    send(
        &app,
        auth,
        Method::POST,
        &path,
        json!({"user_ids": ["u-1"]}),
    )
    .await;

    let (pkey, _) = key(&app, Role::Platform, None).await;
    let signed = app
        .router
        .clone()
        .oneshot(sign_in_request(&pkey))
        .await
        .unwrap();
    let cookie = pair(signed.headers()[header::SET_COOKIE].to_str().unwrap());
    let home = send(
        &app,
        ("cookie", &cookie),
        Method::GET,
        "/console",
        json!(null),
    )
    .await;
    let card = |n: i64, what: &str| format!("<b>{n}</b><span>{what}</span>");
    assert!(home.contains(&card(201, "templates active")), "{home}");
    assert!(
        home.contains(&card(1, "templates under 5 % of stock")),
        "{home}"
    );
    assert!(home.contains(&card(1, "coupons claimed in all")), "{home}");
    let attention = &home[home.find("Needs attention").unwrap()..];
    assert!(
        attention.contains(&format!("/console/templates/{sold}\"")),
        "the sold-out template is not listed: {attention}"
    );
}
