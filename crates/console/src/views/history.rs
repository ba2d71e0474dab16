//! The audit trail's page: who changed what, newest first, with the fields before and after.
//! Each template, activity, listing and merchant page links to its object's history; the
//! menu's "Audit trail" shows everything the caller may read (the platform: all; a merchant:
//! its own), filtered by person, a page at a time, with the page as CSV. The API decides who
//! may read it (merchant staff may not): its refusal is the page's.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use coupond_api::pagination::csv_answer;
use coupond_app::audit_trail::{self, entries_csv, AuditFilter};
use coupond_app::pages::PageRequest;
use coupond_app::records::AuditEntry;
use serde::Deserialize;
use serde_json::Value;

use super::format::at;
use super::paging::cursor;
use super::{attachment, problem_page, render, Shell};
use crate::session::Session;
use crate::Console;

#[derive(Debug, Default, Deserialize)]
pub struct HistoryQuery {
    #[serde(default)]
    object: String,
    #[serde(default)]
    actor: String,
    #[serde(default)]
    cursor: String,
}

/// One entry as the page shows it.
#[derive(Debug, Clone)]
pub struct Entry {
    pub at: String,
    /// The person's email, the key's label (else the actor).
    pub who: String,
    pub actor: String,
    pub action: String,
    pub object: String,
    pub before: String,
    pub after: String,
}

#[derive(Template)]
#[template(path = "history.html")]
struct HistoryPage {
    shell: Shell,
    object: String,
    actor: String,
    entries: Vec<Entry>,
    /// The link to the next (older) page; empty on the last.
    next: String,
    /// The same filter as CSV.
    csv: String,
}

/// The filter as the API's query: only the characters an object (`template:5`) or an actor
/// (`operator:5`, an email, a key's label) are made of, so nothing typed reaches the path
/// unescaped.
fn filter(q: &HistoryQuery) -> (String, String, String) {
    let keep = |s: &str, extra: &str| -> String {
        s.trim()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || extra.contains(*c))
            .take(200)
            .collect()
    };
    let object = keep(&q.object, "_:");
    let actor = keep(&q.actor, "@._-:");
    let mut query = String::new();
    for (k, v) in [("object", &object), ("actor", &actor)] {
        if !v.is_empty() {
            query.push_str(&format!("&{k}={v}"));
        }
    }
    (object, actor, query)
}

pub async fn page(
    State(console): State<Console>,
    session: Session,
    Query(q): Query<HistoryQuery>,
) -> Response {
    let (object, actor, query) = filter(&q);
    let app = console.app();
    let asked = PageRequest::after(&cursor(&q.cursor), 50);
    let trail = app.audit_trail(&session.principal, audit_filter(&object, &actor), asked);
    let page = match session.act(app, audit_trail::READ, trail).await {
        Ok(p) => p,
        Err(p) => return problem_page(&session, &p),
    };
    let entries = page.items.iter().map(entry).collect();
    let next = page
        .next_cursor
        .map(|c| format!("/console/history?cursor={}{query}", cursor(&c)))
        .unwrap_or_default();
    let title = if object.is_empty() {
        "Audit trail".to_owned()
    } else {
        format!("History of {object}")
    };
    let page = HistoryPage {
        shell: Shell::new(&session, title),
        csv: format!("/console/history.csv?x=1{query}"),
        object,
        actor,
        entries,
        next,
    };
    render(StatusCode::OK, &page)
}

/// The filter of the trail: the object and actor as checked by [`filter`] (empty: any).
fn audit_filter(object: &str, actor: &str) -> AuditFilter {
    let some = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    AuditFilter {
        object: some(object),
        actor: some(actor),
        since: None,
    }
}

fn entry(e: &AuditEntry) -> Entry {
    let json = |v: &Option<Value>| match v {
        None | Some(Value::Null) => String::new(),
        Some(v) => v.to_string().chars().take(400).collect(),
    };
    let who = if e.actor_name.is_empty() {
        e.actor.clone()
    } else {
        e.actor_name.clone()
    };
    Entry {
        at: at(e.at),
        who,
        actor: e.actor.clone(),
        action: e.action.clone(),
        object: e.object.clone(),
        before: json(&e.before),
        after: json(&e.after),
    }
}

/// The first page of the filter (up to the API's largest page) as CSV.
pub async fn csv(
    State(console): State<Console>,
    session: Session,
    Query(q): Query<HistoryQuery>,
) -> Response {
    let (object, actor, _) = filter(&q);
    let app = console.app();
    let first = PageRequest::first(app.settings().max_page);
    let trail = app.audit_trail(&session.principal, audit_filter(&object, &actor), first);
    match session.act(app, audit_trail::READ, trail).await {
        Ok(page) => attachment(csv_answer(entries_csv(&page.items)), "audit.csv"),
        Err(p) => problem_page(&session, &p),
    }
}
