//! [`SqliteDb`]: opening the database, its pools, and the helpers the area modules share.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use coupond_domain::Timestamp;
use coupond_store::{StoreError, StoreResult};
use coupond_store_sql::Work;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::Sqlite;

use crate::gate::Gate;
use crate::rows::db_err;
use crate::threads::{self, ConnThreads};
use crate::writer;
use crate::SqliteStore;

/// Reader connections unless configured otherwise.
pub const DEFAULT_READERS: u32 = 4;

/// The schema, embedded in the binary.
static MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Wallet reader threads at most, however many reader connections are configured: each is an
/// OS thread with its own connection, and a few keep up with the cores a server has.
const WALLET_READERS_MAX: u32 = 16;
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// The SQLite store: one writer connection, a few readers, one database file.
#[derive(Clone, Debug)]
pub struct SqliteDb {
    /// Exactly one connection: SQLite has one writer, so writes queue here, in process,
    /// instead of failing on the file lock.
    pub(crate) writer: SqlitePool,
    /// Readers never block on the writer in WAL mode.
    pub(crate) reader: SqlitePool,
    /// The reader pool's size.
    pub(crate) readers: u32,
    /// Requests before background work on the writer.
    pub(crate) gate: std::sync::Arc<Gate>,
    /// The claim path's own connection and thread (see `writer`).
    pub(crate) claims: std::sync::Arc<ConnThreads>,
    /// As many read-only connections as `readers` (at most [`WALLET_READERS_MAX`]), each on
    /// a thread of its own, for the wallet (see `claims::user_coupons`).
    pub(crate) wallet: std::sync::Arc<ConnThreads>,
}

impl SqliteDb {
    /// Opens (creating if missing, with its folder) the database at `url`
    /// (`sqlite://path/to/file.db`), as a store. Does not migrate: call [`SqliteDb::migrate`].
    pub async fn connect(url: &str) -> StoreResult<SqliteStore> {
        Self::connect_with_readers(url, DEFAULT_READERS).await
    }

    /// As [`SqliteDb::connect`], with `readers` reader connections (at least 1; the writer
    /// is always one).
    pub async fn connect_with_readers(url: &str, readers: u32) -> StoreResult<SqliteStore> {
        let readers = readers.max(1);
        let opts = SqliteConnectOptions::from_str(url)
            .map_err(StoreError::other)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let file = opts.get_filename();
        if is_memory(file) {
            // Its readers and writers would each see a database of their own.
            return Err(StoreError::other(
                "an in-memory SQLite database is not supported: give a file path",
            ));
        }
        if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(StoreError::other)?;
        }
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(opts.clone())
            .await
            .map_err(db_err)?;
        // After the sqlx writer: it created the file and set WAL.
        let claims = std::sync::Arc::new(writer::open(file, BUSY_TIMEOUT)?);
        let wallet = threads::open_readers(file, readers.min(WALLET_READERS_MAX), BUSY_TIMEOUT)?;
        let wallet = std::sync::Arc::new(wallet);
        let reader = SqlitePoolOptions::new()
            .max_connections(readers)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(opts.read_only(true))
            .await
            .map_err(db_err)?;
        Ok(SqliteStore::new(SqliteDb {
            writer,
            reader,
            readers,
            gate: std::sync::Arc::default(),
            claims,
            wallet,
        }))
    }

    /// Whether the database file at `url` exists (an in-memory database always does), without
    /// creating it.
    pub fn exists(url: &str) -> StoreResult<bool> {
        let opts = SqliteConnectOptions::from_str(url).map_err(StoreError::other)?;
        let file = opts.get_filename();
        Ok(is_memory(file) || file.exists())
    }

    /// The newest migration applied here and the newest this build carries.
    pub async fn schema(&self) -> StoreResult<coupond_store::Schema> {
        coupond_store_sql::admin::schema(self, MIGRATIONS.iter().map(|m| m.version)).await
    }

    /// Writes a consistent copy of the whole database to `path` (SQLite's `VACUUM INTO`, on a
    /// reader connection: the server keeps serving, and the copy is the database as of one
    /// read transaction). `path` must not exist.
    pub async fn backup_to(&self, path: &std::path::Path) -> StoreResult<()> {
        let target = path.to_str().ok_or_else(|| {
            StoreError::other(std::io::Error::other("the backup path is not UTF-8"))
        })?;
        sqlx::query("VACUUM INTO ?")
            .bind(target)
            .execute(&self.reader)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    /// Applies the embedded migrations that have not run yet, then the one change a migration
    /// file cannot make (`ids`: ids never reused).
    pub async fn migrate(&self) -> StoreResult<()> {
        MIGRATIONS
            .run(&self.writer)
            .await
            .map_err(StoreError::other)?;
        let mut conn = self.writer.acquire().await.map_err(db_err)?;
        crate::ids::never_reused(&mut conn).await
    }

    /// A write transaction for a request: it goes before background work waiting for the
    /// writer.
    pub(crate) async fn begin(&self) -> StoreResult<sqlx::Transaction<'static, Sqlite>> {
        let _waiting = self.gate.request();
        self.writer
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db_err)
    }

    /// A write transaction for background work, with its turn (keep it until the transaction
    /// ends): one background transaction at a time, and requests waiting for the writer go
    /// first (see [`Gate`]).
    pub(crate) async fn begin_background(
        &self,
    ) -> StoreResult<(
        Option<tokio::sync::SemaphorePermit<'_>>,
        sqlx::Transaction<'static, Sqlite>,
    )> {
        let turn = self.gate.background_turn().await;
        let tx = self
            .writer
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db_err)?;
        Ok((turn, tx))
    }
}

impl SqliteDb {
    /// Runs `f` on the claim writer's thread (see `writer`), holding the sqlx writer connection
    /// meanwhile, with `work`'s place in line (see [`Gate`]): so no other write of this
    /// process waits on the file lock while `f`'s transaction holds it.
    ///
    /// The holding runs in a task of its own: a caller that stops waiting (a client gone, a
    /// request timeout) does not end it, so the connection is held until the job has ended.
    /// The job then commits or not on its own; its caller is not told, as with a commit that
    /// lands just before a timeout (idempotency keys are the retry's safeguard).
    pub(crate) async fn on_writer<R, F>(&self, work: Work, f: F) -> StoreResult<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut rusqlite::Connection) -> StoreResult<R> + Send + 'static,
    {
        let store = self.clone();
        tokio::spawn(async move {
            // A request counts as waiting until it holds the writer (as in `begin`).
            let waiting = (work == Work::Request).then(|| store.gate.request());
            let _turn = match work {
                Work::Request => None,
                Work::Background => store.gate.background_turn().await,
            };
            let _held = store.writer.acquire().await.map_err(db_err)?;
            drop(waiting);
            store.claims.run(f).await
        })
        .await
        .map_err(StoreError::other)?
    }
}

fn is_memory(p: &Path) -> bool {
    // sqlx names an in-memory database `file:sqlx-in-memory-N` (a shared-cache URI).
    p.as_os_str() == ":memory:"
        || p.as_os_str().is_empty()
        || p.to_str()
            .is_some_and(|s| s.starts_with("file:sqlx-in-memory-"))
}

pub(crate) fn us(t: Timestamp) -> i64 {
    t.unix_micros()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_in_memory_database_is_refused_by_name() {
        for url in ["sqlite::memory:", "sqlite://:memory:"] {
            let err = SqliteDb::connect(url).await.unwrap_err();
            assert!(
                std::error::Error::source(&err)
                    .is_some_and(|e| e.to_string().contains("in-memory")),
                "{url}: {err:?}"
            );
        }
    }
}
