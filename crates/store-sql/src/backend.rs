//! [`SqlStore`]: every storage trait of `coupond_store`, implemented once for any SQL
//! [`Backend`]. The statements live in the area modules, each ending with its trait's
//! implementation over `SqlStore<B>`; a backend crate gives a [`Db`] and the few operations
//! that are truly its own (the [`Backend`] methods), and names its store `SqlStore<ItsDb>`.
//!
//! (A trait of `coupond_store` cannot be implemented generically over a backend's type, which
//! the orphan rule forbids: the wrapper, a type of this crate, is what lets one generic
//! implementation serve every backend.)

use std::ops::Deref;

use async_trait::async_trait;
use coupond_domain::{Coupon, TemplateId, Timestamp, UserId};
use coupond_store::checkout::{LockOutcome, LockRequest, LockRules};
use coupond_store::{
    ClaimOutcome, ClaimRequest, CouponQuery, Event, Issuance, OutboxPosition, Reminder, StoreResult,
};

use crate::db::Db;

/// What a database does its own way; everything else is the shared SQL.
#[async_trait]
pub trait Backend: Db + Sized + std::fmt::Debug + 'static {
    /// [`ClaimStore::claim_batch`](coupond_store::ClaimStore::claim_batch): the hot write path.
    async fn claim_batch(
        &self,
        template: TemplateId,
        claims: &[ClaimRequest],
        now: Timestamp,
    ) -> StoreResult<Vec<ClaimOutcome>>;

    /// [`ClaimStore::claim_lanes`](coupond_store::ClaimStore::claim_lanes).
    fn claim_lanes(&self) -> usize {
        1
    }

    /// A user's coupons: the shared read unless the backend decodes the page its own way.
    async fn user_coupons(&self, q: &CouponQuery) -> StoreResult<Vec<Coupon>> {
        crate::wallet::user_coupons(self, q).await
    }

    /// A checkout lock (`CheckoutStore::lock_order`): the order id claimed first, unless the
    /// backend, having one writer, can claim it last.
    async fn lock_order(
        &self,
        req: &LockRequest<'_>,
        rules: &LockRules<'_>,
    ) -> StoreResult<LockOutcome> {
        crate::checkout::lock_order_first(self, req, rules).await
    }

    /// The outbox after `after`, in the backend's commit order (`OutboxStore::outbox_read`).
    async fn outbox_read(&self, after: OutboxPosition, limit: u32) -> StoreResult<Vec<Event>>;

    /// One chunk of a bulk issuance on the backend's claim path
    /// (`IssuanceStore::issue_chunk`).
    async fn issue_chunk(
        &self,
        id: i64,
        users: &[UserId],
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Option<Issuance>>;

    /// Plans reminders: the shared multi-row insert unless the backend has a better statement.
    async fn plan_reminders(&self, reminders: &[Reminder]) -> StoreResult<()> {
        crate::inbox::plan_reminders(self, reminders).await
    }
}

/// A SQL backend as a [`Store`](coupond_store::Store). Derefs to the backend, for what it
/// offers beyond the traits (migrations, its pools).
#[derive(Clone, Debug)]
pub struct SqlStore<B> {
    pub(crate) db: B,
}

impl<B: Backend> SqlStore<B> {
    /// The store over `db`.
    pub fn new(db: B) -> Self {
        SqlStore { db }
    }
}

/// Every area trait is implemented for `SqlStore<B>` in the area modules.
impl<B: Backend> coupond_store::Store for SqlStore<B> {}

impl<B> Deref for SqlStore<B> {
    type Target = B;

    fn deref(&self) -> &B {
        &self.db
    }
}
