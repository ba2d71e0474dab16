//! Bulk issuance: starting a job ([`start_job`]), and the kind of chunked job ([`Issuing`],
//! run by [`Jobs`] as the [`IssuanceWorker`]) that works through open jobs a chunk at a time.
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
use coupond_store::{owner_key, Issuance, IssuanceState, NewIssuance, OpenJob, Store, StoreResult};

use crate::campaigns::CampaignError;
use crate::jobs::{JobKind, Jobs, Lists};

/// Most users per transaction (the pacer may take fewer).
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

/// Bulk issuance as a kind of chunked job ([`Jobs`]): each open job's user list is read once
/// per job and process ([`Lists`]).
#[derive(Debug, Default)]
pub struct Issuing {
    users: Lists<UserId>,
}

/// The issuance worker.
pub type IssuanceWorker = Jobs<Issuing>;

#[async_trait::async_trait]
impl JobKind for Issuing {
    type Job = Issuance;
    const NAME: &'static str = "issuance";
    const CHUNK: u32 = CHUNK;
    const IDLE: Duration = IDLE;

    async fn open(&self, store: &Arc<dyn Store>) -> StoreResult<Vec<OpenJob>> {
        store.open_issuances().await
    }

    async fn chunk(
        &self,
        store: &Arc<dyn Store>,
        id: i64,
        size: u32,
        now: Timestamp,
    ) -> StoreResult<Option<Issuance>> {
        let users = self.users.get(id, store.issuance_users(id)).await?;
        let job = store.issue_chunk(id, &users, size, now).await?;
        coupond_store::failpoints::hit("issuance.after_chunk")?;
        Ok(job)
    }

    fn is_open(j: &Issuance) -> bool {
        matches!(j.state, IssuanceState::Pending | IssuanceState::Running)
    }

    fn forget(&self, id: i64) {
        self.users.forget(id);
    }
}
