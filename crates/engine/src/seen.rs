//! Who was active when: every request a user makes marks them seen, without a database write
//! on the request's path.
//!
//! A request calls [`Seen::touch`]: an update of a map in memory (one lock of one of
//! [`SHARDS`] shards, one hash lookup), nothing else. A user is marked to be written at most
//! once per `resolution` (default 5 minutes): a touch within `resolution` of the last one
//! written changes nothing, so the stored instant lags the user's last request by less than
//! `resolution` plus a flush. The map holds one entry per user and at most `capacity` of
//! them: a touch of a new user while it is full is dropped (counted in
//! [`SEEN_DROPPED`](crate::telemetry::SEEN_DROPPED)) and wakes the flusher, which writes what
//! is waiting and forgets the users it wrote, so the map never grows past its bound.
//!
//! The flusher is a [`Worker`]: `serve` runs it supervised; each pass writes up to [`BATCH`]
//! waiting users in one background transaction ([`SeenStore::record_seen`], which keeps the
//! later instant, so instances writing the same user in any order agree), then sleeps
//! [`FLUSH_EVERY`] unless woken. On shutdown `serve` flushes what is left ([`Seen::flush`]).
//! A write that fails leaves its users waiting for the next pass.
//!
//! [`SeenStore::record_seen`]: coupond_store::SeenStore::record_seen

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use coupond_domain::{Timestamp, UserId};
use coupond_store::{Store, StoreResult};
use tokio::sync::Notify;

use crate::clock::Clock;
use crate::worker::{Pass, Worker};

/// Shards of the map: requests of different users rarely wait on one lock.
pub const SHARDS: usize = 16;
/// Most users written per transaction.
pub const BATCH: usize = 1_000;
/// How long the flusher sleeps between passes unless woken.
pub const FLUSH_EVERY: Duration = Duration::from_secs(5);

/// One user's entry: the instant last marked, and whether it still waits to be written.
#[derive(Clone, Copy, Debug)]
struct Slot {
    at: Timestamp,
    waiting: bool,
}

/// The map of users seen and the flusher's waker. Cheap to clone; clones share both.
#[derive(Clone)]
pub struct Seen {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    resolution: time::Duration,
    /// Entries per shard, at most.
    per_shard: usize,
    hasher: RandomState,
    shards: Vec<Mutex<HashMap<UserId, Slot>>>,
    wake: Notify,
}

impl std::fmt::Debug for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seen")
            .field("resolution", &self.inner.resolution)
            .field("capacity", &(self.inner.per_shard * SHARDS))
            .finish_non_exhaustive()
    }
}

impl Seen {
    /// Users are written at most once per `resolution`; at most `capacity` users are held
    /// in memory (at least [`SHARDS`]).
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        resolution: time::Duration,
        capacity: usize,
    ) -> Self {
        let per_shard = capacity.div_ceil(SHARDS).max(1);
        Seen {
            inner: Arc::new(Inner {
                store,
                clock,
                resolution,
                per_shard,
                hasher: RandomState::new(),
                shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
                wake: Notify::new(),
            }),
        }
    }

    fn shard(&self, user: &UserId) -> std::sync::MutexGuard<'_, HashMap<UserId, Slot>> {
        let i = (self.inner.hasher.hash_one(user.as_str()) % SHARDS as u64) as usize;
        self.inner.shards[i]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks `user` seen at `now`: in memory only (see the module).
    pub fn touch(&self, user: &UserId, now: Timestamp) {
        let mut map = self.shard(user);
        if let Some(slot) = map.get_mut(user) {
            // Within the resolution of the instant last marked: nothing to write. (A clock
            // that went back marks again.)
            if slot.at <= now && now < slot.at.plus(self.inner.resolution) {
                return;
            }
            *slot = Slot {
                at: now,
                waiting: true,
            };
            return;
        }
        if map.len() >= self.inner.per_shard {
            drop(map);
            metrics::counter!(crate::telemetry::SEEN_DROPPED).increment(1);
            self.inner.wake.notify_one();
            return;
        }
        map.insert(
            user.clone(),
            Slot {
                at: now,
                waiting: true,
            },
        );
    }

    /// The instant `user` was marked seen here and not written yet, if any.
    pub fn waiting(&self, user: &UserId) -> Option<Timestamp> {
        self.shard(user)
            .get(user)
            .filter(|s| s.waiting)
            .map(|s| s.at)
    }

    /// Users held in memory (waiting or recently written).
    pub fn len(&self) -> usize {
        self.inner
            .shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(PoisonError::into_inner).len())
            .sum()
    }

    /// Whether no user is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes up to [`BATCH`] waiting users in one transaction; how many. Users written are
    /// marked written; on an error they wait again.
    /// After a batch short of [`BATCH`] (nothing more waits), written users whose resolution
    /// has passed are forgotten.
    pub async fn run_once(&self) -> StoreResult<usize> {
        let batch = self.take(BATCH);
        if !batch.is_empty() {
            if let Err(e) = self.inner.store.record_seen(&batch).await {
                self.put_back(&batch);
                return Err(e);
            }
        }
        if batch.len() < BATCH {
            self.prune();
        }
        Ok(batch.len())
    }

    /// Writes every waiting user (shutdown, tests).
    pub async fn flush(&self) -> StoreResult<()> {
        while self.run_once().await? == BATCH {}
        Ok(())
    }

    /// Up to `max` waiting users, marked no longer waiting.
    fn take(&self, max: usize) -> Vec<(UserId, Timestamp)> {
        let mut out = Vec::new();
        for shard in &self.inner.shards {
            let mut map = shard.lock().unwrap_or_else(PoisonError::into_inner);
            for (user, slot) in map.iter_mut().filter(|(_, s)| s.waiting) {
                if out.len() == max {
                    return out;
                }
                slot.waiting = false;
                out.push((user.clone(), slot.at));
            }
        }
        out
    }

    fn put_back(&self, batch: &[(UserId, Timestamp)]) {
        for (user, _) in batch {
            if let Some(slot) = self.shard(user).get_mut(user) {
                slot.waiting = true;
            }
        }
    }

    /// Forgets written users whose resolution has passed (a touch would mark them again
    /// anyway); in a shard at least half full, every written user.
    fn prune(&self) {
        let now = self.inner.clock.now();
        let res = self.inner.resolution;
        for shard in &self.inner.shards {
            let mut map = shard.lock().unwrap_or_else(PoisonError::into_inner);
            if map.len() * 2 >= self.inner.per_shard {
                map.retain(|_, s| s.waiting);
            } else {
                map.retain(|_, s| s.waiting || (s.at <= now && now < s.at.plus(res)));
            }
        }
    }
}

/// Flushes while users wait, then sleeps [`FLUSH_EVERY`] unless woken (the map filled).
#[async_trait::async_trait]
impl Worker for Seen {
    fn name(&self) -> &'static str {
        "seen"
    }

    async fn pass(&self) -> StoreResult<Pass> {
        // A full batch: more may wait. Otherwise what arrives meanwhile waits for the next
        // pass, so requests trickling in do not make a transaction each.
        Ok(match self.run_once().await? {
            BATCH => Pass::Busy,
            _ => Pass::Idle(FLUSH_EVERY),
        })
    }

    fn retry_after(&self) -> Duration {
        FLUSH_EVERY
    }

    fn waker(&self) -> Option<&Notify> {
        Some(&self.inner.wake)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ManualClock;

    async fn setup(capacity: usize) -> (Seen, Arc<dyn Store>, ManualClock, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/seen.db", dir.path().display());
        let s = coupond_store_sqlite::SqliteDb::connect(&url).await.unwrap();
        s.migrate().await.unwrap();
        let store: Arc<dyn Store> = Arc::new(s);
        let clock = ManualClock::new(Timestamp::parse("2027-01-10T12:00:00Z").unwrap());
        let seen = Seen::new(
            store.clone(),
            Arc::new(clock.clone()),
            time::Duration::minutes(5),
            capacity,
        );
        (seen, store, clock, dir)
    }

    #[tokio::test]
    async fn a_user_is_written_at_most_once_per_resolution() {
        let (seen, store, clock, _dir) = setup(1_000).await;
        let ann = UserId::parse("ann").unwrap();
        let t0 = clock.now();
        seen.touch(&ann, t0);
        clock.advance(time::Duration::minutes(1));
        seen.touch(&ann, clock.now());
        assert_eq!(seen.waiting(&ann), Some(t0));
        assert_eq!(seen.run_once().await.unwrap(), 1);
        assert_eq!(store.last_seen(&ann).await.unwrap(), Some(t0));
        // Within the resolution: nothing waits, nothing is written.
        clock.advance(time::Duration::minutes(3));
        seen.touch(&ann, clock.now());
        assert_eq!(seen.waiting(&ann), None);
        assert_eq!(seen.run_once().await.unwrap(), 0);
        // Past it: written again.
        clock.advance(time::Duration::minutes(2));
        let t1 = clock.now();
        seen.touch(&ann, t1);
        seen.flush().await.unwrap();
        assert_eq!(store.last_seen(&ann).await.unwrap(), Some(t1));
        // Once written and past the resolution, the user is forgotten.
        clock.advance(time::Duration::minutes(6));
        seen.flush().await.unwrap();
        assert!(seen.is_empty());
    }

    #[tokio::test]
    async fn the_map_never_outgrows_its_capacity() {
        let (seen, store, clock, _dir) = setup(SHARDS * 2).await;
        for i in 0..500 {
            seen.touch(&UserId::parse(&format!("u-{i}")).unwrap(), clock.now());
            assert!(seen.len() <= SHARDS * 2);
        }
        let held = seen.len();
        seen.flush().await.unwrap();
        // What was held was written, and forgotten: room for more.
        assert!(seen.is_empty());
        let written = (0..500)
            .map(|i| UserId::parse(&format!("u-{i}")).unwrap())
            .collect::<Vec<_>>();
        let found = store.seen_among(&written, clock.now()).await.unwrap().len();
        assert_eq!(found, held);
    }
}
