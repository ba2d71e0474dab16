//! Webhooks: the fan-out observer that queues a delivery per matching endpoint and event, and
//! the sender that posts them, signed, retrying with exponential backoff.
//!
//! Each delivery is sent as `POST <url>` with the event as JSON
//! (`{"id", "type", "created_at", "data"}`) and the headers `Coupond-Event` (the type),
//! `Coupond-Delivery` (the delivery id, the same on every attempt) and `Coupond-Signature:
//! t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the endpoint's secret>`.
//! A 2xx answer delivers it; anything else (or no answer within the timeout) is retried after
//! `base`, `2 base`, `4 base`, ... until `max_attempts`, then it is marked failed.
//!
//! - `sender`: [`WebhookSender`], which posts due deliveries concurrently (bounded overall
//!   and per endpoint, so a slow receiver delays only itself), under a lease so that with
//!   several instances one of them sends.
//! - [`targets`]: [`TargetPolicy`], which keeps deliveries off internal addresses.
//! - [`endpoints`]: registering and disabling endpoints, each recorded in the audit trail.

pub mod endpoints;
mod sender;
pub mod targets;

pub use sender::{RetryPolicy, SenderSettings, WebhookSender};
pub use targets::{TargetError, TargetPolicy};

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use coupond_domain::{MerchantId, Template, TemplateId};
use coupond_store::{Event, NewDelivery, Store, StoreResult, Webhook};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::clock::Clock;
use crate::dispatch::Observer;

/// The signature header's value for `body` sent at `t` (unix seconds) with `secret`.
pub fn signature(secret: &str, t: i64, body: &str) -> String {
    // HMAC takes keys of any length; `new_from_slice` cannot fail for it.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    mac.update(format!("{t}.{body}").as_bytes());
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("t={t},v1={hex}")
}

/// Queues, for each event, a delivery to every enabled endpoint that wants its type and may see
/// it: the platform's endpoints get every event; a merchant's, the events about its templates
/// (and their coupons).
#[derive(Debug)]
pub struct WebhookFanout {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
}

impl WebhookFanout {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        WebhookFanout { store, clock }
    }
}

#[async_trait]
impl Observer for WebhookFanout {
    fn name(&self) -> &str {
        crate::dispatch::sinks::WEBHOOKS
    }

    async fn handle(&self, events: &[Event]) -> StoreResult<()> {
        let hooks: Vec<Webhook> = self
            .store
            .list_webhooks(None)
            .await?
            .into_iter()
            .filter(|w| w.disabled_at.is_none())
            .collect();
        if hooks.is_empty() {
            return Ok(());
        }
        let about: HashSet<TemplateId> = events
            .iter()
            .filter_map(|e| e.body.get("template_id")?.as_i64())
            .filter_map(|t| TemplateId::new(t).ok())
            .collect();
        let owners: HashMap<TemplateId, Option<MerchantId>> =
            if hooks.iter().any(|w| w.merchant_id.is_some()) {
                let ids: Vec<TemplateId> = about.into_iter().collect();
                self.store
                    .templates_by_ids(&ids)
                    .await?
                    .iter()
                    .map(|t: &Template| (t.id, t.merchant_id))
                    .collect()
            } else {
                HashMap::new()
            };
        let mut queue = Vec::new();
        for e in events {
            let owner = e
                .body
                .get("template_id")
                .and_then(|t| t.as_i64())
                .and_then(|t| TemplateId::new(t).ok())
                .and_then(|t| owners.get(&t).copied().flatten());
            for w in &hooks {
                let visible = match w.merchant_id {
                    None => true,
                    Some(m) => owner == Some(m),
                };
                if visible && w.wants(&e.kind) {
                    queue.push(NewDelivery {
                        webhook_id: w.id,
                        event_id: e.id,
                        event_type: e.kind.clone(),
                        payload: serde_json::json!({
                            "id": e.id,
                            "type": e.kind,
                            "created_at": e.at,
                            "data": e.body,
                        })
                        .to_string(),
                    });
                }
            }
        }
        self.store
            .enqueue_deliveries(&queue, self.clock.now())
            .await
            .map(|_| ())
    }
}
