//! Steering live campaigns: pause and resume a template or an activity, stop a template's
//! claiming for good. The rules and writes are the engine's (`steering`); every instance
//! forgets its cached copy of each template touched, so claims wait at once everywhere.

use axum::extract::State;
use axum::{Extension, Json};
use coupond_domain::{ActivityId, Note, TemplateId};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::{ApiPath, OptionalJson};
use crate::routes::{templates, BodyErrors, CommonErrors, ConflictError};
use crate::state::AppState;
use crate::views::{ActivityView, TemplateView};

/// Why claims are paused, shown with the pause to operators (users see only that it is).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PauseBody {
    /// 1 to 500 visible characters.
    #[schema(value_type = Option<String>, example = "stock recount in the Lisbon warehouse")]
    pub reason: Option<Note>,
}

/// Pause a template's claims.
///
/// Pause a scheduled or active template (platform; its merchant): claims and code redemptions
/// answer 409 `paused`, bulk issuance waits, coupons already held stay usable. Resume lifts it.
/// Announced as `template.paused`. Already paused: 409 `already_paused`; ended or final: 409
/// `not_pausable`.
#[utoipa::path(operation_id = "pause_template", post, path = "/v1/templates/{id}/pause", tag = "templates",
    request_body(content = Option<PauseBody>, description = "Empty, or a reason"),
    params(("id" = i64, Path, description = "Template id")),
    responses((status = 200, description = "The paused template", body = TemplateView),
        CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn pause_template(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
    OptionalJson(body): OptionalJson<PauseBody>,
) -> ApiResult<Json<TemplateView>> {
    let reason = body.unwrap_or_default().reason;
    let paused = s.pause_template(&p, id, reason).await?;
    Ok(Json(templates::view_one(&s, &p, paused, s.now()).await?))
}

/// Resume a paused template.
///
/// Resume a template paused itself (platform; its merchant): claims, codes and bulk issuance
/// go on. Announced as `template.resumed`. Not paused: 409 `not_paused`; paused with its
/// activity: 409 `activity_paused` (resume the activity).
#[utoipa::path(operation_id = "resume_template", post, path = "/v1/templates/{id}/resume", tag = "templates",
    params(("id" = i64, Path, description = "Template id")),
    responses((status = 200, description = "The resumed template", body = TemplateView),
        CommonErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn resume_template(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
) -> ApiResult<Json<TemplateView>> {
    let resumed = s.resume_template(&p, id).await?;
    Ok(Json(templates::view_one(&s, &p, resumed, s.now()).await?))
}

/// Stop a template's claiming for good.
///
/// Stop an active template (platform; its merchant): its claim window ends now, so nothing
/// more is claimed, redeemed or issued, and the coupons already held stay valid until their own
/// end (abort voids them instead). Recorded in its history and announced as `template.changed`
/// and a `template.status_changed` to `ended`. Not active: 409 `not_active`.
#[utoipa::path(operation_id = "stop_template", post, path = "/v1/templates/{id}/stop", tag = "templates",
    params(("id" = i64, Path, description = "Template id")),
    responses((status = 200, description = "The stopped template", body = TemplateView),
        CommonErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn stop_template(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
) -> ApiResult<Json<TemplateView>> {
    let stopped = s.stop_template(&p, id).await?;
    Ok(Json(templates::view_one(&s, &p, stopped, s.now()).await?))
}

/// Pause an activity's claims.
///
/// Pause an activity (platform) and every template in it not paused itself: their claims
/// answer 409 `paused` and bulk issuance waits; coupons held stay usable. Announced as
/// `activity.paused` and a `template.paused` per template. Already paused: 409
/// `already_paused`; ended or aborted: 409 `not_pausable`.
#[utoipa::path(operation_id = "pause_activity", post, path = "/v1/activities/{id}/pause", tag = "activities",
    request_body(content = Option<PauseBody>, description = "Empty, or a reason"),
    params(("id" = i64, Path, description = "Activity id")),
    responses((status = 200, description = "The paused activity", body = ActivityView),
        CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn pause_activity(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<ActivityId>,
    OptionalJson(body): OptionalJson<PauseBody>,
) -> ApiResult<Json<ActivityView>> {
    let reason = body.unwrap_or_default().reason;
    let paused = s.pause_activity(&p, id, reason).await?;
    Ok(Json(s.activity_view(&p, paused, s.now())))
}

/// Resume a paused activity.
///
/// Resume a paused activity (platform) and the templates its pause paused (one paused itself
/// stays paused). Announced as `activity.resumed` and a `template.resumed` per template. Not
/// paused: 409 `not_paused`.
#[utoipa::path(operation_id = "resume_activity", post, path = "/v1/activities/{id}/resume", tag = "activities",
    params(("id" = i64, Path, description = "Activity id")),
    responses((status = 200, description = "The resumed activity", body = ActivityView),
        CommonErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn resume_activity(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<ActivityId>,
) -> ApiResult<Json<ActivityView>> {
    let resumed = s.resume_activity(&p, id).await?;
    Ok(Json(s.activity_view(&p, resumed, s.now())))
}
