//! coupond's HTTP API: handlers parse a request, call the application layer (`coupond_app`)
//! with the caller, and render its answer.
//!
//! - [`router`]: the whole service as an axum `Router`; [`routes::route_table`] lists every
//!   `/v1` route with the roles admitted.
//! - [`routes`]: one module per resource, handlers named by action; `system` holds health,
//!   metrics and the OpenAPI document.
//! - [`auth`]: API keys and user JWTs; [`auth::RouteGuard`], the per-route role guard (a typed
//!   tower layer).
//! - [`error`]: [`ApiError`], the one error type, rendered as problem+json.
//! - [`extract`]: body, query and path extractors whose failures name the field.
//! - [`idempotency`]: the `Idempotency-Key` header, scoped and fingerprinted.
//! - [`layers`]: the stack every request passes (body limit, panic guard, time limit,
//!   observation, nosniff), one function per layer.
//! - [`observe`]: request ids, tracing spans, Prometheus metrics.
//! - [`pagination`]: cursors as query parameters; [`views`], the response bodies, are the
//!   application layer's answers (`coupond_app::views`).
//! - [`server`]: the listener: connection cap, head and stall timeouts, graceful shutdown.
//! - [`state`]: [`AppState`], the application (`coupond_app::App`, which handlers call) and
//!   what only HTTP needs; read-only and cheap to clone.
//! - [`uploads`]: permits for uploads being read, in all and one per caller.
//! - [`openapi`]: the OpenAPI document.
#![forbid(unsafe_code)]

pub mod auth;
/// Which client a connection speaks for behind trusted proxies (the application's settings name
/// the proxies).
pub use coupond_app::forwarded;
/// Rate limits, counted by the application.
pub use coupond_app::ratelimit;
pub mod error;
pub mod extract;
pub mod idempotency;
pub mod layers;
pub mod observe;
pub mod openapi;
pub mod pagination;
pub mod routes;
pub mod server;
pub mod state;
pub mod uploads;
pub use coupond_app::views;

use axum::routing::get;
use axum::Router;

pub use auth::{JwtKeys, Principal, Role};
pub use coupond_app::AppSettings;
pub use error::{ApiError, Problem};
pub use routes::{route_table, RouteSpec};
pub use state::AppState;

/// The complete service: `/v1` routes behind their guards, the system routes, and the layers
/// every request passes (request id and metrics, body limit, panic guard).
pub fn router(state: AppState) -> Router {
    router_with(state, Router::new())
}

/// The `/v1` routes alone, behind their guards and idempotency, for in-process callers (the
/// console): what they answer is what the API answers.
pub fn v1_service(state: AppState) -> Router {
    routes::v1(&state).with_state(state)
}

/// [`router`] with `extra` routes (the console) beside the API's, behind the same layers;
/// every answer, whatever produced it, carries `X-Content-Type-Options: nosniff`.
pub fn router_with(state: AppState, extra: Router) -> Router {
    // Install the recorder before the first request records anything.
    observe::metrics_handle();
    // Health, metrics, the document and the unsubscribe link: no credentials.
    let (open, _) = routes::open()
        .into_iter()
        .fold(utoipa_axum::router::OpenApiRouter::new(), |r, route| {
            r.routes(route)
        })
        .split_for_parts();
    let routes = Router::new()
        .merge(routes::v1(&state))
        .merge(open)
        .route("/", get(routes::system::root))
        .route("/docs/", get(routes::system::docs_slash))
        .route(routes::system::REDOC_PATH, get(routes::system::redoc_js))
        .with_state(state.clone())
        .merge(extra)
        .fallback(|| async { ApiError::not_found() })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed });
    layers::apply(routes, state.settings())
}
