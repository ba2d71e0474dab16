//! The audit trail in the console: a person who publishes a template from its page is named
//! by email on that template's History page with the status before and after, next to the
//! machine (API key) that created it; the page downloads as CSV; merchant staff, who may not
//! read the trail, get the API's refusal as a page.

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

use support::{app_with_settings, key, merchant, pair, template_body, v1, App};

const RIGHT: &str = "correct horse battery staple";

async fn send(app: &App, req: Request<Body>) -> (StatusCode, Option<String>, String) {
    let res = app.router.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let cookie = res
        .headers()
        .get(header::SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .map(pair);
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, cookie, String::from_utf8_lossy(&body).into_owned())
}

fn form(path: &str, cookie: Option<&str>, body: String) -> Request<Body> {
    let mut req = Request::post(path)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::HOST, "console.test")
        .header(header::ORIGIN, "http://console.test");
    if let Some(c) = cookie {
        req = req.header(header::COOKIE, c);
    }
    req.body(Body::from(body)).unwrap()
}

fn page(path: &str, cookie: &str) -> Request<Body> {
    Request::get(path)
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .unwrap()
}

/// The session cookie of `email`, signed in with the right password.
async fn signed_in(app: &App, email: &str) -> String {
    let body = format!("email={email}&password={}", RIGHT.replace(' ', "+"));
    let (status, cookie, text) = send(app, form("/console/login", None, body)).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");
    cookie.unwrap()
}

fn token(page: &str) -> String {
    page.split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_template_page_history_names_who_changed_it() {
    let app = app_with_settings(ApiSettings::default()).await;
    let accounts = Accounts::new(app.store.clone(), Arc::new(app.clock.clone()));
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    for (email, role) in [
        ("own@example.com", OperatorRole::Owner),
        ("sam@example.com", OperatorRole::Staff),
    ] {
        let draft = OperatorDraft::new(Email::parse(email).unwrap(), "X".into(), role, Some(m));
        accounts.add(&draft.unwrap(), Some(RIGHT)).await.unwrap();
    }
    let body = template_body("Spring", 10, "2026-12-31T00:00:00Z");
    let (status, t) = v1(&app, &mkey, Method::POST, "/v1/templates", body).await;
    assert_eq!(status, StatusCode::CREATED, "{t}");
    let id = t["id"].as_i64().unwrap();

    let owner = signed_in(&app, "own@example.com").await;
    let (_, _, template) = send(&app, page(&format!("/console/templates/{id}"), &owner)).await;
    assert!(template.contains(&format!("/console/history?object=template:{id}")));
    let publish = format!("/console/templates/{id}/publish");
    let csrf = format!("csrf={}", token(&template));
    let (status, _, text) = send(&app, form(&publish, Some(&owner), csrf)).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{text}");

    let history = format!("/console/history?object=template:{id}");
    let (status, _, text) = send(&app, page(&history, &owner)).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let rows: Vec<&str> = text.split("<tr><td>").skip(1).collect();
    assert_eq!(rows.len(), 2, "publish and create: {text}");
    assert!(rows[0].contains("own@example.com"), "{}", rows[0]);
    assert!(rows[0].contains("template.publish"), "{}", rows[0]);
    assert!(rows[0].contains("draft"), "{}", rows[0]);
    assert!(rows[1].contains("template.create") && rows[1].contains("key:"));

    let csv = format!("/console/history.csv?object=template:{id}");
    let (status, _, text) = send(&app, page(&csv, &owner)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(text.starts_with("id,at,actor,actor_name,action"), "{text}");
    assert!(text.contains("own@example.com") && text.contains("template.publish"));

    let staff = signed_in(&app, "sam@example.com").await;
    let (status, _, text) = send(&app, page(&history, &staff)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    assert!(!text.contains("template.publish"), "{text}");
}
