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
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, Request};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::set_header::SetResponseHeaderLayer;

use crate::{ApiError, AppSettings};

/// A layer of the stack: wraps a router with what it adds.
pub type Layer = fn(Router, &AppSettings) -> Router;

/// The stack, innermost first, by name: a request passes them from last to first.
pub const STACK: [(&str, Layer); 5] = [
    ("body_limit", body_limit),
    ("catch_panic", catch_panic),
    ("request_timeout", request_timeout),
    ("observe", observe),
    ("nosniff", nosniff),
];

/// `router` behind the whole [`STACK`].
pub fn apply(router: Router, settings: &AppSettings) -> Router {
    STACK
        .iter()
        .fold(router, |router, (_, layer)| layer(router, settings))
}

/// Bodies past `max_body_bytes` are refused before a handler reads them.
pub fn body_limit(router: Router, settings: &AppSettings) -> Router {
    router.layer(DefaultBodyLimit::max(settings.max_body_bytes))
}

/// A panic in a handler is a bug: log it and answer 500 like any internal error, rather than
/// dropping the connection.
pub fn catch_panic(router: Router, _: &AppSettings) -> Router {
    router.layer(CatchPanicLayer::custom(panic_response))
}

/// Answers 408 when a request (reading its body included) runs past `request_timeout`, so a
/// body trickling in or a handler stuck on a dependency cannot hold a connection and its
/// memory for ever. Inside [`observe`], so the 408 is counted and carries the request id.
///
/// A typed layer rather than `from_fn`, which cloned the router, boxed it again as the next
/// service and boxed a future for each request.
pub fn request_timeout(router: Router, settings: &AppSettings) -> Router {
    router.layer(RequestTimeoutLayer(settings.request_timeout))
}

/// Request ids, spans, logs and metrics ([`crate::observe`]).
pub fn observe(router: Router, _: &AppSettings) -> Router {
    router.layer(crate::observe::ObserveLayer)
}

/// `X-Content-Type-Options: nosniff`: a browser takes each body only as the type it is sent
/// as, so JSON, CSV or problem text naming user input is never run as a script or style.
/// Outermost, so every answer carries it, whatever produced it.
///
/// A typed layer rather than `map_response`, which cloned the router and boxed a future for
/// each request: 0.42 µs a request then, 0.18 µs now (`cargo bench --bench layers`).
pub fn nosniff(router: Router, _: &AppSettings) -> Router {
    router.layer(SetResponseHeaderLayer::overriding(
        axum::http::header::X_CONTENT_TYPE_OPTIONS,
        axum::http::HeaderValue::from_static("nosniff"),
    ))
}

/// [`request_timeout`]'s layer: each request's answer within the limit, else 408.
#[derive(Clone, Copy, Debug)]
pub struct RequestTimeoutLayer(pub Duration);

impl<S> tower::Layer<S> for RequestTimeoutLayer {
    type Service = RequestTimeout<S>;

    fn layer(&self, inner: S) -> RequestTimeout<S> {
        RequestTimeout {
            inner,
            limit: self.0,
        }
    }
}

/// A service whose answers come within `limit` (else 408, and the request's future is
/// dropped).
#[derive(Clone, Debug)]
pub struct RequestTimeout<S> {
    inner: S,
    limit: Duration,
}

impl<S> tower::Service<Request> for RequestTimeout<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = WithinLimit<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        WithinLimit {
            answer: self.inner.call(req),
            limit: tokio::time::sleep(self.limit),
        }
    }
}

pin_project_lite::pin_project! {
    /// An answer, or 408 once `limit` has passed.
    pub struct WithinLimit<F> {
        #[pin]
        answer: F,
        #[pin]
        limit: tokio::time::Sleep,
    }
}

impl<F: Future<Output = Result<Response, Infallible>>> Future for WithinLimit<F> {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(answer) = this.answer.poll(cx) {
            return Poll::Ready(answer);
        }
        this.limit
            .poll(cx)
            .map(|()| Ok(ApiError::RequestTimeout.into_response()))
    }
}

fn panic_response(err: Box<dyn Any + Send + 'static>) -> Response {
    let msg = err
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "panic".to_owned());
    ApiError::internal(format!("handler panicked: {msg}")).into_response()
}
