//! What a hostile client found (issue 11), one test or more per finding; the figures and the
//! settings are in docs/RELIABILITY.md ("Hostile clients").
//!
//! 1. slow and idle connections: `connections.rs`.
//! 2. quotes as a code oracle: `codes::quotes_that_look_a_code_up_count_against_the_redemption_limits`.
//! 3. webhooks to internal addresses, and failures that scan ports: `webhooks.rs`.
//! 4. one slow receiver delaying others: `webhooks::a_slow_receiver_delays_only_its_own_deliveries`.
//! 5. the disk filled through stored answers: `idempotency.rs`.
//! 6. background work starving claims on SQLite: a benchmark, `bench/background.sh`.
//! 7. uploads read before ownership: `uploads.rs`.
//! 8. shared codes tested and squatted: `codes::shared_code_changes_are_limited_per_merchant_and_say_nothing_of_the_owner`.
//! 9. redemption timing: `codes::unusable_codes_are_refused_without_a_claim_transaction`.
//! 10. listings in cities not served, 11. token times, 13. the smaller findings: `small.rs`.
//! 12. drafts seen by users: `codes::users_and_the_order_service_cannot_tell_a_draft_from_a_missing_template`.
//!
//! A later probe of the files coupond writes and reads (CSV cells written as formulas;
//! uploads with a byte-order mark or lone `\r` line ends): `files.rs`.

mod codes;
mod connections;
mod files;
mod idempotency;
mod proxies;
mod small;
mod uploads;
mod webhooks;
