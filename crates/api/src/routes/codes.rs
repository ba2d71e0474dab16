//! Promotion codes: a template's shared code, batches of generated single-use codes (and
//! their CSV), and redemption by users.

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use coupond_domain::{CodeBatchDraft, CodeBatchSpec, TemplateId};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use coupond_app::codes::StartedBatch;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery, ClientIp, OptionalJson};
use crate::idempotency;
use crate::pagination::{self, PageOf};
use crate::routes::claims::{created, ClaimBody, Created};
use crate::routes::{BodyErrors, CommonErrors, ConflictError, RateLimitedError};
use crate::state::AppState;
use crate::views::{CodeBatchView, CouponView, SharedCodeView};
use coupond_app::claims::RedeemRequest;

/// The body of `PUT /v1/templates/{id}/code`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SharedCodeBody {
    /// 4 to 32 letters and digits (stored upper case, without spaces or dashes), unique on
    /// the platform, and not of the form of a generated code.
    pub code: String,
}

/// Set a shared code.
///
/// Set the template's shared code (replacing any it had): anyone holding it may redeem it, within
/// the stock and the per-user limit. A code another template uses (whose, it does not say) is 409
/// `code_taken`. Each merchant may try `code_set_rate_per_merchant` codes per second (429 with
/// Retry-After), so the route is no way to learn other merchants' codes.
#[utoipa::path(operation_id = "set_shared_code", put, path = "/v1/templates/{id}/code", tag = "codes",
    params(("id" = i64, Path, description = "Template id")),
    request_body = SharedCodeBody,
    responses((status = 200, description = "The code", body = SharedCodeView), CommonErrors, BodyErrors, ConflictError, RateLimitedError),
    security(("bearer" = [])))]
pub async fn set_shared(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
    ApiJson(body): ApiJson<SharedCodeBody>,
) -> ApiResult<Json<SharedCodeView>> {
    let code = s.set_shared_code(&p, id, &body.code).await?;
    Ok(Json(SharedCodeView {
        template_id: id,
        code: code.as_str().to_owned(),
    }))
}

/// Read the shared code.
///
/// The template's shared code (404 when it has none).
#[utoipa::path(operation_id = "get_shared_code", get, path = "/v1/templates/{id}/code", tag = "codes",
    params(("id" = i64, Path, description = "Template id")),
    responses((status = 200, description = "The code", body = SharedCodeView), CommonErrors),
    security(("bearer" = [])))]
pub async fn get_shared(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
) -> ApiResult<Json<SharedCodeView>> {
    let code = s.shared_code(&p, id).await?;
    Ok(Json(SharedCodeView {
        template_id: id,
        code,
    }))
}

/// Remove the shared code.
///
/// Remove the template's shared code; coupons already redeemed with it stay with their users.
#[utoipa::path(operation_id = "remove_shared_code", delete, path = "/v1/templates/{id}/code", tag = "codes",
    params(("id" = i64, Path, description = "Template id")),
    responses((status = 204, description = "Removed (or there was none)"), CommonErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn remove_shared(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
) -> ApiResult<StatusCode> {
    s.remove_shared_code(&p, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Generate single-use codes.
///
/// Generate single-use codes for a template: `count` codes of `prefix`, `length` random characters
/// of `23456789ABCDEFGHJKMNPQRSTUVWXYZ` (no look-alikes) and a check character that catches any
/// one mistyped character or swapped pair. Up to `code_batch_sync_max` codes are generated before
/// the answer (201); a larger batch is answered 202 at once and generated in the background (poll
/// `GET /v1/code-batches/{id}`). Codes do not reserve stock: each redemption claims a coupon like
/// any claim. An owner (a merchant, or the platform) may have at most `max_queued_codes_per_owner`
/// codes waiting to be generated: past it, 409 `queue_full` until earlier batches finish.
#[utoipa::path(operation_id = "create_code_batch", post, path = "/v1/templates/{id}/codes", tag = "codes",
    params(("id" = i64, Path, description = "Template id")),
    request_body = CodeBatchDraft,
    responses((status = 201, description = "Generated", body = CodeBatchView),
        (status = 202, description = "Being generated", body = CodeBatchView),
        CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn create_batch(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
    ApiJson(draft): ApiJson<CodeBatchDraft>,
) -> ApiResult<Response> {
    let spec = CodeBatchSpec::try_from(draft)?;
    let StartedBatch { batch, filled } = s.start_code_batch(&p, id, &spec).await?;
    let location = format!("/v1/code-batches/{}", batch.id);
    let status = if filled {
        StatusCode::CREATED
    } else {
        StatusCode::ACCEPTED
    };
    Ok((
        status,
        [(header::LOCATION, location)],
        Json(CodeBatchView::new(batch)),
    )
        .into_response())
}

/// Read a code batch.
///
/// A batch of single-use codes: how far its generation is, and where to download its codes once
/// done.
#[utoipa::path(operation_id = "get_code_batch", get, path = "/v1/code-batches/{id}", tag = "codes",
    params(("id" = i64, Path, description = "Batch id")),
    responses((status = 200, description = "The batch", body = CodeBatchView), CommonErrors),
    security(("bearer" = [])))]
pub async fn get_batch(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<CodeBatchView>> {
    Ok(Json(CodeBatchView::new(s.code_batch(&p, id).await?)))
}

/// Paging for a template's batches.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct BatchesQuery {
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1..=200 (default 50).
    pub limit: Option<u32>,
}

/// List a template's code batches.
///
/// A template's batches of codes, oldest first, to find a job again (platform; the owning
/// merchant).
#[utoipa::path(operation_id = "list_code_batches", get, path = "/v1/templates/{id}/code-batches", tag = "codes",
    params(("id" = i64, Path, description = "Template id"), BatchesQuery),
    responses((status = 200, description = "A page of batches", body = PageOf<CodeBatchView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn list_batches(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
    ApiQuery(q): ApiQuery<BatchesQuery>,
) -> ApiResult<Json<PageOf<CodeBatchView>>> {
    let page = pagination::page(q.cursor.as_deref(), q.limit, s.settings())?;
    let rows = s.code_batches(&p, id, page).await?;
    Ok(Json(pagination::finish(
        rows,
        page,
        |b| b.id,
        CodeBatchView::new,
    )))
}

/// Download a batch's codes.
///
/// The batch's codes as CSV (`code,redeemed_by,redeemed_at`), streamed in code order. While the
/// batch is pending, 409 `batch_pending`.
#[utoipa::path(operation_id = "download_codes", get, path = "/v1/code-batches/{id}/codes", tag = "codes",
    params(("id" = i64, Path, description = "Batch id")),
    responses((status = 200, description = "The codes", content_type = "text/csv", body = String), CommonErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn download(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Response> {
    let pieces = s.batch_codes_csv(&p, id).await?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"codes-{id}.csv\""),
            ),
        ],
        Body::from_stream(pieces),
    )
        .into_response())
}

/// Redeem a code.
///
/// Redeem a promotion code: claims a coupon of its template under the same rules as a claim
/// (`sold_out`, `limit_reached` and `paused` are 409s). Every code that cannot be redeemed (mistyped,
/// unknown, used by someone else, expired, not offered to this user) gets the same 404
/// `invalid_code`, so answers never tell which codes exist; attempts count against per-user and
/// per-IP limits (429 with Retry-After). Redeeming a single-use code you already redeemed returns
/// the same coupon (`idempotent-replayed: true`).
#[utoipa::path(operation_id = "redeem_code", post, path = "/v1/codes/{code}/redeem", tag = "codes",
    params(("code" = String, Path, description = "The code as typed (case, spaces and dashes do not matter)"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes retries safe: 1 to 255 visible ASCII characters")),
    request_body(content = Option<ClaimBody>, description = "Empty for users; `{\"user_id\": ...}` for service keys"),
    responses((status = 201, description = "The coupon", body = CouponView), CommonErrors, BodyErrors, ConflictError, RateLimitedError),
    security(("bearer" = [])))]
pub async fn redeem(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(typed): ApiPath<String>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    OptionalJson(body): OptionalJson<ClaimBody>,
) -> ApiResult<Created> {
    let body = body.unwrap_or_default();
    if body.listing_id.is_some() {
        return Err(ApiError::invalid(
            "not_allowed",
            "listing_id",
            "a code's coupon comes from its code; listing_id is for claims of a template",
        ));
    }
    let retry = idempotency::retry_key(&headers, &p)?;
    let who = s.claimant(&p, body.user_id, ip)?;
    let req = RedeemRequest {
        code: typed,
        source: body.source,
        retry,
    };
    Ok(created(&s, s.redeem(who, req).await?))
}
