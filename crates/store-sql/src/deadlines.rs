//! Moving a lock's deadline later ([`CheckoutStore::extend_order`](coupond_store::CheckoutStore::extend_order)):
//! the order's `deadline` and its locked coupons' `locked_until`, under the order's row lock,
//! as confirm, cancel and the sweeper take it (see `checkout`), so each of them either ends
//! the lock before the extension or finds the new deadline.

use coupond_domain::{OrderId, Timestamp};
use coupond_store::audit;
use coupond_store::checkout::{ExtendStep, OrderState};
use coupond_store::{StoreError, StoreResult};

use crate::checkout::{expire, order_row};
use crate::{sql, Db, Work};

/// Moves locked order `order`'s deadline later to `deadline`. Anything but a move (the same
/// deadline again, an earlier one, an order no longer locked) changes nothing and drops the
/// audit entry the caller made pending; a lock already past its deadline is ended as expired.
pub async fn extend_order(
    db: &dyn Db,
    order: &OrderId,
    deadline: Timestamp,
    now: Timestamp,
) -> StoreResult<ExtendStep> {
    let d = db.dialect();
    let mut tx = db.begin(Work::Request).await?;
    let (record, _) = order_row(&mut *tx, d, order, true)
        .await?
        .ok_or(StoreError::NotFound)?;
    let step = match record.state {
        OrderState::Confirmed | OrderState::Cancelled | OrderState::Expired => {
            ExtendStep::Ended(record)
        }
        // Past the deadline the lock has ended by itself; the extension finds it so.
        OrderState::Locked if now >= record.deadline => {
            let ended = expire(&mut *tx, d, &record, now).await?;
            audit::discard();
            tx.commit().await?;
            return Ok(ExtendStep::Ended(ended));
        }
        OrderState::Locked if deadline == record.deadline => ExtendStep::Already(record),
        OrderState::Locked if deadline < record.deadline => ExtendStep::Earlier(record),
        OrderState::Locked => {
            let moved = tx
                .execute(
                    sql("UPDATE orders SET deadline = $1 WHERE order_id = $2 AND state = 'locked'")
                        .bind(deadline)
                        .bind(order.as_str()),
                )
                .await?;
            if moved != 1 {
                return Err(StoreError::other(
                    "the order left `locked` while this transaction held it",
                ));
            }
            tx.execute(
                sql(format!(
                    "UPDATE {} SET locked_until = $1, updated_at = $2
                     WHERE order_id = $3 AND status = 'locked'",
                    d.coupons_of_order()
                ))
                .bind(deadline)
                .bind(now)
                .bind(order.as_str()),
            )
            .await?;
            tx.commit().await?;
            return Ok(ExtendStep::Done(coupond_store::OrderRecord {
                deadline,
                ..record
            }));
        }
    };
    // Nothing to write: the transaction ends without a commit, and records nothing.
    audit::discard();
    Ok(step)
}
