//! The in-process API client: each call runs the `/v1` router (its guards, idempotency and
//! handlers) as the session's key, without a socket. The console reads and changes
//! everything through it, so it can do nothing the key's role could not do over HTTP. A
//! session keeps only the key's hash: the call names the key by it ([`KeyHash`], a request
//! extension only code in this process can set).

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use coupond_api::auth::KeyHash;
use coupond_api::AppState;
use http_body_util::BodyExt;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tower::ServiceExt;

/// The `/v1` routes as a service.
#[derive(Clone)]
pub struct Api {
    v1: Router,
}

/// An API answer.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    /// The JSON body (`Null` when there is none or it is not JSON).
    pub body: Value,
    /// The raw body (CSV downloads).
    pub bytes: Vec<u8>,
}

/// A problem+json answer, as the console shows it.
#[derive(Clone, Debug, Default)]
pub struct Problem {
    pub status: u16,
    pub code: String,
    /// The field it names, if any (shown next to that field).
    pub field: Option<String>,
    pub detail: String,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api").finish_non_exhaustive()
    }
}

impl Reply {
    pub fn ok(&self) -> bool {
        self.status.is_success()
    }

    /// The body as `T`, or the problem it is.
    pub fn into<T: DeserializeOwned>(self) -> Result<T, Problem> {
        if !self.ok() {
            return Err(self.problem());
        }
        serde_json::from_value(self.body).map_err(|e| Problem {
            status: 500,
            code: "unexpected_answer".into(),
            field: None,
            detail: e.to_string(),
        })
    }

    pub fn problem(&self) -> Problem {
        let s = |k: &str| self.body.get(k).and_then(Value::as_str).map(str::to_owned);
        Problem {
            status: self.status.as_u16(),
            code: s("code").unwrap_or_else(|| "error".into()),
            field: s("field"),
            detail: s("detail")
                .or_else(|| s("title"))
                .unwrap_or_else(|| self.status.to_string()),
        }
    }
}

impl Api {
    pub fn new(app: AppState) -> Self {
        Api {
            v1: coupond_api::v1_service(app),
        }
    }

    /// `method path` as the key hashed to `key`, and a body of `content_type` if given.
    pub async fn call(
        &self,
        key: &KeyHash,
        method: Method,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
    ) -> Reply {
        let mut req = Request::builder().method(method).uri(path).extension(*key);
        if let Some((ct, _)) = &body {
            req = req.header(header::CONTENT_TYPE, *ct);
        }
        let body = body.map(|(_, b)| Body::from(b)).unwrap_or_else(Body::empty);
        let Ok(req) = req.body(body) else {
            return failed("the request could not be built");
        };
        let Ok(res) = self.v1.clone().oneshot(req).await;
        let status = res.status();
        let bytes = match res.into_body().collect().await {
            Ok(b) => b.to_bytes().to_vec(),
            Err(_) => return failed("the answer could not be read"),
        };
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Reply {
            status,
            body,
            bytes,
        }
    }

    pub async fn get(&self, key: &KeyHash, path: &str) -> Reply {
        self.call(key, Method::GET, path, None).await
    }

    pub async fn send_json(
        &self,
        key: &KeyHash,
        method: Method,
        path: &str,
        body: &Value,
    ) -> Reply {
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        self.call(key, method, path, Some(("application/json", bytes)))
            .await
    }
}

fn failed(why: &str) -> Reply {
    Reply {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        body: serde_json::json!({"code": "console_error", "detail": why}),
        bytes: Vec::new(),
    }
}
