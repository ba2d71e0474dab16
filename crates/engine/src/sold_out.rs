//! [`SoldOutMemo`]: the templates this process has seen sold out, so a claim of one is
//! answered without a database round trip.
//!
//! Each entry keeps the stock it was seen with. A raise of the stock clears the flag and
//! records the new stock, so a batch that read the old terms and answers sold out afterwards
//! cannot set it again.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

use coupond_domain::TemplateId;

/// Per template: seen sold out or not, and at which stock. The lock is a `std` one, held only
/// to read or write one entry, never across an await.
#[derive(Debug, Default)]
pub struct SoldOutMemo(RwLock<HashMap<TemplateId, (bool, i64)>>);

impl SoldOutMemo {
    /// Whether `t` was seen sold out (and its stock not raised since).
    pub fn is_sold_out(&self, t: TemplateId) -> bool {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&t)
            .is_some_and(|(sold, _)| *sold)
    }

    /// Records `t` sold out at `stock`, unless its stock has been raised past that since.
    /// True if this is news (it was not marked sold out before).
    pub fn mark(&self, t: TemplateId, stock: i64) -> bool {
        self.record(t, true, stock)
    }

    /// Forgets that `t` was sold out: its stock was raised to `stock`.
    pub fn forget(&self, t: TemplateId, stock: i64) {
        self.record(t, false, stock);
    }

    /// Forgets every template seen sold out (notices may have been missed: a raise of the
    /// stock elsewhere would otherwise go unseen here). The next claim of each asks the
    /// database once.
    pub fn clear(&self) {
        self.0
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Sets `t`'s entry, unless it already holds a larger stock (newer terms); true if the
    /// flag changed.
    fn record(&self, t: TemplateId, sold: bool, stock: i64) -> bool {
        let mut memo = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let seen = memo.entry(t).or_insert((!sold, stock));
        if stock >= seen.1 {
            let changed = seen.0 != sold;
            *seen = (sold, stock);
            return changed;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raise_clears_it_and_old_terms_cannot_set_it_again() {
        let (memo, t) = (SoldOutMemo::default(), TemplateId::new(1).unwrap());
        assert!(!memo.is_sold_out(t));
        assert!(memo.mark(t, 10), "news");
        assert!(!memo.mark(t, 10), "not news twice");
        assert!(memo.is_sold_out(t));
        memo.forget(t, 20);
        assert!(!memo.is_sold_out(t));
        assert!(!memo.mark(t, 10));
        assert!(!memo.is_sold_out(t), "a batch that read stock 10 is stale");
        memo.mark(t, 20);
        assert!(memo.is_sold_out(t));
        memo.clear();
        assert!(!memo.is_sold_out(t), "forgotten after a resync");
    }
}
