//! Why a claim failed ([`ClaimError`]), with the engine's own failures kept whole
//! ([`Internal`]), and how a store error becomes one.

use std::sync::Arc;

use coupond_domain::ClaimRejection;
use coupond_store::StoreError;

/// Why a claim failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimError {
    /// A rule refused it; the caller gets a 409 with the reason.
    Rejected(ClaimRejection),
    /// The database is unreachable; nothing was written for this claim.
    Unavailable,
    /// The engine is shutting down and takes no new claims.
    ShuttingDown,
    /// The idempotency key was used before for a different claim.
    KeyReused,
    /// The single-use code was redeemed by someone else.
    CodeTaken,
    /// Anything else (logged by the engine); nothing was written for this claim.
    Internal(Internal),
}

/// What went wrong inside the engine or the store, kept with its source so that whoever logs
/// it sees the whole cause chain. Cheap to clone: one failed batch answers all its claims.
#[derive(Clone, Debug)]
pub struct Internal(Arc<dyn std::error::Error + Send + Sync>);

impl Internal {
    /// An engine invariant that did not hold (a claim left without an outcome).
    pub(crate) fn broken(what: &'static str) -> Self {
        Internal(Arc::new(StoreError::other(what)))
    }
}

impl std::fmt::Display for Internal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Internal {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Two internal errors are the same failure when they share their cause (the same batch).
impl PartialEq for Internal {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Internal {}

pub(crate) fn store_error(e: StoreError) -> ClaimError {
    match e {
        StoreError::Unavailable(source) => {
            tracing::warn!(error = %source, "claim batch: database unavailable");
            ClaimError::Unavailable
        }
        other => {
            tracing::error!(error = %other.chain(), "claim batch failed");
            ClaimError::Internal(Internal(Arc::new(other)))
        }
    }
}
