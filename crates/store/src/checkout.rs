//! Checkout at the storage boundary: orders holding coupons (try/confirm/cancel, keyed by the
//! order id) and the generic idempotency records of write routes.

use coupond_domain::checkout::Reason;
use coupond_domain::{Actor, Coupon, CouponId, Money, OrderId, Template, Timestamp, UserId};

/// Where an order's hold on its coupons stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OrderState {
    /// Holding its coupons until the deadline.
    Locked,
    /// Its coupons are used.
    Confirmed,
    /// Cancelled by the order service: its coupons went back.
    Cancelled,
    /// The deadline passed before a confirm: its coupons went back.
    Expired,
}

impl OrderState {
    pub fn as_str(self) -> &'static str {
        match self {
            OrderState::Locked => "locked",
            OrderState::Confirmed => "confirmed",
            OrderState::Cancelled => "cancelled",
            OrderState::Expired => "expired",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            OrderState::Locked,
            OrderState::Confirmed,
            OrderState::Cancelled,
            OrderState::Expired,
        ]
        .into_iter()
        .find(|o| o.as_str() == s)
    }
}

/// A lock to take: these coupons of this user, for this order, until `deadline`.
#[derive(Clone, Copy, Debug)]
pub struct LockRequest<'a> {
    pub order_id: &'a OrderId,
    pub user: &'a UserId,
    /// Distinct.
    pub coupons: &'a [CouponId],
    /// SHA-256 of the whole request: the same order id with another request is a conflict.
    pub fingerprint: [u8; 32],
    pub deadline: Timestamp,
    pub actor: &'a Actor,
    pub now: Timestamp,
}

/// What the lock's rules decided, given the coupons and templates as they are inside the
/// lock's transaction: the discount each coupon will take, and the answer to keep for retries.
#[derive(Clone, Debug, PartialEq)]
pub struct LockPlan {
    /// One entry per requested coupon.
    pub discounts: Vec<(CouponId, Money)>,
    pub answer: serde_json::Value,
}

/// Why the lock's rules refused: each coupon that cannot be locked with its reasons (a coupon
/// that does not exist or is another user's says `not_owner`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockRefusal {
    pub coupons: Vec<(CouponId, Vec<Reason>)>,
}

/// The rules a lock applies inside its transaction: the requested coupons that exist (any
/// owner, any status) and their templates, to a plan or a refusal.
pub type LockRules<'a> =
    dyn Fn(&[Coupon], &[Template]) -> Result<LockPlan, LockRefusal> + Send + Sync + 'a;

/// A stored order and the coupons it holds or used.
#[derive(Clone, Debug, PartialEq)]
pub struct OrderRecord {
    pub order_id: OrderId,
    pub user_id: UserId,
    pub state: OrderState,
    pub deadline: Timestamp,
    /// The lock's answer as it was given.
    pub answer: serde_json::Value,
    pub created_at: Timestamp,
    pub ended_at: Option<Timestamp>,
}

/// What a lock did.
#[derive(Clone, Debug, PartialEq)]
pub enum LockOutcome {
    /// Locked now.
    Locked(OrderRecord),
    /// The same request was locked before: the order as it is now.
    Replayed(OrderRecord),
    /// The rules refused; nothing was written.
    Refused(LockRefusal),
    /// The order id was used for another request.
    OrderConflict,
}

/// What a confirm or a cancel did.
#[derive(Clone, Debug, PartialEq)]
pub enum OrderStep {
    /// Done now.
    Done(OrderRecord),
    /// Done before (the same step repeated): nothing changed.
    Already(OrderRecord),
    /// The order is in a state this step cannot leave (confirm after cancel or expiry,
    /// cancel after confirm); nothing changed unless the deadline had passed, in which case
    /// the lock was ended as expired first.
    WrongState(OrderRecord),
    /// Confirming would use more of a template than its stock or give more than its budget:
    /// refused, nothing changed. Should never happen; it means a bug or a tampered database.
    AmountViolation(String),
}

/// The start of a request with an idempotency key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdempotencyStart {
    /// The key is new: the request runs, and its answer is recorded with
    /// [`Store::idempotency_finish`](crate::Store::idempotency_finish).
    New,
    /// The first request with this key answered this: replay it.
    Replay(StoredAnswer),
    /// The first request with this key is still running.
    InFlight,
    /// The key was used for a different request.
    Mismatch,
}

/// An answer kept for replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredAnswer {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

/// Why using `k` more coupons of `t` and giving `d` more (minor units) would break its stock,
/// its budget or its reservations (the amount verification at confirm), if it would.
pub fn over_limits(t: &Template, k: i64, d: i64) -> Option<String> {
    if t.used + k > t.claimed || t.used + k > t.spec.total_stock {
        return Some(format!(
            "template {}: {} used + {k} would pass {} claimed of a stock of {}",
            t.id, t.used, t.claimed, t.spec.total_stock
        ));
    }
    if let Some(budget) = t.spec.budget {
        if t.given.minor() + d > budget.minor() {
            return Some(format!(
                "template {}: {} given + {d} would pass the budget of {}",
                t.id,
                t.given.minor(),
                budget.minor()
            ));
        }
    }
    if t.reserved.minor() < d {
        return Some(format!(
            "template {}: {d} to give but only {} reserved",
            t.id,
            t.reserved.minor()
        ));
    }
    None
}
