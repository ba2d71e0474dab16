//! The route table: every `/v1` route with the roles that may call it, one module per
//! resource, handlers named by action. Each route is declared once, in `table`: its roles
//! and its handler, whose `#[utoipa::path]` gives the path and method to the router and the
//! OpenAPI document alike.

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
pub mod named_rules;
pub mod operators;
pub mod performance;
pub mod plain_orders;
pub mod refunds;
pub mod reports;
pub mod rules;
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

mod table;
pub(crate) use table::open;

use axum::http::Method;
use axum::middleware::from_fn_with_state;
use axum::Router;
use serde::Serialize;
use utoipa::IntoResponses;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};

use coupond_app::Access;

use crate::auth::{Role, RouteGuard};
use crate::error::Problem;
use crate::state::AppState;
use coupond_domain::Area;

use coupond_app::caller::roles::{PLATFORM_SERVICE, SERVICE, USER, USER_SERVICE};

/// One route: method, path (in axum's `{param}` form, as in the OpenAPI document) and the
/// roles admitted. Any other role gets 403; no credentials get 401.
#[derive(Clone, Debug, Serialize)]
pub struct RouteSpec {
    #[serde(serialize_with = "method_str")]
    pub method: Method,
    pub path: String,
    pub roles: &'static [Role],
    /// The area an operator account's role must act in.
    #[serde(skip)]
    pub area: Area,
    /// Takes file uploads: its body may be up to `max_upload_bytes`, not `max_body_bytes`.
    #[serde(skip)]
    pub upload: bool,
}

fn method_str<S: serde::Serializer>(m: &Method, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(m.as_str())
}

/// A route as declared ([`table`]): the roles it admits, whether it takes uploads, and its
/// handler with the path and method of its `#[utoipa::path]`.
pub(crate) struct Declared {
    roles: &'static [Role],
    /// The area an operator's role must act in, when the application declares it with the
    /// operation's roles; otherwise [`area_of`] the route.
    area: Option<Area>,
    upload: bool,
    route: UtoipaMethodRouter<AppState>,
}

/// A route for `roles`.
fn route(roles: &'static [Role], route: UtoipaMethodRouter<AppState>) -> Declared {
    Declared {
        roles,
        area: None,
        upload: false,
        route,
    }
}

/// A route for an operation whose [`Access`] the application declares (the console checks the
/// same when it calls the operation directly).
fn op(access: Access, route: UtoipaMethodRouter<AppState>) -> Declared {
    Declared {
        roles: access.roles,
        area: Some(access.area),
        upload: false,
        route,
    }
}

/// A route for `roles` that takes a file upload (up to `max_upload_bytes`).
fn upload(roles: &'static [Role], route: UtoipaMethodRouter<AppState>) -> Declared {
    Declared {
        roles,
        area: None,
        upload: true,
        route,
    }
}

impl Declared {
    /// Its method and path, as its annotation declares them.
    fn spec(&self) -> RouteSpec {
        let (path, item) = self
            .route
            .1
            .paths
            .iter()
            .next()
            .expect("routes! declares a path");
        let method = [
            (Method::GET, item.get.is_some()),
            (Method::POST, item.post.is_some()),
            (Method::PUT, item.put.is_some()),
            (Method::PATCH, item.patch.is_some()),
            (Method::DELETE, item.delete.is_some()),
        ]
        .into_iter()
        .find_map(|(m, declared)| declared.then_some(m))
        .expect("each route declares one method");
        let area = self.area.unwrap_or_else(|| area_of(&method, path));
        RouteSpec {
            method,
            path: path.clone(),
            roles: self.roles,
            area,
            upload: self.upload,
        }
    }
}

/// The `/v1` routes and their roles (built once), for the guard, the documentation, the
/// console's forms and the test that checks every route against every role.
pub fn route_table() -> &'static [RouteSpec] {
    static TABLE: std::sync::OnceLock<Vec<RouteSpec>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| table::declared().iter().map(Declared::spec).collect())
}

/// The paths, operations and schemas of every documented route, as the OpenAPI document
/// holds them.
pub(crate) fn documented() -> utoipa::openapi::OpenApi {
    let v1 = table::declared().into_iter().map(|d| d.route);
    v1.chain(table::open())
        .fold(OpenApiRouter::new(), OpenApiRouter::routes)
        .into_openapi()
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
    let specs = route_table();
    table::declared()
        .into_iter()
        .zip(specs)
        .fold(Router::new(), |router, (declared, spec)| {
            let (_, _, handler) = declared.route;
            let path = spec.path.as_str();
            // Layers run outside in: the auth guard, then (on writes) idempotency, then the
            // handler.
            let limit = if spec.upload {
                state.settings().max_upload_bytes
            } else {
                state.settings().max_body_bytes
            };
            let handler = if crate::idempotency::applies_to(&spec.method, path) {
                handler.route_layer(from_fn_with_state(
                    (state.clone(), path, limit),
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
            let guarded =
                handler.route_layer(RouteGuard::new(state.clone(), spec.roles, spec.area));
            router.route(path, guarded)
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
