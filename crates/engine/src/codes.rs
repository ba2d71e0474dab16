//! The code generator: fills batches of single-use promotion codes.
//!
//! A batch is a row in the database that says how many codes it wants and how many it has.
//! Each step draws fresh random codes for the oldest unfinished batch and adds them in one
//! transaction ([`CodeStore::add_codes`](coupond_store::CodeStore::add_codes)), which skips any that collide with an existing code and
//! never goes past the count; so the work survives a crash (the next start resumes the
//! batch from what was committed) and several processes may share it.
//!
//! Channels: `wake` (a [`Notify`]) tells the loop a new batch exists; the loop also stops on
//! the shutdown signal between steps, never inside one.

use std::sync::Arc;
use std::time::Duration;

use coupond_domain::codes::{with_check, ALPHABET};
use coupond_domain::queue::check_queue;
use coupond_domain::{CodeBatchSpec, SharedCode, Template, Timestamp};
use coupond_store::audit::{self, Change};
use coupond_store::{owner_key, CodeBatch, Store, StoreResult};
use rand::Rng;
use tokio::sync::Notify;

use crate::campaigns::CampaignError;
use crate::clock::Clock;
use crate::jobs::Turns;
use crate::pacing::Pacer;
use crate::worker::{Pass, Worker};

/// Records a batch of single-use codes of `t` to generate, if its owner's queue has room for
/// them (`max_queued`, else `queue_full`); the generator fills it.
pub async fn start_batch(
    store: &dyn Store,
    t: &Template,
    spec: &CodeBatchSpec,
    max_queued: i64,
    now: Timestamp,
) -> Result<CodeBatch, CampaignError> {
    let queued = store.queued_codes(owner_key(t.merchant_id)).await?;
    check_queue("codes", queued, i64::from(spec.count()), max_queued)?;
    let change = Change::new("code_batch.create", "code_batch", now)
        .merchant(t.merchant_id)
        .after(&serde_json::json!({ "template_id": t.id, "count": spec.count() }));
    Ok(audit::change(change, store.insert_code_batch(t.id, spec, now)).await?)
}

/// Sets template `t`'s shared code, or removes it (`None`); coupons redeemed with an old
/// code stay. A code another template uses is the store's `Conflict::Unique`.
pub async fn set_shared_code(
    store: &dyn Store,
    t: &Template,
    code: Option<&SharedCode>,
    now: Timestamp,
) -> StoreResult<()> {
    let (action, after) = match code {
        Some(c) => (
            "template.set_code",
            serde_json::json!({ "code": c.as_str() }),
        ),
        None => ("template.remove_code", serde_json::json!({ "code": null })),
    };
    let change = Change::new(action, "template", now)
        .object(t.id.get())
        .merchant(t.merchant_id)
        .after(&after);
    audit::change(change, store.set_shared_code(t.id, code)).await
}

/// Most codes added per transaction (the [`Pacer`] may take fewer).
pub const CHUNK: u32 = 5_000;

/// What one step did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No batch is waiting.
    Idle,
    /// Codes were added to this batch (it may now be finished).
    Progress(CodeBatch),
}

/// Generates the codes of unfinished batches. Cheap to clone.
#[derive(Clone)]
pub struct CodeGenerator {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    wake: Arc<Notify>,
    pacer: Arc<Pacer>,
    /// Owners take turns, a chunk each (shared by clones).
    turns: Arc<Turns>,
}

impl std::fmt::Debug for CodeGenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeGenerator").finish_non_exhaustive()
    }
}

impl CodeGenerator {
    /// Chunks are sized to take about `txn_target` each (zero: always [`CHUNK`] codes).
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, txn_target: Duration) -> Self {
        CodeGenerator {
            store,
            clock,
            wake: Arc::new(Notify::new()),
            pacer: Arc::new(Pacer::new(txn_target, CHUNK)),
            turns: Arc::default(),
        }
    }

    /// Tells the loop a batch is waiting.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// One step: up to [`CHUNK`] codes for the oldest unfinished batch of the owner whose
    /// turn it is ([`Turns`]).
    pub async fn run_once(&self) -> StoreResult<Outcome> {
        let open = self.store.unfinished_code_batches().await?;
        let Some(next) = self.turns.order(open).into_iter().next() else {
            return Ok(Outcome::Idle);
        };
        let batch = self.store.code_batch(next.id).await?;
        if batch.finished_at.is_some() {
            // Finished by another instance since the list was read.
            return Ok(Outcome::Progress(batch));
        }
        let done = self.step(&batch).await.map(Outcome::Progress)?;
        self.turns.served(next.owner);
        Ok(done)
    }

    /// Fills `batch` to its count (for small batches answered in the request).
    pub async fn fill(&self, mut batch: CodeBatch) -> StoreResult<CodeBatch> {
        while batch.finished_at.is_none() {
            batch = self.step(&batch).await?;
        }
        Ok(batch)
    }

    async fn step(&self, batch: &CodeBatch) -> StoreResult<CodeBatch> {
        let size = self.pacer.size();
        let want = (batch.count - batch.generated).min(size);
        let codes = draw(&batch.prefix, batch.length, want as usize);
        let started = std::time::Instant::now();
        let before = batch.generated;
        let batch = self
            .store
            .add_codes(batch.id, &codes, self.clock.now())
            .await?;
        metrics::counter!(crate::telemetry::CODES_GENERATED)
            .increment(u64::from(batch.generated.saturating_sub(before)));
        // Only a full chunk says what `size` codes cost (the last one of a batch is smaller).
        if want == size {
            self.pacer.record(want, started.elapsed());
        }
        Ok(batch)
    }
}

/// Steps while batches wait, then sleeps until woken (or a minute passes, to pick up batches
/// another process created).
#[async_trait::async_trait]
impl Worker for CodeGenerator {
    fn name(&self) -> &'static str {
        "codes"
    }

    async fn pass(&self) -> StoreResult<Pass> {
        Ok(match self.run_once().await? {
            Outcome::Idle => Pass::Idle(RESCAN),
            Outcome::Progress(_) => Pass::Busy,
        })
    }

    fn retry_after(&self) -> std::time::Duration {
        RESCAN
    }

    fn waker(&self) -> Option<&tokio::sync::Notify> {
        Some(&self.wake)
    }
}

/// How long an idle generator waits for batches another process created.
const RESCAN: std::time::Duration = std::time::Duration::from_secs(60);

/// `n` random codes: `prefix`, `length` random characters of [`ALPHABET`], and the check
/// character.
pub fn draw(prefix: &str, length: u32, n: usize) -> Vec<String> {
    let mut rng = rand::rng();
    (0..n)
        .filter_map(|_| {
            let mut body = String::with_capacity(prefix.len() + length as usize + 1);
            body.push_str(prefix);
            for _ in 0..length {
                body.push(char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]));
            }
            with_check(&body)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use coupond_domain::codes::passes_check;

    #[test]
    fn drawn_codes_have_the_prefix_length_and_check() {
        let codes = draw("SP", 8, 200);
        assert_eq!(codes.len(), 200);
        for c in &codes {
            assert!(c.starts_with("SP") && c.len() == 2 + 8 + 1, "{c}");
            assert!(passes_check(c), "{c}");
        }
        let distinct: std::collections::HashSet<_> = codes.iter().collect();
        assert_eq!(distinct.len(), 200);
    }
}
