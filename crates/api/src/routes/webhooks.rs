//! Webhooks: endpoints that receive coupond's events, signed, with retries; and the log of
//! deliveries with their attempts.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use coupond_domain::{MerchantId, Timestamp};
use coupond_engine::webhooks::{endpoints, TargetError};
use coupond_store::events::kind;
use coupond_store::Conflict;
use coupond_store::{Delivery, DeliveryState, NewWebhook, StoreError, Webhook};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::idempotency::ReplayAs;
use crate::pagination::{self, PageOf, PageQuery};
use crate::routes::{BodyErrors, CommonErrors, ConflictError};
use crate::state::AppState;

/// What to register.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookBody {
    /// `http://host[:port]/path` (TLS is terminated in front of the receiver for now).
    pub url: String,
    /// Event types (`coupon.claimed`, `coupon.used`, `template.status_changed`, ...), or
    /// `["*"]` for all.
    pub event_types: Vec<String>,
}

/// A registered endpoint.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WebhookView {
    pub id: i64,
    /// Absent for the platform's endpoints (every event); a merchant's receive the events of
    /// its templates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merchant_id: Option<MerchantId>,
    pub url: String,
    pub event_types: Vec<String>,
    /// Only in the answer to the registration: keep it to verify `Coupond-Signature`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    pub created_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_at: Option<Timestamp>,
}

impl WebhookView {
    fn new(w: Webhook, with_secret: bool) -> Self {
        WebhookView {
            id: w.id,
            merchant_id: w.merchant_id,
            url: w.url,
            event_types: w.event_types,
            secret: with_secret.then_some(w.secret),
            created_at: w.created_at,
            disabled_at: w.disabled_at,
        }
    }
}

/// The body's URL, checked against the target policy and normalized, and its event types.
async fn check(s: &AppState, body: &WebhookBody) -> ApiResult<String> {
    let url = match s.settings().webhook_targets.check_url(&body.url).await {
        Ok(url) => url,
        Err(TargetError::Invalid(why)) => {
            return Err(ApiError::invalid(
                "invalid_url",
                "url",
                format!("an http:// URL with a host, at most 2048 characters: {why}"),
            ))
        }
        Err(TargetError::Internal) => {
            return Err(ApiError::invalid(
                "url_not_allowed",
                "url",
                "the URL points at a loopback, private, link-local or otherwise internal \
                 address; use a public address (operators can allow hosts with \
                 webhook_allow_hosts)",
            ))
        }
    };
    if body.event_types.is_empty() || body.event_types.len() > 20 {
        return Err(ApiError::invalid(
            "invalid_value",
            "event_types",
            "1 to 20 event types, or [\"*\"]",
        ));
    }
    for (i, t) in body.event_types.iter().enumerate() {
        if t != "*" && !kind::ALL.contains(&t.as_str()) {
            return Err(ApiError::invalid(
                "unknown_event_type",
                &format!("event_types[{i}]"),
                format!("one of {}", kind::ALL.join(", ")),
            ));
        }
    }
    Ok(url.into())
}

/// Register a webhook endpoint.
///
/// Register an endpoint (the platform for every event; a merchant for the events of its
/// templates). Deliveries are `POST`s of `{"id", "type", "created_at", "data"}` with headers
/// `Coupond-Event`, `Coupond-Delivery` and `Coupond-Signature: t=<unix seconds>,v1=<hex
/// HMAC-SHA256 of "<t>.<body>" keyed with the secret>`; any 2xx acknowledges, anything else is
/// retried with exponential backoff until `webhook_max_attempts`. The `secret` is shown once: a
/// replay of this request under its `Idempotency-Key` answers the endpoint without it. URLs on
/// loopback, private, link-local and other internal addresses are refused (`url_not_allowed`)
/// unless the operator allows them; each owner may have `max_webhooks_per_owner` endpoints enabled
/// (409 `webhook_limit`).
#[utoipa::path(operation_id = "create_webhook", post, path = "/v1/webhooks", tag = "webhooks",
    request_body = WebhookBody,
    responses((status = 201, description = "Registered", body = WebhookView), CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn create(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiJson(body): ApiJson<WebhookBody>,
) -> ApiResult<Response> {
    let url = check(&s, &body).await?;
    let secret = format!(
        "whsec_{}",
        URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
    );
    let new = NewWebhook {
        merchant_id: p.merchant(),
        url: &url,
        secret: &secret,
        event_types: &body.event_types,
    };
    let max = s.settings().max_webhooks_per_owner;
    let w = endpoints::register(s.store(), &new, max, s.now())
        .await
        .map_err(|e| match e {
            StoreError::Conflict(Conflict::Limit) => ApiError::conflict(
                "webhook_limit",
                format!(
                    "at most {} enabled webhooks per owner; disable one first",
                    s.settings().max_webhooks_per_owner
                ),
            ),
            e => e.into(),
        })?;
    // A replay must not hand the secret out again, nor keep it in the idempotency table.
    let replay = ReplayAs::json(&WebhookView::new(w.clone(), false));
    let mut res = (StatusCode::CREATED, Json(WebhookView::new(w, true))).into_response();
    res.extensions_mut().insert(replay);
    Ok(res)
}

/// An endpoint the caller may see: merchants only their own.
async fn load(s: &AppState, p: &Principal, id: i64) -> ApiResult<Webhook> {
    let w = s.store().webhook(id).await?;
    match p.merchant() {
        Some(m) if w.merchant_id != Some(m) => Err(ApiError::NotFound),
        _ => Ok(w),
    }
}

/// List webhook endpoints.
///
/// The caller's endpoints (the platform sees all), oldest first, a page at a time.
#[utoipa::path(operation_id = "list_webhooks", get, path = "/v1/webhooks", tag = "webhooks", params(PageQuery),
    responses((status = 200, description = "A page of endpoints", body = PageOf<WebhookView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn list(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<PageOf<WebhookView>>> {
    let page = pagination::page(q.cursor.as_deref(), q.limit, s.settings())?;
    let all = s.store().list_webhooks(p.merchant()).await?;
    Ok(Json(pagination::slice(
        all,
        page,
        |w| w.id,
        |w| WebhookView::new(w, false),
    )))
}

/// Read a webhook endpoint.
///
/// One of the caller's endpoints, with its event types and whether it is disabled.
#[utoipa::path(operation_id = "get_webhook", get, path = "/v1/webhooks/{id}", tag = "webhooks",
    params(("id" = i64, Path, description = "Webhook id")),
    responses((status = 200, description = "The endpoint", body = WebhookView), CommonErrors),
    security(("bearer" = [])))]
pub async fn get(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<WebhookView>> {
    Ok(Json(WebhookView::new(load(&s, &p, id).await?, false)))
}

/// Disable a webhook endpoint.
///
/// Stop an endpoint: nothing more is delivered to it; queued deliveries are marked failed.
#[utoipa::path(operation_id = "disable_webhook", post, path = "/v1/webhooks/{id}/disable", tag = "webhooks",
    params(("id" = i64, Path, description = "Webhook id")),
    responses((status = 200, description = "Disabled", body = WebhookView), CommonErrors),
    security(("bearer" = [])))]
pub async fn disable(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<WebhookView>> {
    let before = load(&s, &p, id).await?;
    let w = endpoints::disable(s.store(), &before, s.now()).await?;
    Ok(Json(WebhookView::new(w, false)))
}

/// Delete a webhook endpoint.
///
/// Delete an endpoint with its deliveries and their attempts (pending ones are never sent).
/// Deleting it again: 404. To stop deliveries but keep their record, disable it instead.
#[utoipa::path(operation_id = "delete_webhook", delete, path = "/v1/webhooks/{id}", tag = "webhooks",
    params(("id" = i64, Path, description = "Webhook id")),
    responses((status = 204, description = "Deleted"), CommonErrors),
    security(("bearer" = [])))]
pub async fn remove(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<StatusCode> {
    let w = load(&s, &p, id).await?;
    endpoints::delete(s.store(), &w, s.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Send a test delivery.
///
/// Send a test: a signed `webhook.ping` delivery (`data: {"webhook_id"}`, a negative `id`
/// that names no event) is queued for the endpoint, due now, and sent as every delivery is,
/// whatever its event types; follow it in the endpoint's deliveries. A disabled endpoint:
/// 409 `webhook_disabled`.
#[utoipa::path(operation_id = "ping_webhook", post, path = "/v1/webhooks/{id}/ping", tag = "webhooks",
    params(("id" = i64, Path, description = "Webhook id")),
    responses((status = 202, description = "Queued", body = DeliveryView), CommonErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn ping(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<(StatusCode, Json<DeliveryView>)> {
    let w = load(&s, &p, id).await?;
    let d = endpoints::ping(s.store(), &w, s.now())
        .await
        .map_err(|e| match e {
            StoreError::Conflict(Conflict::Version) => ApiError::conflict(
                "webhook_disabled",
                "this endpoint is disabled: nothing is sent to it",
            ),
            e => e.into(),
        })?;
    Ok((StatusCode::ACCEPTED, Json(DeliveryView::from(d))))
}

/// One try of a delivery.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AttemptView {
    pub attempt: i64,
    pub at: Timestamp,
    /// The receiver's HTTP status; absent when it did not answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A delivery and its attempts.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeliveryView {
    pub id: i64,
    pub event_id: i64,
    pub event_type: String,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
    pub created_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<Timestamp>,
    /// While pending: when the next attempt is due.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<Timestamp>,
    pub attempts: Vec<AttemptView>,
}

impl From<Delivery> for DeliveryView {
    fn from(d: Delivery) -> Self {
        DeliveryView {
            id: d.id,
            event_id: d.event_id,
            event_type: d.event_type,
            state: d.state.as_str().to_owned(),
            created_at: d.created_at,
            delivered_at: d.delivered_at,
            next_attempt_at: (d.state == DeliveryState::Pending).then_some(d.next_at),
            attempts: d
                .attempts
                .into_iter()
                .map(|a| AttemptView {
                    attempt: a.attempt,
                    at: a.at,
                    status: a.status,
                    error: a.error,
                })
                .collect(),
        }
    }
}

/// Delivery paging.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DeliveriesQuery {
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1..=200 (default 50).
    pub limit: Option<u32>,
}

/// An endpoint's deliveries.
///
/// An endpoint's deliveries, newest first, each with its attempts.
#[utoipa::path(operation_id = "webhook_deliveries", get, path = "/v1/webhooks/{id}/deliveries", tag = "webhooks",
    params(("id" = i64, Path, description = "Webhook id"), DeliveriesQuery),
    responses((status = 200, description = "A page of deliveries", body = PageOf<DeliveryView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn deliveries(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiQuery(q): ApiQuery<DeliveriesQuery>,
) -> ApiResult<Json<PageOf<DeliveryView>>> {
    load(&s, &p, id).await?;
    let limit = q.limit.unwrap_or(s.settings().default_page);
    if limit == 0 || limit > s.settings().max_page {
        return Err(ApiError::bad_request(
            "invalid_query",
            Some("limit"),
            format!("limit must be from 1 to {}", s.settings().max_page),
        ));
    }
    let before = match q.cursor.as_deref() {
        None => None,
        Some(c) => Some(
            URL_SAFE_NO_PAD
                .decode(c)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .and_then(|t| t.strip_prefix("d:").and_then(|n| n.parse().ok()))
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "invalid_query",
                        Some("cursor"),
                        "cursor is not one this API issued",
                    )
                })?,
        ),
    };
    let mut page = s.store().deliveries(id, before, limit + 1).await?;
    let more = page.len() > limit as usize;
    page.truncate(limit as usize);
    let next_cursor = if more {
        page.last()
            .map(|d| URL_SAFE_NO_PAD.encode(format!("d:{}", d.id)))
    } else {
        None
    };
    Ok(Json(PageOf {
        items: page.into_iter().map(DeliveryView::from).collect(),
        next_cursor,
    }))
}
