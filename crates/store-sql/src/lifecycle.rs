//! [`LifecycleStore`](coupond_store::LifecycleStore) on every backend: revoke, refund, the
//! template history, deletions.
//!
//! Locks follow checkout's order (DESIGN.md, and `checkout`'s module doc): the order row,
//! then coupons by id, then templates by id, so a revoke or a refund never waits on a confirm
//! or a claim in the opposite order.

use std::collections::{BTreeMap, BTreeSet};

use coupond_domain::{
    Actor, Coupon, CouponId, CouponStatus, ListingId, Money, OrderId, RefundPolicy, Template,
    TemplateId, Timestamp,
};
use coupond_store::events::{self, kind};
use coupond_store::lifecycle::{Deleted, Refund, RefundRequest, RefundStep, RevokeStep};
use coupond_store::{OrderState, StoreError, StoreResult, TemplateChange};

use crate::backend::{Backend, SqlStore};
use crate::checkout::{log_coupon, order_row, templates_locked, LogEntry};
use crate::rows::coupon as coupon_row;
use crate::scheduling::emit;
use crate::{sql, Db, Dialect, Exec, Row, Work};
use coupond_store::LifecycleStore;

/// Revokes an unused or locked coupon (see the trait).
pub async fn revoke_coupon(
    db: &dyn Db,
    id: CouponId,
    reason: &str,
    actor: &Actor,
    now: Timestamp,
) -> StoreResult<RevokeStep> {
    let d = db.dialect();
    let mut tx = db.begin(Work::Request).await?;
    let q = sql(format!(
        "SELECT * FROM coupons WHERE id = $1{}",
        d.lock_rows(false)
    ));
    let row = tx.fetch_optional(q.bind(id.get())).await?;
    let mut c = coupon_row(&row.ok_or(StoreError::NotFound)?)?;
    match c.status(now) {
        CouponStatus::Revoked => return Ok(RevokeStep::Already(c)),
        CouponStatus::Used | CouponStatus::Expired => return Ok(RevokeStep::WrongState(c)),
        CouponStatus::Unused | CouponStatus::Locked => {}
    }
    let from = c.stored_status;
    if from == CouponStatus::Locked {
        // Its reservation goes back; the order keeps its id and finds it revoked at confirm.
        templates_locked(&mut *tx, db, vec![c.template_id.get()]).await?;
        let reserved = c.discount.map_or(0, Money::minor);
        tx.execute(
            sql("UPDATE templates SET reserved = reserved - $1 WHERE id = $2")
                .bind(reserved)
                .bind(c.template_id.get()),
        )
        .await?;
    }
    tx.execute(
        sql(
            "UPDATE coupons SET status = 'revoked', locked_until = NULL, discount = NULL,
                 updated_at = $1
             WHERE id = $2",
        )
        .bind(now)
        .bind(id.get()),
    )
    .await?;
    let entry = LogEntry {
        coupon: id,
        from,
        to: CouponStatus::Revoked,
        order: c.order_id.as_ref(),
        actor,
        reason: Some(reason),
        now,
    };
    log_coupon(&mut *tx, &entry).await?;
    let body = events::coupon_revoked(&c, from, reason, actor);
    emit(&mut *tx, kind::COUPON_REVOKED, now, body).await?;
    tx.commit().await?;
    c.stored_status = CouponStatus::Revoked;
    c.locked_until = None;
    c.discount = None;
    Ok(RevokeStep::Done(c))
}

/// Refunds coupons of a confirmed order (see the trait).
pub async fn refund_order(db: &dyn Db, req: &RefundRequest<'_>) -> StoreResult<RefundStep> {
    let d = db.dialect();
    let mut tx = db.begin(Work::Request).await?;
    let (order, _) = order_row(&mut *tx, d, req.order_id, true)
        .await?
        .ok_or(StoreError::NotFound)?;
    if order.state != OrderState::Confirmed {
        return Ok(RefundStep::WrongState(order));
    }
    let q = sql(format!(
        "SELECT * FROM {} WHERE order_id = $1 AND status = 'used' ORDER BY id{}",
        d.coupons_of_order(),
        d.lock_rows(false)
    ));
    let used = tx.fetch_all(q.bind(req.order_id.as_str())).await?;
    let used: Vec<Coupon> = used.iter().map(coupon_row).collect::<StoreResult<_>>()?;
    let before = refunds_of(&mut *tx, req.order_id).await?;
    let take: Vec<&Coupon> = match req.coupons {
        None => used.iter().collect(),
        Some(wanted) => {
            let known: BTreeSet<CouponId> = used
                .iter()
                .map(|c| c.id)
                .chain(before.iter().map(|r| r.coupon_id))
                .collect();
            let missing: Vec<CouponId> = wanted
                .iter()
                .filter(|id| !known.contains(id))
                .copied()
                .collect();
            if !missing.is_empty() {
                return Ok(RefundStep::NotInOrder(missing));
            }
            used.iter().filter(|c| wanted.contains(&c.id)).collect()
        }
    };
    let made = give_back(&mut *tx, db, &take, req).await?;
    // The order's amounts follow: its coupons' discount comes back, and once no coupon of it
    // is used any more the whole order counts as refunded.
    if !made.is_empty() {
        let back: i64 = made.iter().map(|r| r.discount.minor()).sum();
        let all = take.len() == used.len();
        tx.execute(
            sql(
                "UPDATE orders SET refunded_discount = refunded_discount + $1,
                     refunded_at = COALESCE($2, refunded_at)
                 WHERE order_id = $3",
            )
            .bind(back)
            .bind(all.then_some(req.now))
            .bind(req.order_id.as_str()),
        )
        .await?;
    }
    tx.commit().await?;
    let mut refunds: Vec<(Refund, bool)> = before.into_iter().map(|r| (r, false)).collect();
    refunds.extend(made.into_iter().map(|r| (r, true)));
    refunds.sort_by_key(|(r, _)| r.coupon_id);
    Ok(RefundStep::Done { order, refunds })
}

/// Where a refunded coupon goes: revoked under a `void` policy, else back to unused (expired
/// if its validity has ended).
fn refunded_to(t: &Template, c: &Coupon, now: Timestamp) -> CouponStatus {
    match t.spec.refund_policy {
        RefundPolicy::Void => CouponStatus::Revoked,
        RefundPolicy::Return if c.valid_until <= now => CouponStatus::Expired,
        RefundPolicy::Return => CouponStatus::Unused,
    }
}

/// Gives `take` back: each coupon's new status, its refund row, log row and event, then its
/// template's `used` and `given` (templates locked by id, after the coupons).
async fn give_back<E: Exec + ?Sized>(
    ex: &mut E,
    db: &dyn Db,
    take: &[&Coupon],
    req: &RefundRequest<'_>,
) -> StoreResult<Vec<Refund>> {
    let mut per_template: BTreeMap<TemplateId, (i64, i64)> = BTreeMap::new();
    for c in take {
        let e = per_template.entry(c.template_id).or_default();
        e.0 += 1;
        e.1 += c.discount.map_or(0, Money::minor);
    }
    let ids: Vec<i64> = per_template.keys().map(|t| t.get()).collect();
    let templates: BTreeMap<TemplateId, Template> = templates_locked(ex, db, ids)
        .await?
        .into_iter()
        .map(|t| (t.id, t))
        .collect();
    let mut made = Vec::with_capacity(take.len());
    for c in take {
        let t = templates.get(&c.template_id).ok_or(StoreError::NotFound)?;
        let refund = Refund {
            coupon_id: c.id,
            template_id: c.template_id,
            discount: c.discount.unwrap_or(Money::ZERO),
            used_at: c.used_at.unwrap_or(req.now),
            to: refunded_to(t, c, req.now),
            at: req.now,
        };
        refund_one(ex, c, &refund, req).await?;
        made.push(refund);
    }
    for (t, (k, g)) in per_template {
        ex.execute(
            sql("UPDATE templates SET used = used - $1, given = given - $2 WHERE id = $3")
                .bind(k)
                .bind(g)
                .bind(t.get()),
        )
        .await?;
    }
    Ok(made)
}

/// One coupon's refund: its row, its new status, its log row and its event.
async fn refund_one<E: Exec + ?Sized>(
    ex: &mut E,
    c: &Coupon,
    r: &Refund,
    req: &RefundRequest<'_>,
) -> StoreResult<()> {
    ex.execute(
        sql(
            "UPDATE coupons SET status = $1, order_id = NULL, discount = NULL, used_at = NULL,
                 locked_until = NULL, updated_at = $2
             WHERE id = $3",
        )
        .bind(r.to.as_str())
        .bind(req.now)
        .bind(c.id.get()),
    )
    .await?;
    ex.execute(
        sql(
            "INSERT INTO refunds (order_id, coupon_id, template_id, discount, used_at, to_status,
                 actor, reason, at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(req.order_id.as_str())
        .bind(c.id.get())
        .bind(c.template_id.get())
        .bind(r.discount.minor())
        .bind(r.used_at)
        .bind(r.to.as_str())
        .bind(req.actor.to_text())
        .bind(req.reason)
        .bind(req.now),
    )
    .await?;
    let entry = LogEntry {
        coupon: c.id,
        from: CouponStatus::Used,
        to: r.to,
        order: Some(req.order_id),
        actor: req.actor,
        reason: req.reason,
        now: req.now,
    };
    log_coupon(ex, &entry).await?;
    let mut body = events::coupon_order_value(c, req.order_id, r.discount, Some(r.to));
    body["reason"] = serde_json::json!(req.reason);
    emit(ex, kind::COUPON_REFUNDED, req.now, body.to_string()).await
}

/// Every refund of order `$1`, by coupon id.
const REFUNDS_OF: &str = "SELECT * FROM refunds WHERE order_id = $1 ORDER BY coupon_id";

/// Every refund of `order`, by coupon id, inside the caller's transaction.
async fn refunds_of<E: Exec + ?Sized>(ex: &mut E, order: &OrderId) -> StoreResult<Vec<Refund>> {
    let q = sql(REFUNDS_OF);
    let rows = ex.fetch_all(q.bind(order.as_str())).await?;
    rows.iter().map(refund_row).collect()
}

pub async fn order_refunds(db: &dyn Db, order: &OrderId) -> StoreResult<Vec<Refund>> {
    let q = sql(REFUNDS_OF);
    let rows = db.read_all(q.bind(order.as_str())).await?;
    rows.iter().map(refund_row).collect()
}

fn refund_row(r: &Row) -> StoreResult<Refund> {
    let status =
        |s: &str| CouponStatus::parse(s).ok_or_else(|| StoreError::other("unknown coupon status"));
    Ok(Refund {
        coupon_id: CouponId::new(r.i64("coupon_id")?).map_err(StoreError::other)?,
        template_id: TemplateId::new(r.i64("template_id")?).map_err(StoreError::other)?,
        discount: Money::new(r.i64("discount")?).map_err(StoreError::other)?,
        used_at: r.time("used_at")?,
        to: status(r.str("to_status")?)?,
        at: r.time("at")?,
    })
}

/// Records a change of template `id` in its history, inside the caller's transaction.
pub async fn record_change<E: Exec + ?Sized>(
    ex: &mut E,
    id: TemplateId,
    actor: &Actor,
    changes: &serde_json::Value,
    now: Timestamp,
) -> StoreResult<()> {
    ex.execute(
        sql("INSERT INTO template_changes (template_id, actor, at, changes) VALUES ($1, $2, $3, $4)")
            .bind(id.get())
            .bind(actor.to_text())
            .bind(now)
            .bind(crate::Json(changes.to_string())),
    )
    .await?;
    Ok(())
}

pub async fn template_history(db: &dyn Db, id: TemplateId) -> StoreResult<Vec<TemplateChange>> {
    let q = sql("SELECT * FROM template_changes WHERE template_id = $1 ORDER BY id");
    let rows = db.read_all(q.bind(id.get())).await?;
    rows.iter()
        .map(|r| {
            Ok(TemplateChange {
                id: r.i64("id")?,
                template_id: id,
                actor: Actor::read(r.str("actor")?),
                at: r.time("at")?,
                changes: serde_json::from_str(r.str("changes")?).map_err(StoreError::other)?,
            })
        })
        .collect()
}

/// Deletes a standalone draft never published, with its bindings, codes and history.
pub async fn delete_template(db: &dyn Db, id: TemplateId) -> StoreResult<Deleted> {
    let d = db.dialect();
    let mut tx = db.begin(Work::Request).await?;
    let q = sql(format!(
        "SELECT activity_id, published_at FROM templates WHERE id = $1{}",
        d.lock_rows(false)
    ));
    let row = tx.fetch_optional(q.bind(id.get())).await?;
    let row = row.ok_or(StoreError::NotFound)?;
    if row.opt_i64("activity_id")?.is_some() || row.opt_time("published_at")?.is_some() {
        return Ok(Deleted::InUse);
    }
    let q = sql("SELECT COUNT(*) AS n FROM coupons WHERE template_id = $1");
    if tx.fetch_one(q.bind(id.get())).await?.i64("n")? > 0 {
        return Ok(Deleted::InUse);
    }
    // Listings count their bindings: each loses one.
    tx.execute(
        sql("UPDATE listings SET bound = bound - 1
             WHERE id IN (SELECT listing_id FROM bindings WHERE template_id = $1)")
        .bind(id.get()),
    )
    .await?;
    // A draft has no coupons, so no holdings, reminders or claim keys; codes and code
    // batches may have been defined for it, and issuance jobs asked for (each failed or
    // fails at once: a draft issues nothing). PostgreSQL and MySQL lay stock out in
    // `template_stock`.
    let mut tables = vec![
        "bindings",
        "codes",
        "code_batches",
        "issuances",
        "template_changes",
        "template_tags",
    ];
    if d != Dialect::Sqlite {
        tables.push("template_stock");
    }
    tables.push("templates");
    for table in tables {
        let column = if table == "templates" {
            "id"
        } else {
            "template_id"
        };
        let q = sql(format!("DELETE FROM {table} WHERE {column} = $1"));
        tx.execute(q.bind(id.get())).await?;
    }
    tx.commit().await?;
    Ok(Deleted::Done)
}

/// Deletes a listing and its bindings.
pub async fn delete_listing(db: &dyn Db, id: ListingId) -> StoreResult<()> {
    let d = db.dialect();
    let mut tx = db.begin(Work::Request).await?;
    let q = sql(format!(
        "SELECT id FROM listings WHERE id = $1{}",
        d.lock_rows(false)
    ));
    if tx.fetch_optional(q.bind(id.get())).await?.is_none() {
        return Err(StoreError::NotFound);
    }
    tx.execute(sql("DELETE FROM bindings WHERE listing_id = $1").bind(id.get()))
        .await?;
    tx.execute(sql("DELETE FROM listings WHERE id = $1").bind(id.get()))
        .await?;
    tx.commit().await?;
    Ok(())
}

#[async_trait::async_trait]
impl<B: Backend> LifecycleStore for SqlStore<B> {
    async fn revoke_coupon(
        &self,
        id: CouponId,
        reason: &str,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<RevokeStep> {
        revoke_coupon(&self.db, id, reason, actor, now).await
    }
    async fn refund_order(&self, req: &RefundRequest<'_>) -> StoreResult<RefundStep> {
        refund_order(&self.db, req).await
    }
    async fn order_refunds(&self, order: &OrderId) -> StoreResult<Vec<Refund>> {
        order_refunds(&self.db, order).await
    }
    async fn template_history(&self, id: TemplateId) -> StoreResult<Vec<TemplateChange>> {
        template_history(&self.db, id).await
    }
    async fn delete_template(&self, id: TemplateId) -> StoreResult<Deleted> {
        delete_template(&self.db, id).await
    }
    async fn delete_listing(&self, id: ListingId) -> StoreResult<()> {
        delete_listing(&self.db, id).await
    }
}
