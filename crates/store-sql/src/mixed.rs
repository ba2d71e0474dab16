//! Implementations of the storage traits that mix methods written once here with a backend's
//! own (`ClaimStore`, `CheckoutStore`, `OutboxStore`, `IssuanceStore`). The backend invokes the
//! macro with its type and a block holding only its own methods, e.g.
//!
//! ```ignore
//! coupond_store_sql::impl_outbox_store!(MysqlStore, {
//!     async fn outbox_read(&self, after: OutboxPosition, limit: u32) -> StoreResult<Vec<Event>> {
//!         self.outbox_read_q(after, limit).await
//!     }
//! });
//! ```
//!
//! and the macro adds the shared methods, forwarding to the functions where their SQL is.
//! (The whole `impl` comes from the macro so that `#[async_trait]` sees every method.)

/// `CheckoutStore`: the backend gives `lock_order` (how a lock claims its order id).
#[macro_export]
macro_rules! impl_checkout_store {
    ($t:ty, { $($own:tt)* }) => {
        #[$crate::async_trait]
        impl $crate::reexport::store::CheckoutStore for $t {
            $($own)*

            async fn coupons_by_ids(
                &self,
                ids: &[$crate::reexport::domain::CouponId],
            ) -> $crate::reexport::store::StoreResult<Vec<$crate::reexport::domain::Coupon>> {
                $crate::checkout::coupons_by_ids(self, ids).await
            }
            async fn templates_by_ids(
                &self,
                ids: &[$crate::reexport::domain::TemplateId],
            ) -> $crate::reexport::store::StoreResult<Vec<$crate::reexport::domain::Template>> {
                $crate::checkout::templates_by_ids(self, ids).await
            }
            async fn confirm_order(
                &self,
                order: &$crate::reexport::domain::OrderId,
                actor: &$crate::reexport::domain::Actor,
                now: $crate::reexport::domain::Timestamp,
            ) -> $crate::reexport::store::StoreResult<$crate::reexport::store::checkout::OrderStep> {
                $crate::checkout::confirm_order(self, order, actor, now).await
            }
            async fn cancel_order(
                &self,
                order: &$crate::reexport::domain::OrderId,
                actor: &$crate::reexport::domain::Actor,
                now: $crate::reexport::domain::Timestamp,
            ) -> $crate::reexport::store::StoreResult<$crate::reexport::store::checkout::OrderStep> {
                $crate::checkout::cancel_order(self, order, actor, now).await
            }
            async fn expire_locks(
                &self,
                now: $crate::reexport::domain::Timestamp,
                limit: u32,
            ) -> $crate::reexport::store::StoreResult<Vec<$crate::reexport::domain::OrderId>> {
                $crate::checkout::expire_locks(self, now, limit).await
            }
            async fn extend_order(
                &self,
                order: &$crate::reexport::domain::OrderId,
                deadline: $crate::reexport::domain::Timestamp,
                now: $crate::reexport::domain::Timestamp,
            ) -> $crate::reexport::store::StoreResult<$crate::reexport::store::checkout::ExtendStep> {
                $crate::deadlines::extend_order(self, order, deadline, now).await
            }
            async fn order(
                &self,
                order: &$crate::reexport::domain::OrderId,
            ) -> $crate::reexport::store::StoreResult<$crate::reexport::store::checkout::OrderRecord> {
                $crate::checkout::order(self, order).await
            }
            async fn order_coupons(
                &self,
                order: &$crate::reexport::domain::OrderId,
            ) -> $crate::reexport::store::StoreResult<Vec<$crate::reexport::domain::Coupon>> {
                $crate::checkout::order_coupons(self, order).await
            }
            async fn record_plain(
                &self,
                order: &$crate::reexport::store::checkout::PlainOrder<'_>,
            ) -> $crate::reexport::store::StoreResult<$crate::reexport::store::checkout::RecordOutcome> {
                $crate::plain_orders::record_plain(self, order).await
            }
        }
    };
}

/// `ClaimStore`: the backend gives `claim_batch`, `claim_lanes` if not 1, and
/// `user_coupons` (SQLite reads a page as one JSON row; the others call
/// [`crate::wallet::user_coupons`]); `held`, `coupon` and `coupon_history` are shared.
#[macro_export]
macro_rules! impl_claim_store {
    ($t:ty, { $($own:tt)* }) => {
        #[$crate::async_trait]
        impl $crate::reexport::store::ClaimStore for $t {
            $($own)*

            async fn held(
                &self,
                user: &$crate::reexport::domain::UserId,
                templates: &[$crate::reexport::domain::TemplateId],
            ) -> $crate::reexport::store::StoreResult<
                Vec<($crate::reexport::domain::TemplateId, u32)>,
            > {
                $crate::wallet::held(self, user, templates).await
            }
            async fn coupon(
                &self,
                id: $crate::reexport::domain::CouponId,
            ) -> $crate::reexport::store::StoreResult<$crate::reexport::domain::Coupon> {
                $crate::wallet::coupon(self, id).await
            }
            async fn coupon_history(
                &self,
                coupon: $crate::reexport::domain::CouponId,
            ) -> $crate::reexport::store::StoreResult<Vec<$crate::reexport::store::CouponEvent>> {
                $crate::wallet::coupon_history(self, coupon).await
            }
        }
    };
}

/// `OutboxStore`: the backend gives `outbox_read` (its read order).
#[macro_export]
macro_rules! impl_outbox_store {
    ($t:ty, { $($own:tt)* }) => {
        #[$crate::async_trait]
        impl $crate::reexport::store::OutboxStore for $t {
            $($own)*

            async fn try_lease(
                &self,
                name: &str,
                holder: &str,
                now: $crate::reexport::domain::Timestamp,
                until: $crate::reexport::domain::Timestamp,
            ) -> $crate::reexport::store::StoreResult<bool> {
                $crate::scheduling::try_lease(self, name, holder, now, until).await
            }
            async fn release_leases(
                &self,
                holder: &str,
            ) -> $crate::reexport::store::StoreResult<u64> {
                $crate::scheduling::release_leases(self, holder).await
            }
            async fn outbox_latest(
                &self,
                before: Option<i64>,
                limit: u32,
            ) -> $crate::reexport::store::StoreResult<Vec<$crate::reexport::store::Event>> {
                $crate::scheduling::outbox_latest(self, before, limit).await
            }
            async fn sink_position(
                &self,
                sink: &str,
            ) -> $crate::reexport::store::StoreResult<$crate::reexport::store::OutboxPosition> {
                $crate::scheduling::sink_position(self, sink).await
            }
            async fn sink_ack(
                &self,
                acks: &[(&str, $crate::reexport::store::OutboxPosition)],
            ) -> $crate::reexport::store::StoreResult<()> {
                $crate::scheduling::sink_ack(self, acks).await
            }
        }
    };
}

/// `IssuanceStore`: the backend gives `issue_chunk` (a chunk's claims on its claim path).
#[macro_export]
macro_rules! impl_issuance_store {
    ($t:ty, { $($own:tt)* }) => {
        #[$crate::async_trait]
        impl $crate::reexport::store::IssuanceStore for $t {
            $($own)*

            async fn insert_issuance(
                &self,
                new: &$crate::reexport::store::NewIssuance<'_>,
                now: $crate::reexport::domain::Timestamp,
            ) -> $crate::reexport::store::StoreResult<($crate::reexport::store::Issuance, bool)> {
                $crate::issuance::insert_issuance(self, new, now).await
            }
            async fn issuance(
                &self,
                id: i64,
            ) -> $crate::reexport::store::StoreResult<$crate::reexport::store::Issuance> {
                $crate::issuance::issuance(self, id).await
            }
            async fn template_issuances(
                &self,
                template: $crate::reexport::domain::TemplateId,
                page: $crate::reexport::store::Page,
            ) -> $crate::reexport::store::StoreResult<Vec<$crate::reexport::store::Issuance>> {
                $crate::issuance::template_issuances(self, template, page).await
            }
            async fn open_issuances(
                &self,
            ) -> $crate::reexport::store::StoreResult<Vec<$crate::reexport::store::OpenJob>> {
                $crate::issuance::open_issuances(self).await
            }
            async fn queued_issuance_users(
                &self,
                owner: i64,
            ) -> $crate::reexport::store::StoreResult<i64> {
                $crate::issuance::queued_issuance_users(self, owner).await
            }
            async fn issuance_users(
                &self,
                id: i64,
            ) -> $crate::reexport::store::StoreResult<Vec<$crate::reexport::domain::UserId>> {
                $crate::issuance::issuance_users(self, id).await
            }
        }
    };
}
