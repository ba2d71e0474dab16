//! The lifecycle after creation at the storage boundary: revoking coupons, refunding used
//! ones, a template's history of live changes, and deleting what was never used.

use async_trait::async_trait;
use coupond_domain::{
    Actor, Coupon, CouponId, CouponStatus, ListingId, Money, OrderId, Review, TemplateId, Timestamp,
};

use crate::checkout::OrderRecord;
use crate::StoreResult;

/// What a revoke did.
#[derive(Clone, Debug, PartialEq)]
pub enum RevokeStep {
    /// Revoked now (it was unused, or locked: its order can no longer be confirmed).
    Done(Coupon),
    /// It was revoked before: nothing changed.
    Already(Coupon),
    /// It is used or expired: nothing to revoke (a used coupon comes back through a refund).
    WrongState(Coupon),
}

/// A refund of a confirmed order: all its coupons (`coupons: None`) or these.
#[derive(Clone, Copy, Debug)]
pub struct RefundRequest<'a> {
    pub order_id: &'a OrderId,
    /// Distinct; `None` for every coupon the order used.
    pub coupons: Option<&'a [CouponId]>,
    pub reason: Option<&'a str>,
    pub actor: &'a Actor,
    pub now: Timestamp,
}

/// One coupon given back by a refund, as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refund {
    pub coupon_id: CouponId,
    pub template_id: TemplateId,
    /// The discount it had given, taken back out of its template's budget used.
    pub discount: Money,
    pub used_at: Timestamp,
    /// Where the coupon went: `unused`, `expired` (its validity had ended) or `revoked` (its
    /// template's refund policy is `void`).
    pub to: CouponStatus,
    pub at: Timestamp,
}

/// What a refund did.
#[derive(Clone, Debug, PartialEq)]
pub enum RefundStep {
    /// The order's refunds, those made now first flagged by `new`; refunding again answers
    /// the same refunds with `new` false.
    Done {
        order: OrderRecord,
        refunds: Vec<(Refund, bool)>,
    },
    /// The order is not confirmed: nothing to refund.
    WrongState(OrderRecord),
    /// These coupons were not used by the order: nothing changed.
    NotInOrder(Vec<CouponId>),
}

/// One change of a template's terms: who, when, and `{"field": {"from": .., "to": ..}}`.
#[derive(Clone, Debug, PartialEq)]
pub struct TemplateChange {
    pub id: i64,
    pub template_id: TemplateId,
    pub actor: Actor,
    pub at: Timestamp,
    pub changes: serde_json::Value,
}

/// Who changed a template and what changed (`{"field": {"from": .., "to": ..}}`), for its
/// history.
#[derive(Clone, Debug)]
pub struct TemplateEdit<'a> {
    pub actor: &'a Actor,
    pub changes: &'a serde_json::Value,
    /// `(old, new)`: a live change moved the fixed validity's end; the coupons issued with
    /// the old end get the new one.
    pub coupons_until: Option<(Timestamp, Timestamp)>,
    /// The review the edit leaves ([`Review::after_edit`]): a reviewed enrollment waits again.
    pub review: Review,
}

/// Removals that refuse anything in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deleted {
    Done,
    /// The template was published, is in an activity, or has coupons: kept.
    InUse,
}

/// Revokes, refunds, template history and deletions; each method one transaction.
#[async_trait]
pub trait LifecycleStore: Send + Sync {
    /// Revokes coupon `id` if it is unused or locked: a locked one gives its reservation back
    /// and keeps its order id, so its order's confirm is refused. Logged with `reason`,
    /// with a `coupon.revoked` event.
    async fn revoke_coupon(
        &self,
        id: CouponId,
        reason: &str,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<RevokeStep>;
    /// Gives the coupons a confirmed order used back (per their templates' refund policy),
    /// takes their discount out of the templates' `used` and `given`, and records each
    /// refund once. `NotFound` for an unknown order.
    async fn refund_order(&self, req: &RefundRequest<'_>) -> StoreResult<RefundStep>;
    /// Every refund of order `order`, by coupon id.
    async fn order_refunds(&self, order: &OrderId) -> StoreResult<Vec<Refund>>;
    /// Template `id`'s recorded changes, oldest first.
    async fn template_history(&self, id: TemplateId) -> StoreResult<Vec<TemplateChange>>;
    /// Deletes template `id` if it is a standalone draft never published (its bindings and
    /// codes go with it). `NotFound` if missing.
    async fn delete_template(&self, id: TemplateId) -> StoreResult<Deleted>;
    /// Unbinds listing `id` from every template and deletes it. `NotFound` if missing.
    async fn delete_listing(&self, id: ListingId) -> StoreResult<()>;
}
