//! Webhooks: endpoints that receive coupond's events, signed, with retries; and the log of
//! deliveries with their attempts.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use coupond_app::pages::PageRequest;
use serde::Deserialize;
use utoipa::IntoParams;

pub use coupond_app::webhooks::{AttemptView, DeliveryView, WebhookBody, WebhookView};

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::idempotency::ReplayAs;
use crate::pagination::{PageOf, PageQuery};
use crate::routes::{BodyErrors, CommonErrors, ConflictError};
use crate::state::AppState;

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
    let w = s.register_webhook(&p, &body).await?;
    // A replay must not hand the secret out again, nor keep it in the idempotency table.
    let replay = ReplayAs::json(&WebhookView {
        secret: None,
        ..w.clone()
    });
    let mut res = (StatusCode::CREATED, Json(w)).into_response();
    res.extensions_mut().insert(replay);
    Ok(res)
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
    Ok(Json(s.webhooks(&p, q.request()).await?))
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
    Ok(Json(s.webhook(&p, id).await?))
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
    Ok(Json(s.disable_webhook(&p, id).await?))
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
    s.delete_webhook(&p, id).await?;
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
    Ok((StatusCode::ACCEPTED, Json(s.ping_webhook(&p, id).await?)))
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
    let page = PageRequest {
        cursor: q.cursor,
        limit: q.limit,
    };
    Ok(Json(s.webhook_deliveries(&p, id, page).await?))
}
