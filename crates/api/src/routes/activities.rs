//! `/v1/activities`: platform campaigns. The platform creates, edits (until frozen) and aborts
//! them; merchants see those covering their cities, by default the ones enrolling now.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use coupond_app::activities::ActivityFilter;
use coupond_app::pages::{Narrowing, PageRequest};
use coupond_domain::{
    ActivityDraft, ActivityId, ActivityPatch, ActivityStatus, CityId, CouponKind,
};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::pagination::PageOf;
use crate::routes::{BodyErrors, CommonErrors, ConflictError};
use crate::state::AppState;
use crate::views::ActivityView;

/// Create an activity.
///
/// A platform activity merchants enroll their templates in: its cities, the kind and range of
/// value a template may offer, the enrollment and run windows, who funds the discounts and whether
/// enrollments need approval. It is `scheduled`, `enrolling`, `frozen`, `running`, then `ended`,
/// by the clock.
#[utoipa::path(operation_id = "create_activity", post, path = "/v1/activities", tag = "activities", request_body = ActivityDraft,
    responses((status = 201, description = "Created", body = ActivityView), CommonErrors, BodyErrors),
    security(("bearer" = [])))]
pub async fn create(
    State(s): State<AppState>,
    ApiJson(draft): ApiJson<ActivityDraft>,
) -> ApiResult<(StatusCode, Json<ActivityView>)> {
    let a = s.create_activity(draft).await?;
    Ok((StatusCode::CREATED, Json(a)))
}

/// Filters for listing activities.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only activities in this status now. Merchants default to `enrolling`.
    pub status: Option<ActivityStatus>,
    /// Only activities covering this city.
    #[param(value_type = Option<i64>)]
    pub city_id: Option<CityId>,
    /// The same as `city_id` (its earlier name).
    #[param(value_type = Option<i64>)]
    pub city: Option<CityId>,
    /// Only activities whose templates offer this kind.
    pub kind: Option<CouponKind>,
    /// `true`: only paused activities; `false`: only those not paused.
    pub paused: Option<bool>,
    /// Only the activity with this `reference.external_id`.
    pub external_id: Option<String>,
    /// Only activities from this system (`reference.source`).
    pub source: Option<String>,
    /// Only activities of this type in that system (`reference.type`).
    #[serde(rename = "type")]
    #[param(rename = "type")]
    pub source_type: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1..=200 (default 50).
    pub limit: Option<u32>,
}

/// List activities.
///
/// Activities oldest first, a page at a time, filtered by status and city.
#[utoipa::path(operation_id = "list_activities", get, path = "/v1/activities", tag = "activities", params(ListQuery),
    responses((status = 200, description = "A page of activities", body = PageOf<ActivityView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn list(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<PageOf<ActivityView>>> {
    let filter = ActivityFilter {
        status: q.status,
        city: q.city_id.or(q.city),
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
    Ok(Json(s.activities(&p, filter, page).await?))
}

/// Read an activity.
///
/// One activity, with its status now.
#[utoipa::path(operation_id = "get_activity", get, path = "/v1/activities/{id}", tag = "activities",
    params(("id" = i64, Path, description = "Activity id")),
    responses((status = 200, description = "The activity", body = ActivityView), CommonErrors),
    security(("bearer" = [])))]
pub async fn get(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<ActivityId>,
) -> ApiResult<Json<ActivityView>> {
    Ok(Json(s.activity(&p, id).await?))
}

/// Change an activity.
///
/// Change an activity while it is scheduled or enrolling. The templates already enrolled must
/// still fit the new terms (`templates_conflict` otherwise).
#[utoipa::path(operation_id = "update_activity", patch, path = "/v1/activities/{id}", tag = "activities", request_body = ActivityPatch,
    params(("id" = i64, Path, description = "Activity id")),
    responses((status = 200, description = "The updated activity", body = ActivityView),
        CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn update(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<ActivityId>,
    ApiJson(patch): ApiJson<ActivityPatch>,
) -> ApiResult<Json<ActivityView>> {
    Ok(Json(s.edit_activity(id, patch).await?))
}

/// Abort an activity.
///
/// Abort an activity and every template in it: nothing more can be claimed from it. Final.
#[utoipa::path(operation_id = "abort_activity", post, path = "/v1/activities/{id}/abort", tag = "activities",
    params(("id" = i64, Path, description = "Activity id")),
    responses((status = 200, description = "The aborted activity", body = ActivityView),
        CommonErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn abort(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<ActivityId>,
) -> ApiResult<Json<ActivityView>> {
    Ok(Json(s.abort_activity(id).await?))
}
