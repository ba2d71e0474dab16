//! The storage traits that mix methods written once here with a backend's own
//! ([`Backend`]): `ClaimStore`, `CheckoutStore`, `OutboxStore`, `IssuanceStore`.

use crate::backend::{Backend, SqlStore};
use coupond_domain::Actor;
use coupond_domain::Coupon;
use coupond_domain::CouponId;
use coupond_domain::OrderId;
use coupond_domain::Template;
use coupond_domain::TemplateId;
use coupond_domain::Timestamp;
use coupond_domain::UserId;
use coupond_store::checkout::ExtendStep;
use coupond_store::checkout::LockOutcome;
use coupond_store::checkout::LockRequest;
use coupond_store::checkout::LockRules;
use coupond_store::checkout::OrderRecord;
use coupond_store::checkout::OrderStep;
use coupond_store::checkout::PlainOrder;
use coupond_store::checkout::RecordOutcome;
use coupond_store::CheckoutStore;
use coupond_store::ClaimOutcome;
use coupond_store::ClaimRequest;
use coupond_store::ClaimStore;
use coupond_store::CouponEvent;
use coupond_store::CouponQuery;
use coupond_store::Event;
use coupond_store::Issuance;
use coupond_store::IssuanceStore;
use coupond_store::NewIssuance;
use coupond_store::OpenJob;
use coupond_store::OutboxPosition;
use coupond_store::OutboxStore;
use coupond_store::Page;
use coupond_store::StoreResult;

/// `CheckoutStore`: the backend gives `lock_order` (how a lock claims its order id).
#[async_trait::async_trait]
impl<B: Backend> CheckoutStore for SqlStore<B> {
    async fn lock_order(
        &self,
        req: &LockRequest<'_>,
        rules: &LockRules<'_>,
    ) -> StoreResult<LockOutcome> {
        self.db.lock_order(req, rules).await
    }

    async fn coupons_by_ids(&self, ids: &[CouponId]) -> StoreResult<Vec<Coupon>> {
        crate::checkout::coupons_by_ids(&self.db, ids).await
    }
    async fn templates_by_ids(&self, ids: &[TemplateId]) -> StoreResult<Vec<Template>> {
        crate::checkout::templates_by_ids(&self.db, ids).await
    }
    async fn confirm_order(
        &self,
        order: &OrderId,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<OrderStep> {
        crate::checkout::confirm_order(&self.db, order, actor, now).await
    }
    async fn cancel_order(
        &self,
        order: &OrderId,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<OrderStep> {
        crate::checkout::cancel_order(&self.db, order, actor, now).await
    }
    async fn expire_locks(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<OrderId>> {
        crate::checkout::expire_locks(&self.db, now, limit).await
    }
    async fn extend_order(
        &self,
        order: &OrderId,
        deadline: Timestamp,
        now: Timestamp,
    ) -> StoreResult<ExtendStep> {
        crate::deadlines::extend_order(&self.db, order, deadline, now).await
    }
    async fn order(&self, order: &OrderId) -> StoreResult<OrderRecord> {
        crate::checkout::order(&self.db, order).await
    }
    async fn order_coupons(&self, order: &OrderId) -> StoreResult<Vec<Coupon>> {
        crate::checkout::order_coupons(&self.db, order).await
    }
    async fn confirmed_orders(&self, user: &UserId) -> StoreResult<u64> {
        crate::checkout::confirmed_orders(&self.db, user).await
    }
    async fn record_plain(&self, order: &PlainOrder<'_>) -> StoreResult<RecordOutcome> {
        crate::plain_orders::record_plain(&self.db, order).await
    }
}

/// `ClaimStore`: the backend gives `claim_batch`, `claim_lanes` if not 1, and
/// `user_coupons` (SQLite reads a page as one JSON row; the others call
/// [`crate::wallet::user_coupons`]); `held`, `coupon` and `coupon_history` are shared.
#[async_trait::async_trait]
impl<B: Backend> ClaimStore for SqlStore<B> {
    async fn claim_batch(
        &self,
        template: TemplateId,
        claims: &[ClaimRequest],
        now: Timestamp,
    ) -> StoreResult<Vec<ClaimOutcome>> {
        self.db.claim_batch(template, claims, now).await
    }
    fn claim_lanes(&self) -> usize {
        self.db.claim_lanes()
    }
    async fn user_coupons(&self, q: &CouponQuery) -> StoreResult<Vec<Coupon>> {
        self.db.user_coupons(q).await
    }

    async fn held(
        &self,
        user: &UserId,
        templates: &[TemplateId],
    ) -> StoreResult<Vec<(TemplateId, u32)>> {
        crate::wallet::held(&self.db, user, templates).await
    }
    async fn coupon(&self, id: CouponId) -> StoreResult<Coupon> {
        crate::wallet::coupon(&self.db, id).await
    }
    async fn coupon_history(&self, coupon: CouponId) -> StoreResult<Vec<CouponEvent>> {
        crate::wallet::coupon_history(&self.db, coupon).await
    }
}

/// `OutboxStore`: the backend gives `outbox_read` (its read order).
#[async_trait::async_trait]
impl<B: Backend> OutboxStore for SqlStore<B> {
    async fn outbox_read(&self, after: OutboxPosition, limit: u32) -> StoreResult<Vec<Event>> {
        self.db.outbox_read(after, limit).await
    }

    async fn try_lease(
        &self,
        name: &str,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool> {
        crate::scheduling::try_lease(&self.db, name, holder, now, until).await
    }
    async fn release_leases(&self, holder: &str) -> StoreResult<u64> {
        crate::scheduling::release_leases(&self.db, holder).await
    }
    async fn outbox_latest(&self, before: Option<i64>, limit: u32) -> StoreResult<Vec<Event>> {
        crate::scheduling::outbox_latest(&self.db, before, limit).await
    }
    async fn sink_position(&self, sink: &str) -> StoreResult<OutboxPosition> {
        crate::scheduling::sink_position(&self.db, sink).await
    }
    async fn sink_ack(&self, acks: &[(&str, OutboxPosition)]) -> StoreResult<()> {
        crate::scheduling::sink_ack(&self.db, acks).await
    }
}

/// `IssuanceStore`: the backend gives `issue_chunk` (a chunk's claims on its claim path).
#[async_trait::async_trait]
impl<B: Backend> IssuanceStore for SqlStore<B> {
    async fn issue_chunk(
        &self,
        id: i64,
        users: &[UserId],
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Option<Issuance>> {
        self.db.issue_chunk(id, users, max, now).await
    }

    async fn insert_issuance(
        &self,
        new: &NewIssuance<'_>,
        now: Timestamp,
    ) -> StoreResult<(Issuance, bool)> {
        crate::issuance::insert_issuance(&self.db, new, now).await
    }
    async fn issuance(&self, id: i64) -> StoreResult<Issuance> {
        crate::issuance::issuance(&self.db, id).await
    }
    async fn template_issuances(
        &self,
        template: TemplateId,
        page: Page,
    ) -> StoreResult<Vec<Issuance>> {
        crate::issuance::template_issuances(&self.db, template, page).await
    }
    async fn open_issuances(&self) -> StoreResult<Vec<OpenJob>> {
        crate::issuance::open_issuances(&self.db).await
    }
    async fn queued_issuance_users(&self, owner: i64) -> StoreResult<i64> {
        crate::issuance::queued_issuance_users(&self.db, owner).await
    }
    async fn issuance_users(&self, id: i64) -> StoreResult<Vec<UserId>> {
        crate::issuance::issuance_users(&self.db, id).await
    }
}
