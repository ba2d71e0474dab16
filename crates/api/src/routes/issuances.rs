//! Bulk issuance: a merchant (or the platform) issues coupons of a template to a list of users,
//! given in the request (answered when done) or uploaded as a file (answered at once with the
//! job; the worker issues in the background).

use std::collections::HashSet;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use coupond_domain::{TemplateId, TemplateStatus, Timestamp, UserId};
use coupond_store::{InvalidLine, Issuance, NewIssuance};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{parse_json, ApiPath};
use crate::routes::templates::load_visible;
use crate::routes::{BodyErrors, CommonErrors, ConflictError};
use crate::state::AppState;

/// Most users in a JSON body (answered when done).
pub const MAX_JSON_USERS: usize = 10_000;
/// Most lines in an uploaded file.
pub const MAX_LINES: usize = 1_000_000;
/// Invalid lines reported by number.
const REPORTED: usize = 100;

/// A JSON issuance: the users, answered once all are handled.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IssuanceBody {
    /// 1 to 10,000 user ids.
    #[schema(value_type = Vec<String>)]
    #[serde(deserialize_with = "at_most_json_users")]
    pub user_ids: Vec<String>,
}

/// Reads the first `MAX_JSON_USERS + 1` ids and skips the rest unread, so that an oversized
/// list (the route takes bodies up to the upload limit) is refused without being held in
/// memory first.
fn at_most_json_users<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    struct Ids;
    impl<'de> serde::de::Visitor<'de> for Ids {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a sequence of user ids")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut ids = Vec::new();
            while ids.len() <= MAX_JSON_USERS {
                match seq.next_element()? {
                    Some(id) => ids.push(id),
                    None => return Ok(ids),
                }
            }
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(ids)
        }
    }
    d.deserialize_seq(Ids)
}

/// A line that is not a user id.
#[derive(Debug, Serialize, ToSchema)]
pub struct InvalidLineView {
    /// 1-based line number (index in `user_ids` + 1 for JSON).
    pub line: u64,
    pub text: String,
}

/// A bulk issuance job.
#[derive(Debug, Serialize, ToSchema)]
pub struct IssuanceView {
    pub id: i64,
    pub template_id: TemplateId,
    /// `pending`, `running`, `done` or `failed` (see `error`).
    pub state: String,
    /// Distinct valid users to issue to.
    pub requested: u64,
    /// Users handled so far.
    pub handled: u64,
    pub issued: u64,
    /// Users who already held the template's per-user limit.
    pub skipped: u64,
    /// Users left without a coupon because the stock ran out.
    pub sold_out: u64,
    /// Users outside the template's audience.
    pub not_eligible: u64,
    /// Repeated lines (each user is issued to once).
    pub duplicates: u64,
    /// Lines that are not user ids; the first 100 are in `invalid_lines`.
    pub invalid: u64,
    pub invalid_lines: Vec<InvalidLineView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub created_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Timestamp>,
    /// Coupons issued per second from start to finish (or to now).
    pub rate_per_second: f64,
}

impl IssuanceView {
    fn new(j: Issuance, now: Timestamp) -> Self {
        let rate_per_second = match j.started_at {
            Some(start) => {
                let end = j.finished_at.unwrap_or(now);
                let secs = (end.unix_micros() - start.unix_micros()) as f64 / 1e6;
                if secs > 0.0 {
                    (j.issued as f64 / secs * 10.0).round() / 10.0
                } else {
                    0.0
                }
            }
            None => 0.0,
        };
        IssuanceView {
            id: j.id,
            template_id: j.template_id,
            state: j.state.as_str().to_owned(),
            requested: j.requested,
            handled: j.next_user,
            issued: j.issued,
            skipped: j.skipped,
            sold_out: j.sold_out,
            not_eligible: j.not_eligible,
            duplicates: j.duplicates,
            invalid: j.invalid,
            invalid_lines: j
                .invalid_lines
                .into_iter()
                .map(|l| InvalidLineView {
                    line: l.line,
                    text: l.text,
                })
                .collect(),
            error: j.error,
            created_at: j.created_at,
            started_at: j.started_at,
            finished_at: j.finished_at,
            rate_per_second,
        }
    }
}

/// Users parsed from a request: valid and distinct, in order, and what was left out.
#[derive(Debug, Default)]
struct Parsed {
    users: Vec<UserId>,
    duplicates: u64,
    invalid: u64,
    invalid_lines: Vec<InvalidLine>,
}

impl Parsed {
    fn take(&mut self, seen: &mut HashSet<String>, line: u64, text: &str) {
        match UserId::parse(text) {
            Ok(u) if seen.insert(u.as_str().to_owned()) => self.users.push(u),
            Ok(_) => self.duplicates += 1,
            Err(_) => {
                self.invalid += 1;
                if self.invalid_lines.len() < REPORTED {
                    self.invalid_lines.push(InvalidLine {
                        line,
                        text: text.chars().take(100).collect(),
                    });
                }
            }
        }
    }
}

/// A JSON issuance body: 1 to [`MAX_JSON_USERS`] ids.
fn parse_json_users(bytes: &[u8]) -> ApiResult<Parsed> {
    let b: IssuanceBody = parse_json(bytes)?;
    if b.user_ids.is_empty() || b.user_ids.len() > MAX_JSON_USERS {
        return Err(ApiError::invalid(
            "invalid_value",
            "user_ids",
            format!("1 to {MAX_JSON_USERS} user ids; upload a file for more"),
        ));
    }
    let mut parsed = Parsed::default();
    let mut seen = HashSet::new();
    for (i, u) in b.user_ids.iter().enumerate() {
        parsed.take(&mut seen, i as u64 + 1, u);
    }
    Ok(parsed)
}

/// One user id per line, or CSV whose first column is the user id (an optional `user_id`
/// header, optional double quotes). Blank lines are skipped; line numbers count them. At most
/// [`MAX_LINES`] lines that are not blank: reading stops at the next one.
fn parse_upload(bytes: &[u8]) -> ApiResult<Parsed> {
    parse_lines(bytes, MAX_LINES)
}

/// [`parse_upload`] with `max_lines` for [`MAX_LINES`].
fn parse_lines(bytes: &[u8], max_lines: usize) -> ApiResult<Parsed> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| ApiError::invalid("invalid_upload", "body", "the upload is not UTF-8 text"))?;
    let mut parsed = Parsed::default();
    let mut seen = HashSet::new();
    let mut lines = 0usize;
    for (i, raw) in text.lines().enumerate() {
        let first = raw
            .split(',')
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('"')
            .trim();
        if first.is_empty() || (i == 0 && first.eq_ignore_ascii_case("user_id")) {
            continue;
        }
        lines += 1;
        if lines > max_lines {
            return Err(ApiError::invalid(
                "too_many_lines",
                "body",
                format!("at most {max_lines} users per upload"),
            ));
        }
        parsed.take(&mut seen, i as u64 + 1, first);
    }
    Ok(parsed)
}

/// Issue coupons of a template to many users, with the same rules as claims (stock, per-user
/// limit, audience; the template must be claimable while the job runs), each user at most
/// once. `application/json` with `user_ids` (up to 10,000): answered 201 when done.
/// `text/csv` or `text/plain` (one user id per line, or CSV with the id first; up to 1,000,000
/// lines): answered 202 with the job at once, issued in the background, resumable after a
/// crash; poll `GET /v1/issuances/{id}`.
#[utoipa::path(operation_id = "create_issuance", post, path = "/v1/templates/{id}/issuances", tag = "issuances",
    params(("id" = i64, Path, description = "Template id")),
    request_body(content = IssuanceBody, description = "JSON, or a text/csv or text/plain upload"),
    responses((status = 201, description = "Done", body = IssuanceView),
        (status = 202, description = "Accepted; being issued", body = IssuanceView),
        CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn create(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Response> {
    let body = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge
        } else {
            ApiError::bad_request("invalid_body", None, "unreadable body")
        }
    })?;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let (parsed, in_request) = match content_type.as_str() {
        "application/json" => (parse_json_users(&body)?, true),
        "text/csv" | "text/plain" => (parse_upload(&body)?, false),
        _ => return Err(ApiError::UnsupportedMediaType),
    };
    if parsed.users.is_empty() {
        return Err(ApiError::invalid(
            "no_users",
            if in_request { "user_ids" } else { "body" },
            "no valid user id was given",
        ));
    }
    let t = load_visible(&s, &p, id).await?;
    // The upload's key goes into the job's row too: the idempotency layer records its answer
    // only after this commit, so a retry after a crash in between (once `idempotency_stale`
    // has passed) runs again and must find this job rather than start a second one.
    let key = crate::idempotency::key(&headers, &p, &format!("/v1/templates/{id}/issuances"), "")?;
    let now = s.now();
    if let st @ (TemplateStatus::Aborted | TemplateStatus::Expired | TemplateStatus::Ended) =
        t.status(now)
    {
        return Err(ApiError::conflict(
            "not_claimable",
            format!("the template is {}: it issues no more coupons", st.as_str()),
        ));
    }
    let job = s
        .store()
        .insert_issuance(
            &NewIssuance {
                template: id,
                actor: &p.actor(),
                users: &parsed.users,
                duplicates: parsed.duplicates,
                invalid: parsed.invalid,
                invalid_lines: &parsed.invalid_lines,
                key: key.as_ref().map(|k| k.key.as_str()),
            },
            now,
        )
        .await?;
    let location = [(header::LOCATION, format!("/v1/issuances/{}", job.id))];
    if in_request {
        let done = s.issuance_worker().finish(job.id).await?;
        Ok((
            StatusCode::CREATED,
            location,
            Json(IssuanceView::new(done, s.now())),
        )
            .into_response())
    } else {
        s.issuance_worker().wake();
        Ok((
            StatusCode::ACCEPTED,
            location,
            Json(IssuanceView::new(job, now)),
        )
            .into_response())
    }
}

/// A bulk issuance job and its progress (the platform; the merchant owning the template).
#[utoipa::path(operation_id = "get_issuance", get, path = "/v1/issuances/{id}", tag = "issuances",
    params(("id" = i64, Path, description = "Issuance id")),
    responses((status = 200, description = "The job", body = IssuanceView), CommonErrors),
    security(("bearer" = [])))]
pub async fn get(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<IssuanceView>> {
    let job = s.store().issuance(id).await?;
    load_visible(&s, &p, job.template_id).await?;
    Ok(Json(IssuanceView::new(job, s.now())))
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uploads_are_read_line_by_line_with_their_numbers() {
        let p =
            parse_upload(b"user_id,name\nu-1,Ann\n\n\"u-2\"\nu-1\nnot a user!\nu-3\r\n").unwrap();
        let users: Vec<&str> = p.users.iter().map(UserId::as_str).collect();
        assert_eq!(users, vec!["u-1", "u-2", "u-3"]);
        assert_eq!((p.duplicates, p.invalid), (1, 1));
        assert_eq!(
            p.invalid_lines,
            vec![InvalidLine {
                line: 6,
                text: "not a user!".into()
            }]
        );
        assert!(parse_upload(&[0xff, 0xfe]).is_err());
        let many = "u\n".repeat(5);
        assert_eq!(parse_upload(many.as_bytes()).unwrap().duplicates, 4);
    }
}
