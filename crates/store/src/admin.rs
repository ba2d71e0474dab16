//! The store's own operations, reports, and the inspection extension.

use crate::{
    ApiKey, ChannelHour, ConsoleSession, CouponCounts, Event, FigureKey, Figures, FiguresQuery,
    HoldersQuery, KeptFigures, NewApiKey, OutboxPosition, PoolStats, Since, Standing, StoreResult,
    TemplateAudit, UsageRow, Violation,
};
use coupond_domain::{Coupon, CouponId, MerchantId, OperatorId, TemplateId, Timestamp, UserId};

use async_trait::async_trait;

/// The store itself: health, settings, API keys, and the way to its inspection extension.
#[async_trait]
pub trait AdminStore: Send + Sync {
    /// `"sqlite"` or `"postgres"`.
    fn backend(&self) -> &'static str;
    /// A round trip to the database.
    async fn ping(&self) -> StoreResult<()>;
    /// Connection pool sizes, for metrics.
    fn pool_stats(&self) -> PoolStats;
    /// Waits for checked-out connections and closes the pool.
    async fn close(&self);
    /// Returns the setting `key`, first storing `init` if it has none. Concurrent callers all
    /// get the one value that won.
    async fn setting_or_init(&self, key: &str, init: &str) -> StoreResult<String>;
    /// Sets the setting `key` to `value`, replacing any value it had.
    async fn put_setting(&self, key: &str, value: &str) -> StoreResult<()>;
    async fn insert_api_key(&self, key: &NewApiKey, now: Timestamp) -> StoreResult<ApiKey>;
    /// The key with this SHA-256 hash, revoked or not.
    async fn api_key_by_hash(&self, hash: &[u8; 32]) -> StoreResult<ApiKey>;
    async fn list_api_keys(&self) -> StoreResult<Vec<ApiKey>>;
    /// Marks the key revoked (revoking twice keeps the first instant) and ends every console
    /// session signed in with it, in one transaction.
    async fn revoke_api_key(&self, id: i64, now: Timestamp) -> StoreResult<ApiKey>;
    /// Makes key `id` belong to `operator` (`None`: nobody), or `NotFound`.
    async fn set_api_key_operator(
        &self,
        id: i64,
        operator: Option<OperatorId>,
    ) -> StoreResult<ApiKey>;
    /// Stores a console session under `id` (the SHA-256 of the cookie's session id), and
    /// drops sessions expired by its creation time.
    async fn insert_console_session(&self, id: &[u8; 32], s: &ConsoleSession) -> StoreResult<()>;
    /// The console session stored under `id`, unless it has expired by `now`.
    async fn console_session(
        &self,
        id: &[u8; 32],
        now: Timestamp,
    ) -> StoreResult<Option<ConsoleSession>>;
    /// Ends the console session stored under `id` (sign-out); ending it twice is a no-op.
    async fn end_console_session(&self, id: &[u8; 32]) -> StoreResult<()>;
    /// Reads for tests, audits and the load tool.
    fn inspect(&self) -> &dyn InspectStore;
}

/// Stats, reconciliation and the invariant audit.
#[async_trait]
pub trait ReportStore: Send + Sync {
    /// Each template's coupons by status at `now` and its refunds, with per-hour counts (the
    /// hours from `since` to `now` that had any).
    async fn coupon_counts(
        &self,
        templates: &[TemplateId],
        now: Timestamp,
        since: Timestamp,
    ) -> StoreResult<Vec<(TemplateId, CouponCounts)>>;
    /// Per template, the coupons used in `[from, to)` and their discount (refunded since or
    /// not), and the refunds made in `[from, to)` with the discount they took back.
    async fn usage_between(&self, from: Timestamp, to: Timestamp) -> StoreResult<Vec<UsageRow>>;
    /// The campaign figures of some templates over a period, per hour and channel, and the
    /// orders that used them per hour (see [`crate::figures`]).
    async fn figures(&self, q: &FiguresQuery<'_>) -> StoreResult<Figures>;
    /// Unused coupons of the templates whose validity ended in the period (before `now`), per
    /// hour and channel (only `expired_unused` set).
    async fn expired_unused(&self, q: &FiguresQuery<'_>) -> StoreResult<Vec<ChannelHour>>;
    /// The hours of `[from, to)` kept under `key` (its scope with the same digest) and their
    /// figures.
    async fn kept_figures(
        &self,
        key: &FigureKey,
        from: Timestamp,
        to: Timestamp,
    ) -> StoreResult<KeptFigures>;
    /// Keeps `figures` as the hours `[from, to)` of `key`, every hour of it marked counted (an
    /// hour kept before stays as it was); rows of the scope kept under another digest go.
    async fn keep_figures(
        &self,
        key: &FigureKey,
        from: Timestamp,
        to: Timestamp,
        figures: &Figures,
    ) -> StoreResult<()>;
    /// Coupons created and used at or after `since`, and webhook deliveries created since that
    /// failed or are being retried; of one merchant's templates and endpoints, or all.
    async fn since(&self, merchant: Option<MerchantId>, since: Timestamp) -> StoreResult<Since>;
    /// How one merchant's templates (or all) stand at `now`: claimable, claimable and low on
    /// stock, coupons claimed and used; counted in the database, however many there are.
    async fn standing(&self, merchant: Option<MerchantId>, now: Timestamp)
        -> StoreResult<Standing>;
    /// How many orders are still locked with a deadline before `before` (locks about to
    /// end without a confirm).
    async fn locks_due_before(&self, before: Timestamp) -> StoreResult<i64>;
    /// Up to `limit` claimable templates that need attention at `now` (low on stock, or usable
    /// only until before `soon`), soonest expiry first; of one merchant, or all.
    async fn needing_attention(
        &self,
        merchant: Option<MerchantId>,
        now: Timestamp,
        soon: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<coupond_domain::Template>>;
    /// A page of one template's coupons (who holds them), by id.
    async fn template_coupons(&self, q: &HoldersQuery) -> StoreResult<Vec<Coupon>>;
    /// Checks I1-I3 across the whole database and returns every violation found (at most 100
    /// per check): claimed = coupons <= stock per template; nobody over a per-user limit;
    /// per-user counters equal to the coupons held; every locked coupon held by one locked
    /// order and every used one by a confirmed order; no lock past `now - grace`; each coupon's
    /// last log row agreeing with its status; templates' used, given and reserved agreeing with
    /// their coupons; single-use codes pointing at the coupon they gave.
    async fn audit(&self, now: Timestamp, grace: time::Duration) -> StoreResult<Vec<Violation>>;
}

/// Reads that only tests, audits and the load tool need (through [`AdminStore::inspect`]),
/// and one raw write for tests; not part of any request's path.
#[async_trait]
pub trait InspectStore: Send + Sync {
    /// How many coupons a template has issued, counted from the coupon rows (for audits).
    async fn count_coupons(&self, template: TemplateId) -> StoreResult<i64>;
    /// How many of `coupons` exist as coupons of `template`.
    async fn count_coupons_among(
        &self,
        template: TemplateId,
        coupons: &[CouponId],
    ) -> StoreResult<i64>;
    /// Every coupon of a template with its holder (for audits).
    async fn coupon_owners(&self, template: TemplateId) -> StoreResult<Vec<(CouponId, UserId)>>;
    /// Stock, claimed count, coupon rows and the largest holding of one template.
    async fn audit_template(&self, template: TemplateId) -> StoreResult<TemplateAudit>;
    /// The position after the last event readable now (where a consumer that does not need
    /// the past starts).
    async fn outbox_head(&self) -> StoreResult<OutboxPosition>;
    /// Outbox events with an id above `after`, ascending, at most `limit`.
    async fn events_after(&self, after: i64, limit: u32) -> StoreResult<Vec<Event>>;
    /// Replaces the stored `spec` JSON of a record with `json` as is, as another coupond
    /// version (or a damaged disk) might have left it. Only tests call this.
    async fn put_raw_spec(&self, record: SpecOf, json: &str) -> StoreResult<()>;
}

/// Whose `spec` column [`InspectStore::put_raw_spec`] writes.
#[derive(Clone, Copy, Debug)]
pub enum SpecOf {
    Template(TemplateId),
    Activity(coupond_domain::ActivityId),
}
