//! The shared SQL layer's traits ([`Db`], [`Exec`], [`Tx`]) on SQLite: arguments bound as
//! SQLite stores them (instants as microseconds, lists and documents as JSON text), rows read
//! into [`Row`]s by the storage class of each value.

use async_trait::async_trait;
use coupond_store::{OutboxPosition, PoolStats, StoreError, StoreResult};
use coupond_store_sql::{Arg, Db, Dialect, Exec, Query, Row, Tx, Value, Work};
use sqlx::sqlite::{SqliteArguments, SqliteRow};
use sqlx::{Column, Row as _, Sqlite, TypeInfo, ValueRef};
use tokio::sync::SemaphorePermit;

use crate::rows::db_err;
use crate::store::SqliteDb;

type SqlxQuery<'q> = sqlx::query::Query<'q, Sqlite, SqliteArguments<'q>>;

/// A shared statement as sqlx's, given `Query::into_positional`'s text and arguments. SQLite
/// reads `$n` as a named parameter, found by a linear scan of the statement's names once when
/// parsing and again per parameter when sqlx binds: quadratic in a multi-row statement, so
/// statements run with anonymous `?`.
fn build(text: &str, args: Vec<Arg>) -> SqlxQuery<'_> {
    let mut out = sqlx::query(text);
    for a in args {
        out = match a {
            Arg::Int(v) => out.bind(v),
            Arg::Text(v) => out.bind(v),
            Arg::Bool(v) => out.bind(v),
            Arg::Time(v) => out.bind(v.map(|t| t.unix_micros())),
            Arg::Json(v) => out.bind(v),
            Arg::Bytes(v) => out.bind(v),
            Arg::Ints(v) => out.bind(serde_json::to_string(&v).unwrap_or_default()),
        };
    }
    out
}

/// `rows` as [`Row`]s, the column names shared.
pub(crate) fn rows(rows: &[SqliteRow]) -> StoreResult<Vec<Row>> {
    let names = |r: &SqliteRow| r.columns().iter().map(|c| c.name().to_owned()).collect();
    Row::all_of(rows, names, value)
}

/// Column `i` of `r`, by its storage class.
fn value(r: &SqliteRow, i: usize) -> StoreResult<Value> {
    let raw = r.try_get_raw(i).map_err(db_err)?;
    if raw.is_null() {
        return Ok(Value::Null);
    }
    Ok(match raw.type_info().name() {
        "INTEGER" | "BOOLEAN" => Value::Int(r.try_get(i).map_err(db_err)?),
        "REAL" => Value::Real(r.try_get(i).map_err(db_err)?),
        "TEXT" => Value::Text(r.try_get(i).map_err(db_err)?),
        "BLOB" => Value::Bytes(r.try_get(i).map_err(db_err)?),
        other => return Err(StoreError::other(format!("unread SQLite type {other}"))),
    })
}

/// A connection pool as an [`Exec`] (the reader pool, or the writer outside a transaction).
pub(crate) struct PoolExec<'a>(pub(crate) &'a sqlx::SqlitePool);

#[async_trait]
impl Exec for PoolExec<'_> {
    async fn execute(&mut self, q: Query) -> StoreResult<u64> {
        let (text, args) = q.into_positional();
        let done = build(&text, args).execute(self.0).await.map_err(db_err)?;
        Ok(done.rows_affected())
    }
    async fn fetch_all(&mut self, q: Query) -> StoreResult<Vec<Row>> {
        let (text, args) = q.into_positional();
        rows(&build(&text, args).fetch_all(self.0).await.map_err(db_err)?)
    }
    async fn fetch_optional(&mut self, q: Query) -> StoreResult<Option<Row>> {
        let (text, args) = q.into_positional();
        let r = build(&text, args)
            .fetch_optional(self.0)
            .await
            .map_err(db_err)?;
        Ok(rows(r.as_slice())?.pop())
    }
}

/// A write transaction, with the background turn it holds (see `gate`).
pub(crate) struct SqliteTx<'a> {
    pub(crate) tx: sqlx::Transaction<'static, Sqlite>,
    pub(crate) _turn: Option<SemaphorePermit<'a>>,
}

#[async_trait]
impl Exec for SqliteTx<'_> {
    async fn execute(&mut self, q: Query) -> StoreResult<u64> {
        let (text, args) = q.into_positional();
        let done = build(&text, args)
            .execute(&mut *self.tx)
            .await
            .map_err(db_err)?;
        Ok(done.rows_affected())
    }
    async fn fetch_all(&mut self, q: Query) -> StoreResult<Vec<Row>> {
        let (text, args) = q.into_positional();
        rows(
            &build(&text, args)
                .fetch_all(&mut *self.tx)
                .await
                .map_err(db_err)?,
        )
    }
    async fn fetch_optional(&mut self, q: Query) -> StoreResult<Option<Row>> {
        let (text, args) = q.into_positional();
        let r = build(&text, args)
            .fetch_optional(&mut *self.tx)
            .await
            .map_err(db_err)?;
        Ok(rows(r.as_slice())?.pop())
    }
}

#[async_trait]
impl Tx for SqliteTx<'_> {
    /// Inserts the audit trail's pending changes first, so they commit with the change.
    async fn commit(mut self: Box<Self>) -> StoreResult<()> {
        coupond_store_sql::audit::flush(&mut *self).await?;
        self.tx.commit().await.map_err(db_err)
    }

    /// One writer at a time already: every write transaction takes turns.
    async fn lock(&mut self, _key: &str) -> StoreResult<()> {
        Ok(())
    }
}

#[async_trait]
impl Db for SqliteDb {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    async fn read_all(&self, q: Query) -> StoreResult<Vec<Row>> {
        PoolExec(&self.reader).fetch_all(q).await
    }

    async fn read_optional(&self, q: Query) -> StoreResult<Option<Row>> {
        PoolExec(&self.reader).fetch_optional(q).await
    }

    async fn begin(&self, work: Work) -> StoreResult<Box<dyn Tx + '_>> {
        let (turn, tx) = match work {
            Work::Request => (None, SqliteDb::begin(self).await?),
            Work::Background => self.begin_background().await?,
        };
        Ok(Box::new(SqliteTx { tx, _turn: turn }))
    }

    async fn close(&self) {
        self.claims.close().await;
        self.wallet.close().await;
        self.writer.close().await;
        self.reader.close().await;
    }

    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn pool_stats(&self) -> PoolStats {
        PoolStats {
            size: self.writer.size() + self.reader.size(),
            idle: (self.writer.num_idle() + self.reader.num_idle()) as u32,
            max: 1 + self.readers,
        }
    }

    async fn outbox_head(&self) -> StoreResult<OutboxPosition> {
        self.outbox_head_q().await
    }

    /// `templates.total_stock` and `claimed` are the stock: nothing else to lay out.
    async fn template_stock(&self, _tx: &mut dyn Tx, _id: i64, _total: i64) -> StoreResult<()> {
        Ok(())
    }
}
