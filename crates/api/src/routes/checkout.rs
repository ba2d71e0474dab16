//! Checkout, for the order service: quotes (also for users over their own wallet), and the
//! try/confirm/cancel of an order's coupons keyed by the order id, with a lock's own deadline
//! and its extension.

use axum::extract::State;
use axum::{Extension, Json};
use coupond_domain::{
    Actor, CouponId, CouponStatus, DomainError, Order, OrderDraft, OrderId, Quote, Timestamp,
};
use coupond_store::{ExtendStep, LockOutcome, OrderRecord, OrderStep};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use coupond_app::checkout::{CodePreview, QuoteRequest};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ClientIp};
use crate::pagination;
use crate::routes::{BodyErrors, CommonErrors, ConflictError, RateLimitedError};
use crate::state::AppState;

/// Coupons one lock may hold.
const MAX_LOCKED: usize = 20;

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
/// `wrong_city`, `not_owner`, `locked`, `used`, `revoked`, `template_aborted`, `budget_exhausted`,
/// `exclusive_conflict`), its discount, and the best combination with its split over lines and
/// lease months and the order's total after it. No side effects (an `Idempotency-Key` header is
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

/// An order's hold on its coupons.
#[derive(Debug, Serialize, ToSchema)]
pub struct OrderView {
    pub order_id: OrderId,
    #[schema(value_type = String)]
    pub user_id: coupond_domain::UserId,
    /// `locked`, `confirmed`, `cancelled` or `expired`.
    pub state: String,
    /// When the lock ends unless confirmed: the lock's `hold_until` (or `lock_ttl` after it),
    /// cut at its coupons' earliest `valid_until`, moved later by any extension.
    pub deadline: coupond_domain::Timestamp,
    pub created_at: coupond_domain::Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<coupond_domain::Timestamp>,
    /// What the lock computed: `order_total`, `discount`, `total_after`, `coupons` (each with
    /// its discount, lines and schedule), `lines`, `schedule`.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub terms: serde_json::Map<String, serde_json::Value>,
}

impl OrderView {
    pub(crate) fn new(o: OrderRecord) -> Self {
        let mut terms = match o.answer {
            serde_json::Value::Object(m) => m,
            _ => serde_json::Map::new(),
        };
        // The record's own fields win over the copy in the answer.
        for k in [
            "order_id",
            "user_id",
            "state",
            "deadline",
            "created_at",
            "ended_at",
        ] {
            terms.remove(k);
        }
        OrderView {
            order_id: o.order_id,
            user_id: o.user_id,
            state: o.state.as_str().to_owned(),
            deadline: o.deadline,
            created_at: o.created_at,
            ended_at: o.ended_at,
            terms,
        }
    }
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
/// coupon that would take nothing off next to the others).
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
        Sha256::digest(serde_json::to_vec(&body).map_err(|e| ApiError::Internal(e.into()))?).into();
    let order = order_of(body.order)?;
    let ids = body.coupon_ids;
    if ids.is_empty() || ids.len() > MAX_LOCKED {
        return Err(ApiError::invalid(
            "invalid_value",
            "coupon_ids",
            format!("1 to {MAX_LOCKED} coupons"),
        ));
    }
    for (i, id) in ids.iter().enumerate() {
        if ids[..i].contains(id) {
            return Err(ApiError::invalid(
                "duplicate",
                &format!("coupon_ids[{i}]"),
                "each coupon once",
            ));
        }
    }
    match s
        .checkout()
        .lock(
            &order_id,
            &order,
            &ids,
            body.hold_until,
            fingerprint,
            &actor(&p),
        )
        .await?
    {
        LockOutcome::Locked(o) | LockOutcome::Replayed(o) => Ok(Json(OrderView::new(o))),
        LockOutcome::Refused(r) => Err(ApiError::LockRefused(r.coupons)),
        LockOutcome::OrderConflict => Err(ApiError::conflict(
            "order_conflict",
            "this order id was locked with a different request",
        )),
    }
}

pub(crate) fn parse_order_id(s: &str) -> ApiResult<OrderId> {
    OrderId::parse(s).map_err(|e| ApiError::bad_request("invalid_path", Some("order_id"), e))
}

fn actor(p: &Principal) -> Actor {
    p.actor()
}

/// Confirm an order.
///
/// Confirm an order (the coupons are used): records each coupon's discount and counts it against
/// its template's budget, after checking no template's stock or budget would be passed (409
/// `amount_verification_failed`, and an alert, if one would). Repeating it answers the same; after
/// a cancel or the deadline, 409 `order_ended`; when a coupon it holds was revoked meanwhile, 409
/// `coupon_revoked`, or is past its validity, 409 `expired` (nothing changes: cancel the order).
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
    match s.checkout().confirm(&order_id, &actor(&p)).await? {
        OrderStep::Done(o) | OrderStep::Already(o) => Ok(Json(OrderView::new(o))),
        OrderStep::WrongState(o) => Err(ApiError::conflict(
            "order_ended",
            format!(
                "the order's lock has ended ({}); lock the coupons again",
                o.state.as_str()
            ),
        )),
        OrderStep::AmountViolation(_) => Err(ApiError::conflict(
            "amount_verification_failed",
            "confirming would pass a template's stock or budget; it was refused and reported",
        )),
        OrderStep::Expired(ids) => {
            let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
            Err(ApiError::conflict(
                "expired",
                format!(
                    "coupons {} are past their validity; nothing was used: cancel the order \
                     and quote again",
                    ids.join(", ")
                ),
            ))
        }
        OrderStep::Revoked(ids) => {
            let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
            Err(ApiError::conflict(
                "coupon_revoked",
                format!(
                    "coupons {} were revoked while the order held them; cancel the order and \
                     quote again",
                    ids.join(", ")
                ),
            ))
        }
    }
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
    match s.checkout().cancel(&order_id, &actor(&p)).await? {
        OrderStep::Done(o) | OrderStep::Already(o) => Ok(Json(OrderView::new(o))),
        OrderStep::WrongState(_) => Err(ApiError::conflict(
            "already_used",
            "the order was confirmed: its coupons are used",
        )),
        OrderStep::AmountViolation(_) | OrderStep::Revoked(_) | OrderStep::Expired(_) => Err(
            ApiError::Internal("a cancel reported a confirm's refusal".into()),
        ),
    }
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
    match s.checkout().extend(&order_id, body.hold_until).await? {
        ExtendStep::Done(o) | ExtendStep::Already(o) => Ok(Json(OrderView::new(o))),
        ExtendStep::Earlier(o) => Err(ApiError::conflict(
            "hold_earlier",
            format!(
                "the lock holds until {}; a deadline only moves later",
                o.deadline
            ),
        )),
        ExtendStep::Ended(o) => Err(ApiError::conflict(
            "order_ended",
            format!("the order's lock has ended ({})", o.state.as_str()),
        )),
    }
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
    Ok(Json(OrderView::new(s.store().order(&order_id).await?)))
}

/// One status change of a coupon.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HistoryEntry {
    /// Absent for the change that created the coupon.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<CouponStatus>,
    pub to: CouponStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_id: Option<String>,
    /// `platform`, `merchant:<id>`, `service`, `user:<id>` or `system`.
    pub actor: String,
    /// Why, when a person said so (a revoke, a refund).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub at: coupond_domain::Timestamp,
}

/// The order holding a locked coupon, and until when.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HeldBy {
    pub order_id: String,
    /// The lock's deadline (`POST /v1/orders/{order_id}/extend` moves it later).
    pub until: coupond_domain::Timestamp,
}

/// A coupon's operation log.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HistoryView {
    pub coupon_id: CouponId,
    pub template_id: coupond_domain::TemplateId,
    pub user_id: coupond_domain::UserId,
    pub status: CouponStatus,
    /// While an order holds it (`locked`): the order and the lock's deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_by: Option<HeldBy>,
    pub events: Vec<HistoryEntry>,
    /// What the caller may do to it now (the platform, its merchant, a role that helps users:
    /// `revoke`); absent for its holder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<coupond_domain::CouponAction>>,
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
    let coupon = s.store().coupon(id).await?;
    let visible = match &p {
        Principal::Platform => true,
        Principal::User(u) => *u == coupon.user_id,
        Principal::Merchant(m) => {
            s.store().template(coupon.template_id).await?.merchant_id == Some(*m)
        }
        Principal::Service(_) => false,
    };
    if !visible {
        return Err(ApiError::NotFound);
    }
    let events = s
        .store()
        .coupon_history(id)
        .await?
        .into_iter()
        .map(|e| HistoryEntry {
            from: e.from,
            to: e.to,
            order_id: e.order_id,
            actor: e.actor.to_text(),
            reason: e.reason,
            at: e.at,
        })
        .collect();
    let actions = crate::views::support_actions(&p, &coupon, s.now());
    let held_by = match (&coupon.stored_status, &coupon.order_id, coupon.locked_until) {
        (CouponStatus::Locked, Some(order), Some(until)) => Some(HeldBy {
            order_id: order.as_str().to_owned(),
            until,
        }),
        _ => None,
    };
    Ok(Json(HistoryView {
        coupon_id: id,
        template_id: coupon.template_id,
        user_id: coupon.user_id.clone(),
        status: coupon.status(s.now()),
        held_by,
        events,
        actions,
    }))
}
