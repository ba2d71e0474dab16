//! Sign-in with an API key, and sign-out.

use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use axum_extra::extract::cookie::PrivateCookieJar;
use serde::Deserialize;

use super::render;
use crate::session::{self, Session};
use crate::Console;

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage {
    error: Option<String>,
}

pub async fn form(State(console): State<Console>, jar: PrivateCookieJar) -> Response {
    if session::current(&console, &jar).await.is_some() {
        return Redirect::to("/console").into_response();
    }
    render(StatusCode::OK, &LoginPage { error: None })
}

#[derive(Deserialize)]
pub struct SignIn {
    #[serde(default)]
    key: String,
}

pub async fn submit(
    State(console): State<Console>,
    jar: PrivateCookieJar,
    headers: HeaderMap,
    Form(f): Form<SignIn>,
) -> Response {
    // No session yet, so no token: the browser's origin signals and SameSite guard this form.
    if !crate::csrf::same_origin(&headers) {
        let error = Some("This sign-in did not come from this console's page.".to_owned());
        return render(StatusCode::FORBIDDEN, &LoginPage { error });
    }
    let key = f.key.trim();
    if session::check_key(&console, key).await.is_none() {
        let error = Some("This is not a valid platform or merchant API key.".to_owned());
        return render(StatusCode::UNAUTHORIZED, &LoginPage { error });
    }
    match session::start(&console, jar, key, &headers).await {
        Ok(jar) => (jar, Redirect::to("/console")).into_response(),
        Err(e) => {
            tracing::warn!(error = %e.chain(), "storing a console session failed");
            let error = Some("Signing in failed; try again in a moment.".to_owned());
            render(StatusCode::SERVICE_UNAVAILABLE, &LoginPage { error })
        }
    }
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
            tracing::warn!(error = %e.chain(), "ending a console session failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "Signing out failed; try again.",
            )
                .into_response()
        }
    }
}
