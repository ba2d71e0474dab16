//! User tags at the storage boundary: the tags coupond holds for users, and the users of a
//! segment.

use async_trait::async_trait;
use coupond_domain::{Tag, UserId};

use crate::StoreResult;

/// What a bulk tagging chunk did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tagged {
    /// Pairs added now.
    pub added: u64,
    /// Pairs the user already had.
    pub present: u64,
    /// Pairs refused: the user already holds the most tags one may
    /// ([`MAX_TAGS_PER_USER`](coupond_domain::tags::MAX_TAGS_PER_USER)).
    pub over_limit: u64,
}

/// User tags; each method one transaction.
#[async_trait]
pub trait TagStore: Send + Sync {
    /// Replaces `user`'s tags with `tags` (a set, at most the per-user maximum).
    async fn put_user_tags(&self, user: &UserId, tags: &[Tag]) -> StoreResult<()>;
    /// `user`'s tags, sorted.
    async fn user_tags(&self, user: &UserId) -> StoreResult<Vec<Tag>>;
    /// Adds `(user, tag)` pairs (a bulk upload's chunk), keeping what users already hold and
    /// no user over the per-user maximum.
    async fn add_user_tags(&self, pairs: &[(UserId, Tag)]) -> StoreResult<Tagged>;
    /// Up to `limit` distinct users holding any of `any`, by user id.
    async fn segment_users(&self, any: &[Tag], limit: u32) -> StoreResult<Vec<UserId>>;
}
