//! The [`ClaimStore`] of MySQL: the claim batch of `claims`, and a user's wallet, whose reads
//! are written once in `coupond_store_sql::wallet`.

use coupond_domain::{Coupon, TemplateId, Timestamp};
use coupond_store::{ClaimOutcome, ClaimRequest, CouponQuery, StoreResult};
use coupond_store_sql::{wallet, Tx};

use crate::claims::claim_in;
use crate::exec::MysqlTx;
use crate::rows::db_err;
use crate::store::MysqlStore;

coupond_store_sql::impl_claim_store!(MysqlStore, {
    async fn claim_batch(
        &self,
        template: TemplateId,
        claims: &[ClaimRequest],
        now: Timestamp,
    ) -> StoreResult<Vec<ClaimOutcome>> {
        let mut tx = MysqlTx(self.pool.begin().await.map_err(db_err)?);
        let out = claim_in(&mut tx, self, template, claims, now).await?;
        coupond_store::failpoints::hit("claim.before_commit")?;
        Box::new(tx).commit().await?;
        Ok(out)
    }

    fn claim_lanes(&self) -> usize {
        // Batches of one template take turns on its row, but with several in flight the
        // next is already waiting when one commits: `benches/claim_batch.rs` measured 11,559
        // claims/s with one batcher, 20,809 with four, 25,381 with sixteen (2 cores,
        // MariaDB 10.11). A quarter of the pool, as on PostgreSQL; the rest serves the others.
        (self.max as usize / 4).clamp(1, 8)
    }

    async fn user_coupons(&self, q: &CouponQuery) -> StoreResult<Vec<Coupon>> {
        wallet::user_coupons(self, q).await
    }
});
