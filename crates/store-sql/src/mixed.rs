//! The storage traits that mix methods written once here with a backend's own
//! ([`Backend`]): `ClaimStore`, `CheckoutStore`, `OutboxStore`, `IssuanceStore`.

use crate::backend::{Backend, SqlStore};

/// `CheckoutStore`: the backend gives `lock_order` (how a lock claims its order id).
#[async_trait::async_trait]
impl<B: Backend> coupond_store::CheckoutStore for SqlStore<B> {
    async fn lock_order(
        &self,
        req: &coupond_store::checkout::LockRequest<'_>,
        rules: &coupond_store::checkout::LockRules<'_>,
    ) -> coupond_store::StoreResult<coupond_store::checkout::LockOutcome> {
        self.db.lock_order(req, rules).await
    }

    async fn coupons_by_ids(
        &self,
        ids: &[coupond_domain::CouponId],
    ) -> coupond_store::StoreResult<Vec<coupond_domain::Coupon>> {
        crate::checkout::coupons_by_ids(&self.db, ids).await
    }
    async fn templates_by_ids(
        &self,
        ids: &[coupond_domain::TemplateId],
    ) -> coupond_store::StoreResult<Vec<coupond_domain::Template>> {
        crate::checkout::templates_by_ids(&self.db, ids).await
    }
    async fn confirm_order(
        &self,
        order: &coupond_domain::OrderId,
        actor: &coupond_domain::Actor,
        now: coupond_domain::Timestamp,
    ) -> coupond_store::StoreResult<coupond_store::checkout::OrderStep> {
        crate::checkout::confirm_order(&self.db, order, actor, now).await
    }
    async fn cancel_order(
        &self,
        order: &coupond_domain::OrderId,
        actor: &coupond_domain::Actor,
        now: coupond_domain::Timestamp,
    ) -> coupond_store::StoreResult<coupond_store::checkout::OrderStep> {
        crate::checkout::cancel_order(&self.db, order, actor, now).await
    }
    async fn expire_locks(
        &self,
        now: coupond_domain::Timestamp,
        limit: u32,
    ) -> coupond_store::StoreResult<Vec<coupond_domain::OrderId>> {
        crate::checkout::expire_locks(&self.db, now, limit).await
    }
    async fn extend_order(
        &self,
        order: &coupond_domain::OrderId,
        deadline: coupond_domain::Timestamp,
        now: coupond_domain::Timestamp,
    ) -> coupond_store::StoreResult<coupond_store::checkout::ExtendStep> {
        crate::deadlines::extend_order(&self.db, order, deadline, now).await
    }
    async fn order(
        &self,
        order: &coupond_domain::OrderId,
    ) -> coupond_store::StoreResult<coupond_store::checkout::OrderRecord> {
        crate::checkout::order(&self.db, order).await
    }
    async fn order_coupons(
        &self,
        order: &coupond_domain::OrderId,
    ) -> coupond_store::StoreResult<Vec<coupond_domain::Coupon>> {
        crate::checkout::order_coupons(&self.db, order).await
    }
    async fn record_plain(
        &self,
        order: &coupond_store::checkout::PlainOrder<'_>,
    ) -> coupond_store::StoreResult<coupond_store::checkout::RecordOutcome> {
        crate::plain_orders::record_plain(&self.db, order).await
    }
}

/// `ClaimStore`: the backend gives `claim_batch`, `claim_lanes` if not 1, and
/// `user_coupons` (SQLite reads a page as one JSON row; the others call
/// [`crate::wallet::user_coupons`]); `held`, `coupon` and `coupon_history` are shared.
#[async_trait::async_trait]
impl<B: Backend> coupond_store::ClaimStore for SqlStore<B> {
    async fn claim_batch(
        &self,
        template: coupond_domain::TemplateId,
        claims: &[coupond_store::ClaimRequest],
        now: coupond_domain::Timestamp,
    ) -> coupond_store::StoreResult<Vec<coupond_store::ClaimOutcome>> {
        self.db.claim_batch(template, claims, now).await
    }
    fn claim_lanes(&self) -> usize {
        self.db.claim_lanes()
    }
    async fn user_coupons(
        &self,
        q: &coupond_store::CouponQuery,
    ) -> coupond_store::StoreResult<Vec<coupond_domain::Coupon>> {
        self.db.user_coupons(q).await
    }

    async fn held(
        &self,
        user: &coupond_domain::UserId,
        templates: &[coupond_domain::TemplateId],
    ) -> coupond_store::StoreResult<Vec<(coupond_domain::TemplateId, u32)>> {
        crate::wallet::held(&self.db, user, templates).await
    }
    async fn coupon(
        &self,
        id: coupond_domain::CouponId,
    ) -> coupond_store::StoreResult<coupond_domain::Coupon> {
        crate::wallet::coupon(&self.db, id).await
    }
    async fn coupon_history(
        &self,
        coupon: coupond_domain::CouponId,
    ) -> coupond_store::StoreResult<Vec<coupond_store::CouponEvent>> {
        crate::wallet::coupon_history(&self.db, coupon).await
    }
}

/// `OutboxStore`: the backend gives `outbox_read` (its read order).
#[async_trait::async_trait]
impl<B: Backend> coupond_store::OutboxStore for SqlStore<B> {
    async fn outbox_read(
        &self,
        after: coupond_store::OutboxPosition,
        limit: u32,
    ) -> coupond_store::StoreResult<Vec<coupond_store::Event>> {
        self.db.outbox_read(after, limit).await
    }

    async fn try_lease(
        &self,
        name: &str,
        holder: &str,
        now: coupond_domain::Timestamp,
        until: coupond_domain::Timestamp,
    ) -> coupond_store::StoreResult<bool> {
        crate::scheduling::try_lease(&self.db, name, holder, now, until).await
    }
    async fn release_leases(&self, holder: &str) -> coupond_store::StoreResult<u64> {
        crate::scheduling::release_leases(&self.db, holder).await
    }
    async fn outbox_latest(
        &self,
        before: Option<i64>,
        limit: u32,
    ) -> coupond_store::StoreResult<Vec<coupond_store::Event>> {
        crate::scheduling::outbox_latest(&self.db, before, limit).await
    }
    async fn sink_position(
        &self,
        sink: &str,
    ) -> coupond_store::StoreResult<coupond_store::OutboxPosition> {
        crate::scheduling::sink_position(&self.db, sink).await
    }
    async fn sink_ack(
        &self,
        acks: &[(&str, coupond_store::OutboxPosition)],
    ) -> coupond_store::StoreResult<()> {
        crate::scheduling::sink_ack(&self.db, acks).await
    }
}

/// `IssuanceStore`: the backend gives `issue_chunk` (a chunk's claims on its claim path).
#[async_trait::async_trait]
impl<B: Backend> coupond_store::IssuanceStore for SqlStore<B> {
    async fn issue_chunk(
        &self,
        id: i64,
        users: &[coupond_domain::UserId],
        max: u32,
        now: coupond_domain::Timestamp,
    ) -> coupond_store::StoreResult<Option<coupond_store::Issuance>> {
        self.db.issue_chunk(id, users, max, now).await
    }

    async fn insert_issuance(
        &self,
        new: &coupond_store::NewIssuance<'_>,
        now: coupond_domain::Timestamp,
    ) -> coupond_store::StoreResult<(coupond_store::Issuance, bool)> {
        crate::issuance::insert_issuance(&self.db, new, now).await
    }
    async fn issuance(&self, id: i64) -> coupond_store::StoreResult<coupond_store::Issuance> {
        crate::issuance::issuance(&self.db, id).await
    }
    async fn template_issuances(
        &self,
        template: coupond_domain::TemplateId,
        page: coupond_store::Page,
    ) -> coupond_store::StoreResult<Vec<coupond_store::Issuance>> {
        crate::issuance::template_issuances(&self.db, template, page).await
    }
    async fn open_issuances(&self) -> coupond_store::StoreResult<Vec<coupond_store::OpenJob>> {
        crate::issuance::open_issuances(&self.db).await
    }
    async fn queued_issuance_users(&self, owner: i64) -> coupond_store::StoreResult<i64> {
        crate::issuance::queued_issuance_users(&self.db, owner).await
    }
    async fn issuance_users(
        &self,
        id: i64,
    ) -> coupond_store::StoreResult<Vec<coupond_domain::UserId>> {
        crate::issuance::issuance_users(&self.db, id).await
    }
}
