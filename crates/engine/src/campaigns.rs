//! The workflows of merchants, activities and templates that every front door (the API, the
//! console) calls after it has parsed and authorized a request: load, apply the domain's rules
//! (`coupond_domain::lifecycle`, the patches' validation), write in one store transaction.

use coupond_domain::{
    Activity, ActivityId, ActivityPatch, DomainError, Merchant, MerchantId, MerchantPatch,
    Template, Timestamp,
};
use coupond_store::{Store, StoreError};
use time::Duration;

/// Why a workflow refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    /// A domain rule refused it (an invalid patch, a state that does not allow it).
    #[error(transparent)]
    Rule(#[from] DomainError),
    /// Storage refused (a version conflict, a missing record) or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Edits a merchant's name, short name or cities. Written only if the merchant is still what
/// was read, so a concurrent edit is a version conflict, never silently undone.
pub async fn edit_merchant(
    store: &dyn Store,
    id: MerchantId,
    patch: MerchantPatch,
) -> Result<Merchant, CampaignError> {
    let m = store.merchant(id).await?;
    let draft = patch.apply(&m)?;
    Ok(store.update_merchant(id, &m.draft(), &draft).await?)
}

/// Edits an activity while it is scheduled or enrolling. Its live templates must still fit
/// the new terms (`templates_conflict` otherwise); those whose claim window follows the run
/// window move with it, in the same transaction.
pub async fn edit_activity(
    store: &dyn Store,
    id: ActivityId,
    patch: ActivityPatch,
    now: Timestamp,
    freeze: Duration,
) -> Result<Activity, CampaignError> {
    let a = store.activity(id).await?;
    a.check_editable(now, freeze)?;
    let spec = patch.apply(&a.spec)?;
    let patched = Activity {
        spec: spec.clone(),
        ..a.clone()
    };
    let following = patched.rebase_enrolled(&store.activity_templates(id).await?)?;
    let updated = store
        .update_activity(id, a.version, a.enrollment_seq, &spec, &following, now)
        .await?;
    Ok(updated)
}

/// Aborts an activity and every template in it, until it ends. Final.
pub async fn abort_activity(
    store: &dyn Store,
    id: ActivityId,
    now: Timestamp,
    freeze: Duration,
) -> Result<Activity, CampaignError> {
    let a = store.activity(id).await?;
    a.check_abortable(now, freeze)?;
    Ok(store.abort_activity(id, a.version, now).await?)
}

/// Publishes a standalone draft (read by the caller, who checked it may see it).
pub async fn publish_template(
    store: &dyn Store,
    t: &Template,
    now: Timestamp,
) -> Result<Template, CampaignError> {
    t.check_publishable(now)?;
    Ok(store.publish_template(t.id, t.version, now).await?)
}

/// Aborts a template. `by_merchant`: the request comes from its merchant, who may not stop
/// an enrollment while its activity is frozen.
pub async fn abort_template(
    store: &dyn Store,
    t: &Template,
    by_merchant: bool,
    now: Timestamp,
    freeze: Duration,
) -> Result<Template, CampaignError> {
    let merchant_activity = match (t.spec.activity_id, by_merchant) {
        (Some(activity), true) => Some(store.activity(activity).await?.status(now, freeze)),
        _ => None,
    };
    t.check_abortable(now, merchant_activity)?;
    Ok(store.abort_template(t.id, t.version, now).await?)
}
