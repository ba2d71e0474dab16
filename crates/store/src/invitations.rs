//! Merchants' invitations to join their teams, at the storage boundary (issue 61 point 8).
//! An invitation is stored with the SHA-256 of its one-time token (the link goes only to the
//! invited address, in the email queued with it) and becomes an operator when accepted.

use async_trait::async_trait;
use coupond_domain::{Invitation, MerchantId, Operator, OperatorDraft, Timestamp};

use crate::{NewOutbound, StoreResult};

/// Invitations; each method one transaction.
#[async_trait]
pub trait InvitationStore: Send + Sync {
    /// Stores an invitation for `d` (a merchant's role) by its token's SHA-256, valid until
    /// `expires_at`, and queues `email` (the link) in the same transaction. A merchant with
    /// `max_pending` invitations neither accepted nor expired at `now` is
    /// [`Conflict::Limit`](crate::Conflict::Limit); a merchant that does not exist,
    /// [`Conflict::Reference`](crate::Conflict::Reference). Whether the address has an
    /// account plays no part.
    async fn insert_invitation(
        &self,
        d: &OperatorDraft,
        token_hash: &[u8; 32],
        expires_at: Timestamp,
        email: &NewOutbound,
        max_pending: u32,
        now: Timestamp,
    ) -> StoreResult<Invitation>;

    /// The invitation whose token has SHA-256 `token_hash`, if neither accepted nor expired
    /// at `now`.
    async fn live_invitation(
        &self,
        token_hash: &[u8; 32],
        now: Timestamp,
    ) -> StoreResult<Option<Invitation>>;

    /// Accepts the live invitation of `token_hash`: makes its operator with `password_hash`
    /// and marks it accepted, in one transaction (`None` if it is not live: of two racing
    /// accepts one makes the account). An address that has an account by now is
    /// [`Conflict::Unique`](crate::Conflict::Unique), and the invitation stays as it was.
    async fn accept_invitation(
        &self,
        token_hash: &[u8; 32],
        password_hash: &str,
        now: Timestamp,
    ) -> StoreResult<Option<Operator>>;

    /// Up to `limit` invitations by id after `after`, newest last: merchant `m`'s with
    /// `Some(m)`, everyone's with `None`.
    async fn list_invitations(
        &self,
        merchant: Option<MerchantId>,
        after: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<Invitation>>;
}
