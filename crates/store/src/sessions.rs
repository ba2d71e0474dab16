//! Console sessions, kept in the database so that every instance shares them and signing out
//! (or revoking the key signed in with) ends them everywhere at once.

use coupond_domain::{OperatorId, Timestamp};

/// One console sign-in. Its id is never stored: the row is found by the SHA-256 of the random
/// id the browser's cookie holds, so a copy of the database opens no session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsoleSession {
    /// The SHA-256 of the API key signed in with (as `api_keys.hash`).
    pub key_hash: [u8; 32],
    /// The operator signed in, when an operator signed in with their own password (issue 32);
    /// `None` for a sign-in with an API key. Disabling the operator or changing their
    /// password ends the session.
    pub operator_id: Option<OperatorId>,
    /// This session's form token.
    pub csrf: String,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}
