//! [`SqliteStore`]: opening the database, its pools, and the helpers the area modules share.

use coupond_store::Conflict;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use coupond_domain::{ActivityId, ActivityStatus, TemplateStatus, Timestamp};
use coupond_store::{StoreError, StoreResult};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{QueryBuilder, Sqlite};

use crate::gate::Gate;
use crate::rows::db_err;

/// Reader connections unless configured otherwise.
pub const DEFAULT_READERS: u32 = 4;
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) const TEMPLATE_COLS: &str = "id, merchant_id, spec, claim_start, claim_end, claimed, \
     used, given, reserved, created_at, updated_at, published_at, aborted_at, version";
pub(crate) const ACTIVITY_COLS: &str =
    "id, spec, created_at, updated_at, aborted_at, version, enrollment_seq";

/// The SQLite store: one writer connection, a few readers, one database file.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    /// Exactly one connection: SQLite has one writer, so writes queue here, in process,
    /// instead of failing on the file lock.
    pub(crate) writer: SqlitePool,
    /// Readers never block on the writer in WAL mode.
    pub(crate) reader: SqlitePool,
    /// The reader pool's size.
    pub(crate) readers: u32,
    /// Requests before background work on the writer.
    pub(crate) gate: std::sync::Arc<Gate>,
}

impl SqliteStore {
    /// Opens (creating if missing, with its folder) the database at `url`
    /// (`sqlite://path/to/file.db`). Does not migrate: call [`SqliteStore::migrate`].
    pub async fn connect(url: &str) -> StoreResult<Self> {
        Self::connect_with_readers(url, DEFAULT_READERS).await
    }

    /// As [`SqliteStore::connect`], with `readers` reader connections (at least 1; the writer
    /// is always one).
    pub async fn connect_with_readers(url: &str, readers: u32) -> StoreResult<Self> {
        let readers = readers.max(1);
        let opts = SqliteConnectOptions::from_str(url)
            .map_err(StoreError::other)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let file = opts.get_filename();
        if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !is_memory(file) {
                std::fs::create_dir_all(dir).map_err(StoreError::other)?;
            }
        }
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(opts.clone())
            .await
            .map_err(db_err)?;
        let reader = SqlitePoolOptions::new()
            .max_connections(readers)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(opts.read_only(true))
            .await
            .map_err(db_err)?;
        Ok(SqliteStore {
            writer,
            reader,
            readers,
            gate: std::sync::Arc::default(),
        })
    }

    /// Applies the embedded migrations that have not run yet.
    pub async fn migrate(&self) -> StoreResult<()> {
        sqlx::migrate!("./migrations")
            .run(&self.writer)
            .await
            .map_err(StoreError::other)
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

    /// After a conditional update touched no row: `NotFound` if the row is gone, else the
    /// condition (version) failed.
    pub(crate) async fn missing_or_conflict(&self, table: &str, id: i64) -> StoreError {
        let sql = format!("SELECT 1 FROM {table} WHERE id = ?");
        match sqlx::query(&sql)
            .bind(id)
            .fetch_optional(&self.writer)
            .await
        {
            Ok(None) => StoreError::NotFound,
            Ok(Some(_)) => StoreError::Conflict(Conflict::Version),
            Err(e) => db_err(e),
        }
    }
}

/// Bumps an activity's `enrollment_seq` if it still has `version` and is not aborted; inside
/// the caller's write transaction, so the template write and the bump commit together.
pub(crate) async fn bump_enrollment(
    tx: &mut sqlx::Transaction<'static, Sqlite>,
    activity: ActivityId,
    version: Option<i64>,
) -> StoreResult<()> {
    let bumped = sqlx::query(
        "UPDATE activities SET enrollment_seq = enrollment_seq + 1
         WHERE id = ? AND version = ? AND aborted_at IS NULL",
    )
    .bind(activity.get())
    .bind(version.unwrap_or(-1))
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    if bumped.rows_affected() == 1 {
        Ok(())
    } else {
        Err(StoreError::Conflict(Conflict::Version))
    }
}

/// Removes the bindings of the templates matching `condition` (one `?` parameter) and gives
/// their listings the slots back, inside the caller's transaction.
pub(crate) async fn unbind_templates(
    tx: &mut sqlx::Transaction<'static, Sqlite>,
    condition: &str,
    param: i64,
) -> StoreResult<()> {
    let targets = format!("SELECT id FROM templates WHERE {condition}");
    sqlx::query(&format!(
        "UPDATE listings SET bound = bound - (SELECT COUNT(*) FROM bindings b
             WHERE b.listing_id = listings.id AND b.template_id IN ({targets}))
         WHERE id IN (SELECT listing_id FROM bindings WHERE template_id IN ({targets}))"
    ))
    .bind(param)
    .bind(param)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    sqlx::query(&format!(
        "DELETE FROM bindings WHERE template_id IN ({targets})"
    ))
    .bind(param)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(())
}

fn is_memory(p: &Path) -> bool {
    p.as_os_str() == ":memory:" || p.as_os_str().is_empty()
}

pub(crate) fn us(t: Timestamp) -> i64 {
    t.unix_micros()
}

/// Appends the SQL form of [`Activity::status`] at `now`; the conformance suite checks both
/// agree at every boundary.
pub(crate) fn push_activity_status(
    q: &mut QueryBuilder<'_, Sqlite>,
    s: ActivityStatus,
    now: i64,
    freeze: i64,
) {
    if s == ActivityStatus::Aborted {
        q.push(" AND aborted_at IS NOT NULL");
        return;
    }
    q.push(" AND aborted_at IS NULL");
    let frozen_at = |q: &mut QueryBuilder<'_, Sqlite>| {
        q.push(" MIN(enroll_end, run_start - ")
            .push_bind(freeze)
            .push(")");
    };
    match s {
        ActivityStatus::Scheduled => {
            q.push(" AND ").push_bind(now).push(" < enroll_start");
        }
        ActivityStatus::Enrolling => {
            q.push(" AND ")
                .push_bind(now)
                .push(" >= enroll_start AND ")
                .push_bind(now)
                .push(" <");
            frozen_at(q);
        }
        ActivityStatus::Frozen => {
            q.push(" AND ")
                .push_bind(now)
                .push(" >= enroll_start AND ")
                .push_bind(now)
                .push(" >=");
            frozen_at(q);
            q.push(" AND ").push_bind(now).push(" < run_start");
        }
        ActivityStatus::Running => {
            q.push(" AND ")
                .push_bind(now)
                .push(" >= run_start AND ")
                .push_bind(now)
                .push(" < run_end");
        }
        ActivityStatus::Ended => {
            q.push(" AND ").push_bind(now).push(" >= run_end");
        }
        ActivityStatus::Aborted => {}
    }
}

/// Appends the SQL form of [`Template::status`] at `now`.
pub(crate) fn push_template_status(q: &mut QueryBuilder<'_, Sqlite>, s: TemplateStatus, now: i64) {
    match s {
        TemplateStatus::Aborted => {
            q.push(" AND aborted_at IS NOT NULL");
            return;
        }
        TemplateStatus::Draft => {
            q.push(" AND aborted_at IS NULL AND activity_id IS NULL AND published_at IS NULL");
            return;
        }
        _ => {}
    }
    q.push(" AND aborted_at IS NULL AND (activity_id IS NOT NULL OR published_at IS NOT NULL)");
    match s {
        TemplateStatus::Scheduled => {
            q.push(" AND ").push_bind(now).push(" < claim_start");
        }
        TemplateStatus::Active => {
            q.push(" AND ")
                .push_bind(now)
                .push(" >= claim_start AND ")
                .push_bind(now)
                .push(" < claim_end");
        }
        TemplateStatus::Ended => {
            q.push(" AND ")
                .push_bind(now)
                .push(" >= claim_end AND ")
                .push_bind(now)
                .push(" < expires_at");
        }
        TemplateStatus::Expired => {
            q.push(" AND ").push_bind(now).push(" >= expires_at");
        }
        TemplateStatus::Draft | TemplateStatus::Aborted => {}
    }
}
