//! The outbox on SQLite: where it ends and how its consumers read it, which are SQLite's own
//! (by id: one writer, so ids grow in commit order). Leases and the consumers' progress are
//! written once in `coupond_store_sql::scheduling`, as are the scheduler
//! ([`SchedulerStore`](coupond_store::SchedulerStore)) and the inbox
//! ([`InboxStore`](coupond_store::InboxStore)).

use coupond_store::{OutboxPosition, StoreResult};

use crate::rows::db_err;
use crate::store::SqliteDb;

impl SqliteDb {
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
