//! The events feed, read-only (the platform sees everything, a merchant its templates'
//! events) with a type filter and cursor paging. Webhook endpoints are in `webhooks`.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use coupond_api::routes::events::EventPage;
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
pub(super) fn plain(s: &str, extra: &str) -> String {
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
