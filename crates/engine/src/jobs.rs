//! The one shape of a chunked background job (crates.io's `BackgroundJob`, made resumable):
//! bulk issuance, tag uploads and code batches are kinds ([`JobKind`]) of one runner,
//! [`Jobs`], which works them a chunk per transaction with the same progress, resumption,
//! pacing and fair turns per owner.
//!
//! - [`JobKind`]: what a kind knows: its open jobs and their owners, and one chunk of one job
//!   (a store transaction that also records the job's progress, so after a crash the next
//!   chunk starts where the last committed one ended).
//! - [`Jobs`]: the runner: chunks sized to a target time ([`Pacer`]), owners taking turns
//!   ([`Turns`]), a waker, and the supervised loop ([`Worker`]).
//! - [`Lists`]: the cache of each open job's item list, read from the database once per job
//!   and process, not once per chunk.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use coupond_domain::Timestamp;
use coupond_store::{OpenJob, Store, StoreResult};
use tokio::sync::Notify;

use crate::clock::Clock;
use crate::pacing::Pacer;
use crate::worker::{Pass, Worker};

/// A kind of chunked job.
#[async_trait::async_trait]
pub trait JobKind: Default + Send + Sync + 'static {
    /// A job as a chunk leaves it.
    type Job: Send + Sync + 'static;
    /// The loop's name, in logs and metrics.
    const NAME: &'static str;
    /// Most items per chunk (the [`Pacer`] may take fewer).
    const CHUNK: u32;
    /// How long the loop sleeps with nothing to do, unless woken (a job another instance
    /// created is picked up this late).
    const IDLE: Duration;

    /// The open jobs, oldest first, with their owners.
    async fn open(&self, store: &Arc<dyn Store>) -> StoreResult<Vec<OpenJob>>;

    /// One chunk of at most `size` items of job `id`, in one transaction with the job's
    /// progress; `None` if the job is not open or another instance holds it now.
    async fn chunk(
        &self,
        store: &Arc<dyn Store>,
        id: i64,
        size: u32,
        now: Timestamp,
    ) -> StoreResult<Option<Self::Job>>;

    /// Whether `job` is still open (then the chunk that left it so was a full one).
    fn is_open(job: &Self::Job) -> bool;

    /// Job `id` ended, or is another instance's: drop what is kept for it.
    fn forget(&self, _id: i64) {}
}

/// Works the open jobs of kind `K`, a chunk at a time. Cheap to clone; clones share the
/// kind's caches, the pacing, the turns and the waker.
pub struct Jobs<K: JobKind> {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    kind: Arc<K>,
    /// Rung when a job is created here, so the loop need not wait out its idle sleep.
    wake: Arc<Notify>,
    pacer: Arc<Pacer>,
    /// Owners take turns, a chunk each.
    turns: Arc<Turns>,
}

impl<K: JobKind> Clone for Jobs<K> {
    fn clone(&self) -> Self {
        Jobs {
            store: self.store.clone(),
            clock: self.clock.clone(),
            kind: self.kind.clone(),
            wake: self.wake.clone(),
            pacer: self.pacer.clone(),
            turns: self.turns.clone(),
        }
    }
}

impl<K: JobKind> std::fmt::Debug for Jobs<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("kind", &K::NAME)
            .finish_non_exhaustive()
    }
}

impl<K: JobKind> Jobs<K> {
    /// Chunks are sized to take about `txn_target` each (zero: always `K::CHUNK` items).
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, txn_target: Duration) -> Self {
        Jobs {
            store,
            clock,
            kind: Arc::default(),
            wake: Arc::new(Notify::new()),
            pacer: Arc::new(Pacer::new(txn_target, K::CHUNK)),
            turns: Arc::default(),
        }
    }

    /// Tells the loop a job is waiting.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// One chunk of job `id`; `None` if it is not open or another instance holds it now.
    pub async fn step(&self, id: i64) -> StoreResult<Option<K::Job>> {
        let size = self.pacer.size();
        let started = std::time::Instant::now();
        let now = self.clock.now();
        let job = self.kind.chunk(&self.store, id, size, now).await?;
        match &job {
            // Only a full chunk says what `size` items cost: the job is still open after it.
            Some(j) if K::is_open(j) => self.pacer.record(size, started.elapsed()),
            _ => self.kind.forget(id),
        }
        Ok(job)
    }

    /// One chunk of the oldest open job of the owner whose turn it is that this instance can
    /// take; `None` with nothing to do.
    pub async fn run_once(&self) -> StoreResult<Option<K::Job>> {
        let open = self.kind.open(&self.store).await?;
        for job in self.turns.order(open) {
            if let Some(done) = self.step(job.id).await? {
                self.turns.served(job.owner);
                return Ok(Some(done));
            }
        }
        Ok(None)
    }

    /// Works job `id` chunk after chunk while it stays open (for jobs answered in the
    /// request); the last state a chunk left, `None` if none ran (another instance holds it).
    pub async fn finish(&self, id: i64) -> StoreResult<Option<K::Job>> {
        let mut last = None;
        while let Some(job) = self.step(id).await? {
            let open = K::is_open(&job);
            last = Some(job);
            if !open {
                break;
            }
        }
        Ok(last)
    }
}

/// Works chunk after chunk while jobs are open, then sleeps until woken (or `K::IDLE`).
#[async_trait::async_trait]
impl<K: JobKind> Worker for Jobs<K> {
    fn name(&self) -> &'static str {
        K::NAME
    }

    async fn pass(&self) -> StoreResult<Pass> {
        Ok(match self.run_once().await? {
            Some(_) => Pass::Busy,
            None => Pass::Idle(K::IDLE),
        })
    }

    fn retry_after(&self) -> Duration {
        K::IDLE
    }

    fn waker(&self) -> Option<&Notify> {
        Some(&self.wake)
    }
}

/// Each open job's items, by job id. Cheap to clone; clones share the cache.
///
/// Lock: a `std` mutex, held only to look up, insert or remove, never across an await. Two
/// tasks that miss at once both read the list; the second insert replaces an equal list.
#[derive(Debug)]
pub struct Lists<T> {
    lists: Arc<Mutex<HashMap<i64, Arc<Vec<T>>>>>,
}

impl<T> Clone for Lists<T> {
    fn clone(&self) -> Self {
        Lists {
            lists: self.lists.clone(),
        }
    }
}

impl<T> Default for Lists<T> {
    fn default() -> Self {
        Lists {
            lists: Arc::new(Mutex::new(HashMap::new())),
        }
    }
}

impl<T> Lists<T> {
    /// Job `id`'s list, read with `load` the first time.
    pub async fn get<F>(&self, id: i64, load: F) -> StoreResult<Arc<Vec<T>>>
    where
        F: Future<Output = StoreResult<Vec<T>>>,
    {
        if let Some(list) = self.guard().get(&id).cloned() {
            return Ok(list);
        }
        let list = Arc::new(load.await?);
        self.guard().insert(id, list.clone());
        Ok(list)
    }

    /// Drops job `id`'s list (the job ended, or is another instance's).
    pub fn forget(&self, id: i64) {
        self.guard().remove(&id);
    }

    fn guard(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Arc<Vec<T>>>> {
        self.lists.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whose turn it is among the owners of open jobs: each pass serves the first owner after the
/// one served last (owners in the order of their oldest open job), one chunk of that owner's
/// oldest job, so a merchant's million-line backlog delays another merchant's job by one
/// chunk per turn, not by the whole backlog.
///
/// Lock: a `std` mutex around the last owner served, held only to read or set it.
#[derive(Debug, Default)]
pub struct Turns {
    last: Mutex<Option<i64>>,
}

impl Turns {
    /// `jobs` (oldest first) in the order to try them: owners from the one after the last
    /// served, wrapping around, each owner's jobs oldest first.
    pub fn order(&self, jobs: Vec<OpenJob>) -> Vec<OpenJob> {
        let mut owners: Vec<(i64, Vec<OpenJob>)> = Vec::new();
        for job in jobs {
            match owners.iter_mut().find(|(o, _)| *o == job.owner) {
                Some((_, list)) => list.push(job),
                None => owners.push((job.owner, vec![job])),
            }
        }
        let last = *self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let start = last
            .and_then(|l| owners.iter().position(|(o, _)| *o == l))
            .map_or(0, |i| i + 1);
        let n = owners.len();
        owners.rotate_left(if n == 0 { 0 } else { start % n });
        owners.into_iter().flat_map(|(_, list)| list).collect()
    }

    /// Records that `owner` was served this pass.
    pub fn served(&self, owner: i64) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(owner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: i64, owner: i64) -> OpenJob {
        OpenJob { id, owner }
    }

    #[test]
    fn owners_take_turns_each_from_its_oldest_job() {
        let turns = Turns::default();
        let jobs = vec![job(1, 7), job(2, 7), job(3, 9), job(4, 0)];
        let ids = |v: Vec<OpenJob>| v.iter().map(|j| j.id).collect::<Vec<_>>();
        assert_eq!(ids(turns.order(jobs.clone())), [1, 2, 3, 4]);
        turns.served(7);
        assert_eq!(ids(turns.order(jobs.clone())), [3, 4, 1, 2]);
        turns.served(9);
        assert_eq!(ids(turns.order(jobs.clone())), [4, 1, 2, 3]);
        turns.served(0);
        assert_eq!(ids(turns.order(jobs.clone())), [1, 2, 3, 4], "wraps around");
        turns.served(5);
        assert_eq!(
            ids(turns.order(jobs)),
            [1, 2, 3, 4],
            "an owner gone starts over"
        );
    }
}
