//! The one API error type. Each variant knows its HTTP status; every error leaves as
//! `application/problem+json` with a stable `code`, the offending `field` where there is one,
//! and the request id. Internal errors are logged with their cause chain and never shown.

use std::error::Error as StdError;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use coupond_domain::checkout::Reason;
use coupond_domain::{ClaimRejection, CouponId, DomainError};

use coupond_app::AppError;
pub use coupond_app::FieldError;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::observe;

/// An RFC 9457 problem document.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Problem {
    /// `urn:coupond:problem:<code>`.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// Stable machine-readable code (`validation_failed`, `not_found`, `activity_frozen`, ...).
    pub code: String,
    /// JSON path of the offending field, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// For `not_claimable`: `draft`, `not_started`, `ended`, `expired` or `aborted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The request id, also in the `x-request-id` response header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// For `coupons_not_applicable`: each coupon that cannot be locked, with its reasons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coupons: Option<Vec<CouponRefusal>>,
    /// When more than one field of the body is invalid: each of them (the first is `field`).
    #[serde(default, skip_serializing_if = "Option::is_none", skip_deserializing)]
    pub errors: Option<Vec<FieldError>>,
}

/// A coupon a lock refused, and why.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CouponRefusal {
    pub coupon_id: CouponId,
    pub reasons: Vec<Reason>,
}

/// Everything a handler can fail with: what the application answered, or what HTTP itself
/// refuses before the application is called.
#[derive(Debug)]
pub enum ApiError {
    /// What the application layer refused or failed with (its words, [`AppError::parts`]).
    App(AppError),
    /// 400: the request is malformed (JSON syntax, query string, path parameter, header).
    BadRequest {
        code: &'static str,
        field: Option<String>,
        message: String,
    },
    /// 405.
    MethodNotAllowed,
    /// 408 `request_timeout`: the request (reading its body included) took longer than
    /// `request_timeout`.
    RequestTimeout,
    /// 413.
    PayloadTooLarge,
    /// 415.
    UnsupportedMediaType,
    /// 429 `too_many_uploads`: `max_concurrent_uploads` uploads are being read; retry in a
    /// second.
    TooManyUploads,
}

impl ApiError {
    pub fn bad_request(
        code: &'static str,
        field: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        ApiError::BadRequest {
            code,
            field: field.map(str::to_owned),
            message: message.into(),
        }
    }

    /// 409: the request is fine but the state forbids it now.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::App(AppError::conflict(code, message))
    }

    /// 422: the request is well-formed but `field` breaks a rule.
    pub fn invalid(code: &'static str, field: &str, message: impl Into<String>) -> Self {
        ApiError::App(AppError::invalid(code, field, message))
    }

    /// 401: no credentials, or credentials that are not valid (why, in words).
    pub fn unauthorized(why: &'static str) -> Self {
        ApiError::App(AppError::Unauthorized(why))
    }

    /// 404: no such object, or one the caller may not see.
    pub fn not_found() -> Self {
        ApiError::App(AppError::NotFound)
    }

    /// 500: a bug or broken dependency, logged with its cause chain.
    pub fn internal(e: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        ApiError::App(AppError::Internal(e.into()))
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::App(e) => app_status(e),
            ApiError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::TooManyUploads => StatusCode::TOO_MANY_REQUESTS,
        }
    }

    /// Its problem's `code`, `field` and `detail`.
    pub fn parts(&self) -> (&'static str, Option<String>, String) {
        match self {
            ApiError::App(e) => e.parts(),
            ApiError::BadRequest {
                code,
                field,
                message,
            } => (code, field.clone(), message.clone()),
            ApiError::MethodNotAllowed => (
                "method_not_allowed",
                None,
                "this route does not accept that method".to_owned(),
            ),
            ApiError::RequestTimeout => (
                "request_timeout",
                None,
                "the request took longer than the server allows; send it again".to_owned(),
            ),
            ApiError::PayloadTooLarge => (
                "payload_too_large",
                None,
                "the request body is larger than the configured limit".to_owned(),
            ),
            ApiError::UnsupportedMediaType => (
                "unsupported_media_type",
                None,
                "send the body as application/json".to_owned(),
            ),
            ApiError::TooManyUploads => (
                "too_many_uploads",
                None,
                "as many uploads as the server reads at once are being read; retry shortly"
                    .to_owned(),
            ),
        }
    }
}

/// The HTTP status of what the application answered.
fn app_status(e: &AppError) -> StatusCode {
    match e {
        AppError::BadRequest { .. } => StatusCode::BAD_REQUEST,
        AppError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
        AppError::Forbidden => StatusCode::FORBIDDEN,
        AppError::NotFound | AppError::UnusableCode => StatusCode::NOT_FOUND,
        AppError::Conflict { .. } | AppError::ClaimRefused(_) | AppError::LockRefused(_) => {
            StatusCode::CONFLICT
        }
        AppError::Invalid { .. } | AppError::InvalidFields(_) => StatusCode::UNPROCESSABLE_ENTITY,
        AppError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
        AppError::Unavailable | AppError::LimitsUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        AppError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let request_id = observe::current_request_id();
        if let ApiError::App(AppError::Internal(e)) = &self {
            let chain = coupond_app::error::chain(e.as_ref());
            tracing::error!(request_id = request_id.as_deref(), error = %chain, "internal error");
        }
        let (code, field, detail) = self.parts();
        let problem = Problem {
            kind: format!("urn:coupond:problem:{code}"),
            title: status.canonical_reason().unwrap_or("Error").to_owned(),
            status: status.as_u16(),
            detail,
            code: code.to_owned(),
            field,
            reason: match &self {
                ApiError::App(AppError::ClaimRefused(ClaimRejection::NotClaimable(why))) => {
                    Some(why.as_str().to_owned())
                }
                _ => None,
            },
            request_id,
            coupons: match &self {
                ApiError::App(AppError::LockRefused(list)) => Some(
                    list.iter()
                        .map(|(id, reasons)| CouponRefusal {
                            coupon_id: *id,
                            reasons: reasons.clone(),
                        })
                        .collect(),
                ),
                _ => None,
            },
            errors: match &self {
                ApiError::App(AppError::InvalidFields(all)) => Some(all.clone()),
                _ => None,
            },
        };
        let body = serde_json::to_vec(&problem).unwrap_or_default();
        let mut res = (status, body).into_response();
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        match self {
            ApiError::App(AppError::Unavailable | AppError::LimitsUnavailable)
            | ApiError::TooManyUploads => {
                res.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            ApiError::App(AppError::RateLimited { retry_after }) => {
                res.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry_after.max(1)));
            }
            _ => {}
        }
        res
    }
}

impl From<AppError> for ApiError {
    fn from(e: AppError) -> Self {
        ApiError::App(e)
    }
}

/// A domain error (the order of a quote or lock, checked where it is parsed) as the
/// application maps it: the mapping is written there once ([`AppError`]'s conversions).
impl From<DomainError> for ApiError {
    fn from(e: DomainError) -> Self {
        ApiError::App(e.into())
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
