//! Tags the platform shares with merchants. Every tag coupond holds for users is private to
//! the platform until it is shared here: a merchant's segment issuance counts only shared tags
//! (an unshared one is a tag nobody holds, so its answer is the same as for a tag that does
//! not exist), and a merchant's template audience may name only shared tags (422
//! `tag_not_shared`, whether or not anyone holds the tag). The platform uses every tag.
//!
//! Unsharing stops new segments and audiences naming the tag; a job already made keeps its
//! users, and a template whose audience already names it keeps that audience.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use coupond_app::pages::PageRequest;
use coupond_domain::Tag;
use serde::Deserialize;
use utoipa::IntoParams;

pub use coupond_app::shared_tags::SharedTagView;

use crate::error::ApiResult;
use crate::extract::{ApiPath, ApiQuery};
use crate::pagination::PageOf;
use crate::routes::CommonErrors;
use crate::state::AppState;

/// Share a tag with merchants.
///
/// Share a tag with merchants (platform): they may then name it in a segment issuance or a
/// template audience. Sharing a shared tag changes nothing. Whether anyone holds the tag does not
/// matter.
#[utoipa::path(operation_id = "share_tag", put, path = "/v1/tags/{tag}/shared", tag = "tags",
    params(("tag" = String, Path, description = "The tag")),
    responses((status = 200, description = "The tag, shared", body = SharedTagView), CommonErrors),
    security(("bearer" = [])))]
pub async fn share(
    State(s): State<AppState>,
    ApiPath(tag): ApiPath<Tag>,
) -> ApiResult<Json<SharedTagView>> {
    Ok(Json(s.share_tag(&tag).await?))
}

/// Stop sharing a tag.
///
/// Stop sharing a tag with merchants (platform; idempotent): new segments and audiences of
/// merchants treat it as private again.
#[utoipa::path(operation_id = "unshare_tag", delete, path = "/v1/tags/{tag}/shared", tag = "tags",
    params(("tag" = String, Path, description = "The tag")),
    responses((status = 204, description = "Not shared (any more)"), CommonErrors),
    security(("bearer" = [])))]
pub async fn unshare(
    State(s): State<AppState>,
    ApiPath(tag): ApiPath<Tag>,
) -> ApiResult<StatusCode> {
    s.unshare_tag(&tag).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The page of a list of shared tags.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SharedTagsQuery {
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1..=200 (default 50).
    pub limit: Option<u32>,
}

/// List shared tags.
///
/// The tags the platform shares with merchants, by tag.
#[utoipa::path(operation_id = "list_shared_tags", get, path = "/v1/tags/shared", tag = "tags",
    params(SharedTagsQuery),
    responses((status = 200, description = "A page of shared tags", body = PageOf<SharedTagView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<SharedTagsQuery>,
) -> ApiResult<Json<PageOf<SharedTagView>>> {
    let page = PageRequest {
        cursor: q.cursor,
        limit: q.limit,
    };
    Ok(Json(s.shared_tags(page).await?))
}
