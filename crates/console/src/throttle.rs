//! [`SignInThrottle`]: failed account sign-ins slow down guessing. The first `free` failures
//! of an email or a client address cost nothing; each one after that makes the next attempt
//! wait, 1 s and doubling with each failure (1 s, 2 s, 4 s, ...), up to `max_delay`. A success clears the
//! email's count. An attempt made too early is refused without checking the password, with
//! the same words whether the email has an account or not.
//!
//! An attempt is counted as a failure when it is let through, before its password is checked
//! ([`SignInThrottle::attempt`]), and forgiven if it succeeds: counted after the check, a burst
//! sent at once was all let through while the first checks were still running.
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

    /// Lets an attempt of `keys` through at `now` and counts it as failed until
    /// [`SignInThrottle::succeeded`] says otherwise, in one step, so that attempts sent at once
    /// are counted one after another; or how long `keys` must still wait.
    pub fn attempt(&self, keys: &[&str], now: Timestamp) -> Result<(), Duration> {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let wait = keys
            .iter()
            .filter_map(|k| seen.get(*k).and_then(|f| self.remaining(f, now)))
            .max();
        if let Some(wait) = wait {
            return Err(wait);
        }
        self.count(&mut seen, keys, now);
        Ok(())
    }

    fn count(&self, seen: &mut HashMap<String, Failures>, keys: &[&str], now: Timestamp) {
        if seen.len() >= MAX_TRACKED {
            self.forget_old(seen, now);
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

    /// A successful sign-in of the email `email` from `others` (its client address): the
    /// email's failures are cleared, and the attempt [`SignInThrottle::attempt`] counted
    /// against each of `others` is taken back (an office of many people shares an address).
    pub fn succeeded(&self, email: &str, others: &[&str]) {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.remove(email);
        for k in others {
            if let Some(f) = seen.get_mut(*k) {
                f.count = f.count.saturating_sub(1);
            }
        }
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
        let both = ["a@x.io", "10.0.0.1"];
        for _ in 0..4 {
            assert_eq!(t.attempt(&both, at(0)), Ok(()), "three failures are free");
        }
        assert_eq!(t.attempt(&["a@x.io"], at(0)), Err(Duration::from_secs(1)));
        assert_eq!(t.attempt(&["a@x.io"], at(1)), Ok(()));
        assert_eq!(t.attempt(&["a@x.io"], at(1)), Err(Duration::from_secs(2)));
        assert_eq!(
            t.attempt(&["b@x.io", "10.0.0.1"], at(0)),
            Err(Duration::from_secs(1)),
            "the address waits too"
        );
        assert_eq!(t.attempt(&["a@x.io"], at(3)), Ok(()));
        for s in 0..10 {
            let _ = t.attempt(&["a@x.io"], at(3 + (1 << s.min(6))));
        }
        let last = at(3 + 64);
        assert!(
            t.attempt(&["a@x.io"], last).unwrap_err() <= Duration::from_secs(60),
            "capped"
        );
        t.succeeded("a@x.io", &[]);
        assert_eq!(t.attempt(&["a@x.io"], last), Ok(()));
        assert_eq!(t.attempt(&["c@x.io"], last), Ok(()), "others never waited");
    }

    /// Attempts made at once are counted as they are let through: past the free ones, the
    /// next is refused before any of them has finished; a success takes its count back from
    /// the address and clears the email.
    #[test]
    fn attempts_count_before_they_are_checked() {
        let t = SignInThrottle::new(3, Duration::from_secs(60));
        let keys = ["email:a@x.io", "ip:10.0.0.1"];
        for _ in 0..4 {
            assert_eq!(t.attempt(&keys, at(0)), Ok(()));
        }
        assert_eq!(t.attempt(&keys, at(0)), Err(Duration::from_secs(1)));
        assert_eq!(
            t.attempt(&["email:b@x.io", "ip:10.0.0.1"], at(0)),
            Err(Duration::from_secs(1))
        );
        t.succeeded("email:a@x.io", &["ip:10.0.0.1"]);
        assert_eq!(
            t.attempt(&keys, at(0)),
            Ok(()),
            "one taken back from the address"
        );
        assert_eq!(t.attempt(&keys, at(0)), Err(Duration::from_secs(1)));
    }
}
