//! Claims and wallets at the storage boundary.

use crate::{ClaimOutcome, ClaimRequest, CouponEvent, CouponQuery, StoreResult};
use coupond_domain::{Coupon, CouponId, TemplateId, Timestamp, UserId};

use async_trait::async_trait;

/// Claims (the hot write path) and the wallet reads of coupons and their history.
#[async_trait]
pub trait ClaimStore: Send + Sync {
    /// Claims, in one transaction, a coupon of `template` for each request, in order: a
    /// request gets `LimitReached` if its user already holds the per-user limit (counting
    /// earlier requests of the batch), `SoldOut` once the stock is exhausted, `NotClaimable`
    /// if the template is not active at `now`; every `Issued` coupon exists when this returns,
    /// and `claimed` grew by exactly their number. Never issues past the stock. A request whose
    /// idempotency key already issued a coupon gets `Replayed` with that coupon (whatever the
    /// stock is now), or `KeyReused` if the key was used for another request; a key is
    /// recorded only with a coupon, so a refused claim can be retried under the same key.
    async fn claim_batch(
        &self,
        template: TemplateId,
        claims: &[ClaimRequest],
        now: Timestamp,
    ) -> StoreResult<Vec<ClaimOutcome>>;
    /// How many `claim_batch` transactions of one template are worth having in flight at once
    /// from one process: 1 where the database has one writer (SQLite), more where batches of
    /// one template do not wait on each other (PostgreSQL's stock shards).
    fn claim_lanes(&self) -> usize {
        1
    }
    /// A user's coupons matching `q`, by `(valid_until, id)`.
    async fn user_coupons(&self, q: &CouponQuery) -> StoreResult<Vec<Coupon>>;
    /// How many coupons `user` was issued of each of `templates`, as the per-user limit
    /// counts them (used, expired and revoked ones included); templates it never claimed are
    /// left out. The coupon centre's read of "how many you hold".
    async fn held(
        &self,
        user: &UserId,
        templates: &[TemplateId],
    ) -> StoreResult<Vec<(TemplateId, u32)>>;
    /// A coupon by id.
    async fn coupon(&self, id: CouponId) -> StoreResult<Coupon>;
    /// A coupon's status changes, oldest first.
    async fn coupon_history(&self, coupon: CouponId) -> StoreResult<Vec<CouponEvent>>;
}
