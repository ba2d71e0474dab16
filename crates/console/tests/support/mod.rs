//! What the console's test files share: an app (the API and the console over a fresh SQLite
//! file, with a manual clock), keys, a merchant, and the sign-in request.
// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use coupond_api::auth::generate_api_key;
use coupond_api::{AppSettings, AppState};
use coupond_console::{Console, ConsoleSettings};
use coupond_domain::{CityId, CitySet, MerchantDraft, MerchantId, Timestamp};
use coupond_engine::ManualClock;
use coupond_store::{NewApiKey, Role, Store};

pub struct App {
    pub router: Router,
    pub store: Arc<dyn Store>,
    pub clock: ManualClock,
    pub _dir: tempfile::TempDir,
}

pub fn t0() -> Timestamp {
    Timestamp::parse("2026-11-24T12:00:00Z").unwrap()
}

/// An app over a fresh database with `settings`, key sign-in on (most tests sign in with a
/// key; `console.key_sign_in` is off by default).
pub async fn app_with_settings(settings: AppSettings) -> App {
    app_with_console(settings, test_console()).await
}

/// The console settings of the tests: key sign-in on, no second factor required.
pub fn test_console() -> ConsoleSettings {
    ConsoleSettings {
        secret: Some(vec![7; 32]),
        secure_cookies: false,
        session_ttl: Duration::from_secs(3600),
        sign_in_free_failures: 5,
        sign_in_max_delay: Duration::from_secs(900),
        key_sign_in: true,
        require_totp_for_platform: false,
    }
}

/// An app over a fresh database with `settings` and the console's `console`.
pub async fn app_with_console(settings: AppSettings, console: ConsoleSettings) -> App {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/c.db", dir.path().display());
    let s = coupond_store_sqlite::SqliteDb::connect(&url).await.unwrap();
    s.migrate().await.unwrap();
    let store: Arc<dyn Store> = Arc::new(s);
    let clock = ManualClock::new(t0());
    App {
        router: router_with_console(&store, &clock, settings, console),
        store,
        clock,
        _dir: dir,
    }
}

/// An instance's API and console over `store` (instances share the console secret).
pub fn console_router(
    store: &Arc<dyn Store>,
    clock: &ManualClock,
    settings: AppSettings,
) -> Router {
    router_with_console(store, clock, settings, test_console())
}

/// As [`console_router`], with the console's `console`.
pub fn router_with_console(
    store: &Arc<dyn Store>,
    clock: &ManualClock,
    settings: AppSettings,
    console: ConsoleSettings,
) -> Router {
    let state = AppState::new(
        coupond_app::App::new(store.clone(), Arc::new(clock.clone()), b"secret", settings),
        b"secret",
    );
    let console = Console::new(state.clone(), console).unwrap();
    coupond_api::router_with(state, coupond_console::router(console))
}

/// A new key's secret and id for `role` (of `merchant` for a merchant's).
pub async fn key(app: &App, role: Role, merchant: Option<MerchantId>) -> (String, i64) {
    let k = generate_api_key();
    let new = NewApiKey {
        hash: k.hash,
        prefix: k.prefix,
        role,
        merchant_id: merchant,
        label: String::new(),
        operator_id: None,
    };
    let stored = app.store.insert_api_key(&new, t0()).await.unwrap();
    (k.secret, stored.id)
}

/// A merchant serving city 1.
pub async fn merchant(app: &App) -> MerchantId {
    let draft = MerchantDraft {
        name: "Harbour Homes".into(),
        short_name: "Harbour".into(),
        cities: CitySet::new(vec![CityId::new(1).unwrap()]).unwrap(),
    };
    app.store.insert_merchant(&draft, t0()).await.unwrap().id
}

/// The sign-in form posted with `key`, from the console's own origin.
pub fn sign_in_request(key: &str) -> Request<Body> {
    Request::post("/console/login")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::HOST, "console.test")
        .header(header::ORIGIN, "http://console.test")
        .body(Body::from(format!("key={key}")))
        .unwrap()
}

/// The `name=value` part of a Set-Cookie.
pub fn pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().to_owned()
}

/// `method path` on the API with `key`, and its JSON answer (`Null` when it is not JSON).
pub async fn v1(
    app: &App,
    key: &str,
    method: Method,
    path: &str,
    body: serde_json::Value,
) -> (StatusCode, serde_json::Value) {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {key}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let res = app.router.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    let json = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
    (status, json)
}

/// The session cookie (`name=value`) of a sign-in with the API key `key`.
pub async fn sign_in_cookie(app: &App, key: &str) -> String {
    use tower::ServiceExt;
    let res = app
        .router
        .clone()
        .oneshot(sign_in_request(key))
        .await
        .unwrap();
    pair(res.headers()[header::SET_COOKIE].to_str().unwrap())
}

/// A template of merchant-owned terms, `title` and `stock`, claimable from 2026-11-24 13:00
/// to 2026-11-30 and usable until `until`, as `POST /v1/templates` takes it.
pub fn template_body(title: &str, stock: u32, until: &str) -> serde_json::Value {
    serde_json::json!({
        "title": title,
        "value": {"kind": "percent_off", "bps": 1000, "cap": 5000},
        "threshold": 10000,
        "cities": [1],
        "total_stock": stock,
        "per_user_limit": 1,
        "stacking": "stackable",
        "claim_window": {"start": "2026-11-24T13:00:00Z", "end": "2026-11-30T00:00:00Z"},
        "validity": {"type": "fixed", "from": "2026-11-24T13:00:00Z", "until": until}
    })
}

/// Creates a template of the merchant whose key is `key` from `body` and publishes it; its id.
pub async fn published(app: &App, key: &str, body: serde_json::Value) -> i64 {
    let (status, t) = v1(app, key, Method::POST, "/v1/templates", body).await;
    assert_eq!(status, StatusCode::CREATED, "{t}");
    let id = t["id"].as_i64().unwrap();
    let publish = format!("/v1/templates/{id}/publish");
    let (status, t) = v1(app, key, Method::POST, &publish, serde_json::json!({})).await;
    assert_eq!(status, StatusCode::OK, "{t}");
    id
}

/// What a console request answered: its status, where it redirects, the session cookie it
/// set (`name=value`), and its body as text.
pub struct Answer {
    pub status: StatusCode,
    pub location: String,
    pub cookie: Option<String>,
    pub body: String,
}

/// Sends `req` through the app.
pub async fn answer(app: &App, req: Request<Body>) -> Answer {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let res = app.router.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let header = |name| {
        res.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let location = header(header::LOCATION).unwrap_or_default();
    let cookie = header(header::SET_COOKIE).map(|c| pair(&c));
    let body = res.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        location,
        cookie,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// A form POST to `path` from the console's own origin, with the session `cookie` if any.
pub fn form_post(path: &str, cookie: Option<&str>, form: String) -> Request<Body> {
    // From a client address, as the server's listener gives every request one.
    let peer = std::net::SocketAddr::from(([192, 0, 2, 7], 50_000));
    let mut req = Request::post(path)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::HOST, "console.test")
        .header(header::ORIGIN, "http://console.test")
        .extension(axum::extract::ConnectInfo(peer));
    if let Some(c) = cookie {
        req = req.header(header::COOKIE, c);
    }
    req.body(Body::from(form)).unwrap()
}

/// A page GET with the session `cookie`.
pub fn page_get(path: &str, cookie: &str) -> Request<Body> {
    Request::get(path)
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .unwrap()
}

/// The form token a page carries.
pub fn csrf_of(page: &str) -> String {
    page.split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_owned()
}

/// The password the tests' accounts share.
pub const PASSWORD: &str = "correct horse battery staple";

/// Adds an account with [`PASSWORD`].
pub async fn account(
    app: &App,
    email: &str,
    role: coupond_domain::OperatorRole,
    merchant: Option<MerchantId>,
) {
    let accounts =
        coupond_engine::accounts::Accounts::new(app.store.clone(), Arc::new(app.clock.clone()));
    let email = coupond_domain::Email::parse(email).unwrap();
    let draft = coupond_domain::OperatorDraft::new(email, "X".into(), role, merchant).unwrap();
    accounts.add(&draft, Some(PASSWORD)).await.unwrap();
}

/// Signs in as `email` with [`PASSWORD`] (and `code`, if the account asks for one).
pub async fn account_sign_in(app: &App, email: &str, code: &str) -> Answer {
    let form = format!(
        "email={email}&password={}&code={code}",
        PASSWORD.replace(' ', "+")
    );
    answer(app, form_post("/console/login", None, form)).await
}

/// The session cookie of `email`, asserting the sign-in went to the console.
pub async fn account_cookie(app: &App, email: &str) -> String {
    let a = account_sign_in(app, email, "").await;
    assert_eq!(a.status, StatusCode::SEE_OTHER, "{email}: {}", a.body);
    a.cookie.unwrap()
}

/// The text of the element with `id` (up to its first closing tag of `tag`).
pub fn element<'a>(page: &'a str, id: &str, tag: &str) -> &'a str {
    let start = page
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in {page}"));
    let end = page[start..].find(&format!("</{tag}>")).unwrap();
    &page[start..start + end]
}
