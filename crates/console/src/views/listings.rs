//! A merchant's listings: the list with the coupons live on each, searched with the filters a
//! user's search has (city, category, coupon kind, with or without a coupon), a form to add
//! one, a listing's edit page, and binding a template to a listing (at most the configured
//! number, three by default: the API refuses a fourth).

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_api::views::{ListingView, TemplateView};
use coupond_app::identify::Origin;
use coupond_app::{listings, AppError};
use coupond_domain::{ListingId, TemplateId};
use serde::Deserialize;
use serde_json::{json, Value};

use super::activities::hundredths;
use super::format::{decimal, money};
use super::names::CityNames;
use super::paging::{gather, max_rows_words, next_link, one_page};
use super::{guard, problem_page, render, FieldErrors, Shell, Shown, TemplateRow};
use crate::api::Problem;
use crate::session::Session;
use crate::Console;

/// A listing as a row.
#[derive(Debug, Clone)]
struct ListingRow {
    id: i64,
    external_id: String,
    title: String,
    /// Its city by name ("Lisbon (1)").
    city: String,
    price: String,
    /// The bound templates: (id, title).
    coupons: Vec<(i64, String)>,
}

impl ListingRow {
    fn of(l: &ListingView, cities: &CityNames) -> Self {
        let t = &l.terms;
        ListingRow {
            id: l.id.get(),
            external_id: t.external_id.clone().unwrap_or_default(),
            title: t.title.clone(),
            city: cities.one(t.city_id.get()),
            price: money(t.price.minor()),
            coupons: l
                .coupons
                .iter()
                .map(|c| (c.template_id.get(), c.title.clone()))
                .collect(),
        }
    }
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
    /// The link to the next page of listings, if there are more.
    next: Option<String>,
    /// The merchant's claimable templates, to bind: all of them, up to
    /// [`MAX_ROWS`](super::paging::MAX_ROWS).
    templates: Vec<TemplateRow>,
    /// Set when there were more claimable templates than the select offers.
    templates_cut: Option<String>,
    form: ListingForm,
    errors: FieldErrors,
    error: Option<String>,
    search: Search,
    kinds: Vec<(&'static str, &'static str)>,
    /// How many templates one listing may have bound (`max_bindings_per_listing`).
    max_bindings: u32,
}

/// The search filters, as a user's search takes them.
#[derive(Debug, Default, Deserialize, Clone)]
pub struct Search {
    #[serde(default)]
    city: String,
    #[serde(default)]
    category: String,
    #[serde(default)]
    kind: String,
    /// `yes`, `no` or empty.
    #[serde(default)]
    has_coupon: String,
    /// Which page: the API's `next_cursor` of the page before.
    #[serde(default)]
    after: String,
}

const KINDS: [(&str, &str); 7] = [
    ("amount_off", "Amount off"),
    ("percent_off", "Percent off"),
    ("free_days", "Free days"),
    ("deposit_waiver", "Deposit waiver"),
    ("special_price", "Special price"),
    ("free_shipping", "Free shipping"),
    ("buy_x_get_y", "Buy X get Y"),
];

impl Search {
    /// The API's list with the filters (its page is added by [`one_page`]): only filters
    /// that are well formed (others are dropped and shown empty, so the page never passes
    /// text through unchecked).
    fn query(&mut self) -> String {
        let digits = |s: &mut String| {
            if s.trim().parse::<u32>().is_err() {
                s.clear();
            }
            s.trim().to_owned()
        };
        let (city, category) = (digits(&mut self.city), digits(&mut self.category));
        let mut filters = Vec::new();
        if !city.is_empty() {
            filters.push(format!("city={city}"));
        }
        if !category.is_empty() {
            filters.push(format!("category={category}"));
        }
        if KINDS.iter().any(|(k, _)| *k == self.kind) {
            filters.push(format!("kind={}", self.kind));
        } else {
            self.kind.clear();
        }
        match self.has_coupon.as_str() {
            "yes" => filters.push("has_coupon=true".into()),
            "no" => filters.push("has_coupon=false".into()),
            _ => self.has_coupon.clear(),
        }
        if filters.is_empty() {
            "/v1/listings".to_owned()
        } else {
            format!("/v1/listings?{}", filters.join("&"))
        }
    }

    /// This search's console page (its filters as checked by [`Search::query`]), to which the
    /// next page's cursor is added.
    fn base(&self) -> String {
        format!(
            "/console/listings?city={}&category={}&kind={}&has_coupon={}",
            self.city.trim(),
            self.category.trim(),
            self.kind,
            self.has_coupon
        )
    }
}

pub async fn list(
    State(console): State<Console>,
    session: Session,
    Query(search): Query<Search>,
) -> Response {
    page_with(
        &console,
        &session,
        search,
        ListingForm::default(),
        Shown::ok(),
    )
    .await
}

async fn page(console: &Console, session: &Session, form: ListingForm, shown: Shown) -> Response {
    page_with(console, session, Search::default(), form, shown).await
}

async fn page_with(
    console: &Console,
    session: &Session,
    mut search: Search,
    form: ListingForm,
    shown: Shown,
) -> Response {
    let path = search.query();
    let listings = one_page(console, session, &path, &search.after).await;
    let (listings, listings_next) = match listings.and_then(|l| l.typed::<ListingView>()) {
        Ok(l) => l,
        Err(p) => return problem_page(session, &p),
    };
    let (templates, templates_cut) = match bindable(console, session).await {
        Ok(t) => t,
        Err(p) => return problem_page(session, &p),
    };
    let page = ListPage {
        shell: Shell::new(session, "Listings"),
        rows: {
            let cities = CityNames::load(console, session).await;
            listings
                .iter()
                .map(|l| ListingRow::of(l, &cities))
                .collect()
        },
        next: next_link(&search.base(), &listings_next),
        templates: templates.iter().map(TemplateRow::of).collect(),
        templates_cut: templates_cut.then(|| {
            format!(
                "Only the first {} claimable and {} scheduled templates can be bound here.",
                max_rows_words(),
                max_rows_words()
            )
        }),
        form,
        errors: shown.errors,
        error: shown.error,
        search,
        kinds: KINDS.to_vec(),
        max_bindings: console.app().settings().max_bindings_per_listing,
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
        .send_json(&session.caller, Method::POST, "/v1/listings", &body)
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

#[derive(Template)]
#[template(path = "listing.html")]
struct EditPage {
    shell: Shell,
    id: i64,
    form: ListingForm,
    errors: FieldErrors,
    error: Option<String>,
}

fn edit_page(session: &Session, id: i64, form: ListingForm, shown: Shown) -> Response {
    let page = EditPage {
        shell: Shell::new(session, format!("Listing {id}")),
        id,
        form,
        errors: shown.errors,
        error: shown.error,
    };
    render(shown.status, &page)
}

/// A listing's edit form, filled from the listing.
pub async fn edit(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<i64>,
) -> Response {
    let l = match console
        .api()
        .get(&session.caller, &format!("/v1/listings/{id}"))
        .await
        .into::<ListingView>()
    {
        Ok(l) => l.terms,
        Err(p) => return problem_page(&session, &p),
    };
    let decimal = |m: coupond_domain::Money| decimal(m.minor());
    let form = ListingForm {
        csrf: String::new(),
        external_id: l.external_id.unwrap_or_default(),
        title: l.title,
        city_id: l.city_id.get().to_string(),
        category_id: l.category_id.get().to_string(),
        price: decimal(l.price),
        deposit: decimal(l.deposit),
    };
    edit_page(&session, id, form, Shown::ok())
}

/// Saves the edit form as a `PATCH` of every field.
pub async fn update(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<ListingForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &form.csrf) {
        return refused;
    }
    let body = match draft(&form) {
        Ok(b) => b,
        Err((field, why)) => return edit_page(&session, id, form, Shown::field(field, why)),
    };
    let reply = console
        .api()
        .send_json(
            &session.caller,
            Method::PATCH,
            &format!("/v1/listings/{id}"),
            &body,
        )
        .await;
    if reply.ok() {
        return Redirect::to("/console/listings").into_response();
    }
    edit_page(&session, id, form, Shown::of(&reply.problem()))
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
    change_binding(&console, &session, &headers, id, &form, false).await
}

pub async fn bind(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<BindForm>,
) -> Response {
    change_binding(&console, &session, &headers, id, &form, true).await
}

/// Binds or unbinds a template, by calling the application as the session's caller (the
/// same operation, access and audit trail as the API's route).
async fn change_binding(
    console: &Console,
    session: &Session,
    headers: &HeaderMap,
    id: i64,
    form: &BindForm,
    bind: bool,
) -> Response {
    if let Some(refused) = guard(headers, session, &form.csrf) {
        return refused;
    }
    let template = form.template_id.trim().parse::<i64>().ok();
    let Some(template) = template.and_then(|t| TemplateId::new(t).ok()) else {
        return page(
            console,
            session,
            ListingForm::default(),
            Shown::field("template_id", "choose a template".into()),
        )
        .await;
    };
    let app = console.app();
    let done = match ListingId::new(id) {
        Ok(listing) => {
            let (who, p) = (session.identity.clone(), &session.principal);
            let origin = Origin::default();
            if bind {
                let work = async { app.bind(p, listing, template).await.map(|_| ()) };
                app.acting(who, listings::BIND, origin, work).await
            } else {
                let work = app.unbind(p, listing, template);
                app.acting(who, listings::BIND, origin, work).await
            }
        }
        Err(_) => Err(AppError::NotFound),
    };
    let Err(refused) = done else {
        return Redirect::to("/console/listings").into_response();
    };
    // The operation names no field of this form: the message goes above the list.
    let p = Problem::from(refused);
    let shown = Shown {
        error: Some(format!("Listing {id}: {}", p.detail)),
        ..Shown::of(&p)
    };
    page(console, session, ListingForm::default(), shown).await
}

/// The templates a listing may be bound to here: the claimable ones and those scheduled to
/// become claimable (the API binds either), by id; and whether either list was cut.
async fn bindable(
    console: &Console,
    session: &Session,
) -> Result<(Vec<TemplateView>, bool), crate::api::Problem> {
    let mut all = Vec::new();
    let mut cut = false;
    for status in ["active", "scheduled"] {
        let path = format!("/v1/templates?status={status}");
        let found = gather(console, session, &path).await?;
        cut |= found.cut;
        all.extend(found.typed::<TemplateView>()?);
    }
    all.sort_by_key(|t| t.id);
    Ok((all, cut))
}
