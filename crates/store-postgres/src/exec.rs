//! The shared SQL layer's traits ([`Db`], [`Exec`], [`Tx`]) on PostgreSQL: arguments bound
//! with their PostgreSQL types (`TIMESTAMPTZ`, `JSONB`, `BIGINT[]`), rows read into [`Row`]s
//! by column type.

use async_trait::async_trait;
use coupond_domain::Timestamp;
use coupond_store::{OutboxPosition, PoolStats, StoreError, StoreResult};
use coupond_store_sql::{Arg, Db, Dialect, Exec, Query, Row, Tx, Value, Work};
use serde_json::value::RawValue;
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::types::Json;
use sqlx::{Column, Postgres, Row as _, TypeInfo, ValueRef};
use time::OffsetDateTime;

use crate::rows::db_err;
use crate::store::PgDb;

type SqlxQuery<'q> = sqlx::query::Query<'q, Postgres, PgArguments>;

fn build(q: &Query) -> StoreResult<SqlxQuery<'_>> {
    let mut out = sqlx::query(q.text());
    for a in q.args() {
        out = match a {
            Arg::Int(v) => out.bind(*v),
            Arg::Text(v) => out.bind(v.as_deref()),
            Arg::Bool(v) => out.bind(*v),
            Arg::Time(v) => out.bind(v.map(Timestamp::datetime)),
            Arg::Json(v) => {
                let doc = RawValue::from_string(v.clone()).map_err(StoreError::other)?;
                out.bind(Json(doc))
            }
            Arg::Bytes(v) => out.bind(v.as_deref()),
            Arg::Ints(v) => out.bind(v.as_slice()),
        };
    }
    Ok(out)
}

/// `rows` as [`Row`]s, the column names shared.
pub(crate) fn rows(rows: &[PgRow]) -> StoreResult<Vec<Row>> {
    let names = |r: &PgRow| r.columns().iter().map(|c| c.name().to_owned()).collect();
    Row::all_of(rows, names, value)
}

/// Column `i` of `r`, by its type.
fn value(r: &PgRow, i: usize) -> StoreResult<Value> {
    let raw = r.try_get_raw(i).map_err(db_err)?;
    if raw.is_null() {
        return Ok(Value::Null);
    }
    let ty = raw.type_info();
    Ok(match ty.name() {
        "INT8" => Value::Int(r.try_get(i).map_err(db_err)?),
        "INT4" => Value::Int(i64::from(r.try_get::<i32, _>(i).map_err(db_err)?)),
        "INT2" => Value::Int(i64::from(r.try_get::<i16, _>(i).map_err(db_err)?)),
        "BOOL" => Value::Bool(r.try_get(i).map_err(db_err)?),
        "FLOAT8" => Value::Real(r.try_get(i).map_err(db_err)?),
        "TEXT" | "VARCHAR" | "BPCHAR" | "NAME" => Value::Text(r.try_get(i).map_err(db_err)?),
        "JSONB" | "JSON" => {
            let doc: &RawValue = r.try_get(i).map_err(db_err)?;
            Value::Text(doc.get().to_owned())
        }
        "TIMESTAMPTZ" => {
            let t: OffsetDateTime = r.try_get(i).map_err(db_err)?;
            Value::Time(
                Timestamp::from_datetime(t)
                    .ok_or_else(|| StoreError::other("instant out of range"))?,
            )
        }
        "BYTEA" => Value::Bytes(r.try_get(i).map_err(db_err)?),
        "INT8[]" => Value::Ints(r.try_get(i).map_err(db_err)?),
        "VOID" => Value::Null,
        other => return Err(StoreError::other(format!("unread PostgreSQL type {other}"))),
    })
}

async fn run<'e, E>(q: &Query, ex: E) -> StoreResult<u64>
where
    E: sqlx::Executor<'e, Database = Postgres>,
{
    let done = build(q)?.execute(ex).await.map_err(db_err)?;
    Ok(done.rows_affected())
}

async fn all<'e, E>(q: &Query, ex: E) -> StoreResult<Vec<Row>>
where
    E: sqlx::Executor<'e, Database = Postgres>,
{
    rows(&build(q)?.fetch_all(ex).await.map_err(db_err)?)
}

/// A connection the caller holds (the claim path's transaction) as an [`Exec`], for the
/// claim steps written once in `coupond_store_sql::claims` and `tags`.
pub(crate) struct ConnExec<'a>(pub(crate) &'a mut sqlx::PgConnection);

#[async_trait]
impl Exec for ConnExec<'_> {
    async fn execute(&mut self, q: Query) -> StoreResult<u64> {
        run(&q, &mut *self.0).await
    }
    async fn fetch_all(&mut self, q: Query) -> StoreResult<Vec<Row>> {
        all(&q, &mut *self.0).await
    }
    async fn fetch_optional(&mut self, q: Query) -> StoreResult<Option<Row>> {
        optional(&q, &mut *self.0).await
    }
}

async fn optional<'e, E>(q: &Query, ex: E) -> StoreResult<Option<Row>>
where
    E: sqlx::Executor<'e, Database = Postgres>,
{
    let r = build(q)?.fetch_optional(ex).await.map_err(db_err)?;
    Ok(rows(r.as_slice())?.pop())
}

/// A write transaction.
pub(crate) struct PgTx(pub(crate) sqlx::Transaction<'static, Postgres>);

#[async_trait]
impl Exec for PgTx {
    async fn execute(&mut self, q: Query) -> StoreResult<u64> {
        ConnExec(&mut self.0).execute(q).await
    }
    async fn fetch_all(&mut self, q: Query) -> StoreResult<Vec<Row>> {
        ConnExec(&mut self.0).fetch_all(q).await
    }
    async fn fetch_optional(&mut self, q: Query) -> StoreResult<Option<Row>> {
        ConnExec(&mut self.0).fetch_optional(q).await
    }
}

#[async_trait]
impl Tx for PgTx {
    /// Inserts the audit trail's pending changes first, so they commit with the change.
    async fn commit(mut self: Box<Self>) -> StoreResult<()> {
        coupond_store_sql::audit::flush(&mut *self).await?;
        self.0.commit().await.map_err(db_err)
    }

    /// A transaction-scoped advisory lock on the key's hash.
    async fn lock(&mut self, key: &str) -> StoreResult<()> {
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(key)
            .execute(&mut *self.0)
            .await
            .map_err(db_err)?;
        Ok(())
    }
}

#[async_trait]
impl Db for PgDb {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    async fn read_all(&self, q: Query) -> StoreResult<Vec<Row>> {
        all(&q, &self.pool).await
    }

    async fn read_optional(&self, q: Query) -> StoreResult<Option<Row>> {
        optional(&q, &self.pool).await
    }

    async fn begin(&self, _work: Work) -> StoreResult<Box<dyn Tx + '_>> {
        let tx = self.pool.begin().await.map_err(db_err)?;
        Ok(Box::new(PgTx(tx)))
    }

    async fn close(&self) {
        self.pool.close().await;
    }

    fn name(&self) -> &'static str {
        "postgres"
    }

    fn pool_stats(&self) -> PoolStats {
        PoolStats {
            size: self.pool.size(),
            idle: self.pool.num_idle() as u32,
            max: self.max,
        }
    }

    async fn outbox_head(&self) -> StoreResult<OutboxPosition> {
        self.outbox_head_q().await
    }

    /// Splits the stock into the template's shards (migration 0015), keeping what was claimed.
    async fn template_stock(&self, tx: &mut dyn Tx, id: i64, total: i64) -> StoreResult<()> {
        tx.execute(
            coupond_store_sql::sql("SELECT coupond_split_stock($1, $2)")
                .bind(id)
                .bind(total),
        )
        .await?;
        Ok(())
    }
}
