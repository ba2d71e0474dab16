//! Sign-in with an operator account (email and password) or an API key, and sign-out.
//!
//! A wrong email and a wrong password get the same words after the same work
//! (`Accounts::verify`); failures past `console.sign_in_free_failures` per email and per
//! client address wait longer each time (`throttle`), refused without a check meanwhile. An
//! attempt counts from the moment it is let through, and the password checks running at once
//! are bounded (`console.password_hashes`): a burst sent at once gets 429 or 503 with
//! `Retry-After` past those bounds.

use askama::Template;
use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use axum_extra::extract::cookie::PrivateCookieJar;
use coupond_app::identify::operator_principal;
use coupond_app::own_account::AccountError;
use coupond_domain::Email;
use serde::Deserialize;

use super::render;
use crate::session::{self, Session};
use crate::Console;

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage {
    error: Option<String>,
    /// Whether the API key form shows (`console.key_sign_in`).
    key_sign_in: bool,
}

impl LoginPage {
    fn new(console: &Console, error: Option<String>) -> Self {
        LoginPage {
            error,
            key_sign_in: console.settings().key_sign_in,
        }
    }
}

pub async fn form(State(console): State<Console>, jar: PrivateCookieJar) -> Response {
    if session::current(&console, &jar).await.is_some() {
        return Redirect::to("/console").into_response();
    }
    render(StatusCode::OK, &LoginPage::new(&console, None))
}

#[derive(Deserialize)]
pub struct SignIn {
    #[serde(default)]
    key: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    /// The second factor's code, for an account that has one.
    #[serde(default)]
    code: String,
}

pub async fn submit(
    State(console): State<Console>,
    jar: PrivateCookieJar,
    headers: HeaderMap,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    Form(f): Form<SignIn>,
) -> Response {
    // No session yet, so no token: the browser's origin signals and SameSite guard this form.
    if !crate::csrf::same_origin(&headers) {
        let error = Some("This sign-in did not come from this console's page.".to_owned());
        return render(StatusCode::FORBIDDEN, &LoginPage::new(&console, error));
    }
    if !f.email.trim().is_empty() {
        let client = peer.map(|Extension(ConnectInfo(addr))| {
            let proxies = &console.app().settings().trusted_proxies;
            proxies.client(addr.ip(), &headers)
        });
        let code = Some(f.code.trim()).filter(|c| !c.is_empty());
        let who = Credentials {
            email: &f.email,
            password: &f.password,
            code,
        };
        return account(&console, jar, &headers, client, who).await;
    }
    if !console.settings().key_sign_in {
        let error = Some(
            "Signing in with an API key is turned off here (console.key_sign_in): sign in with your account.".to_owned(),
        );
        return render(StatusCode::FORBIDDEN, &LoginPage::new(&console, error));
    }
    let key = f.key.trim();
    if session::check_key(&console, key).await.is_none() {
        let error = Some("This is not a valid platform or merchant API key.".to_owned());
        return render(StatusCode::UNAUTHORIZED, &LoginPage::new(&console, error));
    }
    match session::start(&console, jar, key, &headers).await {
        Ok(jar) => (jar, Redirect::to("/console")).into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "storing a console session failed");
            let error = Some("Signing in failed; try again in a moment.".to_owned());
            render(
                StatusCode::SERVICE_UNAVAILABLE,
                &LoginPage::new(&console, error),
            )
        }
    }
}

/// What a person signs in with.
struct Credentials<'a> {
    email: &'a str,
    password: &'a str,
    code: Option<&'a str>,
}

/// Signs in with an account: throttled per email and per client address, then the password
/// checked (the same answer for an unknown email). What the account may do is its role's,
/// checked by the API on every call the console makes.
async fn account(
    console: &Console,
    jar: PrivateCookieJar,
    headers: &HeaderMap,
    client: Option<IpAddr>,
    who: Credentials<'_>,
) -> Response {
    let refuse = |status, error: &str| {
        let error = Some(error.to_owned());
        render(status, &LoginPage::new(console, error))
    };
    let Credentials {
        email,
        password,
        code,
    } = who;
    let now = console.app().now();
    let by_email = format!("email:{}", email.trim().to_lowercase());
    let by_client = client.map_or_else(String::new, |ip| format!("ip:{ip}"));
    let keys = [by_email.as_str(), by_client.as_str()];
    let keys = if client.is_some() {
        &keys[..]
    } else {
        &keys[..1]
    };
    if let Err(wait) = console.sign_ins().attempt(keys, now) {
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        let unit = if secs == 1 { "second" } else { "seconds" };
        let error = format!("Too many failed sign-ins: try again in {secs} {unit}.");
        return retry_after(refuse(StatusCode::TOO_MANY_REQUESTS, &error), secs);
    }
    let verified = match Email::parse(email) {
        Ok(e) => console.app().sign_in(&e, password, code).await,
        Err(_) => Ok(None),
    };
    let op = match verified {
        Ok(Some(op)) => op,
        Ok(None) => {
            return refuse(
                StatusCode::UNAUTHORIZED,
                "The email, the password or the code is wrong.",
            );
        }
        Err(AccountError::Busy { retry_after: wait }) => {
            let page = refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "Too many sign-ins at once: try again in a moment.",
            );
            return retry_after(page, wait.as_secs().max(1));
        }
        Err(e) => {
            tracing::warn!(error = %e, "checking a sign-in failed");
            return refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "Signing in failed; try again in a moment.",
            );
        }
    };
    console.sign_ins().succeeded(&by_email, &keys[1..]);
    if operator_principal(&op).is_none() {
        return refuse(
            StatusCode::FORBIDDEN,
            "This account cannot use the console.",
        );
    }
    match session::start_for_operator(console, jar, op.id, headers).await {
        Ok(jar) => (jar, Redirect::to("/console")).into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "storing a console session failed");
            refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "Signing in failed; try again in a moment.",
            )
        }
    }
}

/// `page` with a `Retry-After` of `secs` seconds.
fn retry_after(mut page: Response, secs: u64) -> Response {
    page.headers_mut()
        .insert(axum::http::header::RETRY_AFTER, secs.into());
    page
}

#[derive(Deserialize)]
pub struct SignOut {
    #[serde(default)]
    csrf: String,
}

/// Signs out: the session ends on every instance at once, so a copy of its cookie opens
/// nothing any more.
pub async fn logout(
    State(console): State<Console>,
    session: Session,
    jar: PrivateCookieJar,
    headers: HeaderMap,
    Form(f): Form<SignOut>,
) -> Response {
    if let Some(refused) = super::guard(&headers, &session, &f.csrf) {
        return refused;
    }
    match session::end(&console, jar, &session).await {
        Ok(jar) => (jar, Redirect::to("/console/login")).into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "ending a console session failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "Signing out failed; try again.",
            )
                .into_response()
        }
    }
}
