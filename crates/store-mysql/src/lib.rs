//! coupond's MariaDB / MySQL backend.
//!
//! - [`MysqlStore`]: the store, `coupond_store_sql`'s
//!   [`SqlStore`](coupond_store_sql::SqlStore) over [`MysqlDb`] (`store`: connection setup
//!   and each session's settings). Every storage trait is the SQL written once there; only
//!   what is MySQL's own lives here:
//! - `backend`: the [`Backend`](coupond_store_sql::Backend) operations MySQL does its own
//!   way: the claim batch, a checkout lock's order claim, issuance chunks, the outbox's read
//!   order, reminder planning.
//! - `exec`: the shared layer's [`Db`](coupond_store_sql::Db), `Exec` and `Tx` on MySQL.
//! - `translate`: the two statement forms MySQL lacks (`RETURNING`, and counting an insert
//!   that skips duplicates), run as equivalent statements.
//! - `claims`: the claim batch, the hot write path, under the template's row lock: a plain
//!   batch in two round trips (`claims/pipelined.rs`), the others a statement at a time.
//! - `ids`: coupon ids, drawn from a shared counter a block at a time per store.
//! - `script`: several statements sent as one text, their values written as literals.
//! - `scheduling`: the outbox's sequencer, which gives committed events their order.
//! - `inbox`: reminders planned as one script (the rest of the inbox is shared).
//! - `rows`: the one driver-error mapping.
//! - `migrations/`: the schema, embedded in the binary and applied by [`MysqlDb::migrate`].
//!
//! Tested on MariaDB 10.11; the SQL keeps to what MySQL 8 also accepts. Many coupond
//! instances may share one database: every write that depends on what was read is a single
//! conditional statement or runs in a transaction that first locks the row it depends on.
#![forbid(unsafe_code)]

mod backend;
mod claims;
mod exec;
mod ids;
mod inbox;
mod rows;
mod scheduling;
mod script;
mod store;
mod translate;

pub use store::{MysqlDb, DEFAULT_MAX_CONNECTIONS};

/// The MariaDB / MySQL store: the shared SQL over [`MysqlDb`].
pub type MysqlStore = coupond_store_sql::SqlStore<MysqlDb>;
