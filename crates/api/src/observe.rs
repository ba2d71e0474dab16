//! Request ids, tracing spans and Prometheus metrics for every request.

use std::cell::RefCell;
use std::convert::Infallible;
use std::future::Future;
use std::hash::RandomState;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::response::Response;
use metrics::{Counter, Histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::task::futures::TaskLocalFuture;
use tracing::instrument::Instrumented;
use tracing::Instrument;

pub const REQUEST_ID_HEADER: &str = "x-request-id";

tokio::task_local! {
    // The id of the request being handled, so an error built anywhere in the handler can name
    // it without threading it through every signature.
    static REQUEST_ID: String;
}

/// The id of the request this task is handling, if any.
pub fn current_request_id() -> Option<String> {
    REQUEST_ID.try_with(Clone::clone).ok()
}

/// `fut` with this request's id and span, for work the request hands to another task.
pub fn carry<F: std::future::Future>(fut: F) -> impl std::future::Future<Output = F::Output> {
    let id = current_request_id();
    let fut = fut.instrument(tracing::Span::current());
    async move {
        match id {
            Some(id) => REQUEST_ID.scope(id, fut).await,
            None => fut.await,
        }
    }
}

/// The process-wide Prometheus recorder. Installed on first use; later calls (several apps in
/// one test process) share it.
pub fn metrics_handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let builder = PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Full("http_request_duration_seconds".into()),
                &[
                    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                ],
            )
            .unwrap_or_else(|_| PrometheusBuilder::new());
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        // Fails only if another recorder is installed; metrics then go there.
        let _ = metrics::set_global_recorder(recorder);
        describe();
        handle
    })
}

/// The HELP text of every metric: the engine's and the HTTP layer's.
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    coupond_engine::telemetry::describe();
    coupond_engine::telemetry::register();
    describe_counter!(
        "http_requests_total",
        "HTTP requests answered, by method, route and status"
    );
    describe_histogram!(
        "http_request_duration_seconds",
        Unit::Seconds,
        "Time to answer an HTTP request, by method and route"
    );
    describe_gauge!("http_open_connections", "HTTP connections open now");
    describe_counter!(
        "http_connections_refused_total",
        "Connections closed on accept, by the limit they met"
    );
    describe_gauge!("db_pool_connections", "Database connections open");
    describe_gauge!(
        "db_pool_idle_connections",
        "Database connections open and idle"
    );
    describe_gauge!(
        "db_pool_max_connections",
        "The database pool's configured size"
    );
}

/// Drains histogram samples into their buckets. Run periodically (`serve` does every few
/// seconds) so memory stays bounded even when nobody scrapes `/metrics`.
pub fn metrics_upkeep() {
    metrics_handle().run_upkeep();
}

fn accept_request_id(v: &HeaderValue) -> Option<String> {
    let s = v.to_str().ok()?;
    let ok = !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_graphic());
    ok.then(|| s.to_owned())
}

/// The layer of [`Observe`], outside every route: request ids, spans, logs and metrics.
///
/// A typed layer rather than `from_fn`, which cloned the inner service, boxed it again as the
/// next service and boxed a future for each request.
#[derive(Clone, Copy, Debug, Default)]
pub struct ObserveLayer;

impl<S> tower::Layer<S> for ObserveLayer {
    type Service = Observe<S>;

    fn layer(&self, inner: S) -> Observe<S> {
        Observe { inner }
    }
}

/// Takes the caller's `x-request-id` (or makes one), runs the request in a span carrying it,
/// echoes it in the response, logs and counts the outcome by route and status.
#[derive(Clone, Debug)]
pub struct Observe<S> {
    inner: S,
}

impl<S> tower::Service<Request> for Observe<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Observed<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let id = req
            .headers()
            .get(REQUEST_ID_HEADER)
            .and_then(accept_request_id)
            .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
        // An `Arc` inside: cloned so the label outlives the request that is moved on.
        let matched = req.extensions().get::<MatchedPath>().cloned();
        let route = matched.as_ref().map_or("unmatched", MatchedPath::as_str);
        let method = method_label(req.method());
        // `principal` and `client` are filled in by the auth guard once it knows them.
        let span = tracing::info_span!(
            "request",
            %method,
            %route,
            request_id = %id,
            principal = tracing::field::Empty,
            key = tracing::field::Empty,
            client = tracing::field::Empty
        );
        // Every id taken is printable ASCII, and a new one is a UUID: both are header values.
        let echo = HeaderValue::from_str(&id).ok();
        let start = Instant::now();
        // The inner call runs in the request's scope and span as well as its future: a service
        // may answer from `call` itself, and that answer names the request.
        let answer = REQUEST_ID.sync_scope(id.clone(), || span.in_scope(|| self.inner.call(req)));
        Observed {
            answer: REQUEST_ID.scope(id, answer.instrument(span.clone())),
            span,
            method,
            matched,
            echo,
            start,
        }
    }
}

pin_project_lite::pin_project! {
    /// [`Observe`]'s answer: the inner one, logged, counted and carrying the request id.
    pub struct Observed<F> {
        #[pin]
        answer: TaskLocalFuture<String, Instrumented<F>>,
        span: tracing::Span,
        method: &'static str,
        matched: Option<MatchedPath>,
        echo: Option<HeaderValue>,
        start: Instant,
    }
}

impl<F: Future<Output = Result<Response, Infallible>>> Future for Observed<F> {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Ok(mut res) = ready!(this.answer.poll(cx));
        let elapsed = this.start.elapsed();
        let status = res.status().as_u16();
        let route = this
            .matched
            .as_ref()
            .map_or("unmatched", MatchedPath::as_str);
        let span: &tracing::Span = this.span;
        tracing::info!(parent: span, status, latency_ms = elapsed.as_secs_f64() * 1000.0, "request");
        SERIES.with_borrow_mut(|series| series.record(this.method, route, status, elapsed));
        if let Some(v) = this.echo.take() {
            res.headers_mut().insert(REQUEST_ID_HEADER, v);
        }
        Poll::Ready(Ok(res))
    }
}

/// The method as a label: one of a fixed set, since any other (hyper accepts arbitrary
/// tokens) would otherwise create a new series per request.
fn method_label(method: &axum::http::Method) -> &'static str {
    match method.as_str() {
        "GET" => "GET",
        "POST" => "POST",
        "PATCH" => "PATCH",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        "HEAD" => "HEAD",
        "OPTIONS" => "OPTIONS",
        _ => "other",
    }
}

thread_local! {
    // The handles of the HTTP series this worker thread has counted into. Asking the
    // registry for a series builds a key of three labels, allocating each, and hashes it, for
    // the counter and again for the histogram: two thirds of this layer's cost per request
    // (`cargo bench --bench layers`). A handle is the registry's own series (the recorder has
    // no idle timeout, so a series is never dropped under it). Bounded: routes are the route
    // table's patterns or `unmatched`, methods the fixed set of `method_label`, statuses what
    // handlers answer.
    static SERIES: RefCell<HttpSeries> = RefCell::default();
}

/// One route's series, by method and status.
type RouteSeries = Vec<(&'static str, u16, Counter, Histogram)>;

/// The HTTP series a thread has counted into, by route.
#[derive(Default)]
struct HttpSeries(hashbrown::HashMap<Box<str>, RouteSeries, RandomState>);

impl HttpSeries {
    /// Counts one answer and its time.
    fn record(&mut self, method: &'static str, route: &str, status: u16, elapsed: Duration) {
        let of_route = self.0.entry_ref(route).or_default();
        let at = match of_route
            .iter()
            .position(|(m, s, ..)| *m == method && *s == status)
        {
            Some(at) => at,
            None => {
                // The recorder first: a handle made before it would count nowhere, for ever.
                metrics_handle();
                let labels = [
                    ("method", method.to_owned()),
                    ("route", route.to_owned()),
                    ("status", status.to_string()),
                ];
                of_route.push((
                    method,
                    status,
                    metrics::counter!("http_requests_total", &labels),
                    metrics::histogram!("http_request_duration_seconds", &labels),
                ));
                of_route.len() - 1
            }
        };
        let (.., requests, duration) = &of_route[at];
        requests.increment(1);
        duration.record(elapsed.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The caller's request id is in scope both where the inner service answers from `call`
    /// itself and where its future answers, and is echoed on the answer.
    #[tokio::test]
    async fn the_request_id_reaches_call_and_future_and_is_echoed() {
        use tower::{Layer, ServiceExt};
        let inner = tower::service_fn(|_: Request| {
            let in_call = current_request_id();
            async move {
                let in_future = current_request_id();
                let body = format!("{in_call:?} {in_future:?}");
                Ok::<_, Infallible>(Response::new(axum::body::Body::from(body)))
            }
        });
        let req = Request::builder()
            .header(REQUEST_ID_HEADER, "probe-42")
            .body(axum::body::Body::empty())
            .unwrap();
        let res = ObserveLayer.layer(inner).oneshot(req).await.unwrap();
        assert_eq!(res.headers()[REQUEST_ID_HEADER], "probe-42");
        let body = axum::body::to_bytes(res.into_body(), 1024).await.unwrap();
        assert_eq!(body, r#"Some("probe-42") Some("probe-42")"#);
    }

    /// A series counted through a kept handle is the registry's: `/metrics` shows every
    /// answer, the first (which made the handle) and the ones after, in their own series.
    #[test]
    fn kept_handles_count_into_the_registry() {
        let mut series = HttpSeries::default();
        let route = "/test/kept-handles/{id}";
        for _ in 0..3 {
            series.record("GET", route, 200, Duration::from_millis(2));
        }
        series.record("GET", route, 404, Duration::from_millis(1));
        series.record("POST", route, 200, Duration::from_millis(1));
        let text = metrics_handle().render();
        for line in [
            "http_requests_total{method=\"GET\",route=\"/test/kept-handles/{id}\",status=\"200\"} 3",
            "http_requests_total{method=\"GET\",route=\"/test/kept-handles/{id}\",status=\"404\"} 1",
            "http_requests_total{method=\"POST\",route=\"/test/kept-handles/{id}\",status=\"200\"} 1",
            "http_request_duration_seconds_count{method=\"GET\",route=\"/test/kept-handles/{id}\",status=\"200\"} 3",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }
}
