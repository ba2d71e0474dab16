//! The home page: today's claims and uses, activities on a timeline and by status, what
//! needs attention (templates low on stock or expiring within 7 days, failing webhook
//! deliveries, the platform's outbox backlog), and totals. The platform sees everything; a
//! merchant its own templates and endpoints and the activities open to it.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use coupond_domain::Timestamp;
use serde_json::Value;

use super::timeline::Timeline;
use super::{problem_page, render, ActivityRow, Shell, TemplateRow};
use crate::session::Session;
use crate::Console;

/// The counts at the top.
#[derive(Debug, Default)]
struct Totals {
    running: usize,
    enrolling: usize,
    claimable: usize,
    claimed: i64,
    used: i64,
    low: usize,
    claimed_today: i64,
    used_today: i64,
    deliveries_failed: i64,
    deliveries_retrying: i64,
}

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage {
    shell: Shell,
    platform: bool,
    totals: Totals,
    activities: Vec<ActivityRow>,
    timeline: Timeline,
    /// Templates that need attention.
    rows: Vec<TemplateRow>,
    /// The platform's outbox consumers: (name, events behind, more than that).
    outbox: Vec<(String, i64, bool)>,
}

/// Status order on the home page: what is live first.
const ORDER: [&str; 6] = [
    "running",
    "enrolling",
    "frozen",
    "scheduled",
    "ended",
    "aborted",
];

pub async fn page(State(console): State<Console>, session: Session) -> Response {
    let api = console.api();
    let activities = api.get(&session.key, "/v1/activities?limit=200").await;
    let templates = api.get(&session.key, "/v1/templates?limit=200").await;
    let (activities, templates) = match (activities.into::<Value>(), templates.into::<Value>()) {
        (Ok(a), Ok(t)) => (a, t),
        (Err(p), _) | (_, Err(p)) => return problem_page(&session, &p),
    };
    let today = api
        .get(&session.key, "/v1/reports/today")
        .await
        .into::<Value>()
        .unwrap_or(Value::Null);
    let now = console.app().now();
    let timeline = Timeline::of(items(&activities), now);
    let mut activities: Vec<ActivityRow> = items(&activities).map(ActivityRow::of).collect();
    activities.sort_by_key(|a| {
        ORDER
            .iter()
            .position(|s| *s == a.status)
            .unwrap_or(ORDER.len())
    });
    let templates: Vec<TemplateRow> = items(&templates).map(TemplateRow::of).collect();
    let soon = in_7_days(&console);
    let totals = Totals {
        running: activities.iter().filter(|a| a.status == "running").count(),
        enrolling: activities
            .iter()
            .filter(|a| a.status == "enrolling")
            .count(),
        claimable: templates.iter().filter(|t| t.status == "active").count(),
        claimed: templates.iter().map(|t| t.claimed).sum(),
        used: templates.iter().map(|t| t.used).sum(),
        low: templates
            .iter()
            .filter(|t| t.low && t.status == "active")
            .count(),
        claimed_today: today["claimed"].as_i64().unwrap_or(0),
        used_today: today["used"].as_i64().unwrap_or(0),
        deliveries_failed: today["deliveries_failed"].as_i64().unwrap_or(0),
        deliveries_retrying: today["deliveries_retrying"].as_i64().unwrap_or(0),
    };
    let outbox = items_of(&today["outbox"])
        .map(|c| {
            (
                c["consumer"].as_str().unwrap_or("").to_owned(),
                c["behind"].as_i64().unwrap_or(0),
                c["behind_more"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    let rows = templates
        .into_iter()
        .filter(|t| {
            let expiring = Timestamp::parse(&t.expires_at).is_ok_and(|e| e < soon);
            t.status == "active" && (t.low || expiring)
        })
        .collect();
    let page = HomePage {
        shell: Shell::new(&session, "Home"),
        platform: session.is_platform(),
        totals,
        activities,
        timeline,
        rows,
        outbox,
    };
    render(StatusCode::OK, &page)
}

/// The `items` of a page of results.
pub fn items(page: &Value) -> impl Iterator<Item = &Value> {
    page["items"].as_array().into_iter().flatten()
}

fn items_of(v: &Value) -> impl Iterator<Item = &Value> {
    v.as_array().into_iter().flatten()
}

/// Now plus 7 days.
fn in_7_days(console: &Console) -> Timestamp {
    let now = console.app().now();
    Timestamp::from_unix_micros(now.unix_micros() + 7 * 24 * 3_600 * 1_000_000).unwrap_or(now)
}
