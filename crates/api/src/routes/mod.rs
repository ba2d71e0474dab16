//! The route table: every `/v1` route with the roles that may call it, one module per
//! resource, handlers named by action.

pub mod activities;
pub mod audit;
pub mod audits;
pub mod campaign_messages;
pub mod centre;
pub mod checkout;
pub mod cities;
pub mod claims;
pub mod codes;
pub mod contacts;
pub mod coupons;
pub mod events;
pub mod inbox;
pub mod issuances;
pub mod keys;
pub mod listings;
pub mod merchants;
pub mod message_texts;
pub mod operators;
pub mod performance;
pub mod plain_orders;
pub mod refunds;
pub mod reports;
pub mod seen;
pub mod settlement;
pub mod shared_tags;
pub mod steering;
pub mod system;
pub mod tag_uploads;
pub mod tags;
pub mod templates;
pub mod today;
pub mod webhooks;

mod table_operations;
use table_operations::{checkout_routes, operations_routes};

use axum::http::Method;
use axum::middleware::from_fn_with_state;
use axum::routing::{delete, get, patch, post, put, MethodRouter};
use axum::Router;
use serde::Serialize;
use utoipa::IntoResponses;

use crate::auth::{Role, RouteGuard};
use crate::error::Problem;
use crate::state::AppState;
use coupond_domain::Area;

const PLATFORM: &[Role] = &[Role::Platform];
const MERCHANT: &[Role] = &[Role::Merchant];
const PLATFORM_MERCHANT: &[Role] = &[Role::Platform, Role::Merchant];
const ANYONE: &[Role] = &[Role::Platform, Role::Merchant, Role::Service, Role::User];
const USER: &[Role] = &[Role::User];
const SERVICE: &[Role] = &[Role::Service];
const USER_SERVICE: &[Role] = &[Role::User, Role::Service];
const PLATFORM_MERCHANT_SERVICE: &[Role] = &[Role::Platform, Role::Merchant, Role::Service];
const PLATFORM_MERCHANT_USER: &[Role] = &[Role::Platform, Role::Merchant, Role::User];
const PLATFORM_SERVICE: &[Role] = &[Role::Platform, Role::Service];

/// One route: method, path (in axum's `{param}` form, as in the OpenAPI document) and the
/// roles admitted. Any other role gets 403; no credentials get 401.
#[derive(Clone, Debug, Serialize)]
pub struct RouteSpec {
    #[serde(serialize_with = "method_str")]
    pub method: Method,
    pub path: &'static str,
    pub roles: &'static [Role],
    /// Takes file uploads: its body may be up to `max_upload_bytes`, not `max_body_bytes`.
    #[serde(skip)]
    pub upload: bool,
}

fn method_str<S: serde::Serializer>(m: &Method, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(m.as_str())
}

/// A route and its handler.
type Route = (RouteSpec, MethodRouter<AppState>);

/// A route that takes no file uploads.
fn r(
    method: Method,
    path: &'static str,
    roles: &'static [Role],
    handler: MethodRouter<AppState>,
) -> Route {
    (
        RouteSpec {
            method,
            path,
            roles,
            upload: false,
        },
        handler,
    )
}

fn table() -> Vec<Route> {
    [
        merchant_and_activity_routes(),
        template_routes(),
        wallet_routes(),
        operations_routes(),
        checkout_routes(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Merchants and activities.
fn merchant_and_activity_routes() -> Vec<Route> {
    vec![
        r(
            Method::POST,
            "/v1/merchants",
            PLATFORM,
            post(merchants::create),
        ),
        r(Method::GET, "/v1/merchants", PLATFORM, get(merchants::list)),
        r(Method::GET, "/v1/cities", ANYONE, get(cities::list)),
        r(Method::PUT, "/v1/cities/{id}", PLATFORM, put(cities::name)),
        r(
            Method::GET,
            "/v1/merchants/{id}",
            PLATFORM_MERCHANT,
            get(merchants::get),
        ),
        r(
            Method::PATCH,
            "/v1/merchants/{id}",
            PLATFORM,
            patch(merchants::update),
        ),
        r(
            Method::POST,
            "/v1/merchants/{id}/keys",
            PLATFORM_MERCHANT,
            post(keys::create),
        ),
        r(
            Method::GET,
            "/v1/merchants/{id}/keys",
            PLATFORM_MERCHANT,
            get(keys::list),
        ),
        r(
            Method::POST,
            "/v1/merchants/{id}/keys/{key_id}/revoke",
            PLATFORM_MERCHANT,
            post(keys::revoke),
        ),
        r(
            Method::PUT,
            "/v1/merchants/{id}/keys/{key_id}/owner",
            PLATFORM,
            put(keys::reassign),
        ),
        r(
            Method::GET,
            "/v1/operators",
            PLATFORM_MERCHANT,
            get(operators::list),
        ),
        r(
            Method::POST,
            "/v1/operators",
            PLATFORM_MERCHANT,
            post(operators::create),
        ),
        r(
            Method::GET,
            "/v1/operators/invitations",
            PLATFORM_MERCHANT,
            get(operators::invitations),
        ),
        r(
            Method::PATCH,
            "/v1/operators/{id}",
            PLATFORM_MERCHANT,
            patch(operators::update),
        ),
        r(
            Method::GET,
            "/v1/audit",
            PLATFORM_MERCHANT,
            get(audit::list),
        ),
        r(Method::GET, "/v1/audits", PLATFORM, get(audits::list)),
        r(Method::POST, "/v1/audits", PLATFORM, post(audits::run)),
        r(
            Method::POST,
            "/v1/activities",
            PLATFORM,
            post(activities::create),
        ),
        r(
            Method::GET,
            "/v1/activities",
            PLATFORM_MERCHANT,
            get(activities::list),
        ),
        r(
            Method::GET,
            "/v1/activities/{id}",
            PLATFORM_MERCHANT,
            get(activities::get),
        ),
        r(
            Method::PATCH,
            "/v1/activities/{id}",
            PLATFORM,
            patch(activities::update),
        ),
        r(
            Method::POST,
            "/v1/activities/{id}/abort",
            PLATFORM,
            post(activities::abort),
        ),
        r(
            Method::POST,
            "/v1/activities/{id}/pause",
            PLATFORM,
            post(steering::pause_activity),
        ),
        r(
            Method::POST,
            "/v1/activities/{id}/resume",
            PLATFORM,
            post(steering::resume_activity),
        ),
    ]
}

/// Templates and listings with their bindings.
fn template_routes() -> Vec<Route> {
    vec![
        r(
            Method::POST,
            "/v1/templates",
            PLATFORM_MERCHANT,
            post(templates::create),
        ),
        r(
            Method::GET,
            "/v1/templates",
            PLATFORM_MERCHANT,
            get(templates::list),
        ),
        r(
            Method::GET,
            "/v1/templates/{id}",
            PLATFORM_MERCHANT,
            get(templates::get),
        ),
        r(
            Method::PATCH,
            "/v1/templates/{id}",
            PLATFORM_MERCHANT,
            patch(templates::update),
        ),
        r(
            Method::DELETE,
            "/v1/templates/{id}",
            PLATFORM_MERCHANT,
            delete(templates::remove),
        ),
        r(
            Method::GET,
            "/v1/templates/{id}/history",
            PLATFORM_MERCHANT,
            get(templates::history),
        ),
        r(
            Method::GET,
            "/v1/templates/{id}/coupons",
            PLATFORM_MERCHANT,
            get(coupons::of_template),
        ),
        r(
            Method::POST,
            "/v1/templates/{id}/publish",
            PLATFORM_MERCHANT,
            post(templates::publish),
        ),
        r(
            Method::POST,
            "/v1/templates/{id}/abort",
            PLATFORM_MERCHANT,
            post(templates::abort),
        ),
        r(
            Method::POST,
            "/v1/templates/{id}/pause",
            PLATFORM_MERCHANT,
            post(steering::pause_template),
        ),
        r(
            Method::POST,
            "/v1/templates/{id}/resume",
            PLATFORM_MERCHANT,
            post(steering::resume_template),
        ),
        r(
            Method::POST,
            "/v1/templates/{id}/stop",
            PLATFORM_MERCHANT,
            post(steering::stop_template),
        ),
        r(
            Method::POST,
            "/v1/templates/{id}/approve",
            PLATFORM,
            post(templates::approve),
        ),
        r(
            Method::POST,
            "/v1/templates/{id}/reject",
            PLATFORM,
            post(templates::reject),
        ),
        r(
            Method::POST,
            "/v1/listings",
            MERCHANT,
            post(listings::create),
        ),
        r(Method::GET, "/v1/listings", ANYONE, get(listings::list)),
        r(Method::GET, "/v1/listings/{id}", ANYONE, get(listings::get)),
        r(
            Method::PATCH,
            "/v1/listings/{id}",
            MERCHANT,
            patch(listings::update),
        ),
        r(
            Method::DELETE,
            "/v1/listings/{id}",
            MERCHANT,
            delete(listings::remove),
        ),
        r(
            Method::PUT,
            "/v1/listings/{id}/templates/{template_id}",
            PLATFORM_MERCHANT,
            put(listings::bind),
        ),
        r(
            Method::DELETE,
            "/v1/listings/{id}/templates/{template_id}",
            PLATFORM_MERCHANT,
            delete(listings::unbind),
        ),
    ]
}

/// Claims, a user's wallet, inbox and coupon centre, promotion codes.
fn wallet_routes() -> Vec<Route> {
    vec![
        r(
            Method::POST,
            "/v1/templates/{id}/claims",
            USER_SERVICE,
            post(claims::claim),
        ),
        r(Method::GET, "/v1/me/coupons", USER, get(claims::mine)),
        r(Method::GET, "/v1/me/claimable", USER, get(centre::mine)),
        r(
            Method::GET,
            "/v1/me/templates/{id}",
            USER,
            get(centre::template),
        ),
        r(
            Method::GET,
            "/v1/me/activities/{id}",
            USER,
            get(centre::activity),
        ),
        r(Method::GET, "/v1/me/messages", USER, get(inbox::list)),
        r(
            Method::POST,
            "/v1/me/messages/{id}/read",
            USER,
            post(inbox::read),
        ),
        r(
            Method::PUT,
            "/v1/templates/{id}/code",
            PLATFORM_MERCHANT,
            put(codes::set_shared),
        ),
        r(
            Method::GET,
            "/v1/templates/{id}/code",
            PLATFORM_MERCHANT,
            get(codes::get_shared),
        ),
        r(
            Method::DELETE,
            "/v1/templates/{id}/code",
            PLATFORM_MERCHANT,
            delete(codes::remove_shared),
        ),
        r(
            Method::POST,
            "/v1/templates/{id}/codes",
            PLATFORM_MERCHANT,
            post(codes::create_batch),
        ),
        r(
            Method::GET,
            "/v1/templates/{id}/code-batches",
            PLATFORM_MERCHANT,
            get(codes::list_batches),
        ),
        r(
            Method::GET,
            "/v1/code-batches/{id}",
            PLATFORM_MERCHANT,
            get(codes::get_batch),
        ),
        r(
            Method::GET,
            "/v1/code-batches/{id}/codes",
            PLATFORM_MERCHANT,
            get(codes::download),
        ),
        r(
            Method::POST,
            "/v1/codes/{code}/redeem",
            USER_SERVICE,
            post(codes::redeem),
        ),
    ]
}

/// The `/v1` routes and their roles, for documentation and for the test that checks every
/// route against every role.
pub fn route_table() -> Vec<RouteSpec> {
    table().into_iter().map(|(spec, _)| spec).collect()
}

/// What a route does, as operators' roles tell them apart ([`OperatorRole::may`]): reading,
/// except people, keys, the audit trail and the self-audit's runs (admin); changing people,
/// keys, merchants, cities, webhooks and shared tags, and running the self-audit (admin); revoking a coupon and extending an order's lock (support); every other change is
/// running campaigns.
///
/// [`OperatorRole::may`]: coupond_domain::OperatorRole::may
pub fn area_of(method: &Method, path: &str) -> Area {
    // `/v1/audit` (the trail) and `/v1/audits` (the self-audit's runs).
    let admin = path.starts_with("/v1/operators")
        || path.contains("/keys")
        || path.starts_with("/v1/audit");
    if method == Method::GET || method == Method::HEAD {
        return if admin { Area::Admin } else { Area::Read };
    }
    if admin
        || path.starts_with("/v1/merchants")
        || path.starts_with("/v1/cities")
        || path.starts_with("/v1/webhooks")
        || path.ends_with("/shared")
        || path.starts_with("/v1/message-texts")
    {
        Area::Admin
    } else if path == "/v1/coupons/{id}/revoke"
        || path == "/v1/orders/{order_id}/extend"
        || path == "/v1/users/{id}/contact"
        || path == "/v1/users/{id}/preferences"
    {
        Area::Support
    } else {
        Area::Campaigns
    }
}

/// The `/v1` router, each route behind its role guard.
pub fn v1(state: &AppState) -> Router<AppState> {
    table()
        .into_iter()
        .fold(Router::new(), |router, (spec, handler)| {
            // Layers run outside in: the auth guard, then (on writes) idempotency, then the
            // handler.
            let limit = if spec.upload {
                state.settings().max_upload_bytes
            } else {
                state.settings().max_body_bytes
            };
            let handler = if crate::idempotency::applies_to(&spec.method, spec.path) {
                handler.route_layer(from_fn_with_state(
                    (state.clone(), spec.path, limit),
                    crate::idempotency::layer,
                ))
            } else {
                handler
            };
            let handler = if spec.upload {
                handler.layer(axum::extract::DefaultBodyLimit::max(limit))
            } else {
                handler
            };
            let area = area_of(&spec.method, spec.path);
            let guarded = handler.route_layer(RouteGuard::new(state.clone(), spec.roles, area));
            router.route(spec.path, guarded)
        })
}

/// The errors any authenticated route can answer, for the OpenAPI document.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub(crate) enum CommonErrors {
    /// Malformed request: bad JSON syntax, query string or path parameter.
    #[response(status = 400, content_type = "application/problem+json")]
    BadRequest(Problem),
    /// No or invalid credentials.
    #[response(status = 401, content_type = "application/problem+json")]
    Unauthorized(Problem),
    /// The caller's role may not call this route.
    #[response(status = 403, content_type = "application/problem+json")]
    Forbidden(Problem),
    /// No such resource, or one the caller may not see.
    #[response(status = 404, content_type = "application/problem+json")]
    NotFound(Problem),
    /// Internal error (logged; never shows details).
    #[response(status = 500, content_type = "application/problem+json")]
    Internal(Problem),
    /// The database is unreachable right now; see Retry-After.
    #[response(status = 503, content_type = "application/problem+json")]
    Unavailable(Problem),
}

/// Rate-limited routes.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub(crate) enum RateLimitedError {
    /// Over a rate limit; see Retry-After.
    #[response(status = 429, content_type = "application/problem+json")]
    TooMany(Problem),
}

/// The additional errors of routes that take a JSON body.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub(crate) enum BodyErrors {
    /// The body is larger than the configured limit.
    #[response(status = 413, content_type = "application/problem+json")]
    TooLarge(Problem),
    /// The body is not `application/json`.
    #[response(status = 415, content_type = "application/problem+json")]
    UnsupportedMediaType(Problem),
    /// The body breaks a rule; `field` names it and `code` says which rule.
    #[response(status = 422, content_type = "application/problem+json")]
    Invalid(Problem),
}

/// The state conflicts of routes that change something.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub(crate) enum ConflictError {
    /// The current state forbids this now (`activity_frozen`, `not_editable`, ...).
    #[response(status = 409, content_type = "application/problem+json")]
    Conflict(Problem),
}
