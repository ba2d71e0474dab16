//! The injected clock.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use coupond_domain::Timestamp;
use time::{Duration, OffsetDateTime};

/// The source of "now" for every rule and status computation.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        // The system clock is always within the representable range.
        Timestamp::from_datetime(OffsetDateTime::now_utc()).unwrap_or(Timestamp::UNIX_EPOCH)
    }
}

/// A clock that only moves when told to; clones share the same instant.
#[derive(Clone, Debug)]
pub struct ManualClock {
    // Microseconds since the epoch. An atomic rather than a mutex: readers are on every
    // request path and never need more than one consistent value.
    micros: Arc<AtomicI64>,
}

impl ManualClock {
    pub fn new(start: Timestamp) -> Self {
        ManualClock {
            micros: Arc::new(AtomicI64::new(start.unix_micros())),
        }
    }

    pub fn set(&self, t: Timestamp) {
        self.micros.store(t.unix_micros(), Ordering::SeqCst);
    }

    pub fn advance(&self, d: Duration) {
        self.micros
            .fetch_add(d.whole_microseconds() as i64, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_unix_micros(self.micros.load(Ordering::SeqCst))
            .unwrap_or(Timestamp::UNIX_EPOCH)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let start = Timestamp::parse("2026-01-01T00:00:00Z").expect("valid");
        let c = ManualClock::new(start);
        let shared = c.clone();
        assert_eq!(c.now(), start);
        shared.advance(Duration::minutes(5));
        assert_eq!(c.now(), start.plus(Duration::minutes(5)));
        c.set(start);
        assert_eq!(shared.now(), start);
    }
}
