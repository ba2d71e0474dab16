//! Records of the background work: positions in the outbox, reminders and inbox messages.

use crate::{Event, StoreResult};
use async_trait::async_trait;
use coupond_domain::{Activity, ActivityId, ActivityStatus, Template, TemplateStatus, Transition};

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
/// 1970-01-01 on the recipient's local calendar), which spans the instants `expiring`; it is
/// sent at `due_at`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reminder {
    pub user_id: UserId,
    pub template_id: TemplateId,
    pub day: i64,
    pub expiring: coupond_domain::Window,
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
    /// Of the coupons, those issued by bulk issuance jobs (the rest were claimed or redeemed).
    pub in_bulk: i64,
    /// The discount of used coupons.
    pub discount: i64,
    /// Refunds made of the template's uses (each gave a used coupon back or voided it).
    pub refunded: i64,
    /// The discount those refunds took back.
    pub refunded_discount: i64,
    /// The hours with any coupon created or used since the instant asked for, oldest first.
    pub per_hour: Vec<HourCounts>,
}

impl CouponCounts {
    /// Every coupon of the template, however it came (claim, code or bulk issuance): the
    /// coupons counted by status, so no status count is ever above it.
    pub fn issued(&self) -> i64 {
        self.unused + self.locked + self.used + self.expired + self.revoked
    }
}

/// One hour of a template's coupons.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HourCounts {
    /// The hour's first instant.
    pub hour: Timestamp,
    /// Coupons created (claimed or issued).
    pub created: i64,
    /// Coupons used by confirmed orders.
    pub used: i64,
    /// The discount of those uses (minor units; a use refunded since counts what it took,
    /// as the reconciliation of its period does).
    pub discount: i64,
    /// Of those uses, the ones refunded since.
    pub refunded: i64,
    /// The discount those refunds took back.
    pub refunded_discount: i64,
}

/// What happened since an instant (the console's "today"), over every template or one
/// merchant's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Since {
    /// Coupons created (claimed, redeemed or issued).
    pub claimed: i64,
    /// Coupons used by confirmed orders (refunded since or not).
    pub used: i64,
    /// Webhook deliveries that failed for good.
    pub deliveries_failed: i64,
    /// Webhook deliveries still pending after at least one failed attempt.
    pub deliveries_retrying: i64,
}

/// How a set of templates stands now (the console home's cards), counted in the database.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Standing {
    /// Templates claimable now.
    pub claimable: i64,
    /// Claimable templates with less than 1/[`LOW_STOCK_DIVISOR`] of their stock left.
    ///
    /// [`LOW_STOCK_DIVISOR`]: coupond_domain::LOW_STOCK_DIVISOR
    pub low_stock: i64,
    /// Claimable templates with nothing left to claim.
    pub sold_out: i64,
    /// Coupons claimed of every template, ever.
    pub claimed: i64,
    /// Coupons used of every template, ever.
    pub used: i64,
}

/// One template's part of a reconciliation period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageRow {
    pub template_id: TemplateId,
    /// Coupons used in the period.
    pub used: i64,
    /// Their discount.
    pub discount: i64,
    /// Coupons refunded in the period (whenever they were used).
    pub refunded: i64,
    /// The discount those refunds took back.
    pub refunded_discount: i64,
    /// The same, per discount amount: `(amount, uses, refunds)`, by amount. A funding split is
    /// applied to each coupon's discount, so a refund takes back exactly the parts its use
    /// gave, whatever the period.
    pub amounts: Vec<(i64, i64, i64)>,
}

/// The outbox as its consumers read it, their durable positions, and leases that let one
/// instance at a time run a loop.
#[async_trait]
pub trait OutboxStore: Send + Sync {
    /// Takes or renews the lease `name` for `holder` until `until`, if it is free, lapsed at
    /// `now`, or already `holder`'s. Whether `holder` holds it now.
    async fn try_lease(
        &self,
        name: &str,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool>;
    /// Lets go of every lease `holder` holds (an instance shutting down), so another instance
    /// takes each loop over at once rather than when the lease lapses. How many it held.
    async fn release_leases(&self, holder: &str) -> StoreResult<u64>;
    /// Up to `limit` events after `after`, in reading order; only events no still-running
    /// transaction can precede.
    async fn outbox_read(&self, after: OutboxPosition, limit: u32) -> StoreResult<Vec<Event>>;
    /// Up to `limit` events with an id below `before` (`None`: the newest), newest first by
    /// id: for people looking at what just happened, not for consumers (on PostgreSQL ids
    /// follow insertion, not exactly commit order).
    async fn outbox_latest(&self, before: Option<i64>, limit: u32) -> StoreResult<Vec<Event>>;
    /// Where the durable consumer `sink` has got (the start, if it never acknowledged).
    async fn sink_position(&self, sink: &str) -> StoreResult<OutboxPosition>;
    /// Records that each sink handled everything up to its position, in one transaction (a
    /// dispatcher's pass acknowledges all its observers with one commit).
    async fn sink_ack(&self, acks: &[(&str, OutboxPosition)]) -> StoreResult<()>;
}

/// What the scheduler announces and ends: status transitions and expired coupons.
#[async_trait]
pub trait SchedulerStore: Send + Sync {
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
    /// As [`SchedulerStore::announce_activity`], for a template (`template.status_changed`, and
    /// `listing.coupons_changed` when it starts or stops being claimable).
    async fn announce_template(
        &self,
        id: TemplateId,
        from: Option<TemplateStatus>,
        transitions: &[Transition<TemplateStatus>],
    ) -> StoreResult<bool>;
    /// Announces, in its own transaction, what template `id`'s status went through up to
    /// `now` that nobody has announced yet, and answers the announced status after that
    /// (`None`: no such template, or nothing announced). The claim path calls it before a
    /// template's first claims, so that a claim's events never precede the `active` they
    /// depend on, even when the scheduler is a second late.
    async fn announce_template_due(
        &self,
        id: TemplateId,
        now: Timestamp,
    ) -> StoreResult<Option<TemplateStatus>>;
    /// Marks up to `limit` unused coupons whose validity ended by `now` expired, with their log
    /// rows and `coupon.expired` events; returns how many.
    async fn expire_coupons(&self, now: Timestamp, limit: u32) -> StoreResult<u64>;
    /// The earliest instant after `now` at which a template boundary, a coupon's validity
    /// end, a lock's deadline or a reminder falls due (what the scheduler sleeps until).
    async fn next_due(&self, now: Timestamp) -> StoreResult<Option<Timestamp>>;
}

/// Expiry reminders and users' inbox messages.
#[async_trait]
pub trait InboxStore: Send + Sync {
    /// Plans reminders; one already planned for the same user, template and day stays.
    async fn plan_reminders(&self, reminders: &[Reminder]) -> StoreResult<()>;
    /// Drops the reminder of `user` for `template` on `day` unless the user still holds an
    /// unused coupon of it expiring that day (the span it was planned with).
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
}
