//! Bulk issuance jobs on MySQL: each chunk is one transaction holding the claims and the
//! job's progress together. The job row is taken `FOR UPDATE SKIP LOCKED` (in
//! `coupond_store_sql::issuance`, which also keeps the jobs' bookkeeping): instances share the
//! open jobs, and one job's chunks never run at once. The claims run on the claim path
//! (`claims`), under the template's lock.

use coupond_domain::{Timestamp, UserId};
use coupond_store::{ClaimOutcome, Issuance, StoreError, StoreResult};
use coupond_store_sql::{issuance, Tx};

use crate::claims::{attempt, Attempt};
use crate::exec::MysqlTx;
use crate::rows::db_err;
use crate::store::MysqlStore;

coupond_store_sql::impl_issuance_store!(MysqlStore, {
    async fn issue_chunk(
        &self,
        id: i64,
        users: &[UserId],
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Option<Issuance>> {
        let mut tx = MysqlTx(self.pool.begin().await.map_err(db_err)?);
        let Some((job, template)) = issuance::chunk_start(&mut tx, self, id).await? else {
            return Ok(None);
        };
        if users.len() as u64 != job.requested {
            return Err(StoreError::other("the users given are not the job's"));
        }
        let from = job.next_user as usize;
        let to = (from + max as usize).min(users.len());
        let (claims, not_eligible) = issuance::chunk_claims(&job, &template, &users[from..to], now);
        let Attempt::Done(out) = attempt(&mut tx, self, template.id, &claims, now, true, 0).await?
        else {
            return Err(StoreError::other("stock changed under the shards' locks"));
        };
        // The chunk's coupons written, the job's progress not yet.
        coupond_store::failpoints::hit("issuance.mid_chunk")?;
        let job = if out.contains(&ClaimOutcome::NotClaimable) {
            // Nothing of this chunk was written; the job stops here.
            issuance::chunk_stopped(&mut tx, id, &template, now).await?
        } else {
            let done = to == users.len();
            let job = issuance::chunk_done(&mut tx, id, to, done, &out, not_eligible, now).await?;
            Some(job)
        };
        Box::new(tx).commit().await?;
        Ok(job)
    }
});
