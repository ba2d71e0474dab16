//! Webhooks: the fan-out observer that queues a delivery per matching endpoint and event, and
//! the sender that posts them, signed, retrying with exponential backoff.
//!
//! Each delivery is sent as `POST <url>` with the event as JSON
//! (`{"id", "type", "created_at", "data"}`) and the headers `Coupond-Event` (the type),
//! `Coupond-Delivery` (the delivery id, the same on every attempt) and `Coupond-Signature:
//! t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the endpoint's secret>`.
//! A 2xx answer delivers it; anything else (or no answer within 10 s) is retried after
//! `base`, `2 base`, `4 base`, ... until `max_attempts`, then it is marked failed.
//!
//! The sender runs under a lease, so with several instances one of them sends.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use coupond_domain::{MerchantId, Template, TemplateId, Timestamp};
use coupond_store::{
    DeliveryAttempt, DeliveryState, Event, NewDelivery, Store, StoreResult, Webhook,
};
use hmac::{Hmac, Mac};
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use sha2::Sha256;
use tokio::sync::watch;

use crate::clock::Clock;
use crate::dispatch::Observer;

/// How long a receiver has to answer.
const TIMEOUT: Duration = Duration::from_secs(10);
const LEASE: time::Duration = time::Duration::seconds(30);
const BATCH: u32 = 50;

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
        "webhooks"
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

/// How deliveries are retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The wait before the second attempt; it doubles for each next one.
    pub base: Duration,
    /// Attempts before a delivery is marked failed.
    pub max_attempts: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            base: Duration::from_secs(5),
            max_attempts: 12,
        }
    }
}

/// Posts due deliveries.
#[derive(Clone)]
pub struct WebhookSender {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    client: Client<HttpConnector, Full<Bytes>>,
    retry: RetryPolicy,
    holder: String,
}

impl std::fmt::Debug for WebhookSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSender")
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl WebhookSender {
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        retry: RetryPolicy,
        holder: impl Into<String>,
    ) -> Self {
        WebhookSender {
            store,
            clock,
            client: Client::builder(TokioExecutor::new()).build_http(),
            retry,
            holder: holder.into(),
        }
    }

    /// Sends the deliveries due at the clock's now; returns how many were attempted.
    pub async fn run_once(&self) -> StoreResult<usize> {
        let now = self.clock.now();
        if !self
            .store
            .try_lease("webhooks", &self.holder, now, now.plus(LEASE))
            .await?
        {
            return Ok(0);
        }
        let due = self.store.due_deliveries(now, BATCH).await?;
        let mut hooks: HashMap<i64, Webhook> = HashMap::new();
        for d in &due {
            if let std::collections::hash_map::Entry::Vacant(slot) = hooks.entry(d.webhook_id) {
                slot.insert(self.store.webhook(d.webhook_id).await?);
            }
            let Some(w) = hooks.get(&d.webhook_id) else {
                continue;
            };
            let (status, error) = self.post(w, d.id, &d.event_type, &d.payload, now).await;
            let n = d.tries + 1;
            let ok = status.is_some_and(|s| (200..300).contains(&s));
            let state = if ok {
                DeliveryState::Delivered
            } else if n >= i64::from(self.retry.max_attempts) {
                DeliveryState::Failed
            } else {
                DeliveryState::Pending
            };
            let wait = self.retry.base * 2u32.saturating_pow(u32::try_from(n - 1).unwrap_or(0));
            let next = now.plus(time::Duration::try_from(wait).unwrap_or(time::Duration::HOUR));
            self.store
                .record_attempt(
                    d.id,
                    &DeliveryAttempt {
                        attempt: n,
                        at: now,
                        status,
                        error,
                    },
                    state,
                    next,
                )
                .await?;
        }
        Ok(due.len())
    }

    async fn post(
        &self,
        w: &Webhook,
        delivery: i64,
        kind: &str,
        payload: &str,
        now: Timestamp,
    ) -> (Option<u16>, Option<String>) {
        let t = now.unix_micros().div_euclid(1_000_000);
        let req = hyper::Request::post(&w.url)
            .header("content-type", "application/json")
            .header("coupond-event", kind)
            .header("coupond-delivery", delivery.to_string())
            .header("coupond-signature", signature(&w.secret, t, payload))
            .body(Full::new(Bytes::from(payload.to_owned())));
        let req = match req {
            Ok(r) => r,
            Err(e) => return (None, Some(format!("bad request: {e}"))),
        };
        match tokio::time::timeout(TIMEOUT, self.client.request(req)).await {
            Ok(Ok(res)) => (Some(res.status().as_u16()), None),
            Ok(Err(e)) => (None, Some(e.to_string())),
            Err(_) => (None, Some("no answer within 10 s".to_owned())),
        }
    }

    /// Sends until `shutdown` turns true (or its sender is dropped), checking for due
    /// deliveries every second.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        loop {
            if *shutdown.borrow() {
                return;
            }
            if let Err(e) = self.run_once().await {
                tracing::warn!(error = %e, "sending webhooks failed; retrying");
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
                changed = shutdown.changed() => if changed.is_err() { return },
            }
        }
    }
}
