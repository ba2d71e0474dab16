//! The outbox on PostgreSQL: where it ends and how its consumers read it, which are
//! PostgreSQL's own (by transaction, up to the oldest still running, since writers commit in
//! any order). Leases and the consumers' progress are written once in
//! `coupond_store_sql::scheduling`, as are the scheduler
//! ([`SchedulerStore`](coupond_store::SchedulerStore)) and the inbox
//! ([`InboxStore`](coupond_store::InboxStore)).

use coupond_store::{Event, OutboxPosition, StoreResult};

use crate::rows::{self, db_err};
use crate::store::PgStore;

impl PgStore {
    pub(crate) async fn outbox_head_q(&self) -> StoreResult<OutboxPosition> {
        let head: Option<(i64, i64)> = sqlx::query_as(
            "SELECT txid, id FROM outbox
             WHERE txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
             ORDER BY txid DESC, id DESC LIMIT 1",
        )
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(head.map_or(OutboxPosition::default(), |(txid, event_id)| {
            OutboxPosition { txid, event_id }
        }))
    }
}

coupond_store_sql::impl_outbox_store!(PgStore, {
    async fn outbox_read(&self, after: OutboxPosition, limit: u32) -> StoreResult<Vec<Event>> {
        // Only transactions older than every one still running: nothing can commit later
        // at an earlier position.
        let rows = sqlx::query(
            "SELECT * FROM outbox
             WHERE (txid, id) > ($1, $2)
               AND txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
             ORDER BY txid, id LIMIT $3",
        )
        .bind(after.txid)
        .bind(after.event_id)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter().map(rows::event).collect()
    }
});
