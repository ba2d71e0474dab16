//! Promotion rules: trying a condition tree on an order before it goes on a template.

use axum::extract::State;
use axum::{Extension, Json};
use coupond_domain::checkout::RuleCheck;
use coupond_domain::tags::MAX_TAGS_PER_USER;
use coupond_domain::{Condition, DomainError, OrderDraft, Scope, Timestamp};
use serde::Deserialize;
use utoipa::ToSchema;

use coupond_app::rules::{customer, RulePreviewRequest};

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::ApiJson;
use crate::routes::checkout::order_of;
use crate::routes::{BodyErrors, CommonErrors};
use crate::state::AppState;

/// A customer made up for a preview.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PreviewCustomer {
    /// Its tags (at most 100).
    #[serde(default)]
    #[schema(example = json!(["vip"]))]
    pub tags: Vec<String>,
    /// How many orders it has confirmed (`customer.orders`; 0 is a first order).
    #[serde(default)]
    pub confirmed_orders: u64,
}

/// The body of a rule preview.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RulePreviewBody {
    pub conditions: Condition,
    /// Which lines `order.subtotal` and `order.quantity` count, as a template's scope
    /// (default: every line).
    #[serde(default)]
    pub scope: Scope,
    pub order: OrderDraft,
    /// The customer `customer.*` tests read; without it they do not hold (`have` is null).
    #[serde(default)]
    pub customer: Option<PreviewCustomer>,
    /// When to try it (`order.weekday`, `order.local_time` in the platform's time zone);
    /// default now.
    #[serde(default)]
    pub at: Option<Timestamp>,
}

/// Try conditions on an order.
///
/// Whether `conditions` hold on `order` (with `customer`, at `at`), and if not, each test
/// that fails with what it needs (`unmet`: `have`, and `need`: how much more or less of a
/// subtotal, a quantity or a count; from when a weekday or a time holds). Reads nothing about
/// real users, changes nothing. A bad tree is refused with every broken node's path
/// (`conditions.all[1].value`).
#[utoipa::path(operation_id = "preview_rule", post, path = "/v1/rules/preview", tag = "rules",
    request_body = RulePreviewBody,
    responses((status = 200, description = "Whether the conditions hold, and what is missing", body = RuleCheck), CommonErrors, BodyErrors),
    security(("bearer" = [])))]
pub async fn preview(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiJson(body): ApiJson<RulePreviewBody>,
) -> ApiResult<Json<RuleCheck>> {
    let made_up = match body.customer {
        Some(c) if c.tags.len() > MAX_TAGS_PER_USER => {
            return Err(DomainError::invalid(
                "customer.tags",
                "invalid_length",
                format!("at most {MAX_TAGS_PER_USER} tags"),
            )
            .into())
        }
        Some(c) => Some(customer(&c.tags, c.confirmed_orders)?),
        None => None,
    };
    let req = RulePreviewRequest {
        conditions: body.conditions,
        scope: body.scope,
        order: order_of(body.order)?,
        customer: made_up,
        at: body.at,
    };
    Ok(Json(s.preview_rule(&p, &req)?))
}
