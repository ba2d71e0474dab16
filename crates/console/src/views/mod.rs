//! The console's pages, one module per area, and what they share: the shell the base layout
//! shows (title, who is signed in, the form token), rendering, the guard every POST passes,
//! and how an API problem becomes a page.

use std::collections::HashMap;

use askama::Template;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use coupond_api::auth::Caller;
use coupond_domain::Area;

use crate::problem::Problem;
use crate::session::Session;
use crate::Console;

mod account;
mod activities;
mod approvals;
mod audits;
mod choices;
mod cities;
mod coupons;
mod enroll;
mod feeds;
mod figures;
mod format;
mod history;
mod home;
mod invitation;
mod listings;
mod login;
mod merchants;
mod messages;
mod names;
mod paging;
mod password;
mod people;
mod steering;
mod support;
mod template_form;
mod templates;
mod timeline;
mod webhooks;

pub(crate) use format::{ActivityRow, TemplateRow};

/// Every page's routes; the issuance upload takes bodies up to `max_upload` bytes, every other
/// route the service's `max_body_bytes`.
pub fn routes(max_upload: usize) -> Router<Console> {
    Router::new()
        .route("/console", get(home::page))
        .route("/console/", get(|| async { Redirect::to("/console") }))
        .route("/console/login", get(login::form).post(login::submit))
        .route("/console/logout", post(login::logout))
        .route("/console/account", get(account::page))
        .route("/console/account/totp", post(account::totp_on))
        .route("/console/account/totp/off", post(account::totp_off))
        .route("/console/people", get(people::list).post(people::create))
        .route("/console/people/{id}/disable", post(people::disable))
        .route("/console/people/{id}/enable", post(people::enable))
        .route(
            "/console/people/{id}/second-factor",
            post(people::clear_second_factor),
        )
        .route("/console/cities", get(cities::list).post(cities::name))
        .route("/console/history", get(history::page))
        .route("/console/audits", get(audits::list).post(audits::run))
        .route("/console/messages", get(messages::page))
        .route(
            "/console/messages/texts/{kind}/{locale}",
            post(messages::save),
        )
        .route(
            "/console/messages/texts/{kind}/{locale}/revert",
            post(messages::revert),
        )
        .route(
            "/console/messages/texts/{kind}/{locale}/preview",
            post(messages::preview),
        )
        .route("/console/history.csv", get(history::csv))
        .route(
            "/console/password/{token}",
            get(password::form).post(password::submit),
        )
        .route(
            "/console/invitation/{token}",
            get(invitation::form).post(invitation::submit),
        )
        .route(
            "/console/activities",
            get(activities::list).post(activities::create),
        )
        .route("/console/activities/new", get(activities::new))
        .route(
            "/console/activities/{id}",
            get(activities::page).post(activities::update),
        )
        .route("/console/activities/{id}/edit", get(activities::edit))
        .route(
            "/console/templates",
            get(templates::list).post(enroll::create),
        )
        .route("/console/templates/new", get(enroll::new))
        .route(
            "/console/templates/{id}/edit",
            get(enroll::edit).post(enroll::update),
        )
        .route(
            "/console/listings",
            get(listings::list).post(listings::create),
        )
        .route(
            "/console/listings/{id}",
            get(listings::edit).post(listings::update),
        )
        .route("/console/listings/{id}/bind", post(listings::bind))
        .route("/console/listings/{id}/unbind", post(listings::unbind))
        .route("/console/templates/{id}", get(templates::page))
        .route("/console/templates/{id}/publish", post(templates::publish))
        .route("/console/templates/{id}/abort", post(templates::abort))
        .route("/console/templates/{id}/pause", post(templates::pause))
        .route("/console/templates/{id}/resume", post(templates::resume))
        .route("/console/templates/{id}/stop", post(templates::stop))
        .route("/console/templates/{id}/approve", post(templates::approve))
        .route("/console/templates/{id}/delete", post(templates::delete))
        .route("/console/templates/{id}/reject", post(templates::reject))
        .route("/console/approvals", get(approvals::page))
        .route("/console/{*rest}", get(not_found))
        .route("/console/templates/{id}/stock", post(templates::top_up))
        .route("/console/templates/{id}/extend", post(templates::extend))
        .route("/console/templates/{id}/codes", post(templates::code_batch))
        .route(
            "/console/code-batches/{id}/codes.csv",
            get(templates::codes_csv),
        )
        .route(
            "/console/templates/{id}/coupons.csv",
            get(templates::holders_csv),
        )
        .route("/console/activities/{id}/abort", post(activities::abort))
        .route(
            "/console/activities/{id}/pause",
            post(steering::pause_activity),
        )
        .route(
            "/console/activities/{id}/resume",
            post(steering::resume_activity),
        )
        .route(
            "/console/templates/{id}/issuances",
            post(templates::upload).layer(axum::extract::DefaultBodyLimit::max(max_upload)),
        )
        .route("/console/issuances/{id}", get(templates::progress))
        .route(
            "/console/templates/{id}/messages",
            post(templates::send_message),
        )
        .route("/console/users", get(support::users))
        .route("/console/events", get(feeds::events))
        .route(
            "/console/webhooks",
            get(webhooks::list).post(webhooks::create),
        )
        .route("/console/webhooks/{id}/ping", post(webhooks::ping))
        .route("/console/webhooks/{id}/disable", post(webhooks::disable))
        .route("/console/webhooks/{id}/delete", post(webhooks::delete))
        .route(
            "/console/merchants",
            get(merchants::list).post(merchants::create),
        )
        .route(
            "/console/merchants/{id}",
            get(merchants::page).post(merchants::update),
        )
        .route("/console/merchants/{id}/keys", post(merchants::create_key))
        .route(
            "/console/merchants/{id}/keys/{key}/revoke",
            post(merchants::revoke_key),
        )
        .route("/console/coupons/{id}", get(coupons::page))
        .route("/console/coupons/{id}/revoke", post(support::revoke))
        .route("/console/orders/{order}/extend", post(coupons::extend))
        .route("/console/reconciliation", get(support::reconciliation))
        .route("/console/performance", get(figures::performance))
        .route("/console/settlement", get(figures::settlement))
        .route(crate::assets::HTMX_PATH, get(crate::assets::htmx))
        .route(crate::assets::css_path(), get(crate::assets::css))
        .route(crate::assets::js_path(), get(crate::assets::js))
}

/// What the base layout shows.
#[derive(Debug, Clone)]
pub struct Shell {
    pub title: String,
    /// Who is signed in, in words.
    pub who: String,
    pub csrf: String,
    /// The platform (which sees the platform's pages in the menu) or a merchant.
    pub platform: bool,
    /// Signed in with an operator account (which has an Account page).
    pub account: bool,
    /// What the person's role may do (the API's `OperatorRole::may`): the menu and the
    /// pages' forms show only that. A key has its side's every right.
    pub may_admin: bool,
    pub may_campaigns: bool,
    pub may_support: bool,
    /// The merchant signed in as, for its own pages (its keys).
    pub merchant: Option<i64>,
}

impl Shell {
    pub fn new(session: &Session, title: impl Into<String>) -> Self {
        Shell {
            title: title.into(),
            who: session.who.clone(),
            account: matches!(session.caller, Caller::Operator(_)),
            csrf: session.csrf.clone(),
            platform: session.is_platform(),
            may_admin: session.may(Area::Admin),
            may_campaigns: session.may(Area::Campaigns),
            may_support: session.may(Area::Support),
            merchant: session.principal.merchant().map(|m| m.get()),
        }
    }
}

/// Field errors of a form, by field name (as the API names them, to its first `.`).
#[derive(Debug, Default, Clone)]
pub struct FieldErrors(HashMap<String, String>);

impl FieldErrors {
    pub fn new() -> Self {
        FieldErrors::default()
    }

    pub fn one(field: &str, why: String) -> Self {
        let mut e = FieldErrors::new();
        e.insert(field, why);
        e
    }

    /// Records `why` under `field`'s first segment (`enrollment.end` under `enrollment`).
    pub fn insert(&mut self, field: &str, why: String) {
        let key = field.split(['.', '[']).next().unwrap_or(field);
        self.0.insert(key.to_owned(), why);
    }

    /// The message for `field`, if any.
    pub fn msg<S: AsRef<str>>(&self, field: S) -> Option<&str> {
        self.0.get(field.as_ref()).map(String::as_str)
    }

    pub fn has<S: AsRef<str>>(&self, field: S) -> bool {
        self.0.contains_key(field.as_ref())
    }
}

/// A page as HTML (or, if it cannot render, a plain 500). Pages hold one signed-in person's
/// data (a new key's secret, once), so no cache keeps them.
pub fn render<T: Template>(status: StatusCode, page: &T) -> Response {
    match page.render() {
        Ok(html) => (
            status,
            [(axum::http::header::CACHE_CONTROL, "no-store")],
            Html(html),
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "a console page failed to render");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page could not be rendered",
            )
                .into_response()
        }
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage {
    shell: Shell,
    heading: String,
    detail: String,
}

/// An API problem as a page with the API's status (a 404 stays a 404).
pub fn problem_page(session: &Session, p: &Problem) -> Response {
    let heading = match p.status {
        404 => "Not found".to_owned(),
        403 => "Not allowed".to_owned(),
        400 | 422 => "Please check what was entered".to_owned(),
        409 => "Not possible now".to_owned(),
        _ => "Something went wrong".to_owned(),
    };
    let status = StatusCode::from_u16(p.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    // The field the API names, in words, before what is wrong with it.
    let in_words = |f: &str, why: &str| format!("{}: {why}", f.replace(['_', '.'], " "));
    let detail = match p.field.as_deref() {
        _ if !p.fields.is_empty() => p
            .fields
            .iter()
            .map(|(f, why)| in_words(f, why))
            .collect::<Vec<_>>()
            .join("; "),
        Some(f) if !f.is_empty() && f != "body" => in_words(f, &p.detail),
        _ => p.detail.clone(),
    };
    let page = ErrorPage {
        shell: Shell::new(session, heading.clone()),
        heading,
        detail,
    };
    render(status, &page)
}

/// A CSV the application streams, saved as `filename` (a large one is never held here), or
/// its refusal as a page.
pub fn download(
    session: &Session,
    pieces: Result<coupond_app::downloads::CsvStream, Problem>,
    filename: &str,
) -> Response {
    match pieces {
        Ok(pieces) => attachment(
            axum::body::Body::from_stream(pieces).into_response(),
            filename,
        ),
        Err(p) => problem_page(session, &p),
    }
}

/// `res` as an attachment named `filename`, CSV unless it says otherwise, kept by no cache.
pub fn attachment(mut res: Response, filename: &str) -> Response {
    let h = res.headers_mut();
    let name = format!("attachment; filename=\"{filename}\"");
    if let Ok(v) = HeaderValue::from_str(&name) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    h.entry(header::CONTENT_TYPE)
        .or_insert(HeaderValue::from_static("text/csv; charset=utf-8"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// The refusal of a POST without this session's form token, or from another origin; `None`
/// lets it through.
pub fn guard(headers: &HeaderMap, session: &Session, sent: &str) -> Option<Response> {
    if crate::csrf::allowed(headers, &session.csrf, sent) {
        return None;
    }
    let p = Problem {
        fields: Vec::new(),
        status: 403,
        code: "csrf".into(),
        field: None,
        detail: "This form was not sent from this console page (its token is missing or \
                 stale, or it came from another site). Reload the page and try again."
            .into(),
    };
    Some(problem_page(session, &p))
}

/// Why a form is shown (again): its field errors, a message for the whole form, and the
/// status to answer with.
#[derive(Debug, Default)]
pub struct Shown {
    pub errors: FieldErrors,
    pub error: Option<String>,
    pub status: StatusCode,
}

impl Shown {
    /// A fresh form: no errors, 200.
    pub fn ok() -> Self {
        Shown::default()
    }

    /// A field the console could not read (422).
    pub fn field(field: &str, why: String) -> Self {
        Shown {
            errors: FieldErrors::one(field, why),
            error: None,
            status: StatusCode::UNPROCESSABLE_ENTITY,
        }
    }

    /// The API's problem: next to the field it names, or for the whole form; its status.
    pub fn of(p: &Problem) -> Self {
        let (mut errors, error) = match &p.field {
            Some(f) if p.fields.is_empty() => (FieldErrors::one(f, p.detail.clone()), None),
            Some(_) => (FieldErrors::new(), None),
            None => (FieldErrors::new(), Some(p.detail.clone())),
        };
        for (field, why) in &p.fields {
            errors.insert(field, why.clone());
        }
        Shown {
            errors,
            error,
            status: StatusCode::from_u16(p.status).unwrap_or(StatusCode::UNPROCESSABLE_ENTITY),
        }
    }
}

/// A console path that names no page: a page that says so (not the API's JSON problem).
async fn not_found(session: Session) -> Response {
    let p = Problem {
        fields: Vec::new(),
        status: 404,
        code: "not_found".into(),
        field: None,
        detail: "There is no such page in the console.".into(),
    };
    problem_page(&session, &p)
}
