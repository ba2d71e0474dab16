//! People: the operator accounts the caller manages (the platform: everyone; a merchant: its
//! own owners and staff), a form to add one, and disabling or enabling an account. An account
//! the platform adds is answered with its one-time set-password link, shown on the page that
//! made it, once; a merchant invites instead, and the link goes by email to the address only
//! (the invitations pending are listed). Passwords never pass through the console. Each
//! account links to its history. What the caller may do here the API decides (its admins and
//! owners).

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_app::people::{self, NewOperatorBody, OperatorPatch};
use coupond_app::AppError;
use coupond_domain::{MerchantId, Operator, OperatorId, OperatorRole};
use serde::Deserialize;

use super::choices::{self, Choice};
use super::format::at;
use super::names::MerchantNames;
use super::paging::{gather_all, next_link, request, rows, After};
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
    /// The person it adds; a role or merchant that cannot be read is named.
    fn body(&self) -> Result<NewOperatorBody, Shown> {
        let role = OperatorRole::parse(&self.role)
            .ok_or_else(|| Shown::field("role", "choose a role".into()))?;
        let merchant_id = match self.merchant_id.trim() {
            "" => None,
            m => Some(
                m.parse::<i64>()
                    .ok()
                    .and_then(|id| MerchantId::new(id).ok())
                    .ok_or_else(|| Shown::field("merchant_id", "a merchant's id".into()))?,
            ),
        };
        Ok(NewOperatorBody {
            email: self.email.trim().to_owned(),
            name: self.name.trim().to_owned(),
            role,
            merchant_id,
        })
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
    let (app, p) = (console.app(), &session.principal);
    let list = app.operators(p, None, request(console, after));
    let (people, next) = match session.act(app, people::MANAGE, list).await {
        Ok(l) => rows(l),
        Err(p) => return problem_page(session, &p),
    };
    let read = |page| {
        let listed = app.operator_invitations(p, None, page);
        session.act(app, people::MANAGE, listed)
    };
    let invited = match gather_all(console, read).await {
        Ok(g) => g.items,
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
        rows: people.iter().map(|p| PersonRow::of(p, &names)).collect(),
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
    let app = console.app();
    let made = app.add_operator(&session.principal, body);
    let added = match session.act(app, people::MANAGE, made).await {
        Ok(people::Added::Invited(i)) => Added::Invitation(i.invitation.email.as_str().to_owned()),
        Ok(people::Added::Account(op)) => {
            let email = op.operator.email.as_str().to_owned();
            let link = op.set_password.map(|l| l.path).unwrap_or_default();
            Added::Account(email, link)
        }
        Err(p) => return people_page(&console, &session, "", form, Shown::of(&p), None).await,
    };
    let fresh = PersonForm::default();
    people_page(&console, &session, "", fresh, Shown::ok(), Some(added)).await
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
    let change = OperatorPatch {
        disabled: Some(true),
        ..OperatorPatch::default()
    };
    patch(&console, &session, &headers, id, &f.csrf, change).await
}

/// Turns a person's second factor off (a lost phone).
pub async fn clear_second_factor(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<Toggle>,
) -> Response {
    let change = OperatorPatch {
        second_factor: Some(false),
        ..OperatorPatch::default()
    };
    patch(&console, &session, &headers, id, &f.csrf, change).await
}

pub async fn enable(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<Toggle>,
) -> Response {
    let change = OperatorPatch {
        disabled: Some(false),
        ..OperatorPatch::default()
    };
    patch(&console, &session, &headers, id, &f.csrf, change).await
}

/// Changes account `id` as `change` says, back to the list.
async fn patch(
    console: &Console,
    session: &Session,
    headers: &HeaderMap,
    id: i64,
    csrf: &str,
    change: OperatorPatch,
) -> Response {
    if let Some(refused) = guard(headers, session, csrf) {
        return refused;
    }
    let app = console.app();
    let changed = async {
        let id = OperatorId::new(id).map_err(|_| AppError::NotFound)?;
        app.update_operator(&session.principal, id, &change).await
    };
    if let Err(p) = session.act(app, people::MANAGE, changed).await {
        return problem_page(session, &p);
    }
    Redirect::to("/console/people").into_response()
}
