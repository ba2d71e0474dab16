//! The outbox on MySQL: where it ends and how its consumers read it, which are MySQL's own.
//!
//! Writers commit in any order and MySQL shows no transaction horizon (PostgreSQL's `xmin`),
//! so an id can become visible after a larger one was read. A *sequencer* gives each event,
//! once committed, a position `seq` in the order it was seen: it takes the unsequenced rows
//! (`seq = 0`: a value InnoDB overwrites in place, where a NULL made it rewrite the row)
//! `FOR UPDATE SKIP LOCKED` (a row still being inserted is locked by its writer, so it is
//! passed over, not waited for), in id order, and numbers them past every position given
//! before. Sequencers take turns on a named lock; consumers read by `(seq, id)` and so never
//! see an earlier position appear behind them. Leases and the consumers' progress are written
//! once in `coupond_store_sql::scheduling`, as are the scheduler and the inbox.

use coupond_store::{Event, OutboxPosition, StoreError, StoreResult};
use coupond_store_sql::{sql, Db, Row, Work};

use crate::store::MysqlStore;

/// Events numbered per sequencer transaction.
const SEQUENCE_BATCH: i64 = 5_000;

impl MysqlStore {
    /// Gives the committed events that have none a position past every position given.
    async fn sequence(&self) -> StoreResult<()> {
        let pending = self
            .read_optional(sql("SELECT 1 AS one FROM outbox WHERE seq = 0 LIMIT 1"))
            .await?;
        if pending.is_none() {
            return Ok(());
        }
        let mut tx = self.begin(Work::Background).await?;
        tx.lock("outbox.sequencer").await?;
        let ids: Vec<i64> = tx
            .fetch_all(
                sql("SELECT id FROM outbox WHERE seq = 0 ORDER BY id LIMIT $1
                     FOR UPDATE SKIP LOCKED")
                .bind(SEQUENCE_BATCH),
            )
            .await?
            .iter()
            .map(|r| r.i64("id"))
            .collect::<StoreResult<_>>()?;
        let Some(&first) = ids.first() else {
            return Ok(());
        };
        let top = tx
            .fetch_one(sql("SELECT COALESCE(MAX(seq), 0) AS top FROM outbox"))
            .await?
            .i64("top")?;
        // `seq = id + offset`: in id order, past `top`, and above 0 (ids start at 1).
        let offset = (top + 1 - first).max(0);
        // Joined from the list, one primary-key lookup per id. Written as `id IN (SELECT ...
        // JSON_TABLE ...)`, MariaDB read the whole list again for every row of the id range:
        // 2.6 s for 5,000 ids against 0.04 s joined, and the consumers fell 45 s behind a
        // 100,000-claim flash sale.
        tx.execute(
            // From the list to the table (STRAIGHT_JOIN): a plan that scanned `outbox` would
            // wait on rows still being inserted (a multi-table update gets no semi-consistent
            // read).
            sql(
                "UPDATE JSON_TABLE($1, '$[*]' COLUMNS (v BIGINT PATH '$')) AS l
                 STRAIGHT_JOIN outbox o ON o.id = l.v
                 SET o.seq = o.id + $2",
            )
            .bind(ids)
            .bind(offset),
        )
        .await?;
        tx.commit().await
    }

    pub(crate) async fn outbox_head_q(&self) -> StoreResult<OutboxPosition> {
        self.sequence().await?;
        let head = self
            .read_optional(sql(
                "SELECT seq, id FROM outbox WHERE seq > 0 ORDER BY seq DESC LIMIT 1",
            ))
            .await?;
        head.map_or(Ok(OutboxPosition::default()), |r| {
            Ok(OutboxPosition {
                txid: r.i64("seq")?,
                event_id: r.i64("id")?,
            })
        })
    }
}

fn event(r: &Row) -> StoreResult<Event> {
    Ok(Event {
        id: r.i64("id")?,
        txid: r.i64("seq")?,
        kind: r.string("kind")?,
        at: r.time("at")?,
        body: serde_json::from_str(r.str("body")?).map_err(StoreError::other)?,
    })
}

coupond_store_sql::impl_outbox_store!(MysqlStore, {
    async fn outbox_read(&self, after: OutboxPosition, limit: u32) -> StoreResult<Vec<Event>> {
        self.sequence().await?;
        let rows = self
            .read_all(
                // `seq > 0`: from the start (position 0) too, never an unsequenced event.
                sql("SELECT id, seq, kind, at, body FROM outbox
                     WHERE seq > 0 AND (seq > $1 OR (seq = $1 AND id > $2))
                     ORDER BY seq, id LIMIT $3")
                .bind(after.txid)
                .bind(after.event_id)
                .bind(i64::from(limit)),
            )
            .await?;
        rows.iter().map(event).collect()
    }
});
