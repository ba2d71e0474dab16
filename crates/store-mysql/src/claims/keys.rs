//! A claim batch's idempotency keys on MySQL (`claim_keys`), as statements of a [`Script`].
//!
//! The two-round-trip batch (`pipelined`) takes all of its keys in one upsert and goes on only
//! if every one was new; a batch with a key seen before is run by the one-statement-at-a-time
//! batch, which answers a retry with its earlier coupon (`claim_key`).

use coupond_domain::Timestamp;
use coupond_store::IdempotencyKey;

use crate::script::Script;

/// Writes the upsert that takes `keys` (sorted, distinct): a new key is inserted and counted
/// 1; one seen before is changed, so counted 2 and locked exclusively. Every key was new when
/// the statement counts `keys.len()`; otherwise the caller rolls the change back. `None` when
/// there is no key.
pub(super) fn take_into(s: &mut Script, keys: &[&IdempotencyKey], now: Timestamp) -> Option<usize> {
    if keys.is_empty() {
        return None;
    }
    s.rows(
        "INSERT INTO claim_keys (\"key\", fingerprint, created_at) VALUES ",
        keys,
        |s, k| {
            s.text(&k.key)
                .sql(", ")
                .bytes(&k.fingerprint)
                .sql(", ")
                .time(now);
        },
    )
    .sql(" ON DUPLICATE KEY UPDATE created_at = claim_keys.created_at + 1");
    Some(s.end())
}

/// Writes the statement that drops `keys`, taken for claims that were refused, so that a retry
/// is decided afresh.
pub(super) fn forget_into(s: &mut Script, keys: &[&str]) {
    if keys.is_empty() {
        return;
    }
    s.sql("DELETE FROM claim_keys WHERE \"key\" IN (");
    for (k, key) in keys.iter().enumerate() {
        s.sql(if k == 0 { "" } else { ", " }).text(key);
    }
    s.sql(")");
    s.end();
}

/// Writes the statement that points each taken key at its coupon.
pub(super) fn link_into(s: &mut Script, linked: &[(&IdempotencyKey, i64)], now: Timestamp) {
    if linked.is_empty() {
        return;
    }
    // Every key is there, taken earlier in the transaction: an upsert is how one statement
    // sets each row its own value.
    s.rows(
        "INSERT INTO claim_keys (\"key\", fingerprint, created_at, coupon_id) VALUES ",
        linked,
        |s, (k, coupon)| {
            s.text(&k.key)
                .sql(", ")
                .bytes(&k.fingerprint)
                .sql(", ")
                .time(now)
                .sql(", ")
                .int(*coupon);
        },
    )
    .sql(" ON DUPLICATE KEY UPDATE coupon_id = VALUES(coupon_id)");
    s.end();
}
