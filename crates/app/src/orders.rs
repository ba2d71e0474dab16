//! Orders' holds on their coupons, for the order service: lock (try), confirm, cancel,
//! extend, refund and record an order paid without a coupon; each step's refusal named once,
//! here.

use coupond_domain::{
    CouponId, CouponStatus, Money, Note, Order, OrderId, TemplateId, Timestamp, UserId,
};
use coupond_engine::lifecycle::{self, RefundOutcome};
use coupond_store::{ExtendStep, LockOutcome, OrderRecord, OrderStep, RecordOutcome};
use serde::Serialize;
use utoipa::ToSchema;

use crate::caller::{roles, Access, Principal};
use crate::context::App;
use crate::error::{AppError, AppResult};

/// Coupons one lock may hold.
pub const MAX_LOCKED: usize = 20;

/// Who may move a lock's deadline later: the order service, and the platform's support.
pub const EXTEND: Access = Access {
    roles: roles::PLATFORM_SERVICE,
    area: coupond_domain::Area::Support,
};

/// A lock asked for.
#[derive(Debug)]
pub struct LockRequest {
    pub order_id: OrderId,
    pub order: Order,
    /// 1 to [`MAX_LOCKED`] distinct coupons of the order's user.
    pub coupon_ids: Vec<CouponId>,
    /// When the lock ends unless confirmed (else `lock_ttl` from now).
    pub hold_until: Option<Timestamp>,
    /// What was asked, hashed: the same order id with another request is refused.
    pub fingerprint: [u8; 32],
}

/// An order's hold on its coupons.
#[derive(Debug, Serialize, ToSchema)]
pub struct OrderView {
    pub order_id: OrderId,
    #[schema(value_type = String)]
    pub user_id: UserId,
    /// `locked`, `confirmed`, `cancelled` or `expired`.
    pub state: String,
    /// When the lock ends unless confirmed: the lock's `hold_until` (or `lock_ttl` after it),
    /// cut at its coupons' earliest `valid_until`, moved later by any extension.
    pub deadline: Timestamp,
    pub created_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Timestamp>,
    /// What the lock computed: `order_total`, `discount`, `total_after`, `coupons` (each with
    /// its discount, lines and schedule), `lines`, `schedule`.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub terms: serde_json::Map<String, serde_json::Value>,
}

impl OrderView {
    pub fn new(o: OrderRecord) -> Self {
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

impl App {
    /// Locks `req.coupon_ids` for `req.order` (try): all or nothing, each re-checked against
    /// the order in the transaction that locks them; the same request again answers the same.
    pub async fn lock_order(&self, p: &Principal, req: LockRequest) -> AppResult<OrderView> {
        let ids = &req.coupon_ids;
        if ids.is_empty() || ids.len() > MAX_LOCKED {
            return Err(AppError::invalid(
                "invalid_value",
                "coupon_ids",
                format!("1 to {MAX_LOCKED} coupons"),
            ));
        }
        if let Some(i) = (0..ids.len()).find(|&i| ids[..i].contains(&ids[i])) {
            return Err(AppError::invalid(
                "duplicate",
                &format!("coupon_ids[{i}]"),
                "each coupon once",
            ));
        }
        let outcome = self
            .checkout()
            .lock(
                &req.order_id,
                &req.order,
                ids,
                req.hold_until,
                req.fingerprint,
                &p.actor(),
            )
            .await?;
        match outcome {
            LockOutcome::Locked(o) | LockOutcome::Replayed(o) => Ok(OrderView::new(o)),
            LockOutcome::Refused(r) => Err(AppError::LockRefused(r.coupons)),
            LockOutcome::OrderConflict => Err(AppError::conflict(
                "order_conflict",
                "this order id was locked with a different request",
            )),
        }
    }

    /// Confirms order `id`: its coupons become used; confirming again answers the same.
    pub async fn confirm_order(&self, p: &Principal, id: &OrderId) -> AppResult<OrderView> {
        match self.checkout().confirm(id, &p.actor()).await? {
            OrderStep::Done(o) | OrderStep::Already(o) => Ok(OrderView::new(o)),
            OrderStep::WrongState(o) => Err(AppError::conflict(
                "order_ended",
                format!(
                    "the order's lock has ended ({}); lock the coupons again",
                    o.state.as_str()
                ),
            )),
            OrderStep::AmountViolation(_) => Err(AppError::conflict(
                "amount_verification_failed",
                "confirming would pass a template's stock or budget; it was refused and reported",
            )),
            OrderStep::Expired(ids) => Err(AppError::conflict(
                "expired",
                format!(
                    "coupons {} are past their validity; nothing was used: cancel the order \
                     and quote again",
                    listed(&ids)
                ),
            )),
            OrderStep::Revoked(ids) => Err(AppError::conflict(
                "coupon_revoked",
                format!(
                    "coupons {} were revoked while the order held them; cancel the order and \
                     quote again",
                    listed(&ids)
                ),
            )),
        }
    }

    /// Cancels order `id`: its coupons are given back; cancelling again answers the same.
    pub async fn cancel_order(&self, p: &Principal, id: &OrderId) -> AppResult<OrderView> {
        match self.checkout().cancel(id, &p.actor()).await? {
            OrderStep::Done(o) | OrderStep::Already(o) => Ok(OrderView::new(o)),
            OrderStep::WrongState(_) => Err(AppError::conflict(
                "already_used",
                "the order was confirmed: its coupons are used",
            )),
            OrderStep::AmountViolation(_) | OrderStep::Revoked(_) | OrderStep::Expired(_) => Err(
                AppError::Internal("a cancel reported a confirm's refusal".into()),
            ),
        }
    }

    /// Moves order `id`'s lock to end at `until` (only later).
    pub async fn extend_order(&self, id: &OrderId, until: Timestamp) -> AppResult<OrderView> {
        match self.checkout().extend(id, until).await? {
            ExtendStep::Done(o) | ExtendStep::Already(o) => Ok(OrderView::new(o)),
            ExtendStep::Earlier(o) => Err(AppError::conflict(
                "hold_earlier",
                format!(
                    "the lock holds until {}; a deadline only moves later",
                    o.deadline
                ),
            )),
            ExtendStep::Ended(o) => Err(AppError::conflict(
                "order_ended",
                format!("the order's lock has ended ({})", o.state.as_str()),
            )),
        }
    }

    /// Order `id`'s hold as it stands.
    pub async fn order(&self, id: &OrderId) -> AppResult<OrderView> {
        Ok(OrderView::new(self.store().order(id).await?))
    }

    /// Records order `id`, paid without a coupon (for the performance report); the same
    /// request again answers the same.
    pub async fn record_plain_order(
        &self,
        id: &OrderId,
        order: &Order,
        fingerprint: [u8; 32],
    ) -> AppResult<OrderView> {
        match self.checkout().record_plain(id, order, fingerprint).await? {
            RecordOutcome::Recorded(o) => Ok(OrderView::new(o)),
            RecordOutcome::OrderConflict => Err(AppError::conflict(
                "order_conflict",
                "this order id was used for a different request",
            )),
        }
    }

    /// Refunds confirmed order `id`'s coupons (`coupon_ids`, or all): each goes back to its
    /// holder; refunding again answers the refunds already made.
    pub async fn refund_order(
        &self,
        p: &Principal,
        id: &OrderId,
        coupon_ids: Option<&[CouponId]>,
        reason: Option<&Note>,
    ) -> AppResult<RefundsView> {
        let outcome =
            lifecycle::refund_order(self.store(), id, coupon_ids, reason, &p.actor(), self.now())
                .await?;
        Ok(outcome.into())
    }
}

fn listed(ids: &[CouponId]) -> String {
    let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
    ids.join(", ")
}
