//! The performance report: whether a campaign paid (funnel, discount, GMV, average order
//! value with and without a coupon), per local day and channel, as JSON or CSV. Counted by
//! [`coupond_engine::performance`], reported by [`coupond_app::reports::performance`].

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use coupond_app::reports::performance::PerformanceReport;
use coupond_domain::{ActivityId, MerchantId, TemplateId, Timestamp};
use coupond_engine::performance::Scope;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::pagination;
use crate::routes::CommonErrors;
use crate::state::AppState;

/// Whose figures, over which period.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PerformanceQuery {
    /// One template's figures.
    pub template_id: Option<TemplateId>,
    /// One activity's (a merchant's view: its own templates in it).
    pub activity_id: Option<ActivityId>,
    /// One merchant's templates (merchants: their own only). With none of the three: every
    /// template (the platform), or the merchant's own.
    pub merchant_id: Option<MerchantId>,
    /// Start (inclusive), RFC 3339.
    #[param(value_type = String)]
    pub from: Timestamp,
    /// End (exclusive), RFC 3339; at most 366 days after `from`.
    #[param(value_type = String)]
    pub to: Timestamp,
    /// `json` (the default) or `csv`.
    pub format: Option<String>,
}

/// The scope a query names: one of the three, or none.
fn scope_of(q: &PerformanceQuery) -> ApiResult<Scope> {
    match (q.template_id, q.activity_id, q.merchant_id) {
        (Some(t), None, None) => Ok(Scope::Template(t)),
        (None, Some(a), None) => Ok(Scope::Activity(a)),
        (None, None, Some(m)) => Ok(Scope::Merchant(m)),
        (None, None, None) => Ok(Scope::Platform),
        _ => Err(ApiError::bad_request(
            "invalid_query",
            Some("template_id"),
            "name at most one of template_id, activity_id and merchant_id",
        )),
    }
}

/// Campaign performance.
///
/// Whether a campaign paid, over `[from, to)` (at most 366 days): the funnel (issued, claimed,
/// locked, used, refunded, expired unused, revoked) with its rates, the discount given, the value
/// of the orders confirmed with a coupon (GMV) and its ratio to the discount, the average order
/// value beside that of the orders paid without a coupon (`without_coupon`, recorded through
/// `POST /v1/orders/{order_id}/record`: a merchant's own for a merchant's report, template or
/// caller, else the platform's); in total, per local day of the platform's time zone and per channel (how the coupons
/// reached their holders: a listing, a code's batch, an issuance job, the service, directly, or
/// the `source` a claim gave). Of one template, activity or merchant, or (none named) every
/// template; a merchant sees its own templates only. Exact: counted from the records when asked.
/// `format=csv` gives one line per total, day and channel.
#[utoipa::path(operation_id = "performance", get, path = "/v1/reports/performance", tag = "reports",
    params(PerformanceQuery),
    responses((status = 200, description = "The report (JSON, or CSV with format=csv)", body = PerformanceReport), CommonErrors),
    security(("bearer" = [])))]
pub async fn performance(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<PerformanceQuery>,
) -> ApiResult<Response> {
    let scope = scope_of(&q)?;
    let csv = pagination::wants_csv(q.format.as_deref())?;
    let report = s.performance(&p, scope, (q.from, q.to)).await?;
    if csv {
        return Ok(pagination::csv_answer(report.to_csv()));
    }
    Ok(Json(report).into_response())
}
