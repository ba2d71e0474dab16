//! Setting a password from a one-time link (`coupond operators reset-password` prints one): the
//! link's token is the only credential, so the page needs no session. The token is checked
//! before the password is hashed, and used up once the password is set.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Form;
use coupond_engine::accounts::AccountError;
use serde::Deserialize;

use super::render;
use crate::Console;

#[derive(Template)]
#[template(path = "password.html")]
struct PasswordPage {
    token: String,
    error: Option<String>,
    done: bool,
}

/// The link's token, kept to what a token can hold (64 hex characters) before it is put back
/// into the page.
pub(super) fn clean(token: &str) -> String {
    token
        .chars()
        .filter(char::is_ascii_hexdigit)
        .take(64)
        .collect()
}

pub async fn form(Path(token): Path<String>) -> Response {
    let page = PasswordPage {
        token: clean(&token),
        error: None,
        done: false,
    };
    render(StatusCode::OK, &page)
}

#[derive(Deserialize)]
pub struct NewPassword {
    #[serde(default)]
    password: String,
    #[serde(default)]
    confirm: String,
}

pub async fn submit(
    State(console): State<Console>,
    Path(token): Path<String>,
    headers: HeaderMap,
    Form(f): Form<NewPassword>,
) -> Response {
    let token = clean(&token);
    let refuse = |status, error: &str| {
        let page = PasswordPage {
            token: token.clone(),
            error: Some(error.to_owned()),
            done: false,
        };
        render(status, &page)
    };
    // No session: the browser's origin signals and SameSite guard this form, as sign-in's.
    if !crate::csrf::same_origin(&headers) {
        return refuse(
            StatusCode::FORBIDDEN,
            "This form did not come from this page.",
        );
    }
    if f.password != f.confirm {
        return refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "The two passwords differ.",
        );
    }
    match console
        .app()
        .accounts()
        .finish_reset(&token, &f.password)
        .await
    {
        Ok(_) => render(
            StatusCode::OK,
            &PasswordPage {
                token: String::new(),
                error: None,
                done: true,
            },
        ),
        Err(AccountError::Invalid(e)) => refuse(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string()),
        Err(AccountError::ResetInvalid) => refuse(
            StatusCode::GONE,
            "This link is not valid any more (used, or older than an hour): ask an admin for a \
             new one.",
        ),
        Err(e) => {
            tracing::warn!(error = %e, "setting a password failed");
            refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "Setting the password failed; try again.",
            )
        }
    }
}
