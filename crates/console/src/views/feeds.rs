//! Read-only pages over the outbox and its consumers: the events feed (the platform sees
//! everything, a merchant its templates' events) with a type filter and cursor paging, the
//! webhook endpoints (a page at a time) with their latest deliveries.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use coupond_api::pagination::PageOf;
use coupond_api::routes::events::EventPage;
use coupond_api::routes::webhooks::{DeliveryView, WebhookView};
use serde::Deserialize;

use super::format::at;
use super::{problem_page, render, Shell};
use crate::session::Session;
use crate::Console;

#[derive(Debug, Default, Deserialize)]
pub struct FeedQuery {
    #[serde(default)]
    r#type: String,
    #[serde(default)]
    after: String,
}

/// An event as a row: (id, type, at, data as compact JSON).
type EventRow = (i64, String, String, String);

#[derive(Template)]
#[template(path = "events.html")]
struct EventsPage {
    shell: Shell,
    kind: String,
    rows: Vec<EventRow>,
    next: String,
}

/// A filter or cursor as typed: only the characters the API's own take.
fn plain(s: &str, extra: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || extra.contains(*c))
        .take(200)
        .collect()
}

pub async fn events(
    State(console): State<Console>,
    session: Session,
    Query(q): Query<FeedQuery>,
) -> Response {
    let kind = plain(&q.r#type, "._,");
    let after = plain(&q.after, "-_");
    let mut path = "/v1/events?limit=50".to_owned();
    if !kind.is_empty() {
        path.push_str(&format!("&type={kind}"));
    }
    if !after.is_empty() {
        path.push_str(&format!("&after={after}"));
    }
    let page = match console
        .api()
        .get(&session.caller, &path)
        .await
        .into::<EventPage>()
    {
        Ok(p) => p,
        Err(p) => return problem_page(&session, &p),
    };
    let rows = page
        .items
        .iter()
        .map(|e| {
            (
                e.id,
                e.kind.clone(),
                at(e.at),
                e.data.to_string().chars().take(300).collect(),
            )
        })
        .collect();
    let page = EventsPage {
        shell: Shell::new(&session, "Events"),
        kind,
        rows,
        next: page.next_cursor,
    };
    render(StatusCode::OK, &page)
}

/// A webhook endpoint with its latest deliveries: (event type, state, attempts, when).
#[derive(Debug, Clone)]
struct Hook {
    id: i64,
    url: String,
    types: String,
    disabled: bool,
    deliveries: Vec<(String, String, usize, String)>,
}

#[derive(Template)]
#[template(path = "webhooks.html")]
struct WebhooksPage {
    shell: Shell,
    hooks: Vec<Hook>,
    /// The next page's cursor; empty on the last page.
    next: String,
}

/// Which page of endpoints: `after` is the API's `next_cursor` of the page before.
#[derive(Debug, Default, Deserialize)]
pub struct HooksQuery {
    #[serde(default)]
    after: String,
}

/// The caller's webhook endpoints (the platform's: every owner's), a page of 50 at a time,
/// each with its latest deliveries.
pub async fn webhooks(
    State(console): State<Console>,
    session: Session,
    Query(q): Query<HooksQuery>,
) -> Response {
    let mut path = "/v1/webhooks?limit=50".to_owned();
    let after = plain(&q.after, "-_");
    if !after.is_empty() {
        path.push_str(&format!("&cursor={after}"));
    }
    let list = match console
        .api()
        .get(&session.caller, &path)
        .await
        .into::<PageOf<WebhookView>>()
    {
        Ok(l) => l,
        Err(p) => return problem_page(&session, &p),
    };
    let mut hooks = Vec::new();
    for w in &list.items {
        hooks.push(hook(&console, &session, w).await);
    }
    let page = WebhooksPage {
        shell: Shell::new(&session, "Webhooks"),
        hooks,
        next: list.next_cursor.unwrap_or_default(),
    };
    render(StatusCode::OK, &page)
}

/// An endpoint of the API's list, with its latest 10 deliveries (none shown when they cannot
/// be read: the endpoint still is).
async fn hook(console: &Console, session: &Session, w: &WebhookView) -> Hook {
    let id = w.id;
    let deliveries = console
        .api()
        .get(
            &session.caller,
            &format!("/v1/webhooks/{id}/deliveries?limit=10"),
        )
        .await
        .into::<PageOf<DeliveryView>>()
        .map(|p| p.items)
        .unwrap_or_default();
    Hook {
        id,
        url: w.url.clone(),
        types: w.event_types.join(", "),
        disabled: w.disabled_at.is_some(),
        deliveries: deliveries
            .iter()
            .map(|d| {
                (
                    d.event_type.clone(),
                    d.state.clone(),
                    d.attempts.len(),
                    at(d.created_at),
                )
            })
            .collect(),
    }
}
