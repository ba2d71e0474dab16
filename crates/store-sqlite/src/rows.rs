//! Row conversions and the mapping of driver errors into [`StoreError`], in one place.
//!
//! The mappers both backends share are `coupond_store_sql::rows`; `coupon` here applies
//! them to coupons read with sqlx (through `exec::rows`).

use coupond_domain::{Coupon, CouponId, CouponStatus, Money, OrderId, TemplateId};
use coupond_domain::{Timestamp, UserId};
use coupond_store::{Event, StoreError};

pub(crate) fn db_err(e: sqlx::Error) -> StoreError {
    // SQLITE_BUSY / SQLITE_LOCKED (any extended code) after the busy timeout: another process
    // holds the lock.
    coupond_store_sql::driver_error(e, |d| {
        d.code()
            .and_then(|c| c.parse::<i32>().ok())
            .is_some_and(|c| matches!(c & 0xff, 5 | 6))
    })
}

pub(crate) fn ts(micros: i64) -> Result<Timestamp, StoreError> {
    Timestamp::from_unix_micros(micros).ok_or_else(|| StoreError::other("instant out of range"))
}

fn opt_ts(micros: Option<i64>) -> Result<Option<Timestamp>, StoreError> {
    micros.map(ts).transpose()
}

fn money(v: i64) -> Result<Money, StoreError> {
    Money::new(v).map_err(StoreError::other)
}

fn id<T>(v: i64, f: fn(i64) -> Result<T, String>) -> Result<T, StoreError> {
    f(v).map_err(StoreError::other)
}

/// A coupon's columns, as [`coupon_at`] reads them.
type CouponColumns = (
    i64,
    i64,
    String,
    String,
    i64,
    i64,
    i64,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

/// The columns [`coupon_at`] reads, in [`CouponColumns`]' order.
pub(crate) const COUPON_COLUMNS: [&str; 12] = [
    "id",
    "template_id",
    "user_id",
    "status",
    "claimed_at",
    "valid_from",
    "valid_until",
    "code",
    "order_id",
    "locked_until",
    "discount",
    "used_at",
];

/// The coupon in a `rusqlite` row (a wallet reader's, see `threads`) whose
/// [`COUPON_COLUMNS`] are at `at`.
pub(crate) fn coupon_at(r: &rusqlite::Row<'_>, at: &[usize; 12]) -> Result<Coupon, StoreError> {
    let get = |e: rusqlite::Error| StoreError::other(e);
    let c: CouponColumns = (
        r.get(at[0]).map_err(get)?,
        r.get(at[1]).map_err(get)?,
        r.get(at[2]).map_err(get)?,
        r.get(at[3]).map_err(get)?,
        r.get(at[4]).map_err(get)?,
        r.get(at[5]).map_err(get)?,
        r.get(at[6]).map_err(get)?,
        r.get(at[7]).map_err(get)?,
        r.get(at[8]).map_err(get)?,
        r.get(at[9]).map_err(get)?,
        r.get(at[10]).map_err(get)?,
        r.get(at[11]).map_err(get)?,
    );
    coupon_of(c)
}

/// An outbox row as a JSON array, for [`events_json`]: the outbox's reader takes a page of
/// events as one row, as sqlx hands each row from its SQLite thread to the task on its own,
/// with a wake-up each.
pub(crate) const EVENT_JSON: &str = "json_array(id, kind, at, json(body))";

/// The events of a `json_group_array(EVENT_JSON)` value, in id order.
pub(crate) fn events_json(text: &str) -> Result<Vec<Event>, StoreError> {
    let all: Vec<(i64, String, i64, serde_json::Value)> =
        serde_json::from_str(text).map_err(StoreError::other)?;
    let mut events = all
        .into_iter()
        .map(|(id, kind, at, body)| {
            Ok(Event {
                id,
                txid: 0,
                kind,
                at: ts(at)?,
                body,
            })
        })
        .collect::<Result<Vec<Event>, StoreError>>()?;
    events.sort_by_key(|e| e.id);
    Ok(events)
}

fn coupon_of(c: CouponColumns) -> Result<Coupon, StoreError> {
    let (id_, template, user, status, claimed, from, until, code, order, locked, discount, used) =
        c;
    Ok(Coupon {
        id: id(id_, CouponId::new)?,
        template_id: id(template, TemplateId::new)?,
        user_id: UserId::parse(&user).map_err(StoreError::other)?,
        stored_status: CouponStatus::parse(&status)
            .ok_or_else(|| StoreError::other("unknown coupon status"))?,
        claimed_at: ts(claimed)?,
        valid_from: ts(from)?,
        valid_until: ts(until)?,
        code,
        order_id: order
            .map(|o| OrderId::parse(&o).map_err(StoreError::other))
            .transpose()?,
        locked_until: opt_ts(locked)?,
        discount: discount.map(money).transpose()?,
        used_at: opt_ts(used)?,
    })
}
