//! [`SeenStore`](coupond_store::SeenStore) on every backend: users'
//! last-seen instants in `user_activity`, one row per user, only ever moved later.

use std::collections::BTreeMap;

use coupond_domain::{Tag, Timestamp, UserId};
use coupond_store::{StoreError, StoreResult};

use crate::backend::{Backend, SqlStore};
use crate::{sql, Db, Dialect, Row, Work};
use coupond_store::SeenStore;

/// Rows per statement: two parameters each, far below every backend's limit.
const CHUNK: usize = 500;

/// Appended to the multi-row insert: a user already stored keeps the later instant.
fn keep_later(d: Dialect) -> &'static str {
    match d {
        Dialect::Postgres => {
            " ON CONFLICT (user_id) DO UPDATE \
             SET last_seen_at = GREATEST(user_activity.last_seen_at, excluded.last_seen_at)"
        }
        Dialect::Sqlite => {
            " ON CONFLICT (user_id) DO UPDATE \
             SET last_seen_at = MAX(last_seen_at, excluded.last_seen_at)"
        }
        Dialect::Mysql => {
            " ON DUPLICATE KEY UPDATE last_seen_at = GREATEST(last_seen_at, VALUES(last_seen_at))"
        }
    }
}

/// Every `(user, instant)` in one background transaction, users in id order (so two
/// instances flushing overlapping users lock their rows in the same order).
pub async fn record_seen(db: &dyn Db, seen: &[(UserId, Timestamp)]) -> StoreResult<()> {
    let mut latest: BTreeMap<&str, Timestamp> = BTreeMap::new();
    for (user, at) in seen {
        let e = latest.entry(user.as_str()).or_insert(*at);
        *e = (*e).max(*at);
    }
    if latest.is_empty() {
        return Ok(());
    }
    let rows: Vec<(&str, Timestamp)> = latest.into_iter().collect();
    let mut tx = db.begin(Work::Background).await?;
    for chunk in rows.chunks(CHUNK) {
        let mut q = sql("INSERT INTO user_activity (user_id, last_seen_at) VALUES ");
        for (i, (user, at)) in chunk.iter().enumerate() {
            q.push(if i == 0 { "(" } else { ", (" });
            q.push_bind(*user).push(", ").push_bind(*at).push(")");
        }
        q.push(keep_later(db.dialect()));
        tx.execute(q).await?;
    }
    tx.commit().await
}

pub async fn last_seen(db: &dyn Db, user: &UserId) -> StoreResult<Option<Timestamp>> {
    let q = sql("SELECT last_seen_at FROM user_activity WHERE user_id = $1").bind(user.as_str());
    match db.read_optional(q).await? {
        Some(r) => Ok(Some(r.time("last_seen_at")?)),
        None => Ok(None),
    }
}

/// Of `users`, those seen at or after `since`, a chunk of ids per read.
pub async fn seen_among(
    db: &dyn Db,
    users: &[UserId],
    since: Timestamp,
) -> StoreResult<Vec<UserId>> {
    let mut out = Vec::new();
    for chunk in users.chunks(CHUNK) {
        let mut q =
            sql("SELECT user_id FROM user_activity WHERE last_seen_at >= $1 AND user_id IN (")
                .bind(since);
        q.push_binds(chunk.iter().map(UserId::as_str)).push(")");
        for r in db.read_all(q).await? {
            out.push(user(&r)?);
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The users of a segment seen at or after `since`: `user_tags` joined to `user_activity` by
/// its key.
pub async fn active_segment_users(
    db: &dyn Db,
    any: &[Tag],
    since: Timestamp,
    limit: u32,
) -> StoreResult<Vec<UserId>> {
    if any.is_empty() {
        return Ok(Vec::new());
    }
    // At most 20 tags: one parameter each.
    let mut q = sql("SELECT DISTINCT t.user_id FROM user_tags t \
         JOIN user_activity a ON a.user_id = t.user_id WHERE t.tag IN (");
    q.push_binds(any.iter().map(Tag::as_str))
        .push(") AND a.last_seen_at >= ")
        .push_bind(since)
        .push(" ORDER BY t.user_id LIMIT ")
        .push_bind(i64::from(limit));
    db.read_all(q).await?.iter().map(user).collect()
}

fn user(r: &Row) -> StoreResult<UserId> {
    UserId::parse(r.str("user_id")?).map_err(StoreError::other)
}

#[async_trait::async_trait]
impl<B: Backend> SeenStore for SqlStore<B> {
    async fn record_seen(&self, seen: &[(UserId, Timestamp)]) -> StoreResult<()> {
        record_seen(&self.db, seen).await
    }
    async fn last_seen(&self, user: &UserId) -> StoreResult<Option<Timestamp>> {
        last_seen(&self.db, user).await
    }
    async fn seen_among(&self, users: &[UserId], since: Timestamp) -> StoreResult<Vec<UserId>> {
        seen_among(&self.db, users, since).await
    }
    async fn active_segment_users(
        &self,
        any: &[Tag],
        since: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<UserId>> {
        active_segment_users(&self.db, any, since, limit).await
    }
}
