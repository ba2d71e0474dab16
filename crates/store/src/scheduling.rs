//! Records of the background work: positions in the outbox, reminders and inbox messages.

use coupond_domain::{TemplateId, Timestamp, UserId};

/// A position in the outbox, in the order its consumers read it: `(txid, event_id)`.
/// SQLite commits in id order (one writer), so its `txid` is always 0; PostgreSQL orders by the
/// writing transaction first (see its migration).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OutboxPosition {
    pub txid: i64,
    pub event_id: i64,
}

/// A planned reminder: `user` holds coupons of `template` that expire on `day` (days since
/// 1970-01-01, UTC); it is sent at `due_at`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reminder {
    pub user_id: UserId,
    pub template_id: TemplateId,
    pub day: i64,
    pub due_at: Timestamp,
}

/// The shared part of an inbox message, written once however many users receive it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageContent {
    /// What makes two contents the same (`claimed:<template>`, `issued:<job>`, ...).
    pub key: String,
    pub kind: String,
    pub title: String,
    pub body: String,
}

/// A message in a user's inbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub id: i64,
    pub user_id: UserId,
    pub kind: String,
    pub title: String,
    pub body: String,
    pub created_at: Timestamp,
    pub read_at: Option<Timestamp>,
}

/// What one scheduler step found due and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Due {
    /// Status transitions announced (events written).
    pub transitions: usize,
    /// Unused coupons marked expired.
    pub coupons_expired: u64,
    /// Locks ended at their deadline.
    pub locks_expired: usize,
    /// Reminders sent (or dropped because the coupons were gone).
    pub reminders: usize,
}

/// What a template's coupons add up to at an instant (for stats).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CouponCounts {
    pub unused: i64,
    pub locked: i64,
    pub used: i64,
    /// Marked expired, or unused past their validity.
    pub expired: i64,
    pub revoked: i64,
    /// Coupons issued by bulk issuance jobs (the rest were claimed).
    pub issued: i64,
    /// The discount of used coupons.
    pub discount: i64,
    /// Per hour (the hour's first instant): coupons created (claimed or issued) and used.
    pub per_hour: Vec<(Timestamp, i64, i64)>,
}

/// One template's part of a reconciliation period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageRow {
    pub template_id: TemplateId,
    /// Coupons used in the period.
    pub used: i64,
    /// Their discount.
    pub discount: i64,
}
