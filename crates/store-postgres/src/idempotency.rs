//! The idempotency records of write routes on PostgreSQL: start (or replay, or refuse) a
//! keyed request, store its answer, forget it after a 5xx, purge expired ones.

use async_trait::async_trait;
use coupond_domain::Timestamp;
use coupond_store::checkout::{IdempotencyStart, StoredAnswer};
use coupond_store::IdempotencyStore;
use coupond_store::{IdempotencyKey, StoreError, StoreResult};

use crate::rows::db_err;
use crate::store::{dt, PgStore};

#[async_trait]
impl IdempotencyStore for PgStore {
    async fn idempotency_start(
        &self,
        key: &IdempotencyKey,
        now: Timestamp,
        stale_before: Timestamp,
        expires: Timestamp,
    ) -> StoreResult<IdempotencyStart> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let inserted = sqlx::query(
            "INSERT INTO idempotency (key, fingerprint, created_at, expires_at)
             VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO NOTHING",
        )
        .bind(&key.key)
        .bind(&key.fingerprint[..])
        .bind(dt(now))
        .bind(dt(expires))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?
        .rows_affected()
            == 1;
        if !inserted {
            let r = sqlx::query("SELECT * FROM idempotency WHERE key = $1 FOR UPDATE")
                .bind(&key.key)
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err)?;
            let get_ts = |col: &str| -> StoreResult<Timestamp> {
                let t: time::OffsetDateTime = sqlx::Row::try_get(&r, col).map_err(db_err)?;
                Timestamp::from_datetime(t).ok_or_else(|| StoreError::other("instant out of range"))
            };
            let fingerprint: Vec<u8> = sqlx::Row::try_get(&r, "fingerprint").map_err(db_err)?;
            let status: Option<i32> = sqlx::Row::try_get(&r, "status").map_err(db_err)?;
            let expired = get_ts("expires_at")? <= now;
            let abandoned = status.is_none() && get_ts("created_at")? <= stale_before;
            if !expired && fingerprint != key.fingerprint {
                return Ok(IdempotencyStart::Mismatch);
            }
            if !expired {
                if let Some(status) = status {
                    return Ok(IdempotencyStart::Replay(StoredAnswer {
                        status: u16::try_from(status).map_err(StoreError::other)?,
                        content_type: sqlx::Row::try_get::<Option<String>, _>(&r, "content_type")
                            .map_err(db_err)?
                            .unwrap_or_default(),
                        body: sqlx::Row::try_get::<Option<Vec<u8>>, _>(&r, "body")
                            .map_err(db_err)?
                            .unwrap_or_default(),
                    }));
                }
                if !abandoned {
                    return Ok(IdempotencyStart::InFlight);
                }
            }
            sqlx::query(
                "UPDATE idempotency SET fingerprint = $2, status = NULL, content_type = NULL,
                     body = NULL, created_at = $3, expires_at = $4
                 WHERE key = $1",
            )
            .bind(&key.key)
            .bind(&key.fingerprint[..])
            .bind(dt(now))
            .bind(dt(expires))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        tx.commit().await.map_err(db_err)?;
        Ok(IdempotencyStart::New)
    }

    async fn idempotency_finish(&self, key: &str, answer: &StoredAnswer) -> StoreResult<()> {
        sqlx::query(
            "UPDATE idempotency SET status = $1, content_type = $2, body = $3 WHERE key = $4",
        )
        .bind(i32::from(answer.status))
        .bind(&answer.content_type)
        .bind(&answer.body)
        .bind(key)
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    async fn idempotency_abandon(&self, key: &str) -> StoreResult<()> {
        sqlx::query("DELETE FROM idempotency WHERE key = $1 AND status IS NULL")
            .bind(key)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn idempotency_purge(&self, now: Timestamp) -> StoreResult<u64> {
        Ok(
            sqlx::query("DELETE FROM idempotency WHERE expires_at <= $1")
                .bind(dt(now))
                .execute(&self.pool)
                .await
                .map_err(db_err)?
                .rows_affected(),
        )
    }
}
