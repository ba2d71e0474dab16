//! A user's wallet on PostgreSQL, and the [`ClaimStore`] that pairs it with the claim batch
//! of `claims`.

use async_trait::async_trait;
use coupond_domain::{Coupon, CouponId, CouponStatus, TemplateId, Timestamp};
use coupond_store::{
    ClaimOutcome, ClaimRequest, ClaimStore, CouponEvent, CouponQuery, StoreError, StoreResult,
};
use sqlx::{Postgres, QueryBuilder};

use crate::rows::{self, db_err};
use crate::store::{dt, PgStore};

#[async_trait]
impl ClaimStore for PgStore {
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
        let mut b = QueryBuilder::<Postgres>::new("SELECT * FROM coupons WHERE user_id = ");
        b.push_bind(q.user.as_str().to_owned());
        let now = dt(q.now);
        match q.status {
            None => {}
            Some(CouponStatus::Unused) => {
                b.push(" AND status = 'unused' AND valid_until > ")
                    .push_bind(now);
            }
            Some(CouponStatus::Expired) => {
                b.push(" AND (status = 'expired' OR (status = 'unused' AND valid_until <= ")
                    .push_bind(now)
                    .push("))");
            }
            Some(s) => {
                b.push(" AND status = ").push_bind(s.as_str());
            }
        }
        if let Some((vu, id)) = q.after {
            b.push(" AND (valid_until, id) > (")
                .push_bind(dt(vu))
                .push(", ")
                .push_bind(id)
                .push(")");
        }
        b.push(" ORDER BY valid_until, id LIMIT ")
            .push_bind(i64::from(q.limit));
        let rows = b.build().fetch_all(&self.pool).await.map_err(db_err)?;
        rows.iter().map(rows::coupon).collect()
    }

    async fn coupon(&self, id: CouponId) -> StoreResult<Coupon> {
        let row = sqlx::query("SELECT * FROM coupons WHERE id = $1")
            .bind(id.get())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound)?;
        rows::coupon(&row)
    }

    async fn coupon_history(&self, coupon: CouponId) -> StoreResult<Vec<CouponEvent>> {
        let rows = sqlx::query("SELECT * FROM coupon_events WHERE coupon_id = $1 ORDER BY id")
            .bind(coupon.get())
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter().map(rows::coupon_event).collect()
    }
}
