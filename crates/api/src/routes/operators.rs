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
use coupond_domain::Timestamp;
use coupond_domain::{
    Email, Invitation, MerchantId, Operator, OperatorDraft, OperatorId, OperatorRole,
};
use coupond_engine::accounts::{OperatorChange, RESET_TTL};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::idempotency::ReplayAs;
use crate::pagination::{self, PageOf};
use crate::routes::{BodyErrors, CommonErrors};
use crate::state::AppState;

/// A new operator.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewOperatorBody {
    #[schema(example = "ada@example.com")]
    pub email: String,
    /// Shown in the console and the audit trail, 1 to 100 characters.
    #[schema(example = "Ada Lovelace")]
    pub name: String,
    /// Platform: `admin`, `marketing`, `support`, `finance`; a merchant's: `owner`, `staff`.
    #[schema(example = "marketing")]
    pub role: OperatorRole,
    /// The merchant of an `owner` or `staff` account (a merchant's key: its own, may be left
    /// out).
    #[schema(value_type = Option<i64>)]
    pub merchant_id: Option<MerchantId>,
}

/// A one-time link that sets an operator's password.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SetPasswordLink {
    /// The console's path; prefix it with the console's address and hand it to the person.
    #[schema(example = "/console/password/0f3c…")]
    pub path: String,
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: Timestamp,
}

/// An operator, with the link that sets their password when one was just made.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct OperatorView {
    #[serde(flatten)]
    pub operator: Operator,
    /// Only in the answer to the request that created the account.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set_password: Option<SetPasswordLink>,
}

/// What to change; what is left out stays.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OperatorPatch {
    pub name: Option<String>,
    /// Another role on the same side (platform, or the same merchant's).
    pub role: Option<OperatorRole>,
    /// `true` disables the account (its console sessions end at once); `false` enables it.
    pub disabled: Option<bool>,
    /// `false` turns the account's second factor off (a lost phone; the person sets it up
    /// again from their Account page). Only the person turns it on: `true` is 422
    /// `second_factor_by_owner`.
    pub second_factor: Option<bool>,
}

/// A merchant's invitation, as its merchant sees it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct InvitationView {
    #[serde(flatten)]
    pub invitation: Invitation,
    /// `pending`, `accepted` or `expired`.
    #[schema(example = "pending")]
    pub status: String,
}

impl InvitationView {
    fn at(invitation: Invitation, now: Timestamp) -> Self {
        InvitationView {
            status: invitation.status(now).to_owned(),
            invitation,
        }
    }
}

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
    let merchant = match p.merchant() {
        Some(own) if body.merchant_id.is_some_and(|m| m != own) => return Err(ApiError::NotFound),
        Some(own) if body.role.is_platform() => {
            return Err(ApiError::invalid(
                "role_not_allowed",
                "role",
                format!("a merchant's operators are owner or staff of merchant {own}"),
            ))
        }
        Some(own) => Some(own),
        None => body.merchant_id,
    };
    let email = Email::parse(&body.email)?;
    let draft = OperatorDraft::new(email, body.name, body.role, merchant)?;
    if p.merchant().is_some() {
        let invitation = s.invitations().invite(&draft).await?;
        let view = InvitationView::at(invitation, s.now());
        return Ok((StatusCode::ACCEPTED, Json(view)).into_response());
    }
    let op = s.accounts().add(&draft, None).await?;
    let token = s.accounts().start_reset(op.id).await?;
    let link = SetPasswordLink {
        path: format!("/console/password/{token}"),
        expires_at: s.now().plus(RESET_TTL),
    };
    // A replay must not hand the link out again, nor keep it in the idempotency table.
    let replay = ReplayAs::json(&OperatorView {
        operator: op.clone(),
        set_password: None,
    });
    let view = OperatorView {
        operator: op,
        set_password: Some(link),
    };
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
    let page = pagination::page(q.cursor.as_deref(), q.limit, s.settings())?;
    let merchant = p.merchant().or(q.merchant_id);
    let rows = s.accounts().list(merchant, page.after, page.limit).await?;
    Ok(Json(pagination::finish(rows, page, |o| o.id.get(), |o| o)))
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
    let op = s.accounts().operator(id).await?;
    if p.merchant().is_some() && op.merchant_id != p.merchant() {
        return Err(ApiError::NotFound);
    }
    if body.second_factor == Some(true) {
        return Err(ApiError::invalid(
            "second_factor_by_owner",
            "second_factor",
            "only the person turns their second factor on, from their Account page",
        ));
    }
    let change = OperatorChange {
        name: body.name.as_deref(),
        role: body.role,
        disabled: body.disabled,
    };
    let mut updated = s.accounts().update(id, &change).await?;
    if body.second_factor == Some(false) && updated.has_totp {
        updated = s.accounts().disable_totp(id).await?;
    }
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
    let page = pagination::page(q.cursor.as_deref(), q.limit, s.settings())?;
    let merchant = p.merchant().or(q.merchant_id);
    let rows = s
        .invitations()
        .list(merchant, page.after, page.limit)
        .await?;
    let now = s.now();
    Ok(Json(pagination::finish(
        rows,
        page,
        |i| i.id,
        |i| InvitationView::at(i, now),
    )))
}
