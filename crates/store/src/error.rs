//! The storage error: small on purpose. Backends map their driver errors into it in one
//! function each; the API maps it to HTTP in one place.

use std::error::Error as StdError;

/// What can go wrong in storage, as far as callers care.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The record does not exist.
    #[error("not found")]
    NotFound,
    /// The write conflicts with the current state; [`Conflict`] says which rule it broke.
    #[error("conflict: {0}")]
    Conflict(Conflict),
    /// The database could not be reached in time; retrying later may succeed.
    #[error("database unavailable")]
    Unavailable(#[source] Box<dyn StdError + Send + Sync>),
    /// A stored record breaks an invariant every record keeps (see `records`): reported, never
    /// served as valid. Names the record and the broken rule; logged, never shown to callers.
    #[error("corrupt record: {0}")]
    Corrupt(String),
    /// Anything else: a bug or a broken database. Logged, never shown to callers.
    #[error("storage failure")]
    Other(#[source] Box<dyn StdError + Send + Sync>),
}

/// Which rule a conflicting write broke: callers match on it, never on text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Conflict {
    /// A unique key is taken (a code, an external id, an idempotency record).
    #[error("unique")]
    Unique,
    /// The record changed since it was read (its version moved on).
    #[error("version")]
    Version,
    /// A cap decided in the database is reached (bindings per listing, webhooks per owner).
    #[error("limit")]
    Limit,
    /// A record it refers to does not exist.
    #[error("reference")]
    Reference,
    /// A template's stock may not go below what is claimed already (this many).
    #[error("below claimed ({0})")]
    BelowClaimed(i64),
}

impl StoreError {
    /// Wraps any error as [`StoreError::Other`].
    pub fn other(e: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        StoreError::Other(e.into())
    }

    /// A [`StoreError::Corrupt`] saying what is wrong.
    pub fn corrupt(what: impl Into<String>) -> Self {
        StoreError::Corrupt(what.into())
    }

    /// This error and its sources, `: `-joined, for logs (the `Display` alone hides the cause).
    pub fn chain(&self) -> String {
        chain(self)
    }
}

/// Any error and its sources, `: `-joined, for logs: the one cause-chain formatter every
/// layer uses.
pub fn chain(e: &dyn StdError) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

pub type StoreResult<T> = Result<T, StoreError>;
