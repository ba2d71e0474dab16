//! Coupon ids on MySQL, which has no sequence: drawn from the `id_blocks` counter a block at a
//! time per store, and handed out from that block in memory.
//!
//! Every instance (every [`MysqlDb`](crate::MysqlDb) opened) draws its own blocks with
//! one autocommitted `UPDATE … SET next = LAST_INSERT_ID(next + n)`, so two instances never
//! hand out the same id. A claim batch then takes its ids from the block without a statement:
//! drawing them per batch was an autocommitted transaction of its own (a row update, a redo
//! log write) on every batch. Ids are unique but not in claim order across instances, and the
//! rest of a block is never used once its instance stops (a gap, as a rolled-back batch leaves).

use std::ops::Range;

use coupond_store::{StoreError, StoreResult};
use sqlx::mysql::MySqlPool;

use crate::rows::db_err;
use crate::script::Script;

/// Ids drawn from the counter at once (or the batch's count, where larger).
pub(crate) const BLOCK: i64 = 4_096;

/// The ids this store drew and has not handed out yet.
#[derive(Debug)]
pub(crate) struct IdBlocks {
    /// A pool of its own: a batch draws while it holds its transaction's connection, and
    /// batches holding every connection of the main pool would wait forever for one more.
    pool: MySqlPool,
    /// The block's ids left. An async lock, held while a new block is drawn: the batches
    /// arriving meanwhile wait for that block rather than each drawing one.
    left: tokio::sync::Mutex<Range<i64>>,
}

impl IdBlocks {
    pub(crate) fn new(pool: MySqlPool) -> Self {
        IdBlocks {
            pool,
            left: tokio::sync::Mutex::new(0..0),
        }
    }

    /// The first of `n` consecutive fresh ids (`n` at least 1).
    pub(crate) async fn take(&self, n: usize) -> StoreResult<i64> {
        let n = i64::try_from(n.max(1)).map_err(StoreError::other)?;
        let mut left = self.left.lock().await;
        if left.end - left.start < n {
            // What remains of the old block is skipped: ids need not be dense.
            *left = self.draw(n.max(BLOCK)).await?;
        }
        let first = left.start;
        left.start += n;
        Ok(first)
    }

    /// Draws `n` ids from the shared counter, in autocommit.
    async fn draw(&self, n: i64) -> StoreResult<Range<i64>> {
        let mut s = Script::default();
        s.sql("UPDATE id_blocks SET next = LAST_INSERT_ID(next + ")
            .int(n)
            .sql(") WHERE name = 'coupons'");
        let at = s.end();
        let mut conn = self.pool.acquire().await.map_err(db_err)?;
        let drawn = &s.run(&mut conn).await?[at];
        let last = i64::try_from(drawn.last_id).map_err(StoreError::other)?;
        Ok(last - n + 1..last + 1)
    }

    pub(crate) fn pool(&self) -> &MySqlPool {
        &self.pool
    }
}
