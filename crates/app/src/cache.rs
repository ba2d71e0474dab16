//! A small time-bounded cache for the hot request path (API keys, templates being claimed or
//! quoted, the coupon centre's shelf of open templates).
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
///
/// Every `remove` and `clear` moves the cache to a new generation. A reader that looked the
/// value up in the database reads [`TtlCache::generation`] first and inserts with
/// [`TtlCache::insert_from`]: if something was forgotten meanwhile (a key revoked, a template
/// aborted), its possibly stale copy is not kept.
#[derive(Debug)]
pub struct TtlCache<K, V> {
    ttl: Duration,
    max: usize,
    // A std mutex: held only to read or change the map, never across an await.
    map: Mutex<Entries<K, V>>,
}

#[derive(Debug)]
struct Entries<K, V> {
    generation: u64,
    map: HashMap<K, (Instant, V)>,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    pub fn new(ttl: Duration, max: usize) -> Self {
        TtlCache {
            ttl,
            max,
            map: Mutex::new(Entries {
                generation: 0,
                map: HashMap::new(),
            }),
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Entries<K, V>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn get(&self, k: &K) -> Option<V> {
        self.entries()
            .map
            .get(k)
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, v)| v.clone())
    }

    /// The current generation: read it before looking a value up elsewhere.
    pub fn generation(&self) -> u64 {
        self.entries().generation
    }

    pub fn insert(&self, k: K, v: V) {
        Self::put(&mut self.entries(), self.max, k, v);
    }

    /// Inserts `v` read at `generation`, unless something was forgotten since.
    pub fn insert_from(&self, generation: u64, k: K, v: V) {
        let mut e = self.entries();
        if e.generation == generation {
            Self::put(&mut e, self.max, k, v);
        }
    }

    fn put(e: &mut Entries<K, V>, max: usize, k: K, v: V) {
        if e.map.len() >= max {
            e.map.clear();
        }
        e.map.insert(k, (Instant::now(), v));
    }

    pub fn remove(&self, k: &K) {
        let mut e = self.entries();
        e.generation += 1;
        e.map.remove(k);
    }

    /// Forgets every entry.
    pub fn clear(&self) {
        let mut e = self.entries();
        e.generation += 1;
        e.map.clear();
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

    #[test]
    fn a_copy_read_before_a_forget_is_not_kept() {
        let c = TtlCache::new(Duration::from_secs(60), 10);
        let before = c.generation();
        c.clear(); // a revocation while the reader was at the database
        c.insert_from(before, 1, "stale");
        assert_eq!(c.get(&1), None);
        c.insert_from(c.generation(), 1, "fresh");
        assert_eq!(c.get(&1), Some("fresh"));
    }
}
