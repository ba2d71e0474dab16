//! Sessions: signing in with an API key (platform or merchant) sets a private cookie holding
//! the key and its expiry, encrypted and authenticated with the console's key (AES-GCM, by
//! `axum-extra`), HttpOnly, SameSite=Strict, Path=/console, Secure over TLS. The key never
//! appears in a URL or a log. Each request re-checks the key through the API's key cache, so
//! a revoked key ends its sessions within `cache_ttl`.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Redirect, Response};
use axum_extra::extract::cookie::{Cookie, Key, PrivateCookieJar, SameSite};
use coupond_api::auth::authenticate_key;
use coupond_api::Principal;
use serde::{Deserialize, Serialize};

use crate::{Console, BASE};

/// The session cookie's name.
pub const COOKIE: &str = "coupond_session";

/// What the cookie holds.
#[derive(Serialize, Deserialize)]
struct Stored {
    /// The API key.
    k: String,
    /// Expiry, Unix seconds.
    e: i64,
}

/// A signed-in caller.
#[derive(Clone)]
pub struct Session {
    /// The API key the console calls the API with.
    pub key: String,
    pub principal: Principal,
    /// This session's form token.
    pub csrf: String,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl Session {
    pub fn is_platform(&self) -> bool {
        matches!(self.principal, Principal::Platform)
    }
}

/// The principal behind `key` if it may use the console: a platform or merchant key.
pub async fn check_key(console: &Console, key: &str) -> Option<Principal> {
    if key.is_empty() || key.len() > 200 {
        return None;
    }
    match authenticate_key(console.app(), key).await {
        Ok(p @ (Principal::Platform | Principal::Merchant(_))) => Some(p),
        _ => None,
    }
}

/// `jar` with a new session for `key`.
pub fn start(
    console: &Console,
    jar: PrivateCookieJar,
    key: &str,
    headers: &HeaderMap,
) -> PrivateCookieJar {
    let ttl = console.settings().session_ttl;
    let expires = console.app().now().unix_micros() / 1_000_000 + ttl.as_secs() as i64;
    let value = serde_json::to_string(&Stored {
        k: key.to_owned(),
        e: expires,
    })
    .unwrap_or_default();
    let secure = console.settings().secure_cookies || over_https(headers);
    let cookie = Cookie::build((COOKIE, value))
        .path(BASE)
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(secure)
        .max_age(time::Duration::seconds(ttl.as_secs() as i64))
        .build();
    jar.add(cookie)
}

/// `jar` without the session.
pub fn end(jar: PrivateCookieJar) -> PrivateCookieJar {
    jar.remove(Cookie::build(COOKIE).path(BASE).build())
}

fn over_https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

/// The session `jar` holds, if it holds a valid one: not expired, its key still valid.
pub async fn current(console: &Console, jar: &PrivateCookieJar) -> Option<Session> {
    let stored = serde_json::from_str::<Stored>(jar.get(COOKIE)?.value()).ok()?;
    let now = console.app().now().unix_micros() / 1_000_000;
    if stored.e <= now {
        return None;
    }
    let principal = check_key(console, &stored.k).await?;
    Some(Session {
        csrf: crate::csrf::token(console, &stored.k),
        key: stored.k,
        principal,
    })
}

/// Pages need a session: without a valid one the browser goes to the sign-in page (an htmx
/// request is told to go there with `HX-Redirect`).
impl FromRequestParts<Console> for Session {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, console: &Console) -> Result<Self, Response> {
        let jar = PrivateCookieJar::<Key>::from_request_parts(parts, console)
            .await
            .map_err(IntoResponse::into_response)?;
        if let Some(session) = current(console, &jar).await {
            return Ok(session);
        }
        let mut res = (end(jar), Redirect::to(&format!("{BASE}/login"))).into_response();
        if parts.headers.contains_key("hx-request") {
            res.headers_mut()
                .insert("hx-redirect", HeaderValue::from_static("/console/login"));
        }
        Err(res)
    }
}
