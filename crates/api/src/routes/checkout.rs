//! Checkout, for the order service: quotes (also for users over their own wallet), and the
//! try/confirm/cancel of an order's coupons keyed by the order id, with a lock's own deadline
//! and its extension.

use axum::extract::State;
use axum::{Extension, Json};
use coupond_domain::{CouponId, DomainError, Order, OrderDraft, OrderId, Quote, Timestamp};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use coupond_app::checkout::{CodePreview, QuoteRequest};
use coupond_app::orders::{LockRequest, OrderView};
use coupond_app::views::HistoryView;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ClientIp};
use crate::pagination;
use crate::routes::{BodyErrors, CommonErrors, ConflictError, RateLimitedError};
use crate::state::AppState;

/// Validates an order snapshot, naming fields from the body's root (`order.lines[3]...`).
pub(crate) fn order_of(draft: OrderDraft) -> ApiResult<Order> {
    Order::try_from(draft).map_err(|e| {
        ApiError::from(DomainError {
            field: Some(match &e.field {
                Some(f) => format!("order.{f}"),
                None => "order".to_owned(),
            }),
            ..e
        })
    })
}

/// The body of a quote.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuoteBody {
    pub order: OrderDraft,
    /// Only these coupons (each must be the order's user's); without it, every unused coupon
    /// of the user (up to 500, soonest-expiring first).
    #[serde(default)]
    pub coupon_ids: Option<Vec<CouponId>>,
    /// A promotion code the user has not redeemed yet: what its coupon would do for this
    /// order (`code` in the answer; not part of the best combination).
    #[serde(default)]
    pub code: Option<String>,
}

/// A quote: every coupon with whether it applies and why not, and the best combination.
#[derive(Debug, Serialize, ToSchema)]
pub struct QuoteView {
    #[serde(flatten)]
    pub quote: Quote,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<CodePreview>,
}

/// Quote an order.
///
/// Quote an order: for every coupon of the user (or the ones named), whether it can be used and
/// every reason why not (`expired`, `not_yet_valid`, `below_threshold`, `out_of_scope`,
/// `conditions_unmet` with what is missing in `unmet`, `wrong_city`, `not_owner`, `locked`,
/// `used`, `revoked`, `template_aborted`, `budget_exhausted`,
/// `exclusive_conflict`, `group_conflict`), its discount, and the best combination with its
/// split over lines and lease months and the order's total after it. In a combination the
/// discounts apply highest `priority` first (then lowest template id), each on what the ones
/// before it left, and at most one template of each `stacking_group` applies. No side effects (an `Idempotency-Key` header is
/// ignored). A quote with a `code` counts against the code redemption limits (per user
/// and per IP; 429 with Retry-After). Templates (their terms and budget used) are read at most
/// `cache_ttl` ago; a lock re-reads them and decides.
#[utoipa::path(operation_id = "quote", post, path = "/v1/quotes", tag = "checkout",
    request_body = QuoteBody,
    responses((status = 200, description = "The quote", body = QuoteView), CommonErrors, BodyErrors, RateLimitedError),
    security(("bearer" = [])))]
pub async fn quote(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ClientIp(ip): ClientIp,
    ApiJson(body): ApiJson<QuoteBody>,
) -> ApiResult<axum::response::Response> {
    let req = QuoteRequest {
        order: order_of(body.order)?,
        coupon_ids: body.coupon_ids,
        code: body.code,
        ip,
    };
    let (quote, code) = s.quote(&p, req).await?;
    // About 230 bytes per coupon in the answer, and the best combination's lines.
    let capacity = 4_096 + 256 * quote.coupons.len();
    pagination::json_answer(&QuoteView { quote, code }, capacity)
}

/// The body of a lock.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LockBody {
    /// The order as it will be paid; its `user_id` owns the coupons.
    pub order: OrderDraft,
    /// The coupons to hold: 1 to 20, distinct, the user's, usable together (as the quote's
    /// best combination of them).
    pub coupon_ids: Vec<CouponId>,
    /// When the lock ends unless confirmed: after now and at most `checkout.max_lock_ttl`
    /// (7 days by default) from now. Without it, `checkout.lock_ttl` (15 minutes) from now.
    /// Either way the lock ends no later than its coupons' earliest `valid_until`: the
    /// answer's `deadline` is the one in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_until: Option<Timestamp>,
}

/// Lock coupons for an order.
///
/// Lock coupons for an order (try): re-checks every coupon against the order in the same
/// transaction that locks them, all or nothing; they stay `locked` until confirmed, cancelled, or
/// the deadline passes: `hold_until` if given (after now, at most `max_lock_ttl`, 7 days by
/// default, from now: 422 `hold_until_past` or `hold_until_too_far` otherwise), else `lock_ttl`
/// (15 minutes) from now, and never past the coupons' earliest `valid_until` (the answer's
/// `deadline` is cut there); `POST /v1/orders/{order_id}/extend` moves it later. The same order id
/// with the same body answers the same; with another body, 409 `order_conflict`. Coupons that
/// cannot be locked: 409 `coupons_not_applicable` with each one's reasons (`redundant` for a
/// coupon that would take nothing off next to the others; `conditions_unmet` when its
/// template's conditions fail; `use_limit_reached` when the user's uses of its template in a
/// local day, week or month would pass one of its `use_limits`).
#[utoipa::path(operation_id = "lock_order", post, path = "/v1/orders/{order_id}/lock", tag = "checkout",
    params(("order_id" = String, Path, description = "The order service's order or lease id")),
    request_body = LockBody,
    responses((status = 200, description = "Locked", body = OrderView), CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn lock(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(order_id): ApiPath<String>,
    ApiJson(body): ApiJson<LockBody>,
) -> ApiResult<Json<OrderView>> {
    let order_id = parse_order_id(&order_id)?;
    let fingerprint: [u8; 32] =
        Sha256::digest(serde_json::to_vec(&body).map_err(ApiError::internal)?).into();
    let req = LockRequest {
        order_id,
        order: order_of(body.order)?,
        coupon_ids: body.coupon_ids,
        hold_until: body.hold_until,
        fingerprint,
    };
    Ok(Json(s.lock_order(&p, req).await?))
}

pub(crate) fn parse_order_id(s: &str) -> ApiResult<OrderId> {
    OrderId::parse(s).map_err(|e| ApiError::bad_request("invalid_path", Some("order_id"), e))
}

/// Confirm an order.
///
/// Confirm an order (the coupons are used): records each coupon's discount and counts it against
/// its template's budget, after checking no template's stock or budget would be passed (409
/// `amount_verification_failed`, and an alert, if one would). Repeating it answers the same; after
/// a cancel or the deadline, 409 `order_ended`; when a coupon it holds was revoked meanwhile, 409
/// `coupon_revoked`, or is past its validity, 409 `expired` (nothing changes: cancel the order).
/// A template's conditions and use limits are not tested again: everything they read is fixed
/// by the lock (the order as sent, the customer's tags and confirmed orders, the local clock at
/// the lock, the uses the lock counted), so a lock that holds is the answer; what can change
/// between lock and confirm (a revoke, the end of validity) is what confirm checks.
#[utoipa::path(operation_id = "confirm_order", post, path = "/v1/orders/{order_id}/confirm", tag = "checkout",
    params(("order_id" = String, Path, description = "The order id")),
    responses((status = 200, description = "Confirmed", body = OrderView), CommonErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn confirm(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(order_id): ApiPath<String>,
) -> ApiResult<Json<OrderView>> {
    let order_id = parse_order_id(&order_id)?;
    Ok(Json(s.confirm_order(&p, &order_id).await?))
}

/// Cancel an order.
///
/// Cancel an order: its coupons are unused again (or expired, if their validity ended meanwhile).
/// Repeating it, or cancelling after the deadline, answers the order as it is; after a confirm,
/// 409 `already_used`.
#[utoipa::path(operation_id = "cancel_order", post, path = "/v1/orders/{order_id}/cancel", tag = "checkout",
    params(("order_id" = String, Path, description = "The order id")),
    responses((status = 200, description = "Cancelled", body = OrderView), CommonErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn cancel(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(order_id): ApiPath<String>,
) -> ApiResult<Json<OrderView>> {
    let order_id = parse_order_id(&order_id)?;
    Ok(Json(s.cancel_order(&p, &order_id).await?))
}

/// The body of an extension.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtendBody {
    /// The new deadline: later than the lock's, after now, at most `checkout.max_lock_ttl`
    /// from when the lock was taken, and not past its coupons' earliest `valid_until`.
    pub hold_until: Timestamp,
}

/// Extend an order's lock.
///
/// Move a locked order's deadline later, to `hold_until` (after now, at most `max_lock_ttl`, 7
/// days by default, from when the lock was taken, and not past its coupons' earliest
/// `valid_until`: 422 `hold_until_past` or `hold_until_too_far` otherwise): its
/// coupons stay locked with their discounts. Recorded in the audit trail (`order.extend`, the
/// deadlines before and after). The same `hold_until` again answers the order as it is; an
/// earlier one than the lock's, 409 `hold_earlier` (a deadline only moves later); once the order
/// was confirmed, cancelled or expired, 409 `order_ended`.
#[utoipa::path(operation_id = "extend_order", post, path = "/v1/orders/{order_id}/extend", tag = "checkout",
    params(("order_id" = String, Path, description = "The order id")),
    request_body = ExtendBody,
    responses((status = 200, description = "Extended", body = OrderView), CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn extend(
    State(s): State<AppState>,
    ApiPath(order_id): ApiPath<String>,
    ApiJson(body): ApiJson<ExtendBody>,
) -> ApiResult<Json<OrderView>> {
    let order_id = parse_order_id(&order_id)?;
    Ok(Json(s.extend_order(&order_id, body.hold_until).await?))
}

/// Read an order's hold.
///
/// An order's hold on its coupons as it stands: locked, confirmed, cancelled or expired, with each
/// coupon and its discount.
#[utoipa::path(operation_id = "get_order", get, path = "/v1/orders/{order_id}", tag = "checkout",
    params(("order_id" = String, Path, description = "The order id")),
    responses((status = 200, description = "The order", body = OrderView), CommonErrors),
    security(("bearer" = [])))]
pub async fn get(
    State(s): State<AppState>,
    ApiPath(order_id): ApiPath<String>,
) -> ApiResult<Json<OrderView>> {
    let order_id = parse_order_id(&order_id)?;
    Ok(Json(s.order(&order_id).await?))
}

/// A coupon's history.
///
/// A coupon's status changes, oldest first (platform; the merchant owning its template; the user
/// holding it).
#[utoipa::path(operation_id = "coupon_history", get, path = "/v1/coupons/{id}/history", tag = "checkout",
    params(("id" = i64, Path, description = "Coupon id")),
    responses((status = 200, description = "The log", body = HistoryView), CommonErrors),
    security(("bearer" = [])))]
pub async fn history(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<CouponId>,
) -> ApiResult<Json<HistoryView>> {
    Ok(Json(s.coupon_history(&p, id).await?))
}
