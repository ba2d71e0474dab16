//! Row conversions and the mapping of driver errors into [`StoreError`], in one place.
//!
//! The mappers both backends share are `coupond_store_sql::rows`; `coupon` here applies
//! them to coupons read with sqlx (through `exec::rows`).

use coupond_domain::Timestamp;
use coupond_store::{Event, StoreError};
use sqlx::postgres::PgRow;
use sqlx::Row;
use time::OffsetDateTime;

pub(crate) fn db_err(e: sqlx::Error) -> StoreError {
    // Class 08 (connection exception), 57P01..03 (admin shutdown, crash, cannot connect now),
    // 53300 (too many connections): the database is not there right now.
    coupond_store_sql::driver_error(e, |d| {
        d.code()
            .is_some_and(|c| c.starts_with("08") || c.starts_with("57P") || c == "53300")
    })
}

fn ts(dt: OffsetDateTime) -> Result<Timestamp, StoreError> {
    Timestamp::from_datetime(dt).ok_or_else(|| StoreError::other("instant out of range"))
}

fn get<'r, T>(r: &'r PgRow, col: &str) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    r.try_get(col).map_err(db_err)
}

pub(crate) fn event(r: &PgRow) -> Result<Event, StoreError> {
    Ok(Event {
        id: get(r, "id")?,
        txid: get(r, "txid")?,
        kind: get(r, "kind")?,
        at: ts(get(r, "at")?)?,
        body: get(r, "body")?,
    })
}
