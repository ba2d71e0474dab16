//! People: the operator accounts the caller manages (the platform: everyone; a merchant: its
//! own owners and staff), a form to add one, and disabling or enabling an account. An account
//! the platform adds is answered with its one-time set-password link, shown on the page that
//! made it, once; a merchant invites instead, and the link goes by email to the address only
//! (the invitations pending are listed). Passwords never pass through the console. Each
//! account links to its history. What the caller may do here the API decides (its admins and
//! owners).

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_api::routes::operators::{InvitationView, OperatorView};
use coupond_domain::{Operator, OperatorRole};
use serde::Deserialize;
use serde_json::{json, Value};

use super::choices::{self, Choice};
use super::format::at;
use super::names::MerchantNames;
use super::paging::{gather, next_link, one_page, After};
use super::{guard, problem_page, render, FieldErrors, Shell, Shown};
use crate::session::Session;
use crate::Console;

/// An account as a row.
#[derive(Debug, Clone, Default)]
struct PersonRow {
    id: i64,
    email: String,
    name: String,
    role: String,
    merchant: String,
    state: String,
    second_factor: bool,
    disabled: bool,
}

impl PersonRow {
    fn of(o: &Operator, merchants: &MerchantNames) -> Self {
        let state = match o.disabled_at {
            Some(when) => format!("disabled {}", at(when)),
            None if o.has_password => "enabled".to_owned(),
            None => "invited (no password yet)".to_owned(),
        };
        PersonRow {
            id: o.id.get(),
            email: o.email.as_str().to_owned(),
            name: o.name.clone(),
            role: o.role.as_str().to_owned(),
            merchant: o
                .merchant_id
                .map(|m| merchants.one(m.get()))
                .unwrap_or_default(),
            state,
            second_factor: o.has_totp,
            disabled: o.disabled_at.is_some(),
        }
    }
}

/// A pending invitation as a row.
#[derive(Debug, Clone)]
struct InvitationRow {
    email: String,
    name: String,
    role: String,
    merchant: String,
    expires: String,
}

/// What the form just did: an account the platform added (its address and set-password
/// link), or a merchant's invitation sent (its address).
#[derive(Debug, Clone)]
pub enum Added {
    Account(String, String),
    Invitation(String),
}

/// The form adding an account, as sent.
#[derive(Debug, Default, Deserialize)]
pub struct PersonForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    role: String,
    /// The platform's: the merchant of an owner or staff account.
    #[serde(default)]
    merchant_id: String,
}

impl PersonForm {
    fn body(&self) -> Result<Value, Shown> {
        let mut body =
            json!({"email": self.email.trim(), "name": self.name.trim(), "role": self.role});
        match self.merchant_id.trim() {
            "" => {}
            m => match m.parse::<i64>() {
                Ok(id) => body["merchant_id"] = json!(id),
                Err(_) => return Err(Shown::field("merchant_id", "a merchant's id".into())),
            },
        }
        Ok(body)
    }
}

#[derive(Template)]
#[template(path = "people.html")]
struct PeoplePage {
    shell: Shell,
    rows: Vec<PersonRow>,
    next: Option<String>,
    roles: Vec<&'static str>,
    /// The platform's merchants for an owner or staff account, when few enough for a select.
    merchants: Option<Vec<Choice>>,
    form: PersonForm,
    errors: FieldErrors,
    error: Option<String>,
    /// What the form just did.
    added: Option<Added>,
    /// Invitations neither accepted nor expired.
    invitations: Vec<InvitationRow>,
}

async fn people_page(
    console: &Console,
    session: &Session,
    after: &str,
    form: PersonForm,
    shown: Shown,
    added: Option<Added>,
) -> Response {
    let list = one_page(console, session, "/v1/operators", after).await;
    let (people, next) = match list.and_then(|l| l.typed::<OperatorView>()) {
        Ok(l) => l,
        Err(p) => return problem_page(session, &p),
    };
    let invited = gather(console, session, "/v1/operators/invitations").await;
    let invited = match invited.and_then(|g| g.typed::<InvitationView>()) {
        Ok(l) => l,
        Err(p) => return problem_page(session, &p),
    };
    let roles = OperatorRole::ALL
        .iter()
        .filter(|r| session.is_platform() || !r.is_platform())
        .map(|r| r.as_str())
        .collect();
    let names = MerchantNames::load(console, session).await;
    let page = PeoplePage {
        merchants: choices::merchants(console, session, &names),
        shell: Shell::new(session, "People"),
        rows: people
            .iter()
            .map(|p| PersonRow::of(&p.operator, &names))
            .collect(),
        next: next_link("/console/people", &next),
        roles,
        form,
        errors: shown.errors,
        error: shown.error,
        added,
        invitations: invited
            .into_iter()
            .filter(|i| i.status == "pending")
            .map(|i| InvitationRow {
                email: i.invitation.email.as_str().to_owned(),
                name: i.invitation.name,
                role: i.invitation.role.as_str().to_owned(),
                merchant: names.one(i.invitation.merchant_id.get()),
                expires: at(i.invitation.expires_at),
            })
            .collect(),
    };
    render(shown.status, &page)
}

pub async fn list(
    State(console): State<Console>,
    session: Session,
    Query(q): Query<After>,
) -> Response {
    let form = PersonForm::default();
    people_page(&console, &session, &q.after, form, Shown::ok(), None).await
}

pub async fn create(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Form(form): Form<PersonForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &form.csrf) {
        return refused;
    }
    let body = match form.body() {
        Ok(b) => b,
        Err(shown) => return people_page(&console, &session, "", form, shown, None).await,
    };
    let reply = console
        .api()
        .send_json(&session.caller, Method::POST, "/v1/operators", &body)
        .await;
    let fresh = PersonForm::default();
    if reply.status == axum::http::StatusCode::ACCEPTED {
        return match reply.into::<InvitationView>() {
            Ok(i) => {
                let sent = Some(Added::Invitation(i.invitation.email.as_str().to_owned()));
                people_page(&console, &session, "", fresh, Shown::ok(), sent).await
            }
            Err(p) => people_page(&console, &session, "", form, Shown::of(&p), None).await,
        };
    }
    match reply.into::<OperatorView>() {
        Ok(op) => {
            let email = op.operator.email.as_str().to_owned();
            let link = op.set_password.map(|l| l.path).unwrap_or_default();
            let added = Some(Added::Account(email, link));
            people_page(&console, &session, "", fresh, Shown::ok(), added).await
        }
        Err(p) => people_page(&console, &session, "", form, Shown::of(&p), None).await,
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct Toggle {
    #[serde(default)]
    csrf: String,
}

pub async fn disable(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<Toggle>,
) -> Response {
    let body = json!({ "disabled": true });
    patch(&console, &session, &headers, id, &f.csrf, body).await
}

/// Turns a person's second factor off (a lost phone).
pub async fn clear_second_factor(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<Toggle>,
) -> Response {
    let body = json!({ "second_factor": false });
    patch(&console, &session, &headers, id, &f.csrf, body).await
}

pub async fn enable(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<Toggle>,
) -> Response {
    let body = json!({ "disabled": false });
    patch(&console, &session, &headers, id, &f.csrf, body).await
}

/// Changes account `id` with the API's `body`, back to the list.
async fn patch(
    console: &Console,
    session: &Session,
    headers: &HeaderMap,
    id: i64,
    csrf: &str,
    body: Value,
) -> Response {
    if let Some(refused) = guard(headers, session, csrf) {
        return refused;
    }
    let path = format!("/v1/operators/{id}");
    let reply = console
        .api()
        .send_json(&session.caller, Method::PATCH, &path, &body)
        .await;
    if !reply.ok() {
        return problem_page(session, &reply.problem());
    }
    Redirect::to("/console/people").into_response()
}
