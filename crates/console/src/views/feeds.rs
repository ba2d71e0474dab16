//! The events feed, read-only (the platform sees everything, a merchant its templates'
//! events): newest first (the application's `order=desc`), filtered by type (a select of the types
//! the API knows), each event's data as `key: value` lines, and a link to older events.
//! Webhook endpoints are in `webhooks`.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use coupond_app::events::{kind, EventsRequest};
use serde::Deserialize;
use serde_json::Value;

use super::format::at;
use super::{problem_page, render, Shell};
use crate::session::Session;
use crate::Console;

/// The most `key: value` lines shown of one event's data.
const MAX_LINES: usize = 30;

#[derive(Debug, Default, Deserialize)]
pub struct FeedQuery {
    #[serde(default)]
    r#type: String,
    #[serde(default)]
    after: String,
}

/// An event as a row.
#[derive(Debug, Clone)]
struct EventRow {
    id: i64,
    kind: String,
    at: String,
    /// Its data as `(key, value)` lines, nested keys joined with `.`.
    data: Vec<(String, String)>,
}

#[derive(Template)]
#[template(path = "events.html")]
struct EventsPage {
    shell: Shell,
    kind: String,
    /// Every event type, for the filter.
    kinds: &'static [&'static str],
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

/// `v` as `key: value` lines, at most [`MAX_LINES`]: an object's fields in order, nested
/// ones as `outer.inner`, a list of plain values joined with commas, text without quotes.
fn lines(v: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    flatten("", v, &mut out);
    out.truncate(MAX_LINES);
    out
}

fn flatten(key: &str, v: &Value, out: &mut Vec<(String, String)>) {
    let join = |k: &str| match key {
        "" => k.to_owned(),
        _ => format!("{key}.{k}"),
    };
    match v {
        Value::Object(map) => map.iter().for_each(|(k, v)| flatten(&join(k), v, out)),
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            let words: Vec<String> = items.iter().map(plain_value).collect();
            out.push((key.to_owned(), words.join(", ")));
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .for_each(|(i, v)| flatten(&join(&i.to_string()), v, out)),
        v => out.push((key.to_owned(), plain_value(v))),
    }
}

fn plain_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "none".to_owned(),
        v => v.to_string(),
    }
}

pub async fn events(
    State(console): State<Console>,
    session: Session,
    Query(q): Query<FeedQuery>,
) -> Response {
    let kind = plain(&q.r#type, "._,");
    let after = plain(&q.after, "-_");
    let req = EventsRequest {
        after: (!after.is_empty()).then(|| after.clone()),
        kinds: (!kind.is_empty()).then(|| kind.clone()),
        limit: Some(50),
        order: Some("desc".to_owned()),
    };
    let app = console.app();
    let read = app.events(&session.principal, req);
    let page = match session.act(app, coupond_app::events::READ, read).await {
        Ok(p) => p,
        Err(p) => return problem_page(&session, &p),
    };
    // An empty page has nothing older to go on to.
    let next = if page.items.is_empty() {
        String::new()
    } else {
        page.next_cursor
    };
    let rows = page
        .items
        .iter()
        .map(|e| EventRow {
            id: e.id,
            kind: e.kind.clone(),
            at: at(e.at),
            data: lines(&e.data),
        })
        .collect();
    let page = EventsPage {
        shell: Shell::new(&session, "Events"),
        kind,
        kinds: &kind::ALL,
        rows,
        next,
    };
    render(StatusCode::OK, &page)
}

#[cfg(test)]
mod tests {
    use super::lines;
    use serde_json::json;

    #[test]
    fn data_reads_as_key_value_lines() {
        let v = json!({"template_id": 3, "user_id": "u-1", "cities": [1, 2],
                       "order": {"id": "o-9", "lines": [{"sku": "a"}]}, "note": null});
        let mut got: Vec<String> = lines(&v).iter().map(|(k, v)| format!("{k}: {v}")).collect();
        got.sort();
        assert_eq!(
            got,
            [
                "cities: 1, 2",
                "note: none",
                "order.id: o-9",
                "order.lines.0.sku: a",
                "template_id: 3",
                "user_id: u-1"
            ]
        );
    }
}
