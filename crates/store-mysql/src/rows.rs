//! The mapping of driver errors into [`StoreError`], in one place.

use coupond_store::StoreError;
use sqlx::mysql::MySqlDatabaseError;

/// MySQL's error numbers for a server that is not there right now: too many connections
/// (1040), shutting down (1053, 1077, 1079, 1080), server gone or lost (2002, 2003, 2006,
/// 2013), the connection killed (1927, MariaDB); and for a transaction InnoDB rolled back to
/// break a deadlock (1213) or that waited too long for a lock (1205). Each is a 503 with
/// `Retry-After`: nothing was written, and the same request may succeed at once.
const UNAVAILABLE: [u16; 12] = [
    1040, 1053, 1077, 1079, 1080, 2002, 2003, 2006, 2013, 1927, 1213, 1205,
];

/// InnoDB rolled the transaction back to break a deadlock (1213): nothing of it stayed, and
/// running it again is safe.
pub(crate) fn deadlock(e: &StoreError) -> bool {
    let StoreError::Unavailable(source) = e else {
        return false;
    };
    source
        .downcast_ref::<Box<dyn sqlx::error::DatabaseError>>()
        .and_then(|d| d.try_downcast_ref::<MySqlDatabaseError>())
        .is_some_and(|m| m.number() == 1213)
}

/// A statement broke a `CHECK` constraint (MariaDB 4025, MySQL 3819): in a claim batch, a stock
/// shard that no longer holds what the batch read (`claims::stock::take_into`).
pub(crate) fn stock_check_failed(e: &StoreError) -> bool {
    let StoreError::Other(source) = e else {
        return false;
    };
    source
        .downcast_ref::<sqlx::Error>()
        .and_then(|e| match e {
            sqlx::Error::Database(d) => d.try_downcast_ref::<MySqlDatabaseError>(),
            _ => None,
        })
        .is_some_and(|m| matches!(m.number(), 4025 | 3819))
}

pub(crate) fn db_err(e: sqlx::Error) -> StoreError {
    // The number, not `code()`: that is the SQLSTATE, shared by many errors.
    coupond_store_sql::driver_error(e, |d| {
        d.try_downcast_ref::<MySqlDatabaseError>()
            .is_some_and(|m| UNAVAILABLE.contains(&m.number()))
    })
}
