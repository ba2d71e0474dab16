//! The outbox on MySQL: where it ends and how its consumers read it, which are MySQL's own.
//!
//! Writers commit in any order and MySQL shows no transaction horizon (PostgreSQL's `xmin`),
//! so an id can become visible after a larger one was read. A *sequencer* gives each event,
//! once committed, a position `seq` in the order it was seen: it reads the unsequenced rows
//! (`seq = 0`: a value InnoDB overwrites in place, where a NULL made it rewrite the row) as
//! committed, in id order, and numbers them past every position given before. Sequencers take
//! turns on a named lock; consumers read by `(seq, id)` and so never see an earlier position
//! appear behind them. Leases and the consumers' progress are written once in
//! `coupond_store_sql::scheduling`, as are the scheduler and the inbox.
//!
//! The sequencer's transaction is `READ COMMITTED` (every session of the store's pool is, see
//! `store`; the sequencer says so for its own transaction too, as it depends on it) and takes
//! two round trips (two [`Script`]s). Its read is a plain one: a row still being inserted is
//! not committed, so it is not seen (and not waited for), and only sequencers write `seq`.
//! Its numbering is one `UPDATE ... WHERE id BETWEEN` per run of at least [`RUN`] consecutive
//! ids (a run holds no other row, so it is exactly the run's events), the other ids in one
//! `IN` list, both by the primary key: under `READ COMMITTED` a scan of the primary key does
//! not wait on a row being inserted just past its range (a semi-consistent read passes it
//! over), where under `REPEATABLE READ` it waits for that row's whole claim batch
//! (`tests/sequencer.rs` holds such a row open). On 5,000 events (`bench/mysql-sequencer.sh`)
//! the locking read it used before (`FOR UPDATE SKIP LOCKED`) took 11.6-11.8 ms against
//! 1.9-2.0 ms, and numbering them as one range 20-31 ms against 37-46 ms by a JSON list.

use coupond_store::{Event, OutboxPosition, StoreError, StoreResult};
use coupond_store_sql::{sql, Db, Row};

use crate::exec::ScriptTx;
use crate::script::Script;
use crate::store::MysqlDb;

/// Events numbered per sequencer transaction.
const SEQUENCE_BATCH: i64 = 5_000;

/// The fewest consecutive ids numbered by a range of their own; shorter runs join the list.
const RUN: usize = 8;

impl MysqlDb {
    /// Gives the committed events that have none a position past every position given.
    pub(crate) async fn sequence(&self) -> StoreResult<()> {
        let pending = self
            .read_optional(sql("SELECT 1 AS one FROM outbox WHERE seq = 0 LIMIT 1"))
            .await?;
        if pending.is_none() {
            return Ok(());
        }
        let mut tx = ScriptTx::acquire(&self.pool).await?;
        // On an error `tx` is dropped open: its connection is closed, not pooled, so neither
        // the transaction nor the isolation level set for it outlives it.
        let mut s = Script::default();
        s.sql("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
            .end();
        s.sql("START TRANSACTION").end();
        s.sql("INSERT INTO locks (name) VALUES ('outbox.sequencer') ON DUPLICATE KEY UPDATE name = name")
            .end();
        let ids_at = s
            .sql("SELECT id FROM outbox WHERE seq = 0 ORDER BY id LIMIT ")
            .int(SEQUENCE_BATCH)
            .end();
        let top_at = s
            .sql("SELECT COALESCE(MAX(seq), 0) AS top FROM outbox")
            .end();
        let done = tx.run(&s, false).await?;
        let ids: Vec<i64> = done[ids_at]
            .rows
            .iter()
            .map(|r| r.i64("id"))
            .collect::<StoreResult<_>>()?;
        let (Some(&first), Some(top)) = (ids.first(), done[top_at].rows.first()) else {
            return tx.rollback().await;
        };
        // `seq = id + offset`: in id order, past `top`, and above 0 (ids start at 1).
        let offset = (top.i64("top")? + 1 - first).max(0);
        tx.run(&numbering(&ids, offset), true).await.map(drop)
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

/// The script that gives `ids` (ascending) `seq = id + offset` and commits: a range per run of
/// at least [`RUN`] consecutive ids, the rest by one list. Both by the primary key (a plan by
/// `(seq, id)` would lock index entries, where the primary key's scan reads semi-consistently).
fn numbering(ids: &[i64], offset: i64) -> Script {
    let mut s = Script::default();
    let mut listed = Vec::new();
    for run in runs(ids) {
        if run.len() < RUN {
            listed.extend_from_slice(run);
            continue;
        }
        s.sql("UPDATE outbox FORCE INDEX (PRIMARY) SET seq = id + ")
            .int(offset)
            .sql(" WHERE id BETWEEN ")
            .int(run[0])
            .sql(" AND ")
            .int(run[run.len() - 1])
            .sql(" AND seq = 0")
            .end();
    }
    if !listed.is_empty() {
        s.sql("UPDATE outbox FORCE INDEX (PRIMARY) SET seq = id + ")
            .int(offset)
            .sql(" WHERE seq = 0 AND id IN (");
        for (k, id) in listed.iter().enumerate() {
            s.sql(if k == 0 { "" } else { ", " }).int(*id);
        }
        s.sql(")").end();
    }
    s.sql("COMMIT").end();
    s
}

/// `ids` (ascending) cut into runs of consecutive integers.
fn runs(ids: &[i64]) -> impl Iterator<Item = &[i64]> {
    ids.chunk_by(|a, b| *b == *a + 1)
}

pub(crate) fn event(r: &Row) -> StoreResult<Event> {
    Ok(Event {
        id: r.i64("id")?,
        txid: r.i64("seq")?,
        kind: r.string("kind")?,
        at: r.time("at")?,
        body: serde_json::from_str(r.str("body")?).map_err(StoreError::other)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_consecutive_ids_are_ranges_the_rest_one_list() {
        let mut ids: Vec<i64> = (1..=8).collect();
        ids.extend([10, 11, 13]);
        ids.extend(20..=29);
        assert_eq!(
            numbering(&ids, 100).as_str(),
            "UPDATE outbox FORCE INDEX (PRIMARY) SET seq = id + 100 WHERE id BETWEEN 1 AND 8 AND seq = 0;\n\
             UPDATE outbox FORCE INDEX (PRIMARY) SET seq = id + 100 WHERE id BETWEEN 20 AND 29 AND seq = 0;\n\
             UPDATE outbox FORCE INDEX (PRIMARY) SET seq = id + 100 WHERE seq = 0 AND id IN (10, 11, 13);\n\
             COMMIT;\n"
        );
        assert_eq!(
            numbering(&[5], 0).as_str(),
            "UPDATE outbox FORCE INDEX (PRIMARY) SET seq = id + 0 WHERE seq = 0 AND id IN (5);\nCOMMIT;\n"
        );
    }
}
