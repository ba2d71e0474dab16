//! `/v1/activities`: platform campaigns. The platform creates, edits (until frozen) and aborts
//! them; merchants see those covering their cities, by default the ones enrolling now.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use coupond_domain::{
    Activity, ActivityDraft, ActivityId, ActivityPatch, ActivitySpec, ActivityStatus, CityId,
    CouponKind, Timestamp,
};
use coupond_engine::campaigns;
use coupond_store::{ActivityQuery, Narrow};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::pagination::{self, PageOf};
use crate::routes::{BodyErrors, CommonErrors, ConflictError};
use crate::state::AppState;
use crate::views::ActivityView;

/// The view at `now`, the one instant the request reads the clock at (so a list filtered by
/// status never shows an item in another status).
fn view(s: &AppState, a: Activity, now: Timestamp) -> ActivityView {
    ActivityView::new(a, now, s.settings().freeze)
}

/// The view of one activity with the actions caller `p` may take on it now: what its rules
/// allow ([`Activity::actions`]) on the caller's side (the platform edits and aborts, a
/// merchant enrolls), if its role runs campaigns.
pub(crate) fn view_one(s: &AppState, p: &Principal, a: Activity, now: Timestamp) -> ActivityView {
    let side = match p {
        Principal::Platform => Some(true),
        Principal::Merchant(_) => Some(false),
        _ => None,
    };
    let actions = match side {
        Some(platform) if crate::auth::may_act(coupond_domain::Area::Campaigns) => a
            .actions(now, s.settings().freeze)
            .into_iter()
            .filter(|action| action.is_platforms() == platform)
            .collect(),
        _ => Vec::new(),
    };
    let mut v = view(s, a, now);
    v.actions = Some(actions);
    v
}

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
    let spec = ActivitySpec::try_from(draft)?;
    let now = s.now();
    let a = campaigns::create_activity(s.store(), &spec, now).await?;
    Ok((
        StatusCode::CREATED,
        Json(view_one(&s, &Principal::Platform, a, now)),
    ))
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
    let page = pagination::page(q.cursor.as_deref(), q.limit, s.settings())?;
    let now = s.now();
    let (status, any_city) = match p.merchant() {
        Some(m) => {
            let merchant = s.store().merchant(m).await?;
            (
                Some(q.status.unwrap_or(ActivityStatus::Enrolling)),
                Some(merchant.cities),
            )
        }
        None => (q.status, None),
    };
    let query = ActivityQuery {
        narrow: Narrow {
            kind: q.kind,
            paused: q.paused,
            external_id: q.external_id,
            source: crate::routes::templates::reference_filter("source", q.source)?,
            source_type: crate::routes::templates::reference_filter("type", q.source_type)?,
        },
        status,
        city: q.city_id.or(q.city),
        any_city,
        now,
        freeze: s.settings().freeze,
        page,
    };
    let rows = s.store().list_activities(&query).await?;
    Ok(Json(pagination::finish(
        rows,
        page,
        |a| a.id.get(),
        |a| view(&s, a, now),
    )))
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
    let a = s.visible_activity(&p, id).await?;
    Ok(Json(view_one(&s, &p, a, s.now())))
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
    let now = s.now();
    let updated = campaigns::edit_activity(s.store(), id, patch, now, s.settings().freeze).await?;
    // Its templates' claim windows may follow its run: every instance reads them again.
    s.forget_activity_templates(id).await?;
    Ok(Json(view_one(&s, &Principal::Platform, updated, now)))
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
    let now = s.now();
    let aborted = campaigns::abort_activity(s.store(), id, now, s.settings().freeze).await?;
    // Its templates ended with it: no instance keeps offering them from memory.
    s.forget_activity_templates(id).await?;
    Ok(Json(view_one(&s, &Principal::Platform, aborted, now)))
}
