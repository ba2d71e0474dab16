//! The template form: a merchant enrolling in an activity (the kind fixed to the activity's,
//! its bounds, cities and windows checked by the application), a standalone template, and
//! editing a template while its terms may change (a draft). Every term a template has is
//! offered; errors are shown at the field the application names, with what was typed kept.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_app::{templates, AppError};
use coupond_domain::{ActivityId, TemplateAction, TemplateId};
use serde::Deserialize;

use super::names::CityNames;
use super::template_form::{patch, terms, Selects, TemplateForm};
use super::{guard, problem_page, render, ActivityRow, FieldErrors, Shell, Shown};
use crate::problem::Problem;
use crate::session::Session;
use crate::Console;

#[derive(Template)]
#[template(path = "template_new.html")]
struct NewPage {
    shell: Shell,
    /// Where the form posts, its heading and its button: creating or editing.
    action: String,
    heading: String,
    submit: &'static str,
    /// Editing: the activity (and so the claim window's owner) cannot change.
    editing: bool,
    /// Editing: the template's page, to go back to unchanged.
    back: Option<String>,
    activity: Option<ActivityRow>,
    selects: Selects,
    form: TemplateForm,
    errors: FieldErrors,
    error: Option<String>,
}

/// Where a template form goes: `None` creates, `Some(id)` edits template `id`.
type Target = Option<i64>;

#[derive(Debug, Default, Deserialize)]
pub struct Ask {
    #[serde(default)]
    activity_id: Option<i64>,
}

pub async fn new(
    State(console): State<Console>,
    session: Session,
    Query(q): Query<Ask>,
) -> Response {
    let mut form = TemplateForm::fresh();
    if let Some(a) = q.activity_id {
        form.activity_id = a.to_string();
    }
    page(&console, &session, None, form, Shown::ok()).await
}

async fn page(
    console: &Console,
    session: &Session,
    target: Target,
    mut form: TemplateForm,
    shown: Shown,
) -> Response {
    let activity = match form.activity_id.trim().parse::<i64>() {
        Ok(id) => match super::activities::read(console, session, id).await {
            Ok(a) => Some(a),
            Err(p) => return problem_page(session, &p),
        },
        Err(_) => None,
    };
    if let Some(a) = &activity {
        // In an activity: the activity decides the kind.
        form.kind = a.terms.kind.as_str().to_owned();
    }
    let kind = form.kind.clone();
    let selects = form.selects(|k| activity.is_none() || k == kind);
    let (action, heading, submit) = match (target, &activity) {
        (Some(id), _) => (
            format!("/console/templates/{id}/edit"),
            format!("Edit {}", form.title),
            "Save changes",
        ),
        (None, Some(a)) => (
            "/console/templates".to_owned(),
            format!("Enroll in {}", a.terms.title),
            "Create template",
        ),
        (None, None) => (
            "/console/templates".to_owned(),
            "New template".to_owned(),
            "Create template",
        ),
    };
    let page = NewPage {
        shell: Shell::new(session, heading.clone()),
        action,
        heading,
        submit,
        editing: target.is_some(),
        back: target.map(|id| format!("/console/templates/{id}")),
        activity: match activity.as_ref() {
            Some(a) => Some(ActivityRow::of(a).named(&CityNames::load(console, session).await)),
            None => None,
        },
        selects,
        form,
        errors: shown.errors,
        error: shown.error,
    };
    render(shown.status, &page)
}

pub async fn create(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Form(form): Form<TemplateForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &form.csrf) {
        return refused;
    }
    let mut draft = match terms(&form) {
        Ok(d) => d,
        Err((field, why)) => {
            return page(&console, &session, None, form, Shown::field(field, why)).await;
        }
    };
    if let Ok(a) = form.activity_id.trim().parse::<i64>() {
        match ActivityId::new(a) {
            Ok(a) => draft.activity_id = Some(a),
            Err(why) => {
                let shown = Shown::field("activity_id", why);
                return page(&console, &session, None, form, shown).await;
            }
        }
    }
    let app = console.app();
    let created = app.create_template(&session.principal, &draft);
    match session.act(app, templates::EDIT, created).await {
        Ok(t) => Redirect::to(&format!("/console/templates/{}", t.id)).into_response(),
        Err(p) => page(&console, &session, None, form, Shown::of(&p)).await,
    }
}

/// The edit form, filled from the template as the API has it; offered while the API names
/// `edit` among its actions (a template whose claiming has not started). Later, the API
/// refuses the change and the form says why.
pub async fn edit(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<i64>,
) -> Response {
    let t = match super::templates::read(&console, &session, id).await {
        Ok(t) => t,
        Err(p) => return problem_page(&session, &p),
    };
    let mut form = TemplateForm::of(&t.terms);
    if let Some(a) = t.terms.activity_id {
        form.activity_id = a.get().to_string();
    }
    let offered = t
        .actions
        .iter()
        .flatten()
        .any(|a| *a == TemplateAction::Edit);
    let shown = match offered {
        true => Shown::ok(),
        false => Shown {
            error: Some("This template's terms can no longer change.".into()),
            ..Shown::ok()
        },
    };
    page(&console, &session, Some(id), form, shown).await
}

/// Saves the edit form: every term as a patch, so the application applies its rules to the
/// template as changed; a refusal comes back to the form at the field it names.
pub async fn update(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<TemplateForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &form.csrf) {
        return refused;
    }
    let patch = match patch(&form) {
        Ok(p) => p,
        Err((field, why)) => {
            return page(&console, &session, Some(id), form, Shown::field(field, why)).await;
        }
    };
    let changed = match TemplateId::new(id) {
        Ok(t) => {
            let app = console.app();
            let work = app.update_template(&session.principal, t, patch);
            session.act(app, templates::EDIT, work).await
        }
        Err(_) => Err(Problem::from(AppError::NotFound)),
    };
    match changed {
        Ok(_) => {
            let done = format!("/console/templates/{id}?notice=saved");
            Redirect::to(&done).into_response()
        }
        Err(p) => page(&console, &session, Some(id), form, Shown::of(&p)).await,
    }
}
