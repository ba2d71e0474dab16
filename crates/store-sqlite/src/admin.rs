//! The store's own operations on SQLite: health, settings and API keys.

use coupond_store::AdminStore;

use async_trait::async_trait;
use coupond_domain::{MerchantId, Timestamp};
use coupond_store::{ApiKey, NewApiKey, PoolStats, StoreResult};

use crate::rows::{self, db_err};
use crate::store::{us, SqliteStore};

#[async_trait]
impl AdminStore for SqliteStore {
    fn inspect(&self) -> &dyn coupond_store::InspectStore {
        self
    }

    fn backend(&self) -> &'static str {
        "sqlite"
    }

    async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1")
            .execute(&self.reader)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    fn pool_stats(&self) -> PoolStats {
        PoolStats {
            size: self.writer.size() + self.reader.size(),
            idle: (self.writer.num_idle() + self.reader.num_idle()) as u32,
            max: 1 + self.readers,
        }
    }

    async fn close(&self) {
        self.writer.close().await;
        self.reader.close().await;
    }

    async fn setting_or_init(&self, key: &str, init: &str) -> StoreResult<String> {
        sqlx::query("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING")
            .bind(key)
            .bind(init)
            .execute(&self.writer)
            .await
            .map_err(db_err)?;
        sqlx::query_scalar("SELECT value FROM settings WHERE key = ?")
            .bind(key)
            .fetch_one(&self.writer)
            .await
            .map_err(db_err)
    }

    async fn put_setting(&self, key: &str, value: &str) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO settings (key, value) VALUES (?, ?)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .bind(key)
        .bind(value)
        .execute(&self.writer)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    async fn insert_api_key(&self, k: &NewApiKey, now: Timestamp) -> StoreResult<ApiKey> {
        let row = sqlx::query(
            "INSERT INTO api_keys (hash, prefix, role, merchant_id, label, created_at)
             VALUES (?, ?, ?, ?, ?, ?) RETURNING *",
        )
        .bind(&k.hash[..])
        .bind(&k.prefix)
        .bind(k.role.as_str())
        .bind(k.merchant_id.map(MerchantId::get))
        .bind(&k.label)
        .bind(us(now))
        .fetch_one(&self.writer)
        .await
        .map_err(db_err)?;
        rows::api_key(&row)
    }

    async fn api_key_by_hash(&self, hash: &[u8; 32]) -> StoreResult<ApiKey> {
        let row = sqlx::query("SELECT * FROM api_keys WHERE hash = ?")
            .bind(&hash[..])
            .fetch_one(&self.reader)
            .await
            .map_err(db_err)?;
        rows::api_key(&row)
    }

    async fn list_api_keys(&self) -> StoreResult<Vec<ApiKey>> {
        let rows = sqlx::query("SELECT * FROM api_keys ORDER BY id")
            .fetch_all(&self.reader)
            .await
            .map_err(db_err)?;
        rows.iter().map(rows::api_key).collect()
    }

    async fn revoke_api_key(&self, id: i64, now: Timestamp) -> StoreResult<ApiKey> {
        let row = sqlx::query(
            "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? RETURNING *",
        )
        .bind(us(now))
        .bind(id)
        .fetch_one(&self.writer)
        .await
        .map_err(db_err)?;
        rows::api_key(&row)
    }
}
