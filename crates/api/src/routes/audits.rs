//! `/v1/audits`: the self-audit's runs (the platform). The invariant checks of `coupond audit`
//! run by themselves every day at `background.audit_at` (UTC) and on request; each run is kept
//! with what it found. `POST` queues a run and answers at once (202): the instance holding the
//! `audit` lease makes it in the background, within seconds here and within half a minute when
//! another instance holds the lease.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use coupond_domain::Timestamp;
use coupond_store::{AuditRun, Finding};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::ApiResult;
use crate::extract::ApiQuery;
use crate::pagination::{self, PageOf, PageQuery};
use crate::routes::CommonErrors;
use crate::state::AppState;

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

/// List the self-audit's runs.
///
/// The self-audit's runs, newest first, cursor-paged: each with its trigger (`scheduled` at
/// `background.audit_at`, UTC, or `manual`), its state (`queued`, `running`, `passed`, `failed`,
/// `error`), when it ran, and the broken invariants it found (the checks of `coupond audit`).
#[utoipa::path(operation_id = "list_audit_runs", get, path = "/v1/audits", tag = "audit",
    params(PageQuery),
    responses((status = 200, description = "A page of runs", body = PageOf<AuditRunView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<PageOf<AuditRunView>>> {
    let page = pagination::page(q.cursor.as_deref(), q.limit, s.settings())?;
    let runs = s.store().audit_runs(page.after, page.limit).await?;
    Ok(Json(pagination::finish(
        runs,
        page,
        |r| r.id,
        AuditRunView::from,
    )))
}

/// Run the self-audit now.
///
/// Queue a run of the self-audit now (202, the run `queued`): the instance holding the `audit`
/// lease makes it in the background (on a large database the checks take a while; they only
/// read) and `GET /v1/audits` shows what it found. A run that finds broken invariants emits
/// `audit.failed` to the platform's webhooks and NATS. Recorded in the audit trail
/// (`audit_run.request`).
#[utoipa::path(operation_id = "run_audit", post, path = "/v1/audits", tag = "audit",
    responses((status = 202, description = "Queued", body = AuditRunView), CommonErrors),
    security(("bearer" = [])))]
pub async fn run(State(s): State<AppState>) -> ApiResult<Response> {
    let run = s.auditor().request().await?;
    Ok((StatusCode::ACCEPTED, Json(AuditRunView::from(run))).into_response())
}
