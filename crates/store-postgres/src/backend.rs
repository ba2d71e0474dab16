//! What PostgreSQL does its own way ([`Backend`]); every other storage method is the shared
//! SQL of `coupond_store_sql`.
//!
//! - The claim batch runs on PostgreSQL's claim path (`claims`); `claim_lanes` lets batches
//!   of one hot template overlap on different stock shards.
//! - Checkout: several instances may act on one order at once (a confirm racing the sweeper
//!   in another process), so every step first locks what it depends on (the order row, then
//!   the coupons, then the templates, as `coupond_store_sql::checkout` describes). A lock
//!   inserts the order first, so a concurrent lock of the same order waits on that row and
//!   then finds it, and records the rules' answer on it last.
//! - Issuance: each chunk is one transaction holding the claims and the job's progress. The
//!   job row is taken `FOR UPDATE SKIP LOCKED`: instances share the open jobs, and one job's
//!   chunks never run at once; the claims run on the claim path in exact mode.
//! - The outbox is read only below the oldest running transaction (`scheduling`), and
//!   reminders are planned with one statement of arrays (`inbox`).

use coupond_domain::{TemplateId, Timestamp, UserId};
use coupond_store::{
    ClaimOutcome, ClaimRequest, Event, Issuance, OutboxPosition, Reminder, StoreError, StoreResult,
};
use coupond_store_sql::{issuance, Backend};

use crate::claims::{attempt, Attempt};
use crate::exec::PgTx;
use crate::rows::{self, db_err};
use crate::store::PgDb;

#[async_trait::async_trait]
impl Backend for PgDb {
    async fn issue_chunk(
        &self,
        id: i64,
        users: &[UserId],
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Option<Issuance>> {
        let mut tx = PgTx(self.pool.begin().await.map_err(db_err)?);
        let Some(plan) = issuance::plan_chunk(&mut tx, self, id, users, max, now).await? else {
            return Ok(None);
        };
        let Attempt::Done(out) =
            attempt(&mut tx.0, plan.template.id, &plan.claims, now, true, 0).await?
        else {
            return Err(StoreError::other("stock changed under the shards' locks"));
        };
        // The chunk's coupons written, the job's progress not yet.
        coupond_store::failpoints::hit("issuance.mid_chunk")?;
        if out.contains(&ClaimOutcome::NotClaimable) {
            // Nothing of this chunk stays; the job stops here.
            drop(tx);
            let mut tx = PgTx(self.pool.begin().await.map_err(db_err)?);
            let failed = issuance::chunk_stopped(&mut tx, id, &plan.template, now).await?;
            tx.0.commit().await.map_err(db_err)?;
            return Ok(failed);
        }
        let done = plan.to == users.len();
        let job =
            issuance::chunk_done(&mut tx, id, plan.to, done, &out, plan.not_eligible, now).await?;
        tx.0.commit().await.map_err(db_err)?;
        Ok(Some(job))
    }

    async fn outbox_read(&self, after: OutboxPosition, limit: u32) -> StoreResult<Vec<Event>> {
        // Only transactions older than every one still running: nothing can commit later
        // at an earlier position.
        let rows = sqlx::query(
            "SELECT * FROM outbox
             WHERE (txid, id) > ($1, $2)
               AND txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
             ORDER BY txid, id LIMIT $3",
        )
        .bind(after.txid)
        .bind(after.event_id)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter().map(rows::event).collect()
    }

    async fn claim_batch(
        &self,
        template: TemplateId,
        claims: &[ClaimRequest],
        now: Timestamp,
    ) -> StoreResult<Vec<ClaimOutcome>> {
        self.claim_batch_tx(template, claims, now).await
    }

    fn claim_lanes(&self) -> usize {
        // A quarter of the pool: batches of one hot template take different stock shards and
        // overlap their round trips and commits; the rest of the pool serves everything else.
        (self.max as usize / 4).clamp(1, 8)
    }

    async fn plan_reminders(&self, reminders: &[Reminder]) -> StoreResult<()> {
        crate::inbox::plan_reminders(self, reminders).await
    }
}
