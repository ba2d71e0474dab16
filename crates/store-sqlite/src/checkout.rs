//! Checkout on SQLite: each step is one `BEGIN IMMEDIATE` transaction (the only writer until
//! it commits, so what it reads stays true). Written once in `coupond_store_sql::checkout` but
//! for how a lock claims its order id: it reads the order first and, the coupons locked,
//! inserts it last, as no other writer can come in between.

use coupond_store::checkout::{LockOutcome, LockRequest, LockRules};
use coupond_store::StoreResult;
use coupond_store_sql::checkout::{self, ORDER_COLS};
use coupond_store_sql::{rows, sql, Db, Dialect, Json, Work};

use crate::store::SqliteStore;

coupond_store_sql::impl_checkout_store!(SqliteStore, {
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
        let locked = match checkout::lock_coupons(&mut *tx, self, req, rules).await? {
            Ok(locked) => locked,
            Err(refusal) => return Ok(LockOutcome::Refused(refusal)),
        };
        let q = sql(format!(
            "INSERT INTO orders (order_id, user_id, state, fingerprint, deadline, answer,
                                 created_at, subtotal, discount, currency)
             VALUES ($1, $2, 'locked', $3, $4, $5, $6, $7, $8, $9) RETURNING {ORDER_COLS}"
        ))
        .bind(req.order_id.as_str())
        .bind(req.user.as_str())
        .bind(&req.fingerprint[..])
        .bind(locked.deadline)
        .bind(Json(locked.answer.to_string()))
        .bind(req.now)
        .bind(req.subtotal.minor())
        .bind(locked.discount)
        .bind(req.currency);
        let record = rows::order(&tx.fetch_one(q).await?)?;
        tx.commit().await?;
        Ok(LockOutcome::Locked(record))
    }
});
