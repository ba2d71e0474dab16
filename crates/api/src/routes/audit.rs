//! `/v1/audit`: the audit trail, newest first. The platform reads every entry; a merchant
//! (its key, its owners) reads its own merchant's, with any actor not its own shown as "the
//! platform" (no name, client or request id). Entries are written by the transactions of the
//! changes themselves (`coupond_store::audit`); no route changes or deletes one.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use coupond_domain::csv::CsvWriter;
use coupond_domain::Timestamp;
use coupond_store::audit::{AuditEntry, AuditQuery};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::pagination::{self, PageOf};
use crate::routes::CommonErrors;
use crate::state::AppState;

/// The longest `actor` filter.
const MAX_ACTOR: usize = 300;

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
    if let Some(o) = &q.object {
        check_object(o)?;
    }
    if q.actor
        .as_ref()
        .is_some_and(|a| a.is_empty() || a.len() > MAX_ACTOR)
    {
        return Err(ApiError::bad_request(
            "invalid_query",
            Some("actor"),
            format!("actor is 1 to {MAX_ACTOR} bytes"),
        ));
    }
    let page = pagination::page(q.cursor.as_deref(), q.limit, s.settings())?;
    let own = match p.merchant() {
        Some(m) => Some(OwnActors::of(&s, m).await?),
        None => None,
    };
    // A merchant names only its own people and keys: any other name finds nothing, so the
    // filter cannot tell which emails or labels act for the platform.
    let foreign = match (&own, &q.actor) {
        (Some(own), Some(a)) => !own.names(a),
        _ => false,
    };
    let query = AuditQuery {
        object: q.object,
        actor: q.actor,
        since: q.since,
        merchant: p.merchant(),
        before_id: page.after,
        limit: page.limit,
    };
    let mut rows = if foreign {
        Vec::new()
    } else {
        s.store().audit_entries(&query).await?
    };
    if let Some(own) = &own {
        rows.iter_mut().for_each(|e| own.redact(e));
    }
    let listed = pagination::finish(rows, page, |e| e.id, |e| e);
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

/// `<kind>:<id>`: a kind of lowercase letters and `_`, a positive id (a user's id for
/// `user`, a tag for `tag`, an order's id for `order`).
fn check_object(o: &str) -> ApiResult<()> {
    let ok = o.split_once(':').is_some_and(|(kind, id)| {
        let named = match kind {
            "user" => coupond_domain::UserId::parse(id).is_ok(),
            "tag" => coupond_domain::Tag::parse(id).is_ok(),
            "order" => coupond_domain::OrderId::parse(id).is_ok(),
            _ => id.parse::<i64>().is_ok_and(|id| id > 0) && !id.starts_with('+'),
        };
        (1..=32).contains(&kind.len())
            && kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
            && named
    });
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request(
            "invalid_query",
            Some("object"),
            "object is <kind>:<id>, as template:5 (user:<user id>, tag:<tag>, order:<order id>)",
        ))
    }
}

/// The actors that are a merchant's own: its people (`operator:N`, by email too) and its keys
/// (`key:N`, by label too). A merchant reads every other actor's entries about its objects as
/// the platform's, without who, from where or under which request: the platform's staff and
/// systems are its own business.
struct OwnActors {
    actors: std::collections::HashSet<String>,
    names: std::collections::HashSet<String>,
}

impl OwnActors {
    /// The most people and keys of one merchant read to tell its own actors.
    const MAX: u32 = 1_000;

    async fn of(s: &AppState, m: coupond_domain::MerchantId) -> ApiResult<OwnActors> {
        let mut own = OwnActors {
            actors: Default::default(),
            names: Default::default(),
        };
        for op in s.store().list_operators(Some(m), None, Self::MAX).await? {
            own.actors.insert(format!("operator:{}", op.id));
            own.names.insert(op.email.to_string());
        }
        for k in s.store().list_api_keys().await? {
            if k.merchant_id == Some(m) {
                own.actors.insert(format!("key:{}", k.id));
                own.names.insert(k.label);
            }
        }
        Ok(own)
    }

    /// Whether `actor` (an actor or a name, as the filter takes it) is the merchant's own.
    fn names(&self, actor: &str) -> bool {
        self.actors.contains(actor) || self.names.contains(actor)
    }

    /// `e` as the merchant may read it.
    fn redact(&self, e: &mut AuditEntry) {
        if self.actors.contains(&e.actor) || e.actor.starts_with("system:") {
            return;
        }
        e.actor = "platform".to_owned();
        e.actor_name = "the platform".to_owned();
        e.request_id = None;
        e.client = None;
    }
}

fn entries_csv(entries: &[AuditEntry]) -> String {
    let mut w = CsvWriter::with_header(&[
        "id",
        "at",
        "actor",
        "actor_name",
        "action",
        "object",
        "merchant_id",
        "before",
        "after",
        "request_id",
        "client",
    ]);
    let json = |v: &Option<serde_json::Value>| v.as_ref().map(|v| v.to_string());
    for e in entries {
        w.number(e.id)
            .text(&e.at.to_string())
            .text(&e.actor)
            .text(&e.actor_name)
            .text(&e.action)
            .text(&e.object)
            .optional_number(e.merchant_id.map(|m| m.get()))
            .optional(json(&e.before).as_deref())
            .optional(json(&e.after).as_deref())
            .optional(e.request_id.as_deref())
            .optional(e.client.as_deref())
            .end_line();
    }
    w.finish()
}
