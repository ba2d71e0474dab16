//! When users were last active: one instant per user (`user_activity`), written in batches
//! by the API's seen worker (every request of a user, `POST /v1/users/{id}/seen`) and read by
//! the user lookup and by audiences that keep only active users (segment issuance's
//! `active_within_days`, and later campaign messages).

use async_trait::async_trait;
use coupond_domain::{Tag, Timestamp, UserId};

use crate::error::StoreResult;

/// Users' last-seen instants; each method one transaction (or one read).
#[async_trait]
pub trait SeenStore: Send + Sync {
    /// Records each `(user, instant)`, keeping a user's later instant where one is stored
    /// already (an earlier one never moves it back). A user given twice keeps the later of
    /// the two.
    async fn record_seen(&self, seen: &[(UserId, Timestamp)]) -> StoreResult<()>;
    /// When `user` was last seen; `None` if never.
    async fn last_seen(&self, user: &UserId) -> StoreResult<Option<Timestamp>>;
    /// Of `users`, those last seen at or after `since`, by user id, each once.
    async fn seen_among(&self, users: &[UserId], since: Timestamp) -> StoreResult<Vec<UserId>>;
    /// Up to `limit` distinct users holding any of `any` and last seen at or after `since`,
    /// by user id (a segment of active users, as [`TagStore::segment_users`] without it).
    ///
    /// [`TagStore::segment_users`]: crate::TagStore::segment_users
    async fn active_segment_users(
        &self,
        any: &[Tag],
        since: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<UserId>>;
}
