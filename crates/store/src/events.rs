//! What the outbox and the coupon operation log hold, encoded once for every backend.
//!
//! Events are written in the transaction that causes them (DESIGN.md §5): an event exists if
//! and only if its change committed. Bodies are JSON built here, so both backends store the
//! same document for the same change and consumers never depend on the backend.

use coupond_domain::{
    Actor, Coupon, CouponId, CouponStatus, Money, OrderId, Template, TemplateId, Timestamp, UserId,
};
use serde_json::json;

/// Event types. Consumers match on these strings; they never change meaning.
pub mod kind {
    /// A user claimed a coupon (a claim or a code redemption).
    pub const COUPON_CLAIMED: &str = "coupon.claimed";
    /// The last coupon of a template was issued.
    pub const TEMPLATE_SOLD_OUT: &str = "template.sold_out";
    /// An order locked a coupon.
    pub const COUPON_LOCKED: &str = "coupon.locked";
    /// An order was confirmed: its coupon is used.
    pub const COUPON_USED: &str = "coupon.used";
    /// An unused coupon's validity ended.
    pub const COUPON_EXPIRED: &str = "coupon.expired";
    /// A coupon was issued by a bulk issuance job.
    pub const COUPON_ISSUED: &str = "coupon.issued";
    /// A coupon was revoked (unused or locked); the body says why and by whom.
    pub const COUPON_REVOKED: &str = "coupon.revoked";
    /// A refund of a confirmed order gave a used coupon back (or voided it).
    pub const COUPON_REFUNDED: &str = "coupon.refunded";
    /// A template's terms changed (before claiming, or live: more stock, later ends).
    pub const TEMPLATE_CHANGED: &str = "template.changed";
    /// An activity entered a status (`from`, `to`, `at`).
    pub const ACTIVITY_STATUS_CHANGED: &str = "activity.status_changed";
    /// A template entered a status (`from`, `to`, `at`).
    pub const TEMPLATE_STATUS_CHANGED: &str = "template.status_changed";
    /// The live coupons of a template's listings changed (it started or stopped being
    /// claimable).
    pub const LISTING_COUPONS_CHANGED: &str = "listing.coupons_changed";
    /// A bulk issuance job finished.
    pub const ISSUANCE_FINISHED: &str = "issuance.finished";
    /// The platform approved a merchant's enrollment (`template_id`, `merchant_id`, `actor`).
    pub const TEMPLATE_APPROVED: &str = "template.approved";
    /// The platform rejected a merchant's enrollment, with the `reason` the merchant reads.
    pub const TEMPLATE_REJECTED: &str = "template.rejected";
    /// A template was paused (`template_id`, `scope`: `template` or `activity`, `reason`,
    /// `actor`, `at`): its claims wait; coupons held stay usable.
    pub const TEMPLATE_PAUSED: &str = "template.paused";
    /// A paused template was resumed (`template_id`, `actor`, `at`).
    pub const TEMPLATE_RESUMED: &str = "template.resumed";
    /// An activity was paused, with `template_ids`, the templates its pause paused.
    pub const ACTIVITY_PAUSED: &str = "activity.paused";
    /// A paused activity was resumed, with `template_ids`, the templates it resumed.
    pub const ACTIVITY_RESUMED: &str = "activity.resumed";
    /// A run of the self-audit found broken invariants (`run_id`, `violations`, `checks`, the
    /// first findings); the platform's endpoints get it.
    pub const AUDIT_FAILED: &str = "audit.failed";
    /// A reminder: a user holds an unused coupon of `template_id` expiring soon (the earliest
    /// `valid_until`); written with the inbox's reminder, once per user, template and day.
    pub const COUPON_EXPIRING: &str = "coupon.expiring";
    /// Every type, for validating subscriptions.
    pub const ALL: [&str; 22] = [
        COUPON_CLAIMED,
        COUPON_ISSUED,
        COUPON_LOCKED,
        COUPON_USED,
        COUPON_RELEASED,
        COUPON_EXPIRED,
        COUPON_EXPIRING,
        TEMPLATE_SOLD_OUT,
        TEMPLATE_STATUS_CHANGED,
        ACTIVITY_STATUS_CHANGED,
        LISTING_COUPONS_CHANGED,
        ISSUANCE_FINISHED,
        COUPON_REVOKED,
        COUPON_REFUNDED,
        TEMPLATE_CHANGED,
        TEMPLATE_APPROVED,
        TEMPLATE_REJECTED,
        TEMPLATE_PAUSED,
        TEMPLATE_RESUMED,
        ACTIVITY_PAUSED,
        ACTIVITY_RESUMED,
        AUDIT_FAILED,
    ];
    /// An order's lock ended without a confirm (cancelled, or past its deadline): the coupon
    /// is unused again, or expired if its validity ended meanwhile (`to`).
    pub const COUPON_RELEASED: &str = "coupon.released";
}

/// One row of the outbox.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Grows with each event; observers deduplicate by it.
    pub id: i64,
    /// The writing transaction's position (PostgreSQL; 0 on SQLite): see
    /// [`OutboxPosition`](crate::OutboxPosition).
    pub txid: i64,
    /// One of [`kind`].
    pub kind: String,
    pub at: Timestamp,
    pub body: serde_json::Value,
}

/// One status change of a coupon (seed `t_coupon_opt_record`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CouponEvent {
    pub id: i64,
    pub coupon_id: CouponId,
    /// `None` when the change created the coupon.
    pub from: Option<CouponStatus>,
    pub to: CouponStatus,
    /// The order that locked, used or released it.
    pub order_id: Option<String>,
    pub actor: Actor,
    /// Why, when a person said so (a revoke's or a refund's reason).
    pub reason: Option<String>,
    pub at: Timestamp,
}

/// The kind and body of the event of a new coupon: [`kind::COUPON_CLAIMED`], or
/// [`kind::COUPON_ISSUED`] when a bulk issuance job issued it.
pub fn coupon_claimed(c: &Coupon, actor: &Actor, issuance: Option<i64>) -> (&'static str, String) {
    let body = NewCoupon {
        actor,
        code: &c.code,
        coupon_id: c.id,
        issuance_id: issuance,
        template_id: c.template_id,
        user_id: &c.user_id,
        valid_from: c.valid_from,
        valid_until: c.valid_until,
    };
    let kind = match issuance {
        Some(_) => kind::COUPON_ISSUED,
        None => kind::COUPON_CLAIMED,
    };
    // Serializing plain fields cannot fail; an empty body would be refused by consumers.
    (kind, serde_json::to_string(&body).unwrap_or_default())
}

/// The body of [`coupon_claimed`], written straight to text: one per claimed coupon, in the
/// claim's transaction, where building a `serde_json::Value` map first cost more than the
/// row. Fields in name order, as the map wrote them, so the document is unchanged.
#[derive(serde::Serialize)]
struct NewCoupon<'a> {
    actor: &'a Actor,
    code: &'a Option<String>,
    coupon_id: CouponId,
    #[serde(skip_serializing_if = "Option::is_none")]
    issuance_id: Option<i64>,
    template_id: TemplateId,
    user_id: &'a UserId,
    valid_from: Timestamp,
    valid_until: Timestamp,
}

/// The body of [`kind::COUPON_LOCKED`], [`kind::COUPON_USED`] and [`kind::COUPON_RELEASED`]
/// (which also says what the coupon became, `to`).
pub fn coupon_order(
    c: &Coupon,
    order: &OrderId,
    discount: Money,
    to: Option<CouponStatus>,
) -> String {
    coupon_order_value(c, order, discount, to).to_string()
}

/// The body of [`coupon_order`] as a JSON value, for callers that add to it.
pub fn coupon_order_value(
    c: &Coupon,
    order: &OrderId,
    discount: Money,
    to: Option<CouponStatus>,
) -> serde_json::Value {
    let mut body = json!({
        "coupon_id": c.id,
        "template_id": c.template_id,
        "user_id": c.user_id,
        "valid_until": c.valid_until,
        "order_id": order,
        "discount": discount,
    });
    if let Some(to) = to {
        body["to"] = json!(to);
    }
    body
}

/// `coupon.revoked`: the coupon, the status it left, why and by whom; the order that held
/// it, if it was locked.
pub fn coupon_revoked(c: &Coupon, from: CouponStatus, reason: &str, actor: &Actor) -> String {
    json!({
        "coupon_id": c.id,
        "template_id": c.template_id,
        "user_id": c.user_id,
        "from": from,
        "order_id": c.order_id,
        "reason": reason,
        "actor": actor,
    })
    .to_string()
}

/// `template.changed`: what a change of its terms changed (`{"field": {"from": .., "to":
/// ..}}`), by whom, and the stock it has now.
pub fn template_changed(
    t: TemplateId,
    changes: &serde_json::Value,
    actor: &Actor,
    total_stock: i64,
) -> String {
    json!({ "template_id": t, "changes": changes, "actor": actor, "total_stock": total_stock })
        .to_string()
}

/// The body of `template.approved` / `template.rejected`.
pub fn template_reviewed(t: &Template, actor: &Actor) -> String {
    json!({
        "template_id": t.id,
        "merchant_id": t.merchant_id,
        "activity_id": t.spec.activity_id,
        "decision": t.review.as_str(),
        "reason": t.review.reason(),
        "actor": actor,
    })
    .to_string()
}

pub fn coupon_expired(c: &Coupon) -> String {
    json!({
        "coupon_id": c.id,
        "template_id": c.template_id,
        "user_id": c.user_id,
        "valid_until": c.valid_until,
    })
    .to_string()
}

/// The body of a status change (`activity.status_changed`, `template.status_changed`).
pub fn status_changed(
    subject: &str,
    id: i64,
    from: Option<&str>,
    to: &str,
    at: Timestamp,
) -> String {
    let mut body = json!({ "from": from, "to": to, "at": at });
    body[subject] = json!(id);
    body.to_string()
}

/// The body of [`kind::ISSUANCE_FINISHED`].
pub fn issuance_finished(j: &crate::Issuance) -> String {
    json!({
        "issuance_id": j.id,
        "template_id": j.template_id,
        "requested": j.requested,
        "issued": j.issued,
        "skipped": j.skipped,
        "sold_out": j.sold_out,
        "not_eligible": j.not_eligible,
    })
    .to_string()
}

/// The body of [`kind::TEMPLATE_SOLD_OUT`].
pub fn template_sold_out(template: TemplateId, total_stock: i64) -> String {
    json!({ "template_id": template, "total_stock": total_stock }).to_string()
}

/// The body of [`kind::AUDIT_FAILED`]: the run, how many findings, the checks that found
/// them, and the first ten.
pub fn audit_failed(run: &crate::AuditRun) -> String {
    let mut checks: Vec<&str> = run.findings.iter().map(|f| f.check.as_str()).collect();
    checks.sort_unstable();
    checks.dedup();
    json!({
        "run_id": run.id,
        "trigger": run.trigger,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "violations": run.violations,
        "checks": checks,
        "first": run.findings.iter().take(10).collect::<Vec<_>>(),
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Coupon 9 of template 3, new, for `user`, valid from `from` until `until`.
    fn coupon(user: &str, from: &str, until: &str) -> Coupon {
        let from = Timestamp::parse(from).unwrap();
        Coupon {
            id: CouponId::new(9).unwrap(),
            template_id: TemplateId::new(3).unwrap(),
            user_id: UserId::parse(user).unwrap(),
            stored_status: CouponStatus::Unused,
            claimed_at: from,
            valid_from: from,
            valid_until: Timestamp::parse(until).unwrap(),
            code: None,
            order_id: None,
            locked_until: None,
            discount: None,
            used_at: None,
        }
    }

    #[test]
    fn claimed_body_names_the_coupon_and_the_actor() {
        let t = "2026-03-01T00:00:00Z";
        let c = coupon("u-1", t, t);
        let (kind, body) = coupon_claimed(&c, &Actor::Service, None);
        assert_eq!(kind, kind::COUPON_CLAIMED);
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["coupon_id"], 9);
        assert_eq!(body["template_id"], 3);
        assert_eq!(body["user_id"], "u-1");
        assert_eq!(body["actor"], "service");
        assert_eq!(body["valid_until"], "2026-03-01T00:00:00Z");
    }

    /// The typed body writes the document the `json!` map wrote (consumers and webhook
    /// receivers keep what they stored): keys in name order, `code` null when absent,
    /// `issuance_id` only for issued coupons.
    #[test]
    fn claimed_body_is_the_document_the_map_wrote() {
        let mut c = coupon(
            "u.1@shop:x",
            "2026-03-01T00:00:00Z",
            "2026-04-01T12:30:00.5Z",
        );
        let actor = Actor::User(c.user_id.clone());
        for (code, issuance) in [(None, None), (Some("SPRING".to_owned()), Some(7))] {
            c.code = code;
            let mut map = json!({
                "coupon_id": c.id,
                "template_id": c.template_id,
                "user_id": c.user_id,
                "valid_from": c.valid_from,
                "valid_until": c.valid_until,
                "actor": actor,
                "code": c.code,
            });
            if let Some(job) = issuance {
                map["issuance_id"] = json!(job);
            }
            let (kind, body) = coupon_claimed(&c, &actor, issuance);
            assert_eq!(body, map.to_string());
            let want = if issuance.is_some() {
                kind::COUPON_ISSUED
            } else {
                kind::COUPON_CLAIMED
            };
            assert_eq!(kind, want);
        }
    }
}
