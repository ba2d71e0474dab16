//! [`RetryKey`]: the key a caller sends to make a write safe to retry (the API's
//! `Idempotency-Key` header), checked once when it is read and scoped here to the caller, the
//! operation and what was asked.

pub use coupond_store::IdempotencyKey;
use sha2::{Digest, Sha256};

use crate::caller::Principal;
use crate::context::App;
use crate::error::AppResult;

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

/// What a keyed write finds when it starts, and the answer kept for its retries.
pub use coupond_store::{IdempotencyStart, StoredAnswer};

impl App {
    /// Starts a write under `key`: new (run it, then [`App::keep_answer`] or
    /// [`App::forget_key`]), a replay of the answer kept, still running, or a key used for
    /// another request. A start older than `idempotency_stale` is taken over; keys are kept for
    /// `idempotency_ttl`.
    pub async fn start_keyed(&self, key: &IdempotencyKey) -> AppResult<IdempotencyStart> {
        let now = self.now();
        let s = self.settings();
        Ok(self
            .store()
            .idempotency_start(
                key,
                now,
                now.minus(s.idempotency_stale),
                now.plus(s.idempotency_ttl),
            )
            .await?)
    }

    /// Keeps `answer` for the retries of the write started under `key`.
    pub async fn keep_answer(&self, key: &str, answer: &StoredAnswer) -> AppResult<()> {
        Ok(self.store().idempotency_finish(key, answer).await?)
    }

    /// Forgets the write started under `key` (it ended with nothing worth keeping), so a
    /// retry runs it again.
    pub async fn forget_key(&self, key: &str) -> AppResult<()> {
        Ok(self.store().idempotency_abandon(key).await?)
    }

    /// Drops the keys past their `idempotency_ttl`; how many.
    pub async fn purge_keys(&self) -> AppResult<u64> {
        Ok(self.store().idempotency_purge(self.now()).await?)
    }
}
