//! Pausing and resuming an activity from its page (the platform), and a pause in words for
//! the template and activity pages. A template's own pause, resume and stop are on its page
//! (`templates::changes`).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_api::views::PauseView;
use coupond_domain::PauseScope;
use serde::Deserialize;
use serde_json::json;

use super::{format, guard, problem_page};
use crate::session::Session;
use crate::Console;

/// "Claims paused since 24 Nov 2026 12:00 UTC (with its activity): stock recount."
pub(super) fn pause_words(p: &PauseView) -> String {
    let whose = match p.scope {
        PauseScope::Template => "",
        PauseScope::Activity => " (with its activity)",
    };
    let why = p
        .reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    format!("Claims paused since {}{whose}{why}.", format::at(p.since))
}

#[derive(Debug, Default, Deserialize)]
pub struct PauseForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    reason: String,
}

/// Pauses the activity and its templates, with the reason given (none when left empty).
pub async fn pause_activity(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<PauseForm>,
) -> Response {
    let reason = f.reason.trim();
    let body = (!reason.is_empty()).then(|| json!({"reason": reason}));
    post(&console, &session, &headers, &f.csrf, id, "pause", body).await
}

/// Resumes the activity and the templates its pause paused.
pub async fn resume_activity(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<PauseForm>,
) -> Response {
    post(&console, &session, &headers, &f.csrf, id, "resume", None).await
}

async fn post(
    console: &Console,
    session: &Session,
    headers: &HeaderMap,
    csrf: &str,
    id: i64,
    action: &str,
    body: Option<serde_json::Value>,
) -> Response {
    if let Some(refused) = guard(headers, session, csrf) {
        return refused;
    }
    let path = format!("/v1/activities/{id}/{action}");
    let api = console.api();
    let reply = match body {
        Some(b) => {
            api.send_json(&session.caller, Method::POST, &path, &b)
                .await
        }
        None => api.call(&session.caller, Method::POST, &path, None).await,
    };
    if !reply.ok() {
        return problem_page(session, &reply.problem());
    }
    Redirect::to(&format!("/console/activities/{id}")).into_response()
}
