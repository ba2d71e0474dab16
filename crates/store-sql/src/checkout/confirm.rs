//! Confirming a locked order: every coupon it holds is used and counted against its
//! template's stock and budget, after the amount verification (the reference design's
//! safeguard) and the checks that the coupons are still the order's to use (none revoked, none
//! past its validity).

use std::collections::BTreeMap;

use coupond_domain::{
    Actor, Coupon, CouponId, CouponStatus, Money, OrderId, TemplateId, Timestamp,
};
use coupond_store::checkout::{over_limits, OrderState, OrderStep};
use coupond_store::events::{self, kind};
use coupond_store::{StoreError, StoreResult};

use super::{end_order, expire, log_change, order_row, templates_locked};
use crate::rows::coupon as coupon_row;
use crate::scheduling::emit;
use crate::{sql, Db, Exec, Work};

/// Confirms a locked order before its deadline (past it, ends the lock as expired).
pub async fn confirm_order(
    db: &dyn Db,
    order: &OrderId,
    actor: &Actor,
    now: Timestamp,
) -> StoreResult<OrderStep> {
    let d = db.dialect();
    let mut tx = db.begin(Work::Request).await?;
    let (record, _) = order_row(&mut *tx, d, order, true)
        .await?
        .ok_or(StoreError::NotFound)?;
    match record.state {
        OrderState::Confirmed => return Ok(OrderStep::Already(record)),
        OrderState::Cancelled | OrderState::Expired => return Ok(OrderStep::WrongState(record)),
        OrderState::Locked if now >= record.deadline => {
            let ended = expire(&mut *tx, d, &record, now).await?;
            tx.commit().await?;
            return Ok(OrderStep::WrongState(ended));
        }
        OrderState::Locked => {}
    }
    // Every coupon under the order, locked: a revoke of one waits for this, or this for it,
    // and each then sees what the other did.
    let q = sql(format!(
        "SELECT * FROM {} WHERE order_id = $1 ORDER BY id{}",
        d.coupons_of_order(),
        d.lock_rows(false)
    ));
    let rows = tx.fetch_all(q.bind(order.as_str())).await?;
    let mut held = Vec::with_capacity(rows.len());
    let mut revoked = Vec::new();
    for r in &rows {
        let c = coupon_row(r)?;
        match c.stored_status {
            CouponStatus::Revoked => revoked.push(c.id),
            CouponStatus::Locked => held.push(c),
            _ => {}
        }
    }
    if !revoked.is_empty() {
        return Ok(OrderStep::Revoked(revoked));
    }
    // A lock ends by its coupons' validity, but one taken before that rule (or a validity
    // moved earlier since) may outlive it: an expired coupon is never used.
    let expired: Vec<CouponId> = held
        .iter()
        .filter(|c| now >= c.valid_until)
        .map(|c| c.id)
        .collect();
    if !expired.is_empty() {
        return Ok(OrderStep::Expired(expired));
    }
    if let Some(why) = use_amounts(&mut *tx, db, &held).await? {
        return Ok(OrderStep::AmountViolation(why));
    }
    tx.execute(
        sql(format!(
            "UPDATE {} SET status = 'used', used_at = $1, locked_until = NULL, updated_at = $1
             WHERE order_id = $2 AND status = 'locked'",
            d.coupons_of_order()
        ))
        .bind(now)
        .bind(order.as_str()),
    )
    .await?;
    for c in &held {
        let (from, to) = (CouponStatus::Locked, CouponStatus::Used);
        log_change(&mut *tx, c.id, from, to, order, actor, now).await?;
        let body = events::coupon_order(c, order, c.discount.unwrap_or(Money::ZERO), None);
        emit(&mut *tx, kind::COUPON_USED, now, body).await?;
    }
    let record = end_order(&mut *tx, d, order, OrderState::Confirmed, now).await?;
    coupond_store::failpoints::hit("confirm.before_commit")?;
    tx.commit().await?;
    Ok(OrderStep::Done(record))
}

/// The amount verification (the reference design's safeguard) and its updates: what the
/// coupons `held` use and give must fit every template's stock and budget, as recorded (its
/// templates locked, by id). Why not, if it does not; else their templates count them used
/// and given and no longer reserved.
async fn use_amounts<E: Exec + ?Sized>(
    ex: &mut E,
    db: &dyn Db,
    held: &[Coupon],
) -> StoreResult<Option<String>> {
    let mut per_template: BTreeMap<TemplateId, (i64, i64)> = BTreeMap::new();
    for c in held {
        let e = per_template.entry(c.template_id).or_default();
        e.0 += 1;
        e.1 += c.discount.map_or(0, Money::minor);
    }
    let ids: Vec<i64> = per_template.keys().map(|t| t.get()).collect();
    for t in templates_locked(ex, db, ids).await? {
        let (k, d) = per_template.get(&t.id).copied().unwrap_or_default();
        if let Some(why) = over_limits(&t, k, d) {
            return Ok(Some(why));
        }
        ex.execute(
            sql("UPDATE templates SET used = used + $1, given = given + $2,
                     reserved = reserved - $2
                 WHERE id = $3")
            .bind(k)
            .bind(d)
            .bind(t.id.get()),
        )
        .await?;
    }
    Ok(None)
}
