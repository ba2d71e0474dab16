//! Figures of templates and activities, and the reconciliation report of discounts given
//! (the application's `coupond_app::reports`, answered as JSON or CSV).

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use coupond_domain::{ActivityId, TemplateId, Timestamp};
use serde::Deserialize;
use utoipa::IntoParams;

pub use coupond_app::reports::{
    ActivityStats, DayCount, FunderTotal, HourCount, MerchantRow, Reconciliation,
    ReconciliationRow, StatsQuery, TemplateStats,
};

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::{ApiPath, ApiQuery};
use crate::pagination;
use crate::routes::CommonErrors;
use crate::state::AppState;

/// A template's figures.
///
/// A template's numbers: stock, claimed and issued, coupons by status now, discount given and
/// reserved, and claims and uses per hour (platform; the owning merchant).
#[utoipa::path(operation_id = "template_stats", get, path = "/v1/templates/{id}/stats", tag = "reports",
    params(("id" = i64, Path, description = "Template id"), StatsQuery),
    responses((status = 200, description = "The numbers", body = TemplateStats), CommonErrors),
    security(("bearer" = [])))]
pub async fn template(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
    ApiQuery(q): ApiQuery<StatsQuery>,
) -> ApiResult<Json<TemplateStats>> {
    Ok(Json(s.template_stats(&p, id, &q).await?))
}

/// An activity's figures.
///
/// An activity's numbers: totals, a row per merchant and each template (platform; a merchant sees
/// its own templates only).
#[utoipa::path(operation_id = "activity_stats", get, path = "/v1/activities/{id}/stats", tag = "reports",
    params(("id" = i64, Path, description = "Activity id"), StatsQuery),
    responses((status = 200, description = "The numbers", body = ActivityStats), CommonErrors),
    security(("bearer" = [])))]
pub async fn activity(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<ActivityId>,
    ApiQuery(q): ApiQuery<StatsQuery>,
) -> ApiResult<Json<ActivityStats>> {
    Ok(Json(s.activity_stats(&p, id, &q).await?))
}

/// The period of a report.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PeriodQuery {
    /// Start (inclusive), RFC 3339.
    #[param(value_type = String)]
    pub from: Timestamp,
    /// End (exclusive), RFC 3339.
    #[param(value_type = String)]
    pub to: Timestamp,
    /// `json` (the default) or `csv`.
    pub format: Option<String>,
}

/// Reconciliation of a period.
///
/// The reconciliation of a period `[from, to)`: per template and per funder, the coupons used
/// (confirmed) in it and the discount they gave, the refunds made in it and the discount they took
/// back, with totals (platform). A use counts in its period even if refunded later, the refund in
/// its own, so a past period never changes. `format=csv` gives the rows as CSV.
#[utoipa::path(operation_id = "reconciliation", get, path = "/v1/reports/reconciliation", tag = "reports",
    params(PeriodQuery),
    responses((status = 200, description = "The report (JSON, or CSV with format=csv)", body = Reconciliation), CommonErrors),
    security(("bearer" = [])))]
pub async fn reconciliation(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<PeriodQuery>,
) -> ApiResult<Response> {
    let csv = pagination::wants_csv(q.format.as_deref())?;
    let report = s.reconciliation(q.from, q.to).await?;
    if csv {
        return Ok(pagination::csv_answer(report.to_csv()));
    }
    Ok(Json(Reconciliation::from(report)).into_response())
}
