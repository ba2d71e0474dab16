//! Bulk issuance jobs on PostgreSQL: each chunk is one transaction holding the claims and the
//! job's progress together. The job row is taken `FOR UPDATE SKIP LOCKED`: instances share the
//! open jobs, and one job's chunks never run at once. The jobs' bookkeeping and the chunk's
//! statements are written once in `coupond_store_sql::issuance`; the claims run on
//! PostgreSQL's claim path (`claims`), in exact mode.

use coupond_domain::{Timestamp, UserId};
use coupond_store::{ClaimOutcome, Issuance, StoreError, StoreResult};
use coupond_store_sql::issuance;

use crate::claims::{attempt, Attempt};
use crate::exec::PgTx;
use crate::rows::db_err;
use crate::store::PgStore;

coupond_store_sql::impl_issuance_store!(PgStore, {
    async fn issue_chunk(
        &self,
        id: i64,
        users: &[UserId],
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Option<Issuance>> {
        let mut tx = PgTx(self.pool.begin().await.map_err(db_err)?);
        let Some((job, template)) = issuance::chunk_start(&mut tx, self, id).await? else {
            return Ok(None);
        };
        if users.len() as u64 != job.requested {
            return Err(StoreError::other("the users given are not the job's"));
        }
        let from = job.next_user as usize;
        let to = (from + max as usize).min(users.len());
        let (claims, not_eligible) = issuance::chunk_claims(&job, &template, &users[from..to], now);
        let Attempt::Done(out) = attempt(&mut tx.0, template.id, &claims, now, true, 0).await?
        else {
            return Err(StoreError::other("stock changed under the shards' locks"));
        };
        // The chunk's coupons written, the job's progress not yet.
        coupond_store::failpoints::hit("issuance.mid_chunk")?;
        if out.contains(&ClaimOutcome::NotClaimable) {
            // Nothing of this chunk stays; the job stops here.
            drop(tx);
            let mut tx = PgTx(self.pool.begin().await.map_err(db_err)?);
            let failed = issuance::chunk_stopped(&mut tx, id, &template, now).await?;
            tx.0.commit().await.map_err(db_err)?;
            return Ok(failed);
        }
        let done = to == users.len();
        let job = issuance::chunk_done(&mut tx, id, to, done, &out, not_eligible, now).await?;
        tx.0.commit().await.map_err(db_err)?;
        Ok(Some(job))
    }
});
