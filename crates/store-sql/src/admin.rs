//! The store's own operations ([`AdminStore`](coupond_store::AdminStore)): health, settings
//! and API keys, on every backend. Pool figures and closing are the backend's ([`Db`]).

use coupond_domain::{MerchantId, OperatorId, Timestamp};
use coupond_store::{ApiKey, ConsoleSession, NewApiKey, Role, Schema, StoreError, StoreResult};

use crate::backend::{Backend, SqlStore};
use crate::{sql, Db, Dialect, Row, Work};
use coupond_store::AdminStore;
use coupond_store::InspectStore;
use coupond_store::PoolStats;

pub async fn ping(db: &dyn Db) -> StoreResult<()> {
    db.read_one(sql("SELECT 1 AS one")).await.map(drop)
}

pub async fn setting_or_init(db: &dyn Db, key: &str, init: &str) -> StoreResult<String> {
    let mut tx = db.begin(Work::Request).await?;
    let skip = db.dialect().on_conflict_nothing("value");
    tx.execute(
        sql(format!(
            "INSERT INTO settings (\"key\", value) VALUES ($1, $2){skip}"
        ))
        .bind(key)
        .bind(init),
    )
    .await?;
    let row = tx
        .fetch_one(sql("SELECT value FROM settings WHERE \"key\" = $1").bind(key))
        .await?;
    tx.commit().await?;
    row.string("value")
}

pub async fn put_setting(db: &dyn Db, key: &str, value: &str) -> StoreResult<()> {
    let replace = db.dialect().on_conflict_update("\"key\"", &["value"]);
    db.write(
        sql(format!(
            "INSERT INTO settings (\"key\", value) VALUES ($1, $2){replace}"
        ))
        .bind(key)
        .bind(value),
    )
    .await
    .map(drop)
}

pub async fn insert_api_key(db: &dyn Db, k: &NewApiKey, now: Timestamp) -> StoreResult<ApiKey> {
    let row = db
        .write_one(
            sql(
                "INSERT INTO api_keys (hash, prefix, role, merchant_id, label, created_at, operator_id)
                 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *",
            )
            .bind(&k.hash[..])
            .bind(&k.prefix)
            .bind(k.role.as_str())
            .bind(k.merchant_id.map(MerchantId::get))
            .bind(&k.label)
            .bind(now)
            .bind(k.operator_id.map(OperatorId::get)),
        )
        .await?;
    api_key_row(&row)
}

/// The key with this hash, unless the person who made it is disabled (then `NotFound`, as an
/// unknown key: it opens nothing).
pub async fn api_key_by_hash(db: &dyn Db, hash: &[u8; 32]) -> StoreResult<ApiKey> {
    let row = db
        .read_one(
            sql("SELECT * FROM api_keys k WHERE hash = $1 AND NOT EXISTS
                 (SELECT 1 FROM operators o WHERE o.id = k.operator_id
                  AND o.disabled_at IS NOT NULL)")
            .bind(&hash[..]),
        )
        .await?;
    api_key_row(&row)
}

pub async fn list_api_keys(db: &dyn Db) -> StoreResult<Vec<ApiKey>> {
    let rows = db
        .read_all(sql("SELECT * FROM api_keys ORDER BY id"))
        .await?;
    rows.iter().map(api_key_row).collect()
}

pub async fn revoke_api_key(db: &dyn Db, id: i64, now: Timestamp) -> StoreResult<ApiKey> {
    let mut tx = db.begin(Work::Request).await?;
    let row = tx
        .fetch_optional(
            sql("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2 RETURNING *")
                .bind(now)
                .bind(id),
        )
        .await?
        .ok_or(StoreError::NotFound)?;
    // Console sessions signed in with it end with it, on every instance.
    tx.execute(sql("DELETE FROM console_sessions WHERE key_hash = $1").bind(row.bytes("hash")?))
        .await?;
    tx.commit().await?;
    api_key_row(&row)
}

/// Makes key `id` belong to `operator` (or nobody), in one statement.
pub async fn set_api_key_operator(
    db: &dyn Db,
    id: i64,
    operator: Option<OperatorId>,
) -> StoreResult<ApiKey> {
    let row = db
        .write_one(
            sql("UPDATE api_keys SET operator_id = $1 WHERE id = $2 RETURNING *")
                .bind(operator.map(OperatorId::get))
                .bind(id),
        )
        .await?;
    api_key_row(&row)
}

pub async fn insert_console_session(
    db: &dyn Db,
    id: &[u8; 32],
    s: &ConsoleSession,
) -> StoreResult<()> {
    let mut tx = db.begin(Work::Request).await?;
    // Sessions are made only by signing in with a valid key; expired ones go here, so the
    // table holds at most what signed in within one session lifetime.
    tx.execute(sql("DELETE FROM console_sessions WHERE expires_at <= $1").bind(s.created_at))
        .await?;
    tx.execute(
        sql(
            "INSERT INTO console_sessions (id, key_hash, operator_id, csrf, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&id[..])
        .bind(&s.key_hash[..])
        .bind(s.operator_id.map(OperatorId::get))
        .bind(&s.csrf)
        .bind(s.created_at)
        .bind(s.expires_at),
    )
    .await?;
    tx.commit().await
}

pub async fn console_session(
    db: &dyn Db,
    id: &[u8; 32],
    now: Timestamp,
) -> StoreResult<Option<ConsoleSession>> {
    let row = db
        .read_optional(
            sql("SELECT * FROM console_sessions WHERE id = $1 AND expires_at > $2")
                .bind(&id[..])
                .bind(now),
        )
        .await?;
    let Some(r) = row else { return Ok(None) };
    let key_hash: [u8; 32] = r
        .bytes("key_hash")?
        .try_into()
        .map_err(|_| StoreError::other("a console session's key hash is not 32 bytes"))?;
    Ok(Some(ConsoleSession {
        key_hash,
        operator_id: r
            .opt_i64("operator_id")?
            .map(|v| OperatorId::new(v).map_err(StoreError::other))
            .transpose()?,
        csrf: r.string("csrf")?,
        created_at: r.time("created_at")?,
        expires_at: r.time("expires_at")?,
    }))
}

pub async fn end_console_session(db: &dyn Db, id: &[u8; 32]) -> StoreResult<()> {
    db.write(sql("DELETE FROM console_sessions WHERE id = $1").bind(&id[..]))
        .await
        .map(drop)
}

fn api_key_row(r: &Row) -> StoreResult<ApiKey> {
    Ok(ApiKey {
        id: r.i64("id")?,
        prefix: r.string("prefix")?,
        role: Role::parse(r.str("role")?).ok_or_else(|| StoreError::other("unknown role"))?,
        merchant_id: r
            .opt_i64("merchant_id")?
            .map(|v| MerchantId::new(v).map_err(StoreError::other))
            .transpose()?,
        label: r.string("label")?,
        created_at: r.time("created_at")?,
        revoked_at: r.opt_time("revoked_at")?,
        operator_id: r
            .opt_i64("operator_id")?
            .map(|v| OperatorId::new(v).map_err(StoreError::other))
            .transpose()?,
    })
}

/// The newest migration applied to `db` (from sqlx's table, if there is one yet) and the newest
/// of `known`, the versions its build carries.
pub async fn schema(db: &dyn Db, known: impl IntoIterator<Item = i64>) -> StoreResult<Schema> {
    let table = match db.dialect() {
        Dialect::Sqlite => "SELECT 1 AS one FROM sqlite_master WHERE type = 'table' AND name = $1",
        Dialect::Postgres => "SELECT 1 AS one WHERE to_regclass($1) IS NOT NULL",
        Dialect::Mysql => {
            "SELECT 1 AS one FROM information_schema.tables
             WHERE table_schema = DATABASE() AND table_name = $1"
        }
    };
    let applied = match db
        .read_optional(sql(table).bind("_sqlx_migrations"))
        .await?
    {
        Some(_) => {
            let q = sql("SELECT MAX(version) AS v FROM _sqlx_migrations WHERE success");
            db.read_one(q).await?.opt_i64("v")?
        }
        None => None,
    };
    let known = known.into_iter().max().unwrap_or(0);
    Ok(Schema { applied, known })
}

#[async_trait::async_trait]
impl<B: Backend> AdminStore for SqlStore<B> {
    fn backend(&self) -> &'static str {
        self.db.name()
    }
    async fn ping(&self) -> StoreResult<()> {
        ping(&self.db).await
    }
    fn pool_stats(&self) -> PoolStats {
        self.db.pool_stats()
    }
    async fn close(&self) {
        self.db.close().await
    }
    async fn setting_or_init(&self, key: &str, init: &str) -> StoreResult<String> {
        setting_or_init(&self.db, key, init).await
    }
    async fn put_setting(&self, key: &str, value: &str) -> StoreResult<()> {
        put_setting(&self.db, key, value).await
    }
    async fn insert_api_key(&self, key: &NewApiKey, now: Timestamp) -> StoreResult<ApiKey> {
        insert_api_key(&self.db, key, now).await
    }
    async fn api_key_by_hash(&self, hash: &[u8; 32]) -> StoreResult<ApiKey> {
        api_key_by_hash(&self.db, hash).await
    }
    async fn list_api_keys(&self) -> StoreResult<Vec<ApiKey>> {
        list_api_keys(&self.db).await
    }
    async fn revoke_api_key(&self, id: i64, now: Timestamp) -> StoreResult<ApiKey> {
        revoke_api_key(&self.db, id, now).await
    }
    async fn set_api_key_operator(
        &self,
        id: i64,
        operator: Option<OperatorId>,
    ) -> StoreResult<ApiKey> {
        set_api_key_operator(&self.db, id, operator).await
    }
    async fn insert_console_session(&self, id: &[u8; 32], s: &ConsoleSession) -> StoreResult<()> {
        insert_console_session(&self.db, id, s).await
    }
    async fn console_session(
        &self,
        id: &[u8; 32],
        now: Timestamp,
    ) -> StoreResult<Option<ConsoleSession>> {
        console_session(&self.db, id, now).await
    }
    async fn end_console_session(&self, id: &[u8; 32]) -> StoreResult<()> {
        end_console_session(&self.db, id).await
    }
    fn inspect(&self) -> &dyn InspectStore {
        self
    }
}
