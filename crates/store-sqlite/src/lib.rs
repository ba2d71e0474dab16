//! coupond's embedded SQLite backend, the default.
//!
//! - [`SqliteStore`]: connection setup and the helpers the modules share (`store`). It
//!   implements every area trait of `coupond_store`, so it is a
//!   [`Store`](coupond_store::Store); most traits come from the SQL written once in
//!   `coupond_store_sql` (its `impl_*_store!` macros, invoked below), and only what is
//!   SQLite's own lives here:
//! - `claims`: [`ClaimStore`](coupond_store::ClaimStore): the claim batch (the hot write
//!   path) on the claim writer; a user's wallet (its reads written once in
//!   `coupond_store_sql::wallet`) on the wallet readers.
//! - `checkout`: how a lock claims its order id ([`CheckoutStore`](coupond_store::CheckoutStore)
//!   is otherwise written once in `coupond_store_sql::checkout`).
//! - `scheduling`: [`OutboxStore`](coupond_store::OutboxStore): the outbox's head and its
//!   read order.
//! - `issuance`: [`IssuanceStore`](coupond_store::IssuanceStore): bulk issuance, a chunk per
//!   transaction with the job's progress, on the claim writer.
//! - `exec`: the [`Db`](coupond_store_sql::Db), `Exec` and `Tx` of the shared SQL over sqlx.
//! - `gate`: requests go before background work on the one writer.
//! - `batch`: multi-row statements on the claim writer's connection, in power-of-two sizes.
//! - `writer`: the claim path's own connection on a thread of its own (`rusqlite`): a claim
//!   batch or issuance chunk runs there as one job.
//! - `threads`: `rusqlite` connections on threads of their own, with one job queue: the claim
//!   writer's, and the wallet readers' (a user's coupons, read and decoded in one hop).
//! - `rows`: row to domain conversions and the mapping of sqlx's errors (`writer::sql_err`
//!   maps the claim writer's).
//! - `migrations/`: the schema, embedded in the binary and applied by [`SqliteStore::migrate`].
//! - `ids`: the one schema change a migration file cannot make (tables whose rows are deleted
//!   rebuilt with AUTOINCREMENT, so no id is handed out twice), run by
//!   [`SqliteStore::migrate`] after them.
//!
//! SQLite allows one writer at a time. Rather than let connections fight over the write lock
//! (and surface "database is locked"), writes go through a pool of exactly one connection and
//! begin `IMMEDIATE`, taking the lock up front (claim batches and issuance chunks run on the
//! claim writer's own connection while holding that one); reads use a separate pool and, in WAL mode,
//! never wait for the writer. `synchronous=FULL` makes every acknowledged commit survive power
//! loss. Another process on the same file (`coupond keys create` while serving) waits on the
//! busy timeout.
#![forbid(unsafe_code)]

mod batch;
mod checkout;
mod claims;
mod exec;
mod gate;
mod ids;
mod issuance;
mod rows;
mod scheduling;
mod store;
mod threads;
mod writer;

pub use store::{SqliteStore, DEFAULT_READERS};

coupond_store_sql::impl_webhook_store!(SqliteStore);
coupond_store_sql::impl_lifecycle_store!(SqliteStore);
coupond_store_sql::impl_tag_store!(SqliteStore);
coupond_store_sql::impl_seen_store!(SqliteStore);
coupond_store_sql::impl_campaign_message_store!(SqliteStore);
coupond_store_sql::impl_city_store!(SqliteStore);
coupond_store_sql::impl_campaign_store!(SqliteStore);
coupond_store_sql::impl_catalog_store!(SqliteStore);
coupond_store_sql::impl_code_store!(SqliteStore);
coupond_store_sql::impl_admin_store!(SqliteStore);
coupond_store_sql::impl_operator_store!(SqliteStore);
coupond_store_sql::impl_invitation_store!(SqliteStore);
coupond_store_sql::impl_audit_store!(SqliteStore);
coupond_store_sql::impl_audit_run_store!(SqliteStore);
coupond_store_sql::impl_messaging_store!(SqliteStore);
coupond_store_sql::impl_report_store!(SqliteStore);
coupond_store_sql::impl_inspect_store!(SqliteStore);
coupond_store_sql::impl_idempotency_store!(SqliteStore);
coupond_store_sql::impl_scheduler_store!(SqliteStore);
coupond_store_sql::impl_inbox_store!(SqliteStore);
