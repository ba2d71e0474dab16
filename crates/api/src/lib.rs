//! coupond's HTTP API.
//!
//! - [`router`]: the whole service as an axum `Router`; [`routes::route_table`] lists every
//!   `/v1` route with the roles admitted.
//! - [`routes`]: one module per resource, handlers named by action; `system` holds health,
//!   metrics and the OpenAPI document.
//! - [`auth`]: API keys and user JWTs, the per-route role guard.
//! - [`cache`]: the short-lived cache of the hot path (API keys, claimed templates, the coupon
//!   centre's shelf).
//! - [`error`]: [`ApiError`], the one error type, rendered as problem+json.
//! - [`extract`]: body, query and path extractors whose failures name the field.
//! - [`idempotency`]: the `Idempotency-Key` header, scoped and fingerprinted.
//! - [`invalidate`]: the outbox observer that drops cached templates when they change.
//! - [`observe`]: request ids, tracing spans, Prometheus metrics.
//! - [`pagination`], [`views`]: cursors and response bodies (users' views of templates and
//!   activities in the coupon centre are types of their own).
//! - [`ratelimit`]: per-user and per-IP claim rate limits.
//! - [`server`]: the listener: connection cap, head and stall timeouts, graceful shutdown.
//! - [`state`]: [`AppState`], read-only and cheap to clone.
//! - [`uploads`]: permits for uploads being read, in all and one per caller.
//! - [`openapi`]: the OpenAPI document.
#![forbid(unsafe_code)]

pub mod auth;
pub mod cache;
pub mod error;
pub mod extract;
pub mod forwarded;
pub mod idempotency;
pub mod invalidate;
pub mod observe;
pub mod openapi;
pub mod pagination;
pub mod ratelimit;
pub mod routes;
pub mod server;
pub mod state;
pub mod uploads;
pub mod views;

use std::any::Any;

use axum::extract::DefaultBodyLimit;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;

pub use auth::{JwtKeys, Principal, Role};
pub use error::{ApiError, Problem};
pub use routes::{route_table, RouteSpec};
pub use state::{ApiSettings, AppState};

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
    let max_body = state.settings().max_body_bytes;
    Router::new()
        .merge(routes::v1(&state))
        .route("/healthz", get(routes::system::healthz))
        .route("/readyz", get(routes::system::readyz))
        // An email's unsubscribe link: no credentials, the signed token is the permission.
        .route(
            "/unsubscribe",
            get(routes::contacts::unsubscribe_page).post(routes::contacts::unsubscribe),
        )
        .route("/metrics", get(routes::system::metrics))
        .route("/openapi.json", get(routes::system::openapi))
        .route("/", get(routes::system::root))
        .route("/docs", get(routes::system::docs))
        .route("/docs/", get(routes::system::docs_slash))
        .route(routes::system::REDOC_PATH, get(routes::system::redoc_js))
        .with_state(state.clone())
        .merge(extra)
        .fallback(|| async { ApiError::NotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(DefaultBodyLimit::max(max_body))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(axum::middleware::from_fn_with_state(
            state.settings().request_timeout,
            within_request_timeout,
        ))
        .layer(axum::middleware::from_fn(observe::observe))
        .layer(axum::middleware::map_response(nosniff))
}

/// `X-Content-Type-Options: nosniff`: a browser takes each body only as the type it is sent
/// as, so JSON, CSV or problem text naming user input is never run as a script or style.
async fn nosniff(mut res: Response) -> Response {
    res.headers_mut().insert(
        axum::http::header::X_CONTENT_TYPE_OPTIONS,
        axum::http::HeaderValue::from_static("nosniff"),
    );
    res
}

/// Answers 408 when a request (reading its body included) runs past `request_timeout`, so a
/// body trickling in or a handler stuck on a dependency cannot hold a connection and its
/// memory for ever. Inside `observe`, so the 408 is counted and carries the request id.
async fn within_request_timeout(
    axum::extract::State(limit): axum::extract::State<std::time::Duration>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(res) => res,
        Err(_) => ApiError::RequestTimeout.into_response(),
    }
}

/// A panic in a handler is a bug: log it and answer 500 like any internal error, rather than
/// dropping the connection.
fn panic_response(err: Box<dyn Any + Send + 'static>) -> Response {
    let msg = err
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "panic".to_owned());
    ApiError::Internal(format!("handler panicked: {msg}").into()).into_response()
}
