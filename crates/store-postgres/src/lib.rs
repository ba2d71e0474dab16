//! coupond's PostgreSQL backend.
//!
//! - [`PgStore`]: the [`Store`](coupond_store::Store) implementation.
//! - `claims`: the claim batch, the hot write path.
//! - `audit`: the invariant checks of `coupond audit`.
//! - `checkout`: orders locking, confirming and cancelling coupons; idempotency records.
//! - `codes`: promotion codes and their batches.
//! - `scheduling`: the scheduler's queries, outbox consumers, reminders and the inbox.
//! - `issuance`: bulk issuance jobs, a chunk per transaction with the job's progress.
//! - `stats`: coupon counts per template and usage per period.
//! - `webhooks`: webhook endpoints, deliveries and attempts.
//! - `rows`: row to domain conversions and the one driver-error mapping.
//! - `migrations/`: the schema, embedded in the binary and applied by [`PgStore::migrate`].
//!
//! Many coupond instances may share one database: every write that depends on what was read
//! is a single conditional statement or runs in a transaction whose first statement locks the
//! row it depends on, so correctness never rests on in-process state.
#![forbid(unsafe_code)]

mod audit;
mod checkout;
mod claims;
mod codes;
mod idempotency;
mod issuance;
mod rows;
mod scheduling;
mod stats;
mod store;
mod webhooks;

pub use store::PgStore;
