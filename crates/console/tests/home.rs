//! The home page's cards and attention list count every template, not the first API page:
//! with 201 active templates, the newest (sold out) is "1 under 5 %" and listed as needing
//! attention (the page summed one 200-row page and showed 0).

mod support;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use coupond_api::AppSettings;
use coupond_domain::Timestamp;
use coupond_store::Role;
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;

use support::{
    app_with_settings, key, merchant, published, sign_in_cookie, template_body, v1, App,
};

/// A published template of the merchant whose key is `key`, with `stock` coupons.
async fn live(app: &App, key: &str, stock: u32) -> i64 {
    let body = template_body(&format!("Stock {stock}"), stock, "2027-03-31T00:00:00Z");
    published(app, key, body).await
}

/// The console's home page as the session of `cookie` sees it.
async fn home(app: &App, cookie: &str) -> String {
    let req = Request::get("/console")
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .unwrap();
    let res = app.router.clone().oneshot(req).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[tokio::test]
async fn the_home_page_counts_every_template() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    for _ in 0..200 {
        live(&app, &mkey, 10).await;
    }
    let sold = live(&app, &mkey, 1).await;
    app.clock
        .set(Timestamp::parse("2026-11-24T14:00:00Z").unwrap());
    let path = format!("/v1/templates/{sold}/issuances");
    let (status, job) = v1(
        &app,
        &mkey,
        Method::POST,
        &path,
        json!({"user_ids": ["u-1"]}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{job}");

    let (pkey, _) = key(&app, Role::Platform, None).await;
    let cookie = sign_in_cookie(&app, &pkey).await;
    let home = home(&app, &cookie).await;
    let card = |n: i64, what: &str| format!("<b>{n}</b><span>{what}</span>");
    assert!(home.contains(&card(201, "templates active")), "{home}");
    assert!(
        home.contains(&card(1, "template under 5 % of stock")),
        "{home}"
    );
    assert!(home.contains(&card(1, "coupon claimed in all")), "{home}");
    let attention = &home[home.find("Needs attention").unwrap()..];
    assert!(
        attention.contains(&format!("/console/templates/{sold}\"")),
        "the sold-out template is not listed: {attention}"
    );
}

/// The reconciliation opens on this month so far, its figures and CSV link shown at once.
#[tokio::test]
async fn the_reconciliation_opens_on_this_month() {
    let app = support::app_with_settings(coupond_api::AppSettings::default()).await;
    let (key, _) = support::key(&app, coupond_store::Role::Platform, None).await;
    let cookie = support::sign_in_cookie(&app, &key).await;
    let a = support::answer(&app, support::page_get("/console/reconciliation", &cookie)).await;
    assert_eq!(a.status, axum::http::StatusCode::OK, "{}", a.body);
    assert!(a.body.contains("value=\"2026-11-01T00:00\""), "{}", a.body);
    assert!(a.body.contains("value=\"2026-11-24T12:00\""), "{}", a.body);
    assert!(a.body.contains("Download CSV"), "{}", a.body);
}

/// "Today" is the platform's local day, and the page says in which zone: at 01:00 on the
/// 10th in Shanghai (17:00 UTC on the 9th), today is the 10th.
#[tokio::test]
async fn the_home_page_says_the_time_zone_of_today() {
    let settings = AppSettings {
        time_zone: coupond_domain::Zone::parse("Asia/Shanghai").unwrap(),
        ..AppSettings::default()
    };
    let app = app_with_settings(settings).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    app.clock
        .set(Timestamp::parse("2027-01-09T17:00:00Z").unwrap());
    let cookie = sign_in_cookie(&app, &mkey).await;
    let page = home(&app, &cookie).await;
    assert!(
        page.contains("Today is 2027-01-10 in Asia/Shanghai"),
        "{page}"
    );
}
