//! Messages outside the app ([`MessagingStore`]): users' contact points and choices, the
//! platform's texts per kind and locale, and the delivery log each outside channel works
//! through.
//!
//! A delivery is queued once per `(channel, key)` (the event or reminder it comes from), so an
//! outbox batch handed out twice queues nothing twice. A channel's courier takes the due ones,
//! sends each, and records the step: sent, retried later, deferred past quiet hours, or failed.

use async_trait::async_trait;
use coupond_domain::messaging::{Channel, Contact, Locale, MessageKind, MessageText, Preferences};
use coupond_domain::{Timestamp, UserId, Zone};

use crate::StoreResult;

/// A user's contact points and choices as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContactRecord {
    pub user_id: UserId,
    pub contact: Contact,
    pub preferences: Preferences,
    pub updated_at: Timestamp,
}

/// The platform's own text for a kind in a locale.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredText {
    pub kind: MessageKind,
    pub locale: Locale,
    pub text: MessageText,
    pub updated_at: Timestamp,
}

/// A message to queue for an outside channel, rendered already.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewOutbound {
    pub channel: Channel,
    /// What the message comes from (`event:<id>`, `reminder:<user>:<template>:<day>`): one
    /// delivery per channel and key.
    pub key: String,
    /// The user it is for (none for an operator's message).
    pub user_id: Option<UserId>,
    pub kind: MessageKind,
    /// The email address or E.164 number.
    pub address: String,
    /// The recipient's zone, for quiet hours.
    pub zone: Zone,
    pub subject: String,
    /// The email's text body, or the SMS text.
    pub body: String,
    /// When it may go first.
    pub due_at: Timestamp,
}

/// Where a delivery stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutboundStatus {
    Queued,
    Sent,
    Failed,
}

impl OutboundStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            OutboundStatus::Queued => "queued",
            OutboundStatus::Sent => "sent",
            OutboundStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Queued, Self::Sent, Self::Failed]
            .into_iter()
            .find(|x| x.as_str() == s)
    }
}

/// A queued, sent or failed message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outbound {
    pub id: i64,
    pub channel: Channel,
    pub key: String,
    pub user_id: Option<UserId>,
    pub kind: MessageKind,
    pub address: String,
    pub zone: Zone,
    pub subject: String,
    pub body: String,
    pub status: OutboundStatus,
    /// Tries made so far.
    pub attempts: i32,
    /// When it is due (queued) or was last tried.
    pub next_at: Timestamp,
    /// The provider's last answer (its message id, or what it refused with).
    pub answer: Option<String>,
    pub created_at: Timestamp,
    pub sent_at: Option<Timestamp>,
}

/// What a courier did with a delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutboundStep {
    /// Accepted by the provider; `answer` is its id for the message.
    Sent { answer: String },
    /// Refused for now (down, throttled); tried again at `next_at`.
    Retry { next_at: Timestamp, answer: String },
    /// Not sent yet because of the recipient's quiet hours; no try counted.
    Defer { next_at: Timestamp },
    /// Refused for good (a bad address, too many tries).
    Failed { answer: String },
}

/// Which outbound to list, newest first, below `before`.
#[derive(Clone, Debug, Default)]
pub struct OutboundQuery {
    pub user_id: Option<UserId>,
    pub channel: Option<Channel>,
    pub status: Option<OutboundStatus>,
    pub before: Option<i64>,
    pub limit: u32,
}

#[async_trait]
pub trait MessagingStore: Send + Sync {
    /// Sets a user's contact points, locale and zone, keeping their choices.
    async fn put_contact(
        &self,
        user: &UserId,
        contact: &Contact,
        now: Timestamp,
    ) -> StoreResult<ContactRecord>;
    /// Sets a user's choices, keeping their contact points (a user unknown so far gets a
    /// record with none).
    async fn put_preferences(
        &self,
        user: &UserId,
        preferences: &Preferences,
        now: Timestamp,
    ) -> StoreResult<ContactRecord>;
    async fn contact(&self, user: &UserId) -> StoreResult<Option<ContactRecord>>;
    /// The records of those of `users` that have one.
    async fn contacts(&self, users: &[UserId]) -> StoreResult<Vec<ContactRecord>>;
    /// Every text the platform set.
    async fn message_texts(&self) -> StoreResult<Vec<StoredText>>;
    async fn put_message_text(
        &self,
        kind: MessageKind,
        locale: &Locale,
        text: &MessageText,
        now: Timestamp,
    ) -> StoreResult<StoredText>;
    /// Drops the platform's text (the shipped one applies again); whether there was one.
    async fn drop_message_text(&self, kind: MessageKind, locale: &Locale) -> StoreResult<bool>;
    /// Queues `outbound`, skipping those queued already (same channel and key). Returns
    /// how many were new.
    async fn queue_outbound(&self, outbound: &[NewOutbound], now: Timestamp) -> StoreResult<u64>;
    /// `channel`'s queued outbound due at `now`, oldest due first.
    async fn due_outbound(
        &self,
        channel: Channel,
        now: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<Outbound>>;
    /// Takes queued delivery `id`, due at `now`, for one attempt until `until`: its due time
    /// moves to `until`, so no other courier finds it due meanwhile. False when it is not due
    /// (another courier took it first) or no longer queued. A courier that stops mid-attempt
    /// leaves it due again at `until`.
    async fn claim_outbound(&self, id: i64, now: Timestamp, until: Timestamp) -> StoreResult<bool>;
    /// Records what a courier did with queued delivery `id` (nothing if it is no longer
    /// queued).
    async fn record_outbound(
        &self,
        id: i64,
        step: &OutboundStep,
        now: Timestamp,
    ) -> StoreResult<()>;
    async fn outbound(&self, q: &OutboundQuery) -> StoreResult<Vec<Outbound>>;
}
