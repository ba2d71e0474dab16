//! `/v1/merchants`: the platform registers merchants.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use coupond_domain::{Merchant, MerchantDraft, MerchantId};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath};
use crate::routes::{BodyErrors, CommonErrors};
use crate::state::AppState;

/// Create a merchant.
#[utoipa::path(operation_id = "create_merchant", post, path = "/v1/merchants", tag = "merchants", request_body = MerchantDraft,
    responses((status = 201, description = "Created", body = Merchant), CommonErrors, BodyErrors),
    security(("bearer" = [])))]
pub async fn create(
    State(s): State<AppState>,
    ApiJson(draft): ApiJson<MerchantDraft>,
) -> ApiResult<(StatusCode, Json<Merchant>)> {
    draft.validate()?;
    let m = s.store().insert_merchant(&draft, s.now()).await?;
    Ok((StatusCode::CREATED, Json(m)))
}

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
