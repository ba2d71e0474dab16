//! coupond's embedded SQLite backend, the default.
//!
//! - [`SqliteStore`]: the [`Store`](coupond_store::Store) implementation.
//! - `claims`: the claim batch, the hot write path.
//! - `audit`: the invariant checks of `coupond audit`.
//! - `checkout`: orders locking, confirming and cancelling coupons; idempotency records.
//! - `codes`: promotion codes and their batches.
//! - `scheduling`: the scheduler's queries, outbox consumers, reminders and the inbox.
//! - `issuance`: bulk issuance jobs, a chunk per transaction with the job's progress.
//! - `stats`: coupon counts per template and usage per period.
//! - `webhooks`: webhook endpoints, deliveries and attempts.
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

mod audit;
mod checkout;
mod claims;
mod codes;
mod gate;
mod issuance;
mod rows;
mod scheduling;
mod stats;
mod store;
mod webhooks;

pub use store::SqliteStore;
