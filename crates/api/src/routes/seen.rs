//! When a user was last active. Every request a user makes marks them seen by itself (the
//! auth guard, through [`coupond_engine::seen`]: in memory, written in batches); the order
//! service (or the platform) also says so for activity coupond does not see, such as a user
//! opening the shop's app. Segment issuance's `active_within_days` reads it.

use axum::extract::State;
use axum::Json;
use coupond_domain::{Timestamp, UserId};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::error::ApiResult;
use crate::extract::{ApiPath, OptionalJson};
use crate::routes::{BodyErrors, CommonErrors};
use crate::state::AppState;

pub use coupond_app::users::SeenView;

/// When the user was seen.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SeenBody {
    /// RFC 3339, not in the future (default: now). An instant before the one stored already
    /// changes nothing.
    #[schema(value_type = Option<String>, format = DateTime, example = "2027-01-10T09:30:00Z")]
    pub at: Option<Timestamp>,
}

/// Mark a user seen.
///
/// Record that a user was active at `at` (default now; not in the future) for activity coupond
/// does not see itself (order service, platform): a user's own requests mark them seen without
/// this. The later of this and the instant stored stands. Answers the instant stored now.
#[utoipa::path(operation_id = "mark_user_seen", post, path = "/v1/users/{id}/seen", tag = "tags",
    request_body(content = Option<SeenBody>, description = "Empty (now), or when"),
    params(("id" = String, Path, description = "User id")),
    responses((status = 200, description = "The user's last-seen instant", body = SeenView),
        CommonErrors, BodyErrors),
    security(("bearer" = [])))]
pub async fn mark(
    State(s): State<AppState>,
    ApiPath(user): ApiPath<UserId>,
    OptionalJson(body): OptionalJson<SeenBody>,
) -> ApiResult<Json<SeenView>> {
    let at = body.unwrap_or_default().at;
    Ok(Json(s.mark_seen(user, at).await?))
}

/// Read when a user was last seen.
///
/// When a user was last active: their last request (counted within `users.seen_resolution`),
/// or the last instant the order service or the platform marked them seen.
#[utoipa::path(operation_id = "get_user_seen", get, path = "/v1/users/{id}/seen", tag = "tags",
    params(("id" = String, Path, description = "User id")),
    responses((status = 200, description = "The user's last-seen instant", body = SeenView), CommonErrors),
    security(("bearer" = [])))]
pub async fn get(
    State(s): State<AppState>,
    ApiPath(user): ApiPath<UserId>,
) -> ApiResult<Json<SeenView>> {
    Ok(Json(s.last_seen(user).await?))
}
