//! `/v1/merchants`: the platform registers, finds and edits merchants.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use coupond_app::merchants::MerchantFilter;
use coupond_app::pages::PageRequest;
use coupond_domain::{CityId, Merchant, MerchantDraft, MerchantId, MerchantPatch};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::pagination::PageOf;
use crate::routes::{BodyErrors, CommonErrors, ConflictError};
use crate::state::AppState;

/// Create a merchant.
///
/// Create a merchant with its name, short name and the cities it operates in. Give it a key (`POST
/// /v1/merchants/{id}/keys`) or an owner operator to let it in.
#[utoipa::path(operation_id = "create_merchant", post, path = "/v1/merchants", tag = "merchants", request_body = MerchantDraft,
    responses((status = 201, description = "Created", body = Merchant), CommonErrors, BodyErrors),
    security(("bearer" = [])))]
pub async fn create(
    State(s): State<AppState>,
    ApiJson(draft): ApiJson<MerchantDraft>,
) -> ApiResult<(StatusCode, Json<Merchant>)> {
    let m = s.create_merchant(&draft).await?;
    Ok((StatusCode::CREATED, Json(m)))
}

/// Read a merchant.
///
/// Read a merchant. A merchant key may read only its own merchant.
#[utoipa::path(operation_id = "get_merchant", get, path = "/v1/merchants/{id}", tag = "merchants",
    params(("id" = i64, Path, description = "Merchant id")),
    responses((status = 200, description = "The merchant", body = Merchant), CommonErrors),
    security(("bearer" = [])))]
pub async fn get(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<MerchantId>,
) -> ApiResult<Json<Merchant>> {
    Ok(Json(s.merchant(&p, id).await?))
}

/// Filters for listing merchants.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only merchants operating in this city.
    #[param(value_type = Option<i64>)]
    pub city: Option<CityId>,
    /// Only merchants whose name or short name contains this text (1 to 200 characters,
    /// case ignored).
    pub name: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1..=200 (default 50).
    pub limit: Option<u32>,
}

/// List merchants.
///
/// Merchants oldest first, a page at a time.
#[utoipa::path(operation_id = "list_merchants", get, path = "/v1/merchants", tag = "merchants", params(ListQuery),
    responses((status = 200, description = "A page of merchants", body = PageOf<Merchant>), CommonErrors),
    security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<PageOf<Merchant>>> {
    let filter = MerchantFilter {
        city: q.city,
        name: q.name,
    };
    let page = PageRequest {
        cursor: q.cursor,
        limit: q.limit,
    };
    Ok(Json(s.merchants(filter, page).await?))
}

/// Change a merchant.
///
/// Change a merchant's name, short name or cities; fields left out keep their value. A concurrent
/// edit of the same merchant is refused (`conflict`), never silently undone.
#[utoipa::path(operation_id = "update_merchant", patch, path = "/v1/merchants/{id}", tag = "merchants", request_body = MerchantPatch,
    params(("id" = i64, Path, description = "Merchant id")),
    responses((status = 200, description = "The updated merchant", body = Merchant),
        CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn update(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<MerchantId>,
    ApiJson(patch): ApiJson<MerchantPatch>,
) -> ApiResult<Json<Merchant>> {
    Ok(Json(s.edit_merchant(id, patch).await?))
}
