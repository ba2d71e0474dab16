//! The claim engine: group commit per hot template.
//!
//! Each template being claimed has a batcher task fed by a bounded channel. The batcher waits
//! for one claim, takes everything else already waiting (up to `max_batch`), commits them all
//! with one [`ClaimStore::claim_batch`](coupond_store::ClaimStore::claim_batch) transaction, and answers each caller after the commit. A lone
//! claim is committed at once (no timer, no added latency when idle); under load, claims pile
//! up while a commit is flushing and the next transaction takes all of them, so throughput
//! grows with load while every answer is still durable.
//!
//! Consistency never depends on this process: the stock and per-user limits are decided by
//! the database inside `claim_batch`, so several coupond processes on one PostgreSQL stay
//! exact. The only in-memory shortcut is the set of templates known to be sold out, which
//! answers `sold_out` without a database round trip ([`SoldOutMemo`](crate::sold_out::SoldOutMemo):
//! cleared when the stock is raised).
//!
//! The claim's own types (what is asked and answered) are in `ask`.
//!
//! Locks and channels:
//! - `batchers` (a `std` mutex, held only to look up or insert a sender, never across an
//!   await) maps a template to its batcher's sender.
//! - each batcher's channel holds at most `4 * max_batch` claims; senders wait (backpressure)
//!   when it is full.
//! - each batcher commits up to [`ClaimStore::claim_lanes`](coupond_store::ClaimStore::claim_lanes) batches at once (PostgreSQL: batches
//!   take different stock shards, so they do not wait on each other; SQLite: one); a batch
//!   joins a commit in flight only with at least [`OPEN_LANE_AT`] claims, so batches stay
//!   large while one commit keeps up.
//! - a batcher idle for [`IDLE`] removes itself from `batchers`, closes its channel and
//!   commits whatever was still queued; a sender that raced with that gets a closed channel
//!   and starts a new batcher.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use coupond_domain::{
    check_claim, claim_refusal, ClaimRejection, NotClaimable, Template, TemplateId,
};
use coupond_store::{ClaimOutcome, ClaimRequest, Store};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

mod ask;

pub use ask::{ClaimAsk, ClaimMode, Claimed};

use crate::claim_errors::store_error;
pub use crate::claim_errors::{ClaimError, Internal};
use crate::clock::Clock;
use crate::shared::{Alone, Notice, Peers};
use crate::sold_out::SoldOutMemo;

/// How long a batcher waits for work before it exits.
pub const IDLE: Duration = Duration::from_secs(30);

/// The fewest claims a batch needs to be committed while another batch of its template is
/// still committing; a smaller one waits for that commit (see `run_batcher`).
pub const OPEN_LANE_AT: usize = 64;

/// How long [`ClaimEngine::new`]'s engine trusts a sold-out answer (`auth.cache_ttl`'s
/// default).
pub const DEFAULT_SOLD_OUT_TTL: std::time::Duration = std::time::Duration::from_secs(1);

struct Job {
    request: ClaimRequest,
    reply: oneshot::Sender<Result<ClaimOutcome, ClaimError>>,
}

/// The claim engine. Cheap to clone; clones share batchers.
#[derive(Clone)]
pub struct ClaimEngine {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ClaimEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaimEngine")
            .field("mode", &self.inner.mode)
            .finish_non_exhaustive()
    }
}

struct Inner {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    mode: ClaimMode,
    batchers: Mutex<HashMap<TemplateId, mpsc::Sender<Job>>>,
    sold_out: SoldOutMemo,
    live: crate::live_gate::LiveGate,
    /// The other instances, told when a template sells out here.
    peers: Arc<dyn Peers>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    closing: std::sync::atomic::AtomicBool,
}

impl ClaimEngine {
    /// An engine alone (no other instances), trusting a sold-out answer for
    /// [`DEFAULT_SOLD_OUT_TTL`].
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, mode: ClaimMode) -> Self {
        Self::with_peers(store, clock, mode, Arc::new(Alone), DEFAULT_SOLD_OUT_TTL)
    }

    /// An engine that tells `peers` when a template sells out, and answers a claim of a
    /// template seen sold out from memory for at most `sold_out_ttl` (`cache_ttl`): after
    /// that the database is asked again, so a raise of the stock whose notice was lost is
    /// seen anyway.
    pub fn with_peers(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        mode: ClaimMode,
        peers: Arc<dyn Peers>,
        sold_out_ttl: std::time::Duration,
    ) -> Self {
        ClaimEngine {
            inner: Arc::new(Inner {
                store,
                clock,
                mode,
                batchers: Mutex::new(HashMap::new()),
                sold_out: SoldOutMemo::new(sold_out_ttl),
                live: crate::live_gate::LiveGate::default(),
                peers,
                tasks: Mutex::new(Vec::new()),
                closing: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    pub fn mode(&self) -> ClaimMode {
        self.inner.mode
    }

    /// Claims a coupon of `template` (as read by the caller) for `user`. The rules that need
    /// no database (status, audience) are checked here; stock and the per-user limit are
    /// decided in the commit.
    pub async fn claim(&self, template: &Template, ask: ClaimAsk) -> Result<Claimed, ClaimError> {
        let result = self.claim_counted(template, ask).await;
        let outcome = crate::telemetry::claim_outcome(&result);
        metrics::counter!(crate::telemetry::CLAIMS, "outcome" => outcome).increment(1);
        result
    }

    async fn claim_counted(
        &self,
        template: &Template,
        ask: ClaimAsk,
    ) -> Result<Claimed, ClaimError> {
        let ClaimAsk {
            user,
            actor,
            idempotency,
            code,
            channel,
            source,
        } = ask;
        let single_use = code.as_ref().is_some_and(|c| c.single_use);
        if self
            .inner
            .closing
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return Err(ClaimError::ShuttingDown);
        }
        let now = self.inner.clock.now();
        // With a key (or a single-use code, which is one), a retry must find its coupon even
        // after the template stopped being claimable or sold out: only the commit can tell,
        // so the shortcuts are skipped.
        if idempotency.is_none() && !single_use {
            check_claim(template, &user, now).map_err(ClaimError::Rejected)?;
            if self.inner.sold_out.is_sold_out(template.id, now) {
                metrics::counter!(crate::telemetry::SOLD_OUT_FROM_MEMORY).increment(1);
                return Err(ClaimError::Rejected(ClaimRejection::SoldOut));
            }
        } else if template.spec.audience.admits(&user) == Some(false) {
            return Err(ClaimError::Rejected(ClaimRejection::NotEligible));
        }
        let (valid_from, valid_until) = template.spec.validity.for_claim(now);
        let request = ClaimRequest {
            user,
            actor,
            valid_from,
            valid_until,
            idempotency,
            code,
            issuance: None,
            channel,
            source,
        };
        let outcome = match self.inner.mode {
            ClaimMode::Single => {
                let store = &*self.inner.store;
                self.inner.live.pass(store, template.id, now).await;
                store
                    .claim_batch(template.id, std::slice::from_ref(&request), now)
                    .await
                    .and_then(|v| coupond_store::failpoints::hit("claim.after_commit").map(|()| v))
                    .map_err(store_error)
                    .and_then(|mut v| {
                        v.pop()
                            .ok_or_else(|| ClaimError::Internal(Internal::broken("no outcome")))
                    })?
            }
            ClaimMode::Batched { max_batch } => {
                self.enqueue(template.id, request, max_batch).await?
            }
        };
        match outcome {
            ClaimOutcome::Issued(coupon) => Ok(Claimed {
                coupon,
                replayed: false,
            }),
            ClaimOutcome::Replayed(coupon) => Ok(Claimed {
                coupon,
                replayed: true,
            }),
            ClaimOutcome::KeyReused => Err(ClaimError::KeyReused),
            ClaimOutcome::CodeTaken => Err(ClaimError::CodeTaken),
            ClaimOutcome::SoldOut => {
                let (t, stock) = (template.id, template.spec.total_stock);
                if self.inner.sold_out.mark(t, stock, self.inner.clock.now()) {
                    let notice = Notice::SoldOut { template: t, stock };
                    self.inner.peers.tell(notice);
                }
                Err(ClaimError::Rejected(ClaimRejection::SoldOut))
            }
            ClaimOutcome::LimitReached => Err(ClaimError::Rejected(ClaimRejection::LimitReached)),
            ClaimOutcome::NotEligible => Err(ClaimError::Rejected(ClaimRejection::NotEligible)),
            ClaimOutcome::NotClaimable => {
                // Either the caller's copy already said so (keyed claims skip the early
                // check), or the template changed since it was read (paused, aborted, window
                // closed): the store's copy says which.
                let now = self.inner.clock.now();
                let fresh = self.inner.store.template(template.id).await.ok();
                let why = fresh
                    .as_ref()
                    .and_then(|t| claim_refusal(t, now))
                    .or_else(|| claim_refusal(template, now))
                    .unwrap_or(ClaimRejection::NotClaimable(NotClaimable::Aborted));
                Err(ClaimError::Rejected(why))
            }
        }
    }

    /// Records that another instance saw `t` sold out at `stock`.
    pub fn heard_sold_out(&self, t: TemplateId, stock: i64) {
        self.inner.sold_out.mark(t, stock, self.inner.clock.now());
    }

    /// Forgets every template seen sold out (after notices may have been missed).
    pub fn forget_all_sold_out(&self) {
        self.inner.sold_out.clear();
    }

    /// Forgets that `t` was sold out: its stock was raised to `stock`.
    pub fn forget_sold_out(&self, t: TemplateId, stock: i64) {
        self.inner.sold_out.forget(t, stock, self.inner.clock.now());
    }

    /// Whether `t` was seen sold out less than the memo's ttl ago (and its stock not raised
    /// since).
    pub fn is_sold_out(&self, t: TemplateId) -> bool {
        self.inner.sold_out.is_sold_out(t, self.inner.clock.now())
    }

    /// Whether a claim of `t` can be answered `sold_out` from memory; if so it is counted as
    /// such a claim (for callers that answer it themselves, before reading the template).
    pub fn sold_out_from_memory(&self, t: TemplateId) -> bool {
        let sold_out = self.is_sold_out(t);
        if sold_out {
            metrics::counter!(crate::telemetry::SOLD_OUT_FROM_MEMORY).increment(1);
            metrics::counter!(crate::telemetry::CLAIMS, "outcome" => "sold_out").increment(1);
        }
        sold_out
    }

    async fn enqueue(
        &self,
        template: TemplateId,
        request: ClaimRequest,
        max_batch: usize,
    ) -> Result<ClaimOutcome, ClaimError> {
        let (reply, answer) = oneshot::channel();
        let mut job = Job { request, reply };
        // Two attempts: the first may hit a batcher that just retired.
        for _ in 0..2 {
            let sender = self.sender(template, max_batch)?;
            match sender.send(job).await {
                Ok(()) => {
                    return answer.await.unwrap_or_else(|_| {
                        Err(ClaimError::Internal(Internal::broken("batcher stopped")))
                    });
                }
                Err(mpsc::error::SendError(returned)) => {
                    job = returned;
                    let mut map = self
                        .inner
                        .batchers
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    if map.get(&template).is_some_and(|s| s.same_channel(&sender)) {
                        map.remove(&template);
                    }
                }
            }
        }
        Err(ClaimError::Internal(Internal::broken(
            "no batcher accepted the claim",
        )))
    }

    /// The sender of `template`'s batcher, starting one if there is none.
    fn sender(
        &self,
        template: TemplateId,
        max_batch: usize,
    ) -> Result<mpsc::Sender<Job>, ClaimError> {
        let mut map = self
            .inner
            .batchers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if self
            .inner
            .closing
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return Err(ClaimError::ShuttingDown);
        }
        if let Some(s) = map.get(&template) {
            if !s.is_closed() {
                return Ok(s.clone());
            }
        }
        let (tx, rx) = mpsc::channel(max_batch.max(1) * 4);
        map.insert(template, tx.clone());
        let engine = self.clone();
        let own = tx.downgrade();
        let handle = tokio::spawn(async move {
            engine
                .run_batcher(template, own, rx, max_batch.max(1))
                .await;
        });
        let mut tasks = self
            .inner
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle);
        Ok(tx)
    }

    /// `own` identifies this batcher's channel in `batchers` without keeping it open.
    ///
    /// Up to [`ClaimStore::claim_lanes`](coupond_store::ClaimStore::claim_lanes) batches are committed at once (`lanes`, a `JoinSet` that
    /// this task alone owns): while every lane is busy the channel fills, and the next batch
    /// takes everything that piled up. One lane (SQLite) commits inline.
    async fn run_batcher(
        self,
        template: TemplateId,
        own: mpsc::WeakSender<Job>,
        mut rx: mpsc::Receiver<Job>,
        max_batch: usize,
    ) {
        let width = self.inner.store.claim_lanes().max(1);
        let mut lanes = tokio::task::JoinSet::new();
        let mut retiring = false;
        loop {
            while lanes.len() >= width {
                let _ = lanes.join_next().await;
            }
            let first = if retiring {
                match rx.recv().await {
                    Some(j) => j,
                    None => break,
                }
            } else {
                tokio::select! {
                    job = rx.recv() => match job {
                        Some(j) => j,
                        None => break,
                    },
                    () = tokio::time::sleep(IDLE) => {
                        self.retire(template, &own, &mut rx);
                        retiring = true;
                        continue;
                    }
                }
            };
            let mut jobs = Vec::with_capacity(max_batch.min(64));
            jobs.push(first);
            while jobs.len() < max_batch {
                match rx.try_recv() {
                    Ok(j) => jobs.push(j),
                    Err(_) => break,
                }
            }
            // Another lane is committing and this batch is small: wait for that commit to end,
            // taking what arrives meanwhile, rather than add a small transaction (on a busy
            // machine every transaction costs CPU the claims need). Lanes open only when the
            // queue outgrows one commit.
            let open_at = OPEN_LANE_AT.min(max_batch);
            while !lanes.is_empty() && jobs.len() < open_at {
                tokio::select! {
                    _ = lanes.join_next() => break,
                    job = rx.recv() => match job {
                        Some(j) => jobs.push(j),
                        None => break,
                    },
                }
            }
            if width == 1 {
                self.commit(template, jobs).await;
            } else {
                let engine = self.clone();
                lanes.spawn(async move { engine.commit(template, jobs).await });
            }
            // Reap finished lanes so the set holds only those in flight.
            while lanes.try_join_next().is_some() {}
        }
        while lanes.join_next().await.is_some() {}
    }

    /// Stops taking new claims for `template` on this batcher; queued ones are still committed.
    fn retire(
        &self,
        template: TemplateId,
        own: &mpsc::WeakSender<Job>,
        rx: &mut mpsc::Receiver<Job>,
    ) {
        let mut map = self
            .inner
            .batchers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let ours = own
            .upgrade()
            .is_some_and(|me| map.get(&template).is_some_and(|s| s.same_channel(&me)));
        if ours {
            map.remove(&template);
        }
        rx.close();
    }

    async fn commit(&self, template: TemplateId, jobs: Vec<Job>) {
        let now = self.inner.clock.now();
        // Requests repeating a key or a single-use code already in this batch (a client
        // retrying while its first attempt is queued) are answered from the first one's
        // outcome; the store sees each key and each single-use code once.
        let mut first_with: HashMap<String, usize> = HashMap::new();
        let mut unique: Vec<usize> = Vec::with_capacity(jobs.len());
        let mut repeats: Vec<(usize, usize)> = Vec::new();
        for (i, job) in jobs.iter().enumerate() {
            let marks = [
                job.request
                    .idempotency
                    .as_ref()
                    .map(|k| format!("key\n{}", k.key)),
                job.request
                    .code
                    .as_ref()
                    .filter(|c| c.single_use)
                    .map(|c| format!("code\n{}", c.code)),
            ];
            match marks.iter().flatten().find_map(|m| first_with.get(m)) {
                Some(&first) => repeats.push((i, first)),
                None => {
                    for m in marks.into_iter().flatten() {
                        first_with.insert(m, i);
                    }
                    unique.push(i);
                }
            }
        }
        let requests: Vec<ClaimRequest> = unique.iter().map(|&i| jobs[i].request.clone()).collect();
        self.inner
            .live
            .pass(&*self.inner.store, template, now)
            .await;
        let started = std::time::Instant::now();
        let result = self.inner.store.claim_batch(template, &requests, now).await;
        metrics::histogram!(crate::telemetry::CLAIM_BATCH_SIZE).record(requests.len() as f64);
        metrics::histogram!(crate::telemetry::CLAIM_COMMIT_SECONDS)
            .record(started.elapsed().as_secs_f64());
        // Committed, nobody answered yet: a crash here is what idempotency keys are for.
        let result = result
            .and_then(|done| coupond_store::failpoints::hit("claim.after_commit").map(|()| done));
        let mut outcomes: Vec<Option<Result<ClaimOutcome, ClaimError>>> = vec![None; jobs.len()];
        match result {
            Ok(done) => {
                for (&i, o) in unique.iter().zip(done) {
                    outcomes[i] = Some(Ok(o));
                }
            }
            Err(e) => {
                let err = store_error(e);
                for &i in &unique {
                    outcomes[i] = Some(Err(err.clone()));
                }
            }
        }
        for (i, first) in repeats {
            let (a, b) = (&jobs[i].request, &jobs[first].request);
            // The same request again (a retry) shares the first one's outcome; a key reused
            // for something else, or another user's attempt at the same code, does not.
            let same = a.idempotency == b.idempotency && a.code == b.code && a.user == b.user;
            outcomes[i] = Some(match &outcomes[first] {
                Some(Ok(ClaimOutcome::Issued(c) | ClaimOutcome::Replayed(c))) if same => {
                    Ok(ClaimOutcome::Replayed(c.clone()))
                }
                _ if !same && a.idempotency.is_some() && a.idempotency == b.idempotency => {
                    Ok(ClaimOutcome::KeyReused)
                }
                _ if !same => Ok(ClaimOutcome::CodeTaken),
                Some(other) => other.clone(),
                None => Err(ClaimError::Internal(Internal::broken("no outcome"))),
            });
        }
        for (job, outcome) in jobs.into_iter().zip(outcomes) {
            // A caller that went away is fine: its coupon exists and is in its wallet.
            let _ = job.reply.send(
                outcome
                    .unwrap_or_else(|| Err(ClaimError::Internal(Internal::broken("no outcome")))),
            );
        }
    }

    /// Stops taking claims, commits everything queued, and waits for the batchers to finish.
    pub async fn shutdown(&self) {
        self.inner
            .closing
            .store(true, std::sync::atomic::Ordering::Release);
        // Dropping the senders lets each batcher drain its queue and stop.
        self.inner
            .batchers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        let tasks: Vec<JoinHandle<()>> = std::mem::take(
            &mut *self
                .inner
                .tasks
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for t in tasks {
            let _ = t.await;
        }
    }
}
