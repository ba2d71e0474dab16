//! Coupons as the platform and merchants manage them: revoking one, and who holds a
//! template's coupons (JSON or CSV).

use axum::body::Body;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use coupond_app::coupons::{Holders, HoldersFilter};
use coupond_app::pages::PageRequest;
use coupond_domain::{Coupon, CouponId, CouponStatus, CsvWriter, Note, TemplateId, UserId};
use coupond_store::HoldersQuery;
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
    let limit = if all {
        q.limit.or(Some(s.settings().max_page))
    } else {
        q.limit
    };
    let filter = HoldersFilter {
        user: q.user_id,
        status: q.status,
    };
    let page = PageRequest {
        cursor: q.cursor,
        limit,
    };
    if all {
        let (_, query) = s.holders_query(&p, id, filter, page).await?;
        return Ok(every_page_csv(s, query));
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

/// Every page of `first` on as one CSV, each page read when the client is ready for it (at
/// most one page in memory), the header line only in the first chunk. A failure mid-stream
/// ends the response early: the client sees a truncated body, never a wrong one.
fn every_page_csv(s: AppState, first: HoldersQuery) -> Response {
    let pages = futures_util::stream::unfold(Some((first, true)), move |next| {
        let s = s.clone();
        async move {
            let (mut q, header) = next?;
            match s.holder_rows(&q).await {
                Ok(mut rows) => {
                    // `limit` asks for one row more than a page: whether another follows.
                    let more = rows.len() >= q.limit as usize;
                    rows.truncate(q.limit.saturating_sub(1) as usize);
                    let chunk = holders_csv(&rows, q.now, header);
                    q.after = rows.last().map(|c| c.id.get());
                    let next = (more && q.after.is_some()).then_some((q, false));
                    Some((Ok::<_, std::io::Error>(chunk), next))
                }
                Err(e) => {
                    tracing::warn!(error = ?e, "the holders CSV ended early");
                    let cut = std::io::Error::other("reading the holders failed");
                    Some((Err(cut), None))
                }
            }
        }
    });
    (
        [(header::CONTENT_TYPE, "text/csv; charset=utf-8")],
        Body::from_stream(pages),
    )
        .into_response()
}

/// The holders CSV's columns.
const HOLDERS_HEADER: [&str; 9] = [
    "coupon_id",
    "user_id",
    "status",
    "claimed_at",
    "valid_until",
    "used_at",
    "order_id",
    "discount",
    "code",
];

/// Coupons as CSV lines, after the header line when `header`, written by [`CsvWriter`] like
/// every CSV coupond writes.
fn holders_csv(coupons: &[Coupon], now: coupond_domain::Timestamp, header: bool) -> String {
    let mut w = if header {
        CsvWriter::with_header(&HOLDERS_HEADER)
    } else {
        CsvWriter::new()
    };
    for c in coupons {
        w.number(c.id.get())
            .text(c.user_id.as_str())
            .text(c.status(now).as_str())
            .text(&c.claimed_at.to_string())
            .text(&c.valid_until.to_string())
            .optional(c.used_at.map(|t| t.to_string()).as_deref())
            .optional(c.order_id.as_ref().map(|o| o.as_str()))
            .optional_number(c.discount.map(|d| d.minor()))
            .optional(c.code.as_deref())
            .end_line();
    }
    w.finish()
}
