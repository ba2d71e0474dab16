//! Merchants (the platform): the list with a form to add one, and a merchant's page where the
//! platform edits it and creates or revokes its API keys. A new key's secret is shown on the
//! page that answers its creation, once; only its hash is kept.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_app::merchants::{self, MerchantFilter};
use coupond_app::{keys, AppError, AppResult};
use coupond_domain::{Merchant, MerchantDraft, MerchantId, MerchantPatch};
use serde::Deserialize;

use super::format::at;
use super::names::{typed_cities, CityNames};
use super::paging::{next_link, request, rows, After};
use super::{guard, problem_page, render, FieldErrors, Shell, Shown};
use crate::session::Session;
use crate::Console;

/// A merchant as a row.
#[derive(Debug, Clone, Default)]
struct MerchantRow {
    id: i64,
    name: String,
    short_name: String,
    /// The ids, as the form takes them.
    cities: String,
    /// The cities by name ("Lisbon (1), Porto (2)").
    city_names: String,
}

impl MerchantRow {
    fn of(m: &Merchant, names: &CityNames) -> Self {
        let cities: Vec<String> = m.cities.iter().map(|c| c.get().to_string()).collect();
        MerchantRow {
            id: m.id.get(),
            name: m.name.clone(),
            short_name: m.short_name.clone(),
            cities: cities.join(", "),
            city_names: names.list(m.cities.iter()),
        }
    }
}

/// The merchant form as sent.
#[derive(Debug, Default, Deserialize)]
pub struct MerchantForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    short_name: String,
    #[serde(default)]
    cities: String,
}

impl MerchantForm {
    /// The merchant it adds.
    fn draft(&self) -> Result<MerchantDraft, Shown> {
        Ok(MerchantDraft {
            name: self.name.clone(),
            short_name: self.short_name.clone(),
            cities: typed_cities(&self.cities).map_err(|why| Shown::field("cities", why))?,
        })
    }

    /// The edit it saves: every field, as typed.
    fn patch(&self) -> Result<MerchantPatch, Shown> {
        let d = self.draft()?;
        Ok(MerchantPatch {
            name: Some(d.name),
            short_name: Some(d.short_name),
            cities: Some(d.cities),
        })
    }
}

#[derive(Template)]
#[template(path = "merchants.html")]
struct ListPage {
    shell: Shell,
    rows: Vec<MerchantRow>,
    /// The link to the next page of merchants, if there are more.
    next: Option<String>,
    form: MerchantForm,
    /// What the cities field takes, with the named cities.
    city_hint: String,
    errors: FieldErrors,
    error: Option<String>,
    /// Whether the form to add one shows: the API would let this session add a merchant.
    can_add: bool,
}

/// A page of merchants ([`PER_PAGE`](super::paging::PER_PAGE), after the API cursor `after`)
/// with the form to add one.
async fn list_page(
    console: &Console,
    session: &Session,
    after: &str,
    form: MerchantForm,
    shown: Shown,
) -> Response {
    let app = console.app();
    let list = app.merchants(MerchantFilter::default(), request(console, after));
    let (merchants, next) = match session.act(app, merchants::LIST, list).await {
        Ok(l) => rows(l),
        Err(p) => return problem_page(session, &p),
    };
    let names = CityNames::load(console, session).await;
    let page = ListPage {
        shell: Shell::new(session, "Merchants"),
        rows: merchants
            .iter()
            .map(|m| MerchantRow::of(m, &names))
            .collect(),
        next: next_link("/console/merchants", &next),
        form,
        city_hint: names.hint(),
        errors: shown.errors,
        error: shown.error,
        can_add: session.may_do(merchants::MANAGE),
    };
    render(shown.status, &page)
}

pub async fn list(
    State(console): State<Console>,
    session: Session,
    Query(q): Query<After>,
) -> Response {
    let form = MerchantForm::default();
    list_page(&console, &session, &q.after, form, Shown::ok()).await
}

pub async fn create(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Form(form): Form<MerchantForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &form.csrf) {
        return refused;
    }
    let draft = match form.draft() {
        Ok(d) => d,
        Err(shown) => return list_page(&console, &session, "", form, shown).await,
    };
    let app = console.app();
    let created = session.act(app, merchants::MANAGE, app.create_merchant(&draft));
    match created.await {
        Ok(m) => Redirect::to(&format!("/console/merchants/{}", m.id)).into_response(),
        Err(p) => list_page(&console, &session, "", form, Shown::of(&p)).await,
    }
}

/// A key as a row: (id, prefix, label, created, revoked).
type KeyRow = (i64, String, String, String, Option<String>);

#[derive(Template)]
#[template(path = "merchant.html")]
struct MerchantPage {
    shell: Shell,
    m: MerchantRow,
    form: MerchantForm,
    city_hint: String,
    errors: FieldErrors,
    error: Option<String>,
    keys: Vec<KeyRow>,
    /// A key just created: (prefix, secret), shown this once.
    new_key: Option<(String, String)>,
    key_error: Option<String>,
}

/// What a merchant's page shows besides the merchant.
#[derive(Default)]
struct Extra {
    form: Option<MerchantForm>,
    shown: Shown,
    new_key: Option<(String, String)>,
    key_error: Option<String>,
}

async fn merchant_page(console: &Console, session: &Session, id: i64, extra: Extra) -> Response {
    let (app, p) = (console.app(), &session.principal);
    let names = CityNames::load(console, session).await;
    let read = async {
        let id = checked(id)?;
        Ok((id, app.merchant(p, id).await?))
    };
    let (id, m) = match session.act(app, merchants::READ, read).await {
        Ok((id, m)) => (id, MerchantRow::of(&m, &names)),
        Err(problem) => return problem_page(session, &problem),
    };
    // Keys are for those who manage them (the application refuses the others): none shown.
    let keys = session
        .act(app, keys::MANAGE, app.merchant_keys(p, id))
        .await;
    let keys = keys
        .unwrap_or_default()
        .into_iter()
        .map(|k| {
            (
                k.id,
                k.prefix,
                k.label,
                at(k.created_at),
                k.revoked_at.map(at),
            )
        })
        .collect();
    let form = extra.form.unwrap_or_else(|| MerchantForm {
        csrf: String::new(),
        name: m.name.clone(),
        short_name: m.short_name.clone(),
        cities: m.cities.clone(),
    });
    let page = MerchantPage {
        shell: Shell::new(session, m.name.clone()),
        m,
        form,
        city_hint: names.hint(),
        errors: extra.shown.errors,
        error: extra.shown.error,
        keys,
        new_key: extra.new_key,
        key_error: extra.key_error,
    };
    render(extra.shown.status, &page)
}

/// A merchant's id from a console path; one that cannot be is not found.
fn checked(id: i64) -> AppResult<MerchantId> {
    MerchantId::new(id).map_err(|_| AppError::NotFound)
}

pub async fn page(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<i64>,
) -> Response {
    merchant_page(&console, &session, id, Extra::default()).await
}

/// Saves the edit form as a `PATCH` of name, short name and cities.
pub async fn update(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<MerchantForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &form.csrf) {
        return refused;
    }
    let shown = match form.patch() {
        Ok(patch) => {
            let app = console.app();
            let edit = async { app.edit_merchant(checked(id)?, patch).await };
            match session.act(app, merchants::MANAGE, edit).await {
                Ok(_) => return Redirect::to(&format!("/console/merchants/{id}")).into_response(),
                Err(p) => Shown::of(&p),
            }
        }
        Err(shown) => shown,
    };
    let extra = Extra {
        form: Some(form),
        shown,
        ..Extra::default()
    };
    merchant_page(&console, &session, id, extra).await
}

#[derive(Debug, Default, Deserialize)]
pub struct KeyForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    label: String,
}

/// Creates a key and answers the merchant's page with its secret, this once.
pub async fn create_key(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<KeyForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &form.csrf) {
        return refused;
    }
    let (app, p) = (console.app(), &session.principal);
    let made = async { app.create_merchant_key(p, checked(id)?, &form.label).await };
    let mut extra = Extra::default();
    match session.act(app, keys::MANAGE, made).await {
        Ok(k) => extra.new_key = Some((k.key.prefix, k.secret)),
        Err(p) => {
            extra.key_error = Some(p.detail);
            extra.shown.status = StatusCode::from_u16(p.status).unwrap_or(StatusCode::OK);
        }
    }
    merchant_page(&console, &session, id, extra).await
}

#[derive(Debug, Default, Deserialize)]
pub struct RevokeForm {
    #[serde(default)]
    csrf: String,
}

/// Revokes one of the merchant's keys.
pub async fn revoke_key(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path((id, key)): Path<(i64, i64)>,
    Form(form): Form<RevokeForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &form.csrf) {
        return refused;
    }
    let (app, p) = (console.app(), &session.principal);
    let revoked = async { app.revoke_merchant_key(p, checked(id)?, key).await };
    if let Err(problem) = session.act(app, keys::MANAGE, revoked).await {
        return problem_page(&session, &problem);
    }
    Redirect::to(&format!("/console/merchants/{id}")).into_response()
}
