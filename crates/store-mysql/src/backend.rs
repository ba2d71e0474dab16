//! What MySQL does its own way ([`Backend`]); every other storage method is the shared SQL of
//! `coupond_store_sql`.
//!
//! - The claim batch runs on MySQL's claim path (`claims`), under the template's lock.
//! - Checkout: several instances may act on one order at once, so every step first locks what
//!   it depends on (the order row, then the coupons, then the templates, as
//!   `coupond_store_sql::checkout` describes). As on PostgreSQL a lock inserts the order
//!   first, so a concurrent lock of the same order waits on that row and then finds it, and
//!   records the answer on it last.
//! - Issuance: each chunk is one transaction holding the claims and the job's progress. The
//!   job row is taken `FOR UPDATE SKIP LOCKED` (in `coupond_store_sql::issuance`): instances
//!   share the open jobs, and one job's chunks never run at once.
//! - The outbox is read in its own order (`scheduling`), and reminders planned with its own
//!   statement (`inbox`).

use coupond_domain::{TemplateId, Timestamp, UserId};
use coupond_store::{
    ClaimOutcome, ClaimRequest, Event, Issuance, OutboxPosition, Reminder, StoreError, StoreResult,
};
use coupond_store_sql::{issuance, sql, Backend, Db, Tx};

use crate::claims::{attempt, Attempt, Pipelined};
use crate::exec::MysqlTx;
use crate::rows::db_err;
use crate::store::MysqlDb;

#[async_trait::async_trait]
impl Backend for MysqlDb {
    async fn issue_chunk(
        &self,
        id: i64,
        users: &[UserId],
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Option<Issuance>> {
        let mut tx = MysqlTx(self.pool.begin().await.map_err(db_err)?);
        let Some(plan) = issuance::plan_chunk(&mut tx, self, id, users, max, now).await? else {
            return Ok(None);
        };
        let Attempt::Done(out) =
            attempt(&mut tx, self, plan.template.id, &plan.claims, now, true, 0).await?
        else {
            return Err(StoreError::other("stock changed under the shards' locks"));
        };
        // The chunk's coupons written, the job's progress not yet.
        coupond_store::failpoints::hit("issuance.mid_chunk")?;
        let job = if out.contains(&ClaimOutcome::NotClaimable) {
            // Nothing of this chunk was written; the job stops here.
            issuance::chunk_stopped(&mut tx, id, &plan.template, now).await?
        } else {
            let done = plan.to == users.len();
            let job =
                issuance::chunk_done(&mut tx, id, plan.to, done, &out, plan.not_eligible, now)
                    .await?;
            Some(job)
        };
        Box::new(tx).commit().await?;
        Ok(job)
    }

    async fn outbox_read(&self, after: OutboxPosition, limit: u32) -> StoreResult<Vec<Event>> {
        self.sequence().await?;
        let rows = self
            .read_all(
                // `seq > 0`: from the start (position 0) too, never an unsequenced event.
                sql("SELECT id, seq, kind, at, body FROM outbox
                     WHERE seq > 0 AND (seq > $1 OR (seq = $1 AND id > $2))
                     ORDER BY seq, id LIMIT $3")
                .bind(after.txid)
                .bind(after.event_id)
                .bind(i64::from(limit)),
            )
            .await?;
        rows.iter().map(crate::scheduling::event).collect()
    }

    async fn claim_batch(
        &self,
        template: TemplateId,
        claims: &[ClaimRequest],
        now: Timestamp,
    ) -> StoreResult<Vec<ClaimOutcome>> {
        match self.claim_pipelined(template, claims, now).await? {
            Pipelined::Done(out) => Ok(out),
            Pipelined::Declined => self.claim_batch_tx(template, claims, now).await,
        }
    }

    fn claim_lanes(&self) -> usize {
        // Batches of one template take different stock shards and commit together (see
        // `claims`). A quarter of the pool, as on PostgreSQL; the rest serves the others.
        (self.max as usize / 4).clamp(1, 8)
    }

    async fn plan_reminders(&self, reminders: &[Reminder]) -> StoreResult<()> {
        crate::inbox::plan_reminders(self, reminders).await
    }
}
