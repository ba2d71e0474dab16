//! Refunds of confirmed orders (a lease cancelled after signing, goods returned): the order
//! service gives the coupons back.

use axum::extract::State;
use axum::{Extension, Json};
use coupond_domain::{CouponId, CouponStatus, Money, Note, OrderId, TemplateId, Timestamp};
use coupond_engine::lifecycle::{self, RefundOutcome};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::{ApiPath, OptionalJson};
use crate::routes::checkout::parse_order_id;
use crate::routes::{BodyErrors, CommonErrors, ConflictError};
use crate::state::AppState;

/// What to refund; an empty body refunds every coupon the order used.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefundBody {
    /// The coupons to give back (a partial refund), 1 to 100 distinct ids; absent: all.
    #[schema(value_type = Option<Vec<i64>>)]
    pub coupon_ids: Option<Vec<CouponId>>,
    /// Why, 1 to 500 visible characters; kept in each coupon's history.
    #[schema(value_type = Option<String>)]
    pub reason: Option<Note>,
}

/// One coupon given back.
#[derive(Debug, Serialize, ToSchema)]
pub struct RefundView {
    pub coupon_id: CouponId,
    pub template_id: TemplateId,
    /// The discount it had given, taken back out of its template's budget used and stats.
    pub discount: Money,
    pub used_at: Timestamp,
    /// Where the coupon went: `unused`, `expired` (its validity had ended) or `revoked` (its
    /// template's `refund_policy` is `void`).
    pub status: CouponStatus,
    pub refunded_at: Timestamp,
    /// Refunded by this request (false: by an earlier one).
    pub new: bool,
}

/// An order's refunds.
#[derive(Debug, Serialize, ToSchema)]
pub struct RefundsView {
    pub order_id: OrderId,
    /// Every refund of the order so far, by coupon id.
    pub refunds: Vec<RefundView>,
}

impl From<RefundOutcome> for RefundsView {
    fn from(o: RefundOutcome) -> Self {
        RefundsView {
            order_id: o.order.order_id,
            refunds: o
                .refunds
                .into_iter()
                .map(|(r, new)| RefundView {
                    coupon_id: r.coupon_id,
                    template_id: r.template_id,
                    discount: r.discount,
                    used_at: r.used_at,
                    status: r.to,
                    refunded_at: r.at,
                    new,
                })
                .collect(),
        }
    }
}

/// Refund an order.
///
/// Refund a confirmed order (service): each coupon it used goes back to its user (`unused`, or
/// `expired` if its validity has ended), or is `revoked` when its template's `refund_policy` is
/// `void`; its discount is taken back out of the template's budget used and stats, and the
/// reconciliation counts the refund in the period it happens. Name `coupon_ids` for a partial
/// refund. Repeating it answers the refunds already made (`new: false`). An order not confirmed:
/// 409 `order_not_confirmed`; a coupon the order did not use: 422 `not_in_order`.
#[utoipa::path(operation_id = "refund_order", post, path = "/v1/orders/{order_id}/refund", tag = "checkout",
    request_body(content = Option<RefundBody>, description = "Empty to refund every coupon"),
    params(("order_id" = String, Path, description = "The order id")),
    responses((status = 200, description = "The order's refunds", body = RefundsView),
        CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn refund(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(order_id): ApiPath<String>,
    OptionalJson(body): OptionalJson<RefundBody>,
) -> ApiResult<Json<RefundsView>> {
    let order_id = parse_order_id(&order_id)?;
    let body = body.unwrap_or_default();
    let outcome = lifecycle::refund_order(
        s.store(),
        &order_id,
        body.coupon_ids.as_deref(),
        body.reason.as_ref(),
        &p.actor(),
        s.now(),
    )
    .await?;
    Ok(Json(outcome.into()))
}
