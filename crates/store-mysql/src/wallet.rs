//! The [`ClaimStore`] of MySQL: the claim batch of `claims`, and a user's wallet, whose reads
//! are written once in `coupond_store_sql::wallet`.

use async_trait::async_trait;
use coupond_domain::{Coupon, CouponId, TemplateId, Timestamp};
use coupond_store::{
    ClaimOutcome, ClaimRequest, ClaimStore, CouponEvent, CouponQuery, StoreResult,
};
use coupond_store_sql::{wallet, Tx};

use crate::claims::claim_in;
use crate::exec::MysqlTx;
use crate::rows::db_err;
use crate::store::MysqlStore;

#[async_trait]
impl ClaimStore for MysqlStore {
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

    async fn user_coupons(&self, q: &CouponQuery) -> StoreResult<Vec<Coupon>> {
        wallet::user_coupons(self, q).await
    }

    async fn coupon(&self, id: CouponId) -> StoreResult<Coupon> {
        wallet::coupon(self, id).await
    }

    async fn coupon_history(&self, coupon: CouponId) -> StoreResult<Vec<CouponEvent>> {
        wallet::coupon_history(self, coupon).await
    }
}
