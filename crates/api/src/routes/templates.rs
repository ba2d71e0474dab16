//! `/v1/templates`: coupon templates. Merchants create them inside an enrolling activity or on
//! their own; the platform creates platform-issued ones. Terms are fixed once claiming can
//! start.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use coupond_domain::{
    ActivityId, CityId, CouponKind, MerchantId, Note, Template, TemplateDraft, TemplateId,
    TemplatePatch, TemplateStatus, Timestamp,
};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use coupond_app::pages::{Narrowing, PageRequest};
use coupond_app::steering::TemplateStep;
use coupond_app::template_reads::TemplateFilter;

pub use coupond_app::template_reads::TemplateChangeView;

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::pagination::{PageOf, PageQuery};
use crate::routes::{BodyErrors, CommonErrors, ConflictError};
use crate::state::AppState;
use crate::views::TemplateView;

/// The view of one template at `now`, with the actions caller `p` may take on it now
/// ([`coupond_app::App::template_view`]).
pub(crate) async fn view_one(
    s: &AppState,
    p: &Principal,
    t: Template,
    now: Timestamp,
) -> ApiResult<TemplateView> {
    Ok(s.template_view(p, t, now).await?)
}

/// Create a template.
///
/// Create a template: in an activity (merchants, while it is enrolling) or standalone (a draft
/// until published). A merchant's tag audience may name only tags the platform shares with
/// merchants (422 `tag_not_shared` on `audience.any`; so may a merchant's edit).
#[utoipa::path(operation_id = "create_template", post, path = "/v1/templates", tag = "templates", request_body = TemplateDraft,
    responses((status = 201, description = "Created", body = TemplateView),
        CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn create(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiJson(draft): ApiJson<TemplateDraft>,
) -> ApiResult<(StatusCode, Json<TemplateView>)> {
    let t = s.create_template(&p, &draft).await?;
    let now = s.now();
    Ok((StatusCode::CREATED, Json(view_one(&s, &p, t, now).await?)))
}

/// Filters for listing templates.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only this merchant's templates (the platform's filter; a merchant sees only its own,
    /// so naming another gives an empty page).
    #[param(value_type = Option<i64>)]
    pub merchant_id: Option<MerchantId>,
    /// Only templates in this activity.
    #[param(value_type = Option<i64>)]
    pub activity_id: Option<ActivityId>,
    /// Only templates in this status now.
    pub status: Option<TemplateStatus>,
    /// Only templates offered in this city.
    #[param(value_type = Option<i64>)]
    pub city_id: Option<CityId>,
    /// Only templates of this kind (`amount_off`, `percent_off`, ...).
    pub kind: Option<CouponKind>,
    /// `true`: only paused templates; `false`: only those not paused.
    pub paused: Option<bool>,
    /// Only the template with this `reference.external_id` (one per owner).
    pub external_id: Option<String>,
    /// Only templates from this system (`reference.source`).
    pub source: Option<String>,
    /// Only templates of this type in that system (`reference.type`).
    #[serde(rename = "type")]
    #[param(rename = "type")]
    pub source_type: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1..=200 (default 50).
    pub limit: Option<u32>,
}

/// List templates.
///
/// List templates, oldest first. Merchants see only their own.
#[utoipa::path(operation_id = "list_templates", get, path = "/v1/templates", tag = "templates", params(ListQuery),
    responses((status = 200, description = "A page of templates", body = PageOf<TemplateView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn list(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<PageOf<TemplateView>>> {
    let filter = TemplateFilter {
        merchant: q.merchant_id,
        activity: q.activity_id,
        status: q.status,
        city: q.city_id,
        narrowing: Narrowing {
            kind: q.kind,
            paused: q.paused,
            external_id: q.external_id,
            source: q.source,
            source_type: q.source_type,
        },
    };
    let page = PageRequest {
        cursor: q.cursor,
        limit: q.limit,
    };
    Ok(Json(s.templates(&p, filter, page).await?))
}

/// Read a template.
///
/// One template with its status now, its stock and the actions the caller may take on it now
/// (`actions`).
#[utoipa::path(operation_id = "get_template", get, path = "/v1/templates/{id}", tag = "templates",
    params(("id" = i64, Path, description = "Template id")),
    responses((status = 200, description = "The template", body = TemplateView), CommonErrors),
    security(("bearer" = [])))]
pub async fn get(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
) -> ApiResult<Json<TemplateView>> {
    Ok(Json(s.template(&p, id).await?))
}

/// Change a template.
///
/// Change a template's terms while it is a draft or scheduled (and, in an activity, while the
/// activity is enrolling). Once a standalone template is claimable only more stock (`total_stock`
/// raised), a later `claim_window.end` and a later fixed `validity.until` may be sent (the coupons
/// already issued get the later end too); any other change is 422 `fixed_once_claimable` naming
/// the field. Each change is kept in the template's history.
#[utoipa::path(operation_id = "update_template", patch, path = "/v1/templates/{id}", tag = "templates", request_body = TemplatePatch,
    params(("id" = i64, Path, description = "Template id")),
    responses((status = 200, description = "The updated template", body = TemplateView),
        CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn update(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
    ApiJson(patch): ApiJson<TemplatePatch>,
) -> ApiResult<Json<TemplateView>> {
    let updated = s.update_template(&p, id, patch).await?;
    let now = s.now();
    Ok(Json(view_one(&s, &p, updated, now).await?))
}

/// Publish a template.
///
/// Publish a standalone draft: it becomes claimable when its claim window opens. Templates in an
/// activity go live with the activity and are never published.
#[utoipa::path(operation_id = "publish_template", post, path = "/v1/templates/{id}/publish", tag = "templates",
    params(("id" = i64, Path, description = "Template id")),
    responses((status = 200, description = "The published template", body = TemplateView),
        CommonErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn publish(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
) -> ApiResult<Json<TemplateView>> {
    let published = s.publish_template(&p, id).await?;
    Ok(Json(view_one(&s, &p, published, s.now()).await?))
}

/// Abort a template.
///
/// Abort a template: no more claims or redemptions; coupons already held stay usable until they
/// expire. Final.
#[utoipa::path(operation_id = "abort_template", post, path = "/v1/templates/{id}/abort", tag = "templates",
    params(("id" = i64, Path, description = "Template id")),
    responses((status = 200, description = "The aborted template", body = TemplateView),
        CommonErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn abort(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
) -> ApiResult<Json<TemplateView>> {
    let aborted = s.abort_template(&p, id).await?;
    Ok(Json(view_one(&s, &p, aborted, s.now()).await?))
}

/// Delete a draft template.
///
/// Delete a standalone draft never published (platform; its merchant), with its bindings and
/// codes. Anything else: 409 `not_draft` (abort it instead).
#[utoipa::path(operation_id = "delete_template", delete, path = "/v1/templates/{id}", tag = "templates",
    params(("id" = i64, Path, description = "Template id")),
    responses((status = 204, description = "Deleted"), CommonErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn remove(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
) -> ApiResult<StatusCode> {
    s.delete_template(&p, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A template's history.
///
/// A template's history: every change of its terms after it was created, oldest first, a page at a
/// time (platform; its merchant).
#[utoipa::path(operation_id = "template_history", get, path = "/v1/templates/{id}/history", tag = "templates",
    params(("id" = i64, Path, description = "Template id"), PageQuery),
    responses((status = 200, description = "A page of changes", body = PageOf<TemplateChangeView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn history(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<PageOf<TemplateChangeView>>> {
    Ok(Json(s.template_history(&p, id, q.request()).await?))
}

/// Why an enrollment is rejected.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectBody {
    /// 1 to 500 visible characters; the merchant reads it on the template.
    #[schema(value_type = String, example = "the stock is too small for a city-wide campaign")]
    pub reason: Note,
}

/// Approve an enrollment.
///
/// Approve a merchant's enrollment waiting for approval (platform: admin, marketing): it is in its
/// activity from now on, claimable in the activity's run. Anything not waiting: 409 `not_pending`.
/// Announced as `template.approved`.
#[utoipa::path(operation_id = "approve_template", post, path = "/v1/templates/{id}/approve", tag = "templates",
    params(("id" = i64, Path, description = "Template id")),
    responses((status = 200, description = "The approved template", body = TemplateView),
        CommonErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn approve(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
) -> ApiResult<Json<TemplateView>> {
    let approved = s.steer_template(&p, id, TemplateStep::Approve).await?;
    Ok(Json(view_one(&s, &p, approved, s.now()).await?))
}

/// Reject an enrollment.
///
/// Reject a merchant's enrollment waiting for approval, with a reason its merchant reads
/// (platform: admin, marketing). It stays out of its activity until its merchant edits it, which
/// puts it back in the queue. Anything not waiting: 409 `not_pending`. Announced as
/// `template.rejected`.
#[utoipa::path(operation_id = "reject_template", post, path = "/v1/templates/{id}/reject", tag = "templates",
    request_body = RejectBody,
    params(("id" = i64, Path, description = "Template id")),
    responses((status = 200, description = "The rejected template", body = TemplateView),
        CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn reject(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
    ApiJson(body): ApiJson<RejectBody>,
) -> ApiResult<Json<TemplateView>> {
    let rejected = s.steer_template(&p, id, TemplateStep::Reject(body.reason));
    let rejected = rejected.await?;
    Ok(Json(view_one(&s, &p, rejected, s.now()).await?))
}
