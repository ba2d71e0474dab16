//! coupond's PostgreSQL backend.
//!
//! - [`PgStore`]: the store, `coupond_store_sql`'s [`SqlStore`](coupond_store_sql::SqlStore)
//!   over [`PgDb`] (`store`: connection setup and the helpers the modules share). Every
//!   storage trait is the SQL written once there; only what is PostgreSQL's own lives here:
//! - `backend`: the [`Backend`](coupond_store_sql::Backend) operations PostgreSQL does its
//!   own way: the claim batch, a checkout lock's order claim, issuance chunks, the outbox's
//!   read order, reminder planning.
//! - `claims`: the claim batch, the hot write path (stock shards, the plain batch as a server
//!   function).
//! - `scheduling`: the outbox's head (by transaction id).
//! - `inbox`: planning reminders (one statement of arrays).
//! - `exec`: the [`Db`](coupond_store_sql::Db), `Exec` and `Tx` of the shared SQL over sqlx.
//! - `rows`: row to domain conversions and the one driver-error mapping.
//! - `migrations/`: the schema, embedded in the binary and applied by [`PgDb::migrate`].
//!
//! Many coupond instances may share one database: every write that depends on what was read
//! is a single conditional statement or runs in a transaction whose first statement locks the
//! row it depends on, so correctness never rests on in-process state.
#![forbid(unsafe_code)]

mod backend;
mod claims;
mod exec;
mod inbox;
mod rows;
mod scheduling;
mod store;

pub use store::{PgDb, DEFAULT_MAX_CONNECTIONS};

/// The PostgreSQL store: the shared SQL over [`PgDb`].
pub type PgStore = coupond_store_sql::SqlStore<PgDb>;
