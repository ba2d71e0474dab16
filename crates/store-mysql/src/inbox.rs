//! MySQL's own way of planning reminders: the batch as one [`Script`], its values written as
//! literals (`coupond_store_sql::inbox` has the rest of [`InboxStore`]).
//!
//! The shared statement is a multi-row `VALUES` list of bound values: on MySQL each batch size
//! the reminder planner sends (they vary with the dispatcher's batches) is a statement of its
//! own to prepare, a round trip and a parameter definition per value sent back, and a
//! transaction of more than one list is a round trip more for its `BEGIN`, each list and its
//! `COMMIT`. Here the lists, and the transaction around more than one, are one text.
//!
//! [`InboxStore`]: coupond_store::InboxStore

use coupond_store::{Reminder, StoreResult};
use coupond_store_sql::inbox::{in_lock_order, CHUNK};

use crate::exec::ScriptTx;
use crate::script::Script;
use crate::store::MysqlDb;

/// Plans `reminders`, skipping those already planned (and, of two in the batch with one key,
/// the second).
pub(crate) async fn plan_reminders(store: &MysqlDb, reminders: &[Reminder]) -> StoreResult<()> {
    if reminders.is_empty() {
        return Ok(());
    }
    let mut tx = ScriptTx::acquire(&store.pool).await?;
    // On an error `tx` is dropped open and its connection closed: the server rolls back.
    tx.run(&planning(reminders), true).await.map(drop)
}

/// The script that plans `reminders` (not empty): one insert per [`CHUNK`], in one
/// transaction when there is more than one.
fn planning(reminders: &[Reminder]) -> Script {
    let sorted = in_lock_order(reminders);
    let several = sorted.len() > CHUNK;
    let mut s = Script::default();
    if several {
        s.sql("START TRANSACTION").end();
    }
    for chunk in sorted.chunks(CHUNK) {
        s.rows(
            "INSERT INTO reminders (user_id, template_id, day, span_start, span_end, due_at) \
             VALUES ",
            chunk,
            |s, r| {
                s.text(r.user_id.as_str())
                    .sql(", ")
                    .int(r.template_id.get())
                    .sql(", ")
                    .int(r.day)
                    .sql(", ")
                    .time(r.expiring.start)
                    .sql(", ")
                    .time(r.expiring.end)
                    .sql(", ")
                    .time(r.due_at);
            },
        )
        .sql(" ON DUPLICATE KEY UPDATE day = day")
        .end();
    }
    if several {
        s.sql("COMMIT").end();
    }
    s
}
