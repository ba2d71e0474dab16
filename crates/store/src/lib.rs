//! Storage for coupond: small traits by area, implemented once per backend.
//!
//! - [`Store`]: everything the service persists, as one supertrait of the area traits, so
//!   `Arc<dyn Store>` reaches them all. Backends (`coupond-store-sql` and the crates of each
//!   database) own the SQL and migrations; nothing above this crate sees a database type.
//!   Callers bring the area traits into scope with `use coupond_store::prelude::*`.
//! - The area traits, each 15 methods or fewer, each method one transaction: [`admin`]
//!   ([`AdminStore`]: health, settings, API keys; [`ReportStore`]: stats, reconciliation, audit;
//!   [`InspectStore`]: reads only tests and tools need), [`catalog`] ([`CatalogStore`]: merchants,
//!   listings, bindings; [`ActivityStore`], [`TemplateStore`]: activities, templates), [`cities`]
//!   ([`CityStore`]: the platform's names for its cities), [`rules`] ([`RuleStore`]: named
//!   promotion rules and the templates that copy them), [`claims`] ([`ClaimStore`]),
//!   [`checkout`] ([`CheckoutStore`], [`IdempotencyStore`]), [`codes`] ([`CodeStore`]),
//!   [`scheduling`] ([`OutboxStore`], [`SchedulerStore`], [`InboxStore`]), [`issuance`]
//!   ([`IssuanceStore`]), [`webhooks`] ([`WebhookStore`]), [`operators`] ([`OperatorStore`]:
//!   operator accounts and password resets), [`invitations`] ([`InvitationStore`]: merchants'
//!   invitations to join their teams), [`audit`] ([`AuditStore`]: the trail of who changed what,
//!   written by each change's own transaction), [`audit_runs`] ([`AuditRunStore`]: the self-audit's
//!   runs and what each found), [`messaging`] ([`MessagingStore`]: users' contact points and
//!   choices, message texts, the email and SMS delivery log), [`campaign_messages`]
//!   ([`CampaignMessageStore`]: operators' campaign messages and their recipients).
//! - [`error`]: [`StoreError`], deliberately small: `NotFound`, `Conflict`, `Unavailable`, `Other`.
//!   The API turns it into HTTP in one place.
//! - [`model`]: records that exist only in storage (API keys, queries, pages).
//! - [`events`]: the outbox's events and the coupon operation log, with the JSON bodies both
//!   backends write.
//! - [`checkout`]: orders holding coupons (lock, extend, confirm, cancel) and the idempotency
//!   records of write routes.
//! - [`issuance`]: bulk issuance jobs and their progress.
//! - [`scheduling`]: outbox positions, reminders and inbox messages, for the background loops.
//! - [`webhooks`]: webhook endpoints, deliveries and attempts.
//! - [`sessions`]: console sessions ([`AdminStore`] keeps them), shared by every instance;
//!   [`OperatorStore`] ends an operator's when it is disabled or its password changes.
//! - [`codec`]: the JSON both backends use for the nested parts of a record, so a record reads back
//!   identically from either.
//! - [`records`]: the stored, versioned record types behind that JSON, tolerant of fields a newer
//!   version added and checked when read.
//! - `testing` (feature `testing`): the conformance suite; every backend runs all of it.
//! - [`figures`]: the campaign figures per hour and channel ([`Figures`]), as the store counts them
//!   for the performance report.
//! - [`failpoints`]: named points where test builds inject crashes and errors.
#![forbid(unsafe_code)]

pub mod admin;
pub mod audit;
pub mod audit_runs;
pub mod campaign_messages;
pub mod catalog;
pub mod checkout;
pub mod cities;
pub mod claims;
pub mod codec;
pub mod codes;
pub mod error;
pub mod events;
pub mod failpoints;
pub mod figures;
pub mod invitations;
pub mod issuance;
pub mod lifecycle;
pub mod messaging;
pub mod model;
pub mod operators;
pub mod records;
pub mod rules;
pub mod scheduling;
pub mod seen;
pub mod sessions;
pub mod tags;
#[cfg(feature = "testing")]
pub mod testing;
pub mod webhooks;

pub use admin::{AdminStore, InspectStore, ReportStore, SpecOf};
pub use audit::AuditStore;
pub use audit_runs::{AuditRun, AuditRunStore, AuditTrigger, Finding, RunEnd};
pub use campaign_messages::{
    CampaignMessage, CampaignMessageStore, CampaignPage, NewCampaignMessage, Recipients,
};
pub use catalog::{ActivityStore, CatalogStore, TemplateStore};
pub use checkout::{
    CheckoutStore, ExtendStep, IdempotencyStart, IdempotencyStore, LockOutcome, LockPlan,
    LockRefusal, LockRequest, LockRules, OrderRecord, OrderState, OrderStep, PlainOrder,
    RecordOutcome, StoredAnswer,
};
pub use cities::CityStore;
pub use claims::ClaimStore;
pub use codes::CodeStore;
pub use error::{Conflict, StoreError, StoreResult};
pub use events::{CouponEvent, Event};
pub use figures::{
    Baseline, ChannelHour, FigureKey, Figures, FiguresQuery, KeptFigures, OrderHour, PlainHour,
};
pub use invitations::InvitationStore;
pub use issuance::{
    InvalidLine, Issuance, IssuanceKey, IssuanceState, IssuanceStore, NewIssuance, OpenJob,
};
pub use lifecycle::{
    Deleted, LifecycleStore, Refund, RefundRequest, RefundStep, RevokeStep, TemplateChange,
    TemplateEdit,
};
pub use messaging::{
    ContactRecord, MessagingStore, NewOutbound, Outbound, OutboundQuery, OutboundStatus,
    OutboundStep, StoredText,
};
pub use model::{
    ActivityQuery, ApiKey, ClaimOutcome, ClaimRequest, CodeBatch, CodeClaim, CouponQuery,
    HoldersQuery, IdempotencyKey, ListingQuery, MerchantQuery, Narrow, NewApiKey, NewTemplate,
    Page, PoolStats, PromoCode, Role, Schema, TemplateAudit, TemplateQuery, Violation,
};
pub use operators::OperatorStore;
pub use rules::{RuleFollower, RuleQuery, RuleStore};
pub use scheduling::{
    CouponCounts, Due, HourCounts, InboxStore, Message, MessageContent, OutboxPosition,
    OutboxStore, Reminder, SchedulerStore, Since, Standing, UsageRow,
};
pub use seen::SeenStore;
pub use sessions::ConsoleSession;
pub use tags::{NewTagUpload, SharedTag, TagStore, TagUpload, Tagged};
pub use webhooks::{
    owner_key, Delivery, DeliveryAttempt, DeliveryState, DueSkip, NewDelivery, NewWebhook, Webhook,
    WebhookStore,
};

/// Everything coupond persists: every area trait at once. Implementations are cheap to share
/// (`Arc<dyn Store>`), safe to call concurrently, and make each method atomic: it either fully
/// happens or leaves nothing.
///
/// Writes that depend on a record the caller read earlier take its `version` and fail with
/// [`StoreError::Conflict`] ([`Conflict::Version`]) if it changed meanwhile (optimistic
/// locking), so two racing edits cannot both apply.
pub trait Store:
    AdminStore
    + CatalogStore
    + ActivityStore
    + TemplateStore
    + ClaimStore
    + CheckoutStore
    + IdempotencyStore
    + CodeStore
    + OutboxStore
    + SchedulerStore
    + InboxStore
    + IssuanceStore
    + LifecycleStore
    + TagStore
    + WebhookStore
    + ReportStore
    + OperatorStore
    + InvitationStore
    + AuditStore
    + AuditRunStore
    + CityStore
    + RuleStore
    + MessagingStore
    + SeenStore
    + CampaignMessageStore
    + std::fmt::Debug
    + 'static
{
}

/// The area traits, imported anonymously: `use coupond_store::prelude::*` lets code call any
/// store method on an `Arc<dyn Store>` without naming the trait that declares it.
pub mod prelude {
    pub use crate::{
        ActivityStore as _, AdminStore as _, AuditRunStore as _, AuditStore as _,
        CampaignMessageStore as _, CatalogStore as _, CheckoutStore as _, CityStore as _,
        ClaimStore as _, CodeStore as _, IdempotencyStore as _, InboxStore as _, InspectStore as _,
        InvitationStore as _, IssuanceStore as _, LifecycleStore as _, MessagingStore as _,
        OperatorStore as _, OutboxStore as _, ReportStore as _, RuleStore as _,
        SchedulerStore as _, SeenStore as _, TagStore as _, TemplateStore as _, WebhookStore as _,
    };
}
