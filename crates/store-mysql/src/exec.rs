//! The shared SQL layer's traits ([`Db`], [`Exec`], [`Tx`]) on MySQL: `$n` placeholders made
//! positional, arguments bound as the schema stores them (instants as microseconds, lists and
//! documents as JSON text), rows read into [`Row`]s by column type, and `RETURNING` run as a
//! write and a read (`translate`); and the transactions that also run [`Script`]s.

use async_trait::async_trait;
use coupond_store::{OutboxPosition, PoolStats, StoreError, StoreResult};
use coupond_store_sql::{Arg, Db, Dialect, Exec, Query, Row, Tx, Value, Work};
use sqlx::mysql::{MySqlArguments, MySqlConnection, MySqlPool, MySqlRow};
use sqlx::pool::PoolConnection;
use sqlx::{Column, MySql, Row as _, TypeInfo, ValueRef};

use crate::rows::db_err;
use crate::script::{Outcome, Script};
use crate::store::MysqlDb;
use crate::translate::{plan, Plan};

type SqlxQuery<'q> = sqlx::query::Query<'q, MySql, MySqlArguments>;

fn build<'q>(text: &'q str, args: &[Arg]) -> SqlxQuery<'q> {
    let mut out = sqlx::query(text);
    for a in args {
        out = match a {
            Arg::Int(v) => out.bind(*v),
            Arg::Text(v) => out.bind(v.clone()),
            Arg::Bool(v) => out.bind(*v),
            Arg::Time(v) => out.bind(v.map(|t| t.unix_micros())),
            Arg::Json(v) => out.bind(v.clone()),
            Arg::Bytes(v) => out.bind(v.clone()),
            Arg::Ints(v) => out.bind(serde_json::to_string(v).unwrap_or_default()),
        };
    }
    out
}

/// `rows` as [`Row`]s, the column names shared.
pub(crate) fn rows(rows: &[MySqlRow]) -> StoreResult<Vec<Row>> {
    let names = |r: &MySqlRow| r.columns().iter().map(|c| c.name().to_owned()).collect();
    Row::all_of(rows, names, value)
}

/// Column `i` of `r`, by its type.
fn value(r: &MySqlRow, i: usize) -> StoreResult<Value> {
    let raw = r.try_get_raw(i).map_err(db_err)?;
    if raw.is_null() {
        return Ok(Value::Null);
    }
    let ty = raw.type_info();
    Ok(match ty.name() {
        "BIGINT" | "INT" | "MEDIUMINT" | "SMALLINT" | "TINYINT" | "BOOLEAN" => {
            Value::Int(r.try_get_unchecked(i).map_err(db_err)?)
        }
        "BIGINT UNSIGNED" | "INT UNSIGNED" => {
            let v: u64 = r.try_get_unchecked(i).map_err(db_err)?;
            Value::Int(i64::try_from(v).map_err(StoreError::other)?)
        }
        // Sums and counts over integers, without a fractional part.
        "DECIMAL" => {
            let text: String = r.try_get_unchecked(i).map_err(db_err)?;
            Value::Int(text.parse().map_err(StoreError::other)?)
        }
        "DOUBLE" | "FLOAT" => Value::Real(r.try_get_unchecked(i).map_err(db_err)?),
        "VARCHAR" | "CHAR" | "TEXT" | "TINYTEXT" | "MEDIUMTEXT" | "LONGTEXT" | "JSON" | "ENUM" => {
            Value::Text(r.try_get_unchecked(i).map_err(db_err)?)
        }
        // Binary strings: hashes, and the text of a binary collation's expressions; the row
        // reads them as text where a column is text (see `Row::str`).
        "VARBINARY" | "BINARY" | "BLOB" | "TINYBLOB" | "MEDIUMBLOB" | "LONGBLOB" => {
            Value::Bytes(r.try_get_unchecked(i).map_err(db_err)?)
        }
        other => return Err(StoreError::other(format!("unread MySQL type {other}"))),
    })
}

/// Runs `q` on `conn`: the rows it returns and, for a write, the rows it changed.
async fn run(conn: &mut MySqlConnection, q: &Query, want_rows: bool) -> StoreResult<Output> {
    let (text, args) = q.positional();
    match plan(&text).map_err(StoreError::other)? {
        Plan::Plain(text) if want_rows => {
            let found = build(&text, &args)
                .fetch_all(&mut *conn)
                .await
                .map_err(db_err)?;
            Ok(Output::Rows(rows(&found)?))
        }
        Plan::Plain(text) => {
            let done = build(&text, &args)
                .execute(&mut *conn)
                .await
                .map_err(db_err)?;
            Ok(Output::Changed(done.rows_affected()))
        }
        Plan::Returning { write, read } => {
            let done = build(&write, &args)
                .execute(&mut *conn)
                .await
                .map_err(db_err)?;
            if done.rows_affected() == 0 || done.last_insert_id() == 0 {
                return Ok(Output::Rows(Vec::new()));
            }
            let id = i64::try_from(done.last_insert_id()).map_err(StoreError::other)?;
            let found = build(&read, &[Arg::Int(Some(id))])
                .fetch_all(&mut *conn)
                .await
                .map_err(db_err)?;
            Ok(Output::Rows(rows(&found)?))
        }
    }
}

enum Output {
    Changed(u64),
    Rows(Vec<Row>),
}

impl Output {
    fn changed(self) -> u64 {
        match self {
            Output::Changed(n) => n,
            Output::Rows(r) => r.len() as u64,
        }
    }
    fn rows(self) -> Vec<Row> {
        match self {
            Output::Rows(r) => r,
            Output::Changed(_) => Vec::new(),
        }
    }
}

/// A write transaction.
pub(crate) struct MysqlTx(pub(crate) sqlx::Transaction<'static, MySql>);

#[async_trait]
impl Exec for MysqlTx {
    async fn execute(&mut self, q: Query) -> StoreResult<u64> {
        Ok(run(&mut self.0, &q, false).await?.changed())
    }
    async fn fetch_all(&mut self, q: Query) -> StoreResult<Vec<Row>> {
        Ok(run(&mut self.0, &q, true).await?.rows())
    }
    async fn fetch_optional(&mut self, q: Query) -> StoreResult<Option<Row>> {
        Ok(run(&mut self.0, &q, true).await?.rows().into_iter().next())
    }
}

#[async_trait]
impl Tx for MysqlTx {
    /// Inserts the audit trail's pending changes first, so they commit with the change.
    async fn commit(mut self: Box<Self>) -> StoreResult<()> {
        coupond_store_sql::audit::flush(&mut *self).await?;
        self.0.commit().await.map_err(db_err)
    }

    async fn lock(&mut self, key: &str) -> StoreResult<()> {
        lock_row(&mut self.0, key).await
    }
}

/// The row of `key` in `locks`, upserted: its exclusive lock lasts until the transaction ends
/// (MySQL's named locks belong to the session, not the transaction).
async fn lock_row(conn: &mut MySqlConnection, key: &str) -> StoreResult<()> {
    sqlx::query("INSERT INTO locks (name) VALUES (?) ON DUPLICATE KEY UPDATE name = name")
        .bind(key)
        .execute(conn)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// A transaction that also runs [`Script`]s.
pub(crate) trait Scripted: Tx {
    /// The transaction's connection, for a script.
    fn connection(&mut self) -> &mut MySqlConnection;
}

impl Scripted for MysqlTx {
    fn connection(&mut self) -> &mut MySqlConnection {
        &mut self.0
    }
}

/// A transaction that a script begins (`START TRANSACTION` written first in it) and one
/// commits, so that neither costs a round trip of its own, on a connection of the pool.
///
/// The transaction counts as open from the first script run until one that ends in `COMMIT`
/// or `ROLLBACK` succeeds: a script that fails on the way leaves it open, for the caller to
/// roll back. Dropped while open (its caller cancelled or failed between scripts), the
/// connection is closed rather than put back in the pool, and the server rolls the
/// transaction back.
pub(crate) struct ScriptTx {
    conn: PoolConnection<MySql>,
    open: bool,
}

impl ScriptTx {
    /// A connection of `pool`, no transaction begun yet.
    pub(crate) async fn acquire(pool: &MySqlPool) -> StoreResult<Self> {
        Ok(ScriptTx {
            conn: pool.acquire().await.map_err(db_err)?,
            open: false,
        })
    }

    /// Runs `script`; the transaction is over when it `ends` it and it succeeds.
    pub(crate) async fn run(&mut self, script: &Script, ends: bool) -> StoreResult<Vec<Outcome>> {
        self.open = true;
        let out = script.run(&mut self.conn).await?;
        self.open = !ends;
        Ok(out)
    }

    /// Rolls back whatever is open.
    pub(crate) async fn rollback(mut self) -> StoreResult<()> {
        if self.open {
            self.run(&Script::one("ROLLBACK"), true).await?;
        }
        Ok(())
    }
}

impl Drop for ScriptTx {
    fn drop(&mut self) {
        if self.open {
            self.conn.close_on_drop();
        }
    }
}

impl Scripted for ScriptTx {
    fn connection(&mut self) -> &mut MySqlConnection {
        &mut self.conn
    }
}

#[async_trait]
impl Exec for ScriptTx {
    async fn execute(&mut self, q: Query) -> StoreResult<u64> {
        Ok(run(&mut self.conn, &q, false).await?.changed())
    }
    async fn fetch_all(&mut self, q: Query) -> StoreResult<Vec<Row>> {
        Ok(run(&mut self.conn, &q, true).await?.rows())
    }
    async fn fetch_optional(&mut self, q: Query) -> StoreResult<Option<Row>> {
        Ok(run(&mut self.conn, &q, true)
            .await?
            .rows()
            .into_iter()
            .next())
    }
}

#[async_trait]
impl Tx for ScriptTx {
    /// As [`MysqlTx`]'s: the audit trail's pending changes first.
    async fn commit(mut self: Box<Self>) -> StoreResult<()> {
        coupond_store_sql::audit::flush(&mut *self).await?;
        self.run(&Script::one("COMMIT"), true).await.map(drop)
    }

    async fn lock(&mut self, key: &str) -> StoreResult<()> {
        lock_row(&mut self.conn, key).await
    }
}

impl MysqlDb {
    async fn read(&self, q: &Query) -> StoreResult<Vec<Row>> {
        let mut conn = self.pool.acquire().await.map_err(db_err)?;
        Ok(run(&mut conn, q, true).await?.rows())
    }
}

#[async_trait]
impl Db for MysqlDb {
    fn dialect(&self) -> Dialect {
        Dialect::Mysql
    }

    async fn read_all(&self, q: Query) -> StoreResult<Vec<Row>> {
        self.read(&q).await
    }

    async fn read_optional(&self, q: Query) -> StoreResult<Option<Row>> {
        Ok(self.read(&q).await?.into_iter().next())
    }

    async fn begin(&self, _work: Work) -> StoreResult<Box<dyn Tx + '_>> {
        let tx = self.pool.begin().await.map_err(db_err)?;
        Ok(Box::new(MysqlTx(tx)))
    }

    async fn close(&self) {
        self.close_pools().await;
    }

    fn name(&self) -> &'static str {
        "mysql"
    }

    fn pool_stats(&self) -> PoolStats {
        PoolStats {
            size: self.pool.size() + self.ids.pool().size(),
            idle: (self.pool.num_idle() + self.ids.pool().num_idle()) as u32,
            max: self.max + crate::store::ID_CONNECTIONS,
        }
    }

    async fn outbox_head(&self) -> StoreResult<OutboxPosition> {
        self.outbox_head_q().await
    }

    /// Splits the stock into the template's shards (migration 0005), keeping what was claimed.
    async fn template_stock(&self, tx: &mut dyn Tx, id: i64, total: i64) -> StoreResult<()> {
        crate::claims::split_stock(tx, id, total).await
    }
}
