//! coupond's MariaDB / MySQL backend.
//!
//! - [`MysqlStore`]: connection setup and each session's settings (`store`). It implements
//!   every area trait of `coupond_store`, most of them written once in `coupond_store_sql`
//!   and implemented here by that crate's macros, so it is a [`Store`](coupond_store::Store).
//! - `exec`: the shared layer's [`Db`](coupond_store_sql::Db), `Exec` and `Tx` on MySQL.
//! - `translate`: the two statement forms MySQL lacks (`RETURNING`, and counting an insert
//!   that skips duplicates), run as equivalent statements.
//! - `claims`: the claim batch, the hot write path, under the template's row lock: a plain
//!   batch in two round trips (`claims/pipelined.rs`), the others a statement at a time.
//! - `ids`: coupon ids, drawn from a shared counter a block at a time per store.
//! - `script`: several statements sent as one text, their values written as literals.
//! - `wallet`: [`ClaimStore`](coupond_store::ClaimStore): the claim batch and a user's wallet.
//! - `checkout`: [`CheckoutStore`](coupond_store::CheckoutStore), but for how a lock claims
//!   its order id written once in `coupond_store_sql::checkout`.
//! - `scheduling`: [`OutboxStore`](coupond_store::OutboxStore): the outbox's sequencer and
//!   read order, MySQL's own.
//! - `inbox`: reminders planned as one script (the rest of the inbox is shared).
//! - `issuance`: [`IssuanceStore`](coupond_store::IssuanceStore): a chunk per transaction.
//! - `rows`: the one driver-error mapping.
//! - `migrations/`: the schema, embedded in the binary and applied by [`MysqlStore::migrate`].
//!
//! Tested on MariaDB 10.11; the SQL keeps to what MySQL 8 also accepts. Many coupond
//! instances may share one database: every write that depends on what was read is a single
//! conditional statement or runs in a transaction that first locks the row it depends on.
#![forbid(unsafe_code)]

mod checkout;
mod claims;
mod exec;
mod ids;
mod inbox;
mod issuance;
mod rows;
mod scheduling;
mod script;
mod store;
mod translate;
mod wallet;

pub use store::{MysqlStore, DEFAULT_MAX_CONNECTIONS};

coupond_store_sql::impl_webhook_store!(MysqlStore);
coupond_store_sql::impl_lifecycle_store!(MysqlStore);
coupond_store_sql::impl_tag_store!(MysqlStore);
coupond_store_sql::impl_seen_store!(MysqlStore);
coupond_store_sql::impl_campaign_message_store!(MysqlStore);
coupond_store_sql::impl_city_store!(MysqlStore);
coupond_store_sql::impl_campaign_store!(MysqlStore);
coupond_store_sql::impl_catalog_store!(MysqlStore);
coupond_store_sql::impl_code_store!(MysqlStore);
coupond_store_sql::impl_admin_store!(MysqlStore);
coupond_store_sql::impl_operator_store!(MysqlStore);
coupond_store_sql::impl_invitation_store!(MysqlStore);
coupond_store_sql::impl_audit_store!(MysqlStore);
coupond_store_sql::impl_audit_run_store!(MysqlStore);
coupond_store_sql::impl_messaging_store!(MysqlStore);
coupond_store_sql::impl_report_store!(MysqlStore);
coupond_store_sql::impl_inspect_store!(MysqlStore);
coupond_store_sql::impl_idempotency_store!(MysqlStore);
coupond_store_sql::impl_scheduler_store!(MysqlStore);
coupond_store_sql::impl_inbox_store!(MysqlStore, plan_reminders = crate::inbox::plan_reminders);
