//! [`driver_error`]: what an error of sqlx, on which every backend runs, means to the store.

use coupond_store::{Conflict, StoreError};
use sqlx::error::DatabaseError;

/// `e` as a [`StoreError`]: a row not found, a unique or foreign key violation, and the errors
/// of a database that is not there right now (the pool's, the network's, and those the backend's
/// `unavailable` recognises by their codes) as such; the rest as [`StoreError::Other`].
pub fn driver_error(
    e: sqlx::Error,
    unavailable: impl Fn(&dyn DatabaseError) -> bool,
) -> StoreError {
    match e {
        sqlx::Error::RowNotFound => StoreError::NotFound,
        sqlx::Error::Database(d) if d.is_unique_violation() => {
            StoreError::Conflict(Conflict::Unique)
        }
        sqlx::Error::Database(d) if d.is_foreign_key_violation() => {
            StoreError::Conflict(Conflict::Reference)
        }
        sqlx::Error::Database(d) if unavailable(&*d) => StoreError::Unavailable(d.into()),
        e @ (sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_)) => {
            StoreError::Unavailable(e.into())
        }
        e => StoreError::other(e),
    }
}
