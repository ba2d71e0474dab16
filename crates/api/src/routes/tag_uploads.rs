//! Bulk tag uploads: a file of `user_id,tag` lines, checked whole when it arrives, stored as
//! a job and added in the background by the tag worker, a chunk per transaction (resumable
//! after a crash); its progress at `GET /v1/user-tags/{id}`. Platform and order service.

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use coupond_app::pages::PageRequest;
use coupond_app::records::{InvalidLine, IssuanceKey, NewTagUpload, TagUpload};
use coupond_domain::csv::LineSplitter;
use coupond_domain::{Tag, Timestamp, UserId};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiPath, ApiQuery};
use crate::idempotency;
use crate::pagination::PageOf;
use crate::routes::issuances::MAX_LINES;
use crate::routes::{BodyErrors, CommonErrors, RateLimitedError};
use crate::state::AppState;

/// Invalid lines reported by number.
const REPORTED: usize = 100;
const ROUTE: &str = "POST /v1/user-tags";

/// A bulk tag upload and its progress.
#[derive(Debug, Serialize, ToSchema)]
pub struct TagUploadView {
    pub id: i64,
    /// `pending`, `running` or `done`.
    pub state: String,
    /// Lines with something on them (the header and blank lines aside).
    pub lines: u64,
    /// Valid pairs to add.
    pub requested: u64,
    /// Pairs handled so far.
    pub handled: u64,
    pub added: u64,
    /// Pairs the user already had (or repeated in the file).
    pub present: u64,
    /// Pairs refused because the user already holds 100 tags.
    pub over_limit: u64,
    /// Lines that are not `user_id,tag`; the first 100 are in `invalid_lines`.
    pub invalid: u64,
    #[schema(value_type = Vec<Object>)]
    pub invalid_lines: Vec<InvalidLine>,
    pub created_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Timestamp>,
}

impl From<TagUpload> for TagUploadView {
    fn from(u: TagUpload) -> Self {
        TagUploadView {
            id: u.id,
            state: u.state.as_str().to_owned(),
            lines: u.lines,
            requested: u.requested,
            handled: u.next_pair,
            added: u.done.added,
            present: u.done.present,
            over_limit: u.done.over_limit,
            invalid: u.invalid,
            invalid_lines: u.invalid_lines,
            created_at: u.created_at,
            started_at: u.started_at,
            finished_at: u.finished_at,
        }
    }
}

/// Upload user tags.
///
/// Add tags to many users (platform, service): a `text/csv` upload of `user_id,tag` lines (an
/// optional `user_id,tag` header; up to 1,000,000 lines and `max_upload_bytes`). The whole file is
/// read and checked first (a file without one valid pair is 422 `no_pairs`); then it is answered
/// 202 with the job, and the tag worker adds the pairs 1,000 per transaction, keeping what users
/// already hold, resumable after a crash: poll `GET /v1/user-tags/{id}`. With an
/// `Idempotency-Key`, a retry of the same file answers the job it made (`idempotent-replayed:
/// true`); the key with another file is 422 `idempotency_key_reused`.
#[utoipa::path(operation_id = "bulk_user_tags", post, path = "/v1/user-tags", tag = "tags",
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes retries safe: 1 to 255 visible ASCII characters")),
    request_body(content = String, content_type = "text/csv", description = "user_id,tag lines"),
    responses((status = 202, description = "Accepted; being added", body = TagUploadView),
        CommonErrors, BodyErrors, RateLimitedError),
    security(("bearer" = [])))]
pub async fn create(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    csv_only(&headers)?;
    idempotency::key(&headers, &p, ROUTE, "")?;
    // Held until the job is stored: the parsed pairs are in memory until then.
    let _permit = s
        .upload_permit(&p.scope())
        .ok_or(ApiError::TooManyUploads)?;
    let (file, digest) = read_file(body, s.settings().max_upload_bytes).await?;
    if file.pairs.is_empty() {
        return Err(ApiError::invalid(
            "no_pairs",
            "body",
            "no line is a user_id,tag pair",
        ));
    }
    let key = idempotency::key(&headers, &p, ROUTE, &idempotency::hex(&digest))?;
    let new = NewTagUpload {
        actor: &p.actor(),
        pairs: &file.pairs,
        lines: file.lines,
        invalid: file.invalid,
        invalid_lines: &file.invalid_lines,
        key: key.as_ref().map(IssuanceKey::from),
    };
    let (job, created) = s.start_tag_upload(&new).await?;
    let location = [(header::LOCATION, format!("/v1/user-tags/{}", job.id))];
    let mut res = (
        StatusCode::ACCEPTED,
        location,
        Json(TagUploadView::from(job)),
    )
        .into_response();
    res.headers_mut().insert(
        "idempotent-replayed",
        HeaderValue::from_static(if created { "false" } else { "true" }),
    );
    Ok(res)
}

/// Read a tag upload.
///
/// A bulk tag upload and its progress: lines read, pairs added, invalid lines.
#[utoipa::path(operation_id = "get_tag_upload", get, path = "/v1/user-tags/{id}", tag = "tags",
    params(("id" = i64, Path, description = "Upload id")),
    responses((status = 200, description = "The upload", body = TagUploadView), CommonErrors),
    security(("bearer" = [])))]
pub async fn get(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<TagUploadView>> {
    Ok(Json(s.tag_upload(id).await?.into()))
}

/// Which page of uploads.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1..=200 (default 50).
    pub limit: Option<u32>,
}

/// List tag uploads.
///
/// Bulk tag uploads, oldest first, to find one again.
#[utoipa::path(operation_id = "list_tag_uploads", get, path = "/v1/user-tags", tag = "tags", params(ListQuery),
    responses((status = 200, description = "A page of uploads", body = PageOf<TagUploadView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<PageOf<TagUploadView>>> {
    let page = PageRequest {
        cursor: q.cursor,
        limit: q.limit,
    };
    let listed = s.tag_uploads(page).await?;
    Ok(Json(PageOf {
        items: listed.items.into_iter().map(Into::into).collect(),
        next_cursor: listed.next_cursor,
    }))
}

fn csv_only(headers: &HeaderMap) -> ApiResult<()> {
    let media = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = media.split(';').next().unwrap_or("").trim();
    if media.eq_ignore_ascii_case("text/csv") || media.eq_ignore_ascii_case("text/plain") {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType)
    }
}

/// A file as parsed.
#[derive(Debug, Default)]
struct File {
    pairs: Vec<(UserId, Tag)>,
    lines: u64,
    invalid: u64,
    invalid_lines: Vec<InvalidLine>,
}

/// Reads the upload (at most `max` bytes) and parses its lines; with the SHA-256 of its bytes
/// (what an `Idempotency-Key` is bound to).
async fn read_file(body: Body, max: usize) -> ApiResult<(File, [u8; 32])> {
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
    let digest = Sha256::digest(&bytes).into();
    Ok((File::parse(&bytes)?, digest))
}

impl File {
    /// The lines of a whole upload, cut by [`LineSplitter`] (a byte-order mark dropped;
    /// `\r\n`, `\n` and a lone `\r` each end a line). The file is in memory already, so its
    /// lines are held whole too.
    fn parse(bytes: &[u8]) -> ApiResult<File> {
        let mut file = File::default();
        let mut lines = LineSplitter::new(bytes.len());
        lines.feed(bytes, |n, line| file.line(n, line))?;
        lines.finish(|n, line| file.line(n, line))?;
        Ok(file)
    }

    /// Reads line `n` of the upload: blank lines and a `user_id,tag` header on line 1 are
    /// skipped, a pair kept, anything else counted invalid.
    fn line(&mut self, n: u64, raw: &[u8]) -> ApiResult<()> {
        let text = String::from_utf8_lossy(raw);
        let line = text.trim();
        if line.is_empty() || (n == 1 && line.eq_ignore_ascii_case("user_id,tag")) {
            return Ok(());
        }
        self.lines += 1;
        if self.lines as usize > MAX_LINES {
            return Err(ApiError::invalid(
                "too_many_lines",
                "body",
                format!("at most {MAX_LINES} lines"),
            ));
        }
        match pair(line) {
            Some(p) => self.pairs.push(p),
            None => {
                self.invalid += 1;
                if self.invalid_lines.len() < REPORTED {
                    self.invalid_lines.push(InvalidLine {
                        line: n,
                        text: line.chars().take(100).collect(),
                    });
                }
            }
        }
        Ok(())
    }
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

    /// The pairs of a whole upload.
    fn pairs_of(upload: &str) -> (Vec<String>, u64) {
        let file = File::parse(upload.as_bytes()).unwrap();
        let pairs = file.pairs.iter().map(|(u, t)| format!("{u}:{t}"));
        (pairs.collect(), file.invalid)
    }

    #[test]
    fn a_byte_order_mark_is_dropped_and_a_lone_cr_ends_a_line() {
        for upload in [
            "\u{feff}u-1,vip\nu-2,new",
            "\u{feff}user_id,tag\r\nu-1,vip\r\nu-2,new\r\n",
            "u-1,vip\ru-2,new\r",
        ] {
            assert_eq!(
                pairs_of(upload),
                (vec!["u-1:vip".to_owned(), "u-2:new".to_owned()], 0),
                "{upload:?}"
            );
        }
    }

    #[test]
    fn lines_are_pairs() {
        assert!(pair("u-1,vip").is_some());
        assert!(pair("\"u-1\", \"vip\"").is_some());
        for bad in ["u-1", "u-1,VIP", "u 1,vip", ",vip", "u-1,"] {
            assert!(pair(bad).is_none(), "{bad:?}");
        }
    }
}
