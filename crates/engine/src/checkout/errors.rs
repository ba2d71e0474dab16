//! Why a quote, a lock or an extension was not made.

use coupond_domain::Timestamp;
use coupond_store::StoreError;

/// Why a quote cannot be made.
#[derive(Debug)]
pub enum QuoteError {
    /// A named coupon is not one of the order's user (or does not exist): its position.
    NotTheUsers(usize),
    Store(StoreError),
}

impl From<StoreError> for QuoteError {
    fn from(e: StoreError) -> Self {
        QuoteError::Store(e)
    }
}

/// Why a deadline asked for (`hold_until`) is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldError {
    /// It is not after now.
    NotAfterNow,
    /// It is later than this instant: now + `max_lock_ttl` for a lock; for an extension,
    /// `max_lock_ttl` from when the lock was taken or its coupons' earliest validity end.
    TooFar(Timestamp),
}

/// Why a lock or an extension was not made: its deadline, or the store.
#[derive(Debug)]
pub enum CheckoutError {
    Hold(HoldError),
    Store(StoreError),
}

impl std::fmt::Display for CheckoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckoutError::Hold(HoldError::NotAfterNow) => {
                f.write_str("hold_until is not after now")
            }
            CheckoutError::Hold(HoldError::TooFar(latest)) => {
                write!(
                    f,
                    "hold_until is later than {latest} (max_lock_ttl from the lock, or its \
                     coupons' validity)"
                )
            }
            CheckoutError::Store(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for CheckoutError {}

impl From<StoreError> for CheckoutError {
    fn from(e: StoreError) -> Self {
        CheckoutError::Store(e)
    }
}

impl From<HoldError> for CheckoutError {
    fn from(e: HoldError) -> Self {
        CheckoutError::Hold(e)
    }
}
