//! User tags at the storage boundary: the tags coupond holds for users, the users of a
//! segment, the tags the platform shares with merchants, and bulk tag uploads worked as jobs.

use async_trait::async_trait;
use coupond_domain::{Actor, Tag, Timestamp, UserId};

use crate::{InvalidLine, IssuanceKey, IssuanceState, Page, StoreResult};

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

/// A bulk tag upload to record: who sent it and the parsed file.
#[derive(Clone, Debug)]
pub struct NewTagUpload<'a> {
    pub actor: &'a Actor,
    /// The valid pairs, in file order (repeats included: they count as `present`).
    pub pairs: &'a [(UserId, Tag)],
    /// Lines with something on them (the header and blank lines aside).
    pub lines: u64,
    pub invalid: u64,
    /// The first 100.
    pub invalid_lines: &'a [InvalidLine],
    /// The upload's scoped Idempotency-Key, if it had one: a second upload under it returns
    /// the first one's job and inserts nothing.
    pub key: Option<IssuanceKey<'a>>,
}

/// A stored tag upload and its progress. Its state is never `failed`: any valid pair can be
/// added (or counted present or over the limit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TagUpload {
    pub id: i64,
    pub actor: Actor,
    pub state: IssuanceState,
    pub lines: u64,
    /// Valid pairs to add.
    pub requested: u64,
    /// Pairs before this position are done.
    pub next_pair: u64,
    pub done: Tagged,
    pub invalid: u64,
    pub invalid_lines: Vec<InvalidLine>,
    pub created_at: Timestamp,
    pub started_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
    /// The fingerprint of the upload that made it under an Idempotency-Key.
    pub key_fingerprint: Option<[u8; 32]>,
}

/// A tag the platform shares with merchants: they may name it in a segment or an audience.
/// Every other tag is private to the platform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedTag {
    pub tag: Tag,
    /// When it was first shared (sharing it again keeps this).
    pub shared_at: Timestamp,
}

/// User tags; each method one transaction.
#[async_trait]
pub trait TagStore: Send + Sync {
    /// Replaces `user`'s tags with `tags` (a set, at most the per-user maximum).
    async fn put_user_tags(&self, user: &UserId, tags: &[Tag]) -> StoreResult<()>;
    /// `user`'s tags, sorted.
    async fn user_tags(&self, user: &UserId) -> StoreResult<Vec<Tag>>;
    /// Adds `(user, tag)` pairs, keeping what users already hold and no user over the
    /// per-user maximum.
    async fn add_user_tags(&self, pairs: &[(UserId, Tag)]) -> StoreResult<Tagged>;
    /// Up to `limit` distinct users holding any of `any`, by user id.
    async fn segment_users(&self, any: &[Tag], limit: u32) -> StoreResult<Vec<UserId>>;

    /// Shares `tag` with merchants at `now`; a tag already shared keeps its `shared_at`.
    async fn share_tag(&self, tag: &Tag, now: Timestamp) -> StoreResult<SharedTag>;
    /// Stops sharing `tag`; whether it was shared.
    async fn unshare_tag(&self, tag: &Tag) -> StoreResult<bool>;
    /// Up to `limit` shared tags after `after`, by tag.
    async fn shared_tags(&self, after: Option<&Tag>, limit: u32) -> StoreResult<Vec<SharedTag>>;
    /// Which of `tags` (at most [`MAX_SEGMENT_TAGS`](coupond_domain::tags::MAX_SEGMENT_TAGS))
    /// are shared, sorted, each once.
    async fn shared_of(&self, tags: &[Tag]) -> StoreResult<Vec<Tag>>;

    /// A new pending upload, and `true`; with `new.key`, the upload already made under that
    /// key if there is one, and `false` (nothing is inserted).
    async fn insert_tag_upload(
        &self,
        new: &NewTagUpload<'_>,
        now: Timestamp,
    ) -> StoreResult<(TagUpload, bool)>;
    async fn tag_upload(&self, id: i64) -> StoreResult<TagUpload>;
    /// Uploads by id.
    async fn tag_uploads(&self, page: Page) -> StoreResult<Vec<TagUpload>>;
    /// Uploads pending or running, oldest first, each with its uploader as owner (a number
    /// the same for every upload of one uploader), so uploaders take turns.
    async fn open_tag_uploads(&self) -> StoreResult<Vec<crate::OpenJob>>;
    /// The pairs of upload `id`, in order (what [`TagStore::tag_chunk`] takes).
    async fn tag_upload_pairs(&self, id: i64) -> StoreResult<Vec<(UserId, Tag)>>;
    /// Adds the next `max` pairs of upload `id` (`pairs` is its list) in one transaction with
    /// its progress, finishing it with the last chunk. `None` when the upload is not open or
    /// another instance is working on it right now.
    async fn tag_chunk(
        &self,
        id: i64,
        pairs: &[(UserId, Tag)],
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Option<TagUpload>>;
}
