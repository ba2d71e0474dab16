//! The settlement report: what the platform owes each merchant for the share of its
//! templates' discounts that activities' funding splits put on the platform, refunds netted,
//! exact to the minor unit (see [`coupond_engine::settlement`]).

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use coupond_domain::{ActivityId, MerchantId, TemplateId, Timestamp};
use coupond_engine::settlement::MerchantSettlement;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

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

/// One template's line: its uses and refunds in the period and the platform's part of them.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SettlementLine {
    pub template_id: TemplateId,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activity_id: Option<ActivityId>,
    /// The platform's share of each discount, in basis points.
    pub platform_bps: u16,
    pub coupons_used: i64,
    pub discount: i64,
    /// The platform's part of `discount`.
    pub platform_given: i64,
    pub coupons_refunded: i64,
    pub refunded_discount: i64,
    /// The platform's part of `refunded_discount`.
    pub platform_refunded: i64,
    /// `platform_given - platform_refunded`.
    pub platform_owes: i64,
}

/// One merchant's settlement.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MerchantOwed {
    pub merchant_id: MerchantId,
    pub platform_given: i64,
    pub platform_refunded: i64,
    /// What the platform owes the merchant for the period.
    pub owed: i64,
    pub lines: Vec<SettlementLine>,
}

/// The settlement of a period.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SettlementReport {
    pub from: Timestamp,
    pub to: Timestamp,
    /// The currency of every amount (`platform.currency`).
    pub currency: String,
    /// The rounding rule, in words.
    pub rounding: String,
    pub merchants: Vec<MerchantOwed>,
    /// What the platform owes every merchant listed.
    pub total_owed: i64,
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
    let settled = s.settlement(&p, (q.from, q.to), q.merchant_id).await?;
    if csv {
        let text = settled.to_csv();
        return Ok(pagination::csv_answer(text));
    }
    Ok(Json(SettlementReport {
        from: settled.from,
        to: settled.to,
        currency: s.currency().to_string(),
        rounding: "each coupon's discount split on its own: the platform's part rounded half \
                   away from zero, the merchant's the rest; a refund takes back the parts its \
                   use gave"
            .into(),
        total_owed: settled.total_owed(),
        merchants: settled.merchants.iter().map(owed).collect(),
    })
    .into_response())
}

fn owed(m: &MerchantSettlement) -> MerchantOwed {
    MerchantOwed {
        merchant_id: m.merchant_id,
        platform_given: m.platform_given,
        platform_refunded: m.platform_refunded,
        owed: m.owed(),
        lines: m
            .lines
            .iter()
            .map(|x| {
                let (given, refunded) = (x.given(), x.refunded());
                SettlementLine {
                    template_id: x.template_id,
                    title: x.title.clone(),
                    activity_id: x.activity_id,
                    platform_bps: x.funding.platform_bps(),
                    coupons_used: x.coupons_used,
                    discount: x.discount.minor(),
                    platform_given: given.platform,
                    coupons_refunded: x.coupons_refunded,
                    refunded_discount: x.refunded_discount.minor(),
                    platform_refunded: refunded.platform,
                    platform_owes: given.platform - refunded.platform,
                }
            })
            .collect(),
    }
}
