//! The idempotency records of write routes ([`IdempotencyStore`]), on every backend: start
//! (or replay, or refuse) a keyed request, store its answer, forget it after a 5xx, purge
//! expired ones.
//!
//! A start inserts the key if it is new; otherwise it reads the record, locking it where
//! writers run at once (a concurrent start with the same key waits), and decides from it.
//!
//! [`IdempotencyStore`]: coupond_store::IdempotencyStore

use coupond_domain::Timestamp;
use coupond_store::checkout::{IdempotencyStart, StoredAnswer};
use coupond_store::{IdempotencyKey, StoreError, StoreResult};

use crate::backend::{Backend, SqlStore};
use crate::{sql, Db, Row, Work};
use coupond_store::IdempotencyStore;

/// Starts a request with `key`: new (or taking over an expired or abandoned record), a replay
/// of the answer recorded, still in flight, or a key reused for another request.
pub async fn idempotency_start(
    db: &dyn Db,
    key: &IdempotencyKey,
    now: Timestamp,
    stale_before: Timestamp,
    expires: Timestamp,
) -> StoreResult<IdempotencyStart> {
    let d = db.dialect();
    let mut tx = db.begin(Work::Request).await?;
    let insert = sql(format!(
        "INSERT INTO idempotency (\"key\", fingerprint, created_at, expires_at)
         VALUES ($1, $2, $3, $4){}",
        d.on_conflict_nothing("\"key\"")
    ))
    .bind(key.key.as_str())
    .bind(&key.fingerprint[..])
    .bind(now)
    .bind(expires);
    if tx.execute(insert).await? == 1 {
        tx.commit().await?;
        return Ok(IdempotencyStart::New);
    }
    let q = sql(format!(
        "SELECT * FROM idempotency WHERE \"key\" = $1{}",
        d.lock_rows(false)
    ))
    .bind(key.key.as_str());
    let r = tx.fetch_one(q).await?;
    if let Some(earlier) = earlier(&r, key, now, stale_before)? {
        return Ok(earlier);
    }
    tx.execute(
        sql(
            "UPDATE idempotency SET fingerprint = $2, status = NULL, content_type = NULL,
                 body = NULL, created_at = $3, expires_at = $4
             WHERE \"key\" = $1",
        )
        .bind(key.key.as_str())
        .bind(&key.fingerprint[..])
        .bind(now)
        .bind(expires),
    )
    .await?;
    tx.commit().await?;
    Ok(IdempotencyStart::New)
}

/// What the record `r` of `key` answers, unless it has expired or was abandoned (its request
/// never finished, and started at `stale_before` or earlier): then `None`, and it is taken.
fn earlier(
    r: &Row,
    key: &IdempotencyKey,
    now: Timestamp,
    stale_before: Timestamp,
) -> StoreResult<Option<IdempotencyStart>> {
    if r.time("expires_at")? <= now {
        return Ok(None);
    }
    if r.bytes("fingerprint")? != key.fingerprint {
        return Ok(Some(IdempotencyStart::Mismatch));
    }
    if let Some(status) = r.opt_i64("status")? {
        return Ok(Some(IdempotencyStart::Replay(StoredAnswer {
            status: u16::try_from(status).map_err(StoreError::other)?,
            content_type: r.opt_string("content_type")?.unwrap_or_default(),
            body: r.opt_bytes("body")?.map(<[u8]>::to_vec).unwrap_or_default(),
        })));
    }
    // Still running, unless its process died long ago.
    if r.time("created_at")? > stale_before {
        return Ok(Some(IdempotencyStart::InFlight));
    }
    Ok(None)
}

/// Records the answer of a request started with [`idempotency_start`].
pub async fn idempotency_finish(db: &dyn Db, key: &str, answer: &StoredAnswer) -> StoreResult<()> {
    db.write(
        sql("UPDATE idempotency SET status = $1, content_type = $2, body = $3 WHERE \"key\" = $4")
            .bind(i64::from(answer.status))
            .bind(answer.content_type.as_str())
            .bind(answer.body.as_slice())
            .bind(key),
    )
    .await
    .map(drop)
}

/// Forgets a request that did not finish (a 5xx), so a retry runs again.
pub async fn idempotency_abandon(db: &dyn Db, key: &str) -> StoreResult<()> {
    db.write(sql("DELETE FROM idempotency WHERE \"key\" = $1 AND status IS NULL").bind(key))
        .await
        .map(drop)
}

/// Removes the records expired at `now`; how many.
pub async fn idempotency_purge(db: &dyn Db, now: Timestamp) -> StoreResult<u64> {
    let mut tx = db.begin(Work::Background).await?;
    let purged = tx
        .execute(sql("DELETE FROM idempotency WHERE expires_at <= $1").bind(now))
        .await?;
    tx.commit().await?;
    Ok(purged)
}

#[async_trait::async_trait]
impl<B: Backend> IdempotencyStore for SqlStore<B> {
    async fn idempotency_start(
        &self,
        key: &IdempotencyKey,
        now: Timestamp,
        stale_before: Timestamp,
        expires: Timestamp,
    ) -> StoreResult<IdempotencyStart> {
        idempotency_start(&self.db, key, now, stale_before, expires).await
    }
    async fn idempotency_finish(&self, key: &str, answer: &StoredAnswer) -> StoreResult<()> {
        idempotency_finish(&self.db, key, answer).await
    }
    async fn idempotency_abandon(&self, key: &str) -> StoreResult<()> {
        idempotency_abandon(&self.db, key).await
    }
    async fn idempotency_purge(&self, now: Timestamp) -> StoreResult<u64> {
        idempotency_purge(&self.db, now).await
    }
}
