//! The in-process API client: each call runs the `/v1` router (its guards, idempotency and
//! handlers) as the session's caller, without a socket. The console reads and changes
//! everything through it, so it can do nothing the caller could not do over HTTP. A session
//! signed in with a key keeps only the key's hash, one signed in with an account only the
//! account's id: the call names them ([`Caller`], a request extension only code in this
//! process can set), and the API checks them on every call.
//!
//! Downloads ([`Api::stream`]) and uploads ([`Api::send_body`]) pass their bodies through as
//! streams: the console never holds a whole CSV or a whole file.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::response::Response;
use axum::Router;
use coupond_api::auth::Caller;
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

/// The most of a refused download's answer (a problem) that is read to show it.
const MAX_PROBLEM_BYTES: usize = 64 * 1024;

/// An API answer, read whole (JSON; downloads use [`Api::stream`]).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    /// The JSON body (`Null` when there is none or it is not JSON).
    pub body: Value,
}

/// A problem+json answer, as the console shows it.
#[derive(Clone, Debug, Default)]
pub struct Problem {
    pub status: u16,
    pub code: String,
    /// The field it names, if any (shown next to that field).
    pub field: Option<String>,
    pub detail: String,
    /// Every invalid field when the API names more than one (`errors`): field and what is
    /// wrong with it.
    pub fields: Vec<(String, String)>,
}

impl From<coupond_app::AppError> for Problem {
    /// An application refusal as the console shows it: in the words and with the code the API
    /// would answer it with.
    fn from(e: coupond_app::AppError) -> Self {
        let e = coupond_api::ApiError::from(e);
        let fields = match &e {
            coupond_api::ApiError::InvalidFields(all) => all
                .iter()
                .map(|f| (f.field.clone(), f.message.clone()))
                .collect(),
            _ => Vec::new(),
        };
        let (code, field, detail) = e.parts();
        Problem {
            status: e.status().as_u16(),
            code: code.to_owned(),
            field,
            detail,
            fields,
        }
    }
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
            fields: Vec::new(),
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
            fields: self
                .body
                .get("errors")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|e| {
                    let field = e.get("field")?.as_str()?;
                    let detail = e.get("detail")?.as_str()?;
                    Some((field.to_owned(), detail.to_owned()))
                })
                .collect(),
        }
    }
}

impl Api {
    pub fn new(app: AppState) -> Self {
        Api {
            v1: coupond_api::v1_service(app),
        }
    }

    /// `method path` as `caller`, and a body of `content_type` if given.
    pub async fn call(
        &self,
        caller: &Caller,
        method: Method,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
    ) -> Reply {
        match body {
            Some((ct, b)) => {
                self.send_body(caller, method, path, ct, Body::from(b))
                    .await
            }
            None => match self.request(caller, method, path, None, Body::empty()) {
                Some(req) => self.read(req).await,
                None => failed("the request could not be built"),
            },
        }
    }

    /// `method path` as `caller`, with `body` (of `content_type`) streamed to
    /// the API as it arrives: an upload is never held whole here.
    pub async fn send_body(
        &self,
        caller: &Caller,
        method: Method,
        path: &str,
        content_type: &str,
        body: Body,
    ) -> Reply {
        match self.request(caller, method, path, Some(content_type), body) {
            Some(req) => self.read(req).await,
            None => failed("the request could not be built"),
        }
    }

    /// `GET path` as `caller`, for a download: a success is the API's status,
    /// its `Content-Type` and `Content-Disposition`, and its body as a stream, not read here
    /// (a large CSV passes through a chunk at a time); any other answer is read as the
    /// [`Reply`] it is, to be shown as the console shows problems.
    pub async fn stream(&self, caller: &Caller, path: &str) -> Result<Response, Reply> {
        let Some(req) = self.request(caller, Method::GET, path, None, Body::empty()) else {
            return Err(failed("the request could not be built"));
        };
        let Ok(res) = self.v1.clone().oneshot(req).await;
        if !res.status().is_success() {
            return Err(reply(res, MAX_PROBLEM_BYTES).await);
        }
        let (parts, body) = res.into_parts();
        let mut out = Response::new(body);
        *out.status_mut() = parts.status;
        for name in [header::CONTENT_TYPE, header::CONTENT_DISPOSITION] {
            if let Some(v) = parts.headers.get(&name) {
                out.headers_mut().insert(name, v.clone());
            }
        }
        Ok(out)
    }

    fn request(
        &self,
        caller: &Caller,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Body,
    ) -> Option<Request<Body>> {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .extension(*caller);
        if let Some(ct) = content_type {
            req = req.header(header::CONTENT_TYPE, ct);
        }
        req.body(body).ok()
    }

    async fn read(&self, req: Request<Body>) -> Reply {
        let Ok(res) = self.v1.clone().oneshot(req).await;
        reply(res, usize::MAX).await
    }

    pub async fn get(&self, caller: &Caller, path: &str) -> Reply {
        self.call(caller, Method::GET, path, None).await
    }

    pub async fn send_json(
        &self,
        caller: &Caller,
        method: Method,
        path: &str,
        body: &Value,
    ) -> Reply {
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        self.call(caller, method, path, Some(("application/json", bytes)))
            .await
    }
}

/// An answer read whole (at most `limit` bytes of it) as a [`Reply`].
async fn reply(res: Response, limit: usize) -> Reply {
    let status = res.status();
    let bytes = match http_body_util::Limited::new(res.into_body(), limit)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(_) => return failed("the answer could not be read"),
    };
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply { status, body }
}

fn failed(why: &str) -> Reply {
    Reply {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        body: serde_json::json!({"code": "console_error", "detail": why}),
    }
}
