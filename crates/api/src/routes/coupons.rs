//! Coupons as the platform and merchants manage them: revoking one, and who holds a
//! template's coupons (JSON or CSV).

use axum::body::Body;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use coupond_app::coupons::{Holders, HoldersFilter};
use coupond_app::downloads::{holders_csv, CsvStream};
use coupond_app::pages::PageRequest;
use coupond_domain::{CouponId, CouponStatus, Note, TemplateId, UserId};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::pagination::{self, PageOf};
use crate::routes::{BodyErrors, CommonErrors, ConflictError};
use crate::state::AppState;
use crate::views::CouponView;

/// Why a coupon is revoked.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeBody {
    /// 1 to 500 visible characters; kept in the coupon's history and its event.
    #[schema(value_type = String, example = "issued by mistake")]
    pub reason: Note,
}

/// Revoke a coupon.
///
/// Revoke a coupon (platform; the merchant owning its template): an unused or locked coupon
/// becomes `revoked` for good. A locked coupon's order then fails to confirm (409
/// `coupon_revoked`). Revoking again answers the coupon; a used coupon is 409 `coupon_used`
/// (refund its order instead), an expired one 409 `coupon_expired`.
#[utoipa::path(operation_id = "revoke_coupon", post, path = "/v1/coupons/{id}/revoke", tag = "coupons",
    request_body = RevokeBody,
    params(("id" = i64, Path, description = "Coupon id")),
    responses((status = 200, description = "The revoked coupon", body = CouponView),
        CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn revoke(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<CouponId>,
    ApiJson(body): ApiJson<RevokeBody>,
) -> ApiResult<Json<CouponView>> {
    Ok(Json(s.revoke_coupon(&p, id, &body.reason).await?))
}

/// The filters and page of a template's coupons.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct HoldersParams {
    /// Only this user's coupons.
    #[param(value_type = Option<String>)]
    pub user_id: Option<UserId>,
    /// Only coupons in this status now.
    pub status: Option<CouponStatus>,
    /// `next_cursor` of the previous page (for CSV, the `next-cursor` header).
    pub cursor: Option<String>,
    /// Page size, 1..=`max_page` (default `default_page`).
    pub limit: Option<u32>,
    /// `json` (the default) or `csv`.
    pub format: Option<String>,
    /// With `format=csv`, `true` answers every coupon from `cursor` on (from the first
    /// without one) as one CSV, its header line once, streamed `limit` rows at a time
    /// (default `max_page`) with no `next-cursor` header. Without `format=csv`, 400
    /// `invalid_query` naming `all`.
    pub all: Option<bool>,
}

/// Who holds a template's coupons.
///
/// Who holds a template's coupons (platform; the owning merchant), by coupon id, filtered by
/// status and user, cursor-paged. `format=csv` answers the page as CSV, the next page's cursor in
/// the `next-cursor` header; `format=csv&all=true` answers every page as one streamed CSV.
#[utoipa::path(operation_id = "template_coupons", get, path = "/v1/templates/{id}/coupons", tag = "coupons",
    params(("id" = i64, Path, description = "Template id"), HoldersParams),
    responses((status = 200, description = "A page of coupons (JSON, or CSV with format=csv); every coupon with format=csv&all=true", body = PageOf<CouponView>),
        CommonErrors),
    security(("bearer" = [])))]
pub async fn of_template(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
    ApiQuery(q): ApiQuery<HoldersParams>,
) -> ApiResult<Response> {
    let csv = pagination::wants_csv(q.format.as_deref())?;
    let all = q.all == Some(true);
    if all && !csv {
        return Err(ApiError::bad_request(
            "invalid_query",
            Some("all"),
            "all=true is only for format=csv",
        ));
    }
    let filter = HoldersFilter {
        user: q.user_id,
        status: q.status,
    };
    let page = PageRequest {
        cursor: q.cursor,
        limit: q.limit,
    };
    if all {
        let pieces = s.every_holder_csv(&p, id, filter, page).await?;
        return Ok(csv_stream(pieces));
    }
    let Holders {
        template: t,
        coupons: listed,
        at: now,
    } = s.holders(&p, id, filter, page).await?;
    if csv {
        let mut response = (
            [(header::CONTENT_TYPE, "text/csv; charset=utf-8")],
            holders_csv(&listed.items, now, true),
        )
            .into_response();
        if let Some(next) = listed.next_cursor.as_deref().and_then(|c| c.parse().ok()) {
            response.headers_mut().insert("next-cursor", next);
        }
        return Ok(response);
    }
    Ok(Json(PageOf {
        items: listed
            .items
            .into_iter()
            .map(|c| CouponView::new(c, &t, now))
            .collect(),
        next_cursor: listed.next_cursor,
    })
    .into_response())
}

/// A CSV streamed as the application answers it.
pub(crate) fn csv_stream(pieces: CsvStream) -> Response {
    (
        [(header::CONTENT_TYPE, "text/csv; charset=utf-8")],
        Body::from_stream(pieces),
    )
        .into_response()
}
