//! coupond's PostgreSQL backend.
//!
//! - [`PgStore`]: the [`Store`](coupond_store::Store) implementation.
//! - `rows`: row to domain conversions and the one driver-error mapping.
//! - `migrations/`: the schema, embedded in the binary and applied by [`PgStore::migrate`].
//!
//! Many coupond instances may share one database: every write that depends on what was read
//! is a single conditional statement or runs in a transaction whose first statement locks the
//! row it depends on, so correctness never rests on in-process state.
#![forbid(unsafe_code)]

mod rows;
mod store;

pub use store::PgStore;
