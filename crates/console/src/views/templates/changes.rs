//! What a person changes on a template's page: publish, pause, resume, stop, abort, approve
//! or reject an enrollment, change the stock, extend the claim window or the coupons' validity, and
//! generate single-use codes (and download them).
//! Each is one call of the application; its refusal is shown as a page in words.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_api::views::TemplateView;
use coupond_app::identify::Origin;
use coupond_app::steering::TemplateStep;
use coupond_app::{codes, templates, AppError};
use coupond_domain::{
    CodeBatchDraft, CodeBatchSpec, DomainError, Note, TemplateId, TemplatePatch, Timestamp,
    Validity, Window,
};
use serde::Deserialize;

use super::super::activities::utc;
use super::super::{download, guard, problem_page};
use super::{render_page, CodesForm, Notice};
use crate::problem::Problem;
use crate::session::Session;
use crate::Console;

#[derive(Debug, Default, Deserialize)]
pub struct Action {
    #[serde(default)]
    csrf: String,
}

pub async fn publish(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<Action>,
) -> Response {
    act(
        &console,
        &session,
        &headers,
        id,
        &f.csrf,
        Ok(TemplateStep::Publish),
    )
    .await
}

pub async fn abort(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<Action>,
) -> Response {
    act(
        &console,
        &session,
        &headers,
        id,
        &f.csrf,
        Ok(TemplateStep::Abort),
    )
    .await
}

/// Deletes a standalone draft never published (its merchant, the platform), back to the list.
pub async fn delete(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<Action>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &f.csrf) {
        return refused;
    }
    let (app, p) = (console.app(), &session.principal);
    let deleted = async {
        let id = TemplateId::new(id).map_err(|_| AppError::NotFound)?;
        app.delete_template(p, id).await
    };
    match session.act(app, templates::EDIT, deleted).await {
        Ok(()) => Redirect::to("/console/templates").into_response(),
        Err(problem) => problem_page(&session, &problem),
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct PauseForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    reason: String,
}

/// Pauses claims of the template, with the reason given (none when left empty).
pub async fn pause(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<PauseForm>,
) -> Response {
    let step = match f.reason.trim() {
        "" => Ok(TemplateStep::Pause(None)),
        r => Note::parse("reason", r).map(|r| TemplateStep::Pause(Some(r))),
    };
    act(&console, &session, &headers, id, &f.csrf, step).await
}

pub async fn resume(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<Action>,
) -> Response {
    act(
        &console,
        &session,
        &headers,
        id,
        &f.csrf,
        Ok(TemplateStep::Resume),
    )
    .await
}

/// Stops claiming for good; coupons held stay usable.
pub async fn stop(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<Action>,
) -> Response {
    act(
        &console,
        &session,
        &headers,
        id,
        &f.csrf,
        Ok(TemplateStep::Stop),
    )
    .await
}

/// Approves an enrollment waiting for approval (the platform).
pub async fn approve(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<Action>,
) -> Response {
    act(
        &console,
        &session,
        &headers,
        id,
        &f.csrf,
        Ok(TemplateStep::Approve),
    )
    .await
}

#[derive(Debug, Default, Deserialize)]
pub struct Reject {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    reason: String,
}

/// Rejects an enrollment with the reason its merchant reads; the API refuses an empty one.
pub async fn reject(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<Reject>,
) -> Response {
    let step = Note::parse("reason", f.reason.trim()).map(TemplateStep::Reject);
    act(&console, &session, &headers, id, &f.csrf, step).await
}

/// Takes `step` (or refuses what the form gave for it) on template `id`, back to the
/// template's page saying it was done; the refusal as a page.
async fn act(
    console: &Console,
    session: &Session,
    headers: &HeaderMap,
    id: i64,
    csrf: &str,
    step: Result<TemplateStep, DomainError>,
) -> Response {
    if let Some(refused) = guard(headers, session, csrf) {
        return refused;
    }
    let (app, p) = (console.app(), &session.principal);
    let access = step.as_ref().map_or(templates::EDIT, TemplateStep::access);
    let done = step.as_ref().map_or("", TemplateStep::done);
    let taken = async {
        let id = TemplateId::new(id).map_err(|_| AppError::NotFound)?;
        app.steer_template(p, id, step?).await
    };
    if let Err(problem) = session.act(app, access, taken).await {
        return problem_page(session, &problem);
    }
    Redirect::to(&format!("/console/templates/{id}?notice={done}")).into_response()
}

#[derive(Debug, Default, Deserialize)]
pub struct TopUp {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    total_stock: String,
}

/// Changes the stock of a template (`PATCH` with `total_stock`); once claiming has started
/// the API refuses one below what is claimed (`below_claimed`), shown as a page in words.
pub async fn top_up(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<TopUp>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &f.csrf) {
        return refused;
    }
    let Ok(stock) = f.total_stock.trim().parse::<i64>() else {
        return Redirect::to(&format!(
            "/console/templates/{id}?notice=not+changed:+enter+a+whole+number"
        ))
        .into_response();
    };
    let patch = TemplatePatch {
        total_stock: Some(stock),
        ..TemplatePatch::default()
    };
    if let Err(e) = edit(&console, &session, id, patch).await {
        return problem_page(&session, &Problem::from(e));
    }
    Redirect::to(&format!("/console/templates/{id}?notice=stock+changed")).into_response()
}

#[derive(Debug, Default, Deserialize)]
pub struct Extend {
    #[serde(default)]
    csrf: String,
    /// The claim window's new end (`datetime-local`, UTC); empty keeps it.
    #[serde(default)]
    claim_end: String,
    /// A fixed validity's new end; empty keeps it.
    #[serde(default)]
    valid_until: String,
}

/// Extends a live template (a patch of the claim window's end and a fixed validity's end,
/// their starts kept); the application allows only later ends and says why otherwise.
pub async fn extend(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<Extend>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &f.csrf) {
        return refused;
    }
    let t = match super::read(&console, &session, id).await {
        Ok(t) => t.terms,
        Err(p) => return problem_page(&session, &p),
    };
    // The form shows the ends to the minute: an end left as shown is left alone.
    let changed = |sent: &str, now: Timestamp| {
        let sent = sent.trim();
        !sent.is_empty() && now.to_string().chars().take(16).collect::<String>() != sent
    };
    let end = |field: &str, sent: &str| {
        Timestamp::parse(&utc(sent))
            .map_err(|why| Problem::from(AppError::invalid("invalid_value", field, why)))
    };
    let mut patch = TemplatePatch::default();
    if let Some(w) = t.claim_window.filter(|w| changed(&f.claim_end, w.end)) {
        let window = end("claim_window.end", &f.claim_end).and_then(|end| {
            Window::new(w.start, end).map_err(|why| {
                Problem::from(AppError::invalid("invalid_value", "claim_window.end", why))
            })
        });
        match window {
            Ok(window) => patch.claim_window = Some(window),
            Err(p) => return problem_page(&session, &p),
        }
    }
    if let Validity::Fixed { from, until } = t.validity {
        if changed(&f.valid_until, until) {
            match end("validity.until", &f.valid_until) {
                Ok(until) => patch.validity = Some(Validity::Fixed { from, until }),
                Err(p) => return problem_page(&session, &p),
            }
        }
    }
    if patch == TemplatePatch::default() {
        return Redirect::to(&format!(
            "/console/templates/{id}?notice=not+changed:+enter+a+new+end"
        ))
        .into_response();
    }
    if let Err(e) = edit(&console, &session, id, patch).await {
        return problem_page(&session, &Problem::from(e));
    }
    Redirect::to(&format!("/console/templates/{id}?notice=extended")).into_response()
}

#[derive(Debug, Default, Deserialize)]
pub struct CodeBatch {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    count: String,
    #[serde(default)]
    prefix: String,
    /// `1`: made even though more codes than coupons left were asked for.
    #[serde(default)]
    anyway: String,
}

/// Generates a batch of single-use codes (small batches at once, large ones in the
/// background; the page lists them with their state). More codes than coupons left to claim
/// are made only when the person says so, having been told the numbers; a refusal is shown at
/// the form, with what was typed.
pub async fn code_batch(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<CodeBatch>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &f.csrf) {
        return refused;
    }
    let mut form = CodesForm {
        count: f.count.trim().to_owned(),
        prefix: f.prefix.trim().to_uppercase(),
        ..CodesForm::default()
    };
    let again = |form: CodesForm, status| {
        render_page(&console, &session, id, Notice::default(), form, status)
    };
    let Ok(count) = form.count.parse::<u32>() else {
        form.error = Some("how many: a whole number of codes".into());
        return again(form, StatusCode::UNPROCESSABLE_ENTITY).await;
    };
    let Ok(template) = TemplateId::new(id) else {
        return problem_page(&session, &Problem::from(AppError::NotFound));
    };
    let app = console.app();
    let who = || session.identity.clone();
    let read = app.visible_template(&session.principal, template);
    let left = match app
        .acting(who(), templates::READ, Origin::default(), read)
        .await
    {
        Ok(t) => TemplateView::new(t, app.now()).remaining,
        Err(e) => return problem_page(&session, &Problem::from(e)),
    };
    if i64::from(count) > left && f.anyway != "1" {
        form.over_stock = Some((count, left));
        return again(form, StatusCode::OK).await;
    }
    let started = async {
        let spec = CodeBatchSpec::try_from(CodeBatchDraft::new(count, form.prefix.clone()))?;
        app.start_code_batch(&session.principal, template, &spec)
            .await
    };
    if let Err(e) = app
        .acting(who(), codes::MANAGE, Origin::default(), started)
        .await
    {
        let p = Problem::from(e);
        let field = p.field.as_deref().unwrap_or("codes").replace('_', " ");
        form.error = Some(format!("{field}: {}", p.detail));
        let status = StatusCode::from_u16(p.status).unwrap_or(StatusCode::BAD_REQUEST);
        return again(form, status).await;
    }
    Redirect::to(&format!("/console/templates/{id}?notice=codes+generated")).into_response()
}

/// A batch's codes as a CSV download, streamed from the application.
pub async fn codes_csv(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<i64>,
) -> Response {
    let app = console.app();
    let every = app.batch_codes_csv(&session.principal, id);
    let pieces = session.act(app, codes::READ, every).await;
    download(&session, pieces, &format!("code-batch-{id}.csv"))
}

/// Edits template `id` by the application's `update_template`, as the session's caller.
async fn edit(
    console: &Console,
    session: &Session,
    id: i64,
    patch: TemplatePatch,
) -> Result<(), AppError> {
    let id = TemplateId::new(id).map_err(|_| AppError::NotFound)?;
    let app = console.app();
    let work = app.update_template(&session.principal, id, patch);
    let who = session.identity.clone();
    app.acting(who, templates::EDIT, Origin::default(), work)
        .await
        .map(|_| ())
}
