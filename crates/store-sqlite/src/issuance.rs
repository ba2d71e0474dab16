//! Bulk issuance jobs on SQLite: each chunk is one `BEGIN IMMEDIATE` transaction holding the
//! claims and the job's progress together, on SQLite's claim path. The jobs' bookkeeping and
//! the chunk's statements are written once in `coupond_store_sql::issuance`.

use coupond_domain::{Timestamp, UserId};
use coupond_store::{ClaimOutcome, Issuance, StoreError, StoreResult};
use coupond_store_sql::issuance;

use crate::claims::claim_in;
use crate::exec::SqliteTx;
use crate::rows::db_err;
use crate::store::SqliteStore;

coupond_store_sql::impl_issuance_store!(SqliteStore, {
    async fn issue_chunk(
        &self,
        id: i64,
        users: &[UserId],
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Option<Issuance>> {
        let (turn, tx) = self.begin_background().await?;
        let mut tx = SqliteTx { tx, _turn: turn };
        let Some((job, template)) = issuance::chunk_start(&mut tx, self, id).await? else {
            return Ok(None);
        };
        if users.len() as u64 != job.requested {
            return Err(StoreError::other("the users given are not the job's"));
        }
        let from = job.next_user as usize;
        let to = (from + max as usize).min(users.len());
        let (claims, not_eligible) = issuance::chunk_claims(&job, &template, &users[from..to], now);
        let out = claim_in(&mut tx.tx, template.id, &claims, now).await?;
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
        tx.tx.commit().await.map_err(db_err)?;
        Ok(job)
    }
});
