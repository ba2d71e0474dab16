//! The settlement report: what the platform owes each merchant for the share of its
//! templates' discounts that activities' funding splits put on the platform, refunds netted,
//! exact to the minor unit (see [`coupond_engine::settlement`]).

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use coupond_app::reports::settlement::SettlementReport;
use coupond_domain::{MerchantId, Timestamp};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::ApiQuery;
use crate::pagination;
use crate::routes::CommonErrors;
use crate::state::AppState;

/// Whose settlement, over which period.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SettlementQuery {
    /// One merchant (merchants: always their own); without it, every merchant owed anything.
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

/// Settlement of a period.
///
/// What the platform owes merchants for `[from, to)` (at most 366 days): per merchant and
/// template, the discount its coupons gave, the platform's share of it under the activity's
/// `funding` (standalone templates are the merchant's alone, so they owe nothing), less the same
/// share of the refunds made in the period. Rounding: each coupon's discount is split on its own,
/// the platform's part rounded half away from zero and the merchant's the rest, so parts always
/// sum to the whole and a refund takes back exactly what its use gave (settlements of
/// consecutive periods add up); the merchants' totals sum to the reconciliation's platform share
/// of their templates. A merchant sees its own settlement only. `format=csv` gives one line per template.
#[utoipa::path(operation_id = "settlement", get, path = "/v1/reports/settlement", tag = "reports",
    params(SettlementQuery),
    responses((status = 200, description = "The settlement (JSON, or CSV with format=csv)", body = SettlementReport), CommonErrors),
    security(("bearer" = [])))]
pub async fn settlement(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<SettlementQuery>,
) -> ApiResult<Response> {
    let csv = pagination::wants_csv(q.format.as_deref())?;
    let report = s.settlement(&p, (q.from, q.to), q.merchant_id).await?;
    if csv {
        return Ok(pagination::csv_answer(report.to_csv()));
    }
    Ok(Json(report).into_response())
}
