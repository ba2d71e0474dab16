//! Refunds of confirmed orders (a lease cancelled after signing, goods returned): the order
//! service gives the coupons back.

use axum::extract::State;
use axum::{Extension, Json};
use coupond_app::orders::RefundsView;
use coupond_domain::{CouponId, Note};
use serde::Deserialize;
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
    let refunds = s
        .refund_order(
            &p,
            &order_id,
            body.coupon_ids.as_deref(),
            body.reason.as_ref(),
        )
        .await?;
    Ok(Json(refunds))
}
