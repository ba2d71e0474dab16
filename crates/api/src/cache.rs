//! A small time-bounded cache for the hot request path (API keys, templates being claimed or
//! quoted).
//!
//! Entries live `ttl` and are never trusted for anything the database decides: a cached
//! template only short-cuts the status and audience checks (the claim's transaction checks
//! again) and feeds quotes, which are advisory (a lock re-reads its templates and decides in
//! its transaction); a cached API key is at most `ttl` behind a revocation made by another
//! process.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A map whose entries expire after `ttl`; holds at most `max` entries (it starts over when
/// full, which keeps memory bounded without bookkeeping).
#[derive(Debug)]
pub struct TtlCache<K, V> {
    ttl: Duration,
    max: usize,
    map: Mutex<HashMap<K, (Instant, V)>>,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    pub fn new(ttl: Duration, max: usize) -> Self {
        TtlCache {
            ttl,
            max,
            map: Mutex::new(HashMap::new()),
        }
    }

    pub fn get(&self, k: &K) -> Option<V> {
        let map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(k)
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, v)| v.clone())
    }

    pub fn insert(&self, k: K, v: V) {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= self.max {
            map.clear();
        }
        map.insert(k, (Instant::now(), v));
    }

    pub fn remove(&self, k: &K) {
        self.map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(k);
    }

    /// Forgets every entry.
    pub fn clear(&self) {
        self.map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_the_size_is_bounded() {
        let c = TtlCache::new(Duration::ZERO, 2);
        c.insert(1, "a");
        assert_eq!(c.get(&1), None, "a zero ttl keeps nothing");
        let c = TtlCache::new(Duration::from_secs(60), 2);
        c.insert(1, "a");
        c.insert(2, "b");
        assert_eq!(c.get(&1), Some("a"));
        c.insert(3, "c");
        assert_eq!((c.get(&1), c.get(&3)), (None, Some("c")));
        c.remove(&3);
        assert_eq!(c.get(&3), None);
    }
}
