//! The claim writer: a thread of its own holding a `rusqlite` connection to the database
//! (a `threads::ConnThreads` of one), on which a whole claim batch (or issuance chunk) runs
//! as one job.
//!
//! Through sqlx every statement is a hop to sqlx's connection thread and back, and a claim
//! batch is a dozen statements: the hops cost more than SQLite's own work. Here the batch's
//! transaction runs start to finish on this thread, its statements prepared once and cached
//! (the multi-row ones in a few sizes, see `batch`): one hop per batch.
//!
//! SQLite has one writer. In process, the sqlx writer connection is held while a job runs
//! here (`SqliteDb::on_writer`), so the two connections never wait on each other's file
//! lock; another process still waits on the busy timeout. A job that panics is rolled back
//! and its caller gets an error (the panic's message goes to stderr).

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use coupond_store::{Conflict, StoreError, StoreResult};
use coupond_store_sql::{Arg, Exec, Query, Row, Value};
use rusqlite::types::{Value as Sql, ValueRef};
use rusqlite::{Connection, OpenFlags};

use crate::threads::ConnThreads;

/// Statements kept prepared: the claim path's own (its multi-row ones in up to 9 sizes each,
/// see `batch`) and the shared steps it calls.
const STATEMENT_CACHE: usize = 128;

/// Opens the database file at `path` (which must exist: the sqlx writer created it) with the
/// store's durability settings and starts the claim writer's thread.
pub(crate) fn open(path: &Path, busy: Duration) -> StoreResult<ConnThreads> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql_err)?;
    conn.busy_timeout(busy).map_err(sql_err)?;
    conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
        .map_err(sql_err)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    ConnThreads::spawn("sqlite-claims", vec![conn])
}

/// Runs `f` in a `BEGIN IMMEDIATE` transaction, committed if it succeeds and rolled back if
/// not.
pub(crate) fn immediate<R>(
    c: &mut Connection,
    f: impl FnOnce(&mut Connection) -> StoreResult<R>,
) -> StoreResult<R> {
    if !c.is_autocommit() {
        // An earlier rollback failed and left a transaction open: end it before this one.
        c.execute_batch("ROLLBACK").map_err(sql_err)?;
    }
    c.execute_batch("BEGIN IMMEDIATE").map_err(sql_err)?;
    let done = f(c).and_then(|r| c.execute_batch("COMMIT").map(|_| r).map_err(sql_err));
    if done.is_err() && !c.is_autocommit() {
        let _ = c.execute_batch("ROLLBACK");
    }
    done
}

/// The answer of `f`, whose futures never wait: the shared SQL steps are async for the
/// backends whose drivers are, and over [`RawExec`] every statement finishes when called, so
/// one poll completes them. A future that does wait is a bug, reported as an error.
pub(crate) fn now_or_never<T>(f: impl Future<Output = StoreResult<T>>) -> StoreResult<T> {
    futures_util::FutureExt::now_or_never(f)
        .unwrap_or_else(|| Err(StoreError::other("a writer-thread step waited")))
}

/// The writer thread's connection as an [`Exec`], for the steps written once in
/// `coupond_store_sql` (see [`now_or_never`]). Their statements are not cached: they are the
/// cold steps (keys, codes, tag audiences, issuance bookkeeping), and a tag audience's text
/// varies with the number of users, which would push the batch's own statements out.
pub(crate) struct RawExec<'a>(pub(crate) &'a mut Connection);

#[async_trait]
impl Exec for RawExec<'_> {
    async fn execute(&mut self, q: Query) -> StoreResult<u64> {
        let (text, args) = q.into_positional();
        let mut st = self.0.prepare(&text).map_err(sql_err)?;
        let n = st
            .execute(rusqlite::params_from_iter(args.into_iter().map(arg)))
            .map_err(sql_err)?;
        Ok(n as u64)
    }
    async fn fetch_all(&mut self, q: Query) -> StoreResult<Vec<Row>> {
        read(self.0, q, usize::MAX)
    }
    async fn fetch_optional(&mut self, q: Query) -> StoreResult<Option<Row>> {
        Ok(read(self.0, q, 1)?.pop())
    }
}

/// Up to `max` rows of `q`.
fn read(c: &Connection, q: Query, max: usize) -> StoreResult<Vec<Row>> {
    let (text, args) = q.into_positional();
    let mut st = c.prepare(&text).map_err(sql_err)?;
    let columns: std::sync::Arc<[String]> =
        st.column_names().into_iter().map(str::to_owned).collect();
    let mut rows = st
        .query(rusqlite::params_from_iter(args.into_iter().map(arg)))
        .map_err(sql_err)?;
    let mut out = Vec::new();
    while out.len() < max {
        let Some(r) = rows.next().map_err(sql_err)? else {
            break;
        };
        let mut values = Vec::with_capacity(columns.len());
        for i in 0..columns.len() {
            values.push(value(r.get_ref(i).map_err(sql_err)?)?);
        }
        out.push(Row::new(columns.clone(), values));
    }
    Ok(out)
}

/// An argument as SQLite stores it (as `exec::build` binds it through sqlx).
pub(crate) fn arg(a: Arg) -> Sql {
    match a {
        Arg::Int(v) => v.map_or(Sql::Null, Sql::Integer),
        Arg::Text(v) => v.map_or(Sql::Null, Sql::Text),
        Arg::Bool(v) => Sql::Integer(v.into()),
        Arg::Time(v) => v.map_or(Sql::Null, |t| Sql::Integer(t.unix_micros())),
        Arg::Json(v) => Sql::Text(v),
        Arg::Bytes(v) => v.map_or(Sql::Null, Sql::Blob),
        Arg::Ints(v) => Sql::Text(serde_json::to_string(&v).unwrap_or_default()),
    }
}

/// A value by its storage class (as `exec::rows` reads it through sqlx).
fn value(v: ValueRef<'_>) -> StoreResult<Value> {
    Ok(match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Text(t) => Value::Text(
            std::str::from_utf8(t)
                .map_err(StoreError::other)?
                .to_owned(),
        ),
        ValueRef::Blob(b) => Value::Bytes(b.to_vec()),
    })
}

/// The one mapping of this connection's errors, as `rows::db_err` maps sqlx's.
pub(crate) fn sql_err(e: rusqlite::Error) -> StoreError {
    use rusqlite::ffi::ErrorCode;
    let code = match &e {
        rusqlite::Error::QueryReturnedNoRows => return StoreError::NotFound,
        rusqlite::Error::SqliteFailure(f, _) => Some((f.code, f.extended_code)),
        _ => None,
    };
    match code {
        Some(code) => match code {
            // SQLITE_CONSTRAINT_PRIMARYKEY and SQLITE_CONSTRAINT_UNIQUE.
            (ErrorCode::ConstraintViolation, 1555 | 2067) => StoreError::Conflict(Conflict::Unique),
            // SQLITE_CONSTRAINT_FOREIGNKEY.
            (ErrorCode::ConstraintViolation, 787) => StoreError::Conflict(Conflict::Reference),
            // After the busy timeout: another process holds the lock.
            (ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked, _) => {
                StoreError::Unavailable(Box::new(e))
            }
            _ => StoreError::other(e),
        },
        None => StoreError::other(e),
    }
}
