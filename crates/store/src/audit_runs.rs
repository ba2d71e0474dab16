//! The self-audit's runs (issue 34): each run of the invariant checks
//! ([`ReportStore::audit`](crate::ReportStore::audit)) kept with what it found, so the platform
//! reads past runs (`GET /v1/audits`, the console) and the last one is on `/metrics` and
//! `/readyz`.
//!
//! A run is queued (by the schedule, or a person), then started and finished by the one
//! instance that holds the `audit` lease; a scheduled run names its due instant (`slot`), and
//! a slot is queued once, whichever instance asks first. Finishing a run with findings writes
//! an `audit.failed` event in the same transaction, for webhooks and NATS.

use async_trait::async_trait;
use coupond_domain::Timestamp;
use serde::{Deserialize, Serialize};

use crate::{StoreResult, Violation};

/// Why a run was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditTrigger {
    /// At `background.audit_at`, every day.
    Scheduled,
    /// Asked for (`POST /v1/audits`, the console's "Run now").
    Manual,
}

impl AuditTrigger {
    pub fn as_str(self) -> &'static str {
        match self {
            AuditTrigger::Scheduled => "scheduled",
            AuditTrigger::Manual => "manual",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [AuditTrigger::Scheduled, AuditTrigger::Manual]
            .into_iter()
            .find(|t| t.as_str() == s)
    }
}

/// One finding of a run, as kept: which check, about what, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// `stock`, `per_user_limit`, `holdings`, `locks`, `uses`, `overdue_locks`, `log`,
    /// `template_amounts`, `codes`.
    pub check: String,
    /// `template 3`, `coupon 17`, `order o-1`, ...
    pub subject: String,
    pub detail: String,
}

impl From<&Violation> for Finding {
    fn from(v: &Violation) -> Self {
        Finding {
            check: v.check.to_owned(),
            subject: v.subject.clone(),
            detail: v.detail.clone(),
        }
    }
}

/// A run of the audit: queued, running (started), or finished (with its findings, or the
/// error that stopped it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditRun {
    pub id: i64,
    pub trigger: AuditTrigger,
    /// A scheduled run's due instant.
    pub slot: Option<Timestamp>,
    pub requested_at: Timestamp,
    pub started_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
    /// How many findings, once finished (absent for a run that failed).
    pub violations: Option<i64>,
    /// What it found (at most 100 per check), once finished.
    pub findings: Vec<Finding>,
    /// Why it did not finish its checks (the database failed), if so.
    pub error: Option<String>,
}

/// How a run ended.
#[derive(Clone, Copy, Debug)]
pub enum RunEnd<'a> {
    /// The checks ran: what they found (none: the database is consistent).
    Checked(&'a [Finding]),
    /// The checks could not run to the end: why.
    Failed(&'a str),
}

/// The audit's runs; each method one transaction.
#[async_trait]
pub trait AuditRunStore: Send + Sync {
    /// Queues a run at `now`. A scheduled run names its `slot`; if that slot was queued
    /// already (by this instance or another), `None` and nothing is written.
    async fn queue_audit_run(
        &self,
        trigger: AuditTrigger,
        slot: Option<Timestamp>,
        now: Timestamp,
    ) -> StoreResult<Option<AuditRun>>;
    /// Starts the oldest run waiting, or one started before `stale_before` that never
    /// finished (its instance died), at `now`; `None` when there is none.
    async fn start_audit_run(
        &self,
        stale_before: Timestamp,
        now: Timestamp,
    ) -> StoreResult<Option<AuditRun>>;
    /// Finishes started run `id` at `now`; a run that found anything writes an `audit.failed`
    /// event in the same transaction. A run finished already is answered as it is.
    async fn finish_audit_run(
        &self,
        id: i64,
        end: RunEnd<'_>,
        now: Timestamp,
    ) -> StoreResult<AuditRun>;
    /// Runs newest first, with ids below `before` (the previous page's cursor), at most
    /// `limit`.
    async fn audit_runs(&self, before: Option<i64>, limit: u32) -> StoreResult<Vec<AuditRun>>;
    /// The run that finished its checks last (not one the database stopped), if any.
    async fn last_audit_run(&self) -> StoreResult<Option<AuditRun>>;
}
