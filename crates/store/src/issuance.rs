//! Bulk issuance jobs at the storage boundary.

use crate::{Page, StoreResult};
use async_trait::async_trait;

use coupond_domain::{Actor, TemplateId, Timestamp, UserId};
use serde::{Deserialize, Serialize};

/// Where a job stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IssuanceState {
    /// Waiting for the worker.
    Pending,
    /// Some chunks are done.
    Running,
    /// Every user was handled.
    Done,
    /// Stopped: the template cannot issue (not claimable); `error` says why.
    Failed,
}

impl IssuanceState {
    pub fn as_str(self) -> &'static str {
        match self {
            IssuanceState::Pending => "pending",
            IssuanceState::Running => "running",
            IssuanceState::Done => "done",
            IssuanceState::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            IssuanceState::Pending,
            IssuanceState::Running,
            IssuanceState::Done,
            IssuanceState::Failed,
        ]
        .into_iter()
        .find(|x| x.as_str() == s)
    }
}

/// A line of an upload that is not a user id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvalidLine {
    /// 1-based.
    pub line: u64,
    /// The line as sent (cut to 100 characters).
    pub text: String,
}

/// A job to record: who asked, for which template, and the parsed upload.
#[derive(Clone, Debug)]
pub struct NewIssuance<'a> {
    pub template: TemplateId,
    pub actor: &'a Actor,
    /// Valid and distinct, in upload order.
    pub users: &'a [UserId],
    pub duplicates: u64,
    pub invalid: u64,
    /// The first 100.
    pub invalid_lines: &'a [InvalidLine],
    /// The upload's scoped Idempotency-Key, if it had one: inserting a job under a key that
    /// already has one returns that job and inserts nothing.
    pub key: Option<IssuanceKey<'a>>,
}

/// The Idempotency-Key an upload came with, and a fingerprint of what it asked.
#[derive(Clone, Copy, Debug)]
pub struct IssuanceKey<'a> {
    /// Scoped to the principal and route.
    pub key: &'a str,
    /// SHA-256 of the upload's form and bytes.
    pub fingerprint: [u8; 32],
}

impl<'a> From<&'a crate::IdempotencyKey> for IssuanceKey<'a> {
    fn from(k: &'a crate::IdempotencyKey) -> Self {
        IssuanceKey {
            key: &k.key,
            fingerprint: k.fingerprint,
        }
    }
}

/// A stored job and its progress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issuance {
    pub id: i64,
    pub template_id: TemplateId,
    pub actor: Actor,
    pub state: IssuanceState,
    /// Distinct valid users to issue to.
    pub requested: u64,
    /// Users before this position are done.
    pub next_user: u64,
    pub issued: u64,
    /// The user already held the per-user limit.
    pub skipped: u64,
    pub sold_out: u64,
    /// Outside the template's audience.
    pub not_eligible: u64,
    pub duplicates: u64,
    pub invalid: u64,
    pub invalid_lines: Vec<InvalidLine>,
    pub error: Option<String>,
    pub created_at: Timestamp,
    pub started_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
    /// The fingerprint of the upload that created it under an Idempotency-Key.
    pub key_fingerprint: Option<[u8; 32]>,
}

/// Bulk issuance jobs, a chunk per transaction.
/// An open background job and whose it is ([`owner_key`](crate::owner_key) of its
/// template's merchant: 0 for the platform's), so workers can let owners take turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenJob {
    pub id: i64,
    pub owner: i64,
}

#[async_trait]
pub trait IssuanceStore: Send + Sync {
    /// A new pending job, and `true`; with `new.key`, the job already made under that key if
    /// there is one, and `false` (nothing is inserted).
    async fn insert_issuance(
        &self,
        new: &NewIssuance<'_>,
        now: Timestamp,
    ) -> StoreResult<(Issuance, bool)>;
    async fn issuance(&self, id: i64) -> StoreResult<Issuance>;
    /// A template's jobs, by id.
    async fn template_issuances(
        &self,
        template: TemplateId,
        page: Page,
    ) -> StoreResult<Vec<Issuance>>;
    /// Jobs pending or running, oldest first, with their owners.
    async fn open_issuances(&self) -> StoreResult<Vec<OpenJob>>;
    /// Users still to be issued by `owner`'s open jobs ([`owner_key`](crate::owner_key) of
    /// their templates' merchant): what a new job is capped against.
    async fn queued_issuance_users(&self, owner: i64) -> StoreResult<i64>;
    /// The users of a job, in order (what [`IssuanceStore::issue_chunk`] takes).
    async fn issuance_users(&self, id: i64) -> StoreResult<Vec<UserId>>;
    /// Issues the next `max` users of job `id` (`users` is the job's list) in one
    /// transaction with the job's progress: the same rules as claims (stock, per-user limit,
    /// audience, the template claimable now), `coupon.issued` events, and `issuance.finished`
    /// with the last chunk. A template that is not claimable fails the job. `None` when the job
    /// is not open or another instance is working on it right now.
    async fn issue_chunk(
        &self,
        id: i64,
        users: &[UserId],
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Option<Issuance>>;
}
