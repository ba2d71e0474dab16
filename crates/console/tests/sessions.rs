//! Sessions over HTTP (the console's router, in process): sign-in takes only platform and
//! merchant keys, the cookie is HttpOnly, SameSite=Strict and scoped to /console, a revoked
//! key ends its session (with the key cache off, at once), an expired session asks to sign in
//! again, and a POST without the form token or from another origin is refused (uploads:
//! `transfers.rs`).

mod support;

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use coupond_api::AppSettings;
use coupond_store::Role;
use http_body_util::BodyExt;
use tower::ServiceExt;

use support::{app_with_settings, console_router, pair, sign_in_request, t0, App};

async fn app() -> App {
    let settings = AppSettings {
        cache_ttl: Duration::ZERO,
        ..AppSettings::default()
    };
    app_with_settings(settings).await
}

async fn key(app: &App, role: Role) -> (String, i64) {
    support::key(app, role, None).await
}

struct Answer {
    status: StatusCode,
    cache_control: String,
    location: String,
    cookie: Option<String>,
    body: String,
}

async fn send(app: &App, req: Request<Body>) -> Answer {
    let res = app.router.clone().oneshot(req).await.unwrap();
    let header = |h| {
        res.headers()
            .get(h)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (location, cookie) = (
        header(header::LOCATION).unwrap_or_default(),
        header(header::SET_COOKIE),
    );
    let status = res.status();
    let cache_control = header(header::CACHE_CONTROL).unwrap_or_default();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        cache_control,
        location,
        cookie,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

async fn sign_in(app: &App, key: &str) -> Answer {
    send(app, sign_in_request(key)).await
}

async fn home(app: &App, cookie: &str) -> Answer {
    let req = Request::get("/console")
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .unwrap();
    send(app, req).await
}

#[tokio::test]
async fn sessions_follow_their_key() {
    let app = app().await;
    let (platform, id) = key(&app, Role::Platform).await;
    let (service, _) = key(&app, Role::Service).await;

    assert_eq!(
        sign_in(&app, &service).await.status,
        StatusCode::UNAUTHORIZED,
        "a service key"
    );
    assert_eq!(
        sign_in(&app, "cpd_nope").await.status,
        StatusCode::UNAUTHORIZED
    );
    let signed = sign_in(&app, &platform).await;
    assert_eq!(
        (signed.status, signed.location.as_str()),
        (StatusCode::SEE_OTHER, "/console")
    );
    let set = signed.cookie.expect("a session cookie");
    for attr in [
        "HttpOnly",
        "SameSite=Strict",
        "Path=/console",
        "Max-Age=3600",
    ] {
        assert!(set.contains(attr), "{attr} in {set}");
    }
    assert!(!set.contains(&platform), "the key is encrypted: {set}");
    let cookie = pair(&set);
    let page = home(&app, &cookie).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.cache_control, "no-store", "a page is one person's");
    assert!(page.body.contains("Platform") && !page.body.contains(&platform));

    // A POST without the token, or from another origin, changes nothing.
    let token = page
        .body
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_owned();
    let post = |origin: &'static str, body: String| {
        Request::post("/console/activities")
            .header(header::COOKIE, cookie.clone())
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::HOST, "console.test")
            .header(header::ORIGIN, origin)
            .body(Body::from(body))
            .unwrap()
    };
    let form = "title=T&cities=1&kind=amount_off&value_min=1&value_max=2&enrollment_start=2026-11-25T00:00&enrollment_end=2026-11-26T00:00&run_start=2026-11-26T00:00&run_end=2026-11-27T00:00&funded_by=platform";
    let bare = send(&app, post("http://console.test", form.to_owned())).await;
    assert_eq!(bare.status, StatusCode::FORBIDDEN);
    let foreign = send(
        &app,
        post("http://evil.test", format!("csrf={token}&{form}")),
    )
    .await;
    assert_eq!(foreign.status, StatusCode::FORBIDDEN);
    let ok = send(
        &app,
        post("http://console.test", format!("csrf={token}&{form}")),
    )
    .await;
    assert_eq!(
        (ok.status, ok.location.as_str()),
        (StatusCode::SEE_OTHER, "/console/activities/1"),
        "{}",
        ok.body
    );

    // Revoking the key ends the session (the key cache is off here; otherwise within it).
    app.store.revoke_api_key(id, t0()).await.unwrap();
    let after = home(&app, &cookie).await;
    assert_eq!(
        (after.status, after.location.as_str()),
        (StatusCode::SEE_OTHER, "/console/login")
    );

    // A session past its expiry asks to sign in again.
    let (again, _) = key(&app, Role::Platform).await;
    let cookie = pair(&sign_in(&app, &again).await.cookie.unwrap());
    assert_eq!(home(&app, &cookie).await.status, StatusCode::OK);
    app.clock.advance(time::Duration::hours(2));
    assert_eq!(home(&app, &cookie).await.location, "/console/login");
}

/// The form token on a page.
fn token(page: &str) -> String {
    page.split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_owned()
}

/// Sessions live on the server: each has its own form token; signing out ends it on every
/// instance at once, so a copy of its cookie opens nothing (before, a copied cookie kept
/// working for the whole session lifetime); revoking the key ends its sessions at once even
/// while the key cache would still accept the key.
#[tokio::test]
async fn signing_out_ends_the_session_on_every_instance() {
    let settings = AppSettings {
        cache_ttl: Duration::from_secs(600),
        ..AppSettings::default()
    };
    let app = app_with_settings(settings.clone()).await;
    let other = App {
        router: console_router(&app.store, &app.clock, settings),
        store: app.store.clone(),
        clock: app.clock.clone(),
        _dir: tempfile::tempdir().unwrap(),
    };
    let (platform, id) = key(&app, Role::Platform).await;
    let first = pair(&sign_in(&app, &platform).await.cookie.unwrap());
    let second = pair(&sign_in(&app, &platform).await.cookie.unwrap());
    let first_token = token(&home(&app, &first).await.body);
    let second_token = token(&home(&app, &second).await.body);
    assert_ne!(first_token, second_token, "each session has its own token");
    assert_eq!(home(&other, &first).await.status, StatusCode::OK, "shared");

    let out = Request::post("/console/logout")
        .header(header::COOKIE, first.clone())
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::HOST, "console.test")
        .header(header::ORIGIN, "http://console.test")
        .body(Body::from(format!("csrf={first_token}")))
        .unwrap();
    let out = send(&app, out).await;
    assert_eq!(out.location, "/console/login", "{}", out.body);
    for instance in [&app, &other] {
        let copied = home(instance, &first).await;
        assert_eq!(
            (copied.status, copied.location.as_str()),
            (StatusCode::SEE_OTHER, "/console/login"),
            "a copied cookie still opened the console after sign-out"
        );
    }
    assert_eq!(home(&other, &second).await.status, StatusCode::OK);

    // The key is cached for 10 minutes, yet its sessions end with it.
    assert_eq!(home(&app, &second).await.status, StatusCode::OK);
    app.store.revoke_api_key(id, t0()).await.unwrap();
    for instance in [&app, &other] {
        assert_eq!(home(instance, &second).await.location, "/console/login");
    }
}
