//! `/v1/merchants`: the platform registers, finds and edits merchants.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use coupond_domain::{CityId, Merchant, MerchantDraft, MerchantId, MerchantPatch};
use coupond_engine::campaigns;
use coupond_store::MerchantQuery;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::pagination::{self, PageOf};
use crate::routes::{BodyErrors, CommonErrors, ConflictError};
use crate::state::AppState;

/// The longest `name` filter, in characters.
const MAX_NAME_FILTER: usize = 200;

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
    draft.validate()?;
    let m = campaigns::create_merchant(s.store(), &draft, s.now()).await?;
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
    if p.merchant().is_some_and(|own| own != id) {
        return Err(ApiError::NotFound);
    }
    Ok(Json(s.store().merchant(id).await?))
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
    let page = pagination::page(q.cursor.as_deref(), q.limit, s.settings())?;
    if let Some(name) = &q.name {
        let n = name.chars().count();
        if n == 0 || n > MAX_NAME_FILTER {
            return Err(ApiError::bad_request(
                "invalid_query",
                Some("name"),
                format!("name must be 1 to {MAX_NAME_FILTER} characters"),
            ));
        }
    }
    let query = MerchantQuery {
        city: q.city,
        name: q.name,
        page,
    };
    let rows = s.store().list_merchants(&query).await?;
    Ok(Json(pagination::finish(rows, page, |m| m.id.get(), |m| m)))
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
    Ok(Json(
        campaigns::edit_merchant(s.store(), id, patch, s.now()).await?,
    ))
}
