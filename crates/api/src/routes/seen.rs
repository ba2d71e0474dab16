//! When a user was last active. Every request a user makes marks them seen by itself (the
//! auth guard, through [`coupond_engine::seen`]: in memory, written in batches); the order
//! service (or the platform) also says so for activity coupond does not see, such as a user
//! opening the shop's app. Segment issuance's `active_within_days` reads it.

use axum::extract::State;
use axum::Json;
use coupond_domain::{Timestamp, UserId};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiPath, OptionalJson};
use crate::routes::{BodyErrors, CommonErrors};
use crate::state::AppState;

/// When the user was seen.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SeenBody {
    /// RFC 3339, not in the future (default: now). An instant before the one stored already
    /// changes nothing.
    #[schema(value_type = Option<String>, format = DateTime, example = "2027-01-10T09:30:00Z")]
    pub at: Option<Timestamp>,
}

/// A user's last-seen instant.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SeenView {
    #[schema(value_type = String)]
    pub user_id: UserId,
    /// When the user was last seen; absent if never. Requests of the user's own are counted
    /// within `users.seen_resolution` (5 minutes by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seen_at: Option<Timestamp>,
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
    let now = s.now();
    let at = match body.unwrap_or_default().at {
        Some(at) if at > now => {
            return Err(ApiError::invalid(
                "invalid_value",
                "at",
                "at must not be in the future",
            ))
        }
        Some(at) => at,
        None => now,
    };
    s.store().record_seen(&[(user.clone(), at)]).await?;
    view(&s, user).await.map(Json)
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
    view(&s, user).await.map(Json)
}

/// The stored instant, or one this instance holds in memory not written yet, the later.
async fn view(s: &AppState, user: UserId) -> ApiResult<SeenView> {
    let stored = s.store().last_seen(&user).await?;
    let last_seen_at = stored.max(s.seen().waiting(&user));
    Ok(SeenView {
        user_id: user,
        last_seen_at,
    })
}
