//! User tags coupond holds (`vip`, `new`, `city:1`) for segment issuance: one user's set. The
//! platform and the order service write and read them; merchants and users never see them.
//! Bulk uploads of `user_id,tag` pairs are jobs: [`super::tag_uploads`].

use axum::extract::State;
use axum::Json;
use coupond_domain::{Tag, UserId};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath};
use crate::routes::{BodyErrors, CommonErrors};
use crate::state::AppState;

pub use coupond_app::users::UserTagsView;

/// A user's tags.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserTags {
    /// 0 to 100 tags, each 1 to 64 characters of lowercase letters, digits and `_.:-`; sent
    /// in any order, answered sorted, each once.
    #[schema(value_type = Vec<String>, example = json!(["vip", "new"]))]
    pub tags: Vec<Tag>,
}

/// Replace a user's tags.
///
/// Replace the tags coupond holds for a user (segment issuance and template audiences read them).
/// Recorded in the audit trail.
#[utoipa::path(operation_id = "put_user_tags", put, path = "/v1/users/{id}/tags", tag = "tags",
    request_body = UserTags,
    params(("id" = String, Path, description = "User id")),
    responses((status = 200, description = "The user's tags", body = UserTagsView), CommonErrors, BodyErrors),
    security(("bearer" = [])))]
pub async fn put(
    State(s): State<AppState>,
    ApiPath(user): ApiPath<UserId>,
    ApiJson(body): ApiJson<UserTags>,
) -> ApiResult<Json<UserTagsView>> {
    Ok(Json(s.put_user_tags(user, &body.tags).await?))
}

/// Read a user's tags.
///
/// The tags coupond holds for a user.
#[utoipa::path(operation_id = "get_user_tags", get, path = "/v1/users/{id}/tags", tag = "tags",
    params(("id" = String, Path, description = "User id")),
    responses((status = 200, description = "The user's tags", body = UserTagsView), CommonErrors),
    security(("bearer" = [])))]
pub async fn get(
    State(s): State<AppState>,
    ApiPath(user): ApiPath<UserId>,
) -> ApiResult<Json<UserTagsView>> {
    Ok(Json(s.user_tags(user).await?))
}
