//! coupond's PostgreSQL backend.
//!
//! - [`PgStore`]: connection setup and the helpers the modules share (`store`). It
//!   implements every area trait of `coupond_store`, so it is a
//!   [`Store`](coupond_store::Store); most traits come from the SQL written once in
//!   `coupond_store_sql` (its `impl_*_store!` macros, invoked below), and only what is
//!   PostgreSQL's own lives here:
//! - `claims`: the claim batch, the hot write path (stock shards, the plain batch as a server
//!   function).
//! - `wallet`: [`ClaimStore`](coupond_store::ClaimStore): the claim batch and a user's wallet
//!   (its reads written once in `coupond_store_sql::wallet`).
//! - `checkout`: how a lock claims its order id ([`CheckoutStore`](coupond_store::CheckoutStore)
//!   is otherwise written once in `coupond_store_sql::checkout`).
//! - `scheduling`: [`OutboxStore`](coupond_store::OutboxStore): the outbox's head and its
//!   read order (by transaction id).
//! - `inbox`: planning reminders, the backend's own (one statement of arrays).
//! - `issuance`: [`IssuanceStore`](coupond_store::IssuanceStore): bulk issuance, a chunk per
//!   transaction with the job's progress (its bookkeeping in `coupond_store_sql::issuance`).
//! - `exec`: the [`Db`](coupond_store_sql::Db), `Exec` and `Tx` of the shared SQL over sqlx.
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
