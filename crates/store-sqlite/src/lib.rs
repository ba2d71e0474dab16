//! coupond's embedded SQLite backend, the default.
//!
//! - [`SqliteStore`]: the store, `coupond_store_sql`'s
//!   [`SqlStore`](coupond_store_sql::SqlStore) over [`SqliteDb`] (`store`: opening the
//!   database, its pools). Every storage trait is the SQL written once there; only what is
//!   SQLite's own lives here:
//! - `backend`: the [`Backend`](coupond_store_sql::Backend) operations SQLite does its own
//!   way: the claim batch on the claim writer, a user's wallet on the wallet readers, a
//!   checkout lock's order claim, issuance chunks, the outbox's read order.
//! - `claims`: the claim batch's transaction (the hot write path), on the claim writer.
//! - `issuance`: an issuance chunk's transaction with the job's progress, on the claim writer.
//! - `scheduling`: the outbox's head.
//! - `exec`: the [`Db`](coupond_store_sql::Db), `Exec` and `Tx` of the shared SQL over sqlx.
//! - `gate`: requests go before background work on the one writer.
//! - `batch`: multi-row statements on the claim writer's connection, in power-of-two sizes.
//! - `writer`: the claim path's own connection on a thread of its own (`rusqlite`): a claim
//!   batch or issuance chunk runs there as one job.
//! - `threads`: `rusqlite` connections on threads of their own, with one job queue: the claim
//!   writer's, and the wallet readers' (a user's coupons, read and decoded in one hop).
//! - `rows`: row to domain conversions and the mapping of sqlx's errors (`writer::sql_err`
//!   maps the claim writer's).
//! - `migrations/`: the schema, embedded in the binary and applied by [`SqliteDb::migrate`].
//! - `ids`: the one schema change a migration file cannot make (tables whose rows are deleted
//!   rebuilt with AUTOINCREMENT, so no id is handed out twice), run by
//!   [`SqliteDb::migrate`] after them.
//!
//! SQLite allows one writer at a time. Rather than let connections fight over the write lock
//! (and surface "database is locked"), writes go through a pool of exactly one connection and
//! begin `IMMEDIATE`, taking the lock up front (claim batches and issuance chunks run on the
//! claim writer's own connection while holding that one); reads use a separate pool and, in WAL mode,
//! never wait for the writer. `synchronous=FULL` makes every acknowledged commit survive power
//! loss. Another process on the same file (`coupond keys create` while serving) waits on the
//! busy timeout.
#![forbid(unsafe_code)]

mod backend;
mod batch;
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

pub use store::{SqliteDb, DEFAULT_READERS};

/// The SQLite store: the shared SQL over [`SqliteDb`].
pub type SqliteStore = coupond_store_sql::SqlStore<SqliteDb>;
