//! The workflows of webhook endpoints every front door calls after parsing and authorizing:
//! registering one (within the owner's cap), disabling and deleting one, each one store
//! transaction that records its change in the audit trail (never the endpoint's secret); and
//! a test ping, which changes nothing and so records nothing.

use coupond_domain::Timestamp;
use coupond_store::audit::{self, Change};
use coupond_store::{Delivery, NewWebhook, Store, StoreResult, Webhook};

/// Registers `new` (at most `max` enabled endpoints per owner: the store's
/// `Conflict::Limit` past it).
pub async fn register(
    store: &dyn Store,
    new: &NewWebhook<'_>,
    max: u32,
    now: Timestamp,
) -> StoreResult<Webhook> {
    let change = Change::new("webhook.create", "webhook", now)
        .merchant(new.merchant_id)
        .after(&serde_json::json!({ "url": new.url, "event_types": new.event_types }));
    audit::change(change, store.insert_webhook(new, max, now)).await
}

/// Disables endpoint `w` (its pending deliveries stop).
pub async fn disable(store: &dyn Store, w: &Webhook, now: Timestamp) -> StoreResult<Webhook> {
    let change = Change::new("webhook.disable", "webhook", now)
        .object(w.id)
        .merchant(w.merchant_id)
        .after(&serde_json::json!({ "disabled": true }));
    audit::change(change, store.disable_webhook(w.id, now)).await
}

/// Deletes endpoint `w` with its deliveries and their attempts: pending ones are never sent.
pub async fn delete(store: &dyn Store, w: &Webhook, now: Timestamp) -> StoreResult<Webhook> {
    let change = Change::new("webhook.delete", "webhook", now)
        .object(w.id)
        .merchant(w.merchant_id)
        .before(&serde_json::json!({ "url": w.url, "event_types": w.event_types }));
    audit::change(change, store.delete_webhook(w.id)).await
}

/// Queues a signed `webhook.ping` delivery to endpoint `w`, due now: the sender posts it as
/// any other delivery (signature, target policy, retries, concurrency bounds), so a ping
/// tests exactly the path events take. A disabled endpoint gets none: the store's
/// `Conflict(Conflict::Version)`.
pub async fn ping(store: &dyn Store, w: &Webhook, now: Timestamp) -> StoreResult<Delivery> {
    store.enqueue_ping(w.id, now).await
}
