//! The self-audit's runs (the platform's admins): each run newest first with its trigger,
//! state, times and what it found, and "Run now", which queues one (the API's
//! `POST /v1/audits`); the page then shows it queued until the background loop has made it.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_app::audits::{self, AuditRunView};
use serde::Deserialize;

use super::format::at;
use super::paging::{next_link, request, rows, After};
use super::{guard, problem_page, render, Shell};
use crate::session::Session;
use crate::Console;

/// A run as a row.
#[derive(Debug, Clone)]
struct RunRow {
    id: i64,
    trigger: String,
    state: String,
    requested: String,
    finished: String,
    /// How many broken invariants, in words (`—` before it ran).
    found: String,
    error: String,
    /// (check, subject, detail)
    findings: Vec<(String, String, String)>,
}

impl RunRow {
    fn of(r: &AuditRunView) -> Self {
        RunRow {
            id: r.id,
            trigger: r.trigger.clone(),
            state: r.state.clone(),
            requested: at(r.requested_at),
            finished: r.finished_at.map(at).unwrap_or_default(),
            found: r.violations.map_or("—".to_owned(), |n| n.to_string()),
            error: r.error.clone().unwrap_or_default(),
            findings: r
                .findings
                .iter()
                .map(|f| (f.check.clone(), f.subject.clone(), f.detail.clone()))
                .collect(),
        }
    }
}

#[derive(Template)]
#[template(path = "audits.html")]
struct AuditsPage {
    shell: Shell,
    runs: Vec<RunRow>,
    next: Option<String>,
    /// When it runs by itself, in words.
    schedule: String,
    /// Whether this session may queue a run (the route's roles and area).
    can_run: bool,
}

pub async fn list(
    State(console): State<Console>,
    session: Session,
    Query(q): Query<After>,
) -> Response {
    let app = console.app();
    let runs = app.audit_runs(request(&console, &q.after));
    let (runs, next) = match session.act(app, audits::READ, runs).await {
        Ok(r) => rows(r),
        Err(p) => return problem_page(&session, &p),
    };
    let schedule = match console.app().audit_schedule() {
        Some((t, zone)) => format!("every day at {t} ({})", zone.name()),
        None => "only when asked (background.audit_at is off)".to_owned(),
    };
    let page = AuditsPage {
        can_run: session.may_do(audits::RUN),
        shell: Shell::new(&session, "Audits"),
        runs: runs.iter().map(RunRow::of).collect(),
        next: next_link("/console/audits", &next),
        schedule,
    };
    render(StatusCode::OK, &page)
}

#[derive(Debug, Default, Deserialize)]
pub struct RunForm {
    #[serde(default)]
    csrf: String,
}

/// "Run now": queues a run, then back to the list.
pub async fn run(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Form(f): Form<RunForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &f.csrf) {
        return refused;
    }
    let app = console.app();
    if let Err(p) = session.act(app, audits::RUN, app.request_audit()).await {
        return problem_page(&session, &p);
    }
    Redirect::to("/console/audits").into_response()
}
