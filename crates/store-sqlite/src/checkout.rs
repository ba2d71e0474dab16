//! Checkout on SQLite: each step is one `BEGIN IMMEDIATE` transaction (the only writer until
//! it commits, so what it reads stays true). Written once in `coupond_store_sql::checkout` but
//! for how a lock claims its order id: it reads the order first and, the coupons locked,
//! inserts it last, as no other writer can come in between.

use async_trait::async_trait;
use coupond_domain::{Actor, Coupon, CouponId, OrderId, Template, TemplateId, Timestamp};
use coupond_store::checkout::{LockOutcome, LockRequest, LockRules, OrderRecord, OrderStep};
use coupond_store::{CheckoutStore, StoreResult};
use coupond_store_sql::checkout::{self, ORDER_COLS};
use coupond_store_sql::{rows, sql, Db, Dialect, Json, Work};

use crate::store::SqliteStore;

#[async_trait]
impl CheckoutStore for SqliteStore {
    async fn coupons_by_ids(&self, ids: &[CouponId]) -> StoreResult<Vec<Coupon>> {
        checkout::coupons_by_ids(self, ids).await
    }

    async fn templates_by_ids(&self, ids: &[TemplateId]) -> StoreResult<Vec<Template>> {
        checkout::templates_by_ids(self, ids).await
    }

    async fn lock_order(
        &self,
        req: &LockRequest<'_>,
        rules: &LockRules<'_>,
    ) -> StoreResult<LockOutcome> {
        let mut tx = Db::begin(self, Work::Request).await?;
        if let Some(seen) =
            checkout::order_row(&mut *tx, Dialect::Sqlite, req.order_id, false).await?
        {
            return Ok(checkout::replayed(seen, req));
        }
        let answer = match checkout::lock_coupons(&mut *tx, self, req, rules).await? {
            Ok(answer) => answer,
            Err(refusal) => return Ok(LockOutcome::Refused(refusal)),
        };
        let q = sql(format!(
            "INSERT INTO orders (order_id, user_id, state, fingerprint, deadline, answer,
                                 created_at)
             VALUES ($1, $2, 'locked', $3, $4, $5, $6) RETURNING {ORDER_COLS}"
        ))
        .bind(req.order_id.as_str())
        .bind(req.user.as_str())
        .bind(&req.fingerprint[..])
        .bind(req.deadline)
        .bind(Json(answer.to_string()))
        .bind(req.now);
        let record = rows::order(&tx.fetch_one(q).await?)?;
        tx.commit().await?;
        Ok(LockOutcome::Locked(record))
    }

    async fn confirm_order(
        &self,
        order: &OrderId,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<OrderStep> {
        checkout::confirm_order(self, order, actor, now).await
    }

    async fn cancel_order(
        &self,
        order: &OrderId,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<OrderStep> {
        checkout::cancel_order(self, order, actor, now).await
    }

    async fn expire_locks(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<OrderId>> {
        checkout::expire_locks(self, now, limit).await
    }

    async fn order(&self, order: &OrderId) -> StoreResult<OrderRecord> {
        checkout::order(self, order).await
    }

    async fn order_coupons(&self, order: &OrderId) -> StoreResult<Vec<Coupon>> {
        checkout::order_coupons(self, order).await
    }
}
