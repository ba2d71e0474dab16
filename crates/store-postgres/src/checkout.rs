//! Checkout on PostgreSQL. Several instances may act on one order at once (a confirm racing
//! the sweeper in another process), so every step first locks what it depends on (the order
//! row, then the coupons, then the templates, as `coupond_store_sql::checkout` describes),
//! where all of it is written once but for how a lock claims its order id: it inserts the
//! order first, so a concurrent lock of the same order waits on that row and then finds it,
//! and records the rules' answer on it last.

use coupond_store::checkout::{LockOutcome, LockRequest, LockRules};
use coupond_store::{StoreError, StoreResult};
use coupond_store_sql::checkout::{self, ORDER_COLS};
use coupond_store_sql::{rows, sql, Db, Dialect, Json, Work};

use crate::store::PgStore;

coupond_store_sql::impl_checkout_store!(PgStore, {
    async fn lock_order(
        &self,
        req: &LockRequest<'_>,
        rules: &LockRules<'_>,
    ) -> StoreResult<LockOutcome> {
        let mut tx = self.begin(Work::Request).await?;
        // Claim the order id first: a concurrent lock of the same order waits here.
        let fresh = tx
            .execute(
                sql(
                    "INSERT INTO orders (order_id, user_id, state, fingerprint, deadline, answer,
                                         created_at)
                     VALUES ($1, $2, 'locked', $3, $4, '{}'::jsonb, $5)
                     ON CONFLICT (order_id) DO NOTHING",
                )
                .bind(req.order_id.as_str())
                .bind(req.user.as_str())
                .bind(&req.fingerprint[..])
                .bind(req.deadline)
                .bind(req.now),
            )
            .await?
            == 1;
        if !fresh {
            let seen = checkout::order_row(&mut *tx, Dialect::Postgres, req.order_id, false)
                .await?
                .ok_or_else(|| StoreError::other("an order vanished"))?;
            return Ok(checkout::replayed(seen, req));
        }
        let locked = match checkout::lock_coupons(&mut *tx, self, req, rules).await? {
            Ok(locked) => locked,
            Err(refusal) => return Ok(LockOutcome::Refused(refusal)),
        };
        let q = sql(format!(
            "{} RETURNING {ORDER_COLS}",
            checkout::SET_ANSWER_AND_VALUE
        ))
        .bind(Json(locked.answer.to_string()))
        .bind(req.order_id.as_str());
        let q = checkout::bind_value(q, req, &locked);
        let record = rows::order(&tx.fetch_one(q).await?)?;
        tx.commit().await?;
        Ok(LockOutcome::Locked(record))
    }
});
