//! Webhooks at the storage boundary: endpoints, deliveries and their attempts.

use crate::StoreResult;
use async_trait::async_trait;

use coupond_domain::{MerchantId, Timestamp};

/// A registered endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Webhook {
    pub id: i64,
    /// `None`: the platform's (every event); else a merchant's (events of its templates).
    pub merchant_id: Option<MerchantId>,
    pub url: String,
    /// Signs each delivery (HMAC-SHA256).
    pub secret: String,
    /// Event types, or `*` for all.
    pub event_types: Vec<String>,
    pub created_at: Timestamp,
    pub disabled_at: Option<Timestamp>,
}

impl Webhook {
    pub fn wants(&self, event_type: &str) -> bool {
        self.event_types.iter().any(|t| t == "*" || t == event_type)
    }
}

/// An endpoint to register.
#[derive(Clone, Debug)]
pub struct NewWebhook<'a> {
    pub merchant_id: Option<MerchantId>,
    pub url: &'a str,
    pub secret: &'a str,
    pub event_types: &'a [String],
}

/// A delivery to queue: this event, to this endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewDelivery {
    pub webhook_id: i64,
    pub event_id: i64,
    pub event_type: String,
    /// The body to send.
    pub payload: String,
}

/// The event type of a test delivery ([`WebhookStore::enqueue_ping`]): not an outbox event,
/// and sent whatever the endpoint's event types.
pub const PING: &str = "webhook.ping";

/// The body of an endpoint's `n`th ping (queued at `at`): shaped as every delivery's
/// (`{"id", "type", "created_at", "data"}`), its `id` the negative `-n`, so it never names an
/// event of the feed and is unique per endpoint as event ids are.
pub fn ping_payload(id: i64, webhook: i64, at: Timestamp) -> String {
    serde_json::json!({
        "id": id,
        "type": PING,
        "created_at": at,
        "data": { "webhook_id": webhook },
    })
    .to_string()
}

/// Where a delivery stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryState {
    Pending,
    Delivered,
    /// Given up after the retry window.
    Failed,
}

impl DeliveryState {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Delivered => "delivered",
            DeliveryState::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            DeliveryState::Pending,
            DeliveryState::Delivered,
            DeliveryState::Failed,
        ]
        .into_iter()
        .find(|x| x.as_str() == s)
    }
}

/// One try at a delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveryAttempt {
    pub attempt: i64,
    pub at: Timestamp,
    /// The receiver's HTTP status, when it answered.
    pub status: Option<u16>,
    pub error: Option<String>,
}

/// A delivery and its attempts so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub id: i64,
    pub webhook_id: i64,
    pub event_id: i64,
    pub event_type: String,
    pub payload: String,
    pub state: DeliveryState,
    pub next_at: Timestamp,
    pub created_at: Timestamp,
    pub delivered_at: Option<Timestamp>,
    /// Attempts made so far.
    pub tries: i64,
    /// The attempts themselves (filled when listing an endpoint's deliveries).
    pub attempts: Vec<DeliveryAttempt>,
}

/// What [`WebhookStore::due_deliveries`] leaves out: endpoints and owners at their bound of
/// deliveries in flight.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DueSkip {
    /// Endpoint ids.
    pub webhooks: Vec<i64>,
    /// Owners, as [`owner_key`] gives them.
    pub owners: Vec<i64>,
}

/// An endpoint's owner as one integer: its merchant's id, or 0 for the platform's (merchant
/// ids start at 1).
pub fn owner_key(merchant: Option<MerchantId>) -> i64 {
    merchant.map_or(0, MerchantId::get)
}

/// Webhook endpoints, their queued deliveries and attempts.
#[async_trait]
pub trait WebhookStore: Send + Sync {
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
    /// Deletes an endpoint with every delivery it had and their attempts (a pending one is
    /// never sent; an attempt in flight meanwhile is not recorded); returns the endpoint as
    /// it was, or `NotFound`.
    async fn delete_webhook(&self, id: i64) -> StoreResult<Webhook>;
    /// Queues a [`PING`] delivery to endpoint `webhook`, due at `now`, with
    /// [`ping_payload`]'s body (its id `-n` for the endpoint's `n`th ping), and returns it.
    /// `NotFound` without the endpoint; `Conflict(Conflict::Version)` if it is disabled.
    async fn enqueue_ping(&self, webhook: i64, now: Timestamp) -> StoreResult<Delivery>;
    /// Queues deliveries, each at most once per (endpoint, event), due at `now`; returns how
    /// many were new.
    async fn enqueue_deliveries(&self, d: &[NewDelivery], now: Timestamp) -> StoreResult<u64>;
    /// Pending deliveries due at `now` to enabled endpoints, oldest first, except those of the
    /// endpoints and owners in `skip` (those the sender has no room for).
    async fn due_deliveries(
        &self,
        now: Timestamp,
        limit: u32,
        skip: &DueSkip,
    ) -> StoreResult<Vec<Delivery>>;
    /// Records an attempt and what follows: delivered, failed for good, or retried at `next`;
    /// nothing if the delivery was deleted (with its endpoint) meanwhile.
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
