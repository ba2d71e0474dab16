//! [`PgDb`]: opening the database, its pool, and the helpers the area modules share.

use std::str::FromStr;
use std::time::Duration;

use coupond_domain::Timestamp;
use coupond_store::{StoreError, StoreResult};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use time::OffsetDateTime;

use crate::rows::db_err;
use crate::PgStore;

const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// The schema, embedded in the binary.
static MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Pool connections unless configured otherwise.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 16;

/// The PostgreSQL database: a connection pool on one database (and schema).
#[derive(Clone, Debug)]
pub struct PgDb {
    pub(crate) pool: PgPool,
    pub(crate) max: u32,
    /// Where the next claim batch starts looking for a stock shard: batches in flight at once
    /// start on different shards, so they do not wait on each other's (see `claims`).
    pub(crate) shard_cursor: coupond_store_sql::claims::ShardCursor,
}

pub(crate) fn dt(t: Timestamp) -> OffsetDateTime {
    t.datetime()
}

impl PgDb {
    /// Connects to `url` (`postgres://user@host/db`). Does not migrate: call
    /// [`PgDb::migrate`].
    pub async fn connect(url: &str) -> StoreResult<PgStore> {
        Self::connect_in_schema(url, None).await
    }

    /// As [`PgDb::connect`], with a pool of `max_connections` (at least 1).
    pub async fn connect_with_pool(url: &str, max_connections: u32) -> StoreResult<PgStore> {
        Self::open(url, None, max_connections).await
    }

    /// Connects with `search_path` set to `schema` (created if missing), so that several
    /// independent coupond databases (tests, tenants) can share one PostgreSQL database.
    pub async fn connect_in_schema(url: &str, schema: Option<&str>) -> StoreResult<PgStore> {
        Self::open(url, schema, DEFAULT_MAX_CONNECTIONS).await
    }

    /// Creates the database `url` names if the server has none by that name (connecting to
    /// the server's `postgres` database to do so); `true` if it created one. The name must be
    /// letters, digits and `_`.
    pub async fn create_database_if_missing(url: &str) -> StoreResult<bool> {
        let opts = PgConnectOptions::from_str(url).map_err(StoreError::other)?;
        let Some(name) = opts.get_database().map(str::to_owned) else {
            return Ok(false);
        };
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(StoreError::other(
                "to be created, a database name is letters, digits and _",
            ));
        }
        let admin = opts.database("postgres");
        let mut conn = sqlx::ConnectOptions::connect(&admin)
            .await
            .map_err(db_err)?;
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
                .bind(&name)
                .fetch_one(&mut conn)
                .await
                .map_err(db_err)?;
        if !exists {
            sqlx::query(&format!("CREATE DATABASE \"{name}\""))
                .execute(&mut conn)
                .await
                .map_err(db_err)?;
        }
        sqlx::Connection::close(conn).await.map_err(db_err)?;
        Ok(!exists)
    }

    async fn open(url: &str, schema: Option<&str>, max: u32) -> StoreResult<PgStore> {
        let max = max.max(1);
        let mut opts = PgConnectOptions::from_str(url).map_err(StoreError::other)?;
        if let Some(schema) = schema {
            if !schema
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return Err(StoreError::other("schema names are letters, digits and _"));
            }
            let admin = PgPoolOptions::new()
                .max_connections(1)
                .connect_with(opts.clone())
                .await
                .map_err(db_err)?;
            sqlx::query(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
                .execute(&admin)
                .await
                .map_err(db_err)?;
            admin.close().await;
            opts = opts.options([("search_path", schema)]);
        }
        // One connection first, outside the pool: a server that refuses or does not exist is
        // reported at once, where the pool would retry until its acquire timeout.
        let probe = sqlx::ConnectOptions::connect(&opts).await.map_err(db_err)?;
        sqlx::Connection::close(probe).await.map_err(db_err)?;
        let pool = PgPoolOptions::new()
            .max_connections(max)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(opts)
            .await
            .map_err(db_err)?;
        Ok(PgStore::new(PgDb {
            pool,
            max,
            shard_cursor: coupond_store_sql::claims::ShardCursor::new(
                std::process::id().wrapping_mul(7),
            ),
        }))
    }

    /// The newest migration applied here and the newest this build carries.
    pub async fn schema(&self) -> StoreResult<coupond_store::Schema> {
        coupond_store_sql::admin::schema(self, MIGRATIONS.iter().map(|m| m.version)).await
    }

    /// Applies the embedded migrations that have not run yet. Safe to run from several
    /// instances at once: sqlx serialises them with an advisory lock.
    pub async fn migrate(&self) -> StoreResult<()> {
        MIGRATIONS.run(&self.pool).await.map_err(StoreError::other)
    }
}
