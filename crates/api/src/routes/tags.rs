//! User tags coupond holds (`vip`, `new`, `city:1`) for segment issuance: one user's set, or
//! many `user_id,tag` pairs from a file. The platform and the order service write and read
//! them; merchants and users never see them.

use axum::body::Body;
use axum::extract::State;
use axum::Json;
use coupond_domain::tags::{tag_set, MAX_TAGS_PER_USER};
use coupond_domain::{Tag, UserId};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath};
use crate::routes::issuances::MAX_LINES;
use crate::routes::{BodyErrors, CommonErrors, RateLimitedError};
use crate::state::AppState;
use axum::Extension;

/// Pairs written per transaction by a bulk upload.
const CHUNK: usize = 1_000;
/// Invalid lines reported by number.
const REPORTED: usize = 100;

/// A user's tags.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserTags {
    /// 0 to 100 tags, each 1 to 64 characters of lowercase letters, digits and `_.:-`; sent
    /// in any order, answered sorted, each once.
    #[schema(value_type = Vec<String>, example = json!(["vip", "new"]))]
    pub tags: Vec<Tag>,
}

/// A user's tags, as stored.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserTagsView {
    #[schema(value_type = String)]
    pub user_id: UserId,
    #[schema(value_type = Vec<String>)]
    pub tags: Vec<Tag>,
}

/// Replace a user's tags (platform, service).
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
    let tags = tag_set("tags", &body.tags, 0, MAX_TAGS_PER_USER)?;
    s.store().put_user_tags(&user, &tags).await?;
    Ok(Json(UserTagsView {
        user_id: user,
        tags,
    }))
}

/// A user's tags (platform, service).
#[utoipa::path(operation_id = "get_user_tags", get, path = "/v1/users/{id}/tags", tag = "tags",
    params(("id" = String, Path, description = "User id")),
    responses((status = 200, description = "The user's tags", body = UserTagsView), CommonErrors),
    security(("bearer" = [])))]
pub async fn get(
    State(s): State<AppState>,
    ApiPath(user): ApiPath<UserId>,
) -> ApiResult<Json<UserTagsView>> {
    let tags = s.store().user_tags(&user).await?;
    Ok(Json(UserTagsView {
        user_id: user,
        tags,
    }))
}

/// What a bulk tagging did.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct BulkTagsView {
    /// Lines with a pair on them.
    pub lines: u64,
    pub added: u64,
    /// Pairs the user already had (or repeated in the file).
    pub present: u64,
    /// Pairs refused because the user already holds 100 tags.
    pub over_limit: u64,
    /// Lines that are not `user_id,tag`; the first 100 are in `invalid_lines`.
    pub invalid: u64,
    #[schema(value_type = Vec<Object>)]
    pub invalid_lines: Vec<InvalidLineView>,
}

/// A line that is not a pair.
#[derive(Debug, Serialize, ToSchema)]
pub struct InvalidLineView {
    pub line: u64,
    pub text: String,
}

/// Add tags to many users (platform, service): a `text/csv` upload of `user_id,tag` lines (an
/// optional `user_id,tag` header; up to 1,000,000 lines and `max_upload_bytes`). The whole
/// file is read and checked first; then the pairs are added 1,000 per transaction, keeping
/// what users already hold. Adding is idempotent, so a failed upload is safely sent again. A
/// file without one valid pair is 422 `no_pairs`.
#[utoipa::path(operation_id = "bulk_user_tags", post, path = "/v1/user-tags", tag = "tags",
    request_body(content = String, content_type = "text/csv", description = "user_id,tag lines"),
    responses((status = 200, description = "What was added", body = BulkTagsView),
        CommonErrors, BodyErrors, RateLimitedError),
    security(("bearer" = [])))]
pub async fn bulk(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    headers: axum::http::HeaderMap,
    body: Body,
) -> ApiResult<Json<BulkTagsView>> {
    let media = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = media.split(';').next().unwrap_or("").trim();
    if !media.eq_ignore_ascii_case("text/csv") && !media.eq_ignore_ascii_case("text/plain") {
        return Err(ApiError::UnsupportedMediaType);
    }
    let _permit = s
        .upload_permit(&p.scope())
        .ok_or(ApiError::TooManyUploads)?;
    let (pairs, mut view) = read_pairs(body, s.settings().max_upload_bytes).await?;
    if pairs.is_empty() {
        return Err(ApiError::invalid(
            "no_pairs",
            "body",
            "no line is a user_id,tag pair",
        ));
    }
    for chunk in pairs.chunks(CHUNK) {
        let done = s.store().add_user_tags(chunk).await?;
        view.added += done.added;
        view.present += done.present;
        view.over_limit += done.over_limit;
    }
    Ok(Json(view))
}

/// Reads the upload (at most `max` bytes) and parses its lines.
async fn read_pairs(body: Body, max: usize) -> ApiResult<(Vec<(UserId, Tag)>, BulkTagsView)> {
    let mut bytes = Vec::new();
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|_| ApiError::bad_request("invalid_body", None, "unreadable body"))?;
        if bytes.len() + chunk.len() > max {
            return Err(ApiError::PayloadTooLarge);
        }
        bytes.extend_from_slice(&chunk);
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut pairs = Vec::new();
    let mut view = BulkTagsView::default();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || (i == 0 && line.eq_ignore_ascii_case("user_id,tag")) {
            continue;
        }
        view.lines += 1;
        if view.lines as usize > MAX_LINES {
            return Err(ApiError::invalid(
                "too_many_lines",
                "body",
                format!("at most {MAX_LINES} lines"),
            ));
        }
        match pair(line) {
            Some(p) => pairs.push(p),
            None => {
                view.invalid += 1;
                if view.invalid_lines.len() < REPORTED {
                    view.invalid_lines.push(InvalidLineView {
                        line: i as u64 + 1,
                        text: line.chars().take(100).collect(),
                    });
                }
            }
        }
    }
    Ok((pairs, view))
}

/// `user_id,tag`, either optionally in double quotes.
fn pair(line: &str) -> Option<(UserId, Tag)> {
    let (u, t) = line.split_once(',')?;
    let unquote = |s: &str| {
        let s = s.trim();
        s.strip_prefix('"')
            .and_then(|x| x.strip_suffix('"'))
            .unwrap_or(s)
            .to_owned()
    };
    Some((
        UserId::parse(&unquote(u)).ok()?,
        Tag::parse(&unquote(t)).ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_pairs() {
        assert!(pair("u-1,vip").is_some());
        assert!(pair("\"u-1\", \"vip\"").is_some());
        for bad in ["u-1", "u-1,VIP", "u 1,vip", ",vip", "u-1,"] {
            assert!(pair(bad).is_none(), "{bad:?}");
        }
    }
}
