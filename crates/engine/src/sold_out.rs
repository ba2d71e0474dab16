//! [`SoldOutMemo`]: the templates this process has seen sold out, so a claim of one is
//! answered without a database round trip.
//!
//! The memo is a hint, never the truth: each entry expires `ttl` after it was recorded (the
//! same `cache_ttl` the template cache keeps), so a raise of the stock made on another
//! instance whose notice never arrived (no Redis, a notice lost, a forged one) is seen here
//! within `ttl`: the next claim asks the database, which answers with the current stock.
//!
//! Each entry keeps the stock it was seen with. A raise of the stock clears the flag and
//! records the new stock, so a batch that read the old terms and answers sold out afterwards
//! cannot set it again (until the entry expires: then the next answer starts it afresh).

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};
use std::time::Duration;

use coupond_domain::{TemplateId, Timestamp};

/// What is known of one template: sold out or not, at which stock, since when.
#[derive(Clone, Copy, Debug)]
struct Seen {
    sold: bool,
    stock: i64,
    at: Timestamp,
}

/// Per template: seen sold out or not, at which stock, and when. The lock is a `std` one,
/// held only to read or write one entry, never across an await.
#[derive(Debug)]
pub struct SoldOutMemo {
    ttl: Duration,
    seen: RwLock<HashMap<TemplateId, Seen>>,
}

impl SoldOutMemo {
    /// A memo whose entries are trusted for `ttl` after they were recorded (zero: never).
    pub fn new(ttl: Duration) -> Self {
        SoldOutMemo {
            ttl,
            seen: RwLock::default(),
        }
    }

    /// Whether `t` was seen sold out less than `ttl` before `now` (and its stock not raised
    /// since).
    pub fn is_sold_out(&self, t: TemplateId, now: Timestamp) -> bool {
        self.seen
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&t)
            .is_some_and(|s| s.sold && self.fresh(s, now))
    }

    /// Records `t` sold out at `stock` at `now`, unless its stock has been raised past that
    /// since. True if this is news (it was not marked sold out before).
    pub fn mark(&self, t: TemplateId, stock: i64, now: Timestamp) -> bool {
        self.record(t, true, stock, now)
    }

    /// Forgets that `t` was sold out: its stock was raised to `stock`.
    pub fn forget(&self, t: TemplateId, stock: i64, now: Timestamp) {
        self.record(t, false, stock, now);
    }

    /// Forgets every template seen sold out (notices may have been missed: a raise of the
    /// stock elsewhere would otherwise go unseen here until the entries expire). The next
    /// claim of each asks the database once.
    pub fn clear(&self) {
        self.seen
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Whether `s` is still to be trusted at `now`: recorded less than `ttl` ago, and not in
    /// the future (a clock set back would otherwise stretch its life).
    fn fresh(&self, s: &Seen, now: Timestamp) -> bool {
        let age = now.unix_micros().saturating_sub(s.at.unix_micros());
        age >= 0 && (age as u128) < self.ttl.as_micros()
    }

    /// Sets `t`'s entry, unless a fresh one already holds a larger stock (newer terms); true
    /// if the flag changed. An expired entry is replaced whatever it held: neither its flag
    /// nor its stock outlives `ttl`.
    fn record(&self, t: TemplateId, sold: bool, stock: i64, now: Timestamp) -> bool {
        let mut memo = self.seen.write().unwrap_or_else(PoisonError::into_inner);
        // Bounded: one entry per template ever claimed here, and a sweep when it grows.
        if memo.len() >= MAX_ENTRIES {
            memo.retain(|_, s| self.fresh(s, now));
        }
        let fresh = Seen {
            sold,
            stock,
            at: now,
        };
        match memo.get_mut(&t) {
            Some(seen) if self.fresh(seen, now) => {
                if stock < seen.stock {
                    return false;
                }
                let changed = seen.sold != sold;
                *seen = fresh;
                changed
            }
            Some(seen) => {
                *seen = fresh;
                sold
            }
            None => {
                memo.insert(t, fresh);
                sold
            }
        }
    }
}

/// Entries past which expired ones are swept out before another is added.
const MAX_ENTRIES: usize = 10_000;

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_unix_micros(1_800_000_000_000_000 + secs * 1_000_000).unwrap()
    }

    #[test]
    fn a_raise_clears_it_and_old_terms_cannot_set_it_again() {
        let memo = SoldOutMemo::new(Duration::from_secs(60));
        let (t, now) = (TemplateId::new(1).unwrap(), at(0));
        assert!(!memo.is_sold_out(t, now));
        assert!(memo.mark(t, 10, now), "news");
        assert!(!memo.mark(t, 10, now), "not news twice");
        assert!(memo.is_sold_out(t, now));
        memo.forget(t, 20, now);
        assert!(!memo.is_sold_out(t, now));
        assert!(!memo.mark(t, 10, now));
        assert!(
            !memo.is_sold_out(t, now),
            "a batch that read stock 10 is stale"
        );
        memo.mark(t, 20, now);
        assert!(memo.is_sold_out(t, now));
        memo.clear();
        assert!(!memo.is_sold_out(t, now), "forgotten after a resync");
    }

    /// A raise made elsewhere whose notice never came: the flag lapses after `ttl`.
    #[test]
    fn a_sold_out_answer_expires_after_the_ttl() {
        let memo = SoldOutMemo::new(Duration::from_secs(1));
        let t = TemplateId::new(1).unwrap();
        assert!(memo.mark(t, 3, at(0)));
        assert!(memo.is_sold_out(t, at(0)));
        assert!(!memo.is_sold_out(t, at(1)), "expired after 1 s");
        assert!(
            !memo.is_sold_out(t, at(-5)),
            "a clock set back does not stretch it"
        );
        assert!(memo.mark(t, 3, at(2)), "news again once expired");
    }

    /// A forged notice with a huge stock neither sticks nor blocks later marks past `ttl`.
    #[test]
    fn a_forged_stock_does_not_outlive_the_ttl() {
        let memo = SoldOutMemo::new(Duration::from_secs(1));
        let t = TemplateId::new(1).unwrap();
        memo.mark(t, i64::MAX, at(0));
        memo.forget(t, 500, at(0));
        assert!(
            memo.is_sold_out(t, at(0)),
            "within the ttl the larger stock wins"
        );
        assert!(!memo.is_sold_out(t, at(1)));
        assert!(memo.mark(t, 500, at(1)), "real terms are recorded again");
        assert!(memo.is_sold_out(t, at(1)));
    }

    #[test]
    fn a_zero_ttl_never_answers() {
        let memo = SoldOutMemo::new(Duration::ZERO);
        let t = TemplateId::new(1).unwrap();
        memo.mark(t, 3, at(0));
        assert!(!memo.is_sold_out(t, at(0)));
    }
}
