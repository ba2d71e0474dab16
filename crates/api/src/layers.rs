//! The layers every request passes, one function each, so that `router_with` and the
//! `layers` benchmark compose exactly the same stack ([`STACK`], innermost first).
//!
//! What each gives, and what it costs per request (`cargo bench --bench layers`, README's
//! Benchmarks):
//! - [`body_limit`]: bodies past `max_body_bytes` are refused (413) before a handler reads
//!   them;
//! - [`catch_panic`]: a panicking handler answers 500 instead of dropping the connection;
//! - [`request_timeout`]: 408 past `request_timeout`, body reading included;
//! - [`observe`]: the request id, the tracing span, the log line and the HTTP metrics;
//! - [`nosniff`]: `X-Content-Type-Options: nosniff` on every answer.

use std::any::Any;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::set_header::SetResponseHeaderLayer;

use crate::{ApiError, ApiSettings};

/// A layer of the stack: wraps a router with what it adds.
pub type Layer = fn(Router, &ApiSettings) -> Router;

/// The stack, innermost first, by name: a request passes them from last to first.
pub const STACK: [(&str, Layer); 5] = [
    ("body_limit", body_limit),
    ("catch_panic", catch_panic),
    ("request_timeout", request_timeout),
    ("observe", observe),
    ("nosniff", nosniff),
];

/// `router` behind the whole [`STACK`].
pub fn apply(router: Router, settings: &ApiSettings) -> Router {
    STACK
        .iter()
        .fold(router, |router, (_, layer)| layer(router, settings))
}

/// Bodies past `max_body_bytes` are refused before a handler reads them.
pub fn body_limit(router: Router, settings: &ApiSettings) -> Router {
    router.layer(DefaultBodyLimit::max(settings.max_body_bytes))
}

/// A panic in a handler is a bug: log it and answer 500 like any internal error, rather than
/// dropping the connection.
pub fn catch_panic(router: Router, _: &ApiSettings) -> Router {
    router.layer(CatchPanicLayer::custom(panic_response))
}

/// Answers 408 when a request (reading its body included) runs past `request_timeout`, so a
/// body trickling in or a handler stuck on a dependency cannot hold a connection and its
/// memory for ever. Inside [`observe`], so the 408 is counted and carries the request id.
pub fn request_timeout(router: Router, settings: &ApiSettings) -> Router {
    router.layer(axum::middleware::from_fn_with_state(
        settings.request_timeout,
        within_request_timeout,
    ))
}

/// Request ids, spans, logs and metrics ([`crate::observe`]).
pub fn observe(router: Router, _: &ApiSettings) -> Router {
    router.layer(axum::middleware::from_fn(crate::observe::observe))
}

/// `X-Content-Type-Options: nosniff`: a browser takes each body only as the type it is sent
/// as, so JSON, CSV or problem text naming user input is never run as a script or style.
/// Outermost, so every answer carries it, whatever produced it.
///
/// A typed layer rather than `map_response`, which cloned the router and boxed a future for
/// each request: 0.42 µs a request then, 0.18 µs now (`cargo bench --bench layers`).
pub fn nosniff(router: Router, _: &ApiSettings) -> Router {
    router.layer(SetResponseHeaderLayer::overriding(
        axum::http::header::X_CONTENT_TYPE_OPTIONS,
        axum::http::HeaderValue::from_static("nosniff"),
    ))
}

async fn within_request_timeout(
    axum::extract::State(limit): axum::extract::State<Duration>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(res) => res,
        Err(_) => ApiError::RequestTimeout.into_response(),
    }
}

fn panic_response(err: Box<dyn Any + Send + 'static>) -> Response {
    let msg = err
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "panic".to_owned());
    ApiError::Internal(format!("handler panicked: {msg}").into()).into_response()
}
