//! The lifecycle after creation, for every front door: revoking a coupon, refunding a
//! confirmed order, deleting a draft. The front door has parsed the request and checked the
//! caller may reach the record; this applies the rules and makes the one store call.

use std::collections::BTreeSet;

use coupond_domain::{
    Actor, Coupon, CouponId, CouponStatus, DomainError, Note, OrderId, Template, TemplateStatus,
    Timestamp,
};
use coupond_store::audit::{self, Change};
use coupond_store::checkout::OrderRecord;
use coupond_store::{Deleted, Refund, RefundRequest, RefundStep, RevokeStep, Store};

use crate::CampaignError;

/// Most coupons one refund may name.
pub const MAX_REFUND_COUPONS: usize = 100;

/// Revokes coupon `id` (unused or locked). Revoking it again answers the coupon as it is;
/// a used coupon is refused (`coupon_used`: refund its order instead), as is an expired one
/// (`coupon_expired`).
pub async fn revoke_coupon(
    store: &dyn Store,
    id: CouponId,
    reason: &Note,
    actor: &Actor,
    now: Timestamp,
) -> Result<Coupon, CampaignError> {
    let before = store.coupon(id).await?;
    let merchant = store.template(before.template_id).await?.merchant_id;
    let change = Change::new("coupon.revoke", "coupon", now)
        .object(id.get())
        .merchant(merchant)
        .before(&serde_json::json!({"status": before.status(now).as_str()}))
        .after(&serde_json::json!({"status": "revoked", "reason": reason.as_str()}));
    let write = store.revoke_coupon(id, reason.as_str(), actor, now);
    match audit::change(change, write).await? {
        RevokeStep::Done(c) | RevokeStep::Already(c) => Ok(c),
        RevokeStep::WrongState(c) if c.status(now) == CouponStatus::Used => {
            Err(DomainError::state(
                "coupon_used",
                "the coupon is used; refund its order to give it back or void it",
            )
            .into())
        }
        RevokeStep::WrongState(_) => Err(DomainError::state(
            "coupon_expired",
            "the coupon has expired; there is nothing to revoke",
        )
        .into()),
    }
}

/// What a refund answers: the order and every refund of it, those made by this call flagged.
#[derive(Clone, Debug, PartialEq)]
pub struct RefundOutcome {
    pub order: OrderRecord,
    pub refunds: Vec<(Refund, bool)>,
}

/// Refunds a confirmed order: every coupon it used (`coupons: None`) or the ones named
/// (1 to [`MAX_REFUND_COUPONS`], distinct). Idempotent: a coupon refunded before is answered
/// as it was refunded. Refused: an order not confirmed (`order_not_confirmed`), a coupon the
/// order did not use (`not_in_order`, naming it).
pub async fn refund_order(
    store: &dyn Store,
    order_id: &OrderId,
    coupons: Option<&[CouponId]>,
    reason: Option<&Note>,
    actor: &Actor,
    now: Timestamp,
) -> Result<RefundOutcome, CampaignError> {
    if let Some(ids) = coupons {
        check_refund_ids(ids)?;
    }
    let req = RefundRequest {
        order_id,
        coupons,
        reason: reason.map(Note::as_str),
        actor,
        now,
    };
    match store.refund_order(&req).await? {
        RefundStep::Done { order, refunds } => Ok(RefundOutcome { order, refunds }),
        RefundStep::WrongState(o) => Err(DomainError::state(
            "order_not_confirmed",
            format!(
                "the order is {}; only confirmed orders are refunded",
                o.state.as_str()
            ),
        )
        .into()),
        RefundStep::NotInOrder(ids) => {
            let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
            Err(DomainError::invalid(
                "coupon_ids",
                "not_in_order",
                format!("not used by this order: {}", ids.join(", ")),
            )
            .into())
        }
    }
}

fn check_refund_ids(ids: &[CouponId]) -> Result<(), DomainError> {
    if ids.is_empty() || ids.len() > MAX_REFUND_COUPONS {
        return Err(DomainError::invalid(
            "coupon_ids",
            "invalid_length",
            format!("1 to {MAX_REFUND_COUPONS} coupon ids, or leave it out for all"),
        ));
    }
    if ids.iter().collect::<BTreeSet<_>>().len() != ids.len() {
        return Err(DomainError::invalid(
            "coupon_ids",
            "duplicate",
            "each coupon at most once",
        ));
    }
    Ok(())
}

/// Deletes template `t` if it is a standalone draft never published and has no coupons
/// (`not_draft` otherwise: abort it instead).
pub async fn delete_template(
    store: &dyn Store,
    t: &Template,
    now: Timestamp,
) -> Result<(), CampaignError> {
    let not_draft = || {
        DomainError::state(
            "not_draft",
            "only a draft never published is deleted; abort the template instead",
        )
    };
    if t.status(now) != TemplateStatus::Draft {
        return Err(not_draft().into());
    }
    let change = Change::new("template.delete", "template", now)
        .object(t.id.get())
        .merchant(t.merchant_id)
        .before(&t.spec.draft());
    match audit::change(change, store.delete_template(t.id)).await? {
        Deleted::Done => Ok(()),
        Deleted::InUse => Err(not_draft().into()),
    }
}
