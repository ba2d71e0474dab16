//! The [`ClaimStore`] of MySQL: the claim batch of `claims`, and a user's wallet, whose reads
//! are written once in `coupond_store_sql::wallet`.

use coupond_domain::{Coupon, TemplateId, Timestamp};
use coupond_store::{ClaimOutcome, ClaimRequest, CouponQuery, StoreResult};
use coupond_store_sql::wallet;

use crate::claims::Pipelined;
use crate::store::MysqlStore;

coupond_store_sql::impl_claim_store!(MysqlStore, {
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

    async fn user_coupons(&self, q: &CouponQuery) -> StoreResult<Vec<Coupon>> {
        wallet::user_coupons(self, q).await
    }
});
