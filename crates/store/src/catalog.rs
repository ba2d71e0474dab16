//! Merchants, listings, activities and templates at the storage boundary.

use crate::{
    ActivityQuery, ListingQuery, MerchantQuery, NewTemplate, StoreResult, TemplateEdit,
    TemplateQuery,
};
use coupond_domain::{
    Activity, ActivityId, ActivitySpec, Actor, Listing, ListingDraft, ListingId, Merchant,
    MerchantDraft, MerchantId, Pause, Review, Template, TemplateId, TemplateSpec, Timestamp,
};

use async_trait::async_trait;

/// Merchants, their listings, and the bindings of templates to listings.
#[async_trait]
pub trait CatalogStore: Send + Sync {
    async fn insert_merchant(&self, m: &MerchantDraft, now: Timestamp) -> StoreResult<Merchant>;
    async fn merchant(&self, id: MerchantId) -> StoreResult<Merchant>;
    /// Merchants matching `q`, by id.
    async fn list_merchants(&self, q: &MerchantQuery) -> StoreResult<Vec<Merchant>>;
    /// Replaces the merchant's terms with `m` if they are still `was` (what the caller read):
    /// a concurrent edit in between is a `Conflict(Version)`, so neither is lost.
    async fn update_merchant(
        &self,
        id: MerchantId,
        was: &MerchantDraft,
        m: &MerchantDraft,
    ) -> StoreResult<Merchant>;
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
}

/// Activities: the campaigns templates belong to.
#[async_trait]
pub trait ActivityStore: Send + Sync {
    async fn insert_activity(&self, spec: &ActivitySpec, now: Timestamp) -> StoreResult<Activity>;
    async fn activity(&self, id: ActivityId) -> StoreResult<Activity>;
    /// Activities matching `q`, ascending by id, after the page cursor.
    async fn list_activities(&self, q: &ActivityQuery) -> StoreResult<Vec<Activity>>;
    /// How many activities `q` matches, all pages together (its page is ignored).
    async fn count_activities(&self, q: &ActivityQuery) -> StoreResult<i64>;
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
    /// Pauses (`Some`) or resumes (`None`) the activity if it is still at `version`, and with
    /// it every template it holds that is not paused itself (a resume lifts only the pauses
    /// it set), with their events, in one transaction.
    async fn set_activity_pause(
        &self,
        id: ActivityId,
        version: i64,
        pause: Option<&Pause>,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<Activity>;
}

/// Templates: the terms coupons are issued under.
#[async_trait]
pub trait TemplateStore: Send + Sync {
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
    /// activity's version. With `edit`, the change is recorded in the template's history and
    /// announced (`template.changed`) in the same transaction.
    async fn update_template(
        &self,
        id: TemplateId,
        version: i64,
        activity_version: Option<i64>,
        spec: &TemplateSpec,
        edit: Option<TemplateEdit<'_>>,
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
    /// Records the platform's decision on a pending enrollment (`review`, approved or
    /// rejected, by `actor`) if the template is still at `version` and pending (else
    /// `Conflict::Version`); in the same transaction its event (`template.approved`,
    /// `template.rejected`) and, approved, the status it enters.
    async fn review_template(
        &self,
        id: TemplateId,
        version: i64,
        review: &Review,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<Template>;
    /// Pauses (`Some`) or resumes (`None`) the template if it is still at `version` (else
    /// `Conflict::Version`), with its event (`template.paused`, `template.resumed`) in the
    /// same transaction. Once it commits no claim of the template commits until a resume.
    async fn set_template_pause(
        &self,
        id: TemplateId,
        version: i64,
        pause: Option<&Pause>,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<Template>;
    /// Ends the template's claiming for good: writes `spec` (its claim window ending at
    /// `now`) if it is still at `version`, records `edit` in its history with its
    /// `template.changed` event, and announces the status it enters, in one transaction.
    async fn stop_template(
        &self,
        id: TemplateId,
        version: i64,
        spec: &TemplateSpec,
        edit: TemplateEdit<'_>,
        now: Timestamp,
    ) -> StoreResult<Template>;
}
