//! What the console's pages carry and show, over HTTP (the console's router, in process):
//! every answer has the security headers (a Content-Security-Policy with no inline script, no
//! framing, no sniffing, same-origin referrers) and no page has an inline script or event
//! handler (the confirmations are in the console's script, which is served); the Webhooks page
//! shows the registered endpoints, the platform's and a merchant's, a page at a time.

mod support;

use axum::body::Body;
use axum::http::{header, HeaderMap, Request, StatusCode};
use coupond_api::AppSettings;
use coupond_domain::MerchantId;
use coupond_store::{NewWebhook, Role};
use http_body_util::BodyExt;
use tower::ServiceExt;

use support::{app_with_settings, merchant, pair, sign_in_request, t0, App};

async fn app() -> App {
    app_with_settings(AppSettings::default()).await
}

/// A key's secret (and its id) for `role`, of `merchant` for a merchant's.
async fn key(app: &App, role: Role, merchant: Option<MerchantId>) -> (String, i64) {
    support::key(app, role, merchant).await
}

async fn webhook(app: &App, owner: Option<MerchantId>, url: &str) -> i64 {
    let new = NewWebhook {
        merchant_id: owner,
        url,
        secret: "whsec_test",
        event_types: &["*".to_owned()],
    };
    app.store.insert_webhook(&new, 1000, t0()).await.unwrap().id
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

async fn send(app: &App, req: Request<Body>) -> Answer {
    let res = app.router.clone().oneshot(req).await.unwrap();
    let (status, headers) = (res.status(), res.headers().clone());
    let body = res.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// The session cookie (`name=value`) of a sign-in with `key`.
async fn sign_in(app: &App, key: &str) -> String {
    let signed = send(app, sign_in_request(key)).await;
    pair(signed.headers[header::SET_COOKIE].to_str().unwrap())
}

async fn page(app: &App, cookie: &str, path: &str) -> Answer {
    let req = Request::get(path)
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .unwrap();
    send(app, req).await
}

/// What in `html` would run as inline script: `<script>` without `src`, event handler
/// attributes (` onsubmit=`, ` onclick=`, ...), `javascript:` URLs.
fn inline_script(html: &str) -> Vec<String> {
    let lower = html.to_ascii_lowercase();
    let mut found = vec![];
    for (at, _) in lower.match_indices("<script") {
        let tag = &lower[at..lower[at..].find('>').map_or(lower.len(), |e| at + e + 1)];
        if !tag.contains(" src=") {
            found.push(tag.to_owned());
        }
    }
    let bytes = lower.as_bytes();
    for (at, _) in lower.match_indices("on") {
        let after_space = at > 0 && bytes[at - 1].is_ascii_whitespace();
        let name_len = bytes[at + 2..]
            .iter()
            .take_while(|b| b.is_ascii_lowercase())
            .count();
        let rest = lower[at + 2 + name_len..].trim_start();
        if after_space && name_len > 0 && rest.starts_with('=') {
            found.push(lower[at..at + 2 + name_len + 1].to_owned());
        }
    }
    found.extend(
        lower
            .match_indices("javascript:")
            .map(|(_, m)| m.to_owned()),
    );
    found
}

/// The console's security headers are on `a`.
fn assert_secured(a: &Answer, what: &str) {
    let h = |name: header::HeaderName| {
        a.headers
            .get(&name)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_else(|| panic!("{what}: no {name}"))
    };
    let csp = h(header::CONTENT_SECURITY_POLICY);
    for part in [
        "default-src 'self'",
        "script-src 'self';",
        "frame-ancestors 'none'",
        "object-src 'none'",
    ] {
        assert!(csp.contains(part), "{what}: {part} not in {csp}");
    }
    assert!(!csp.contains("unsafe-eval"), "{what}: {csp}");
    assert_eq!(h(header::X_FRAME_OPTIONS), "DENY", "{what}");
    assert_eq!(h(header::X_CONTENT_TYPE_OPTIONS), "nosniff", "{what}");
    assert_eq!(h(header::REFERRER_POLICY), "same-origin", "{what}");
}

#[tokio::test]
async fn pages_carry_the_security_headers_and_no_inline_script() {
    let app = app().await;
    let m = merchant(&app).await;
    key(&app, Role::Merchant, Some(m)).await;
    let (platform, _) = key(&app, Role::Platform, None).await;
    let login = send(
        &app,
        Request::get("/console/login").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(login.status, StatusCode::OK);
    assert_secured(&login, "the sign-in page");
    assert!(inline_script(&login.body).is_empty(), "{}", login.body);

    let cookie = sign_in(&app, &platform).await;
    // The merchant's page lists its key with a Revoke button that asks first.
    let keys = page(&app, &cookie, &format!("/console/merchants/{m}")).await;
    assert!(
        keys.body.contains("data-confirm=\"Revoke this key?"),
        "{}",
        keys.body
    );
    let script = keys
        .body
        .split("<script src=\"")
        .filter_map(|s| s.split('"').next())
        .find(|src| src.contains("/console-"))
        .expect("the console's script")
        .to_owned();
    for path in [
        "/console",
        "/console/webhooks",
        "/console/events",
        &format!("/console/merchants/{m}"),
    ] {
        let a = page(&app, &cookie, path).await;
        assert_secured(&a, path);
        assert_eq!(inline_script(&a.body), Vec::<String>::new(), "{path}");
    }
    // The script is served, as script, and does what the handlers did.
    let js = page(&app, &cookie, &script).await;
    assert_eq!(js.status, StatusCode::OK, "{script}");
    assert_eq!(
        js.headers[header::CONTENT_TYPE],
        "text/javascript; charset=utf-8"
    );
    assert!(js.body.contains("data-confirm") && js.body.contains("preventDefault"));
    assert_secured(&js, &script);
}

/// Every template, whether a test renders it or not.
#[test]
fn no_template_has_inline_script() {
    let mut dirs = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("templates")];
    let mut seen = 0;
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let html = std::fs::read_to_string(&path).unwrap();
            assert_eq!(
                inline_script(&html),
                Vec::<String>::new(),
                "{}",
                path.display()
            );
            seen += 1;
        }
    }
    assert!(seen > 10, "{seen} templates");
    assert_eq!(
        inline_script(
            "<form onsubmit=\"return confirm('x')\"><button onClick='y'><script>z</script>"
        ),
        ["<script>", "onsubmit=", "onclick="]
    );
}

#[tokio::test]
async fn the_webhooks_page_shows_each_registered_endpoint() {
    let app = app().await;
    let m = merchant(&app).await;
    let (merchant_key, _) = key(&app, Role::Merchant, Some(m)).await;
    let (platform, _) = key(&app, Role::Platform, None).await;
    webhook(&app, None, "http://hooks.example.com/platform").await;
    webhook(&app, Some(m), "http://hooks.example.com/harbour").await;

    let mine = page(
        &app,
        &sign_in(&app, &merchant_key).await,
        "/console/webhooks",
    )
    .await;
    assert_eq!(mine.status, StatusCode::OK);
    assert!(
        mine.body.contains("http://hooks.example.com/harbour"),
        "{}",
        mine.body
    );
    assert!(!mine.body.contains("/platform") && !mine.body.contains("No webhook endpoints"));

    let cookie = sign_in(&app, &platform).await;
    let all = page(&app, &cookie, "/console/webhooks").await;
    for url in [
        "http://hooks.example.com/platform",
        "http://hooks.example.com/harbour",
    ] {
        assert!(all.body.contains(url), "{url}: {}", all.body);
    }
    assert!(!all.body.contains("next-webhooks"), "one page");

    // Past 50, the next page is a link away.
    for i in 0..49 {
        webhook(&app, None, &format!("http://hooks.example.com/more-{i}")).await;
    }
    let first = page(&app, &cookie, "/console/webhooks").await;
    assert!(first.body.contains("more-47<"), "{}", first.body);
    assert!(!first.body.contains("more-48<"));
    let next = first
        .body
        .split("href=\"")
        .filter_map(|s| s.split('"').next())
        .find(|href| href.starts_with("/console/webhooks?after="))
        .expect("a link to the next page")
        .to_owned();
    let second = page(&app, &cookie, &next).await;
    assert!(
        second.body.contains("http://hooks.example.com/more-48<"),
        "{}",
        second.body
    );
    assert!(!second.body.contains("/platform<"));
}

/// A console path that names no page answers a page saying so, in the console's frame.
#[tokio::test]
async fn an_unknown_console_path_is_a_page() {
    let app = support::app_with_settings(coupond_api::AppSettings::default()).await;
    let (key, _) = support::key(&app, coupond_store::Role::Platform, None).await;
    let cookie = support::sign_in_cookie(&app, &key).await;
    let a = support::answer(&app, support::page_get("/console/nowhere/at/all", &cookie)).await;
    assert_eq!(a.status, axum::http::StatusCode::NOT_FOUND);
    assert!(a.body.contains("<h1>Not found</h1>"), "{}", a.body);
    assert!(a.body.contains("no such page"), "{}", a.body);
}
