//! Orders paid without a coupon
//! ([`CheckoutStore::record_plain`](coupond_store::CheckoutStore::record_plain)), kept as `orders`
//! rows with `plain = 1` so an order id is one namespace for locks and records: the campaign
//! figures set their average value beside the orders that used a coupon (`figures::plain_sql`).

use coupond_store::checkout::{PlainOrder, RecordOutcome};
use coupond_store::{StoreError, StoreResult};

use crate::checkout::ORDER_COLS;
use crate::rows::order as order_record;
use crate::{sql, Db, Dialect, Json, Work};

/// Inserts the order unless its id is taken (one statement, committed at once), then reads
/// the row: the same request's fingerprint answers the order, another is a conflict.
///
/// The insert is its own transaction, and never locks the row for an update: on MariaDB,
/// records of one new id racing (`INSERT ... ON DUPLICATE KEY UPDATE`, or a locking read
/// after the insert) each hold a shared lock on the row the first one inserted and then ask
/// for an exclusive one, and deadlock. `INSERT IGNORE` (MariaDB) and `ON CONFLICT DO
/// NOTHING` wait for the first insert's commit and then leave the row alone; the read after
/// them sees it committed.
pub async fn record_plain(db: &dyn Db, o: &PlainOrder<'_>) -> StoreResult<RecordOutcome> {
    let d = db.dialect();
    let (ignore, nothing) = match d {
        Dialect::Mysql => (" IGNORE", ""),
        _ => ("", " ON CONFLICT DO NOTHING"),
    };
    let insert = sql(format!(
        "INSERT{ignore} INTO orders (order_id, user_id, state, fingerprint, deadline, answer,
                                    created_at, ended_at, subtotal, discount, currency, plain,
                                    merchant_id)
         VALUES ($1, $2, 'confirmed', $3, $4, $5, $4, $4, $6, 0, $7, 1, $8){nothing}"
    ))
    .bind(o.order_id.as_str())
    .bind(o.user.as_str())
    .bind(&o.fingerprint[..])
    .bind(o.now)
    .bind(Json(o.answer.to_string()))
    .bind(o.subtotal.minor())
    .bind(o.currency)
    .bind(o.merchant.map(|m| m.get()));
    let mut tx = db.begin(Work::Request).await?;
    if tx.execute(insert).await? == 0 {
        // A replay (or another request's id): nothing new to put in the audit trail.
        coupond_store::audit::discard();
    }
    tx.commit().await?;
    let read = sql(format!(
        "SELECT {ORDER_COLS}, fingerprint FROM orders WHERE order_id = $1"
    ))
    .bind(o.order_id.as_str());
    let row = db
        .read_optional(read)
        .await?
        .ok_or_else(|| StoreError::other("an order vanished"))?;
    Ok(if row.bytes("fingerprint")? == o.fingerprint {
        RecordOutcome::Recorded(order_record(&row)?)
    } else {
        RecordOutcome::OrderConflict
    })
}
