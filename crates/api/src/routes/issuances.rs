//! Bulk issuance: a merchant (or the platform) issues coupons of a template to a list of users,
//! given in the request (answered when done) or uploaded as a file (answered at once with the
//! job; the worker issues in the background).

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use coupond_app::records::Issuance;
use coupond_domain::{Template, TemplateId, Timestamp};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::{IntoParams, ToSchema};

use coupond_app::issuance::IssuanceRequest;
use coupond_app::RetryKey;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiPath, ApiQuery};
use crate::idempotency;
use crate::pagination::{self, PageOf};
use crate::routes::{BodyErrors, CommonErrors, ConflictError, RateLimitedError};
use crate::state::AppState;

mod parse;

use parse::{parse_json_ask, JsonAsk, LineParser};
pub use parse::{IssuanceBody, MAX_JSON_BYTES, MAX_JSON_USERS, MAX_LINES};

/// A line that is not a user id.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct InvalidLineView {
    /// 1-based line number (index in `user_ids` + 1 for JSON).
    pub line: u64,
    pub text: String,
}

/// A bulk issuance job.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
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
    /// Coupons issued per second from start to finish (or to now while it runs), to a
    /// tenth. Absent where there is no time to measure it by: a job not started yet, or one
    /// that did its work in the instant it started (a `user_ids` job answered done, say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_second: Option<f64>,
}

impl IssuanceView {
    /// The view of a job at `now`.
    pub fn new(j: Issuance, now: Timestamp) -> Self {
        let rate_per_second = j.started_at.and_then(|start| {
            let end = j.finished_at.unwrap_or(now);
            let secs = (end.unix_micros() - start.unix_micros()) as f64 / 1e6;
            (secs > 0.0).then(|| (j.issued as f64 / secs * 10.0).round() / 10.0)
        });
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

/// How the users are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// `application/json` with `user_ids`: answered when done.
    Json,
    /// `text/csv` or `text/plain`, a user per line: answered at once with the job.
    Lines,
}

impl Form {
    fn of(headers: &HeaderMap) -> ApiResult<Form> {
        let media = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match media.as_str() {
            "application/json" => Ok(Form::Json),
            "text/csv" | "text/plain" => Ok(Form::Lines),
            _ => Err(ApiError::UnsupportedMediaType),
        }
    }
}

/// Reads the body as it streams in: JSON whole (at most [`MAX_JSON_BYTES`], and never more than
/// an upload may be), an upload line by
/// line (at most `max_upload_bytes`, never held whole). Returns the users and the SHA-256 of
/// the bytes (what an `Idempotency-Key` is bound to).
async fn read_users(body: Body, form: Form, max_upload: usize) -> ApiResult<(JsonAsk, [u8; 32])> {
    let limit = match form {
        Form::Json => MAX_JSON_BYTES.min(max_upload),
        Form::Lines => max_upload,
    };
    let mut hash = Sha256::new();
    let mut json = Vec::new();
    let mut lines = LineParser::new(MAX_LINES);
    let mut read = 0usize;
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|_| ApiError::bad_request("invalid_body", None, "unreadable body"))?;
        read += chunk.len();
        if read > limit {
            return Err(ApiError::PayloadTooLarge);
        }
        hash.update(&chunk);
        match form {
            Form::Json => json.extend_from_slice(&chunk),
            Form::Lines => lines.feed(&chunk)?,
        }
    }
    let parsed = match form {
        Form::Json => parse_json_ask(&json)?,
        Form::Lines => JsonAsk::Users(lines.finish()?),
    };
    Ok((parsed, hash.finalize().into()))
}

/// Issue coupons to many users.
///
/// Issue coupons of a template to many users, with the same rules as claims (stock, per-user
/// limit, audience; the template must be claimable while the job runs), each user at most once.
/// `application/json` with `user_ids` (up to 10,000, a body of up to 1 MiB): answered 201 when
/// done. `application/json` with `segment` (`{"any": ["vip"]}`: every user holding any of the tags
/// coupond holds for them, up to 1,000,000, taken when the job is made): answered 202 with the
/// job, issued in the background; for a merchant only the tags the platform shares count (`PUT
/// /v1/tags/{tag}/shared`: any other tag is one nobody holds); `{"any": ["vip"],
/// "active_within_days": 30}` keeps only the users seen within 30 days (1 to 3650: their own
/// requests, or `POST /v1/users/{id}/seen`). `text/csv` or `text/plain` (one
/// user id per line, or CSV with the id first; up to 1,000,000 lines and `max_upload_bytes`):
/// answered 202 with the job at once, issued in the background, resumable after a crash; poll `GET
/// /v1/issuances/{id}`. An owner (the template's merchant, or the platform) may have at most
/// `max_queued_issuance_per_owner` users waiting in open jobs: past it, 409 `queue_full` until
/// earlier jobs finish.  The caller's right to the template is checked before any of the body is
/// read, and at most `max_concurrent_uploads` bodies are read at once (429 `too_many_uploads` with
/// Retry-After past it); uploads are parsed as they stream in. With an `Idempotency-Key`, a retry
/// of the same body answers the job it made (`idempotent-replayed: true`, its progress as of now);
/// the key with another body is 422 `idempotency_key_reused`.
#[utoipa::path(operation_id = "create_issuance", post, path = "/v1/templates/{id}/issuances", tag = "issuances",
    params(("id" = i64, Path, description = "Template id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes retries safe: 1 to 255 visible ASCII characters")),
    request_body(content = IssuanceBody, description = "JSON, or a text/csv or text/plain upload"),
    responses((status = 201, description = "Done", body = IssuanceView),
        (status = 202, description = "Accepted; being issued", body = IssuanceView),
        CommonErrors, BodyErrors, ConflictError, RateLimitedError),
    security(("bearer" = [])))]
pub async fn create(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    // Everything that needs no body comes first: who may, which template, what form.
    let template = s.issuable_template(&p, id).await?;
    let form = Form::of(&headers)?;
    let retry = idempotency::retry_key(&headers, &p)?;
    // Held until the job is stored: the parsed list is in memory until then.
    let _permit = s
        .upload_permit(&p.scope())
        .ok_or(ApiError::TooManyUploads)?;
    let (job, replayed, background) = start(&s, &p, template, body, form, retry).await?;
    let location = [(header::LOCATION, format!("/v1/issuances/{}", job.id))];
    let status = if background {
        StatusCode::ACCEPTED
    } else {
        StatusCode::CREATED
    };
    let mut res = (status, location, Json(IssuanceView::new(job, s.now()))).into_response();
    res.headers_mut().insert(
        "idempotent-replayed",
        HeaderValue::from_static(if replayed { "true" } else { "false" }),
    );
    Ok(res)
}

/// Issues `template`'s coupons to the users of an upload (a user per line), read from `body`
/// as it streams in (at most `max_upload_bytes`); answered at once with the job, which the
/// worker runs in the background. The console's upload form passes its file through here, so
/// a file is read by the same rules whichever door it came in by. The caller holds the upload
/// permit (`AppState::upload_permit`) and may see `template`.
pub async fn issue_upload(
    s: &AppState,
    p: &Principal,
    template: Template,
    body: Body,
) -> ApiResult<Issuance> {
    let (job, _, _) = start(s, p, template, body, Form::Lines, None).await?;
    Ok(job)
}

/// Reads the users of `body` (as `form` says) and starts the job; with whether it answered an
/// earlier request under `retry`, and whether it runs in the background.
async fn start(
    s: &AppState,
    p: &Principal,
    template: Template,
    body: Body,
    form: Form,
    retry: Option<RetryKey>,
) -> ApiResult<(Issuance, bool, bool)> {
    let id = template.id;
    let (ask, digest) = read_users(body, form, s.settings().max_upload_bytes).await?;
    let (recipients, field, background) = match ask {
        JsonAsk::Users(list) if form == Form::Json => (list.into_recipients(), "user_ids", false),
        JsonAsk::Users(list) => (list.into_recipients(), "body", true),
        JsonAsk::Segment(seg) => (s.segment_users(p, &seg).await?, "segment.any", true),
    };
    if recipients.users.is_empty() {
        return Err(ApiError::invalid(
            "no_users",
            field,
            "no valid user id was given",
        ));
    }
    let req = IssuanceRequest {
        template,
        recipients,
        background,
        retry,
        asked: format!("{id}\n{form:?}\n{}", idempotency::hex(&digest)),
    };
    let (job, replayed) = s.start_issuance(p, req).await?;
    Ok((job, replayed, background))
}

/// Read an issuance job.
///
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
    let job = s.issuance(&p, id).await?;
    Ok(Json(IssuanceView::new(job, s.now())))
}

/// Which template's jobs to list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// The template whose jobs to list (required).
    #[param(value_type = i64)]
    pub template_id: Option<TemplateId>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1..=200 (default 50).
    pub limit: Option<u32>,
}

/// List a template's issuance jobs.
///
/// A template's bulk issuance jobs, oldest first, to find a job again (the platform; the merchant
/// owning the template).
#[utoipa::path(operation_id = "list_issuances", get, path = "/v1/issuances", tag = "issuances", params(ListQuery),
    responses((status = 200, description = "A page of jobs", body = PageOf<IssuanceView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn list(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<PageOf<IssuanceView>>> {
    let page = pagination::page(q.cursor.as_deref(), q.limit, s.settings())?;
    let template = q.template_id.ok_or_else(|| {
        ApiError::bad_request(
            "invalid_query",
            Some("template_id"),
            "template_id is required",
        )
    })?;
    let rows = s.issuances(&p, template, page).await?;
    let now = s.now();
    Ok(Json(pagination::finish(
        rows,
        page,
        |j| j.id,
        |j| IssuanceView::new(j, now),
    )))
}
