//! [`SignInThrottle`]: failed account sign-ins slow down guessing. The first `free` failures
//! of an email or a client address cost nothing; each one after that makes the next attempt
//! wait, 1 s and doubling with each failure (1 s, 2 s, 4 s, ...), up to `max_delay`. A success clears the
//! email's count. An attempt made too early is refused without checking the password, with
//! the same words whether the email has an account or not.
//!
//! Counts are kept per instance, in memory, for at most [`MAX_TRACKED`] emails and addresses
//! (the oldest are dropped first) and forgotten `max_delay` after the last failure. The lock
//! is a `std` one, held only to read or update one entry, never across an await.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use coupond_domain::Timestamp;

/// The most emails and addresses tracked at once.
pub const MAX_TRACKED: usize = 100_000;

#[derive(Clone, Copy, Debug)]
struct Failures {
    count: u32,
    last: Timestamp,
}

/// Failed sign-ins per email and per client address.
#[derive(Debug)]
pub struct SignInThrottle {
    free: u32,
    max_delay: Duration,
    seen: Mutex<HashMap<String, Failures>>,
}

impl SignInThrottle {
    pub fn new(free: u32, max_delay: Duration) -> Self {
        SignInThrottle {
            free,
            max_delay,
            seen: Mutex::default(),
        }
    }

    /// How long `keys` (an email, an address) must still wait at `now` before an attempt is
    /// checked; `None`: it may go on.
    pub fn wait(&self, keys: &[&str], now: Timestamp) -> Option<Duration> {
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        keys.iter()
            .filter_map(|k| seen.get(*k).and_then(|f| self.remaining(f, now)))
            .max()
    }

    /// Records a failed attempt of `keys` at `now`.
    pub fn failed(&self, keys: &[&str], now: Timestamp) {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.len() >= MAX_TRACKED {
            self.forget_old(&mut seen, now);
        }
        for k in keys {
            let f = seen.entry((*k).to_owned()).or_insert(Failures {
                count: 0,
                last: now,
            });
            f.count = f.count.saturating_add(1);
            f.last = now;
        }
    }

    /// Clears `key`'s failures (a successful sign-in of that email).
    pub fn succeeded(&self, key: &str) {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    /// The delay `f` still imposes at `now`.
    fn remaining(&self, f: &Failures, now: Timestamp) -> Option<Duration> {
        // The first failure past the free ones waits 1 s, each next one twice as long.
        let over = f.count.checked_sub(self.free)?.checked_sub(1)?;
        let delay = Duration::from_secs(1u64 << over.min(30)).min(self.max_delay);
        let since =
            Duration::from_micros(now.unix_micros().saturating_sub(f.last.unix_micros()) as u64);
        delay.checked_sub(since).filter(|d| !d.is_zero())
    }

    /// Drops entries whose delay has passed, and if that is not enough, the oldest half.
    fn forget_old(&self, seen: &mut HashMap<String, Failures>, now: Timestamp) {
        let max = self.max_delay.as_micros() as i64;
        seen.retain(|_, f| now.unix_micros().saturating_sub(f.last.unix_micros()) < max);
        if seen.len() >= MAX_TRACKED {
            let mut lasts: Vec<i64> = seen.values().map(|f| f.last.unix_micros()).collect();
            lasts.sort_unstable();
            let cut = lasts[lasts.len() / 2];
            seen.retain(|_, f| f.last.unix_micros() > cut);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_unix_micros(1_800_000_000_000_000 + secs * 1_000_000).unwrap()
    }

    #[test]
    fn failures_past_the_free_ones_wait_longer_each_time() {
        let t = SignInThrottle::new(3, Duration::from_secs(60));
        for _ in 0..3 {
            assert_eq!(t.wait(&["a@x.io", "10.0.0.1"], at(0)), None);
            t.failed(&["a@x.io", "10.0.0.1"], at(0));
        }
        assert_eq!(t.wait(&["a@x.io"], at(0)), None, "three failures are free");
        t.failed(&["a@x.io", "10.0.0.1"], at(0));
        assert_eq!(t.wait(&["a@x.io"], at(0)), Some(Duration::from_secs(1)));
        t.failed(&["a@x.io", "10.0.0.1"], at(0));
        assert_eq!(t.wait(&["a@x.io"], at(0)), Some(Duration::from_secs(2)));
        assert_eq!(
            t.wait(&["b@x.io", "10.0.0.1"], at(1)),
            Some(Duration::from_secs(1))
        );
        assert_eq!(t.wait(&["a@x.io"], at(2)), None);
        for _ in 0..10 {
            t.failed(&["a@x.io"], at(2));
        }
        assert_eq!(
            t.wait(&["a@x.io"], at(2)),
            Some(Duration::from_secs(60)),
            "capped"
        );
        t.succeeded("a@x.io");
        assert_eq!(t.wait(&["a@x.io"], at(2)), None);
        assert_eq!(t.wait(&["c@x.io"], at(2)), None, "others never waited");
    }
}
