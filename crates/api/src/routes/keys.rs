//! `/v1/merchants/{id}/keys`: the platform creates, lists, revokes and reassigns a merchant's
//! API keys; a merchant (its key, its owners; not its staff, whose role may not manage keys)
//! creates, lists and revokes its own. A key a person made is theirs and stops working when
//! they are disabled, until the platform gives it to someone else.
//!
//! A key's secret is answered once, by the request that creates it; only its SHA-256 hash is
//! stored, and an `Idempotency-Key` replay answers the key without it. A revoked key stops
//! working at once in this process and within `cache_ttl` in the others.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use coupond_app::records::ApiKey;
use coupond_domain::{MerchantId, Timestamp};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath};
use crate::idempotency::ReplayAs;
use crate::pagination::PageOf;
use crate::routes::{BodyErrors, CommonErrors};
use crate::state::AppState;

/// What to create.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyBody {
    /// What the key is for, 1 to 500 visible characters (shown in listings).
    #[schema(example = "order service, production")]
    pub label: String,
}

/// A merchant's API key as the platform sees it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct KeyView {
    pub id: i64,
    /// The key's first characters, to tell keys apart.
    pub prefix: String,
    #[schema(value_type = i64)]
    pub merchant_id: Option<MerchantId>,
    pub label: String,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub revoked_at: Option<Timestamp>,
    /// The person who made it: the key works only while their account is enabled. Absent for
    /// a key made by another key or the command line.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<i64>)]
    pub operator_id: Option<coupond_domain::OperatorId>,
    /// The key itself: only in the answer to the request that created it. Send it as
    /// `Authorization: Bearer <secret>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl KeyView {
    /// `k`, with its secret where this is the answer that made it.
    pub fn new(k: ApiKey, secret: Option<String>) -> Self {
        KeyView {
            id: k.id,
            prefix: k.prefix,
            merchant_id: k.merchant_id,
            label: k.label,
            created_at: k.created_at,
            revoked_at: k.revoked_at,
            operator_id: k.operator_id,
            secret,
        }
    }
}

/// Path of one key of a merchant.
#[derive(Debug, Deserialize)]
pub struct KeyPath {
    id: MerchantId,
    key_id: i64,
}

/// Create a merchant API key.
///
/// Create an API key for a merchant (the platform; the merchant's owner for its own). The answer
/// carries the key's `secret`, once: store it, it cannot be read again.
#[utoipa::path(operation_id = "create_merchant_key", post, path = "/v1/merchants/{id}/keys", tag = "merchants",
    request_body = KeyBody,
    params(("id" = i64, Path, description = "Merchant id")),
    responses((status = 201, description = "Created; `secret` is the key", body = KeyView), CommonErrors, BodyErrors),
    security(("bearer" = [])))]
pub async fn create(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<MerchantId>,
    ApiJson(body): ApiJson<KeyBody>,
) -> ApiResult<Response> {
    let made = s.create_merchant_key(&p, id, &body.label).await?;
    let (key, secret) = (made.key, made.secret);
    // A replay must not hand the secret out again, nor keep it in the idempotency table.
    let replay = ReplayAs::json(&KeyView::new(key.clone(), None));
    let mut res = (StatusCode::CREATED, Json(KeyView::new(key, Some(secret)))).into_response();
    res.extensions_mut().insert(replay);
    Ok(res)
}

/// List a merchant's keys.
///
/// A merchant's keys, newest first, revoked ones too, without their secrets.
#[utoipa::path(operation_id = "list_merchant_keys", get, path = "/v1/merchants/{id}/keys", tag = "merchants",
    params(("id" = i64, Path, description = "Merchant id")),
    responses((status = 200, description = "The merchant's keys", body = PageOf<KeyView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn list(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<MerchantId>,
) -> ApiResult<Json<PageOf<KeyView>>> {
    let keys = s.merchant_keys(&p, id).await?;
    let items = keys.into_iter().map(|k| KeyView::new(k, None)).collect();
    Ok(Json(PageOf {
        items,
        next_cursor: None,
    }))
}

/// Revoke a merchant key.
///
/// Revoke one of a merchant's keys; revoking again answers the key with its first `revoked_at`.
/// Requests with it are refused (401) at once by this instance, and by others within `cache_ttl`.
#[utoipa::path(operation_id = "revoke_merchant_key", post, path = "/v1/merchants/{id}/keys/{key_id}/revoke", tag = "merchants",
    params(("id" = i64, Path, description = "Merchant id"), ("key_id" = i64, Path, description = "Key id")),
    responses((status = 200, description = "The revoked key", body = KeyView), CommonErrors),
    security(("bearer" = [])))]
pub async fn revoke(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(path): ApiPath<KeyPath>,
) -> ApiResult<Json<KeyView>> {
    let key = s.revoke_merchant_key(&p, path.id, path.key_id).await?;
    Ok(Json(KeyView::new(key, None)))
}

/// Who a key is to belong to.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OwnerBody {
    /// An enabled person of the key's merchant, or `null`: nobody (the key then works whoever
    /// is disabled).
    #[schema(value_type = Option<i64>)]
    pub operator_id: Option<coupond_domain::OperatorId>,
}

/// Give a merchant key to another person.
///
/// A key a person made stops working when their account is disabled. The platform gives it to
/// another enabled person of the same merchant, or to nobody (`null`), and it works again (on
/// other instances within `cache_ttl`). Recorded in the audit trail as `api_key.reassign`.
/// Someone who is not an enabled person of the merchant: 422 `invalid_owner`.
#[utoipa::path(operation_id = "reassign_merchant_key", put, path = "/v1/merchants/{id}/keys/{key_id}/owner", tag = "merchants",
    request_body = OwnerBody,
    params(("id" = i64, Path, description = "Merchant id"), ("key_id" = i64, Path, description = "Key id")),
    responses((status = 200, description = "The key with its new owner", body = KeyView), CommonErrors, BodyErrors),
    security(("bearer" = [])))]
pub async fn reassign(
    State(s): State<AppState>,
    ApiPath(path): ApiPath<KeyPath>,
    ApiJson(body): ApiJson<OwnerBody>,
) -> ApiResult<Json<KeyView>> {
    let key = s.reassign_merchant_key(path.id, path.key_id, body.operator_id);
    Ok(Json(KeyView::new(key.await?, None)))
}
