//! The `Idempotency-Key` header: parsed once, scoped to the principal and the route, with a
//! fingerprint of what was asked, so a retry is told apart from a reuse of the key for
//! something else; and the [`layer`] that gives every write route replay of its first answer.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use coupond_app::retry::{IdempotencyKey, IdempotencyStart, StoredAnswer};
use sha2::{Digest, Sha256};

use coupond_app::RetryKey;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// The header's key scoped to `p` and `route` (the route's pattern, e.g.
/// `POST /v1/templates/{id}/claims`), fingerprinted by `asked` (what the request asks for,
/// in a canonical form). `None` without the header; 400 `invalid_header` if it is not 1 to
/// 255 visible ASCII characters.
pub fn key(
    headers: &HeaderMap,
    p: &Principal,
    route: &str,
    asked: &str,
) -> ApiResult<Option<IdempotencyKey>> {
    Ok(retry_key(headers, p)?.map(|k| k.scoped(route, asked)))
}

/// The `Idempotency-Key` header as `p`'s [`RetryKey`], for the application to scope. `None`
/// without the header; 400 `invalid_header` if it is not 1 to 255 visible ASCII characters.
pub fn retry_key(headers: &HeaderMap, p: &Principal) -> ApiResult<Option<RetryKey>> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|k| RetryKey::parse(p, k))
        .map(Some)
        .ok_or_else(|| {
            ApiError::bad_request(
                "invalid_header",
                Some("Idempotency-Key"),
                "Idempotency-Key must be 1 to 255 visible ASCII characters",
            )
        })
}

/// Routes whose keys are kept inside their own transaction (the claim's, the issuance job's, the tag upload's),
/// not here.
pub const OWN_KEYS: [&str; 4] = [
    "/v1/templates/{id}/claims",
    "/v1/codes/{code}/redeem",
    "/v1/templates/{id}/issuances",
    "/v1/user-tags",
];

/// `POST` routes that change nothing (a quote): there is no effect to make happen once, so no
/// answer is stored for them, whatever the client sends.
pub const SIDE_EFFECT_FREE: [&str; 2] = ["/v1/quotes", "/v1/rules/preview"];

/// Whether the layer runs for a route.
pub fn applies_to(method: &axum::http::Method, path: &str) -> bool {
    method != axum::http::Method::GET
        && !OWN_KEYS.contains(&path)
        && !SIDE_EFFECT_FREE.contains(&path)
}

/// A response extension: the body to keep for replays instead of the one sent (a webhook's
/// registration keeps its answer without the secret).
#[derive(Clone, Debug)]
pub struct ReplayAs(pub bytes::Bytes);

impl ReplayAs {
    pub fn json<T: serde::Serialize>(value: &T) -> Self {
        ReplayAs(serde_json::to_vec(value).unwrap_or_default().into())
    }
}

/// The layer every write route runs under (inside its auth guard): with an `Idempotency-Key`,
/// the first request's answer (2xx or 4xx) is kept for `idempotency_ttl` and replayed to
/// retries (`idempotent-replayed: true`); the same key with another request is 422
/// `idempotency_key_reused`; a retry while the first is still running is 409
/// `idempotency_in_flight` with Retry-After (after `idempotency_stale` the first is taken to
/// have died with its process, and a retry runs again). Answers that say nothing about the
/// request (5xx, 429) are not kept, so a retry runs again; an answer larger than
/// `idempotency_max_answer_bytes` is not kept either (a replay is told 409
/// `idempotency_answer_not_kept`). Scope: the principal and the route. Users and merchants
/// may start `idempotency_rate` keyed writes per second (429 past it).
pub async fn layer(
    State((state, route, limit)): State<(AppState, &'static str, usize)>,
    req: Request,
    next: Next,
) -> Response {
    if !req.headers().contains_key("idempotency-key") {
        return next.run(req).await;
    }
    match run(&state, route, limit, req, next).await {
        Ok(res) | Err(res) => res,
    }
}

async fn run(
    state: &AppState,
    route: &'static str,
    limit: usize,
    req: Request,
    next: Next,
) -> Result<Response, Response> {
    let principal = req
        .extensions()
        .get::<Principal>()
        .cloned()
        .ok_or_else(|| {
            ApiError::internal("idempotency layer outside the auth guard").into_response()
        })?;
    if let Some(scope) = limited_scope(&principal) {
        state
            .idempotency_limits()
            .check(&scope)
            .map_err(|e| ApiError::from(e).into_response())?;
    }
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| ApiError::PayloadTooLarge.into_response())?;
    // The fingerprint of an upload is its hash, not its text.
    let asked = format!(
        "{}\n{}\n{}",
        parts.method,
        parts.uri.path(),
        hex(&Sha256::digest(&bytes))
    );
    let key = key(&parts.headers, &principal, route, &asked)
        .map_err(IntoResponse::into_response)?
        .ok_or_else(|| ApiError::internal("idempotency key vanished").into_response())?;
    let start = state
        .start_keyed(&key)
        .await
        .map_err(|e| ApiError::from(e).into_response())?;
    match start {
        IdempotencyStart::Replay(answer) => Ok(replay(answer)),
        IdempotencyStart::InFlight => {
            let mut res = ApiError::conflict(
                "idempotency_in_flight",
                "a request with this Idempotency-Key is still running; retry shortly",
            )
            .into_response();
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            Err(res)
        }
        IdempotencyStart::Mismatch => Err(ApiError::invalid(
            "idempotency_key_reused",
            "Idempotency-Key",
            "this key was already used for a different request",
        )
        .into_response()),
        IdempotencyStart::New => {
            // On a task of its own: a request timeout, or a client that goes away, must not
            // stop the request between its commit and the record of its answer (a retry
            // would then run the write again).
            let (state, key) = (state.clone(), key.key);
            let req = Request::from_parts(parts, Body::from(bytes));
            let work = crate::observe::carry(async move {
                let res = next.run(req).await;
                finish(&state, &key, res).await
            });
            Ok(tokio::spawn(work).await.unwrap_or_else(|e| {
                ApiError::internal(format!("the request's task failed: {e}")).into_response()
            }))
        }
    }
}

/// Users and merchants are limited in the keys they start; service and platform keys are the
/// operator's own systems.
fn limited_scope(p: &Principal) -> Option<String> {
    match p {
        Principal::User(_) | Principal::Merchant(_) => Some(p.scope()),
        Principal::Platform | Principal::Service(_) => None,
    }
}

/// Keeps the first answer of a keyed request for replay (or forgets the key when the answer
/// says nothing about the request), and sends it.
async fn finish(state: &AppState, key: &str, res: Response) -> Response {
    let (mut head, body) = res.into_parts();
    let status = head.status;
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        // A body that broke off: nothing to send or keep; a retry runs again.
        let _ = state.forget_key(key).await;
        return ApiError::internal("the answer's body could not be read").into_response();
    };
    let keep = !(status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS);
    let kept = head
        .extensions
        .remove::<ReplayAs>()
        .map_or(bytes.clone(), |r| r.0);
    let stored = if !keep {
        state.forget_key(key).await
    } else if kept.len() > state.settings().idempotency_max_answer_bytes {
        state.keep_answer(key, &not_kept()).await
    } else {
        let answer = StoredAnswer {
            status: status.as_u16(),
            content_type: head
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("application/json")
                .to_owned(),
            body: kept.to_vec(),
        };
        state.keep_answer(key, &answer).await
    };
    if let Err(e) = stored {
        // The answer stands; a retry will find the key running (then stale) and run again,
        // which the routes' own checks make safe.
        tracing::warn!(error = %e, "could not record an idempotent answer");
    }
    head.headers
        .insert("idempotent-replayed", HeaderValue::from_static("false"));
    Response::from_parts(head, Body::from(bytes))
}

/// What a replay of a key whose answer was too large to keep is told.
fn not_kept() -> StoredAnswer {
    let problem = serde_json::json!({
        "type": "urn:coupond:problem:idempotency_answer_not_kept",
        "title": "Conflict",
        "status": 409,
        "code": "idempotency_answer_not_kept",
        "detail": "the request ran once; its answer was too large to keep for replay: read \
                   the resource instead",
    });
    StoredAnswer {
        status: 409,
        content_type: "application/problem+json".to_owned(),
        body: problem.to_string().into_bytes(),
    }
}

fn replay(answer: StoredAnswer) -> Response {
    let mut res = Response::new(Body::from(answer.body));
    *res.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    if let Ok(v) = HeaderValue::from_str(&answer.content_type) {
        res.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    res.headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    res
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod props;
