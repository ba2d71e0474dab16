//! [`MysqlDb`]: opening the database, its pool and its sessions' settings.

use std::str::FromStr;
use std::time::Duration;

use coupond_store::{StoreError, StoreResult};
use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions};
use sqlx::{Connection, Executor};

use crate::ids::IdBlocks;
use crate::rows::db_err;
use crate::MysqlStore;

const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// The schema, embedded in the binary.
static MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Pool connections unless configured otherwise.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 16;
/// Connections that only draw coupon ids (see `ids`).
pub(crate) const ID_CONNECTIONS: u32 = 2;

/// Every session: identifiers in double quotes and `||` as concatenation, as the shared SQL is
/// written (sqlx adds `PIPES_AS_CONCAT` itself), and `READ COMMITTED`, so that locking reads
/// take no gap locks and each statement sees what committed before it, as on PostgreSQL.
const SESSION: [&str; 2] = [
    "SET SESSION sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES,PIPES_AS_CONCAT,STRICT_ALL_TABLES')",
    "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
];

/// The MySQL database: a connection pool on one database.
#[derive(Clone, Debug)]
pub struct MysqlDb {
    pub(crate) pool: MySqlPool,
    pub(crate) max: u32,
    /// Coupon ids, drawn a block at a time on connections of their own (see `ids`); shared by
    /// the store's clones, so that they hand out one block.
    pub(crate) ids: std::sync::Arc<IdBlocks>,
    /// Where the next claim batch starts looking for a stock shard: batches in flight at once
    /// start on different shards, so they do not wait on each other's (see `claims`).
    pub(crate) shard_cursor: coupond_store_sql::claims::ShardCursor,
}

impl MysqlDb {
    /// Connects to `url` (`mysql://user@host/db`). Does not migrate: call
    /// [`MysqlDb::migrate`].
    pub async fn connect(url: &str) -> StoreResult<MysqlStore> {
        Self::open(url, None, DEFAULT_MAX_CONNECTIONS).await
    }

    /// As [`MysqlDb::connect`], with a pool of `max_connections` (at least 1).
    pub async fn connect_with_pool(url: &str, max_connections: u32) -> StoreResult<MysqlStore> {
        Self::open(url, None, max_connections).await
    }

    /// Connects to database `database` of the server at `url` instead of the URL's own,
    /// creating it if missing, so that several independent coupond databases (tests) can share
    /// one server.
    pub async fn connect_in_database(url: &str, database: Option<&str>) -> StoreResult<MysqlStore> {
        Self::open(url, database, DEFAULT_MAX_CONNECTIONS).await
    }

    async fn open(url: &str, database: Option<&str>, max: u32) -> StoreResult<MysqlStore> {
        let max = max.max(1);
        let mut opts = MySqlConnectOptions::from_str(url)
            .map_err(StoreError::other)?
            .charset("utf8mb4");
        if let Some(name) = database {
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(StoreError::other(
                    "database names are letters, digits and _",
                ));
            }
            let mut admin = sqlx::MySqlConnection::connect_with(&opts)
                .await
                .map_err(db_err)?;
            admin
                .execute(format!("CREATE DATABASE IF NOT EXISTS {name}").as_str())
                .await
                .map_err(db_err)?;
            admin.close().await.map_err(db_err)?;
            opts = opts.database(name);
        }
        let pool = Self::pool(max, opts.clone()).await?;
        let ids = Self::pool(ID_CONNECTIONS, opts).await?;
        Ok(MysqlStore::new(MysqlDb {
            pool,
            max,
            ids: std::sync::Arc::new(IdBlocks::new(ids)),
            shard_cursor: coupond_store_sql::claims::ShardCursor::new(std::process::id()),
        }))
    }

    async fn pool(max: u32, opts: MySqlConnectOptions) -> StoreResult<MySqlPool> {
        MySqlPoolOptions::new()
            .max_connections(max)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .after_connect(|conn, _meta| {
                Box::pin(async move {
                    for s in SESSION {
                        conn.execute(s).await?;
                    }
                    Ok(())
                })
            })
            .connect_with(opts)
            .await
            .map_err(db_err)
    }

    /// Closes both pools.
    pub(crate) async fn close_pools(&self) {
        self.pool.close().await;
        self.ids.pool().close().await;
    }

    /// The newest migration applied here and the newest this build carries.
    pub async fn schema(&self) -> StoreResult<coupond_store::Schema> {
        coupond_store_sql::admin::schema(self, MIGRATIONS.iter().map(|m| m.version)).await
    }

    /// Applies the embedded migrations that have not run yet. Safe to run from several
    /// instances at once: sqlx serialises them with a named lock.
    pub async fn migrate(&self) -> StoreResult<()> {
        MIGRATIONS.run(&self.pool).await.map_err(StoreError::other)
    }
}
