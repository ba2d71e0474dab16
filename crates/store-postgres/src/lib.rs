//! coupond's PostgreSQL backend.
//!
//! - [`PgStore`]: connection setup and the helpers the area modules share (`store`). It
//!   implements every area trait of `coupond_store`, one module each, so it is a
//!   [`Store`](coupond_store::Store):
//! - `admin`: [`AdminStore`](coupond_store::AdminStore): health, settings, API keys.
//! - `catalog`: [`CatalogStore`](coupond_store::CatalogStore): merchants, listings, bindings
//!   (written once in `coupond_store_sql::catalog`).
//! - `campaigns`: [`CampaignStore`](coupond_store::CampaignStore): activities and templates
//!   (written once in `coupond_store_sql::campaigns`).
//! - `claims`: the claim batch, the hot write path.
//! - `wallet`: [`ClaimStore`](coupond_store::ClaimStore): the claim batch and a user's wallet
//!   (its reads written once in `coupond_store_sql::wallet`).
//! - `checkout`: [`CheckoutStore`](coupond_store::CheckoutStore): orders locking, confirming and
//!   cancelling coupons (written once in `coupond_store_sql::checkout` but for how a lock
//!   claims its order id).
//! - [`IdempotencyStore`](coupond_store::IdempotencyStore): records of write routes (written
//!   once in `coupond_store_sql::idempotency`).
//! - `codes`: [`CodeStore`](coupond_store::CodeStore): promotion codes and their batches
//!   (written once in `coupond_store_sql::codes`).
//! - `scheduling`: [`OutboxStore`](coupond_store::OutboxStore): the outbox's head and its
//!   read order, the backend's own. Leases and consumer progress,
//!   [`SchedulerStore`](coupond_store::SchedulerStore) (announced transitions, expiry) and
//!   [`InboxStore`](coupond_store::InboxStore) (reminders, the inbox) are written once in
//!   `coupond_store_sql::scheduling` and `coupond_store_sql::inbox`.
//! - `inbox`: planning reminders, the backend's own (one statement of arrays).
//! - `issuance`: [`IssuanceStore`](coupond_store::IssuanceStore): bulk issuance, a chunk per
//!   transaction with the job's progress (its bookkeeping in `coupond_store_sql::issuance`).
//! - `webhooks`: [`WebhookStore`](coupond_store::WebhookStore): endpoints, deliveries, attempts.
//! - `stats`: [`ReportStore`](coupond_store::ReportStore): coupon counts, usage per period, and
//!   the audit (whose checks live in `audit`).
//! - `inspect`: [`InspectStore`](coupond_store::InspectStore): reads for tests and tools.
//! - `rows`: row to domain conversions and the one driver-error mapping.
//! - `migrations/`: the schema, embedded in the binary and applied by [`PgStore::migrate`].
//!
//! Many coupond instances may share one database: every write that depends on what was read
//! is a single conditional statement or runs in a transaction whose first statement locks the
//! row it depends on, so correctness never rests on in-process state.
#![forbid(unsafe_code)]

mod checkout;
mod claims;
mod exec;
mod inbox;
mod issuance;
mod rows;
mod scheduling;
mod store;
mod wallet;

pub use store::{PgStore, DEFAULT_MAX_CONNECTIONS};

coupond_store_sql::impl_webhook_store!(PgStore);
coupond_store_sql::impl_lifecycle_store!(PgStore);
coupond_store_sql::impl_tag_store!(PgStore);
coupond_store_sql::impl_seen_store!(PgStore);
coupond_store_sql::impl_campaign_message_store!(PgStore);
coupond_store_sql::impl_city_store!(PgStore);
coupond_store_sql::impl_campaign_store!(PgStore);
coupond_store_sql::impl_catalog_store!(PgStore);
coupond_store_sql::impl_code_store!(PgStore);
coupond_store_sql::impl_admin_store!(PgStore);
coupond_store_sql::impl_operator_store!(PgStore);
coupond_store_sql::impl_invitation_store!(PgStore);
coupond_store_sql::impl_audit_store!(PgStore);
coupond_store_sql::impl_audit_run_store!(PgStore);
coupond_store_sql::impl_messaging_store!(PgStore);
coupond_store_sql::impl_report_store!(PgStore);
coupond_store_sql::impl_inspect_store!(PgStore);
coupond_store_sql::impl_idempotency_store!(PgStore);
coupond_store_sql::impl_scheduler_store!(PgStore);
coupond_store_sql::impl_inbox_store!(PgStore, plan_reminders = crate::inbox::plan_reminders);
