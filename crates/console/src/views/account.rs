//! The signed-in person's own account: who they are, and their second factor. Turning it on
//! shows a fresh secret (and its `otpauth://` link for an authenticator app) and takes a code
//! from the app to prove it has it; turning it off takes a current code. A platform operator
//! who must have one (`console.require_totp_for_platform`) is sent here first.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_api::auth::Caller;
use coupond_app::own_account::AccountError;
use coupond_app::records::audit;
use coupond_domain::{Operator, OperatorId};
use coupond_engine::second_factor;
use serde::Deserialize;

use super::{guard, problem_page, render, Shell};
use crate::problem::Problem;
use crate::session::Session;
use crate::Console;

#[derive(Template)]
#[template(path = "account.html")]
struct AccountPage {
    shell: Shell,
    email: String,
    name: String,
    role: String,
    has_totp: bool,
    /// A fresh secret to set up, and its link (only while there is no second factor).
    secret: String,
    link: String,
    required: bool,
    error: Option<String>,
    notice: String,
}

#[derive(Debug, Default, Deserialize)]
pub struct Notice {
    #[serde(default)]
    notice: String,
}

fn operator_of(session: &Session) -> Option<OperatorId> {
    match session.caller {
        Caller::Operator(id) => Some(id),
        Caller::Key(_) => None,
    }
}

fn not_an_account(session: &Session) -> Response {
    let p = Problem {
        fields: Vec::new(),
        status: 404,
        code: "not_found".into(),
        field: None,
        detail: "Signed in with an API key, there is no account to show.".into(),
    };
    problem_page(session, &p)
}

fn show(session: &Session, op: &Operator, error: Option<String>, notice: &str) -> Response {
    let secret = if op.has_totp {
        String::new()
    } else {
        second_factor::new_secret()
    };
    let link = if secret.is_empty() {
        String::new()
    } else {
        second_factor::otpauth_url(op.email.as_str(), &secret)
    };
    let status = if error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let page = AccountPage {
        shell: Shell::new(session, "Your account"),
        email: op.email.to_string(),
        name: op.name.clone(),
        role: op.role.as_str().to_owned(),
        has_totp: op.has_totp,
        secret,
        link,
        required: session.needs_second_factor,
        error,
        notice: match notice {
            "on" => "Your second factor is on: sign-ins now ask for its code.".to_owned(),
            "off" => "Your second factor is off.".to_owned(),
            _ => String::new(),
        },
    };
    render(status, &page)
}

/// The audit trail's context of a change `op` makes to their own account from this page: in
/// their name, from the page's client.
fn as_person(op: &Operator) -> audit::Context {
    let page = audit::current();
    audit::Context {
        who: audit::Who::Operator {
            id: op.id,
            email: op.email.to_string(),
            role: op.role,
        },
        request_id: page.as_ref().and_then(|c| c.request_id.clone()),
        client: page.and_then(|c| c.client),
    }
}

async fn load(console: &Console, session: &Session) -> Result<Operator, Response> {
    let Some(id) = operator_of(session) else {
        return Err(not_an_account(session));
    };
    console
        .app()
        .own_account(id)
        .await
        .map_err(|e| failed(session, &e))
}

fn failed(session: &Session, e: &AccountError) -> Response {
    tracing::warn!(error = %e, "reading or changing an account failed");
    let p = Problem {
        fields: Vec::new(),
        status: 503,
        code: "unavailable".into(),
        field: None,
        detail: "The account could not be read or changed; try again in a moment.".into(),
    };
    problem_page(session, &p)
}

/// A form of this page, checked (its token) and its account loaded.
async fn checked(
    console: &Console,
    session: &Session,
    headers: &HeaderMap,
    csrf: &str,
) -> Result<Operator, Response> {
    if let Some(refused) = guard(headers, session, csrf) {
        return Err(refused);
    }
    load(console, session).await
}

pub async fn page(
    State(console): State<Console>,
    session: Session,
    Query(n): Query<Notice>,
) -> Response {
    match load(&console, &session).await {
        Ok(op) => show(&session, &op, None, &n.notice),
        Err(r) => r,
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct CodeForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    secret: String,
    #[serde(default)]
    code: String,
}

/// Turns the second factor on with the page's secret, once a code from the app matches it.
pub async fn totp_on(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Form(f): Form<CodeForm>,
) -> Response {
    let op = match checked(&console, &session, &headers, &f.csrf).await {
        Ok(op) => op,
        Err(r) => return r,
    };
    let on = console
        .app()
        .turn_on_second_factor(op.id, f.secret.trim(), &f.code);
    match audit::acting(as_person(&op), on).await {
        Ok(_) => Redirect::to("/console/account?notice=on").into_response(),
        Err(AccountError::Invalid(e)) => show(&session, &op, Some(e.to_string()), ""),
        Err(e) => failed(&session, &e),
    }
}

/// Turns the second factor off, with a current code.
pub async fn totp_off(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Form(f): Form<CodeForm>,
) -> Response {
    let op = match checked(&console, &session, &headers, &f.csrf).await {
        Ok(op) => op,
        Err(r) => return r,
    };
    let off = console.app().turn_off_second_factor(op.id, &f.code);
    match audit::acting(as_person(&op), off).await {
        Ok(Some(_)) => Redirect::to("/console/account?notice=off").into_response(),
        Ok(None) => {
            let error = Some("This is not the code your app shows now.".to_owned());
            show(&session, &op, error, "")
        }
        Err(e) => failed(&session, &e),
    }
}
