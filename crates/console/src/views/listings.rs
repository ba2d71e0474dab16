//! A merchant's listings: the list with the coupons live on each, searched with the filters a
//! user's search has (city, category, coupon kind, with or without a coupon), a form to add
//! one, a listing's edit page, and binding a template to a listing (at most the configured
//! number, three by default: the API refuses a fourth).

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_api::views::{ListingView, TemplateView};
use coupond_app::identify::Origin;
use coupond_app::listings::{self, ListingFilter};
use coupond_app::template_reads::TemplateFilter;
use coupond_app::AppError;
use coupond_domain::{
    CategoryId, CityId, CouponKind, ListingDraft, ListingId, ListingPatch, Money, TemplateId,
    TemplateStatus,
};
use serde::Deserialize;

use super::format::{decimal, hundredths, money};
use super::names::CityNames;
use super::paging::{max_rows_words, next_link, request, rows};
use super::{guard, problem_page, render, FieldErrors, Shell, Shown, TemplateRow};
use crate::problem::Problem;
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
    /// The filters of the search: only those that are well formed (others are dropped and
    /// shown empty, so the page never passes text through unchecked).
    fn filter(&mut self) -> ListingFilter {
        let id = |s: &mut String| {
            let n = s.trim().parse::<u32>().ok().map(i64::from);
            if n.is_none() {
                s.clear();
            }
            n
        };
        let city = id(&mut self.city).and_then(|c| CityId::new(c).ok());
        let category = id(&mut self.category).and_then(|c| CategoryId::new(c).ok());
        let kind = CouponKind::parse(&self.kind);
        if kind.is_none() {
            self.kind.clear();
        }
        let has_coupon = match self.has_coupon.as_str() {
            "yes" => Some(true),
            "no" => Some(false),
            _ => {
                self.has_coupon.clear();
                None
            }
        };
        ListingFilter {
            city,
            category,
            kind,
            has_coupon,
            ..ListingFilter::default()
        }
    }

    /// This search's console page (its filters as checked by [`Search::filter`]), to which the
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
    let app = console.app();
    let found = app.listings(
        &session.principal,
        search.filter(),
        request(console, &search.after),
    );
    let (listings, listings_next) = match session.act(app, listings::READ, found).await {
        Ok(l) => rows(l),
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
    let draft = match draft(&form) {
        Ok(d) => d,
        Err((field, why)) => {
            return page(&console, &session, form, Shown::field(field, why)).await;
        }
    };
    let app = console.app();
    let created = app.create_listing(&session.principal, &draft);
    match session.act(app, listings::EDIT, created).await {
        Ok(_) => Redirect::to("/console/listings").into_response(),
        Err(p) => page(&console, &session, form, Shown::of(&p)).await,
    }
}

/// The listing the form describes; an empty `external_id` is none.
fn draft(f: &ListingForm) -> Result<ListingDraft, (&'static str, String)> {
    let id = |field: &'static str, s: &str| -> Result<i64, (&'static str, String)> {
        s.trim()
            .parse()
            .map_err(|_| (field, "enter a whole number".to_owned()))
    };
    let named = |field: &'static str| move |why: String| (field, why);
    let money = |field: &'static str, s: &str| {
        hundredths(field, s).and_then(|m| Money::new(m).map_err(named(field)))
    };
    let external_id = f.external_id.trim();
    Ok(ListingDraft {
        external_id: (!external_id.is_empty()).then(|| external_id.to_owned()),
        title: f.title.clone(),
        city_id: CityId::new(id("city_id", &f.city_id)?).map_err(named("city_id"))?,
        category_id: CategoryId::new(id("category_id", &f.category_id)?)
            .map_err(named("category_id"))?,
        price: money("price", &f.price)?,
        deposit: money("deposit", &f.deposit)?,
    })
}

/// The edit the form saves: every field, as typed (an empty `external_id` removes it).
fn patch(f: &ListingForm) -> Result<ListingPatch, (&'static str, String)> {
    let d = draft(f)?;
    Ok(ListingPatch {
        external_id: Some(d.external_id),
        city_id: Some(d.city_id),
        category_id: Some(d.category_id),
        title: Some(d.title),
        price: Some(d.price),
        deposit: Some(d.deposit),
    })
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
    let app = console.app();
    let read = async { app.listing(&session.principal, listing_id(id)?).await };
    let l = match session.act(app, listings::READ, read).await {
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

/// A listing's id from a console path; one that cannot be is not found.
fn listing_id(id: i64) -> Result<ListingId, AppError> {
    ListingId::new(id).map_err(|_| AppError::NotFound)
}

/// Saves the edit form: every field.
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
    let patch = match patch(&form) {
        Ok(p) => p,
        Err((field, why)) => return edit_page(&session, id, form, Shown::field(field, why)),
    };
    let app = console.app();
    let edit = async {
        let id = listing_id(id)?;
        app.update_listing(&session.principal, id, patch).await
    };
    match session.act(app, listings::EDIT, edit).await {
        Ok(_) => Redirect::to("/console/listings").into_response(),
        Err(p) => edit_page(&session, id, form, Shown::of(&p)),
    }
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
) -> Result<(Vec<TemplateView>, bool), crate::problem::Problem> {
    let mut all = Vec::new();
    let mut cut = false;
    for status in [TemplateStatus::Active, TemplateStatus::Scheduled] {
        let filter = TemplateFilter {
            status: Some(status),
            ..TemplateFilter::default()
        };
        let found = super::templates::gather_templates(console, session, filter).await?;
        cut |= found.cut;
        all.extend(found.items);
    }
    all.sort_by_key(|t| t.id);
    Ok((all, cut))
}
