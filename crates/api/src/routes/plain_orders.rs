//! Orders paid without a coupon, recorded by the order service so the performance report can
//! set the average order value with a coupon beside the one without
//! ([`coupond_engine::Checkout::record_plain`]).

use axum::extract::State;
use axum::Json;
use coupond_domain::OrderDraft;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath};
use coupond_app::orders::OrderView;

use crate::routes::checkout::{order_of, parse_order_id};
use crate::routes::{BodyErrors, CommonErrors, ConflictError};
use crate::state::AppState;

/// The body of a record.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordBody {
    /// The order as it was paid, with no coupon.
    pub order: OrderDraft,
}

/// Record an order paid without a coupon.
///
/// Record an order the user paid without any coupon, once it is paid: its total (the sum of its
/// lines) is kept with the merchant of its lines when they are all one merchant's, and nothing
/// else of its content. The performance report counts such orders as `without_coupon`, to set
/// the average order value of orders using a coupon beside theirs. The answer is the order,
/// `confirmed`, with a discount of 0 and no coupons. The same order id with the same body answers
/// the same; with another body, or an order id a lock used, 409 `order_conflict` (an order id is
/// one order, with coupons or without).
#[utoipa::path(operation_id = "record_order", post, path = "/v1/orders/{order_id}/record", tag = "checkout",
    params(("order_id" = String, Path, description = "The order service's order id")),
    request_body = RecordBody,
    responses((status = 200, description = "Recorded", body = OrderView), CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn record(
    State(s): State<AppState>,
    ApiPath(order_id): ApiPath<String>,
    ApiJson(body): ApiJson<RecordBody>,
) -> ApiResult<Json<OrderView>> {
    let order_id = parse_order_id(&order_id)?;
    let fingerprint: [u8; 32] =
        Sha256::digest(serde_json::to_vec(&body).map_err(ApiError::internal)?).into();
    let order = order_of(body.order)?;
    Ok(Json(
        s.record_plain_order(&order_id, &order, fingerprint).await?,
    ))
}
