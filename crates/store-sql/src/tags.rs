//! [`TagStore`](coupond_store::TagStore) on every backend: the tags
//! coupond holds for users, a segment's users, and the tags shared with merchants.
//!
//! Every write takes the `user_tags` lock first (a transaction lock where writers run at
//! once), so the per-user count a write checks cannot change under it.

use std::collections::BTreeSet;

use coupond_domain::tags::MAX_TAGS_PER_USER;
use coupond_domain::Timestamp;
use coupond_domain::{Tag, TemplateId, TemplateSpec, UserId};
use coupond_store::{ClaimOutcome, ClaimRequest, SharedTag, StoreError, StoreResult, Tagged};

use crate::backend::{Backend, SqlStore};
use crate::{sql, Db, Exec, Row, Work};
use coupond_store::NewTagUpload;
use coupond_store::OpenJob;
use coupond_store::Page;
use coupond_store::TagStore;
use coupond_store::TagUpload;

const LOCK: &str = "user_tags";

pub async fn put_user_tags(db: &dyn Db, user: &UserId, tags: &[Tag]) -> StoreResult<()> {
    let mut tx = db.begin(Work::Request).await?;
    tx.lock(LOCK).await?;
    let q = sql("DELETE FROM user_tags WHERE user_id = $1").bind(user.as_str());
    tx.execute(q).await?;
    if !tags.is_empty() {
        let mut q = sql("INSERT INTO user_tags (user_id, tag) VALUES ");
        for (i, t) in tags.iter().enumerate() {
            q.push(if i == 0 { "(" } else { ", (" })
                .push_bind(user.as_str())
                .push(", ")
                .push_bind(t.as_str())
                .push(")");
        }
        tx.execute(q).await?;
    }
    tx.commit().await
}

pub async fn user_tags(db: &dyn Db, user: &UserId) -> StoreResult<Vec<Tag>> {
    let q = sql("SELECT tag FROM user_tags WHERE user_id = $1 ORDER BY tag").bind(user.as_str());
    db.read_all(q).await?.iter().map(tag).collect()
}

pub async fn add_user_tags(db: &dyn Db, pairs: &[(UserId, Tag)]) -> StoreResult<Tagged> {
    let mut tx = db.begin(Work::Request).await?;
    let done = add_pairs(&mut *tx, pairs).await?;
    tx.commit().await?;
    Ok(done)
}

/// Adds `pairs` in the caller's transaction, under the `user_tags` lock (taken here).
pub(crate) async fn add_pairs<E: crate::Tx + ?Sized>(
    tx: &mut E,
    pairs: &[(UserId, Tag)],
) -> StoreResult<Tagged> {
    tx.lock(LOCK).await?;
    let mut done = Tagged::default();
    let mut seen: BTreeSet<(&str, &str)> = BTreeSet::new();
    for (user, t) in pairs {
        if !seen.insert((user.as_str(), t.as_str())) {
            done.present += 1;
            continue;
        }
        let q = sql("SELECT tag FROM user_tags WHERE user_id = $1").bind(user.as_str());
        let held = tx.fetch_all(q).await?;
        if held.iter().any(|r| r.str("tag").ok() == Some(t.as_str())) {
            done.present += 1;
        } else if held.len() >= MAX_TAGS_PER_USER {
            done.over_limit += 1;
        } else {
            let q = sql("INSERT INTO user_tags (user_id, tag) VALUES ($1, $2)")
                .bind(user.as_str())
                .bind(t.as_str());
            tx.execute(q).await?;
            done.added += 1;
        }
    }
    Ok(done)
}

pub async fn segment_users(db: &dyn Db, any: &[Tag], limit: u32) -> StoreResult<Vec<UserId>> {
    if any.is_empty() {
        return Ok(Vec::new());
    }
    // At most 20 tags: one parameter each.
    let mut q = sql("SELECT DISTINCT user_id FROM user_tags WHERE tag IN (");
    q.push_binds(any.iter().map(Tag::as_str))
        .push(") ORDER BY user_id LIMIT ")
        .push_bind(i64::from(limit));
    db.read_all(q)
        .await?
        .iter()
        .map(|r| UserId::parse(r.str("user_id")?).map_err(StoreError::other))
        .collect()
}

/// Shares `tag`, keeping the first `shared_at` of a tag already shared.
pub async fn share_tag(db: &dyn Db, tag: &Tag, now: Timestamp) -> StoreResult<SharedTag> {
    let q = sql(format!(
        "INSERT INTO shared_tags (tag, shared_at) VALUES ($1, $2){}",
        db.dialect().on_conflict_nothing("tag")
    ))
    .bind(tag.as_str())
    .bind(now);
    let mut tx = db.begin(Work::Request).await?;
    tx.execute(q).await?;
    let q = sql("SELECT tag, shared_at FROM shared_tags WHERE tag = $1").bind(tag.as_str());
    let row = tx.fetch_one(q).await?;
    tx.commit().await?;
    shared(&row)
}

pub async fn unshare_tag(db: &dyn Db, tag: &Tag) -> StoreResult<bool> {
    let q = sql("DELETE FROM shared_tags WHERE tag = $1").bind(tag.as_str());
    Ok(db.write(q).await? > 0)
}

pub async fn shared_tags(
    db: &dyn Db,
    after: Option<&Tag>,
    limit: u32,
) -> StoreResult<Vec<SharedTag>> {
    // Tags are ASCII, and every backend orders them bytewise (PostgreSQL's column is "C").
    let q = sql("SELECT tag, shared_at FROM shared_tags WHERE tag > $1 ORDER BY tag LIMIT $2")
        .bind(after.map_or("", Tag::as_str))
        .bind(i64::from(limit));
    db.read_all(q).await?.iter().map(shared).collect()
}

pub async fn shared_of(db: &dyn Db, tags: &[Tag]) -> StoreResult<Vec<Tag>> {
    if tags.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = sql("SELECT tag FROM shared_tags WHERE tag IN (");
    q.push_binds(tags.iter().map(Tag::as_str))
        .push(") ORDER BY tag");
    db.read_all(q).await?.iter().map(tag).collect()
}

fn shared(r: &Row) -> StoreResult<SharedTag> {
    Ok(SharedTag {
        tag: tag(r)?,
        shared_at: r.time("shared_at")?,
    })
}

/// Lays out a template's audience tags in `template_tags`, which claim batches read (empty
/// unless its audience is a set of tags).
pub(crate) async fn write_template_tags<E: Exec + ?Sized>(
    ex: &mut E,
    id: TemplateId,
    spec: &TemplateSpec,
) -> StoreResult<()> {
    let q = sql("DELETE FROM template_tags WHERE template_id = $1").bind(id.get());
    ex.execute(q).await?;
    for tag in spec.audience.tags() {
        let q = sql("INSERT INTO template_tags (template_id, tag) VALUES ($1, $2)")
            .bind(id.get())
            .bind(tag.as_str());
        ex.execute(q).await?;
    }
    Ok(())
}

/// The claim path's audience check, run by each backend inside its claim transaction for a
/// template with audience tags: which of `users` hold any of template `template`'s tags
/// (rows of `user_id`). One parameter per user; a batch is far below every backend's limit.
pub fn tagged_claimants(template: TemplateId, users: &[&str]) -> crate::Query {
    let mut q = sql(
        "SELECT DISTINCT u.user_id FROM user_tags u JOIN template_tags t ON t.tag = u.tag
         WHERE t.template_id = ",
    );
    q.push_bind(template.get())
        .push(" AND u.user_id IN (")
        .push_binds(users.iter().copied())
        .push(")");
    q
}

/// The claim path's test for a tag audience, as a column of its read of the template row
/// (`tagged > 0`: the template's audience is a set of tags).
pub const TAGGED_COLUMN: &str =
    "(SELECT COUNT(*) FROM template_tags tt WHERE tt.template_id = templates.id) AS tagged";

/// The claims of a batch still open (no outcome yet), and their users, for
/// [`tagged_claimants`].
pub fn open_claimants<'a>(
    claims: &'a [ClaimRequest],
    out: &[Option<ClaimOutcome>],
) -> (Vec<usize>, Vec<&'a str>) {
    let open: Vec<usize> = (0..claims.len()).filter(|i| out[*i].is_none()).collect();
    let users = open.iter().map(|&i| claims[i].user.as_str()).collect();
    (open, users)
}

/// Answers `not_eligible` to the `open` claims whose user is not among `rows` (read by
/// [`tagged_claimants`]); their indexes, for the backend to give back keys and codes.
pub fn refuse_untagged(
    claims: &[ClaimRequest],
    out: &mut [Option<ClaimOutcome>],
    open: Vec<usize>,
    rows: &[Row],
) -> StoreResult<Vec<usize>> {
    let admitted: std::collections::HashSet<String> = rows
        .iter()
        .map(|r| r.string("user_id"))
        .collect::<StoreResult<_>>()?;
    let refused: Vec<usize> = open
        .into_iter()
        .filter(|&i| !admitted.contains(claims[i].user.as_str()))
        .collect();
    for &i in &refused {
        out[i] = Some(ClaimOutcome::NotEligible);
    }
    Ok(refused)
}

fn tag(r: &Row) -> StoreResult<Tag> {
    Tag::parse(r.str("tag")?).map_err(StoreError::other)
}

#[async_trait::async_trait]
impl<B: Backend> TagStore for SqlStore<B> {
    async fn put_user_tags(&self, user: &UserId, tags: &[Tag]) -> StoreResult<()> {
        put_user_tags(&self.db, user, tags).await
    }
    async fn user_tags(&self, user: &UserId) -> StoreResult<Vec<Tag>> {
        user_tags(&self.db, user).await
    }
    async fn add_user_tags(&self, pairs: &[(UserId, Tag)]) -> StoreResult<Tagged> {
        add_user_tags(&self.db, pairs).await
    }
    async fn segment_users(&self, any: &[Tag], limit: u32) -> StoreResult<Vec<UserId>> {
        segment_users(&self.db, any, limit).await
    }
    async fn share_tag(&self, tag: &Tag, now: Timestamp) -> StoreResult<SharedTag> {
        share_tag(&self.db, tag, now).await
    }
    async fn unshare_tag(&self, tag: &Tag) -> StoreResult<bool> {
        unshare_tag(&self.db, tag).await
    }
    async fn shared_tags(&self, after: Option<&Tag>, limit: u32) -> StoreResult<Vec<SharedTag>> {
        shared_tags(&self.db, after, limit).await
    }
    async fn shared_of(&self, tags: &[Tag]) -> StoreResult<Vec<Tag>> {
        shared_of(&self.db, tags).await
    }
    async fn insert_tag_upload(
        &self,
        new: &NewTagUpload<'_>,
        now: Timestamp,
    ) -> StoreResult<(TagUpload, bool)> {
        crate::tag_uploads::insert_tag_upload(&self.db, new, now).await
    }
    async fn tag_upload(&self, id: i64) -> StoreResult<TagUpload> {
        crate::tag_uploads::tag_upload(&self.db, id).await
    }
    async fn tag_uploads(&self, page: Page) -> StoreResult<Vec<TagUpload>> {
        crate::tag_uploads::tag_uploads(&self.db, page).await
    }
    async fn open_tag_uploads(&self) -> StoreResult<Vec<OpenJob>> {
        crate::tag_uploads::open_tag_uploads(&self.db).await
    }
    async fn tag_upload_pairs(&self, id: i64) -> StoreResult<Vec<(UserId, Tag)>> {
        crate::tag_uploads::tag_upload_pairs(&self.db, id).await
    }
    async fn tag_chunk(
        &self,
        id: i64,
        pairs: &[(UserId, Tag)],
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Option<TagUpload>> {
        crate::tag_uploads::tag_chunk(&self.db, id, pairs, max, now).await
    }
}
