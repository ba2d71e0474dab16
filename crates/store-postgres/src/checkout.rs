//! Checkout on PostgreSQL: lock, confirm, cancel and expire orders (the idempotency records
//! of write routes are in `idempotency.rs`). Several instances may act on one order at once (a confirm racing
//! the sweeper in another process), so every step first locks what it depends on:
//!
//! - the order row (`FOR UPDATE`): a lock's insert, a confirm, a cancel and the sweeper take
//!   turns on it, and each re-reads the state after the wait, so a lock ends exactly once;
//! - the coupons (`FOR UPDATE`, by id): two orders locking one coupon take turns, and the
//!   second sees it locked;
//! - the templates (`FOR NO KEY UPDATE`, by id, last): budget reservations are exact. Claims
//!   lock the template row last too, and no step here touches per-user counters, so the two
//!   never wait on each other in opposite orders.

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
use sqlx::Postgres;

use crate::rows::{self, db_err};
use crate::store::{dt, PgStore, TEMPLATE_COLS};

type Tx = sqlx::Transaction<'static, Postgres>;

async fn templates_for_update(
    tx: &mut Tx,
    ids: &[i64],
) -> StoreResult<Vec<coupond_domain::Template>> {
    sqlx::query(&format!(
        "SELECT {TEMPLATE_COLS} FROM templates WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE"
    ))
    .bind(ids)
    .fetch_all(&mut **tx)
    .await
    .map_err(db_err)?
    .iter()
    .map(rows::template)
    .collect()
}

/// The order and its request fingerprint; `lock` takes the row lock.
async fn order_row(
    tx: &mut Tx,
    order: &OrderId,
    lock: bool,
) -> StoreResult<Option<(OrderRecord, Vec<u8>)>> {
    let row = sqlx::query(if lock {
        "SELECT order_id, user_id, state, deadline, answer, created_at, ended_at, fingerprint
         FROM orders WHERE order_id = $1 FOR UPDATE"
    } else {
        "SELECT order_id, user_id, state, deadline, answer, created_at, ended_at, fingerprint
         FROM orders WHERE order_id = $1"
    })
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

async fn held_by(tx: &mut Tx, order: &OrderId) -> StoreResult<Vec<Coupon>> {
    sqlx::query(
        "SELECT * FROM coupons WHERE order_id = $1 AND status = 'locked' ORDER BY id FOR UPDATE",
    )
    .bind(order.as_str())
    .fetch_all(&mut **tx)
    .await
    .map_err(db_err)?
    .iter()
    .map(rows::coupon)
    .collect()
}

/// Gives an order's coupons back (unused, or expired if their validity ended meanwhile) and
/// their reservations, and ends the order in `state`. The caller holds the order row.
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
            "UPDATE coupons SET status = $1, order_id = NULL, locked_until = NULL,
                 discount = NULL, updated_at = $2
             WHERE id = $3",
        )
        .bind(to.as_str())
        .bind(dt(now))
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
    let ids: Vec<i64> = give_back.keys().map(|t| t.get()).collect();
    templates_for_update(tx, &ids).await?;
    for (t, d) in give_back {
        sqlx::query("UPDATE templates SET reserved = reserved - $1 WHERE id = $2")
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
        "UPDATE orders SET state = $1, ended_at = $2 WHERE order_id = $3 AND state = 'locked'
         RETURNING order_id, user_id, state, deadline, answer, created_at, ended_at",
    )
    .bind(state.as_str())
    .bind(dt(now))
    .bind(order.as_str())
    .fetch_optional(&mut **tx)
    .await
    .map_err(db_err)?
    .ok_or_else(|| StoreError::other("the order left `locked` while its row was locked"))?;
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
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(coupon.get())
    .bind(from.as_str())
    .bind(to.as_str())
    .bind(order.as_str())
    .bind(actor.to_text())
    .bind(dt(now))
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(())
}

async fn emit(tx: &mut Tx, kind: &str, now: Timestamp, body: String) -> StoreResult<()> {
    sqlx::query("INSERT INTO outbox (kind, at, body) VALUES ($1, $2, $3::jsonb)")
        .bind(kind)
        .bind(dt(now))
        .bind(body)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    Ok(())
}

#[async_trait]
impl CheckoutStore for PgStore {
    async fn coupons_by_ids(&self, ids: &[CouponId]) -> StoreResult<Vec<Coupon>> {
        let ids: Vec<i64> = ids.iter().map(|c| c.get()).collect();
        sqlx::query("SELECT * FROM coupons WHERE id = ANY($1) ORDER BY id")
            .bind(&ids)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .iter()
            .map(rows::coupon)
            .collect()
    }

    async fn templates_by_ids(
        &self,
        ids: &[TemplateId],
    ) -> StoreResult<Vec<coupond_domain::Template>> {
        let ids: Vec<i64> = ids.iter().map(|t| t.get()).collect();
        sqlx::query(&format!(
            "SELECT {TEMPLATE_COLS} FROM templates WHERE id = ANY($1) ORDER BY id"
        ))
        .bind(&ids)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?
        .iter()
        .map(rows::template)
        .collect()
    }

    async fn lock_order(
        &self,
        req: &LockRequest<'_>,
        rules: &LockRules<'_>,
    ) -> StoreResult<LockOutcome> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // Claim the order id first: a concurrent lock of the same order waits here.
        let fresh = sqlx::query(
            "INSERT INTO orders (order_id, user_id, state, fingerprint, deadline, answer,
                                 created_at)
             VALUES ($1, $2, 'locked', $3, $4, '{}'::jsonb, $5)
             ON CONFLICT (order_id) DO NOTHING",
        )
        .bind(req.order_id.as_str())
        .bind(req.user.as_str())
        .bind(&req.fingerprint[..])
        .bind(dt(req.deadline))
        .bind(dt(req.now))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?
        .rows_affected()
            == 1;
        if !fresh {
            let (record, fingerprint) = order_row(&mut tx, req.order_id, false)
                .await?
                .ok_or_else(|| StoreError::other("an order vanished"))?;
            return Ok(if fingerprint == req.fingerprint {
                LockOutcome::Replayed(record)
            } else {
                LockOutcome::OrderConflict
            });
        }
        let ids: Vec<i64> = req.coupons.iter().map(|c| c.get()).collect();
        let coupons: Vec<Coupon> =
            sqlx::query("SELECT * FROM coupons WHERE id = ANY($1) ORDER BY id FOR UPDATE")
                .bind(&ids)
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err)?
                .iter()
                .map(rows::coupon)
                .collect::<StoreResult<_>>()?;
        let mut template_ids: Vec<i64> = coupons.iter().map(|c| c.template_id.get()).collect();
        template_ids.sort_unstable();
        template_ids.dedup();
        let templates = templates_for_update(&mut tx, &template_ids).await?;
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
                "UPDATE coupons SET status = 'locked', order_id = $1, locked_until = $2,
                     discount = $3, updated_at = $4
                 WHERE id = $5 AND status = 'unused' AND user_id = $6",
            )
            .bind(req.order_id.as_str())
            .bind(dt(req.deadline))
            .bind(discount.minor())
            .bind(dt(req.now))
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
            sqlx::query("UPDATE templates SET reserved = reserved + $1 WHERE id = $2")
                .bind(d)
                .bind(t.get())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        let row = sqlx::query(
            "UPDATE orders SET answer = $1::jsonb WHERE order_id = $2
             RETURNING order_id, user_id, state, deadline, answer, created_at, ended_at",
        )
        .bind(plan.answer.to_string())
        .bind(req.order_id.as_str())
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
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let (record, _) = order_row(&mut tx, order, true)
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
        let ids: Vec<i64> = per_template.keys().map(|t| t.get()).collect();
        for t in templates_for_update(&mut tx, &ids).await? {
            let (k, d) = per_template.get(&t.id).copied().unwrap_or_default();
            if let Some(why) = coupond_store::checkout::over_limits(&t, k, d) {
                return Ok(OrderStep::AmountViolation(why));
            }
            sqlx::query(
                "UPDATE templates SET used = used + $1, given = given + $2,
                     reserved = reserved - $2
                 WHERE id = $3",
            )
            .bind(k)
            .bind(d)
            .bind(t.id.get())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        sqlx::query(
            "UPDATE coupons SET status = 'used', used_at = $1, locked_until = NULL, updated_at = $1
             WHERE order_id = $2 AND status = 'locked'",
        )
        .bind(dt(now))
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
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let (record, _) = order_row(&mut tx, order, true)
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
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // Orders another instance (or a confirm) is working on are skipped, not waited for:
        // whoever holds one ends it, and the next sweep finds it ended.
        let due: Vec<String> = sqlx::query_scalar(
            "SELECT order_id FROM orders WHERE state = 'locked' AND deadline <= $1
             ORDER BY deadline LIMIT $2 FOR UPDATE SKIP LOCKED",
        )
        .bind(dt(now))
        .bind(i64::from(limit))
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        let mut ended = Vec::with_capacity(due.len());
        for id in due {
            let id = OrderId::parse(&id).map_err(StoreError::other)?;
            if let Some((record, _)) = order_row(&mut tx, &id, false).await? {
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
        let row = sqlx::query(
            "SELECT order_id, user_id, state, deadline, answer, created_at, ended_at
             FROM orders WHERE order_id = $1",
        )
        .bind(order.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?
        .ok_or(StoreError::NotFound)?;
        rows::order(&row)
    }

    async fn order_coupons(&self, order: &OrderId) -> StoreResult<Vec<Coupon>> {
        sqlx::query("SELECT * FROM coupons WHERE order_id = $1 ORDER BY id")
            .bind(order.as_str())
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .iter()
            .map(rows::coupon)
            .collect()
    }
}
