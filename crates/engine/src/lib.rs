//! coupond's engine: the moving parts around the store.
//!
//! - [`clock`]: [`Clock`], the one source of "now". Production reads the system clock; tests
//!   inject a [`ManualClock`] and move time by hand, so no test waits on wall-clock time.
//! - [`claims`]: [`ClaimEngine`], per-template group commit of claims: all claims waiting for
//!   a template are committed in one transaction and each caller is answered after the commit.
//!
//! The scheduler, outbox dispatcher and bulk workers described in `docs/ARCHITECTURE.md` join
//! them as they are built; each takes a shutdown signal and exposes `run_once` for tests.
#![forbid(unsafe_code)]

pub mod claims;
pub mod clock;

pub use claims::{ClaimEngine, ClaimError, ClaimMode, Claimed};
pub use clock::{Clock, ManualClock, SystemClock};
