//! Storage for coupond: one trait, implemented once per backend.
//!
//! - [`Store`]: everything the service persists. Backends (`coupond-store-sqlite`,
//!   `coupond-store-postgres`) own their SQL and migrations; nothing above this crate sees a
//!   database type.
//! - [`error`]: [`StoreError`], deliberately small: `NotFound`, `Conflict`, `Unavailable`,
//!   `Other`. The API turns it into HTTP in one place.
//! - [`model`]: records that exist only in storage (API keys, queries, pages).
//! - [`codec`]: the JSON both backends use for the nested parts of a record, so a record reads
//!   back identically from either.
//! - [`testing`] (feature `testing`): the conformance suite; every backend runs all of it.
#![forbid(unsafe_code)]

pub mod codec;
pub mod error;
pub mod model;
#[cfg(feature = "testing")]
pub mod testing;

use async_trait::async_trait;
use coupond_domain::{
    Activity, ActivityId, ActivitySpec, Coupon, CouponId, Listing, ListingDraft, ListingId,
    Merchant, MerchantDraft, MerchantId, Template, TemplateId, TemplateSpec, Timestamp,
};

pub use error::{StoreError, StoreResult};
pub use model::{
    ActivityQuery, ApiKey, ClaimOutcome, ClaimRequest, CouponQuery, IdempotencyKey, ListingQuery,
    NewApiKey, NewTemplate, Page, PoolStats, Role, TemplateAudit, TemplateQuery,
};

/// Everything coupond persists. Implementations are cheap to share (`Arc<dyn Store>`), safe to
/// call concurrently, and make each method atomic: it either fully happens or leaves nothing.
///
/// Writes that depend on a record the caller read earlier take its `version` and fail with
/// [`StoreError::Conflict`] (`"version"`) if it changed meanwhile (optimistic locking), so two
/// racing edits cannot both apply.
#[async_trait]
pub trait Store: Send + Sync + std::fmt::Debug + 'static {
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

    // --- API keys -------------------------------------------------------------------------
    async fn insert_api_key(&self, key: &NewApiKey, now: Timestamp) -> StoreResult<ApiKey>;
    /// The key with this SHA-256 hash, revoked or not.
    async fn api_key_by_hash(&self, hash: &[u8; 32]) -> StoreResult<ApiKey>;
    async fn list_api_keys(&self) -> StoreResult<Vec<ApiKey>>;
    /// Marks the key revoked; revoking twice keeps the first instant.
    async fn revoke_api_key(&self, id: i64, now: Timestamp) -> StoreResult<ApiKey>;

    // --- merchants ------------------------------------------------------------------------
    async fn insert_merchant(&self, m: &MerchantDraft, now: Timestamp) -> StoreResult<Merchant>;
    async fn merchant(&self, id: MerchantId) -> StoreResult<Merchant>;

    // --- listings -------------------------------------------------------------------------
    /// Inserts a listing; an `external_id` the merchant already uses is a `Conflict`.
    async fn insert_listing(
        &self,
        merchant: MerchantId,
        l: &ListingDraft,
        now: Timestamp,
    ) -> StoreResult<Listing>;
    async fn listing(&self, id: ListingId) -> StoreResult<Listing>;
    /// Replaces a listing's fields (its merchant stays); an `external_id` the merchant already
    /// uses on another listing is a `Conflict`.
    async fn update_listing(
        &self,
        id: ListingId,
        l: &ListingDraft,
        now: Timestamp,
    ) -> StoreResult<Listing>;
    /// Listings matching `q`, ascending by id, after the page cursor.
    async fn list_listings(&self, q: &ListingQuery) -> StoreResult<Vec<Listing>>;
    /// The templates bound to `listings` that are claimable (active) at `now`, as
    /// `(listing, template)` pairs ordered by listing then template.
    async fn live_templates(
        &self,
        listings: &[ListingId],
        now: Timestamp,
    ) -> StoreResult<Vec<(ListingId, Template)>>;
    /// The templates bound to a listing, whatever their status.
    async fn listing_bindings(&self, listing: ListingId) -> StoreResult<Vec<TemplateId>>;

    // --- bindings -------------------------------------------------------------------------
    /// Binds `template` to `listing`: `Ok(true)` if bound now, `Ok(false)` if it already was.
    /// A listing holds at most `max` bindings: one more is `Conflict("limit")`, decided in the
    /// database so concurrent binds cannot overshoot.
    async fn bind(
        &self,
        listing: ListingId,
        template: TemplateId,
        max: u32,
        now: Timestamp,
    ) -> StoreResult<bool>;
    /// Removes a binding: `Ok(true)` if there was one.
    async fn unbind(&self, listing: ListingId, template: TemplateId) -> StoreResult<bool>;

    // --- activities -----------------------------------------------------------------------
    async fn insert_activity(&self, spec: &ActivitySpec, now: Timestamp) -> StoreResult<Activity>;
    async fn activity(&self, id: ActivityId) -> StoreResult<Activity>;
    /// Activities matching `q`, ascending by id, after the page cursor.
    async fn list_activities(&self, q: &ActivityQuery) -> StoreResult<Vec<Activity>>;
    /// Replaces the activity's terms if neither it (`version`) nor any of its templates
    /// (`enrollment_seq`) changed since the caller read it. In the same transaction, writes
    /// the new claim window (and expiry) of the templates in `following`, those whose window
    /// follows the activity's run window.
    async fn update_activity(
        &self,
        id: ActivityId,
        version: i64,
        enrollment_seq: i64,
        spec: &ActivitySpec,
        following: &[(TemplateId, TemplateSpec)],
        now: Timestamp,
    ) -> StoreResult<Activity>;
    /// Aborts the activity and, in the same transaction, every template in it (and removes
    /// their bindings).
    async fn abort_activity(
        &self,
        id: ActivityId,
        version: i64,
        now: Timestamp,
    ) -> StoreResult<Activity>;

    // --- templates ------------------------------------------------------------------------
    /// Inserts a template. Inside an activity, only if the activity still has
    /// `activity_version` and is not aborted (so its terms cannot have changed since the caller
    /// validated against them); bumps the activity's `enrollment_seq` in the same transaction.
    async fn insert_template(&self, t: &NewTemplate<'_>, now: Timestamp) -> StoreResult<Template>;
    async fn template(&self, id: TemplateId) -> StoreResult<Template>;
    /// Templates matching `q`, ascending by id, after the page cursor.
    async fn list_templates(&self, q: &TemplateQuery) -> StoreResult<Vec<Template>>;
    /// Every template of an activity (for re-validating them when it changes).
    async fn activity_templates(&self, id: ActivityId) -> StoreResult<Vec<Template>>;
    /// Replaces the template's terms, checking its version and, inside an activity, the
    /// activity's version.
    async fn update_template(
        &self,
        id: TemplateId,
        version: i64,
        activity_version: Option<i64>,
        spec: &TemplateSpec,
        now: Timestamp,
    ) -> StoreResult<Template>;
    async fn publish_template(
        &self,
        id: TemplateId,
        version: i64,
        now: Timestamp,
    ) -> StoreResult<Template>;
    /// Aborts the template and removes its bindings, in one transaction.
    async fn abort_template(
        &self,
        id: TemplateId,
        version: i64,
        now: Timestamp,
    ) -> StoreResult<Template>;

    // --- claims and wallets -----------------------------------------------------------------
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
    /// A user's coupons matching `q`, by `(valid_until, id)`.
    async fn user_coupons(&self, q: &CouponQuery) -> StoreResult<Vec<Coupon>>;
    /// How many coupons a template has issued, counted from the coupon rows (for audits).
    async fn count_coupons(&self, template: TemplateId) -> StoreResult<i64>;
    /// Stock, claimed count, coupon rows and the largest holding of one template.
    async fn audit_template(&self, template: TemplateId) -> StoreResult<TemplateAudit>;
    /// How many of `coupons` exist as coupons of `template`.
    async fn count_coupons_among(
        &self,
        template: TemplateId,
        coupons: &[CouponId],
    ) -> StoreResult<i64>;
}
