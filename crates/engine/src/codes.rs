//! The code generator: fills batches of single-use promotion codes.
//!
//! A batch is a row in the database that says how many codes it wants and how many it has.
//! Each step draws fresh random codes for the oldest unfinished batch and adds them in one
//! transaction ([`CodeStore::add_codes`](coupond_store::CodeStore::add_codes)), which skips any that collide with an existing code and
//! never goes past the count; so the work survives a crash (the next start resumes the
//! batch from what was committed) and several processes may share it.
//!
//! [`Generating`] is the kind of chunked job ([`Jobs`]) that does it, owners taking turns; the
//! loop stops on the shutdown signal between steps, never inside one.

use std::sync::Arc;
use std::time::Duration;

use coupond_domain::codes::{with_check, ALPHABET};
use coupond_domain::queue::check_queue;
use coupond_domain::{CodeBatchSpec, SharedCode, Template, Timestamp};
use coupond_store::audit::{self, Change};
use coupond_store::{owner_key, CodeBatch, OpenJob, Store, StoreResult};
use rand::Rng;

use crate::campaigns::CampaignError;
use crate::jobs::{JobKind, Jobs};

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

/// Most codes added per transaction (the pacer may take fewer).
pub const CHUNK: u32 = 5_000;

/// Code batches as a kind of chunked job ([`Jobs`]): each chunk draws fresh random codes
/// for a batch and adds them in one transaction.
#[derive(Debug, Default)]
pub struct Generating;

/// Generates the codes of unfinished batches.
pub type CodeGenerator = Jobs<Generating>;

#[async_trait::async_trait]
impl JobKind for Generating {
    type Job = CodeBatch;
    const NAME: &'static str = "codes";
    const CHUNK: u32 = CHUNK;
    /// How long an idle generator waits for batches another process created.
    const IDLE: Duration = Duration::from_secs(60);

    async fn open(&self, store: &Arc<dyn Store>) -> StoreResult<Vec<OpenJob>> {
        store.unfinished_code_batches().await
    }

    async fn chunk(
        &self,
        store: &Arc<dyn Store>,
        id: i64,
        size: u32,
        now: Timestamp,
    ) -> StoreResult<Option<CodeBatch>> {
        let batch = store.code_batch(id).await?;
        if batch.finished_at.is_some() {
            // Finished by another instance since the list was read.
            return Ok(Some(batch));
        }
        let want = (batch.count - batch.generated).min(size);
        let codes = draw(&batch.prefix, batch.length, want as usize);
        let after = store.add_codes(batch.id, &codes, now).await?;
        metrics::counter!(crate::telemetry::CODES_GENERATED)
            .increment(u64::from(after.generated.saturating_sub(batch.generated)));
        Ok(Some(after))
    }

    fn is_open(b: &CodeBatch) -> bool {
        b.finished_at.is_none()
    }
}

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
