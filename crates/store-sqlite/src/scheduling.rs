//! The outbox on SQLite: where it ends and how its consumers read it, which are SQLite's own
//! (by id: one writer, so ids grow in commit order). Leases and the consumers' progress are
//! written once in `coupond_store_sql::scheduling`, as are the scheduler
//! ([`SchedulerStore`](coupond_store::SchedulerStore)) and the inbox
//! ([`InboxStore`](coupond_store::InboxStore)).

use coupond_store::{Event, OutboxPosition, StoreResult};

use crate::rows::{self, db_err};
use crate::store::SqliteStore;

impl SqliteStore {
    pub(crate) async fn outbox_head_q(&self) -> StoreResult<OutboxPosition> {
        let id: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) FROM outbox")
            .fetch_one(&self.reader)
            .await
            .map_err(db_err)?;
        Ok(OutboxPosition {
            txid: 0,
            event_id: id,
        })
    }
}

coupond_store_sql::impl_outbox_store!(SqliteStore, {
    async fn outbox_read(&self, after: OutboxPosition, limit: u32) -> StoreResult<Vec<Event>> {
        // One writer: ids grow in commit order, so the id alone is the position. The page is
        // one aggregated row (see `rows::EVENT_JSON`), sorted again here.
        let page: String = sqlx::query_scalar(&format!(
            "SELECT json_group_array({}) FROM \
             (SELECT * FROM outbox WHERE id > ? ORDER BY id LIMIT ?)",
            rows::EVENT_JSON
        ))
        .bind(after.event_id)
        .bind(i64::from(limit))
        .fetch_one(&self.reader)
        .await
        .map_err(db_err)?;
        rows::events_json(&page)
    }
});
