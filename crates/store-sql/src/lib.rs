//! The SQL coupond's backends share. Statements are written once, with `$n` placeholders, over a
//! small [`Dialect`]; a backend runs them through the [`Db`], [`Exec`] and [`Tx`] traits, so
//! nothing here sees a driver type, and backends keep only what is truly theirs (connection setup,
//! migrations, the claim path, how a checkout lock claims its order id, issuance chunks, outbox
//! ordering).
//!
//! - `value`: [`Arg`]s bound to statements, [`Row`]s read back.
//! - `query`: [`Query`] (a statement and its arguments) and the [`Dialect`] fragments.
//! - `db`: the traits a backend implements: [`Db`], [`Exec`], [`Tx`].
//! - `driver`: [`driver_error`], the one mapping of sqlx's errors, which every backend runs on.
//! - `webhooks`: [`WebhookStore`](coupond_store::WebhookStore).
//! - `campaigns`: [`TemplateStore`](coupond_store::TemplateStore): activities and templates.
//! - `catalog`: [`CatalogStore`](coupond_store::CatalogStore): merchants, listings and their
//!   template bindings; `catalog::search` the listing search.
//! - `codes`: [`CodeStore`](coupond_store::CodeStore): shared codes and generated batches.
//! - `rules`: [`RuleStore`](coupond_store::RuleStore): named rules, and the locks and column
//!   that tie a template to the rule it copies.
//! - `admin`: [`AdminStore`](coupond_store::AdminStore).
//! - `operators`: [`OperatorStore`](coupond_store::OperatorStore): operator accounts and password
//!   resets; disabling an operator or setting its password ends its console sessions.
//! - `invitations`: [`InvitationStore`](coupond_store::InvitationStore): merchants' invitations,
//!   queued with their email, accepted into an operator.
//! - `audit`: [`AuditStore`](coupond_store::AuditStore): the trail's read, and [`audit::flush`],
//!   which each backend's `Tx::commit` runs to insert the changes pending in its task in the same
//!   transaction.
//! - `audit_runs`: [`AuditRunStore`](coupond_store::AuditRunStore): the self-audit's runs and what
//!   each found.
//! - `figures`: the campaign figures per hour and channel (`ReportStore::figures`).
//! - `reports`: [`ReportStore`](coupond_store::ReportStore): stats, reconciliation and the
//!   invariant audit's shared checks.
//! - `standing`: how templates stand now, counted in the database (part of `ReportStore`).
//! - `inspect`: [`InspectStore`](coupond_store::InspectStore).
//! - `scheduling`: [`SchedulerStore`](coupond_store::SchedulerStore): announced transitions,
//!   expiry, the next due instant; and the outbox consumers' leases and progress, which each
//!   backend's [`OutboxStore`](coupond_store::OutboxStore) calls (it reads the outbox in its own
//!   order).
//! - `inbox`: [`InboxStore`](coupond_store::InboxStore): reminders and messages.
//! - `messaging`: [`MessagingStore`](coupond_store::MessagingStore): contact points and choices,
//!   message texts, the delivery log.
//! - `cities`: [`CityStore`](coupond_store::CityStore): the platform's names for its cities.
//! - `tags`: [`TagStore`](coupond_store::TagStore): user tags and segments.
//! - `campaign_messages`: [`CampaignMessageStore`](coupond_store::CampaignMessageStore): operators'
//!   campaign messages, capped per owner per day, and their recipients paged by cursor.
//! - `seen`: [`SeenStore`](coupond_store::SeenStore): users' last-seen instants, and the active
//!   users of a segment or a list.
//! - `idempotency`: [`IdempotencyStore`](coupond_store::IdempotencyStore): the records of write
//!   routes.
//! - `issuance`: the bookkeeping of [`IssuanceStore`](coupond_store::IssuanceStore) (jobs, their
//!   users); each backend implements the trait, running chunks on its own claim path.
//! - `lifecycle`: [`LifecycleStore`](coupond_store::LifecycleStore): revoke, refund, template
//!   history, deletions.
//! - `checkout`: [`CheckoutStore`](coupond_store::CheckoutStore) but for the lock step's order
//!   claim: order reads, confirm with its amount verification (`checkout::confirm`), cancel, the
//!   lock sweeper, and the lock's coupons and reservations; each backend implements the trait with
//!   its own `lock_order`.
//! - `deadlines`: moving a lock's deadline later (part of `CheckoutStore`).
//! - `plain_orders`: orders paid without a coupon, recorded for the figures' comparison (part of
//!   `CheckoutStore`).
//! - `claims`: claim-batch steps in shared statements (refusals given back, earlier answers by key
//!   or code, single-use codes, multi-row inserts), which MySQL's claim path uses.
//! - `wallet`: the reads of [`ClaimStore`](coupond_store::ClaimStore) (a user's coupons, one
//!   coupon, its history); each backend implements the trait with its own claim batch.
//! - `rows`: the row mappers backends share (coupons, their log, orders, issuance jobs, templates),
//!   also for rows a backend read with its driver.
//!
//! - `mixed`: the four traits that mix shared methods with a backend's own (`ClaimStore`,
//!   `CheckoutStore`, `OutboxStore`, `IssuanceStore`).
//! - `backend`: [`SqlStore`], the one store type, generic over a [`Backend`] (a [`Db`] and the
//!   operations a database does its own way). Each area module ends with its trait's implementation
//!   for `SqlStore<B>`; a backend crate names its store `SqlStore<ItsDb>`.
#![forbid(unsafe_code)]

pub mod admin;
pub mod audit;
pub mod audit_runs;
mod backend;
pub mod campaign_messages;
pub mod campaigns;
pub mod catalog;
pub mod checkout;
pub mod cities;
pub mod claims;
pub mod codes;
mod db;
pub mod deadlines;
mod driver;
pub mod figures;
pub mod idempotency;
pub mod inbox;
pub mod inspect;
pub mod invitations;
pub mod issuance;
pub mod lifecycle;
pub mod messaging;
mod mixed;
pub mod operators;
pub mod plain_orders;
mod query;
pub mod reports;
pub mod rows;
pub mod rules;
pub mod scheduling;
pub mod seen;
pub mod standing;
pub mod tag_uploads;
pub mod tags;
mod value;
pub mod wallet;
pub mod webhooks;

pub use backend::{Backend, SqlStore};
pub use db::{missing_or_conflict, Db, Exec, Tx, Work};
pub use driver::driver_error;
pub use query::{sql, Dialect, Query};
pub use value::{Arg, IntoArg, Json, Row, Value};
