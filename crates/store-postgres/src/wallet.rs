//! The [`ClaimStore`] of PostgreSQL: the claim batch of `claims`, and a user's wallet, whose
//! reads are written once in `coupond_store_sql::wallet`.

use coupond_domain::{Coupon, TemplateId, Timestamp};
use coupond_store::{ClaimOutcome, ClaimRequest, CouponQuery, StoreResult};
use coupond_store_sql::wallet;

use crate::store::PgStore;

coupond_store_sql::impl_claim_store!(PgStore, {
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

    async fn user_coupons(&self, q: &CouponQuery) -> StoreResult<Vec<Coupon>> {
        wallet::user_coupons(self, q).await
    }
});
