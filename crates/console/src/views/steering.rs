//! Pausing and resuming an activity from its page (the platform), and a pause in words for
//! the template and activity pages. A template's own pause, resume and stop are on its page
//! (`templates::changes`).

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_api::views::PauseView;
use coupond_app::{activities, AppError};
use coupond_domain::{ActivityId, Note, PauseScope};
use serde::Deserialize;

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
    steer(&console, &session, &headers, &f, id, true).await
}

/// Resumes the activity and the templates its pause paused.
pub async fn resume_activity(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<PauseForm>,
) -> Response {
    steer(&console, &session, &headers, &f, id, false).await
}

/// Pauses (with the form's reason, if any) or resumes activity `id`; back to its page, or the
/// refusal as a page.
async fn steer(
    console: &Console,
    session: &Session,
    headers: &HeaderMap,
    f: &PauseForm,
    id: i64,
    pause: bool,
) -> Response {
    if let Some(refused) = guard(headers, session, &f.csrf) {
        return refused;
    }
    let (app, p) = (console.app(), &session.principal);
    let done = async {
        let id = ActivityId::new(id).map_err(|_| AppError::NotFound)?;
        if pause {
            let reason = match f.reason.trim() {
                "" => None,
                r => Some(Note::parse("reason", r)?),
            };
            app.pause_activity(p, id, reason).await.map(drop)
        } else {
            app.resume_activity(p, id).await.map(drop)
        }
    };
    if let Err(problem) = session.act(app, activities::EDIT, done).await {
        return problem_page(session, &problem);
    }
    Redirect::to(&format!("/console/activities/{id}")).into_response()
}
