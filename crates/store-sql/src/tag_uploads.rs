//! Bulk tag uploads ([`TagStore`](coupond_store::TagStore)'s jobs), the same on every
//! backend: insert once per idempotency key, read, list, and work a chunk of pairs in one
//! transaction with the job's progress.
//!
//! A chunk takes the job's row first (`FOR UPDATE SKIP LOCKED` where writers run at once, so
//! instances share the open jobs and one job's chunks never run at once), then the
//! `user_tags` lock every tag write takes ([`crate::tags`]).

use coupond_domain::{Actor, Tag, Timestamp, UserId};
use coupond_store::{
    IssuanceState, NewTagUpload, OpenJob, Page, StoreError, StoreResult, TagUpload, Tagged,
};

use crate::{sql, Db, Row, Work};

/// Every column of an upload but its pairs (read only by [`tag_upload_pairs`]).
const COLS: &str = "id, actor, state, line_count, requested, next_pair, added, present, \
     over_limit, invalid, invalid_lines, created_at, started_at, finished_at, key_fingerprint";

pub async fn insert_tag_upload(
    db: &dyn Db,
    new: &NewTagUpload<'_>,
    now: Timestamp,
) -> StoreResult<(TagUpload, bool)> {
    let q = sql(format!(
        "INSERT INTO tag_uploads (actor, state, pairs, line_count, requested, invalid,
                                  invalid_lines, created_at, idempotency_key, key_fingerprint)
         VALUES ($1, 'pending', $2, $3, $4, $5, $6, $7, $8, $9){} RETURNING {COLS}",
        db.dialect().on_conflict_nothing("idempotency_key")
    ))
    .bind(new.actor.to_text())
    .bind(pair_list(new.pairs))
    .bind(new.lines as i64)
    .bind(new.pairs.len() as i64)
    .bind(new.invalid as i64)
    .bind(serde_json::to_string(new.invalid_lines).map_err(StoreError::other)?)
    .bind(now)
    .bind(new.key.map(|k| k.key))
    .bind(new.key.map(|k| k.fingerprint.to_vec()));
    let key = new.key.map(|k| k.key);
    crate::issuance::insert_once(db, q, "tag_uploads", COLS, key, upload).await
}

pub async fn tag_upload(db: &dyn Db, id: i64) -> StoreResult<TagUpload> {
    let q = sql(format!("SELECT {COLS} FROM tag_uploads WHERE id = $1")).bind(id);
    upload(&db.read_one(q).await?)
}

pub async fn tag_uploads(db: &dyn Db, page: Page) -> StoreResult<Vec<TagUpload>> {
    let q = sql(format!(
        "SELECT {COLS} FROM tag_uploads WHERE id > $1 ORDER BY id LIMIT $2"
    ))
    .bind(page.after.unwrap_or(0))
    .bind(page.limit);
    db.read_all(q).await?.iter().map(upload).collect()
}

pub async fn open_tag_uploads(db: &dyn Db) -> StoreResult<Vec<OpenJob>> {
    let q =
        sql("SELECT id, actor FROM tag_uploads WHERE state IN ('pending', 'running') ORDER BY id");
    db.read_all(q)
        .await?
        .iter()
        .map(|r| {
            Ok(OpenJob {
                id: r.i64("id")?,
                owner: uploader(r.str("actor")?),
            })
        })
        .collect()
}

/// An uploader (`key:3`, `operator:5`) as a number, the same for every upload of one
/// uploader: what [`OpenJob::owner`] needs to let uploaders take turns.
fn uploader(actor: &str) -> i64 {
    use std::hash::{Hash, Hasher};
    // `DefaultHasher::new()` has fixed keys: the same actor gives the same number everywhere.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    actor.hash(&mut h);
    h.finish() as i64
}

pub async fn tag_upload_pairs(db: &dyn Db, id: i64) -> StoreResult<Vec<(UserId, Tag)>> {
    let q = sql("SELECT pairs FROM tag_uploads WHERE id = $1").bind(id);
    read_pairs(db.read_one(q).await?.bytes("pairs")?)
}

/// Adds the pairs of upload `id` from its `next_pair` on (at most `max`) and records them.
pub async fn tag_chunk(
    db: &dyn Db,
    id: i64,
    pairs: &[(UserId, Tag)],
    max: u32,
    now: Timestamp,
) -> StoreResult<Option<TagUpload>> {
    let mut tx = db.begin(Work::Background).await?;
    let lock = db.dialect().lock_rows_skip_locked();
    let q = sql(format!(
        "SELECT {COLS} FROM tag_uploads WHERE id = $1 AND state IN ('pending', 'running'){lock}"
    ))
    .bind(id);
    let Some(row) = tx.fetch_optional(q).await? else {
        return Ok(None);
    };
    let job = upload(&row)?;
    let from = usize::try_from(job.next_pair).map_err(StoreError::other)?;
    let to = pairs.len().min(from.saturating_add(max as usize));
    let done = crate::tags::add_pairs(&mut *tx, pairs.get(from..to).unwrap_or(&[])).await?;
    let finished = to >= pairs.len();
    let q = sql(format!(
        "UPDATE tag_uploads SET next_pair = $1, added = added + $2, present = present + $3,
             over_limit = over_limit + $4, state = $5, started_at = COALESCE(started_at, $6),
             finished_at = $7
         WHERE id = $8 RETURNING {COLS}"
    ))
    .bind(to as i64)
    .bind(done.added as i64)
    .bind(done.present as i64)
    .bind(done.over_limit as i64)
    .bind(if finished { "done" } else { "running" })
    .bind(now)
    .bind(finished.then_some(now))
    .bind(id);
    let job = upload(&tx.fetch_one(q).await?)?;
    tx.commit().await?;
    Ok(Some(job))
}

/// Pairs as stored: `user_id,tag` per line (neither can hold a comma or a line break).
fn pair_list(pairs: &[(UserId, Tag)]) -> Vec<u8> {
    let lines: Vec<String> = pairs
        .iter()
        .map(|(u, t)| format!("{},{}", u.as_str(), t.as_str()))
        .collect();
    lines.join("\n").into_bytes()
}

fn read_pairs(blob: &[u8]) -> StoreResult<Vec<(UserId, Tag)>> {
    let text = std::str::from_utf8(blob).map_err(StoreError::other)?;
    if text.is_empty() {
        return Ok(vec![]);
    }
    text.split('\n')
        .map(|line| {
            let (u, t) = line
                .split_once(',')
                .ok_or_else(|| StoreError::other("a stored tag pair without a comma"))?;
            Ok((
                UserId::parse(u).map_err(StoreError::other)?,
                Tag::parse(t).map_err(StoreError::other)?,
            ))
        })
        .collect()
}

fn upload(r: &Row) -> StoreResult<TagUpload> {
    let n = |c: &str| -> StoreResult<u64> { u64::try_from(r.i64(c)?).map_err(StoreError::other) };
    Ok(TagUpload {
        id: r.i64("id")?,
        actor: Actor::read(r.str("actor")?),
        state: IssuanceState::parse(r.str("state")?)
            .ok_or_else(|| StoreError::other("unknown upload state"))?,
        lines: n("line_count")?,
        requested: n("requested")?,
        next_pair: n("next_pair")?,
        done: Tagged {
            added: n("added")?,
            present: n("present")?,
            over_limit: n("over_limit")?,
        },
        invalid: n("invalid")?,
        invalid_lines: serde_json::from_str(r.str("invalid_lines")?).map_err(StoreError::other)?,
        created_at: r.time("created_at")?,
        started_at: r.opt_time("started_at")?,
        finished_at: r.opt_time("finished_at")?,
        key_fingerprint: r
            .opt_bytes("key_fingerprint")?
            .map(<[u8; 32]>::try_from)
            .transpose()
            .map_err(StoreError::other)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_round_trip() {
        let pairs = vec![
            (UserId::parse("u-1").unwrap(), Tag::parse("vip").unwrap()),
            (UserId::parse("a@b").unwrap(), Tag::parse("city:1").unwrap()),
        ];
        assert_eq!(read_pairs(&pair_list(&pairs)).unwrap(), pairs);
        assert!(read_pairs(b"").unwrap().is_empty());
        assert!(read_pairs(b"no-comma").is_err());
    }
}
