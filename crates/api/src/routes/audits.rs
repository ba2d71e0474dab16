//! `/v1/audits`: the self-audit's runs (the platform; `coupond_app::audits`). `POST` queues a
//! run and answers at once (202): the instance holding the `audit` lease makes it in the
//! background, within seconds here and within half a minute when another instance holds it.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

pub use coupond_app::audits::{AuditRunView, FindingView};

use crate::error::ApiResult;
use crate::extract::ApiQuery;
use crate::pagination::{PageOf, PageQuery};
use crate::routes::CommonErrors;
use crate::state::AppState;

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
    Ok(Json(s.audit_runs(q.request()).await?))
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
    let run = s.request_audit().await?;
    Ok((StatusCode::ACCEPTED, Json(run)).into_response())
}
