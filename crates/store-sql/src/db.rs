//! What a backend gives the shared layer: a [`Db`] to read from and begin transactions on,
//! and [`Exec`]utors that run [`Query`]s and return [`Row`]s.

use async_trait::async_trait;
use coupond_store::{Conflict, OutboxPosition, PoolStats, StoreError, StoreResult};

use crate::query::{sql, Dialect, Query};
use crate::value::Row;

/// Runs statements: a pooled connection or an open transaction.
#[async_trait]
pub trait Exec: Send {
    /// Runs `q`; the number of rows it changed.
    async fn execute(&mut self, q: Query) -> StoreResult<u64>;
    async fn fetch_all(&mut self, q: Query) -> StoreResult<Vec<Row>>;
    async fn fetch_optional(&mut self, q: Query) -> StoreResult<Option<Row>>;

    /// The one row `q` returns; [`StoreError::NotFound`] if none.
    async fn fetch_one(&mut self, q: Query) -> StoreResult<Row> {
        self.fetch_optional(q).await?.ok_or(StoreError::NotFound)
    }
}

/// A write transaction. Dropped without [`Tx::commit`], it rolls back.
#[async_trait]
pub trait Tx: Exec {
    async fn commit(self: Box<Self>) -> StoreResult<()>;

    /// Makes writes about `key` (an owner's webhooks, a user's codes) take turns until this
    /// transaction ends, where the backend lets writers run at once: so a count and the insert
    /// it allows cannot interleave with another's.
    async fn lock(&mut self, key: &str) -> StoreResult<()>;
}

/// Who a write transaction is for: on a backend with one writer, requests go first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// A caller is waiting for the answer.
    Request,
    /// Consumers, generators and sweepers: they take turns and stand aside for requests.
    Background,
}

/// A database the shared layer runs on.
#[async_trait]
pub trait Db: Send + Sync {
    fn dialect(&self) -> Dialect;

    /// Reads outside a transaction (on SQLite, from the reader pool).
    async fn read_all(&self, q: Query) -> StoreResult<Vec<Row>>;
    async fn read_optional(&self, q: Query) -> StoreResult<Option<Row>>;

    /// Begins a write transaction.
    async fn begin(&self, work: Work) -> StoreResult<Box<dyn Tx + '_>>;

    /// `"sqlite"`, `"postgres"`, ...
    fn name(&self) -> &'static str;

    /// Connection pool sizes, for metrics.
    fn pool_stats(&self) -> PoolStats;

    /// Where the outbox ends now (its ordering is the backend's own).
    async fn outbox_head(&self) -> StoreResult<OutboxPosition>;

    /// Closes the pools; waits for connections in use to come back.
    async fn close(&self);

    /// After template `id`'s stock was written as `total` in `tx` (inserted or updated): a
    /// backend that keeps stock outside `templates` (PostgreSQL's shards) lays it out again,
    /// keeping what was claimed.
    async fn template_stock(&self, tx: &mut dyn Tx, id: i64, total: i64) -> StoreResult<()>;

    /// The one row `q` reads; [`StoreError::NotFound`] if none.
    async fn read_one(&self, q: Query) -> StoreResult<Row> {
        self.read_optional(q).await?.ok_or(StoreError::NotFound)
    }

    /// Runs the one-statement write `q` in a request transaction; the rows it changed.
    async fn write(&self, q: Query) -> StoreResult<u64> {
        let mut tx = self.begin(Work::Request).await?;
        let changed = tx.execute(q).await?;
        tx.commit().await?;
        Ok(changed)
    }

    /// As [`Db::write`], for a statement that returns one row (`RETURNING`); that row,
    /// [`StoreError::NotFound`] (and nothing written) if none. A row with an `id` names the
    /// object of a pending audit change that does not name one yet (an insert's new row).
    async fn write_one(&self, q: Query) -> StoreResult<Row> {
        let mut tx = self.begin(Work::Request).await?;
        let row = tx.fetch_one(q).await?;
        if row.has("id") {
            coupond_store::audit::created(row.i64("id")?);
        }
        tx.commit().await?;
        Ok(row)
    }
}

/// After a conditional update changed nothing: [`StoreError::NotFound`] if row `id` of `table`
/// is gone, else its version moved on. `ex` may be an open [`Tx`] (generic, so a `dyn Tx`
/// need not be upcast).
pub async fn missing_or_conflict<E: Exec + ?Sized>(ex: &mut E, table: &str, id: i64) -> StoreError {
    match ex
        .fetch_optional(sql(format!("SELECT 1 AS one FROM {table} WHERE id = $1")).bind(id))
        .await
    {
        Ok(None) => StoreError::NotFound,
        Ok(Some(_)) => StoreError::Conflict(Conflict::Version),
        Err(e) => e,
    }
}
