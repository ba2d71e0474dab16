//! `/v1/audit`: the audit trail, newest first (the application's
//! `coupond_app::audit_trail`), as JSON or CSV. No route changes or deletes an entry.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use coupond_app::audit_trail::{entries_csv, AuditFilter};
use coupond_app::pages::PageRequest;
use coupond_domain::Timestamp;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::ApiQuery;
use crate::pagination::{self, PageOf};
use crate::routes::CommonErrors;
use crate::state::AppState;

/// Which entries.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AuditParams {
    /// One object, `<kind>:<id>`: `template:5`, `activity:2`, `listing:9`, `merchant:1`,
    /// `operator:3`, `api_key:4`, `coupon:12`, `order:<order id>`, ...
    #[param(example = "template:5")]
    pub object: Option<String>,
    /// Who: `operator:5`, `key:3`, `user:<id>`, `cli:<user>`, `system:<worker>`, or an
    /// operator's email or a key's label.
    pub actor: Option<String>,
    /// Only entries at or after this instant, RFC 3339.
    #[param(value_type = Option<String>)]
    pub since: Option<Timestamp>,
    /// `next_cursor` of the previous page (for CSV, the `next-cursor` header).
    pub cursor: Option<String>,
    /// Page size, 1..=`max_page` (default `default_page`).
    pub limit: Option<u32>,
    /// `json` (the default) or `csv`.
    pub format: Option<String>,
}

/// Read the audit trail.
///
/// The audit trail, newest first, cursor-paged: who changed what (action and object), the fields
/// before and after, when, with the request id and client address. `format=csv` answers the page
/// as CSV, the next page's cursor in the `next-cursor` header.
#[utoipa::path(operation_id = "list_audit", get, path = "/v1/audit", tag = "audit",
    params(AuditParams),
    responses((status = 200, description = "A page of entries (JSON, or CSV with format=csv)", body = PageOf<serde_json::Value>),
        CommonErrors),
    security(("bearer" = [])))]
pub async fn list(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<AuditParams>,
) -> ApiResult<Response> {
    let csv = pagination::wants_csv(q.format.as_deref())?;
    let filter = AuditFilter {
        object: q.object,
        actor: q.actor,
        since: q.since,
    };
    let page = PageRequest {
        cursor: q.cursor,
        limit: q.limit,
    };
    let listed = s.audit_trail(&p, filter, page).await?;
    if !csv {
        return Ok(Json(listed).into_response());
    }
    let mut response = (
        [(header::CONTENT_TYPE, "text/csv; charset=utf-8")],
        entries_csv(&listed.items),
    )
        .into_response();
    if let Some(next) = listed.next_cursor.as_deref().and_then(|c| c.parse().ok()) {
        response.headers_mut().insert("next-cursor", next);
    }
    Ok(response)
}
