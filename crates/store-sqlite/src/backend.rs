//! What SQLite does its own way ([`Backend`]); every other storage method is the shared SQL of
//! `coupond_store_sql`.
//!
//! - The claim batch (the hot write path) and issuance chunks run on the claim writer's own
//!   connection and thread (`writer`), a batch or chunk as one `BEGIN IMMEDIATE` job
//!   (`claims`, `issuance`).
//! - A user's wallet is read and decoded on a wallet reader's thread, one hop for the page.
//! - Checkout: each step is one `BEGIN IMMEDIATE` transaction (the only writer until it
//!   commits, so what it reads stays true). A lock reads the order first and, the coupons
//!   locked, inserts it last, as no other writer can come in between.
//! - The outbox is read by id: one writer, so ids grow in commit order.

use coupond_domain::{Coupon, TemplateId, Timestamp, UserId};
use coupond_store::checkout::{LockOutcome, LockRequest, LockRules};
use coupond_store::{
    ClaimOutcome, ClaimRequest, CouponQuery, Event, Issuance, OutboxPosition, StoreError,
    StoreResult,
};
use coupond_store_sql::checkout::{self, ORDER_COLS};
use coupond_store_sql::{sql, wallet, Backend, Db, Dialect, Json, Work};

use crate::claims::{claim_in, coupons_of};
use crate::issuance::{chunk, Chunk, Window};
use crate::rows::{self, db_err};
use crate::store::SqliteDb;
use crate::writer::immediate;

#[async_trait::async_trait]
impl Backend for SqliteDb {
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
        let record = coupond_store_sql::rows::order(&tx.fetch_one(q).await?)?;
        tx.commit().await?;
        Ok(LockOutcome::Locked(record))
    }

    async fn claim_batch(
        &self,
        template: TemplateId,
        claims: &[ClaimRequest],
        now: Timestamp,
    ) -> StoreResult<Vec<ClaimOutcome>> {
        let claims = claims.to_vec();
        self.on_writer(Work::Request, move |c| {
            immediate(c, |c| {
                let out = claim_in(c, template, &claims, now)?;
                coupond_store::failpoints::hit("claim.before_commit")?;
                Ok(out)
            })
        })
        .await
    }

    async fn user_coupons(&self, q: &CouponQuery) -> StoreResult<Vec<Coupon>> {
        // Read and decoded on a wallet reader's thread, one hop for the page (see `threads`).
        let page = wallet::coupon_page(Dialect::Sqlite, q);
        self.wallet.run(move |c| coupons_of(c, page)).await
    }

    async fn issue_chunk(
        &self,
        id: i64,
        users: &[UserId],
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Option<Issuance>> {
        // Where the job stands, read first so that only this chunk's users travel to the
        // writer thread; checked again in the chunk's transaction, and cut again if another
        // chunk of the job committed in between.
        let q = sql("SELECT next_user FROM issuances WHERE id = $1").bind(id);
        let Some(row) = self.read_optional(q).await? else {
            return Ok(None);
        };
        let mut from = usize::try_from(row.i64("next_user")?).map_err(StoreError::other)?;
        loop {
            let start = from.min(users.len());
            let end = (start + max as usize).min(users.len());
            let w = Window {
                from,
                users: users[start..end].to_vec(),
                total: users.len(),
            };
            let db = self.clone();
            let done = self
                .on_writer(Work::Background, move |c| {
                    immediate(c, |c| chunk(c, &db, id, &w, now))
                })
                .await?;
            match done {
                Chunk::Done(job) => return Ok(job.map(|j| *j)),
                Chunk::Moved(next) => from = next,
            }
        }
    }

    async fn outbox_read(&self, after: OutboxPosition, limit: u32) -> StoreResult<Vec<Event>> {
        // One writer: ids grow in commit order, so the id alone is the position. The page is
        // one aggregated row (see `rows::EVENT_JSON`), sorted again here.
        let page: String = sqlx::query_scalar(&format!(
            "SELECT json_group_array({}) FROM \
             (SELECT * FROM outbox WHERE id > ? ORDER BY id LIMIT ?)",
            rows::EVENT_JSON
        ))
        .bind(after.event_id)
        .bind(i64::from(limit))
        .fetch_one(&self.reader)
        .await
        .map_err(db_err)?;
        rows::events_json(&page)
    }
}
