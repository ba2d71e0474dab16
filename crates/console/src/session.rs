//! Sessions, kept on the server: signing in with an operator account (email and password) or
//! an API key (platform or merchant) stores a session in the database (the account's id or
//! the key's hash, a form token of its own, an expiry) under the SHA-256 of a random id, and sets a private cookie holding only that id (encrypted and
//! authenticated with the console's key by `axum-extra`, HttpOnly, SameSite=Strict,
//! Path=/console, Secure over TLS). Every instance reads the same sessions, so signing out,
//! expiry, revoking the key, disabling the account and changing its password end a session
//! at once everywhere, and a copied cookie opens nothing after that. The key itself is kept
//! nowhere; each request re-checks the key (through the API's key cache) or the account.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Redirect, Response};
use axum_extra::extract::cookie::{Cookie, Key, PrivateCookieJar, SameSite};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use coupond_api::auth::{
    authenticate_key, hash_api_key, identify_caller, name_in_log, Caller, KeyHash,
};
use coupond_api::Principal;
use coupond_app::console_sessions::SignedIn;
use coupond_app::identify::Origin;
use coupond_app::records::Who;
use coupond_app::{Access, App, AppResult, Identity};
use coupond_domain::{Area, OperatorId, OperatorRole};
use sha2::{Digest, Sha256};

use crate::problem::Problem;
use crate::{Console, BASE};

/// The session cookie's name.
pub const COOKIE: &str = "coupond_session";

/// A signed-in caller.
#[derive(Clone)]
pub struct Session {
    /// What signed in: the key (its hash), or the account; re-checked on every request.
    pub caller: Caller,
    /// Who the console calls the application as (checked again by each operation's access).
    pub identity: Identity,
    pub principal: Principal,
    /// This session's form token.
    pub csrf: String,
    /// Who is signed in, in words: the person's email, or the key's role.
    pub who: String,
    /// Set when `console.require_totp_for_platform` holds for this platform operator, who has
    /// no second factor yet: every page but the account's sends them there.
    pub needs_second_factor: bool,
    /// The signed-in person's role; `None` for a key, which has its side's every right.
    pub role: Option<OperatorRole>,
    /// Where the session is stored (the SHA-256 of the cookie's id).
    id: [u8; 32],
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Whether the signed-in person's role acts in `area` (the API's own rule,
    /// [`OperatorRole::may`]): pages offer only what it admits.
    pub fn may(&self, area: Area) -> bool {
        self.role.is_none_or(|r| r.may(area))
    }

    /// Whether this session may do what `access` admits (the rule [`App::acting`] applies):
    /// pages offer only what it admits.
    pub fn may_do(&self, access: Access) -> bool {
        access.roles.contains(&self.principal.role()) && self.may(access.area)
    }

    /// Runs the application's operation `work` as this session's caller, once `access`
    /// admits it; a refusal as the problem pages show.
    pub async fn act<T>(
        &self,
        app: &App,
        access: Access,
        work: impl std::future::Future<Output = AppResult<T>>,
    ) -> Result<T, Problem> {
        let who = self.identity.clone();
        let done = app.acting(who, access, Origin::default(), work).await;
        done.map_err(Problem::from)
    }

    pub fn is_platform(&self) -> bool {
        matches!(self.principal, Principal::Platform)
    }
}

/// The principal behind `key` if it may use the console: a platform or merchant key.
pub async fn check_key(console: &Console, key: &str) -> Option<Principal> {
    if key.is_empty() || key.len() > 200 {
        return None;
    }
    console_principal(authenticate_key(console.app(), key).await.ok()?)
}

fn console_principal(p: Principal) -> Option<Principal> {
    matches!(p, Principal::Platform | Principal::Merchant(_)).then_some(p)
}

/// A random id, base64url: a session's cookie value or form token.
fn random_id() -> String {
    URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}

/// Where the session whose cookie holds `id` is stored.
fn stored_id(id: &str) -> [u8; 32] {
    Sha256::digest(id.as_bytes()).into()
}

/// Stores a new session for the API key `key` and returns `jar` with its cookie.
pub async fn start(
    console: &Console,
    jar: PrivateCookieJar,
    key: &str,
    headers: &HeaderMap,
) -> AppResult<PrivateCookieJar> {
    store_session(console, jar, SignedIn::Key(hash_api_key(key)), headers).await
}

/// Stores a new session for operator `id` (whose password was just checked) and returns `jar`
/// with its cookie. Disabling the account or changing its password deletes it.
pub async fn start_for_operator(
    console: &Console,
    jar: PrivateCookieJar,
    id: OperatorId,
    headers: &HeaderMap,
) -> AppResult<PrivateCookieJar> {
    store_session(console, jar, SignedIn::Operator(id), headers).await
}

async fn store_session(
    console: &Console,
    jar: PrivateCookieJar,
    signed_in: SignedIn,
    headers: &HeaderMap,
) -> AppResult<PrivateCookieJar> {
    let ttl = console.settings().session_ttl;
    let lifetime = time::Duration::try_from(ttl).unwrap_or(time::Duration::days(1));
    let id = random_id();
    console
        .app()
        .keep_console_session(&stored_id(&id), signed_in, random_id(), ttl)
        .await?;
    let secure = console.settings().secure_cookies || over_https(headers);
    let cookie = Cookie::build((COOKIE, id))
        .path(BASE)
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(secure)
        .max_age(lifetime)
        .build();
    Ok(jar.add(cookie))
}

/// Ends `session` on every instance and returns `jar` without its cookie.
pub async fn end(
    console: &Console,
    jar: PrivateCookieJar,
    session: &Session,
) -> AppResult<PrivateCookieJar> {
    console.app().end_console_session(&session.id).await?;
    Ok(forget(jar))
}

/// `jar` without the session cookie.
pub fn forget(jar: PrivateCookieJar) -> PrivateCookieJar {
    jar.remove(Cookie::build(COOKIE).path(BASE).build())
}

fn over_https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

/// The session `jar` names, if it is stored, not expired, and its key still valid.
pub async fn current(console: &Console, jar: &PrivateCookieJar) -> Option<Session> {
    let cookie = jar.get(COOKIE)?;
    if cookie.value().len() > 64 {
        return None;
    }
    let id = stored_id(cookie.value());
    let app = console.app();
    let stored = match app.console_session(&id).await {
        Ok(s) => s?,
        Err(e) => {
            tracing::warn!(error = %e, "reading a console session failed");
            return None;
        }
    };
    let caller = match stored.signed_in {
        SignedIn::Operator(op) => Caller::Operator(op),
        // A key's session ends when key sign-in is turned off.
        SignedIn::Key(_) if !console.settings().key_sign_in => return None,
        SignedIn::Key(hash) => Caller::Key(KeyHash(hash)),
    };
    let read = coupond_domain::Area::Read;
    let (principal, who) = identify_caller(app, &caller, read).await.ok()?;
    name_in_log(&principal, &who);
    let principal = console_principal(principal)?;
    let identity = Identity {
        principal: principal.clone(),
        who: who.clone(),
    };
    let (who, needs_second_factor, role) = match who {
        Who::Operator { id, email, role } => {
            (email, needs_second_factor(console, id).await, Some(role))
        }
        _ => match &principal {
            // A merchant's key signs in as its merchant, named (its id if the name
            // cannot be read).
            Principal::Merchant(m) => match app.merchant(&principal, *m).await {
                Ok(merchant) => (format!("{} ({m})", merchant.name), false, None),
                Err(_) => (format!("Merchant {m}"), false, None),
            },
            _ => ("Platform".to_owned(), false, None),
        },
    };
    Some(Session {
        caller,
        identity,
        principal,
        csrf: stored.csrf,
        who,
        needs_second_factor,
        role,
        id,
    })
}

/// Whether operator `id` must set up a second factor before anything else: the setting is
/// on, the account is the platform's, and it has none.
async fn needs_second_factor(console: &Console, id: OperatorId) -> bool {
    if !console.settings().require_totp_for_platform {
        return false;
    }
    match console.app().own_account(id).await {
        Ok(op) => op.role.is_platform() && !op.has_totp,
        Err(_) => true,
    }
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
            let account_page = parts.uri.path().starts_with(&format!("{BASE}/account"))
                || parts.uri.path() == format!("{BASE}/logout");
            if session.needs_second_factor && !account_page {
                return Err(Redirect::to(&format!("{BASE}/account")).into_response());
            }
            return Ok(session);
        }
        let mut res = (forget(jar), Redirect::to(&format!("{BASE}/login"))).into_response();
        if parts.headers.contains_key("hx-request") {
            res.headers_mut()
                .insert("hx-redirect", HeaderValue::from_static("/console/login"));
        }
        Err(res)
    }
}
