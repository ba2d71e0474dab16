//! The set-password page a one-time link opens: it needs no session; a form from another
//! site, two different passwords or one the policy refuses change nothing and leave the link
//! usable; the right one sets the password and uses the link up.

mod support;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use coupond_api::AppSettings;
use coupond_domain::{Email, OperatorDraft, OperatorRole};
use coupond_engine::accounts::Accounts;
use http_body_util::BodyExt;
use tower::ServiceExt;

use support::{app_with_settings, App};

async fn send(app: &App, req: Request<Body>) -> (StatusCode, String) {
    let res = app.router.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// The form posted to the link of `token` from `origin`.
fn post(token: &str, origin: &str, password: &str, confirm: &str) -> Request<Body> {
    let form = format!("password={password}&confirm={confirm}");
    Request::post(format!("/console/password/{token}"))
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::HOST, "console.test")
        .header(header::ORIGIN, origin)
        .body(Body::from(form))
        .unwrap()
}

const HOME: &str = "http://console.test";
const GOOD: &str = "correct+horse+battery+staple";

#[tokio::test]
async fn a_link_sets_a_password_once() {
    let app = app_with_settings(AppSettings::default()).await;
    let accounts = Accounts::new(app.store.clone(), Arc::new(app.clock.clone()));
    let email = Email::parse("sam@example.com").unwrap();
    let draft = OperatorDraft::new(email.clone(), "Sam".into(), OperatorRole::Support, None);
    let sam = accounts.add(&draft.unwrap(), None).await.unwrap();
    let token = accounts.start_reset(sam.id).await.unwrap();

    let get = Request::get(format!("/console/password/{token}"))
        .body(Body::empty())
        .unwrap();
    let (status, page) = send(&app, get).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains(&format!("action=\"/console/password/{token}\"")),
        "{page}"
    );

    let cases = [
        (
            post(&token, "http://evil.test", GOOD, GOOD),
            StatusCode::FORBIDDEN,
            "did not come from",
        ),
        (
            post(&token, HOME, GOOD, "something+else+entirely"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "differ",
        ),
        (
            post(&token, HOME, "password1234", "password1234"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "password-error",
        ),
        (
            post(&"0".repeat(64), HOME, GOOD, GOOD),
            StatusCode::GONE,
            "not valid any more",
        ),
    ];
    for (req, want, says) in cases {
        let (status, page) = send(&app, req).await;
        assert_eq!(status, want, "{page}");
        assert!(page.contains(says), "{page}");
    }
    let nothing_yet = accounts
        .verify(&email, "correct horse battery staple")
        .await;
    assert!(
        nothing_yet.unwrap().is_none(),
        "a refused form set a password"
    );

    let (status, page) = send(&app, post(&token, HOME, GOOD, GOOD)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("Your password is set"), "{page}");
    let opened = accounts
        .verify(&email, "correct horse battery staple")
        .await;
    assert_eq!(opened.unwrap().map(|o| o.id), Some(sam.id));
    let (status, page) = send(
        &app,
        post(
            &token,
            HOME,
            "another+long+passphrase",
            "another+long+passphrase",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::GONE, "the link worked twice: {page}");
}
