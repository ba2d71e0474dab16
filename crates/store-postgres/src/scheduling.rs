//! The outbox on PostgreSQL: where it ends and how its consumers read it, which are
//! PostgreSQL's own (by transaction, up to the oldest still running, since writers commit in
//! any order). Leases and the consumers' progress are written once in
//! `coupond_store_sql::scheduling`, as are the scheduler
//! ([`SchedulerStore`](coupond_store::SchedulerStore)) and the inbox
//! ([`InboxStore`](coupond_store::InboxStore)).

use coupond_store::{OutboxPosition, StoreResult};

use crate::rows::db_err;
use crate::store::PgDb;

impl PgDb {
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
