//! A template's page offers exactly the actions the API's answer names: an ended template
//! can still be aborted and get codes (the page used to hide both), a claimable one can have
//! its stock raised, and a platform `finance` account, whose role changes nothing, is
//! offered no action at all.

mod support;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use coupond_api::ApiSettings;
use coupond_domain::{Email, OperatorDraft, OperatorRole};
use coupond_engine::accounts::Accounts;
use coupond_store::Role;
use http_body_util::BodyExt;
use tower::ServiceExt;

use support::{app_with_settings, key, merchant, pair, sign_in_cookie, template_body, v1, App};

const RIGHT: &str = "correct horse battery staple";
const BUTTONS: [&str; 6] = [
    "id=\"publish\"",
    "id=\"top-up\"",
    "id=\"abort\"",
    "id=\"extend\"",
    "id=\"codes-form\"",
    "id=\"issuance-form\"",
];

async fn page(app: &App, cookie: &str, id: i64) -> String {
    let req = Request::get(format!("/console/templates/{id}"))
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .unwrap();
    let res = app.router.clone().oneshot(req).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let body = res.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8_lossy(&body).into_owned()
}

fn offered(page: &str) -> Vec<&'static str> {
    BUTTONS.into_iter().filter(|b| page.contains(b)).collect()
}

#[tokio::test]
async fn the_page_offers_what_the_api_accepts() {
    let app = app_with_settings(ApiSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    // Claimable from 13:00 (an hour after the clock's start) to the 30th.
    let body = template_body("Spring", 10, "2026-12-31T00:00:00Z");
    let (status, t) = v1(&app, &mkey, Method::POST, "/v1/templates", body).await;
    assert_eq!(status, StatusCode::CREATED, "{t}");
    let id = t["id"].as_i64().unwrap();
    // Sessions last an hour: each look after the clock moves signs in again.
    let merchant_cookie = sign_in_cookie(&app, &mkey).await;
    assert_eq!(
        offered(&page(&app, &merchant_cookie, id).await),
        [
            "id=\"publish\"",
            "id=\"top-up\"",
            "id=\"abort\"",
            "id=\"extend\"",
            "id=\"codes-form\"",
            "id=\"issuance-form\""
        ],
        "a draft"
    );
    let publish = format!("/v1/templates/{id}/publish");
    let (status, _) = v1(&app, &mkey, Method::POST, &publish, serde_json::json!({})).await;
    assert_eq!(status, StatusCode::OK);
    app.clock.advance(time::Duration::hours(2));
    let merchant_cookie = sign_in_cookie(&app, &mkey).await;
    let claimable = offered(&page(&app, &merchant_cookie, id).await);
    assert!(claimable.contains(&"id=\"top-up\"") && !claimable.contains(&"id=\"publish\""));
    // Past the claim window (the 30th): ended, still abortable, codes still open.
    app.clock.advance(time::Duration::days(7));
    let merchant_cookie = sign_in_cookie(&app, &mkey).await;
    assert_eq!(
        offered(&page(&app, &merchant_cookie, id).await),
        ["id=\"abort\"", "id=\"codes-form\""],
        "ended"
    );

    let accounts = Accounts::new(app.store.clone(), Arc::new(app.clock.clone()));
    let email = Email::parse("fin@example.com").unwrap();
    let draft = OperatorDraft::new(email, "Fin".into(), OperatorRole::Finance, None).unwrap();
    accounts.add(&draft, Some(RIGHT)).await.unwrap();
    let form = format!("email=fin@example.com&password={}", RIGHT.replace(' ', "+"));
    let req = Request::post("/console/login")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::HOST, "console.test")
        .header(header::ORIGIN, "http://console.test")
        .body(Body::from(form))
        .unwrap();
    let res = app.router.clone().oneshot(req).await.unwrap();
    let finance = pair(res.headers()[header::SET_COOKIE].to_str().unwrap());
    assert!(offered(&page(&app, &finance, id).await).is_empty());
}
