//! Checkout at the storage boundary: orders holding coupons (try/confirm/cancel, keyed by the
//! order id) and the generic idempotency records of write routes.

use crate::{IdempotencyKey, StoreResult};
use async_trait::async_trait;
use coupond_domain::TemplateId;

use coupond_domain::checkout::Reason;
use coupond_domain::{
    Actor, Coupon, CouponId, MerchantId, Money, OrderId, Template, Timestamp, UserId, Zone,
};

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
    /// The order's total before coupons, kept with the order for the campaign figures.
    pub subtotal: Money,
    /// The platform's currency (ISO 4217), kept with the order's amounts.
    pub currency: &'a str,
    /// The platform's time zone: where the days, weeks and months of use limits begin.
    pub zone: Zone,
}

/// What the lock's rules decided, given the coupons and templates as they are inside the
/// lock's transaction: the discount each coupon will take, and the answer to keep for retries.
#[derive(Clone, Debug, PartialEq)]
pub struct LockPlan {
    /// One entry per requested coupon.
    pub discounts: Vec<(CouponId, Money)>,
    pub answer: serde_json::Value,
    /// The lock's deadline where the rules end it before the one asked for (the earliest
    /// validity end of its coupons); `None`: the one asked for.
    pub deadline: Option<Timestamp>,
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

/// An order paid without a coupon, to record for the campaign figures' comparison.
#[derive(Clone, Copy, Debug)]
pub struct PlainOrder<'a> {
    pub order_id: &'a OrderId,
    pub user: &'a UserId,
    /// The merchant of every line, when all are one merchant's.
    pub merchant: Option<MerchantId>,
    /// The order's total (no discount).
    pub subtotal: Money,
    /// The platform's currency (ISO 4217).
    pub currency: &'a str,
    /// SHA-256 of the whole request: the same order id with another request is a conflict.
    pub fingerprint: [u8; 32],
    /// The answer to keep and give (to retries too).
    pub answer: &'a serde_json::Value,
    pub now: Timestamp,
}

/// What recording an order without a coupon did.
#[derive(Clone, Debug, PartialEq)]
pub enum RecordOutcome {
    /// Recorded, now or before by the same request: the order (confirmed).
    Recorded(OrderRecord),
    /// The order id was used for another request (another record, or a lock).
    OrderConflict,
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
    /// A confirm found these coupons of the order revoked while it held them: refused,
    /// nothing changed (the order service cancels the order, or its lock expires).
    Revoked(Vec<CouponId>),
    /// A confirm found these coupons of the order past their validity: refused, nothing
    /// changed (the lock ends at its deadline, or by a cancel).
    Expired(Vec<CouponId>),
}

/// What moving a lock's deadline did.
#[derive(Clone, Debug, PartialEq)]
pub enum ExtendStep {
    /// Moved later now.
    Done(OrderRecord),
    /// The deadline already was the one asked for (the same extension repeated): nothing
    /// changed.
    Already(OrderRecord),
    /// The deadline asked for is before the lock's: nothing changed (a deadline only moves
    /// later).
    Earlier(OrderRecord),
    /// The order is no longer locked (confirmed, cancelled or expired): nothing changed,
    /// unless its deadline had passed, in which case the lock was ended as expired first.
    Ended(OrderRecord),
}

/// The start of a request with an idempotency key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdempotencyStart {
    /// The key is new: the request runs, and its answer is recorded with
    /// [`IdempotencyStore::idempotency_finish`].
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

/// Orders holding coupons: lock, confirm, cancel, and the locks that run out.
#[async_trait]
pub trait CheckoutStore: Send + Sync {
    /// The coupons with these ids that exist, by id.
    async fn coupons_by_ids(&self, ids: &[CouponId]) -> StoreResult<Vec<Coupon>>;
    /// The templates with these ids that exist, by id.
    async fn templates_by_ids(&self, ids: &[TemplateId]) -> StoreResult<Vec<Template>>;
    /// Locks coupons for an order, in one transaction: reads the requested coupons and their
    /// templates (locked against concurrent changes), asks `rules`, and if they agree marks the
    /// coupons locked by the order until the deadline with their planned discounts, reserves
    /// those against the templates' budgets, records the order with the rules' answer, and
    /// writes the log rows and `coupon.locked` events. An order id seen before is `Replayed`
    /// for the same fingerprint and an `OrderConflict` for another.
    async fn lock_order(
        &self,
        req: &LockRequest<'_>,
        rules: &LockRules<'_>,
    ) -> StoreResult<LockOutcome>;
    /// Confirms a locked order before its deadline: its coupons become used, their discounts
    /// are given (checked against every template's stock and budget first), log rows and
    /// `coupon.used` events. Past the deadline the lock is ended as expired instead.
    async fn confirm_order(
        &self,
        order: &OrderId,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<OrderStep>;
    /// Cancels a locked order: its coupons go back (unused, or expired if their validity
    /// ended), reservations are returned, log rows and `coupon.released` events.
    async fn cancel_order(
        &self,
        order: &OrderId,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<OrderStep>;
    /// Ends as expired up to `limit` locks whose deadline is at or before `now`, as cancel
    /// does; returns their order ids. Each lock ends once, whoever gets there first.
    async fn expire_locks(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<OrderId>>;
    /// Moves a locked order's deadline later, to `deadline`, and its coupons' `locked_until`
    /// with it, under the order's row lock (so a confirm, a cancel or the sweeper either ends
    /// the lock first or sees the new deadline). Nothing else changes: the coupons stay
    /// locked with their discounts and reservations.
    async fn extend_order(
        &self,
        order: &OrderId,
        deadline: Timestamp,
        now: Timestamp,
    ) -> StoreResult<ExtendStep>;
    async fn order(&self, order: &OrderId) -> StoreResult<OrderRecord>;
    /// The coupons an order holds or used, by id.
    async fn order_coupons(&self, order: &OrderId) -> StoreResult<Vec<Coupon>>;
    /// How many of `user`'s orders are confirmed (refunded ones included) or hold a lock, with
    /// or without a coupon: the `customer.orders` of a condition (an order placed and not yet
    /// paid counts, so two orders locked one after the other are not both first orders).
    async fn confirmed_orders(&self, user: &UserId) -> StoreResult<u64>;
    /// Records an order paid without a coupon, confirmed at `now`, unless its id is taken:
    /// the same request again answers the order as recorded, any other is a conflict.
    async fn record_plain(&self, order: &PlainOrder<'_>) -> StoreResult<RecordOutcome>;
}

/// The idempotency records of write routes.
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Starts a request with an idempotency key: `New` records it as running (taking over a
    /// record that expired, or one still running that started before `stale_before`, whose
    /// process died); otherwise what the first request left.
    async fn idempotency_start(
        &self,
        key: &IdempotencyKey,
        now: Timestamp,
        stale_before: Timestamp,
        expires: Timestamp,
    ) -> StoreResult<IdempotencyStart>;
    /// Records the answer of a request started with `idempotency_start`.
    async fn idempotency_finish(&self, key: &str, answer: &StoredAnswer) -> StoreResult<()>;
    /// Forgets a running request that will not finish (it failed without an answer worth
    /// keeping), so a retry runs again.
    async fn idempotency_abandon(&self, key: &str) -> StoreResult<()>;
    /// Deletes records expired at `now`; returns how many.
    async fn idempotency_purge(&self, now: Timestamp) -> StoreResult<u64>;
}
