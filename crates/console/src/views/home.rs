//! The home page: today's claims and uses, activities on a timeline and by status, what
//! needs attention (templates low on stock or expiring within 7 days, failing webhook
//! deliveries, the platform's outbox backlog), and totals. The platform sees everything; a
//! merchant its own templates and endpoints and the activities open to it. Every count and the
//! attention list come from the application's `today` (what `GET /v1/reports/today`
//! answers), which counts in the database over all of them. "Today" is the platform's local day (`platform.time_zone`), and the page says which
//! zone that is.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use coupond_api::routes::today::TodayView;
use coupond_app::activities::{self, ActivityFilter};
use coupond_app::identify::Origin;
use coupond_app::pages::PageRequest;
use coupond_app::today;

use super::names::{CityNames, MerchantNames};
use super::timeline::Timeline;
use super::{problem_page, render, ActivityRow, Shell, TemplateRow};
use crate::problem::Problem;
use crate::session::Session;
use crate::Console;

/// The counts at the top.
#[derive(Debug, Default)]
struct Totals {
    running: i64,
    enrolling: i64,
    claimable: i64,
    claimed: i64,
    used: i64,
    low: i64,
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
    /// More activities than the 200 listed (the Activities page has them all).
    activities_more: bool,
    timeline: Timeline,
    /// Templates that need attention (the API's first 50).
    rows: Vec<TemplateRow>,
    /// More templates need attention than are listed.
    attention_more: bool,
    /// The platform's outbox consumers: (name, events behind, more than that).
    outbox: Vec<(String, i64, bool)>,
    /// The platform's time zone, whose local midnight "today" starts at, and today's date
    /// there.
    time_zone: String,
    today_date: String,
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
    let app = console.app();
    let first = PageRequest::first(200);
    let found = app.activities(&session.principal, ActivityFilter::default(), first);
    let activities = session.act(app, activities::READ, found).await;
    let who = session.identity.clone();
    let figures = app.today(&session.principal, None);
    let today = app
        .acting(who, today::READ, Origin::default(), figures)
        .await;
    let read = (
        activities,
        today
            .map(|t| TodayView::of(t, app.zone()))
            .map_err(Problem::from),
    );
    let (activities, today) = match read {
        (Ok(a), Ok(t)) => (a, t),
        (Err(p), _) | (_, Err(p)) => return problem_page(&session, &p),
    };
    let now = console.app().now();
    let timeline = Timeline::of(&activities.items, now, console.app().zone());
    let cities = CityNames::load(&console, &session).await;
    let merchants = MerchantNames::load(&console, &session).await;
    let mut rows: Vec<ActivityRow> = activities
        .items
        .iter()
        .map(|a| ActivityRow::of(a).named(&cities))
        .collect();
    rows.sort_by_key(|a| {
        ORDER
            .iter()
            .position(|s| *s == a.status)
            .unwrap_or(ORDER.len())
    });
    let page = HomePage {
        shell: Shell::new(&session, "Home"),
        platform: session.is_platform(),
        totals: Totals::of(&today),
        activities: rows,
        activities_more: activities.next_cursor.is_some(),
        timeline,
        rows: today
            .attention
            .items
            .iter()
            .map(|t| TemplateRow::of(t).named(&merchants))
            .collect(),
        attention_more: today.attention.more,
        outbox: today
            .outbox
            .iter()
            .flatten()
            .map(|c| (c.consumer.clone(), i64::from(c.behind), c.behind_more))
            .collect(),
        time_zone: today.time_zone.clone(),
        today_date: today.date.clone(),
    };
    render(StatusCode::OK, &page)
}

impl Totals {
    /// The cards, from the API's counts over all of the caller's templates and activities.
    fn of(today: &TodayView) -> Self {
        let (t, a) = (&today.templates, &today.activities);
        Totals {
            running: a.running,
            enrolling: a.enrolling,
            claimable: t.claimable,
            claimed: t.claimed,
            used: t.used,
            low: t.low_stock,
            claimed_today: today.claimed,
            used_today: today.used,
            deliveries_failed: today.deliveries_failed,
            deliveries_retrying: today.deliveries_retrying,
        }
    }
}
