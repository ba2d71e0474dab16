//! PostgreSQL's own way of planning reminders: the batch as six arrays, `unnest`ed into one
//! statement (`coupond_store_sql::inbox` has the rest of [`InboxStore`]).
//!
//! The shared statement is a multi-row `VALUES` list: PostgreSQL parses and plans it anew for
//! each batch size the reminder planner sends (they vary with the dispatcher's batches), and
//! binds six parameters a row. Here the text never changes, so the prepared statement is
//! parsed once per connection, and the batch is six binds whatever its size, in autocommit.
//! Measured by `cargo bench -p coupond-store-postgres --bench plan_reminders`.
//!
//! [`InboxStore`]: coupond_store::InboxStore

use coupond_store::{Reminder, StoreResult};

use crate::rows::db_err;
use crate::store::{dt, PgDb};

const PLAN: &str = "INSERT INTO reminders (user_id, template_id, day, span_start, span_end, due_at)
     SELECT * FROM unnest($1::text[], $2::int8[], $3::int8[], $4::timestamptz[],
                          $5::timestamptz[], $6::timestamptz[])
     ON CONFLICT DO NOTHING";

/// Plans `reminders`, skipping those already planned (and, of two in the batch with one key,
/// the second).
pub(crate) async fn plan_reminders(store: &PgDb, reminders: &[Reminder]) -> StoreResult<()> {
    if reminders.is_empty() {
        return Ok(());
    }
    let sorted = coupond_store_sql::inbox::in_lock_order(reminders);
    let n = sorted.len();
    let mut users = Vec::with_capacity(n);
    let mut templates = Vec::with_capacity(n);
    let mut days = Vec::with_capacity(n);
    let mut starts = Vec::with_capacity(n);
    let mut ends = Vec::with_capacity(n);
    let mut dues = Vec::with_capacity(n);
    for r in sorted {
        users.push(r.user_id.as_str());
        templates.push(r.template_id.get());
        days.push(r.day);
        starts.push(dt(r.expiring.start));
        ends.push(dt(r.expiring.end));
        dues.push(dt(r.due_at));
    }
    sqlx::query(PLAN)
        .bind(&users)
        .bind(&templates)
        .bind(&days)
        .bind(&starts)
        .bind(&ends)
        .bind(&dues)
        .execute(&store.pool)
        .await
        .map_err(db_err)?;
    Ok(())
}
