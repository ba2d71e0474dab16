//! The issuance worker: works through open bulk issuance jobs a chunk at a time.
//!
//! Each chunk is one transaction in the store ([`IssuanceStore::issue_chunk`](coupond_store::IssuanceStore::issue_chunk)): the coupons, their
//! events and the job's progress commit together, so after a crash (kill -9 included) the next
//! step starts exactly where the last committed chunk ended and nobody is issued twice. On
//! PostgreSQL a job being worked on by another instance is skipped, so instances share the open
//! jobs.
//!
//! Each open job's user list is read once per job and process ([`Lists`]).

use std::sync::Arc;
use std::time::Duration;

use coupond_domain::queue::check_queue;
use coupond_domain::{DomainError, Template, Timestamp, UserId};
use coupond_store::audit::{self, Change};
use coupond_store::{owner_key, Issuance, IssuanceState, NewIssuance, Store, StoreResult};
use tokio::sync::Notify;

use crate::campaigns::CampaignError;
use crate::clock::Clock;
use crate::jobs::{Lists, Turns};
use crate::pacing::Pacer;
use crate::worker::{Pass, Worker};

/// Most users per transaction (the [`Pacer`] may take fewer).
pub const CHUNK: u32 = 1_000;

/// How long the loop sleeps with nothing to do, unless woken (a job from another instance is
/// picked up this late).
const IDLE: Duration = Duration::from_secs(1);

/// Starts a bulk issuance job of `t` (read by the caller, who checked it may see it): the
/// template must still issue coupons, its owner's queue must have room for the job's users
/// (`max_queued`, else `queue_full`), and an Idempotency-Key already used for another upload
/// is refused. Answers the job, and whether this call created it (`false`: a retry's).
pub async fn start_job(
    store: &dyn Store,
    t: &Template,
    new: &NewIssuance<'_>,
    max_queued: i64,
    now: Timestamp,
) -> Result<(Issuance, bool), CampaignError> {
    t.check_issuing(now)?;
    let queued = store
        .queued_issuance_users(owner_key(t.merchant_id))
        .await?;
    check_queue("users", queued, new.users.len() as i64, max_queued)?;
    let change = Change::new("issuance.create", "issuance", now)
        .merchant(t.merchant_id)
        .after(&serde_json::json!({ "template_id": t.id, "users": new.users.len() }));
    let (job, created) = audit::change(change, store.insert_issuance(new, now)).await?;
    same_request(created, job.key_fingerprint, new.key.map(|k| k.fingerprint))?;
    Ok((job, created))
}

/// A job found under an `Idempotency-Key` (`created` false) must have been made by the same
/// request (`stored` and `asked` fingerprints equal): `idempotency_key_reused` otherwise.
pub(crate) fn same_request(
    created: bool,
    stored: Option<[u8; 32]>,
    asked: Option<[u8; 32]>,
) -> Result<(), DomainError> {
    if created || stored == asked {
        return Ok(());
    }
    Err(DomainError::invalid(
        "Idempotency-Key",
        "idempotency_key_reused",
        "this key was already used for a different request",
    ))
}

/// The worker. Cheap to clone; clones share the cache.
#[derive(Clone)]
pub struct IssuanceWorker {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    users: Lists<UserId>,
    wake: Arc<Notify>,
    pacer: Arc<Pacer>,
    /// Owners take turns, a chunk each (shared by clones).
    turns: Arc<Turns>,
}

impl std::fmt::Debug for IssuanceWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuanceWorker").finish_non_exhaustive()
    }
}

fn open(j: &Issuance) -> bool {
    matches!(j.state, IssuanceState::Pending | IssuanceState::Running)
}

impl IssuanceWorker {
    /// Chunks are sized to take about `txn_target` each (zero: always [`CHUNK`] users).
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, txn_target: Duration) -> Self {
        IssuanceWorker {
            store,
            clock,
            users: Lists::default(),
            wake: Arc::new(Notify::new()),
            pacer: Arc::new(Pacer::new(txn_target, CHUNK)),
            turns: Arc::default(),
        }
    }

    /// Tells the loop a job is waiting.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// One chunk of job `id`; `None` if it is not open or another instance holds it now.
    pub async fn step(&self, id: i64) -> StoreResult<Option<Issuance>> {
        let users = self.users.get(id, self.store.issuance_users(id)).await?;
        let size = self.pacer.size();
        let started = std::time::Instant::now();
        let job = self
            .store
            .issue_chunk(id, &users, size, self.clock.now())
            .await?;
        // Only a full chunk says what `size` users cost: the job is still open after it.
        if job.as_ref().is_some_and(open) {
            self.pacer.record(size, started.elapsed());
        }
        coupond_store::failpoints::hit("issuance.after_chunk")?;
        if job.as_ref().is_none_or(|j| !open(j)) {
            self.users.forget(id);
        }
        Ok(job)
    }

    /// One chunk of the oldest open job this instance can take; `None` with nothing to do.
    pub async fn run_once(&self) -> StoreResult<Option<Issuance>> {
        let open = self.store.open_issuances().await?;
        for job in self.turns.order(open) {
            if let Some(done) = self.step(job.id).await? {
                self.turns.served(job.owner);
                return Ok(Some(done));
            }
        }
        Ok(None)
    }

    /// Works job `id` to its end (for jobs answered in the request).
    pub async fn finish(&self, id: i64) -> StoreResult<Issuance> {
        loop {
            match self.step(id).await? {
                Some(j) if open(&j) => continue,
                _ => return self.store.issuance(id).await,
            }
        }
    }
}

/// Works chunk after chunk while jobs are open, then sleeps until woken (or [`IDLE`]).
#[async_trait::async_trait]
impl Worker for IssuanceWorker {
    fn name(&self) -> &'static str {
        "issuance"
    }

    async fn pass(&self) -> StoreResult<Pass> {
        Ok(match self.run_once().await? {
            Some(_) => Pass::Busy,
            None => Pass::Idle(IDLE),
        })
    }

    fn retry_after(&self) -> std::time::Duration {
        IDLE
    }

    fn waker(&self) -> Option<&tokio::sync::Notify> {
        Some(&self.wake)
    }
}
