//! `/v1/operators`: the people who sign into the console. The platform manages everyone; a
//! merchant manages its own staff (`owner` and `staff` of its merchant) and nobody else's. A
//! new account made by the platform is answered with a one-time set-password link (its path;
//! the console serves it), valid for an hour: passwords never travel in these requests. A
//! merchant invites instead (202, the engine's `Invitations`): the link goes only to the
//! address, so the answer is the same whether the address has an account anywhere or not.
//! Everything goes through the engine's `Accounts` and `Invitations`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use coupond_app::pages::PageRequest;
use coupond_app::people::Added;
use coupond_domain::{MerchantId, Operator, OperatorId};
use serde::Deserialize;
use utoipa::IntoParams;

pub use coupond_app::people::{
    InvitationView, NewOperatorBody, OperatorPatch, OperatorView, SetPasswordLink,
};

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::idempotency::ReplayAs;
use crate::pagination::PageOf;
use crate::routes::{BodyErrors, CommonErrors};
use crate::state::AppState;

/// Which operators.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct OperatorQuery {
    /// Only this merchant's staff (the platform; a merchant always sees its own only).
    #[param(value_type = Option<i64>)]
    pub merchant_id: Option<MerchantId>,
    pub cursor: Option<String>,
    pub limit: Option<u32>,
}

/// Add or invite an operator.
///
/// The platform adds anyone: 201, with a one-time set-password link valid for an hour. A merchant
/// invites its own `owner` or `staff`: 202, an invitation whose link goes only to the address by
/// email (valid 72 hours), answered alike whether the address has an account elsewhere or not;
/// the account is made when the link's holder chooses a password. Without email configured a
/// merchant's request is 409 `email_not_configured`; with 20 invitations pending, 409
/// `too_many_invitations`.
#[utoipa::path(operation_id = "create_operator", post, path = "/v1/operators", tag = "operators",
    request_body = NewOperatorBody,
    responses(
        (status = 201, description = "Created by the platform, with `set_password`", body = OperatorView),
        (status = 202, description = "A merchant's invitation, sent by email", body = InvitationView),
        CommonErrors, BodyErrors),
    security(("bearer" = [])))]
pub async fn create(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiJson(body): ApiJson<NewOperatorBody>,
) -> ApiResult<Response> {
    let view = match s.add_operator(&p, body).await? {
        Added::Invited(view) => return Ok((StatusCode::ACCEPTED, Json(view)).into_response()),
        Added::Account(view) => view,
    };
    // A replay must not hand the link out again, nor keep it in the idempotency table.
    let replay = ReplayAs::json(&OperatorView {
        operator: view.operator.clone(),
        set_password: None,
    });
    let mut res = (StatusCode::CREATED, Json(view)).into_response();
    res.extensions_mut().insert(replay);
    Ok(res)
}

/// List operators.
///
/// Operators by id (platform: all, or one merchant's; merchant: its own staff).
#[utoipa::path(operation_id = "list_operators", get, path = "/v1/operators", tag = "operators",
    params(OperatorQuery),
    responses((status = 200, description = "A page of operators", body = PageOf<Operator>), CommonErrors),
    security(("bearer" = [])))]
pub async fn list(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<OperatorQuery>,
) -> ApiResult<Json<PageOf<Operator>>> {
    let page = PageRequest {
        cursor: q.cursor,
        limit: q.limit,
    };
    Ok(Json(s.operators(&p, q.merchant_id, page).await?))
}

/// Change an operator.
///
/// Rename an operator, change their role (on the same side), disable or enable them.
#[utoipa::path(operation_id = "update_operator", patch, path = "/v1/operators/{id}", tag = "operators",
    request_body = OperatorPatch,
    params(("id" = i64, Path, description = "Operator id")),
    responses((status = 200, description = "The operator", body = Operator), CommonErrors, BodyErrors),
    security(("bearer" = [])))]
pub async fn update(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<OperatorId>,
    ApiJson(body): ApiJson<OperatorPatch>,
) -> ApiResult<Json<Operator>> {
    let updated = s.update_operator(&p, id, &body).await?;
    Ok(Json(updated))
}

/// Which invitations.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct InvitationQuery {
    /// Only this merchant's (the platform; a merchant always sees its own only).
    #[param(value_type = Option<i64>)]
    pub merchant_id: Option<MerchantId>,
    pub cursor: Option<String>,
    pub limit: Option<u32>,
}

/// List invitations.
///
/// Merchants' invitations by id, with where each stands: pending, accepted or expired
/// (platform: all, or one merchant's; merchant: its own).
#[utoipa::path(operation_id = "list_operator_invitations", get, path = "/v1/operators/invitations", tag = "operators",
    params(InvitationQuery),
    responses((status = 200, description = "A page of invitations", body = PageOf<InvitationView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn invitations(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<InvitationQuery>,
) -> ApiResult<Json<PageOf<InvitationView>>> {
    let page = PageRequest {
        cursor: q.cursor,
        limit: q.limit,
    };
    Ok(Json(s.operator_invitations(&p, q.merchant_id, page).await?))
}
