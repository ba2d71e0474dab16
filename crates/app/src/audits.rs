//! The self-audit's runs (the platform): the invariant checks of `coupond audit` run by
//! themselves every day at `background.audit_at` and on request; each run is kept with what
//! it found. Asking for a run queues it: the instance holding the `audit` lease makes it in
//! the background.

use coupond_domain::{Area, Timestamp};
use coupond_store::{AuditRun, Finding};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::caller::{roles, Access};
use crate::context::App;
use crate::error::AppResult;
use crate::pages::{finish, PageOf, PageRequest};

/// Who may read the runs: the platform's admins.
pub const READ: Access = Access {
    roles: roles::PLATFORM,
    area: Area::Admin,
};

/// Who may ask for a run: the platform's admins.
pub const RUN: Access = READ;

/// One broken invariant a run found.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct FindingView {
    /// `stock`, `per_user_limit`, `holdings`, `locks`, `uses`, `overdue_locks`, `log`,
    /// `template_amounts` or `codes`.
    pub check: String,
    /// What it is about: `template 3`, `coupon 17`, `order o-1`, ...
    pub subject: String,
    pub detail: String,
}

/// A run of the self-audit.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AuditRunView {
    pub id: i64,
    /// `scheduled` (every day at `background.audit_at`) or `manual` (asked for).
    pub trigger: String,
    /// `queued`, `running`, `passed` (nothing found), `failed` (broken invariants found) or
    /// `error` (the checks could not run to the end; `error` says why).
    pub state: String,
    pub requested_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Timestamp>,
    /// How many broken invariants it found (at most 100 per check), once it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violations: Option<i64>,
    /// What it found.
    pub findings: Vec<FindingView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl From<AuditRun> for AuditRunView {
    fn from(r: AuditRun) -> Self {
        let state = match (&r.started_at, &r.finished_at, r.violations, &r.error) {
            (_, Some(_), _, Some(_)) => "error",
            (_, Some(_), Some(0), None) => "passed",
            (_, Some(_), _, None) => "failed",
            (Some(_), None, _, _) => "running",
            (None, None, _, _) => "queued",
        };
        AuditRunView {
            id: r.id,
            trigger: r.trigger.as_str().to_owned(),
            state: state.to_owned(),
            requested_at: r.requested_at,
            started_at: r.started_at,
            finished_at: r.finished_at,
            violations: r.violations,
            findings: r.findings.into_iter().map(FindingView::from).collect(),
            error: r.error,
        }
    }
}

impl From<Finding> for FindingView {
    fn from(f: Finding) -> Self {
        FindingView {
            check: f.check,
            subject: f.subject,
            detail: f.detail,
        }
    }
}

impl App {
    /// A page of the self-audit's runs, newest first.
    pub async fn audit_runs(&self, page: PageRequest) -> AppResult<PageOf<AuditRunView>> {
        let page = page.page(self.settings())?;
        let runs = self.store().audit_runs(page.after, page.limit).await?;
        Ok(finish(runs, page, |r| r.id, AuditRunView::from))
    }

    /// Queues a run of the self-audit now, recorded in the audit trail.
    pub async fn request_audit(&self) -> AppResult<AuditRunView> {
        Ok(AuditRunView::from(self.auditor().request().await?))
    }
}
