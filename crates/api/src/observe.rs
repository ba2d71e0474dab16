//! Request ids, tracing spans and Prometheus metrics for every request.

use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
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

/// Middleware: takes the caller's `x-request-id` (or makes one), runs the request in a span
/// carrying it, echoes it in the response, logs and counts the outcome by route and status.
pub async fn observe(req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(accept_request_id)
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_owned();
    // Label values come from a fixed set: any other method (hyper accepts arbitrary tokens)
    // would otherwise create a new series per request.
    let method = match req.method().as_str() {
        m @ ("GET" | "POST" | "PATCH" | "PUT" | "DELETE" | "HEAD" | "OPTIONS") => m,
        _ => "other",
    }
    .to_owned();
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
    let start = Instant::now();
    let mut res = REQUEST_ID
        .scope(id.clone(), next.run(req).instrument(span.clone()))
        .await;
    let elapsed = start.elapsed();
    let status = res.status().as_u16();
    tracing::info!(parent: &span, status, latency_ms = elapsed.as_secs_f64() * 1000.0, "request");
    let labels = [
        ("method", method),
        ("route", route),
        ("status", status.to_string()),
    ];
    metrics::counter!("http_requests_total", &labels).increment(1);
    metrics::histogram!("http_request_duration_seconds", &labels).record(elapsed.as_secs_f64());
    if let Ok(v) = HeaderValue::from_str(&id) {
        res.headers_mut().insert(REQUEST_ID_HEADER, v);
    }
    res
}
