//! Checkout on SQLite: lock, confirm, cancel and expire orders, each in one `BEGIN IMMEDIATE`
//! transaction (the only writer until it commits, so what it reads stays true). (The
//! idempotency records of write routes are written once in `coupond_store_sql::idempotency`.)

use async_trait::async_trait;
use coupond_store::CheckoutStore;
use std::collections::BTreeMap;

use coupond_domain::{
    Actor, Coupon, CouponId, CouponStatus, Money, OrderId, TemplateId, Timestamp,
};
use coupond_store::checkout::{
    LockOutcome, LockRequest, LockRules, OrderRecord, OrderState, OrderStep,
};
use coupond_store::events::{self, kind};
use coupond_store::{StoreError, StoreResult};
use sqlx::{QueryBuilder, Sqlite};

use crate::rows::{self, db_err};
use crate::store::{us, SqliteStore, TEMPLATE_COLS};

type Tx = sqlx::Transaction<'static, Sqlite>;

/// The order and its request fingerprint.
async fn order_row(tx: &mut Tx, order: &OrderId) -> StoreResult<Option<(OrderRecord, Vec<u8>)>> {
    let row = sqlx::query("SELECT * FROM orders WHERE order_id = ?")
        .bind(order.as_str())
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_err)?;
    row.map(|r| {
        let fingerprint: Vec<u8> = sqlx::Row::try_get(&r, "fingerprint").map_err(db_err)?;
        Ok((rows::order(&r)?, fingerprint))
    })
    .transpose()
}

async fn coupons_in(tx: &mut Tx, ids: &[CouponId]) -> StoreResult<Vec<Coupon>> {
    if ids.is_empty() {
        return Ok(vec![]);
    }
    let mut q = QueryBuilder::<Sqlite>::new("SELECT * FROM coupons WHERE id IN (");
    let mut sep = q.separated(", ");
    for id in ids {
        sep.push_bind(id.get());
    }
    q.push(") ORDER BY id");
    q.build()
        .fetch_all(&mut **tx)
        .await
        .map_err(db_err)?
        .iter()
        .map(rows::coupon)
        .collect()
}

async fn held_by(tx: &mut Tx, order: &OrderId) -> StoreResult<Vec<Coupon>> {
    sqlx::query("SELECT * FROM coupons WHERE order_id = ? AND status = 'locked' ORDER BY id")
        .bind(order.as_str())
        .fetch_all(&mut **tx)
        .await
        .map_err(db_err)?
        .iter()
        .map(rows::coupon)
        .collect()
}

/// Gives an order's coupons back (unused, or expired if their validity ended meanwhile) and
/// their reservations, and ends the order in `state`.
async fn release(
    tx: &mut Tx,
    record: &OrderRecord,
    state: OrderState,
    actor: &Actor,
    now: Timestamp,
) -> StoreResult<OrderRecord> {
    let order = &record.order_id;
    let held = held_by(tx, order).await?;
    let mut give_back: BTreeMap<TemplateId, i64> = BTreeMap::new();
    for c in &held {
        *give_back.entry(c.template_id).or_default() += c.discount.map_or(0, Money::minor);
        let to = if c.valid_until <= now {
            CouponStatus::Expired
        } else {
            CouponStatus::Unused
        };
        sqlx::query(
            "UPDATE coupons SET status = ?, order_id = NULL, locked_until = NULL, discount = NULL,
                 updated_at = ?
             WHERE id = ?",
        )
        .bind(to.as_str())
        .bind(us(now))
        .bind(c.id.get())
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
        log_change(tx, c.id, CouponStatus::Locked, to, order, actor, now).await?;
        emit(
            tx,
            kind::COUPON_RELEASED,
            now,
            events::coupon_order(c, order, Money::ZERO, Some(to)),
        )
        .await?;
    }
    for (t, d) in give_back {
        sqlx::query("UPDATE templates SET reserved = reserved - ? WHERE id = ?")
            .bind(d)
            .bind(t.get())
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
    }
    end_order(tx, order, state, now).await
}

async fn end_order(
    tx: &mut Tx,
    order: &OrderId,
    state: OrderState,
    now: Timestamp,
) -> StoreResult<OrderRecord> {
    let row = sqlx::query(
        "UPDATE orders SET state = ?, ended_at = ? WHERE order_id = ? AND state = 'locked'
         RETURNING *",
    )
    .bind(state.as_str())
    .bind(us(now))
    .bind(order.as_str())
    .fetch_optional(&mut **tx)
    .await
    .map_err(db_err)?
    .ok_or_else(|| StoreError::other("the order left `locked` inside a write transaction"))?;
    rows::order(&row)
}

async fn log_change(
    tx: &mut Tx,
    coupon: CouponId,
    from: CouponStatus,
    to: CouponStatus,
    order: &OrderId,
    actor: &Actor,
    now: Timestamp,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO coupon_events (coupon_id, from_status, to_status, order_id, actor, at)
         VALUES (?, ?, ?, ?, ?, ?)",
    )
    .bind(coupon.get())
    .bind(from.as_str())
    .bind(to.as_str())
    .bind(order.as_str())
    .bind(actor.to_text())
    .bind(us(now))
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(())
}

async fn emit(tx: &mut Tx, kind: &str, now: Timestamp, body: String) -> StoreResult<()> {
    sqlx::query("INSERT INTO outbox (kind, at, body) VALUES (?, ?, ?)")
        .bind(kind)
        .bind(us(now))
        .bind(body)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    Ok(())
}

#[async_trait]
impl CheckoutStore for SqliteStore {
    async fn coupons_by_ids(&self, ids: &[CouponId]) -> StoreResult<Vec<Coupon>> {
        let mut conn = self.reader.acquire().await.map_err(db_err)?;
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let mut q = QueryBuilder::<Sqlite>::new("SELECT * FROM coupons WHERE id IN (");
            let mut sep = q.separated(", ");
            for id in chunk {
                sep.push_bind(id.get());
            }
            q.push(") ORDER BY id");
            for r in q.build().fetch_all(&mut *conn).await.map_err(db_err)? {
                out.push(rows::coupon(&r)?);
            }
        }
        Ok(out)
    }

    async fn templates_by_ids(
        &self,
        ids: &[TemplateId],
    ) -> StoreResult<Vec<coupond_domain::Template>> {
        let mut conn = self.reader.acquire().await.map_err(db_err)?;
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let mut q = QueryBuilder::<Sqlite>::new(format!(
                "SELECT {TEMPLATE_COLS} FROM templates WHERE id IN ("
            ));
            let mut sep = q.separated(", ");
            for id in chunk {
                sep.push_bind(id.get());
            }
            q.push(") ORDER BY id");
            for r in q.build().fetch_all(&mut *conn).await.map_err(db_err)? {
                out.push(rows::template(&r)?);
            }
        }
        Ok(out)
    }

    async fn lock_order(
        &self,
        req: &LockRequest<'_>,
        rules: &LockRules<'_>,
    ) -> StoreResult<LockOutcome> {
        let mut tx = self.begin().await?;
        if let Some(existing) = order_row(&mut tx, req.order_id).await? {
            let (record, fingerprint) = existing;
            return Ok(if fingerprint == req.fingerprint {
                LockOutcome::Replayed(record)
            } else {
                LockOutcome::OrderConflict
            });
        }
        let coupons = coupons_in(&mut tx, req.coupons).await?;
        let mut template_ids: Vec<TemplateId> = coupons.iter().map(|c| c.template_id).collect();
        template_ids.sort_unstable();
        template_ids.dedup();
        let mut q = QueryBuilder::<Sqlite>::new(format!(
            "SELECT {TEMPLATE_COLS} FROM templates WHERE id IN ("
        ));
        let mut ids = q.separated(", ");
        for t in &template_ids {
            ids.push_bind(t.get());
        }
        q.push(")");
        let templates = if template_ids.is_empty() {
            vec![]
        } else {
            q.build()
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err)?
                .iter()
                .map(rows::template)
                .collect::<StoreResult<Vec<_>>>()?
        };
        let plan = match rules(&coupons, &templates) {
            Ok(plan) => plan,
            Err(refusal) => return Ok(LockOutcome::Refused(refusal)),
        };
        let mut reserve: BTreeMap<TemplateId, i64> = BTreeMap::new();
        for (id, discount) in &plan.discounts {
            let c = coupons
                .iter()
                .find(|c| c.id == *id)
                .ok_or_else(|| StoreError::other("the plan names a coupon not asked for"))?;
            let locked = sqlx::query(
                "UPDATE coupons SET status = 'locked', order_id = ?, locked_until = ?,
                     discount = ?, updated_at = ?
                 WHERE id = ? AND status = 'unused' AND user_id = ?",
            )
            .bind(req.order_id.as_str())
            .bind(us(req.deadline))
            .bind(discount.minor())
            .bind(us(req.now))
            .bind(id.get())
            .bind(req.user.as_str())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            if locked.rows_affected() != 1 {
                return Err(StoreError::other(
                    "a coupon the rules accepted is not an unused coupon of the user",
                ));
            }
            *reserve.entry(c.template_id).or_default() += discount.minor();
            log_change(
                &mut tx,
                *id,
                CouponStatus::Unused,
                CouponStatus::Locked,
                req.order_id,
                req.actor,
                req.now,
            )
            .await?;
            emit(
                &mut tx,
                kind::COUPON_LOCKED,
                req.now,
                events::coupon_order(c, req.order_id, *discount, None),
            )
            .await?;
        }
        for (t, d) in &reserve {
            sqlx::query("UPDATE templates SET reserved = reserved + ? WHERE id = ?")
                .bind(d)
                .bind(t.get())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        let row = sqlx::query(
            "INSERT INTO orders (order_id, user_id, state, fingerprint, deadline, answer,
                                 created_at)
             VALUES (?, ?, 'locked', ?, ?, ?, ?) RETURNING *",
        )
        .bind(req.order_id.as_str())
        .bind(req.user.as_str())
        .bind(&req.fingerprint[..])
        .bind(us(req.deadline))
        .bind(plan.answer.to_string())
        .bind(us(req.now))
        .fetch_one(&mut *tx)
        .await
        .map_err(db_err)?;
        let record = rows::order(&row)?;
        tx.commit().await.map_err(db_err)?;
        Ok(LockOutcome::Locked(record))
    }

    async fn confirm_order(
        &self,
        order: &OrderId,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<OrderStep> {
        let mut tx = self.begin().await?;
        let (record, _) = order_row(&mut tx, order)
            .await?
            .ok_or(StoreError::NotFound)?;
        match record.state {
            OrderState::Confirmed => return Ok(OrderStep::Already(record)),
            OrderState::Cancelled | OrderState::Expired => {
                return Ok(OrderStep::WrongState(record))
            }
            OrderState::Locked if now >= record.deadline => {
                let ended =
                    release(&mut tx, &record, OrderState::Expired, &Actor::System, now).await?;
                tx.commit().await.map_err(db_err)?;
                return Ok(OrderStep::WrongState(ended));
            }
            OrderState::Locked => {}
        }
        let held = held_by(&mut tx, order).await?;
        // Amount verification (the reference design's safeguard): what this order uses and
        // gives must fit every template's stock and budget, as recorded.
        let mut per_template: BTreeMap<TemplateId, (i64, i64)> = BTreeMap::new();
        for c in &held {
            let e = per_template.entry(c.template_id).or_default();
            e.0 += 1;
            e.1 += c.discount.map_or(0, Money::minor);
        }
        for (t, (k, d)) in &per_template {
            let row = sqlx::query(&format!(
                "SELECT {TEMPLATE_COLS} FROM templates WHERE id = ?"
            ))
            .bind(t.get())
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
            let t = rows::template(&row)?;
            if let Some(why) = coupond_store::checkout::over_limits(&t, *k, *d) {
                return Ok(OrderStep::AmountViolation(why));
            }
            sqlx::query(
                "UPDATE templates SET used = used + ?1, given = given + ?2,
                     reserved = reserved - ?2
                 WHERE id = ?3",
            )
            .bind(k)
            .bind(d)
            .bind(t.id.get())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        sqlx::query(
            "UPDATE coupons SET status = 'used', used_at = ?1, locked_until = NULL, updated_at = ?1
             WHERE order_id = ?2 AND status = 'locked'",
        )
        .bind(us(now))
        .bind(order.as_str())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        for c in &held {
            log_change(
                &mut tx,
                c.id,
                CouponStatus::Locked,
                CouponStatus::Used,
                order,
                actor,
                now,
            )
            .await?;
            emit(
                &mut tx,
                kind::COUPON_USED,
                now,
                events::coupon_order(c, order, c.discount.unwrap_or(Money::ZERO), None),
            )
            .await?;
        }
        let record = end_order(&mut tx, order, OrderState::Confirmed, now).await?;
        coupond_store::failpoints::hit("confirm.before_commit")?;
        tx.commit().await.map_err(db_err)?;
        Ok(OrderStep::Done(record))
    }

    async fn cancel_order(
        &self,
        order: &OrderId,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<OrderStep> {
        let mut tx = self.begin().await?;
        let (record, _) = order_row(&mut tx, order)
            .await?
            .ok_or(StoreError::NotFound)?;
        let step = match record.state {
            OrderState::Confirmed => OrderStep::WrongState(record),
            OrderState::Cancelled | OrderState::Expired => OrderStep::Already(record),
            // Past the deadline the lock has ended by itself; the cancel finds it so.
            OrderState::Locked if now >= record.deadline => OrderStep::Already(
                release(&mut tx, &record, OrderState::Expired, &Actor::System, now).await?,
            ),
            OrderState::Locked => {
                OrderStep::Done(release(&mut tx, &record, OrderState::Cancelled, actor, now).await?)
            }
        };
        tx.commit().await.map_err(db_err)?;
        Ok(step)
    }

    async fn expire_locks(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<OrderId>> {
        let mut tx = self.begin().await?;
        let due: Vec<String> = sqlx::query_scalar(
            "SELECT order_id FROM orders WHERE state = 'locked' AND deadline <= ?
             ORDER BY deadline LIMIT ?",
        )
        .bind(us(now))
        .bind(i64::from(limit))
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        let mut ended = Vec::with_capacity(due.len());
        for id in due {
            let id = OrderId::parse(&id).map_err(StoreError::other)?;
            if let Some((record, _)) = order_row(&mut tx, &id).await? {
                release(&mut tx, &record, OrderState::Expired, &Actor::System, now).await?;
                ended.push(id);
            }
        }
        if !ended.is_empty() {
            coupond_store::failpoints::hit("sweeper.before_commit")?;
        }
        tx.commit().await.map_err(db_err)?;
        Ok(ended)
    }

    async fn order(&self, order: &OrderId) -> StoreResult<OrderRecord> {
        let row = sqlx::query("SELECT * FROM orders WHERE order_id = ?")
            .bind(order.as_str())
            .fetch_optional(&self.reader)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound)?;
        rows::order(&row)
    }

    async fn order_coupons(&self, order: &OrderId) -> StoreResult<Vec<Coupon>> {
        let rows = sqlx::query("SELECT * FROM coupons WHERE order_id = ? ORDER BY id")
            .bind(order.as_str())
            .fetch_all(&self.reader)
            .await
            .map_err(db_err)?;
        rows.iter().map(rows::coupon).collect()
    }
}
