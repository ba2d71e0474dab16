//! The workflows of merchants' listings (create, change, bind and unbind templates, delete),
//! which every front door calls after parsing and authorizing: the domain's rules, then one
//! store transaction that records the change in the audit trail.

use coupond_domain::{Listing, ListingDraft, ListingId, Merchant, Template, Timestamp};
use coupond_store::audit::{self, Change};
use coupond_store::{Store, StoreResult};

use crate::CampaignError;

fn listing_change(action: &'static str, l: &Listing, now: Timestamp) -> Change {
    Change::new(action, "listing", now)
        .object(l.id.get())
        .merchant(Some(l.merchant_id))
}

/// Creates a listing of `merchant` (the draft checked against it). An external id the
/// merchant uses already is the store's `Conflict::Unique`.
pub async fn create_listing(
    store: &dyn Store,
    merchant: &Merchant,
    draft: &ListingDraft,
    now: Timestamp,
) -> Result<Listing, CampaignError> {
    draft.validate(merchant)?;
    let change = Change::new("listing.create", "listing", now)
        .merchant(Some(merchant.id))
        .after(draft);
    let write = store.insert_listing(merchant.id, draft, now);
    Ok(audit::change(change, write).await?)
}

/// Replaces listing `l`'s terms with `draft` (already checked against its merchant).
pub async fn update_listing(
    store: &dyn Store,
    l: &Listing,
    draft: &ListingDraft,
    now: Timestamp,
) -> StoreResult<Listing> {
    let change = listing_change("listing.update", l, now)
        .before(&l.draft)
        .after(draft)
        .only_differences();
    audit::change(change, store.update_listing(l.id, draft, now)).await
}

/// Binds `template` to listing `l` (at most `max` templates per listing); whether the binding
/// is new. Aborted and expired templates are refused.
pub async fn bind(
    store: &dyn Store,
    l: &Listing,
    template: &Template,
    max: u32,
    now: Timestamp,
) -> Result<bool, CampaignError> {
    template.check_bindable(now)?;
    let change = listing_change("listing.bind", l, now)
        .after(&serde_json::json!({ "template_id": template.id }));
    Ok(audit::change(change, store.bind(l.id, template.id, max, now)).await?)
}

/// Unbinds `template` from listing `l` (nothing to do if it is not bound).
pub async fn unbind(
    store: &dyn Store,
    l: &Listing,
    template: &Template,
    now: Timestamp,
) -> StoreResult<bool> {
    let change = listing_change("listing.unbind", l, now)
        .before(&serde_json::json!({ "template_id": template.id }));
    audit::change(change, store.unbind(l.id, template.id)).await
}

/// Deletes listing `id` (unbound from every template in the same transaction).
pub async fn delete_listing(store: &dyn Store, l: &Listing, now: Timestamp) -> StoreResult<()> {
    let change = listing_change("listing.delete", l, now).before(&l.draft);
    let id: ListingId = l.id;
    audit::change(change, store.delete_listing(id)).await
}
