//! Setting a password from a one-time link (`coupond operators reset-password` prints one): the
//! link's token is the only credential, so the page needs no session. The token is checked
//! before the password is hashed, and used up once the password is set.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Form;
use coupond_app::own_account::AccountError;
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

/// A new password, typed twice (this page's form and the invitation's).
#[derive(Deserialize)]
pub struct NewPassword {
    #[serde(default)]
    pub(super) password: String,
    #[serde(default)]
    confirm: String,
}

impl NewPassword {
    /// Why the form is refused before anything is checked, if it is: it came from another
    /// origin (the page has no session: the browser's origin signals and SameSite guard it,
    /// as sign-in's), or the two passwords differ.
    pub(super) fn refusal(&self, headers: &HeaderMap) -> Option<(StatusCode, &'static str)> {
        if !crate::csrf::same_origin(headers) {
            return Some((
                StatusCode::FORBIDDEN,
                "This form did not come from this page.",
            ));
        }
        (self.password != self.confirm).then_some((
            StatusCode::UNPROCESSABLE_ENTITY,
            "The two passwords differ.",
        ))
    }
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
    if let Some((status, why)) = f.refusal(&headers) {
        return refuse(status, why);
    }
    match console
        .app()
        .set_password_from_link(&token, &f.password)
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
