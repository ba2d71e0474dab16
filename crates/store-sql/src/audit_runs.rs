//! [`AuditRunStore`](coupond_store::AuditRunStore) on every backend: the self-audit's runs, queued
//! (a scheduled one once per slot), started by the lease holder (a conditional update takes each,
//! so of two instances one starts it), finished with their findings and, when they found anything,
//! an `audit.failed` event in the same transaction.

use coupond_domain::Timestamp;
use coupond_store::audit_runs::{AuditRun, AuditTrigger, Finding, RunEnd};
use coupond_store::events::{self, kind};
use coupond_store::{StoreError, StoreResult};

use crate::backend::{Backend, SqlStore};
use crate::scheduling::emit;
use crate::{sql, Db, Row, Work};
use coupond_store::AuditRunStore;

const COLS: &str = "id, triggered_by, slot, requested_at, started_at, finished_at, violations, \
                    findings, error";

/// Queues a run; a scheduled slot queued already: `None`.
pub async fn queue_audit_run(
    db: &dyn Db,
    trigger: AuditTrigger,
    slot: Option<Timestamp>,
    now: Timestamp,
) -> StoreResult<Option<AuditRun>> {
    let once = match slot {
        Some(_) => db.dialect().on_conflict_nothing("slot"),
        None => String::new(),
    };
    let q = sql(format!(
        "INSERT INTO audit_runs (triggered_by, slot, requested_at) VALUES ($1, $2, $3){once}
         RETURNING {COLS}"
    ))
    .bind(trigger.as_str())
    .bind(slot)
    .bind(now);
    let mut tx = db.begin(Work::Request).await?;
    let row = tx.fetch_optional(q).await?;
    match &row {
        // A person's request names its run in the audit trail.
        Some(r) => coupond_store::audit::created(r.i64("id")?),
        None => coupond_store::audit::discard(),
    }
    tx.commit().await?;
    row.as_ref().map(run).transpose()
}

/// Starts the oldest run waiting (or left running by a dead instance since `stale_before`).
pub async fn start_audit_run(
    db: &dyn Db,
    stale_before: Timestamp,
    now: Timestamp,
) -> StoreResult<Option<AuditRun>> {
    // No locking read: MariaDB's `SKIP LOCKED` now and then passed over a run nobody held
    // while other transactions were busy elsewhere on the server. Each candidate is taken by
    // a conditional update instead: of two instances starting at once, one changes the row
    // and the other finds it taken and tries the next.
    let q = sql("SELECT id FROM audit_runs
                  WHERE finished_at IS NULL AND (started_at IS NULL OR started_at < $1)
                  ORDER BY id LIMIT 8")
    .bind(stale_before);
    for candidate in db.read_all(q).await? {
        let q = sql(format!(
            "UPDATE audit_runs SET started_at = $1
              WHERE id = $2 AND finished_at IS NULL
                AND (started_at IS NULL OR started_at < $3)
             RETURNING {COLS}"
        ))
        .bind(now)
        .bind(candidate.i64("id")?)
        .bind(stale_before);
        let mut tx = db.begin(Work::Background).await?;
        let started = tx.fetch_optional(q).await?;
        tx.commit().await?;
        if let Some(row) = started {
            return Ok(Some(run(&row)?));
        }
    }
    Ok(None)
}

/// Finishes run `id` (once; a run finished already is read back as it is).
pub async fn finish_audit_run(
    db: &dyn Db,
    id: i64,
    end: RunEnd<'_>,
    now: Timestamp,
) -> StoreResult<AuditRun> {
    let (violations, findings, error) = match end {
        RunEnd::Checked(found) => (
            Some(found.len() as i64),
            Some(serde_json::to_string(found).map_err(StoreError::other)?),
            None,
        ),
        RunEnd::Failed(why) => (None, None, Some(why.chars().take(2000).collect::<String>())),
    };
    let mut tx = db.begin(Work::Background).await?;
    let q = sql(format!(
        "UPDATE audit_runs SET finished_at = $1, violations = $2, findings = $3, error = $4
         WHERE id = $5 AND finished_at IS NULL RETURNING {COLS}"
    ))
    .bind(now)
    .bind(violations)
    .bind(findings)
    .bind(error)
    .bind(id);
    let Some(r) = tx.fetch_optional(q).await? else {
        let q = sql(format!("SELECT {COLS} FROM audit_runs WHERE id = $1")).bind(id);
        return run(&tx.fetch_one(q).await?);
    };
    let finished = run(&r)?;
    if finished.violations.is_some_and(|n| n > 0) {
        emit(
            &mut *tx,
            kind::AUDIT_FAILED,
            now,
            events::audit_failed(&finished),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(finished)
}

/// Runs newest first, below `before`.
pub async fn audit_runs(
    db: &dyn Db,
    before: Option<i64>,
    limit: u32,
) -> StoreResult<Vec<AuditRun>> {
    let q = sql(format!(
        "SELECT {COLS} FROM audit_runs WHERE id < $1 ORDER BY id DESC LIMIT $2"
    ))
    .bind(before.unwrap_or(i64::MAX))
    .bind(i64::from(limit));
    db.read_all(q).await?.iter().map(run).collect()
}

/// The run that finished its checks last.
pub async fn last_audit_run(db: &dyn Db) -> StoreResult<Option<AuditRun>> {
    let q = sql(format!(
        "SELECT {COLS} FROM audit_runs WHERE finished_at IS NOT NULL AND violations IS NOT NULL
         ORDER BY finished_at DESC, id DESC LIMIT 1"
    ));
    db.read_optional(q).await?.as_ref().map(run).transpose()
}

fn run(r: &Row) -> StoreResult<AuditRun> {
    let trigger = r.str("triggered_by")?;
    let findings: Vec<Finding> = match r.opt_str("findings")? {
        Some(text) => serde_json::from_str(text).map_err(|e| StoreError::corrupt(e.to_string()))?,
        None => Vec::new(),
    };
    Ok(AuditRun {
        id: r.i64("id")?,
        trigger: AuditTrigger::parse(trigger)
            .ok_or_else(|| StoreError::corrupt(format!("audit run trigger {trigger}")))?,
        slot: r.opt_time("slot")?,
        requested_at: r.time("requested_at")?,
        started_at: r.opt_time("started_at")?,
        finished_at: r.opt_time("finished_at")?,
        violations: r.opt_i64("violations")?,
        findings,
        error: r.opt_string("error")?,
    })
}

#[async_trait::async_trait]
impl<B: Backend> AuditRunStore for SqlStore<B> {
    async fn queue_audit_run(
        &self,
        trigger: coupond_store::AuditTrigger,
        slot: Option<Timestamp>,
        now: Timestamp,
    ) -> StoreResult<Option<coupond_store::AuditRun>> {
        queue_audit_run(&self.db, trigger, slot, now).await
    }
    async fn start_audit_run(
        &self,
        stale_before: Timestamp,
        now: Timestamp,
    ) -> StoreResult<Option<coupond_store::AuditRun>> {
        start_audit_run(&self.db, stale_before, now).await
    }
    async fn finish_audit_run(
        &self,
        id: i64,
        end: coupond_store::RunEnd<'_>,
        now: Timestamp,
    ) -> StoreResult<coupond_store::AuditRun> {
        finish_audit_run(&self.db, id, end, now).await
    }
    async fn audit_runs(
        &self,
        before: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<coupond_store::AuditRun>> {
        audit_runs(&self.db, before, limit).await
    }
    async fn last_audit_run(&self) -> StoreResult<Option<coupond_store::AuditRun>> {
        last_audit_run(&self.db).await
    }
}
