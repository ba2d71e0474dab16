//! [`RetryKey`]: the key a caller sends to make a write safe to retry (the API's
//! `Idempotency-Key` header), checked once when it is read and scoped here to the caller, the
//! operation and what was asked.

use coupond_store::IdempotencyKey;
use sha2::{Digest, Sha256};

use crate::caller::Principal;

/// A caller's retry key: 1 to 255 visible ASCII characters, with the caller it belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryKey {
    /// The caller's scope ([`Principal::scope`]).
    caller: String,
    key: String,
}

impl RetryKey {
    /// `key` as sent by `p`; `None` if it is not 1 to 255 visible ASCII characters.
    pub fn parse(p: &Principal, key: &str) -> Option<Self> {
        let fits = !key.is_empty() && key.len() <= 255 && key.bytes().all(|b| b.is_ascii_graphic());
        fits.then(|| RetryKey {
            caller: p.scope(),
            key: key.to_owned(),
        })
    }

    /// The key as kept: scoped to the caller and `operation` (the route's pattern, e.g.
    /// `POST /v1/templates/{id}/claims`), fingerprinted by `asked` (what the request asks
    /// for, in a canonical form), so the same key for another request is told apart.
    pub fn scoped(&self, operation: &str, asked: &str) -> IdempotencyKey {
        IdempotencyKey {
            key: format!("{}\n{operation}\n{}", self.caller, self.key),
            fingerprint: Sha256::digest(asked.as_bytes()).into(),
        }
    }
}
