//! coupond's embedded SQLite backend, the default.
//!
//! - [`SqliteStore`]: connection setup and the helpers the area modules share (`store`). It
//!   implements every area trait of `coupond_store`, one module each, so it is a
//!   [`Store`](coupond_store::Store):
//! - `admin`: [`AdminStore`](coupond_store::AdminStore): health, settings, API keys.
//! - `catalog`: [`CatalogStore`](coupond_store::CatalogStore): merchants, listings, bindings
//!   (written once in `coupond_store_sql::catalog`).
//! - `campaigns`: [`CampaignStore`](coupond_store::CampaignStore): activities and templates
//!   (written once in `coupond_store_sql::campaigns`).
//! - `claims`: [`ClaimStore`](coupond_store::ClaimStore): the claim batch (the hot write
//!   path) and a user's wallet.
//! - `checkout`: [`CheckoutStore`](coupond_store::CheckoutStore) (orders locking, confirming and
//!   cancelling coupons) and [`IdempotencyStore`](coupond_store::IdempotencyStore).
//! - `codes`: [`CodeStore`](coupond_store::CodeStore): promotion codes and their batches
//!   (written once in `coupond_store_sql::codes`).
//! - `scheduling`: [`OutboxStore`](coupond_store::OutboxStore),
//!   [`SchedulerStore`](coupond_store::SchedulerStore) and
//!   [`InboxStore`](coupond_store::InboxStore): outbox consumers and leases, announced
//!   transitions and expiry, reminders and the inbox.
//! - `issuance`: [`IssuanceStore`](coupond_store::IssuanceStore): bulk issuance, a chunk per
//!   transaction with the job's progress.
//! - `webhooks`: [`WebhookStore`](coupond_store::WebhookStore): endpoints, deliveries, attempts.
//! - `stats`: [`ReportStore`](coupond_store::ReportStore): coupon counts, usage per period, and
//!   the audit (whose checks live in `audit`).
//! - `inspect`: [`InspectStore`](coupond_store::InspectStore): reads for tests and tools.
//! - `gate`: requests go before background work on the one writer.
//! - `rows`: row to domain conversions and the one driver-error mapping.
//! - `migrations/`: the schema, embedded in the binary and applied by [`SqliteStore::migrate`].
//!
//! SQLite allows one writer at a time. Rather than let connections fight over the write lock
//! (and surface "database is locked"), writes go through a pool of exactly one connection and
//! begin `IMMEDIATE`, taking the lock up front; reads use a separate pool and, in WAL mode,
//! never wait for the writer. `synchronous=FULL` makes every acknowledged commit survive power
//! loss. Another process on the same file (`coupond keys create` while serving) waits on the
//! busy timeout.
#![forbid(unsafe_code)]

mod checkout;
mod claims;
mod exec;
mod gate;
mod issuance;
mod rows;
mod scheduling;
mod store;

pub use store::{SqliteStore, DEFAULT_READERS};

coupond_store_sql::impl_webhook_store!(SqliteStore);
coupond_store_sql::impl_campaign_store!(SqliteStore);
coupond_store_sql::impl_catalog_store!(SqliteStore);
coupond_store_sql::impl_code_store!(SqliteStore);
coupond_store_sql::impl_admin_store!(SqliteStore);
coupond_store_sql::impl_report_store!(SqliteStore);
coupond_store_sql::impl_inspect_store!(SqliteStore);
