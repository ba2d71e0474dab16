//! The mapping of driver errors into [`StoreError`], in one place.

use coupond_store::{Conflict, StoreError};

/// MySQL's error numbers for a server that is not there right now: too many connections
/// (1040), shutting down (1053, 1077, 1079, 1080), server gone or lost (2002, 2003, 2006,
/// 2013), and the connection killed (1927, MariaDB).
const UNAVAILABLE: [&str; 10] = [
    "1040", "1053", "1077", "1079", "1080", "2002", "2003", "2006", "2013", "1927",
];

pub(crate) fn db_err(e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::RowNotFound => StoreError::NotFound,
        sqlx::Error::Database(d) if d.is_unique_violation() => {
            StoreError::Conflict(Conflict::Unique)
        }
        sqlx::Error::Database(d) if d.is_foreign_key_violation() => {
            StoreError::Conflict(Conflict::Reference)
        }
        sqlx::Error::Database(d) if d.code().is_some_and(|c| UNAVAILABLE.contains(&c.as_ref())) => {
            StoreError::Unavailable(d.into())
        }
        e @ (sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_)) => {
            StoreError::Unavailable(e.into())
        }
        e => StoreError::other(e),
    }
}
