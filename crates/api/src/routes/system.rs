//! Unauthenticated operational routes: health, readiness, metrics, the OpenAPI document and a
//! page to browse it.

use axum::extract::State;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{ApiResult, Problem};
use crate::observe::metrics_handle;
use crate::state::AppState;

/// Health and readiness answers.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok` or `ready`.
    pub status: &'static str,
    /// The storage backend (`sqlite`, `postgres`), on `/readyz`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database: Option<&'static str>,
    /// On `/readyz`, background loops that panicked and were restarted (still ready: each
    /// runs again); absent when none has.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub restarted_workers: Vec<RestartedWorker>,
    /// On `/readyz`, the self-audit's last run that finished its checks (absent before the
    /// first). Broken invariants do not make the instance unready: they are the database's,
    /// not this instance's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_audit: Option<LastAudit>,
}

/// The self-audit's last run, as `/readyz` shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct LastAudit {
    pub run_id: i64,
    pub finished_at: coupond_domain::Timestamp,
    /// Broken invariants it found; details at `GET /v1/audits`.
    pub violations: i64,
}

impl From<coupond_app::health::FinishedAudit> for LastAudit {
    fn from(run: coupond_app::health::FinishedAudit) -> Self {
        LastAudit {
            run_id: run.run_id,
            finished_at: run.finished_at,
            violations: run.violations,
        }
    }
}

/// A background loop the supervisor restarted after a panic.
#[derive(Debug, Serialize, ToSchema)]
pub struct RestartedWorker {
    /// `scheduler`, `dispatcher`, `webhooks`, `codes`, `issuance`, `tagging`, `nats` or `audit`.
    pub worker: &'static str,
    pub restarts: u64,
    /// What its last panic said.
    pub last_panic: String,
}

/// Liveness.
///
/// Answers while the process runs; no database is read.
#[utoipa::path(get, path = "/healthz", tag = "system",
    responses((status = 200, description = "Alive", body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok",
        database: None,
        restarted_workers: vec![],
        last_audit: None,
    })
}

/// Readiness.
///
/// Readiness: the database answers. Also lists background loops that panicked and were restarted,
/// and the self-audit's last run (when it finished, how many broken invariants it found).
#[utoipa::path(get, path = "/readyz", tag = "system",
    responses((status = 200, description = "Ready", body = Health),
        (status = 503, description = "The database is unavailable", body = Problem,
         content_type = "application/problem+json")))]
pub async fn readyz(State(s): State<AppState>) -> ApiResult<Json<Health>> {
    let ready = s.readiness().await?;
    let restarted_workers = ready
        .restarted
        .into_iter()
        .map(|(worker, r)| RestartedWorker {
            worker,
            restarts: r.restarts,
            last_panic: r.last_panic,
        })
        .collect();
    Ok(Json(Health {
        status: "ready",
        database: Some(ready.database),
        restarted_workers,
        last_audit: ready.last_audit.map(LastAudit::from),
    }))
}

/// Prometheus metrics.
///
/// Prometheus metrics: request counts and latency by route and status, pool gauges, the
/// self-audit's last run (`coupond_audit_violations`, `coupond_audit_last_run_timestamp_seconds`).
#[utoipa::path(get, path = "/metrics", tag = "system",
    responses((status = 200, description = "Prometheus text format", body = String, content_type = "text/plain")))]
pub async fn metrics(State(s): State<AppState>) -> impl IntoResponse {
    s.record_gauges().await;
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        metrics_handle().render(),
    )
}

/// This document.
///
/// The OpenAPI 3.1 document of this API, generated from the code.
#[utoipa::path(get, path = "/openapi.json", tag = "system",
    responses((status = 200, description = "The OpenAPI 3.1 document", body = Object)))]
pub async fn openapi() -> impl IntoResponse {
    Json(crate::openapi::document())
}

/// Redoc's standalone bundle (MIT; `assets/redoc/LICENSE.txt`), vendored so that `/docs`
/// works on a machine with no internet. Its version is in its path, so it is cached for good.
pub const REDOC_PATH: &str = "/docs/assets/redoc-2.5.4.standalone.js";
const REDOC_JS: &str = include_str!("../../assets/redoc/redoc-2.5.4.standalone.js");

/// Redoc as served: its one asset fetched from elsewhere (the "Powered by" footer's logo on
/// Redocly's CDN) replaced by an empty image, so reading the docs asks nothing of the internet.
static REDOC_SERVED: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    REDOC_JS.replace(
        "https://cdn.redoc.ly/redoc/logo-mini.svg",
        "data:image/gif;base64,R0lGODlhAQABAAAAACw=",
    )
});

/// What `/docs` may load: its own script (and Redoc's inline start-up and styles), images and
/// fonts from itself or inline, the document from itself; nothing from anywhere else.
const DOCS_POLICY: &str = "default-src 'none'; script-src 'self' 'unsafe-inline'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; \
     connect-src 'self'; worker-src 'self' blob:; frame-ancestors 'none'";

/// API reference page.
///
/// A page that renders `/openapi.json` for reading (Redoc, served by coupond itself).
#[utoipa::path(get, path = "/docs", tag = "system",
    responses((status = 200, description = "HTML", body = String, content_type = "text/html")))]
pub async fn docs() -> impl IntoResponse {
    (
        [
            (header::CACHE_CONTROL, "no-cache"),
            (header::CONTENT_SECURITY_POLICY, DOCS_POLICY),
        ],
        Html(format!(
            r#"<!doctype html>
<html><head><meta charset="utf-8"><title>coupond API</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body>
<noscript>The raw document is at <a href="/openapi.json">/openapi.json</a>.</noscript>
<div id="redoc"></div>
<script src="{REDOC_PATH}"></script>
<script>
Redoc.init("/openapi.json", {{
  hideDownloadButton: false,
  theme: {{ typography: {{ fontFamily: "system-ui, -apple-system, 'Segoe UI', sans-serif",
    headings: {{ fontFamily: "system-ui, -apple-system, 'Segoe UI', sans-serif" }},
    code: {{ fontFamily: "ui-monospace, 'SFMono-Regular', Menlo, monospace" }} }} }}
}}, document.getElementById("redoc"));
</script>
</body></html>"#
        )),
    )
}

/// Redoc's script, from the binary.
pub async fn redoc_js() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
        ],
        REDOC_SERVED.as_str(),
    )
}

/// `/`: a browser (asking for HTML) is sent to the console; anything else gets the doors in
/// JSON (the API, its document and reference, the console, health).
pub async fn root(headers: axum::http::HeaderMap) -> axum::response::Response {
    let html = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"));
    if html {
        return axum::response::Redirect::to("/console").into_response();
    }
    Json(serde_json::json!({
        "name": "coupond",
        "api": "/v1",
        "openapi": "/openapi.json",
        "docs": "/docs",
        "console": "/console",
        "health": "/healthz",
    }))
    .into_response()
}

/// `/docs/` is `/docs`.
pub async fn docs_slash() -> axum::response::Redirect {
    axum::response::Redirect::permanent("/docs")
}
