//! Storage for coupond: one trait, implemented once per backend.
//!
//! - [`Store`]: everything the service persists. Backends (`coupond-store-sqlite`,
//!   `coupond-store-postgres`) own their SQL and migrations; nothing above this crate sees a
//!   database type.
//! - [`error`]: [`StoreError`], deliberately small: `NotFound`, `Conflict`, `Unavailable`,
//!   `Other`. The API turns it into HTTP in one place.
//! - [`model`]: records that exist only in storage (API keys, queries, pages).
//! - [`events`]: the outbox's events and the coupon operation log, with the JSON bodies both
//!   backends write.
//! - [`checkout`]: orders holding coupons (lock, confirm, cancel) and the idempotency records
//!   of write routes.
//! - [`issuance`]: bulk issuance jobs and their progress.
//! - [`scheduling`]: outbox positions, reminders and inbox messages, for the background loops.
//! - [`webhooks`]: webhook endpoints, deliveries and attempts.
//! - [`codec`]: the JSON both backends use for the nested parts of a record, so a record reads
//!   back identically from either.
//! - [`testing`] (feature `testing`): the conformance suite; every backend runs all of it.
//! - [`failpoints`]: named points where test builds inject crashes and errors.
#![forbid(unsafe_code)]

pub mod checkout;
pub mod codec;
pub mod error;
pub mod events;
pub mod failpoints;
pub mod issuance;
pub mod model;
pub mod scheduling;
#[cfg(feature = "testing")]
pub mod testing;
pub mod webhooks;

use async_trait::async_trait;
use coupond_domain::{
    Activity, ActivityId, ActivitySpec, ActivityStatus, Actor, CodeBatchSpec, Coupon, CouponId,
    Listing, ListingDraft, ListingId, Merchant, MerchantDraft, MerchantId, OrderId, SharedCode,
    Template, TemplateId, TemplateSpec, TemplateStatus, Timestamp, Transition, UserId,
};

pub use checkout::{
    IdempotencyStart, LockOutcome, LockPlan, LockRefusal, LockRequest, LockRules, OrderRecord,
    OrderState, OrderStep, StoredAnswer,
};
pub use error::{Conflict, StoreError, StoreResult};
pub use events::{CouponEvent, Event};
pub use issuance::{InvalidLine, Issuance, IssuanceKey, IssuanceState, NewIssuance};
pub use model::{
    ActivityQuery, ApiKey, ClaimOutcome, ClaimRequest, CodeBatch, CodeClaim, CouponQuery,
    IdempotencyKey, ListingQuery, NewApiKey, NewTemplate, Page, PoolStats, PromoCode, Role,
    TemplateAudit, TemplateQuery, Violation,
};
pub use scheduling::{
    CouponCounts, Due, Message, MessageContent, OutboxPosition, Reminder, UsageRow,
};
pub use webhooks::{Delivery, DeliveryAttempt, DeliveryState, NewDelivery, NewWebhook, Webhook};

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
    /// A listing holds at most `max` bindings: one more is `Conflict(Conflict::Limit)`, decided in the
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
    /// How many `claim_batch` transactions of one template are worth having in flight at once
    /// from one process: 1 where the database has one writer (SQLite), more where batches of
    /// one template do not wait on each other (PostgreSQL's stock shards).
    fn claim_lanes(&self) -> usize {
        1
    }
    /// A user's coupons matching `q`, by `(valid_until, id)`.
    async fn user_coupons(&self, q: &CouponQuery) -> StoreResult<Vec<Coupon>>;
    /// How many coupons a template has issued, counted from the coupon rows (for audits).
    async fn count_coupons(&self, template: TemplateId) -> StoreResult<i64>;
    /// Checks I1-I3 across the whole database and returns every violation found (at most 100
    /// per check): claimed = coupons <= stock per template; nobody over a per-user limit;
    /// per-user counters equal to the coupons held; every locked coupon held by one locked
    /// order and every used one by a confirmed order; no lock past `now - grace`; each coupon's
    /// last log row agreeing with its status; templates' used, given and reserved agreeing with
    /// their coupons; single-use codes pointing at the coupon they gave.
    async fn audit(&self, now: Timestamp, grace: time::Duration) -> StoreResult<Vec<Violation>>;
    /// Stock, claimed count, coupon rows and the largest holding of one template.
    async fn audit_template(&self, template: TemplateId) -> StoreResult<TemplateAudit>;
    /// How many of `coupons` exist as coupons of `template`.
    async fn count_coupons_among(
        &self,
        template: TemplateId,
        coupons: &[CouponId],
    ) -> StoreResult<i64>;
    /// A coupon by id.
    async fn coupon(&self, id: CouponId) -> StoreResult<Coupon>;
    /// Every coupon of a template with its holder (for audits).
    async fn coupon_owners(&self, template: TemplateId) -> StoreResult<Vec<(CouponId, UserId)>>;

    // --- operation log and outbox -----------------------------------------------------------
    /// A coupon's status changes, oldest first.
    async fn coupon_history(&self, coupon: CouponId) -> StoreResult<Vec<CouponEvent>>;
    /// Outbox events with an id above `after`, ascending, at most `limit`.
    async fn events_after(&self, after: i64, limit: u32) -> StoreResult<Vec<Event>>;

    // --- promotion codes ------------------------------------------------------------------
    /// Replaces the template's shared code (`None` removes it). A code another template
    /// holds is `Conflict(Conflict::Unique)`.
    async fn set_shared_code(
        &self,
        template: TemplateId,
        code: Option<&SharedCode>,
    ) -> StoreResult<()>;
    /// The template's shared code, if it has one.
    async fn shared_code(&self, template: TemplateId) -> StoreResult<Option<String>>;
    /// A code by its normalized text.
    async fn promo_code(&self, code: &str) -> StoreResult<PromoCode>;
    async fn insert_code_batch(
        &self,
        template: TemplateId,
        spec: &CodeBatchSpec,
        now: Timestamp,
    ) -> StoreResult<CodeBatch>;
    async fn code_batch(&self, id: i64) -> StoreResult<CodeBatch>;
    /// Batches not finished yet, oldest first (to resume after a restart).
    async fn unfinished_code_batches(&self) -> StoreResult<Vec<CodeBatch>>;
    /// Adds fresh codes to a batch in one transaction: as many of `codes` as the batch still
    /// lacks, skipping any that already exist anywhere; counts them in `generated` and marks
    /// the batch finished when it is complete. Returns the batch as it is now. Safe to call
    /// from several processes at once: the batch row is locked for the count.
    async fn add_codes(
        &self,
        batch: i64,
        codes: &[String],
        now: Timestamp,
    ) -> StoreResult<CodeBatch>;
    /// A batch's codes in code order, after `after`, at most `limit`.
    async fn batch_codes(
        &self,
        batch: i64,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<PromoCode>>;

    // --- checkout ---------------------------------------------------------------------------
    /// The coupons with these ids that exist, by id.
    async fn coupons_by_ids(&self, ids: &[CouponId]) -> StoreResult<Vec<Coupon>>;
    /// The templates with these ids that exist, by id.
    async fn templates_by_ids(&self, ids: &[TemplateId]) -> StoreResult<Vec<Template>>;
    /// Locks coupons for an order, in one transaction: reads the requested coupons and their
    /// templates (locked against concurrent changes), asks `rules`, and if they agree marks the
    /// coupons locked by the order until the deadline with their planned discounts, reserves
    /// those against the templates' budgets, records the order with the rules' answer, and
    /// writes the log rows and `coupon.locked` events. An order id seen before is `Replayed`
    /// for the same fingerprint and an `OrderConflict` for another.
    async fn lock_order(
        &self,
        req: &LockRequest<'_>,
        rules: &LockRules<'_>,
    ) -> StoreResult<LockOutcome>;
    /// Confirms a locked order before its deadline: its coupons become used, their discounts
    /// are given (checked against every template's stock and budget first), log rows and
    /// `coupon.used` events. Past the deadline the lock is ended as expired instead.
    async fn confirm_order(
        &self,
        order: &OrderId,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<OrderStep>;
    /// Cancels a locked order: its coupons go back (unused, or expired if their validity
    /// ended), reservations are returned, log rows and `coupon.released` events.
    async fn cancel_order(
        &self,
        order: &OrderId,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<OrderStep>;
    /// Ends as expired up to `limit` locks whose deadline is at or before `now`, as cancel
    /// does; returns their order ids. Each lock ends once, whoever gets there first.
    async fn expire_locks(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<OrderId>>;
    async fn order(&self, order: &OrderId) -> StoreResult<OrderRecord>;
    /// The coupons an order holds or used, by id.
    async fn order_coupons(&self, order: &OrderId) -> StoreResult<Vec<Coupon>>;

    // --- idempotency of write routes ------------------------------------------------------
    /// Starts a request with an idempotency key: `New` records it as running (taking over a
    /// record that expired, or one still running that started before `stale_before`, whose
    /// process died); otherwise what the first request left.
    async fn idempotency_start(
        &self,
        key: &IdempotencyKey,
        now: Timestamp,
        stale_before: Timestamp,
        expires: Timestamp,
    ) -> StoreResult<IdempotencyStart>;
    /// Records the answer of a request started with `idempotency_start`.
    async fn idempotency_finish(&self, key: &str, answer: &StoredAnswer) -> StoreResult<()>;
    /// Forgets a running request that will not finish (it failed without an answer worth
    /// keeping), so a retry runs again.
    async fn idempotency_abandon(&self, key: &str) -> StoreResult<()>;
    /// Deletes records expired at `now`; returns how many.
    async fn idempotency_purge(&self, now: Timestamp) -> StoreResult<u64>;

    // --- scheduler ----------------------------------------------------------------------------
    /// Takes or renews the lease `name` for `holder` until `until`, if it is free, lapsed at
    /// `now`, or already `holder`'s. Whether `holder` holds it now.
    async fn try_lease(
        &self,
        name: &str,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool>;
    /// Activities whose last announced status is not final, with that status (`None`: none
    /// announced yet).
    async fn unannounced_activities(&self) -> StoreResult<Vec<(Activity, Option<ActivityStatus>)>>;
    /// Up to `limit` templates that may have a transition to announce at `now` (a window
    /// boundary passed since their announced status, an abort, a publish, or nothing announced
    /// yet), with their announced status.
    async fn due_templates(
        &self,
        now: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<(Template, Option<TemplateStatus>)>>;
    /// Writes the events of `transitions` (`activity.status_changed`, each at its instant) and
    /// moves the announced status to the last, if it is still `from`; `false` (and nothing
    /// written) if another scheduler got there first.
    async fn announce_activity(
        &self,
        id: ActivityId,
        from: Option<ActivityStatus>,
        transitions: &[Transition<ActivityStatus>],
    ) -> StoreResult<bool>;
    /// As [`Store::announce_activity`], for a template (`template.status_changed`, and
    /// `listing.coupons_changed` when it starts or stops being claimable).
    async fn announce_template(
        &self,
        id: TemplateId,
        from: Option<TemplateStatus>,
        transitions: &[Transition<TemplateStatus>],
    ) -> StoreResult<bool>;
    /// Marks up to `limit` unused coupons whose validity ended by `now` expired, with their log
    /// rows and `coupon.expired` events; returns how many.
    async fn expire_coupons(&self, now: Timestamp, limit: u32) -> StoreResult<u64>;
    /// The earliest instant after `now` at which a template boundary, a coupon's validity
    /// end, a lock's deadline or a reminder falls due (what the scheduler sleeps until).
    async fn next_due(&self, now: Timestamp) -> StoreResult<Option<Timestamp>>;

    // --- outbox consumers ---------------------------------------------------------------------
    /// Up to `limit` events after `after`, in reading order; only events no still-running
    /// transaction can precede.
    async fn outbox_read(&self, after: OutboxPosition, limit: u32) -> StoreResult<Vec<Event>>;
    /// The position after the last event readable now (where a consumer that does not need
    /// the past starts).
    async fn outbox_head(&self) -> StoreResult<OutboxPosition>;
    /// Where the durable consumer `sink` has got (the start, if it never acknowledged).
    async fn sink_position(&self, sink: &str) -> StoreResult<OutboxPosition>;
    /// Records that `sink` handled everything up to `at`.
    async fn sink_ack(&self, sink: &str, at: OutboxPosition) -> StoreResult<()>;

    // --- reminders and inbox ------------------------------------------------------------------
    /// Plans reminders; one already planned for the same user, template and day stays.
    async fn plan_reminders(&self, reminders: &[Reminder]) -> StoreResult<()>;
    /// Drops the reminder of `user` for `template` on `day` unless the user still holds an
    /// unused coupon of it expiring that day.
    async fn cancel_reminder(
        &self,
        user: &UserId,
        template: TemplateId,
        day: i64,
    ) -> StoreResult<()>;
    /// Reminders due at `now`, oldest first, at most `limit`.
    async fn due_reminders(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<Reminder>>;
    /// Deletes the reminder and, in the same transaction, if the user still holds an unused
    /// coupon of the template expiring that day, puts `content` in its inbox. Whether a
    /// message was sent.
    async fn send_reminder(
        &self,
        r: &Reminder,
        content: &MessageContent,
        now: Timestamp,
    ) -> StoreResult<bool>;
    /// Puts `content` (stored once, by its key) in each recipient's inbox; `source` makes a
    /// repeated delivery a no-op. Returns how many messages were new.
    async fn deliver_messages(
        &self,
        content: &MessageContent,
        recipients: &[(UserId, String)],
        now: Timestamp,
    ) -> StoreResult<u64>;
    /// A user's messages, unread first, then newest first, after the position `after`
    /// (`(read, id)` of the last one seen).
    async fn user_messages(
        &self,
        user: &UserId,
        after: Option<(bool, i64)>,
        limit: u32,
    ) -> StoreResult<Vec<Message>>;
    /// Marks a user's message read (keeping the first instant); `NotFound` if it is not theirs.
    async fn mark_read(&self, user: &UserId, id: i64, now: Timestamp) -> StoreResult<Message>;

    // --- bulk issuance ------------------------------------------------------------------------
    /// A new pending job, and `true`; with `new.key`, the job already made under that key if
    /// there is one, and `false` (nothing is inserted).
    async fn insert_issuance(
        &self,
        new: &NewIssuance<'_>,
        now: Timestamp,
    ) -> StoreResult<(Issuance, bool)>;
    async fn issuance(&self, id: i64) -> StoreResult<Issuance>;
    /// Jobs pending or running, oldest first.
    async fn open_issuances(&self) -> StoreResult<Vec<i64>>;
    /// The users of a job, in order (what [`Store::issue_chunk`] takes).
    async fn issuance_users(&self, id: i64) -> StoreResult<Vec<UserId>>;
    /// Issues the next `max` users of job `id` (`users` is the job's list) in one
    /// transaction with the job's progress: the same rules as claims (stock, per-user limit,
    /// audience, the template claimable now), `coupon.issued` events, and `issuance.finished`
    /// with the last chunk. A template that is not claimable fails the job. `None` when the job
    /// is not open or another instance is working on it right now.
    async fn issue_chunk(
        &self,
        id: i64,
        users: &[UserId],
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Option<Issuance>>;

    // --- stats and reconciliation -----------------------------------------------------------
    /// Each template's coupons by status at `now`, with per-hour counts (the last `hours` hours
    /// before `now` that had any).
    async fn coupon_counts(
        &self,
        templates: &[TemplateId],
        now: Timestamp,
        hours: u32,
    ) -> StoreResult<Vec<(TemplateId, CouponCounts)>>;
    /// Per template, the coupons used in `[from, to)` and their discount, counted from the
    /// coupons' operation log.
    async fn usage_between(&self, from: Timestamp, to: Timestamp) -> StoreResult<Vec<UsageRow>>;

    // --- webhooks -------------------------------------------------------------------------------
    /// Registers an endpoint if its owner (`new.merchant_id`; `None` is the platform) has
    /// fewer than `max` enabled; otherwise `Conflict(Conflict::Limit)`, decided in the database so
    /// concurrent registrations cannot overshoot.
    async fn insert_webhook(
        &self,
        new: &NewWebhook<'_>,
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Webhook>;
    async fn webhook(&self, id: i64) -> StoreResult<Webhook>;
    /// Endpoints of one merchant (`Some`) or all of them (`None`), by id.
    async fn list_webhooks(&self, merchant: Option<MerchantId>) -> StoreResult<Vec<Webhook>>;
    /// Stops deliveries to an endpoint (queued ones are dropped); disabling twice keeps the
    /// first instant.
    async fn disable_webhook(&self, id: i64, now: Timestamp) -> StoreResult<Webhook>;
    /// Queues deliveries, each at most once per (endpoint, event), due at `now`; returns how
    /// many were new.
    async fn enqueue_deliveries(&self, d: &[NewDelivery], now: Timestamp) -> StoreResult<u64>;
    /// Pending deliveries due at `now` to enabled endpoints other than `skip` (those the sender
    /// has no room for), oldest first.
    async fn due_deliveries(
        &self,
        now: Timestamp,
        limit: u32,
        skip: &[i64],
    ) -> StoreResult<Vec<Delivery>>;
    /// Records an attempt and what follows: delivered, failed for good, or retried at `next`.
    async fn record_attempt(
        &self,
        delivery: i64,
        attempt: &DeliveryAttempt,
        state: DeliveryState,
        next: Timestamp,
    ) -> StoreResult<()>;
    /// An endpoint's deliveries, newest first, before `before` (an id), with their attempts.
    async fn deliveries(
        &self,
        webhook: i64,
        before: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<Delivery>>;
}
