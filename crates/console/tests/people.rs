//! The People page: an admin adds a person (who gets a one-time set-password link, shown
//! once, and no password passes through the console), disables and enables them, and each
//! change is in that person's history under the admin's email; a merchant's owner adds only
//! its own merchant's roles; merchant staff may not manage people.

mod support;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use coupond_api::ApiSettings;
use coupond_domain::{Email, MerchantId, OperatorDraft, OperatorRole};
use coupond_engine::accounts::Accounts;
use http_body_util::BodyExt;
use tower::ServiceExt;

use support::{app_with_settings, merchant, pair, App};

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

fn post(path: &str, cookie: Option<&str>, form: String) -> Request<Body> {
    let mut req = Request::post(path)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::HOST, "console.test")
        .header(header::ORIGIN, "http://console.test");
    if let Some(c) = cookie {
        req = req.header(header::COOKIE, c);
    }
    req.body(Body::from(form)).unwrap()
}

fn get(path: &str, cookie: &str) -> Request<Body> {
    Request::get(path)
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .unwrap()
}

async fn signed_in(app: &App, email: &str) -> String {
    let form = format!("email={email}&password={}", RIGHT.replace(' ', "+"));
    let (status, cookie, body) = send(app, post("/console/login", None, form)).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    cookie.unwrap()
}

async fn add(app: &App, email: &str, role: OperatorRole, m: Option<MerchantId>) {
    let accounts = Accounts::new(app.store.clone(), Arc::new(app.clock.clone()));
    let draft = OperatorDraft::new(Email::parse(email).unwrap(), "X".into(), role, m).unwrap();
    accounts.add(&draft, Some(RIGHT)).await.unwrap();
}

fn csrf(page: &str) -> String {
    page.split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn an_admin_adds_disables_and_enables_a_person_on_the_record() {
    let app = app_with_settings(ApiSettings::default()).await;
    let m = merchant(&app).await;
    add(&app, "ada@example.com", OperatorRole::Admin, None).await;
    add(&app, "own@example.com", OperatorRole::Owner, Some(m)).await;
    add(&app, "sam@example.com", OperatorRole::Staff, Some(m)).await;
    let admin = signed_in(&app, "ada@example.com").await;

    let (status, _, page) = send(&app, get("/console/people", &admin)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("own@example.com") && page.contains("sam@example.com"));
    let token = csrf(&page);
    let form = format!("csrf={token}&email=mo%40example.com&name=Mo&role=marketing&merchant_id=");
    let (status, _, page) = send(&app, post("/console/people", Some(&admin), form)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let link = page
        .split("id=\"set-password-link\">")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .unwrap();
    assert!(link.starts_with("/console/password/"), "{link}");
    let mo = page
        .split("action=\"/console/people/")
        .filter_map(|r| r.split('/').next())
        .filter_map(|id| id.parse::<i64>().ok())
        .max()
        .unwrap();
    let (_, _, again) = send(&app, get("/console/people", &admin)).await;
    assert!(!again.contains(link), "the link is shown once");
    assert!(again.contains("mo@example.com") && again.contains("invited"));

    let off = format!("/console/people/{mo}/disable");
    let (status, _, _) = send(&app, post(&off, Some(&admin), format!("csrf={token}"))).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, _, page) = send(&app, get("/console/people", &admin)).await;
    assert!(page.contains(&format!("id=\"enable-{mo}\"")), "{page}");
    let on = format!("/console/people/{mo}/enable");
    let (status, _, _) = send(&app, post(&on, Some(&admin), format!("csrf={token}"))).await;
    assert_eq!(status, StatusCode::SEE_OTHER);

    let history = format!("/console/history?object=operator:{mo}");
    let (_, _, page) = send(&app, get(&history, &admin)).await;
    for action in [
        "operator.create",
        "operator.reset_link",
        "operator.disable",
        "operator.enable",
    ] {
        assert!(page.contains(action), "{action}: {page}");
    }
    assert_eq!(page.matches(">ada@example.com</td>").count(), 4, "{page}");

    // A merchant's owner is offered its own merchant's roles only; its staff may not come in.
    let owner = signed_in(&app, "own@example.com").await;
    let (status, _, page) = send(&app, get("/console/people", &owner)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("value=\"staff\"") && !page.contains("value=\"admin\""));
    assert!(
        !page.contains("mo@example.com"),
        "the platform's people: {page}"
    );
    let staff = signed_in(&app, "sam@example.com").await;
    let (status, _, _) = send(&app, get("/console/people", &staff)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}
