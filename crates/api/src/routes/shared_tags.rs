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
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use coupond_domain::{Tag, Timestamp};
use coupond_store::SharedTag;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiPath, ApiQuery};
use crate::pagination::{self, PageOf};
use crate::routes::CommonErrors;
use crate::state::AppState;

/// A tag shared with merchants.
#[derive(Debug, Serialize, ToSchema)]
pub struct SharedTagView {
    #[schema(value_type = String, example = "churn-risk")]
    pub tag: Tag,
    /// When it was shared (sharing it again keeps this).
    pub shared_at: Timestamp,
}

impl From<SharedTag> for SharedTagView {
    fn from(t: SharedTag) -> Self {
        SharedTagView {
            tag: t.tag,
            shared_at: t.shared_at,
        }
    }
}

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
    let shared = coupond_engine::user_tags::share(s.store(), &tag, s.now()).await?;
    Ok(Json(shared.into()))
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
    coupond_engine::user_tags::unshare(s.store(), &tag, s.now()).await?;
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
    // The limit is checked as on every list; the cursor is a tag, not an id.
    let limit = pagination::page(None, q.limit, s.settings())?.limit;
    let after = q.cursor.as_deref().map(decode_cursor).transpose()?;
    let mut rows = s.store().shared_tags(after.as_ref(), limit).await?;
    let wanted = (limit - 1) as usize;
    let more = rows.len() > wanted;
    rows.truncate(wanted);
    let next_cursor = more
        .then(|| rows.last().map(|t| encode_cursor(&t.tag)))
        .flatten();
    Ok(Json(PageOf {
        items: rows.into_iter().map(Into::into).collect(),
        next_cursor,
    }))
}

fn encode_cursor(tag: &Tag) -> String {
    URL_SAFE_NO_PAD.encode(format!("tag:{}", tag.as_str()))
}

/// The tag of a cursor [`encode_cursor`] wrote; 400 `invalid_query` naming `cursor` for any
/// other text.
fn decode_cursor(cursor: &str) -> ApiResult<Tag> {
    let tag = (cursor.len() <= 100)
        .then(|| URL_SAFE_NO_PAD.decode(cursor.as_bytes()).ok())
        .flatten()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|t| Tag::parse(t.strip_prefix("tag:")?).ok())
        .filter(|t| encode_cursor(t) == cursor);
    tag.ok_or_else(|| {
        ApiError::bad_request(
            "invalid_query",
            Some("cursor"),
            "cursor is not one this API issued",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let tag = Tag::parse("city:1").unwrap();
        assert_eq!(decode_cursor(&encode_cursor(&tag)).unwrap(), tag);
        for bad in ["", "not-a-cursor", &URL_SAFE_NO_PAD.encode("tag:Not A Tag")] {
            assert!(decode_cursor(bad).is_err(), "{bad}");
        }
        assert!(decode_cursor(&URL_SAFE_NO_PAD.encode("id:5")).is_err());
    }
}
