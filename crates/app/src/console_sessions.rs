//! The console's sign-ins, kept server side so that every instance knows them and an operator
//! disabled or a password changed ends them at once: stored under a hash of the cookie's value
//! (never the value itself), each with its form token and its end.

use std::time::Duration;

use coupond_domain::OperatorId;
use coupond_store::ConsoleSession;

use crate::context::App;
use crate::error::AppResult;

/// Who a console session signed in as: an API key (its hash), or an operator (whose password
/// was just checked).
#[derive(Clone, Copy, Debug)]
pub enum SignedIn {
    Key([u8; 32]),
    Operator(OperatorId),
}

/// A console session as kept.
#[derive(Clone, Debug)]
pub struct KeptSession {
    pub signed_in: SignedIn,
    /// The session's form token.
    pub csrf: String,
}

impl App {
    /// Keeps a new session under `id` (a hash of its cookie's value) for `lifetime` (one day
    /// if it cannot be said in whole time).
    pub async fn keep_console_session(
        &self,
        id: &[u8; 32],
        signed_in: SignedIn,
        csrf: String,
        lifetime: Duration,
    ) -> AppResult<()> {
        let now = self.now();
        let lifetime = time::Duration::try_from(lifetime).unwrap_or(time::Duration::days(1));
        let (key_hash, operator_id) = match signed_in {
            SignedIn::Key(hash) => (hash, None),
            // An account's session names no key: all zeros, which no key hashes to, so
            // revoking a key never matches it.
            SignedIn::Operator(op) => ([0; 32], Some(op)),
        };
        let session = ConsoleSession {
            key_hash,
            operator_id,
            csrf,
            created_at: now,
            expires_at: now.plus(lifetime),
        };
        Ok(self.store().insert_console_session(id, &session).await?)
    }

    /// The session kept under `id`, unless it has ended.
    pub async fn console_session(&self, id: &[u8; 32]) -> AppResult<Option<KeptSession>> {
        let kept = self.store().console_session(id, self.now()).await?;
        Ok(kept.map(|s| KeptSession {
            signed_in: match s.operator_id {
                Some(op) => SignedIn::Operator(op),
                None => SignedIn::Key(s.key_hash),
            },
            csrf: s.csrf,
        }))
    }

    /// Ends the session kept under `id`, on every instance.
    pub async fn end_console_session(&self, id: &[u8; 32]) -> AppResult<()> {
        Ok(self.store().end_console_session(id).await?)
    }
}
