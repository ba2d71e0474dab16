//! [`PgStore`]: opening the database, its pool, and the helpers the area modules share.

use coupond_store::Conflict;
use std::str::FromStr;
use std::time::Duration;

use coupond_domain::{ActivityId, ActivityStatus, Template, TemplateId, TemplateStatus, Timestamp};
use coupond_store::{StoreError, StoreResult};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Postgres, QueryBuilder};
use time::OffsetDateTime;

use crate::rows::{self, db_err};

const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);
/// Pool connections unless configured otherwise.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 16;

/// A template's columns. `claimed` is the sum of its stock shards (`template_stock`, see
/// migration 0015); `id` inside that subquery is the template's (the shard table has none).
pub(crate) const TEMPLATE_COLS: &str = "id, merchant_id, spec::text AS spec, claim_start, \
     claim_end, (SELECT COALESCE(SUM(s.claimed), 0)::bigint FROM template_stock s \
     WHERE s.template_id = id) AS claimed, used, given, reserved, created_at, updated_at, \
     published_at, aborted_at, version";
pub(crate) const ACTIVITY_COLS: &str =
    "id, spec::text AS spec, created_at, updated_at, aborted_at, version, enrollment_seq";

/// The PostgreSQL store: a connection pool on one database (and schema).
#[derive(Clone, Debug)]
pub struct PgStore {
    pub(crate) pool: PgPool,
    pub(crate) max: u32,
    /// Where the next claim batch starts looking for a stock shard: batches in flight at once
    /// start on different shards, so they do not wait on each other's (see `claims`).
    pub(crate) shard_cursor: std::sync::Arc<std::sync::atomic::AtomicU32>,
}

pub(crate) fn dt(t: Timestamp) -> OffsetDateTime {
    t.datetime()
}

impl PgStore {
    /// Connects to `url` (`postgres://user@host/db`). Does not migrate: call
    /// [`PgStore::migrate`].
    pub async fn connect(url: &str) -> StoreResult<Self> {
        Self::connect_in_schema(url, None).await
    }

    /// As [`PgStore::connect`], with a pool of `max_connections` (at least 1).
    pub async fn connect_with_pool(url: &str, max_connections: u32) -> StoreResult<Self> {
        Self::open(url, None, max_connections).await
    }

    /// Connects with `search_path` set to `schema` (created if missing), so that several
    /// independent coupond databases (tests, tenants) can share one PostgreSQL database.
    pub async fn connect_in_schema(url: &str, schema: Option<&str>) -> StoreResult<Self> {
        Self::open(url, schema, DEFAULT_MAX_CONNECTIONS).await
    }

    async fn open(url: &str, schema: Option<&str>, max: u32) -> StoreResult<Self> {
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
        let pool = PgPoolOptions::new()
            .max_connections(max)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(opts)
            .await
            .map_err(db_err)?;
        Ok(PgStore {
            pool,
            max,
            // Processes start at different shards too.
            shard_cursor: std::sync::Arc::new(std::sync::atomic::AtomicU32::new(
                std::process::id().wrapping_mul(7),
            )),
        })
    }

    /// Applies the embedded migrations that have not run yet. Safe to run from several
    /// instances at once: sqlx serialises them with an advisory lock.
    pub async fn migrate(&self) -> StoreResult<()> {
        sqlx::migrate!("./migrations")
            .run(&self.pool)
            .await
            .map_err(StoreError::other)
    }

    pub(crate) async fn missing_or_conflict(&self, table: &str, id: i64) -> StoreError {
        let sql = format!("SELECT 1 FROM {table} WHERE id = $1");
        match sqlx::query(&sql).bind(id).fetch_optional(&self.pool).await {
            Ok(None) => StoreError::NotFound,
            Ok(Some(_)) => StoreError::Conflict(Conflict::Version),
            Err(e) => db_err(e),
        }
    }

    /// Bumps an activity's `enrollment_seq` if it still has `version`; the row lock this takes
    /// serialises the template write with any concurrent edit of the activity.
    pub(crate) async fn bump_enrollment(
        tx: &mut sqlx::Transaction<'static, Postgres>,
        activity: ActivityId,
        version: Option<i64>,
    ) -> StoreResult<()> {
        let bumped = sqlx::query(
            "UPDATE activities SET enrollment_seq = enrollment_seq + 1
             WHERE id = $1 AND version = $2 AND aborted_at IS NULL",
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

    pub(crate) async fn update_one_template(
        &self,
        sql: &str,
        id: TemplateId,
        version: i64,
        now: Timestamp,
    ) -> StoreResult<Template> {
        let row = sqlx::query(sql)
            .bind(dt(now))
            .bind(id.get())
            .bind(version)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
        match row {
            Some(r) => rows::template(&r),
            None => Err(self.missing_or_conflict("templates", id.get()).await),
        }
    }
}

/// Removes the bindings of the templates matching `condition` (one `$1` parameter) and gives
/// their listings the slots back, inside the caller's transaction.
pub(crate) async fn unbind_templates(
    tx: &mut sqlx::Transaction<'static, Postgres>,
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

/// Appends the SQL form of [`Activity::status`] at `now`.
pub(crate) fn push_activity_status(
    q: &mut QueryBuilder<'_, Postgres>,
    s: ActivityStatus,
    now: OffsetDateTime,
    freeze_us: i64,
) {
    if s == ActivityStatus::Aborted {
        q.push(" AND aborted_at IS NOT NULL");
        return;
    }
    q.push(" AND aborted_at IS NULL");
    let frozen_at = |q: &mut QueryBuilder<'_, Postgres>| {
        q.push(" LEAST(enroll_end, run_start - ")
            .push_bind(freeze_us)
            .push(" * INTERVAL '1 microsecond')");
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
pub(crate) fn push_template_status(
    q: &mut QueryBuilder<'_, Postgres>,
    s: TemplateStatus,
    now: OffsetDateTime,
) {
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

/// Splits template `id`'s stock into its shards (migration 0015), keeping what was claimed.
pub(crate) async fn split_stock(
    tx: &mut sqlx::Transaction<'static, Postgres>,
    id: TemplateId,
    total: i64,
) -> StoreResult<()> {
    sqlx::query("SELECT coupond_split_stock($1, $2)")
        .bind(id.get())
        .bind(total)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    Ok(())
}
