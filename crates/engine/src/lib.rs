//! coupond's engine: the moving parts around the store.
//!
//! - [`clock`]: [`Clock`], the one source of "now". Production reads the system clock; tests
//!   inject a [`ManualClock`] and move time by hand, so no test waits on wall-clock time.
//!
//! The claim batcher, scheduler, outbox dispatcher and bulk workers described in
//! `docs/ARCHITECTURE.md` live here as they are built; each takes a shutdown signal and
//! exposes `run_once` for tests.
#![forbid(unsafe_code)]

pub mod clock;

pub use clock::{Clock, ManualClock, SystemClock};
