//! Accepting a merchant's invitation from its one-time link (sent only to the invited address):
//! the holder chooses a password and the account is made. Like the set-password page it needs
//! no session; the token is checked before the password is hashed. An address that has an
//! account already is told so here, and only here: the inviting merchant never learns it.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Form;
use coupond_app::own_account::AccountError;

use super::password::{clean, NewPassword};
use super::render;
use crate::Console;

#[derive(Template)]
#[template(path = "invitation.html")]
struct InvitationPage {
    token: String,
    /// The invited address and role, while the link is live.
    invited: Option<(String, String)>,
    error: Option<String>,
    done: bool,
}

const GONE: &str = "This invitation is not valid any more (accepted, or older than 72 hours): \
                    ask whoever invited you for a new one.";

pub async fn form(State(console): State<Console>, Path(token): Path<String>) -> Response {
    let token = clean(&token);
    match console.app().open_invitation(&token).await {
        Ok(i) => render(
            StatusCode::OK,
            &InvitationPage {
                invited: Some((i.email.as_str().to_owned(), i.role.as_str().to_owned())),
                token,
                error: None,
                done: false,
            },
        ),
        Err(_) => render(
            StatusCode::GONE,
            &InvitationPage {
                token: String::new(),
                invited: None,
                error: Some(GONE.to_owned()),
                done: false,
            },
        ),
    }
}

pub async fn submit(
    State(console): State<Console>,
    Path(token): Path<String>,
    headers: HeaderMap,
    Form(f): Form<NewPassword>,
) -> Response {
    let token = clean(&token);
    let refuse = |status, error: &str, keep: bool| {
        let page = InvitationPage {
            token: if keep { token.clone() } else { String::new() },
            invited: None,
            error: Some(error.to_owned()),
            done: false,
        };
        render(status, &page)
    };
    if let Some((status, why)) = f.refusal(&headers) {
        return refuse(status, why, true);
    }
    match console.app().accept_invitation(&token, &f.password).await {
        Ok(_) => render(
            StatusCode::OK,
            &InvitationPage {
                token: String::new(),
                invited: None,
                error: None,
                done: true,
            },
        ),
        Err(AccountError::Invalid(e)) => {
            refuse(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string(), true)
        }
        Err(AccountError::ResetInvalid) => refuse(StatusCode::GONE, GONE, false),
        Err(AccountError::EmailTaken) => refuse(
            StatusCode::CONFLICT,
            "This address has a coupond console account already, and one address signs in to \
             one account: ask whoever invited you to invite another address.",
            false,
        ),
        Err(AccountError::Busy { .. }) => refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "Too many passwords are being checked right now; try again in a moment.",
            true,
        ),
        Err(e) => {
            tracing::warn!(error = %e, "accepting an invitation failed");
            refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "Accepting the invitation failed; try again.",
                true,
            )
        }
    }
}
