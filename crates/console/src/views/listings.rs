//! A merchant's listings: the list with the coupons bound to each (at most the configured
//! number, three by default: the API refuses a fourth), a form to add one, and binding a
//! template to a listing.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;
use serde_json::{json, Value};

use super::activities::hundredths;
use super::format::money;
use super::home::items;
use super::{guard, problem_page, render, FieldErrors, Shell, Shown, TemplateRow};
use crate::session::Session;
use crate::Console;

/// A listing as a row.
#[derive(Debug, Clone)]
struct ListingRow {
    id: i64,
    external_id: String,
    title: String,
    city: i64,
    price: String,
    /// The bound templates: (id, title).
    coupons: Vec<(i64, String)>,
}

impl ListingRow {
    fn of(l: &Value) -> Self {
        ListingRow {
            id: l["id"].as_i64().unwrap_or(0),
            external_id: l["external_id"].as_str().unwrap_or("").to_owned(),
            title: l["title"].as_str().unwrap_or("").to_owned(),
            city: l["city_id"].as_i64().unwrap_or(0),
            price: money(l["price"].as_i64().unwrap_or(0)),
            coupons: items_of(&l["coupons"])
                .map(|c| {
                    (
                        c["template_id"].as_i64().unwrap_or(0),
                        c["title"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect(),
        }
    }
}

fn items_of(v: &Value) -> impl Iterator<Item = &Value> {
    v.as_array().into_iter().flatten()
}

#[derive(Debug, Default, Deserialize)]
pub struct ListingForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    external_id: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    city_id: String,
    #[serde(default)]
    category_id: String,
    #[serde(default)]
    price: String,
    #[serde(default)]
    deposit: String,
}

#[derive(Template)]
#[template(path = "listings.html")]
struct ListPage {
    shell: Shell,
    rows: Vec<ListingRow>,
    /// The merchant's claimable templates, to bind.
    templates: Vec<TemplateRow>,
    form: ListingForm,
    errors: FieldErrors,
    error: Option<String>,
}

pub async fn list(State(console): State<Console>, session: Session) -> Response {
    page(&console, &session, ListingForm::default(), Shown::ok()).await
}

async fn page(console: &Console, session: &Session, form: ListingForm, shown: Shown) -> Response {
    let api = console.api();
    let listings = match api
        .get(&session.key, "/v1/listings?limit=200")
        .await
        .into::<Value>()
    {
        Ok(l) => l,
        Err(p) => return problem_page(session, &p),
    };
    let templates = api
        .get(&session.key, "/v1/templates?status=active&limit=200")
        .await
        .into::<Value>()
        .unwrap_or(Value::Null);
    let page = ListPage {
        shell: Shell::new(session, "Listings"),
        rows: items(&listings).map(ListingRow::of).collect(),
        templates: items(&templates).map(TemplateRow::of).collect(),
        form,
        errors: shown.errors,
        error: shown.error,
    };
    render(shown.status, &page)
}

pub async fn create(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Form(form): Form<ListingForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &form.csrf) {
        return refused;
    }
    let body = match draft(&form) {
        Ok(b) => b,
        Err((field, why)) => {
            return page(&console, &session, form, Shown::field(field, why)).await;
        }
    };
    let reply = console
        .api()
        .send_json(&session.key, Method::POST, "/v1/listings", &body)
        .await;
    if reply.ok() {
        return Redirect::to("/console/listings").into_response();
    }
    let p = reply.problem();
    page(&console, &session, form, Shown::of(&p)).await
}

fn draft(f: &ListingForm) -> Result<Value, (&'static str, String)> {
    let id = |field: &'static str, s: &str| -> Result<i64, (&'static str, String)> {
        s.trim()
            .parse()
            .map_err(|_| (field, "enter a whole number".to_owned()))
    };
    Ok(json!({
        "external_id": f.external_id,
        "title": f.title,
        "city_id": id("city_id", &f.city_id)?,
        "category_id": id("category_id", &f.category_id)?,
        "price": hundredths("price", &f.price)?,
        "deposit": hundredths("deposit", &f.deposit)?,
    }))
}

#[derive(Debug, Default, Deserialize)]
pub struct BindForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    template_id: String,
}

/// Unbinds a template from a listing.
pub async fn unbind(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<BindForm>,
) -> Response {
    change_binding(&console, &session, &headers, id, &form, Method::DELETE).await
}

pub async fn bind(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<BindForm>,
) -> Response {
    change_binding(&console, &session, &headers, id, &form, Method::PUT).await
}

async fn change_binding(
    console: &Console,
    session: &Session,
    headers: &HeaderMap,
    id: i64,
    form: &BindForm,
    method: Method,
) -> Response {
    if let Some(refused) = guard(headers, session, &form.csrf) {
        return refused;
    }
    let Ok(template) = form.template_id.trim().parse::<i64>() else {
        return page(
            console,
            session,
            ListingForm::default(),
            Shown::field("template_id", "choose a template".into()),
        )
        .await;
    };
    let path = format!("/v1/listings/{id}/templates/{template}");
    let reply = console.api().call(&session.key, method, &path, None).await;
    if reply.ok() {
        return Redirect::to("/console/listings").into_response();
    }
    // The API names no field of this form: the message goes above the list.
    let p = reply.problem();
    let shown = Shown {
        error: Some(format!("Listing {id}: {}", p.detail)),
        ..Shown::of(&p)
    };
    page(console, session, ListingForm::default(), shown).await
}
