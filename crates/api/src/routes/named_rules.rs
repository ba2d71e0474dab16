//! Named rules: condition trees (and scopes) many templates share, each template following
//! the rule's latest version.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use coupond_app::pages::PageOf;
use coupond_domain::{Rule, RuleDraft, RuleId, RuleUse};

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::pagination::PageQuery;
use crate::routes::{BodyErrors, CommonErrors, ConflictError};
use crate::state::AppState;

/// Create a rule.
///
/// Create a named rule: `conditions` as a template's, and optionally a `scope` that replaces
/// the scope of every template using it. The platform's rules may be used by every template,
/// a merchant's by its own. A template names it with `rule_id` (beside its own `conditions`,
/// both must hold). A bad tree is refused with every broken node's path.
#[utoipa::path(operation_id = "create_rule", post, path = "/v1/rules", tag = "rules",
    request_body = RuleDraft,
    responses((status = 201, description = "Created", body = Rule), CommonErrors, BodyErrors),
    security(("bearer" = [])))]
pub async fn create(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiJson(draft): ApiJson<RuleDraft>,
) -> ApiResult<(StatusCode, Json<Rule>)> {
    Ok((StatusCode::CREATED, Json(s.create_rule(&p, &draft).await?)))
}

/// List rules.
///
/// List the rules the caller may use, oldest first: a merchant's own and the platform's.
#[utoipa::path(operation_id = "list_rules", get, path = "/v1/rules", tag = "rules", params(PageQuery),
    responses((status = 200, description = "A page of rules", body = PageOf<Rule>), CommonErrors),
    security(("bearer" = [])))]
pub async fn list(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<PageOf<Rule>>> {
    Ok(Json(s.rules(&p, q.request()).await?))
}

/// Read a rule.
///
/// One rule, its version, and the templates using it (a merchant sees its own among them).
#[utoipa::path(operation_id = "get_rule", get, path = "/v1/rules/{id}", tag = "rules",
    params(("id" = i64, Path, description = "Rule id")),
    responses((status = 200, description = "The rule", body = RuleUse), CommonErrors),
    security(("bearer" = [])))]
pub async fn get(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<RuleId>,
) -> ApiResult<Json<RuleUse>> {
    Ok(Json(s.rule_use(&p, id).await?))
}

/// Change a rule.
///
/// Replace a rule's terms: a new version, which every template using it follows from then on,
/// live ones included (each gets a `template.changed` event and a history entry), in one
/// transaction. Recorded in the audit trail with the terms before and after. A merchant
/// changes only its own rules (403 on the platform's).
#[utoipa::path(operation_id = "update_rule", put, path = "/v1/rules/{id}", tag = "rules",
    request_body = RuleDraft,
    params(("id" = i64, Path, description = "Rule id")),
    responses((status = 200, description = "The new version", body = Rule), CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn update(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<RuleId>,
    ApiJson(draft): ApiJson<RuleDraft>,
) -> ApiResult<Json<Rule>> {
    Ok(Json(s.update_rule(&p, id, draft).await?))
}

/// Delete a rule.
///
/// Delete a rule no template uses; one in use: 409 `rule_in_use`.
#[utoipa::path(operation_id = "delete_rule", delete, path = "/v1/rules/{id}", tag = "rules",
    params(("id" = i64, Path, description = "Rule id")),
    responses((status = 204, description = "Deleted"), CommonErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn remove(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<RuleId>,
) -> ApiResult<StatusCode> {
    s.delete_rule(&p, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
